"""Notebook 01's generated text: how the study timed, how far a ratio moves between our systems, our ratios
beside the study's, the study's times over ours, what ran on each Bouncy Castle release, which sizes match,
the caveats, and every number the notebook quotes.  Every sentence that states a number, a version or a
machine fact is built here from the data.
"""
from __future__ import annotations

import re

import pandas as pd

from pqlab.core import flags
from pqlab.core.formatting import (
    fmt_bytes,
    fmt_factor,
    fmt_factor_ci,
    fmt_percent,
    fmt_time_ns,
    is_missing,
    not_resolved_text,
    resolved,
)
from pqlab.core.references import reference_source
from pqlab.measure.stats import MIN_SAMPLES
from pqlab.store.results import verified_rows
from pqlab.studies import conforming
from pqlab.studies.aes_rsa_sphincs.measure import bc_release
from pqlab.studies.aes_rsa_sphincs.published import COLD, STUDY, TOPIC, approx, study_platform, study_runs
from pqlab.studies.aes_rsa_sphincs.ratios import _study_ratios, agreement
from pqlab.studies.aes_rsa_sphincs.tables import _study_over_interval


def describe_study_method(reference: pd.DataFrame | None = None) -> str:
    """Markdown: what the study says about how it timed, and what it leaves open (so that which of our phases
    matches its runs is labelled as a reading, not stated as its method)."""
    return ("The study says that each operation was timed with `System.nanoTime()` and averaged over "
            f"{study_runs(reference)} runs, and prints each mean with \"≈\". It does not say whether a run "
            "was a fresh JVM, a first call or a call after others, and it mentions no warm-up. Our *cold* "
            "calls (the first calls in a fresh JVM, averaged over as many calls) are therefore one reading "
            "of its runs; our *steady state* is the other end.")


def _who(r) -> str:
    """A system of ours as a pairing names it: its label and, where the label does not say it, the
    implementation and release that ran it."""
    impl = getattr(r, "implementation", None)
    if isinstance(impl, str) and impl and impl not in r.system and r.system not in impl:
        return f"{r.system} ({impl})"
    if isinstance(impl, str) and impl and r.system in impl and impl != r.system:
        return impl
    return r.system


def _ours(r) -> str:
    """One ratio of ours with its interval, or why it has none."""
    if is_missing(r.value_ci_low) or is_missing(r.value_ci_high):
        return f"{fmt_factor(r.value)} (one process: no interval)"
    return fmt_factor_ci(r.value, r.value_ci_low, r.value_ci_high)


def _told(r) -> bool:
    """Whether a ratio of ours can be told from another: an interval that resolves it, or a single value from
    one process (no interval)."""
    return is_missing(r.value_ci_low) or is_missing(r.value_ci_high) or resolved(r.value_ci_low,
                                                                                  r.value_ci_high)


def describe_ratio_spread(ratios: pd.DataFrame, statistic: str = "mean", carries: float = 1.5) -> str:
    """Markdown: how far the same ratio moves between our systems in this run (ratios of the same
    `statistic`), per ratio its smallest and largest value, each with its interval, and the systems (with
    implementation and release) that gave them; a ratio whose interval does not resolve it is left out and
    counted.  Whether a ratio within one system carries to another (implementation, release, first calls or
    warmed-up) is read from this spread, not assumed.  A spread of `carries` or more is called one that does
    not carry."""
    ours = ratios[(ratios["kind"] != STUDY) & (ratios["statistic"] == statistic) & (ratios["value"] > 0)]
    lines, spreads = [], []
    for (row, construction, ratio), g in ours.groupby(["study_row", "construction", "ratio"], sort=False):
        told = g[[_told(r) for r in g.itertuples()]]
        if len(told) < 2:
            continue
        lo, hi = told.loc[told["value"].idxmin()], told.loc[told["value"].idxmax()]
        name = f"{row}{' ' + construction if construction else ''} {ratio}"
        spreads.append((hi.value / lo.value, name))
        left = len(g) - len(told)
        lines.append(f"- {name}: {_ours(lo)} ({_who(lo)}) to {_ours(hi)} ({_who(hi)}) over {len(told)} "
                     f"systems, a spread of {fmt_factor(hi.value / lo.value)} (of the two values: no "
                     "interval)"
                     + (f"; {left} {'system' if left == 1 else 'systems'} left out, "
                        f"{not_resolved_text()}" if left else "") + ".")
    if not lines:
        return ("No ratio was measured by two of our systems, so how far a ratio moves between systems is "
                "not known here.")
    (wide, wide_name), (narrow, narrow_name) = max(spreads), min(spreads)
    text = ("The same ratio between two operations, from each of our systems in this run (ratios of "
            f"{statistic}s; intervals over rounds in brackets, none for a system measured in one process):"
            "\n\n" + "\n".join(lines) + "\n\n")
    if wide >= carries:
        return text + ("A ratio within one system does not carry unchanged to another: between our systems "
                       f"the same ratio moves by up to {fmt_factor(wide)} ({wide_name}) and by at least "
                       f"{fmt_factor(narrow)} ({narrow_name}), spreads with no interval of their own, with "
                       "the implementation, its release and whether calls are first calls or warmed-up. The "
                       "study's ratios are therefore set beside each of our systems separately.")
    return text + (f"Here the same ratio agrees between our systems within {fmt_factor(wide)} ({wide_name}), "
                   f"less than {fmt_factor(carries)} (spreads of values, no interval).")


def describe_ratios(ratios: pd.DataFrame, factor: float = 2.0) -> str:
    """Markdown: per ratio, the study's (to the digits it printed) beside each of our ratios of means (the
    same statistic, with its interval, each system named with its implementation and release) and whether
    ours is consistent with it within `factor`: stated only for a ratio our interval resolves, or a single
    value from one process; an interval too wide to tell is counted as such.  Systems are not ranked by how
    often they agree: a wider interval would overlap more often."""
    agree = agreement(ratios, factor)
    if agree.empty:
        return "No ratio of ours can be set beside one of the study's."
    shown = _study_ratios(ratios)["digits"]
    study_name = ratios.loc[ratios["kind"] == STUDY, "system"]
    study_name = study_name.iloc[0] if len(study_name) else STUDY
    lines, totals = [], {"resolved": [0, 0], "point": [0, 0], "wide": 0}
    for (row, construction, ratio), g in agree.groupby(["study_row", "construction", "ratio"], sort=False):
        label = f"{row}" + (f" ({construction}; the study's construction is not stated)" if construction
                            else "")
        parts, counts = [], {"resolved": [0, 0], "point": [0, 0], "wide": 0}
        for r in g.itertuples():
            point = is_missing(r.value_ci_low) or is_missing(r.value_ci_high)
            if not point and not resolved(r.value_ci_low, r.value_ci_high):
                counts["wide"] += 1
                parts.append(f"{_who(r)} {not_resolved_text()}: too wide to tell")
                continue
            kind = "point" if point else "resolved"
            counts[kind][0] += int(r.agrees)
            counts[kind][1] += 1
            parts.append(f"{_who(r)} {_ours(r)}" + ("" if r.agrees else " ✗"))
        for k in ("resolved", "point"):
            totals[k] = [a + b for a, b in zip(totals[k], counts[k], strict=True)]
        totals["wide"] += counts["wide"]
        study = approx(g["study"].iloc[0], int(shown[(row, construction, ratio)]))
        lines.append(f"- **{label}, {ratio}**: {study_name} {study} (published, no interval); ours, ratios "
                     "of means: " + "; ".join(parts) + f" — {_agreement_counts(counts, factor)}.")
    text = ("Ratios of means within each system, like for like with the study's (its ratios are of its "
            "printed means, shown to the digits printed; ours of medians are in the table above; ✗: our "
            f"interval, or our value where it has none, lies wholly outside a factor of {factor:g} around "
            "the study's ratio):\n\n" + "\n".join(lines))
    return text + ("\n\nConsistency is stated only where our ratio can be told: an interval that resolves "
                   "it, or a single value from one process (no interval of its own). In all: "
                   f"{_agreement_counts(totals, factor)}. The systems are not ranked by how often they "
                   "agree: a wider interval overlaps the study's band more often, so such a count would "
                   "reward imprecision.")


def _agreement_counts(counts: dict, factor: float) -> str:
    (ra, rn), (pa, pn), wide = counts["resolved"], counts["point"], counts["wide"]
    parts = []
    if rn:
        parts.append(f"{ra} of {rn} resolved {'ratio' if rn == 1 else 'ratios'} within a factor of "
                     f"{factor:g}")
    if pn:
        parts.append(f"{pa} of {pn} single {'value' if pn == 1 else 'values'} (one process) within a factor "
                     f"of {factor:g}")
    if wide:
        parts.append(f"{wide} too wide to tell")
    return "; ".join(parts) or "none to compare"


def describe_study_over_ours(table: pd.DataFrame) -> str:
    """Markdown: how much slower or faster the study's machine ran the same operations (a machine factor)."""
    if table.empty:
        return ("No Bouncy Castle cold calls were measured here, so no time of the study's can be set beside "
                "ours.")
    parts = []
    for system, g in table.groupby("system", sort=False):
        lo, hi = g.loc[g["study_over_ours"].idxmin()], g.loc[g["study_over_ours"].idxmax()]
        parts.append(f"against {system}: {approx(lo.study_over_ours, int(lo.digits))} to "
                     f"{approx(hi.study_over_ours, int(hi.digits))} over {len(g)} operations")
    return (f"The study's printed means (Bouncy Castle {study_platform()['bouncycastle']}, mean of "
            f"{study_runs()} runs) over the means of our first calls (the same "
            "statistic; the study says "
            "only that it averaged each operation over its runs, not whether they were first calls), "
            f"{_study_over_interval(table)}: " + "; ".join(parts) + ". Such factors mix the two machines and "
            "JVMs (and, if the study's runs were not first calls, two phases); only the ratios within a "
            "system say something about the algorithms.")


def describe_bc(releases: dict) -> str:
    """Markdown: what ran on each Bouncy Castle release, or why not (the recorded reason, e.g. Maven's
    message). `releases`: label -> run (:func:`run_bouncycastle`)."""
    lines = []
    for label, run in releases.items():
        reason = run.meta.get("not_run", "")
        if run.measurements.empty:
            lines.append(f"- **{label}: not run.** {reason}")
            continue
        apis = "; ".join(sorted(set(run.measurements["implementation"])))
        text = (f"- **Bouncy Castle {bc_release(run)}** on Java {run.meta.get('java_version', '?')} "
                f"({label}): {apis}.")
        lines.append(text + (f" Not run: {reason}." if reason else ""))
    return "\n".join(lines)


def describe_sizes(sizes: pd.DataFrame) -> str:
    """Markdown: which published size each of our sources reproduces to the byte, and which it does not."""
    sources = [c for c in sizes.columns if c == "ours" or c.startswith("BC ")]
    lines = []
    for d in sizes.to_dict("records"):
        have = {s: int(d[s]) for s in sources if d.get(s) is not None and not pd.isna(d[s])}
        same = [s if s != "ours" else f"ours ({d['ours_encoding']})" for s, v in have.items()
                if v == d["published"]]
        other = [f"{s if s != 'ours' else 'ours (' + str(d['ours_encoding']) + ')'} {fmt_bytes(v)}"
                 for s, v in have.items() if v != d["published"]]
        construction = f" ({d['construction']})" if d["construction"] else ""
        text = f"- {d['study_row']}{construction} {d['key']}, published {fmt_bytes(d['published'])}: "
        text += ("equal to the byte in " + ", ".join(same)) if same else "reproduced by none of our sources"
        if d.get("ours_note"):
            text += f"; ours {d['ours_note']}"
        lines.append(text + (f"; {', '.join(other)}" if other else "") + ".")
    return "\n".join(lines)


def caveats(values: pd.DataFrame, study_run=None, bc_runs=(), reference: pd.DataFrame | None = None,
            overhead_share: float = 0.01, companion_run=None) -> str:
    """Markdown, one sentence per caveat that applies here, each built from the data: the study's platform and
    method, measurements with few samples, operations for which the harness's own call cost is more than
    `overhead_share` of the median, the spread of RSA key generation's cold calls, and every implementation
    the study's and the companions' runs timed that fails its known-answer checks
    (:func:`conforming.caveat`)."""
    src = (reference.attrs.get("source") if reference is not None else None) or reference_source(TOPIC)
    out = [f"The study's platform: {src['machine']}; its method: {src['method']}."]
    runs = [r for r in (study_run, *bc_runs) if r is not None]
    if runs:
        m = pd.concat([verified_rows(r.measurements) for r in runs], ignore_index=True)
        few = m[flags.has(m["flags"], "few-samples")]
        if len(few):
            out.append(f"{len(few)} of {len(m)} of our measurements have fewer than {MIN_SAMPLES} samples "
                       "(flag few-samples): their intervals are wide and their ratios uncertain.")
    if study_run is not None and study_run.meta.get("harness_overhead_ns"):
        overhead = float(study_run.meta["harness_overhead_ns"])
        m = verified_rows(study_run.measurements)
        fast = m[m["time_ns_median"] * overhead_share < overhead]
        if len(fast):
            out.append(f"A do-nothing call through pqlab's harness costs {fmt_time_ns(overhead)}, more than "
                       f"{fmt_percent(overhead_share, 0)} of the median of {len(fast)} operations here (the "
                       f"fastest: {fmt_time_ns(fast['time_ns_median'].min())}); their times include it.")
    keygen = values[(values["kind"] == COLD) & (values["study_row"] == "RSA-2048")
                    & (values["operation"] == "keygen")]
    for r in keygen.itertuples():
        if r.values.size > 1:
            out.append(f"RSA key generation searches for random primes: the {r.values.size} calls of "
                       f"{r.system} span {fmt_time_ns(r.values.min())} to {fmt_time_ns(r.values.max())}, so "
                       "a mean of so few calls is a noisy statistic.")
    warning = conforming.caveat([r for r in (study_run, companion_run) if r is not None])
    out += [s.strip() for s in warning.split("⚠") if s.strip()]
    return "\n".join(f"- {c}" for c in out)


def _key(text: str) -> str:
    """A stable key for numbers.tex: lower-case words joined by "_" ("SPHINCS+" spelled "sphincsplus")."""
    return re.sub(r"[^a-z0-9]+", "_", text.replace("+", "plus").lower()).strip("_")


def numbers(ratios: pd.DataFrame, sizes: pd.DataFrame | None = None, study_over: pd.DataFrame | None = None,
            runs=()) -> dict:
    """Every number the notebook quotes, under stable keys (for numbers.tex): each ratio in its system's own
    statistic (the study's to the digits it printed), and ours also as a ratio of means where the system
    reports medians (key suffix ``_mean``), with intervals; ``companions_mldsa_caveat``: the ML-DSA
    conformance sentence of `runs` (:func:`pqlab.studies.conforming.paper_caveat`)."""
    out = {"companions_mldsa_caveat": conforming.paper_caveat(runs, "ML-DSA")}
    for r in ratios.itertuples():
        key = (_key(f"{r.study_row}_{r.construction}_{r.ratio.replace(' / ', '_over_')}_{r.system}")
               + ("" if r.own else "_mean"))
        out[key] = float(r.value)
        if r.kind != "study":  # a published ratio has no interval; ours may lack one (NaN: not measured)
            out[f"{key}_ci_low"], out[f"{key}_ci_high"] = float(r.value_ci_low), float(r.value_ci_high)
    for r in (sizes.itertuples(index=False) if sizes is not None else []):
        for source, value in r._asdict().items():
            if ((source in ("published", "ours") or source.startswith("BC ")) and value is not None
                    and not pd.isna(value)):
                out[_key(f"{r.study_row}_{r.construction}_{r.key}_bytes_{source}")] = int(value)
    for r in (study_over.itertuples() if study_over is not None else []):
        key = _key(f"study_over_ours_{r.study_row}_{r.construction}_{r.operation}_{r.system}")
        out[key] = float(r.study_over_ours)
    return out
