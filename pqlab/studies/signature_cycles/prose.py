"""Notebook 04's generated text (Markdown), every number from the data: cycles against time, the optimised
build's speed-up, what pqlab's path adds over the native runner (and why a ratio lies below 1), a second
implementation against liboqs, and the closing note with its numbers."""
from __future__ import annotations

import re

import numpy as np
import pandas as pd

from pqlab.core.formatting import (
    fmt_cycles,
    fmt_factor,
    fmt_factor_ci,
    fmt_percent,
    fmt_time_ns,
    is_missing,
    not_resolved_text,
    resolved,
)
from pqlab.core.schema import convert_unit
from pqlab.core.vocabulary import c_loop
from pqlab.measure.cycles import per_call
from pqlab.measure.stats import CONFIDENCE
from pqlab.publish.context import precision_markdown, read_costs_text
from pqlab.runners.fidelity import SLOW_ROUND
from pqlab.studies import conforming
from pqlab.studies.signature_cycles.measure import SIGNATURE_OPERATIONS
from pqlab.studies.signature_cycles.rows import CLOCK_TOLERANCE
from pqlab.studies.signature_cycles.tables import lookup

#: Native operations shorter than SHORT_NS and longer than LONG_NS (ns), whose pqlab / native ratios are
#: told apart
SHORT_NS, LONG_NS = 5e5, 5e6


def describe_clock(summary: dict | None, counter: dict, tolerance: float = CLOCK_TOLERANCE,
                   rows: pd.DataFrame | None = None) -> str:
    """Cycles against time in our runs, or why that check is skipped here (Markdown)."""
    if summary is None:
        if counter["basis"] == "time_ns":
            return "No cycle counter ran, so there is no clock to check: times are shown as measured."
        ghz = rows["implied_ghz"].dropna() if rows is not None else pd.Series(dtype=float)
        # a counter's rate in Hz is cycles per second
        seen = (f" Here ticks / ns has a median of {ghz.median():.4f} over {len(ghz)} rows against the "
                f"stated {convert_unit(counter['hz'], 'cycles', 'Gcycles'):.4f} GHz."
                if len(ghz) and counter.get("hz") else "")
        return (f"**The clock-consistency check is skipped**: it applies to core cycles only. These are "
                f"{counter['unit']}, elapsed time counted at a fixed rate, so cycles / time is that rate by "
                f"construction and would confirm nothing.{seen} Times are shown as measured.")
    nominal = (f"; /proc/cpuinfo reports {summary['nominal_ghz']:.2f} GHz, the clock the hypervisor "
               f"announces, not the one the core runs at" if summary.get("nominal_ghz") else "")
    n_out = summary["rows"] - summary["consistent"]
    text = (f"Over {summary['rows']} measured rows the implied clock (median cycles / median time) has a "
            f"median of **{summary['clock_ghz']:.2f} GHz** (quartiles "
            f"{summary['clock_q1']:.2f}–{summary['clock_q3']:.2f} GHz){nominal}. {summary['consistent']} "
            f"rows lie within ±{tolerance:.0%} of their run's clock")
    if n_out:
        outside = summary["outside"]
        below = outside[outside["verdict"].str.startswith("below")].sort_values("implied_ghz")
        above = (outside[outside["verdict"].str.startswith("above")]
                 .sort_values("implied_ghz", ascending=False))
        text += f"; {n_out} {'does' if n_out == 1 else 'do'} not"
        if len(below):
            listed = ", ".join(f"{r.algorithm} {r.operation} ({r.build}, {r.implied_ghz:.2f} GHz)"
                               for r in below.head(4).itertuples())
            text += (f". {len(below)} {'lies' if len(below) == 1 else 'lie'} below, e.g. "
                     f"{listed}{' …' if len(below) > 4 else ''}: their wall time "
                     f"includes time without user cycles (descheduling by other load, or kernel work such as "
                     f"page faults), so their cycles are the better measure")
        if len(above):
            text += (f". {len(above)} {'lies' if len(above) == 1 else 'lie'} above (up to "
                     f"{above['implied_ghz'].iloc[0]:.2f} GHz): the core's boost "
                     f"clock was higher while they ran, as it is when the rest of the machine is idle")
        text += "."
    else:
        text += ", i.e. all of them: every time shown follows from its cycles at the measured clock."
    return text


def _factor(r, col: str, digits: int = 2) -> str:
    """A row's factor `col` with its interval (:func:`fmt_factor_ci`: "not resolved" where it does not resolve
    it), or why it has none."""
    low, high = r.get(f"{col}_ci_low"), r.get(f"{col}_ci_high")
    if is_missing(low) or is_missing(high):
        return f"{fmt_factor(r[col], digits)} (no interval: a side measured without rounds)"
    return fmt_factor_ci(r[col], low, high, digits)


def _has_ci(r, col: str) -> bool:
    return not (is_missing(r.get(f"{col}_ci_low")) or is_missing(r.get(f"{col}_ci_high")))


def _is_resolved(r, col: str) -> bool:
    """A row whose `col` has an interval that resolves it."""
    return _has_ci(r, col) and resolved(r[f"{col}_ci_low"], r[f"{col}_ci_high"])


def harness_of(backend) -> str:
    """How a side's calls were made, from its backend's record (:func:`pqlab.core.vocabulary.c_loop`)."""
    if str(backend) == "native":
        return "the native C runner, no interpreter"
    if c_loop(str(backend)):
        return "a sample's calls in pqlab's C loop, one call from Python per sample"
    return "one call from Python per operation"


def sides_text(table: pd.DataFrame, sides: tuple[str, str]) -> str:
    """"A (how it was called) over B (how)": what ran each side of a ratio table, from its
    ``<side>_implementation`` and ``<side>_backend`` columns ("" where the table has none)."""
    parts = []
    for side in sides:
        impl = table.get(f"{side}_implementation")
        backend = table.get(f"{side}_backend")
        if impl is None:
            return ""
        names = ", ".join(dict.fromkeys(str(x) for x in impl.dropna())) or side
        how = (f" ({'; '.join(dict.fromkeys(harness_of(b) for b in backend.dropna()))})"
               if backend is not None and backend.notna().any() else "")
        parts.append(f"{names}{how}")
    return " over ".join(parts)


def _resolved_rows(f: pd.DataFrame, col: str) -> pd.DataFrame:
    """The rows of `f` whose `col` has an interval that resolves it."""
    return f[[_is_resolved(r, col) for _, r in f.iterrows()]]


def _summary(f: pd.DataFrame, col: str, what: str) -> str:
    """"Median <what> over the N resolved ratios (...): keygen 1.23×, ..." from the rows whose interval
    resolves them only (a median of values no interval supports would say nothing), or why there is none."""
    ok = _resolved_rows(f, col)
    if ok.empty:
        return (f"No {what} of the {len(f)} is resolved by its interval, so no median over them is given "
                "(each ratio is in the table).")
    by_op = ok.groupby("operation")[col].median()
    ops = ", ".join(f"{op} {fmt_factor(by_op[op])}" for op in SIGNATURE_OPERATIONS if op in by_op)
    return (f"Median {what} over the {len(ok)} of {len(f)} ratios that their intervals resolve ({SUMMARY}): "
            f"{ops}.")


#: what a median over rows says of its interval
SUMMARY = ("per operation, over algorithms, a summary with no interval of its own; each ratio's interval is "
           "in the table")


def describe_speedups(speedups: pd.DataFrame) -> str:
    """The optimised build's speed-up (Markdown): what ran each side, the median per operation, each ratio
    whose interval resolves a gain (whole interval above 1) or resolves none, the ratios not resolved, and
    which ratios compare unlike work (``unlike_work``)."""
    s = speedups.dropna(subset=["speedup"])
    if s.empty:
        return "The portable build was not measured in this run."
    ran = sides_text(s, ("portable", "optimised"))
    text = (f"Portable over optimised{': ' + ran if ran else ''}, mean per call. "
            + _summary(s, "speedup", "speed-up"))
    rows = [r for _, r in s.iterrows()]
    gain = [r for r in rows if _is_resolved(r, "speedup") and r["speedup_ci_low"] > 1]
    none = [r for r in rows if _is_resolved(r, "speedup") and not r["speedup_ci_low"] > 1]
    unresolved = [r for r in rows if _has_ci(r, "speedup") and not _is_resolved(r, "speedup")]
    bare = [r for r in rows if not _has_ci(r, "speedup")]
    text += (f" {len(gain)} of {len(rows)} operations run faster optimised, the whole interval above 1")
    if none:
        text += ("; no gain resolved (an interval reaching 1 or below) for "
                 + ", ".join(f"{r['algorithm']} {r['operation']} {_factor(r, 'speedup')}" for r in none))
    if unresolved:
        text += (f"; {not_resolved_text()} for " + ", ".join(f"{r['algorithm']} {r['operation']}"
                                                           for r in unresolved))
    if bare:
        text += ("; without an interval (a build measured without rounds) for "
                 + ", ".join(f"{r['algorithm']} {r['operation']} {_factor(r, 'speedup')}" for r in bare))
    text += "."
    sign = sorted((r for r in gain if r["operation"] == "sign"), key=lambda r: r["speedup"])
    if len(sign) > 1:
        text += (f" Of the resolved gains in signing, the largest is {sign[-1]['algorithm']}'s "
                 f"({_factor(sign[-1], 'speedup', 1)}) and the smallest {sign[0]['algorithm']}'s "
                 f"({_factor(sign[0], 'speedup')}).")
    unlike = conforming.describe_unlike_work(s, "speedup")
    return text + (f" {unlike}" if unlike else "")


def _fmt_basis(value, basis: str) -> str:
    """A time or a count of cycles, negative ones too ("-105 kcycles")."""
    fmt = fmt_time_ns if basis == "time_ns" else fmt_cycles
    return f"-{fmt(-value)}" if not is_missing(value) and value < 0 else fmt(value)


def _added(r, basis: str) -> str:
    """What pqlab's path adds per call, with its interval where the table has one."""
    col = f"added_{basis}"
    text = _fmt_basis(r[col], basis)
    if _has_ci(r, col):
        text += f" [{_fmt_basis(r[f'{col}_ci_low'], basis)}, {_fmt_basis(r[f'{col}_ci_high'], basis)}]"
    return text


def describe_python_over_native(fidelity: pd.DataFrame, counter: dict, noop: float | None = None,
                                runs=()) -> str:
    """What pqlab's path adds over the native runner, both counted with the same counter (Markdown): what ran
    each side, the median per operation, the largest resolved ratio with the cycles it adds (both from the
    same estimate: the medians over rounds of each side's mean per call); then
    :func:`pqlab.studies.conforming.caveat` of `runs`."""
    f = fidelity.dropna(subset=["ratio"])
    if f.empty:
        return "The native runner measured nothing in common with pqlab in this run."
    basis = counter["basis"]
    ran = sides_text(f, ("pqlab", "native"))
    text = (f"pqlab / native{' (' + ran + ')' if ran else ''}, {per_call(counter)} on both sides. "
            + _summary(f, "ratio", "ratio"))
    rows = [r for _, r in f.iterrows()]
    ok = [r for r in rows if _is_resolved(r, "ratio")]
    if len(ok) < len(rows):
        text += f" {len(rows) - len(ok)} of {len(rows)} ratios are {not_resolved_text()} or have no interval."
    if ok:
        worst = max(ok, key=lambda r: r["ratio"])
        text += (f" The largest resolved ratio is {worst['algorithm']} {worst['operation']}'s: "
                 f"{_factor(worst, 'ratio')}, {_added(worst, basis)} added per call (both from the medians "
                 "over rounds of each side's mean per call).")
    resolved_f = _resolved_rows(f, "ratio")
    fast = resolved_f[resolved_f["native_time_ns_mean"] < SHORT_NS]
    slow = resolved_f[resolved_f["native_time_ns_mean"] >= LONG_NS]
    if len(fast) and len(slow):
        text += (f" Operations under {fmt_time_ns(SHORT_NS)} natively: median ratio "
                 f"{fast['ratio'].median():.2f} ({len(fast)} operations); over {fmt_time_ns(LONG_NS)}: "
                 f"{slow['ratio'].median():.2f} ({len(slow)}); medians over the resolved rows, with no "
                 "interval of their own.")
    if noop:
        text += (f" A do-nothing call through the harness costs {_fmt_basis(noop, basis)} (the median over "
                 "rounds of its no-op row).")
    return text + describe_below_one(f) + conforming.paragraph(runs)


def describe_below_one(f: pd.DataFrame) -> str:
    """The pqlab / native ratios below 1 with their intervals, and why (from the rounds:
    :func:`with_round_checks`)."""
    below = f[f["ratio"] < 1].sort_values("ratio")
    if below.empty:
        return " No ratio lies below 1."
    ci = "ratio_ci_low" in below

    def shown(r) -> str:
        return (f"{r['algorithm']} {r['operation']} "
                + (fmt_factor_ci(r["ratio"], r["ratio_ci_low"], r["ratio_ci_high"]) if ci
                   else fmt_factor(r["ratio"])))

    clear = below[below["ratio_ci_high"] < 1] if ci else below.iloc[:0]
    text = (f" **Below 1** ({len(below)} of {len(f)} operations, {len(clear)} of them with the whole "
            "interval below 1): " + "; ".join(shown(r) for _, r in below.iterrows()) + ". pqlab's path runs "
            "the same C code and more, so a ratio below 1 says that the two sides ran under different "
            "conditions, not that pqlab's path is faster.")
    if "ratio_fastest_rounds" not in below:
        return text + " This run did not record its rounds, so which conditions is not known."
    n_rounds, p_rounds = int(f["native_rounds"].sum()), int(f["pqlab_rounds"].sum())
    n_slow, p_slow = int(f["native_slow_rounds"].sum()), int(f["pqlab_slow_rounds"].sum())
    text += (" Each fastest-round ratio below is one round per side: it has no interval. "
             f"They are separate runs, measured one after the other, each round a fresh process: over the "
             f"{len(f)} operations, {n_slow} of the native runner's {n_rounds} rounds ran "
             f"{fmt_percent(SLOW_ROUND, 0)} or more above that operation's fastest native round, against "
             f"{p_slow} of pqlab's {p_rounds}.")
    explained = below[below["ratio_fastest_rounds"] >= 1]
    if len(explained):
        text += (" On the fastest round of each side, pqlab / native is at or above 1 for "
                 + "; ".join(f"{r['algorithm']} {r['operation']} (fastest rounds "
                             f"{r['ratio_fastest_rounds']:.2f}; native: "
                             f"{int(r['native_slow_rounds'])} slow of {int(r['native_rounds'])} rounds, the "
                             f"slowest {fmt_percent(r['native_worst_round'], 0)} above its fastest)"
                             for _, r in explained.iterrows())
                 + ": slow rounds of the machine, not the harness, put the ratio below 1.")
    rest = below[~(below["ratio_fastest_rounds"] >= 1)]
    if len(rest):
        text += (" On their fastest rounds too, pqlab / native stays below 1 for "
                 + "; ".join(f"{r['algorithm']} {r['operation']} (fastest rounds "
                             f"{r['ratio_fastest_rounds']:.2f})"
                             for _, r in rest.iterrows())
                 + f": slow rounds do not explain {'it' if len(rest) == 1 else 'them'}, and this run records "
                 "nothing else that would (both harnesses verify one signature again and again).")
    return text


def describe_implementations(implementations: pd.DataFrame, counter: dict, runs=()) -> str:
    """A second implementation against liboqs, per algorithm, operation and liboqs build (Markdown): each
    side's implementation and release and how its calls were made (the second implementation's one call from
    Python per operation is not like for like with liboqs's C loop), each ratio with its interval; then
    :func:`pqlab.studies.conforming.caveat` of `runs`."""
    if implementations.empty:
        return "No algorithm was measured through a second implementation in this run."
    other = next((c[: -len("_implementation")] for c in implementations
                  if c.endswith("_implementation") and not c.startswith("liboqs_")), None)
    parts = []
    for alg, g in implementations.groupby("algorithm", sort=False):
        per_build = []
        for build, h in g.groupby("liboqs_build", sort=False):
            ops = ", ".join(f"{r['operation']} {_factor(r, 'ratio')}" for _, r in h.iterrows())
            base = (sides_text(h, ("liboqs",)) if "liboqs_implementation" in h
                    else f"liboqs's {build.split()[-1]} build")
            per_build.append(f"{ops} that of {base}")
        second = sides_text(g, (other,)) if other else "OpenSSL"
        parts.append(f"{alg} through {second} needs " + "; and ".join(per_build))
    text = ". ".join(parts) + f" ({per_call(counter)} on each side)."
    calls = {harness_of(b) for c in implementations if c.endswith("_backend")
             for b in implementations[c].dropna()}
    if len(calls) > 1:
        text += (" The two sides' calls were not made alike (above, per side), so the ratio carries that "
                 "difference too: not like for like in that respect.")
    return text + conforming.paragraph(runs)


NOTE_RATIOS = (("ML-DSA-44", "sign"), ("Falcon-512", "verify"), ("SPHINCS+-SHA2-128f-simple", "sign"))
NOTE_SPEEDUPS = ("ML-DSA-44", "Falcon-512", "SPHINCS+-SHAKE-128f-simple")


def closing_numbers(fidelity: pd.DataFrame, speedups: pd.DataFrame) -> dict:
    """The closing note's numbers: pqlab/native ratios and optimised/portable speed-ups, each
    ``(value, ci_low, ci_high)`` (None where not measured; the bounds NaN where the table has none)."""
    def get(table, alg, op, col):
        v = lookup(table, alg, op, col)
        if v is None:
            return None
        return v, *((lookup(table, alg, op, f"{col}_ci_{end}") if f"{col}_ci_{end}" in table else None)
                    or np.nan for end in ("low", "high"))

    out = {}
    for alg, op in NOTE_RATIOS:
        out[f"ratio {alg} {op}"] = get(fidelity, alg, op, "ratio")
    for alg in NOTE_SPEEDUPS:
        for op in SIGNATURE_OPERATIONS:
            out[f"speedup {alg} {op}"] = get(speedups, alg, op, "speedup")
    return out


def numbers(closing: dict, runs=()) -> dict[str, float | str | None]:
    """Every number of the closing note under a stable key (letters, digits, "_"), interval bounds
    as ``<key>_ci_low`` and ``<key>_ci_high``: python_over_native_<algorithm>_<op> and
    portable_over_optimised_<algorithm>_<op>; ``cycles_mldsa_caveat``: :func:`conforming.paper_caveat` of
    `runs`."""
    out = {}
    for name, value in closing.items():
        kind, alg, op = name.split(" ")
        key = re.sub(r"[^a-z0-9]+", "_", "_".join(("python_over_native" if kind == "ratio" else
                                                   "portable_over_optimised", alg.replace("+", "plus"),
                                                   op)).lower())
        out[key], out[f"{key}_ci_low"], out[f"{key}_ci_high"] = value if value is not None else (None,) * 3
    out = {k: None if v is None or np.isnan(v) else v for k, v in out.items()}  # None: not measured
    texts = {}
    for name, value in closing.items():
        kind, alg, op = name.split(" ")
        if kind == "ratio":
            key = re.sub(r"[^a-z0-9]+", "_", f"python_over_native_{alg.replace('+', 'plus')}_{op}".lower())
            texts[f"{key}_text"] = paper_factor(value)
    return {**out, **texts, "cycles_mldsa_caveat": conforming.paper_caveat(runs, "ML-DSA")}


def paper_factor(value) -> str | None:
    """A pqlab / native ratio for the paper: the factor with its interval over rounds ("not resolved" where
    the interval does not resolve it); below 1, with what that means; None where not measured."""
    if value is None:
        return None
    ratio, low, high = value
    text = fmt_factor_ci(ratio, low, high)
    if is_missing(low) or is_missing(high):
        text += " (no interval: a side measured without rounds)"
    elif resolved(low, high):
        text += f" ({fmt_percent(CONFIDENCE, 0)} interval over rounds)"
    if ratio < 1 or (not is_missing(low) and low < 1):
        text += ("; a ratio below 1 says that the two harnesses, separate runs one after the other, ran "
                 "under different conditions, not that the path through Python is faster: it runs the same C "
                 "code and more")
    return text


def write_closing_note(numbers: dict, clock: dict | None, reference: dict, run_ids: dict, durations: dict,
                       counter: dict, measurements: pd.DataFrame, tolerance: float = CLOCK_TOLERANCE) -> str:
    """The notebook's closing note (Markdown), every number from the data; `measurements`: pqlab's rows,
    whose precision it states (:func:`pqlab.publish.context.precision_markdown`)."""
    def factor(v, digits: int = 2) -> str:
        return fmt_factor(None) if v is None else fmt_factor_ci(*v, digits=digits)

    ratios = "; ".join(f"{k.split(' ', 1)[1]}: **{factor(v)}**" for k, v in numbers.items()
                       if k.startswith("ratio"))
    sp = []
    for alg in NOTE_SPEEDUPS:
        vals = [numbers.get(f"speedup {alg} {op}") for op in SIGNATURE_OPERATIONS]
        sp.append(f"{alg}: " + ", ".join(f"{op} **{factor(v, 1)}**"
                                         for op, v in zip(SIGNATURE_OPERATIONS, vals, strict=True)))
    total = sum(durations.values())
    if clock is not None:
        timing = (f"core cycles; the counter ran at {clock['clock_ghz']:.2f} GHz (median over rows); "
                  f"{clock['consistent']} of {clock['rows']} rows lie within ±{tolerance:.0%} of their run's "
                  "clock")
    elif counter["basis"] == "cycles":
        timing = (f"{counter['unit']} (rate from {counter['hz_source']}); the clock-consistency check "
                  "applies to core cycles only and was skipped")

    else:
        timing = f"no cycle counter ({counter.get('reason')}): times only"
    clock_ghz = convert_unit(reference["clock_hz"], "Hz", "GHz")
    return (
        "### Closing note\n\n"
        f"- **Harness fidelity** (pqlab / native C runner, {per_call(counter)}, same counter, same liboqs "
        f"build, a fresh message per signature on both sides; {fmt_percent(CONFIDENCE, 0)} intervals over "
        f"rounds in brackets): {ratios}.\n"
        f"- **Optimised / portable** (portable liboqs / optimised, {per_call(counter)}): {'; '.join(sp)}.\n"
        f"- **Cycles**: {timing}. {read_costs_text(counter.get('availability') or {})}\n"
        f"- {precision_markdown(measurements)}\n"
        f"- **The study's times**: sign time = cycles / {clock_ghz:.3f} GHz in "
        f"{reference['sign_matches']} of {reference['rows']} rows, verify time in "
        f"{reference['verify_matches']} of {reference['rows']}.\n"
        f"- Measuring took {total:.0f} s (" + ", ".join(f"{k} {v:.0f} s" for k, v in durations.items())
        + "); runs: " + ", ".join(f"`{v}`" for v in run_ids.values()) + "."
    )
