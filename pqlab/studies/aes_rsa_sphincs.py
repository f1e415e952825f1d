"""Notebook 01: AES-256, RSA-2048 and SPHINCS+ per operation, beside study 000 (Java + Bouncy Castle).

Absolute times from another machine, language and year do not compare; ratios between operations *within*
one system do (signing over verifying, key generation over decryption ...), and so do sizes where the
encodings are the same.  A *system* is one source of times:

* the study: its published means ("averaged over" its runs, printed with "≈"; the study says nothing more about
  those runs), so its ratios carry no interval and are shown to the digits it printed;
* each Python backend here: medians and means of many calls (:func:`pqlab.bench`);
* each Bouncy Castle release run here (the current one, and the study's own release when Maven provides it):
  its *cold* first calls after JVM start (mean of as many first calls as the study had runs: one reading of
  the study's runs), and its JIT-warmed *steady state* (median and mean).

Every ratio of ours is a ratio of means (the study's statistic) and, for systems that report medians, also a ratio
of medians, with an interval over rounds paired by round where both operations were measured in rounds
(:func:`pqlab.measure.stats.ratio_ci`; a Bouncy Castle run is one JVM process: no interval); a study value divided by ours
uses :func:`pqlab.measure.stats.ratio_to_published` (interval from our side only).  Every sentence that states a number, a
version or a machine fact is built here from the data.  The study did not say whether its SPHINCS+ was the simple
or the robust construction, so its SPHINCS+ row is compared with both.
"""
from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd

from pqlab.core import flags
from pqlab.core.formatting import (
    MISSING,
    Column,
    fmt_bytes,
    fmt_factor,
    fmt_factor_ci,
    fmt_percent,
    fmt_time_ns,
    is_missing,
)
from pqlab.core.references import load_reference, reference_source
from pqlab.measure.stats import (
    CONFIDENCE,
    MIN_ROUNDS,
    MIN_SAMPLES,
    ratio_ci,
    ratio_to_published,
    round_records,
    round_values,
    with_rounds,
)
from pqlab.publish import plotting
from pqlab.publish.context import interval_method
from pqlab.runners import jvm
from pqlab.store.results import verified_rows
from pqlab.studies import conforming

TOPIC = "01_aes_rsa_sphincs"
#: our algorithm -> the study's row it is compared with (the study's SPHINCS+ construction is not stated)
STUDY_ROW = {"AES-256-CBC": "AES-256-CBC", "RSA-2048-PKCS1v15-enc": "RSA-2048", "RSA-2048": "RSA-2048",
             "SPHINCS+-SHAKE-128f-simple": "SPHINCS+-SHAKE-128f", "SPHINCS+-SHAKE-128f-robust": "SPHINCS+-SHAKE-128f"}
#: the within-system ratios compared with the study's: (study row, numerator, denominator)
PAIRS = [("SPHINCS+-SHAKE-128f", "sign", "verify"), ("SPHINCS+-SHAKE-128f", "sign", "keygen"),
         ("RSA-2048", "keygen", "decrypt"), ("RSA-2048", "decrypt", "encrypt"), ("AES-256-CBC", "keygen", "encrypt")]
#: Operations that play the same role in the study's three columns.
OPERATION_ROLE = {"keygen": "keygen", "encrypt": "encrypt/sign", "sign": "encrypt/sign", "encaps": "encrypt/sign",
                  "decrypt": "decrypt/verify", "verify": "decrypt/verify", "decaps": "decrypt/verify"}
STUDY = "study"
COLD, STEADY, PYTHON = "jvm cold", "jvm steady state", "python"


def construction_of(algorithm: str) -> str:
    """"simple" / "robust" for SPHINCS+ names, "" otherwise."""
    return algorithm.rsplit("-", 1)[1] if algorithm.startswith("SPHINCS+") else ""


def constructions(study_row: str) -> list[str]:
    """Our constructions compared with one study row: ["robust", "simple"] for its SPHINCS+, [""] otherwise."""
    return sorted({construction_of(a) for a, s in STUDY_ROW.items() if s == study_row}) or [""]


def study_platform() -> dict:
    """The study's platform as transcribed (``sources.yaml``): Bouncy Castle release, Java."""
    return reference_source(TOPIC)["platform"]


def study_label(reference: pd.DataFrame | None = None) -> str:
    """E.g. "study (BC 1.72, mean of 5)", from the transcribed platform and method."""
    return f"{STUDY} (BC {study_platform()['bouncycastle']}, mean of {study_runs(reference)})"


def study_runs(reference: pd.DataFrame | None = None) -> int:
    """How many runs the study says it averaged each operation over (its Methodology, as transcribed)."""
    return int((load_reference(TOPIC) if reference is None else reference)["runs"].iloc[0])


def describe_study_method(reference: pd.DataFrame | None = None) -> str:
    """Markdown: what the study says about how it timed, and what it leaves open (so that which of our phases
    matches its runs is labelled as a reading, not stated as its method)."""
    return (f"The study says that each operation was timed with `System.nanoTime()` and averaged over "
            f"{study_runs(reference)} runs, and prints each mean with \"≈\". It does not say whether a run was a fresh "
            "JVM, a first call or a call after others, and it mentions no warm-up. Our *cold* calls (the first calls "
            "in a fresh JVM, averaged over as many calls) are therefore one reading of its runs; our *steady state* "
            "is the other end.")


def digits(published) -> int:
    """Significant digits of a number as printed ("≈2.0" -> 2, "≈0.7" -> 1, "≈211.5" -> 4)."""
    return max(1, len(re.sub(r"\D", "", str(published)).lstrip("0")))


def round_sig(x: float, n: int) -> float:
    """`x` to `n` significant digits (missing and zero values unchanged)."""
    return float(f"{x:.{n}g}") if not is_missing(x) and np.isfinite(x) and x else x


def approx(x, n: int, low=math.nan, high=math.nan) -> str:
    """A factor known to `n` significant digits, as such: "≈3×", "≈18.2×", with its interval to the same digits
    where it has one ("≈19× [17, 21]")."""
    def one(v):
        r = round_sig(float(v), n)
        return f"{r:,.{max(0, n - 1 - math.floor(math.log10(abs(r))))}f}" if r else "0"
    if is_missing(x):
        return MISSING
    ci = "" if is_missing(low) or is_missing(high) else f" [{one(low)}, {one(high)}]"
    return f"≈{one(x)}×{ci}"


# ----- times per system -----
def _values(run, algorithm: str, backend: str, operation: str, phase: str | None = None):
    """One operation's per-call times: labelled with their rounds where the run measured in rounds (ratios are
    then paired by round), else a plain array (no interval)."""
    s = run.samples
    sel = (s["algorithm"] == algorithm) & (s["backend"] == backend) & (s["operation"] == operation)
    if phase is not None:
        sel &= s["phase"] == phase
    return with_rounds(s.loc[sel].dropna(subset=["time_ns"]), "time_ns", round_records(run))


def bc_release(run) -> str:
    """The Bouncy Castle release a run measured (its metadata, as the JVM reported it)."""
    return str(run.meta.get("bouncycastle_version") or run.measurements["library_version"].iloc[0])


def system_values(study_run=None, bc_runs=(), reference: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per system, algorithm and operation: the value the system reports (ms), its statistic, the mean
    (``mean_ms``: the study's statistic) and its raw samples (ns; empty for the study).  Columns: system, kind,
    statistic, study_row, construction, algorithm, operation, value_ms, mean_ms, n, values; for the study also
    ``published`` (the cell as printed, "≈" included) and ``digits`` (its significant digits)."""
    ref = load_reference(TOPIC) if reference is None else reference
    rows = []
    label = study_label(ref)
    for r in ref.itertuples():
        row = STUDY_ROW[r.algorithm]
        for construction in constructions(row):
            rows.append({"system": label, "kind": STUDY, "statistic": "mean", "study_row": row, "construction": construction,
                         "algorithm": r.study_label, "operation": r.operation, "value_ms": float(r.time_ms),
                         "mean_ms": float(r.time_ms), "n": int(r.runs), "values": np.array([]),
                         "published": r.published_text, "digits": digits(r.published_text)})
    if study_run is not None:
        for r in verified_rows(study_run.measurements).itertuples():
            v = _values(study_run, r.algorithm, r.backend, r.operation)
            rows.append({"system": r.backend, "kind": PYTHON, "statistic": "median",
                         "study_row": STUDY_ROW.get(r.algorithm, r.algorithm), "construction": construction_of(r.algorithm),
                         "algorithm": r.algorithm, "operation": r.operation,
                         "value_ms": float(np.median(v)) / 1e6 if v.size else np.nan,
                         "mean_ms": float(np.mean(v)) / 1e6 if v.size else np.nan, "n": v.size, "values": v})
    for run in (r for r in bc_runs if r is not None):
        release, first = bc_release(run), int(run.meta.get("params", {}).get("cold", MIN_SAMPLES))
        ok = verified_rows(run.measurements).drop_duplicates(["algorithm", "operation"])
        for r in ok.itertuples():
            cold = _values(run, r.algorithm, r.backend, r.operation, "cold")[:first]
            warm = _values(run, r.algorithm, r.backend, r.operation, "warm")
            base = {"study_row": STUDY_ROW.get(r.algorithm, r.algorithm), "construction": construction_of(r.algorithm),
                    "algorithm": r.algorithm, "operation": r.operation}
            rows.append({"system": f"BC {release} cold (mean of first {cold.size})", "kind": COLD,
                         "statistic": "mean", **base, "value_ms": cold.mean() / 1e6 if cold.size else np.nan,
                         "mean_ms": cold.mean() / 1e6 if cold.size else np.nan, "n": cold.size, "values": cold})
            rows.append({"system": f"BC {release} steady state", "kind": STEADY, "statistic": "median", **base,
                         "value_ms": float(np.median(warm)) / 1e6 if warm.size else np.nan,
                         "mean_ms": float(np.mean(warm)) / 1e6 if warm.size else np.nan, "n": warm.size,
                         "values": warm})
    return pd.DataFrame(rows)


def times_by_system(values: pd.DataFrame) -> pd.DataFrame:
    """Wide table of times (ms): one row per study row, construction and operation, one column per system and statistic,
    named by both: the study's means as printed ("≈" included), each of our systems' median and mean (its cold
    calls: their mean, the study's statistic, over as many calls as the study had runs)."""
    keys = ["study_row", "construction", "operation"]
    out = values[keys].drop_duplicates().reset_index(drop=True)
    index = pd.MultiIndex.from_frame(out)
    for system, g in values.groupby("system", sort=False):
        g = g.drop_duplicates(keys).set_index(keys)
        if g["kind"].iloc[0] == STUDY:
            out[f"{system}: as printed"] = g["published"].reindex(index).to_numpy()
        elif g["kind"].iloc[0] == COLD:
            out[system] = g["value_ms"].reindex(index).to_numpy()
        else:
            out[f"{system}: median"] = g["value_ms"].reindex(index).to_numpy()
            out[f"{system}: mean"] = g["mean_ms"].reindex(index).to_numpy()
    return out


def time_columns(table: pd.DataFrame) -> list:
    """The display columns of :func:`times_by_system`: the study's cells as printed, every time of ours in ms."""
    keys = ["study_row", "construction", "operation"]
    return keys + [Column(c, c, "text") if c.endswith(": as printed") else Column(c, c, "time", "ms", 1e6)
                   for c in table.columns if c not in keys]


# ----- ratios with intervals -----
def ratio_table(values: pd.DataFrame, pairs=PAIRS) -> pd.DataFrame:
    """Within-system ratios, long form: one row per (study row, construction, ratio, system, statistic).

    The study's is the ratio of its printed means, rounded to the significant digits of the less precise of the
    two (``digits``; ``published``: both cells as printed), without interval.  Each of ours is a ratio of means (the
    study's statistic: like for like) and, for a system that reports medians, also a ratio of medians (``own``:
    the system's own statistic), with its interval over rounds, paired by round (``value_ci_low`` /
    ``value_ci_high``, over the ``rounds`` both operations ran in; none for a system measured in one process)."""
    rows = []
    for (row, construction, system), g in values.groupby(["study_row", "construction", "system"], sort=False):
        by_op = g.set_index("operation")
        for study_row, num, den in pairs:
            if study_row != row or num not in by_op.index or den not in by_op.index:
                continue
            a, b = by_op.loc[num], by_op.loc[den]
            base = {"study_row": row, "construction": construction, "algorithm": a.algorithm, "ratio": f"{num} / {den}",
                    "system": system, "kind": a.kind, "samples": f"{a.n} / {b.n}"}
            if a.kind == STUDY:
                n = min(int(a.digits), int(b.digits))
                rows.append({**base, "statistic": "mean", "own": True, "value": round_sig(a.value_ms / b.value_ms, n),
                             "value_ci_low": np.nan, "value_ci_high": np.nan, "digits": n,
                             "published": f"{a.published} / {b.published}"})
                continue
            for stat in dict.fromkeys([a.statistic, "mean"]):
                ratio, low, high = ratio_ci(a["values"], b["values"], stat)
                ra, rb = round_values(a["values"], stat), round_values(b["values"], stat)
                rows.append({**base, "statistic": stat, "own": stat == a.statistic, "value": ratio,
                             "value_ci_low": low, "value_ci_high": high,
                             "rounds": np.nan if ra is None or rb is None else len(ra.index.intersection(rb.index))})
    return pd.DataFrame(rows)


def _study_ratios(ratios: pd.DataFrame) -> pd.DataFrame:
    return ratios[ratios["kind"] == STUDY].set_index(["study_row", "construction", "ratio"])


def ratio_pairs(ratios: pd.DataFrame) -> pd.DataFrame:
    """The ratios as a reader compares them: one row per ratio and system of ours, the study's beside it
    (``study_ratio``: to the digits it printed, "≈3×"), ours as a ratio of means (``ours_mean``: the study's statistic)
    and, where the system reports medians, of medians (``ours_median``), each with its interval where it has one."""
    study, ours = _study_ratios(ratios), ratios[ratios["kind"] != STUDY]
    order = {k: i for i, k in enumerate(dict.fromkeys(zip(ratios["study_row"], ratios["construction"], ratios["ratio"])))}
    keys = ["study_row", "construction", "ratio", "system"]
    rows = []
    for key, g in ours.groupby(keys, sort=False):
        s = study.loc[key[:3]] if key[:3] in study.index else None
        row = {**dict(zip(keys, key)), "study_ratio": approx(s.value, int(s.digits)) if s is not None else None,
               "study_published": s.published if s is not None else None}
        for stat in ("mean", "median"):
            r = g[g["statistic"] == stat]
            for suffix in ("", "_ci_low", "_ci_high"):
                row[f"ours_{stat}{suffix}"] = float(r[f"value{suffix}"].iloc[0]) if len(r) else np.nan
        rows.append(row)
    out = pd.DataFrame(rows, columns=[*keys, "study_ratio", "study_published", "ours_mean", "ours_mean_ci_low",
                                      "ours_mean_ci_high", "ours_median", "ours_median_ci_low", "ours_median_ci_high"])
    rank = [order[k] for k in zip(out["study_row"], out["construction"], out["ratio"])]
    return out.iloc[np.argsort(rank, kind="stable")].reset_index(drop=True)


def ratio_columns(pairs: pd.DataFrame | None = None, reference: pd.DataFrame | None = None,
                  medians: bool = True) -> list:
    """The columns a reader sees of :func:`ratio_pairs`, each header naming its statistic (`medians`: also our
    ratios of medians; a paper page has room for the like-for-like ratios of means only)."""
    return ["study_row", "construction", "ratio", Column("study_ratio", f"Study, of ≈ means of {study_runs(reference)} runs",
                                                    "text"), "system", Column("ours_mean", "Ours, of means", "ratio"),
            *([Column("ours_median", "Ours, of medians", "ratio")] if medians else [])]


def _interval_reasons(ratios: pd.DataFrame) -> str:
    """Which of our systems' ratios carry an interval over rounds and why the others carry none."""
    ours = ratios[ratios["kind"] != STUDY]
    with_ci = list(dict.fromkeys(ours.loc[ours["value_ci_low"].notna(), "system"]))
    jvm = [s for s in dict.fromkeys(ours.loc[ours["kind"].isin([COLD, STEADY]), "system"]) if s not in with_ci]
    few = [s for s in dict.fromkeys(ours["system"]) if s not in with_ci and s not in jvm]
    rounds = ours.loc[ours["value_ci_low"].notna(), "rounds"] if "rounds" in ours else []
    parts = [f"{interval_method(rounds)}, paired by round, for {', '.join(with_ci)}"] if with_ci else []
    parts += [f"none for {', '.join(jvm)} (one JVM process each: no rounds)"] if jvm else []
    parts += [f"none for {', '.join(few)} (fewer than {MIN_ROUNDS} rounds in common)"] if few else []
    return "; ".join(parts) or "no ratio of ours"


def ratio_caption(ratios: pd.DataFrame) -> str:
    """The caption of the exported ratio table, from the data: which ratios carry an interval, and why not."""
    return ("Ratios between operations within each system, the study's beside ours, as ratios of means (its "
            "statistic; our ratios of medians are in the CSV and the notebook). "
            f"Ours: {_interval_reasons(ratios)}. The study's: ratios of its printed means, shown to "
            "the significant digits of the less precise of the two, without interval (single published numbers).")


def describe_ratio_spread(ratios: pd.DataFrame, statistic: str = "mean", carries: float = 1.5) -> str:
    """Markdown: how far the same ratio moves between our systems in this run (ratios of the same `statistic`),
    per ratio its smallest and largest value and the systems that gave them; whether a ratio within one system
    carries to another (implementation, release, first calls or warmed-up) is read from this spread, not assumed.
    A spread of `carries` or more is called one that does not carry."""
    ours = ratios[(ratios["kind"] != STUDY) & (ratios["statistic"] == statistic) & (ratios["value"] > 0)]
    lines, spreads = [], []
    for (row, construction, ratio), g in ours.groupby(["study_row", "construction", "ratio"], sort=False):
        if len(g) < 2:
            continue
        lo, hi = g.loc[g["value"].idxmin()], g.loc[g["value"].idxmax()]
        name = f"{row}{' ' + construction if construction else ''} {ratio}"
        spreads.append((hi.value / lo.value, name))
        lines.append(f"- {name}: {fmt_factor(lo.value)} ({lo.system}) to {fmt_factor(hi.value)} ({hi.system}) over "
                     f"{len(g)} systems, a spread of {fmt_factor(hi.value / lo.value)}.")
    if not lines:
        return "No ratio was measured by two of our systems, so how far a ratio moves between systems is not known here."
    (wide, wide_name), (narrow, narrow_name) = max(spreads), min(spreads)
    text = (f"The same ratio between two operations, from each of our systems in this run (ratios of {statistic}s; "
            "intervals in the table below):\n\n" + "\n".join(lines) + "\n\n")
    if wide >= carries:
        return text + (f"A ratio within one system does not carry unchanged to another: between our systems the same "
                       f"ratio moves by up to {fmt_factor(wide)} ({wide_name}) and by at least {fmt_factor(narrow)} "
                       f"({narrow_name}), with the implementation, its release and whether calls are first calls or "
                       "warmed-up. The study's ratios are therefore set beside each of our systems separately.")
    return text + (f"Here the same ratio agrees between our systems within {fmt_factor(wide)} ({wide_name}), less than "
                   f"{fmt_factor(carries)}.")


def _agrees(value: float, low: float, high: float, ref: float, factor: float) -> bool:
    """Within `factor` of `ref`: the interval (or the value, without one) meets [ref / factor, ref * factor]."""
    lo, hi = (low, high) if np.isfinite(low) and np.isfinite(high) else (value, value)
    return hi >= ref / factor and lo <= ref * factor


def agreement(ratios: pd.DataFrame, factor: float = 2.0) -> pd.DataFrame:
    """Each of our ratios of means (the study's statistic: like for like) against the study's: ``study`` (its
    ratio, to the digits it printed), ``agrees`` (our interval, or our value without one, meets the band
    ``study / factor .. study * factor``)."""
    ref = _study_ratios(ratios)["value"]
    ours = ratios[(ratios["kind"] != STUDY) & (ratios["statistic"] == "mean")].copy()
    ours["study"] = [ref.get((r.study_row, r.construction, r.ratio), np.nan) for r in ours.itertuples()]
    ours = ours[np.isfinite(ours["study"])]
    ours["agrees"] = [_agrees(r.value, r.value_ci_low, r.value_ci_high, r.study, factor) for r in ours.itertuples()]
    ours.attrs["factor"] = factor
    return ours


def describe_ratios(ratios: pd.DataFrame, factor: float = 2.0) -> str:
    """Markdown: per ratio, the study's (to the digits it printed) beside each of our ratios of means (the same
    statistic, with its interval) and whether ours is consistent with it within `factor`; then which kind of
    system is consistent most often (a conclusion only where the data give one)."""
    agree = agreement(ratios, factor)
    if agree.empty:
        return "No ratio of ours can be set beside one of the study's."
    shown = _study_ratios(ratios)["digits"]
    lines = []
    for (row, construction, ratio), g in agree.groupby(["study_row", "construction", "ratio"], sort=False):
        label = f"{row}" + (f" ({construction}; the study's construction is not stated)" if construction else "")
        parts = [f"{r.system} {fmt_factor_ci(r.value, r.value_ci_low, r.value_ci_high)}" + ("" if r.agrees else " ✗")
                 for r in g.itertuples()]
        lines.append(f"- **{label}, {ratio}**: study {approx(g['study'].iloc[0], int(shown[(row, construction, ratio)]))}; "
                     "ours: " + "; ".join(parts) + f" — {int(g['agrees'].sum())} of {len(g)} consistent with it "
                     f"within a factor of {factor:g}.")
    by_kind = agree.groupby("kind")["agrees"].mean().sort_values(ascending=False)
    text = ("Ratios of means within each system, like for like with the study's (its ratios are of its printed means, "
            "shown to the digits printed; ours of medians are in the table above; ✗: our interval, or our value where "
            f"it has none, lies wholly outside a factor of {factor:g} around the study's ratio):\n\n" + "\n".join(lines))
    if len(by_kind) > 1 and by_kind.iloc[0] > by_kind.iloc[1]:
        text += (f"\n\nThe {by_kind.index[0]} systems are consistent with the study most often "
                 f"({by_kind.iloc[0]:.0%} of their ratios, against {by_kind.iloc[1]:.0%} for the {by_kind.index[1]} "
                 "systems).")
        if by_kind.index[0] == COLD:
            text += (" That is what the study's ratios would show if its runs were first calls in a fresh JVM (class "
                     "loading, interpreter, JIT compilation) rather than the algorithms' steady state; the study does "
                     "not say what its runs were, and mentions no warm-up.")
    return text


STUDY_OVER_COLUMNS = ["study_row", "construction", "operation", "system", "study_published", "study_ms", "ours_ms",
                      "study_over_ours", "study_over_ours_ci_low", "study_over_ours_ci_high", "study_over_ours_shown",
                      "digits", "ours_calls"]


def study_over_ours(values: pd.DataFrame) -> pd.DataFrame:
    """The study's time over ours, like for like only: its printed means over each of our Bouncy Castle cold means
    (the same statistic), interval from our side (:func:`pqlab.measure.stats.ratio_to_published`; none where our side was
    one process), shown to the study's printed digits, at most three (``study_over_ours_shown``)."""
    study = values[values["kind"] == STUDY].set_index(["study_row", "construction", "operation"])
    rows = []
    for r in values[values["kind"] == COLD].itertuples():
        key = (r.study_row, r.construction, r.operation)
        if key not in study.index or r.n == 0:
            continue
        s = study.loc[key]
        ratio, low, high = ratio_to_published(s.value_ms * 1e6, r.values, "mean")
        n = min(int(s.digits), 3)  # the study's printed digits, at most the three we show of ours
        rows.append({"study_row": r.study_row, "construction": r.construction, "operation": r.operation, "system": r.system,
                     "study_published": s.published, "study_ms": s.value_ms, "ours_ms": r.value_ms,
                     "study_over_ours": round_sig(ratio, n), "study_over_ours_ci_low": low, "study_over_ours_ci_high": high,
                     "study_over_ours_shown": approx(ratio, n, low, high), "digits": n, "ours_calls": r.n})
    return pd.DataFrame(rows, columns=STUDY_OVER_COLUMNS)


def study_over_columns(table: pd.DataFrame | None = None, reference: pd.DataFrame | None = None) -> list:
    """The columns a reader sees of :func:`study_over_ours`, each naming what it holds."""
    return ["study_row", "construction", "operation", "system",
            Column("study_published", f"Study, ≈ mean of {study_runs(reference)} runs (ms)", "text"),
            Column("ours_ms", "Ours, mean", "time", "ms", 1e6), Column("study_over_ours_shown", "Study over ours", "text")]


def _study_over_interval(table: pd.DataFrame) -> str:
    if table["study_over_ours_ci_low"].notna().any():
        return "each with its interval from our side only (the study's numbers are single values)"
    return ("without interval: our first calls come from one JVM process per release, and the study's numbers are "
            "single values")


def study_over_caption(table: pd.DataFrame) -> str:
    """The caption of the exported study-over-ours table, from the data (whether any factor has an interval)."""
    return ("The study's printed means over the means of our first calls in a fresh JVM on each Bouncy Castle release "
            f"(the same statistic; what the study's runs were it does not say), to the study's printed digits, "
            f"{_study_over_interval(table)}.")


def describe_study_over_ours(table: pd.DataFrame) -> str:
    """Markdown: how much slower or faster the study's machine ran the same operations (a machine factor)."""
    if table.empty:
        return "No Bouncy Castle cold calls were measured here, so no time of the study's can be set beside ours."
    parts = []
    for system, g in table.groupby("system", sort=False):
        lo, hi = g.loc[g["study_over_ours"].idxmin()], g.loc[g["study_over_ours"].idxmax()]
        parts.append(f"against {system}: {approx(lo.study_over_ours, int(lo.digits))} to "
                     f"{approx(hi.study_over_ours, int(hi.digits))} over {len(g)} operations")
    return ("The study's printed means over the means of our first calls (the same statistic; the study says only that "
            "it averaged each operation over its runs, not whether they were first calls), "
            f"{_study_over_interval(table)}: " + "; ".join(parts) + ". Such factors mix the two machines and JVMs "
            "(and, if the study's runs were not first calls, two phases); only the ratios within a system say "
            "something about the algorithms.")


# ----- Bouncy Castle runs and sizes -----
CURRENT, STUDYS = "current release", "the study's release"


def run_bouncycastle(algorithms, *, study_release: bool = True, **kwargs) -> dict:
    """The study's platform again: `algorithms` on the runner's Bouncy Castle release and, with
    `study_release`, on the release the study used (read from the reference data).  Returns
    ``{label: run}``; each run's ``meta["not_run"]`` is what did not run and why, as recorded (e.g. Maven's
    message when the registry does not provide the release).  `kwargs` go to :func:`pqlab.runners.jvm.bc_run`."""

    out = {CURRENT: jvm.bc_run(algorithms, **kwargs)}
    if study_release:
        release = study_platform()["bouncycastle"]
        out[STUDYS] = (jvm.bc_run(algorithms, version=release, **kwargs) if release != jvm.default_version()
                       else jvm.not_run(f"the runner's release is the study's ({release})"))
    return out


def measured(releases: dict) -> list:
    """The runs of :func:`run_bouncycastle` that measured something."""
    return [run for run in releases.values() if not run.measurements.empty]


def describe_bc(releases: dict) -> str:
    """Markdown: what ran on each Bouncy Castle release, or why not (the recorded reason, e.g. Maven's message).
    `releases`: label -> run (:func:`run_bouncycastle`)."""
    lines = []
    for label, run in releases.items():
        reason = run.meta.get("not_run", "")
        if run.measurements.empty:
            lines.append(f"- **{label}: not run.** {reason}")
            continue
        apis = "; ".join(sorted(set(run.measurements["implementation"])))
        text = f"- **Bouncy Castle {bc_release(run)}** on Java {run.meta.get('java_version', '?')} ({label}): {apis}."
        lines.append(text + (f" Not run: {reason}." if reason else ""))
    return "\n".join(lines)


def _rows_for(frame: pd.DataFrame, study_row: str, construction: str) -> pd.DataFrame:
    return frame[(frame["algorithm"].map(STUDY_ROW) == study_row) & (frame["algorithm"].map(construction_of) == construction)]


def size_columns(table: pd.DataFrame) -> list:
    """The paper table's columns of :func:`size_table`: every size in bytes with its unit in the header, each
    Bouncy Castle release's column included; the encodings stay in the CSV (the text says them)."""

    releases = [c for c in table.columns if c.startswith("BC ")]
    return ["study_row", "construction", "key", Column("published", "Published", "size"), Column("ours", "Ours", "size"),
            Column("ours_note", "Ours, varying", "text"), *[Column(c, c, "size") for c in releases]]


def size_table(ours: pd.DataFrame, bc_runs=(), reference: pd.DataFrame | None = None) -> pd.DataFrame:
    """Sizes beside the study's: one row per study row, construction and key; the published size, ours (raw keys;
    RSA in DER) and each Bouncy Castle release's (encoded keys: X.509 SubjectPublicKeyInfo / PKCS#8 DER)."""
    ref = load_reference(f"{TOPIC}_sizes") if reference is None else reference
    ref = ref.rename(columns={"private_key_bytes": "secret_key_bytes"})
    keys = {"public_key_bytes": "public key", "secret_key_bytes": "secret key", "symmetric_key_bytes": "symmetric key",
            "signature_bytes": "signature"}
    encoded = {"public_key_bytes": "public_key_encoded_bytes", "secret_key_bytes": "secret_key_encoded_bytes"}

    def one(frame: pd.DataFrame, col: str):
        vals = sorted(frame[col].dropna().astype(int).unique()) if col in frame else []
        return int(vals[0]) if len(vals) == 1 else None

    def spread(frame: pd.DataFrame, col: str) -> str:
        vals = sorted(frame[col].dropna().astype(int).unique()) if col in frame else []
        return f"{fmt_bytes(vals[0])}–{fmt_bytes(vals[-1])} (by key)" if len(vals) > 1 else ""  # short: a table cell

    rows = []
    for r in ref.itertuples():
        study_row = STUDY_ROW[r.algorithm]
        for construction in constructions(study_row):
            mine = _rows_for(ours, study_row, construction)
            for col, key in keys.items():
                if pd.isna(getattr(r, col)):
                    continue
                row = {"study_row": study_row, "construction": construction, "key": key, "published": int(getattr(r, col)),
                       "ours": one(mine, col), "ours_note": spread(mine, col),
                       "ours_encoding": mine["key_encoding"].iloc[0] if len(mine) else None}
                for run in (x for x in bc_runs if x is not None):
                    row[f"BC {bc_release(run)}"] = one(_rows_for(run.sizes, study_row, construction), encoded.get(col, col))
                rows.append(row)
    return pd.DataFrame(rows)


def describe_sizes(sizes: pd.DataFrame) -> str:
    """Markdown: which published size each of our sources reproduces to the byte, and which it does not."""
    sources = [c for c in sizes.columns if c == "ours" or c.startswith("BC ")]
    lines = []
    for d in sizes.to_dict("records"):
        have = {s: int(d[s]) for s in sources if d.get(s) is not None and not pd.isna(d[s])}
        same = [s if s != "ours" else f"ours ({d['ours_encoding']})" for s, v in have.items() if v == d["published"]]
        other = [f"{s if s != 'ours' else 'ours (' + str(d['ours_encoding']) + ')'} {fmt_bytes(v)}"
                 for s, v in have.items() if v != d["published"]]
        construction = f" ({d['construction']})" if d["construction"] else ""
        text = f"- {d['study_row']}{construction} {d['key']}, published {fmt_bytes(d['published'])}: "
        text += ("equal to the byte in " + ", ".join(same)) if same else "reproduced by none of our sources"
        if d.get("ours_note"):
            text += f"; ours {d['ours_note']}"
        lines.append(text + (f"; {', '.join(other)}" if other else "") + ".")
    return "\n".join(lines)


# ----- caveats, numbers, figures -----
def caveats(values: pd.DataFrame, study_run=None, bc_runs=(), reference: pd.DataFrame | None = None,
            overhead_share: float = 0.01, companion_run=None) -> str:
    """Markdown, one sentence per caveat that applies here, each built from the data: the study's platform and
    method, measurements with few samples, operations for which the harness's own call cost is more than
    `overhead_share` of the median, the spread of RSA key generation's cold calls, and every implementation the
    study's and the companions' runs timed that fails its known-answer checks (:func:`conforming.caveat`)."""
    src = (reference.attrs.get("source") if reference is not None else None) or reference_source(TOPIC)
    out = [f"The study's platform: {src['machine']}; its method: {src['method']}."]
    runs = [r for r in (study_run, *bc_runs) if r is not None]
    if runs:
        m = pd.concat([verified_rows(r.measurements) for r in runs], ignore_index=True)
        few = m[flags.has(m["flags"], "few-samples")]
        if len(few):
            out.append(f"{len(few)} of {len(m)} of our measurements have fewer than {MIN_SAMPLES} samples (flag "
                       "few-samples): their intervals are wide and their ratios uncertain.")
    if study_run is not None and study_run.meta.get("harness_overhead_ns"):
        overhead = float(study_run.meta["harness_overhead_ns"])
        m = verified_rows(study_run.measurements)
        fast = m[m["time_ns_median"] * overhead_share < overhead]
        if len(fast):
            out.append(f"A do-nothing call through pqlab's harness costs {fmt_time_ns(overhead)}, more than "
                       f"{fmt_percent(overhead_share, 0)} of the median of {len(fast)} operations here (the fastest: "
                       f"{fmt_time_ns(fast['time_ns_median'].min())}); their times include it.")
    keygen = values[(values["kind"] == COLD) & (values["study_row"] == "RSA-2048") & (values["operation"] == "keygen")]
    for r in keygen.itertuples():
        if r.values.size > 1:
            out.append(f"RSA key generation searches for random primes: the {r.values.size} calls of {r.system} span "
                       f"{fmt_time_ns(r.values.min())} to {fmt_time_ns(r.values.max())}, so a mean of so few "
                       "calls is a noisy statistic.")
    warning = conforming.caveat([r for r in (study_run, companion_run) if r is not None])
    out += [s.strip() for s in warning.split("⚠") if s.strip()]
    return "\n".join(f"- {c}" for c in out)


def _key(text: str) -> str:
    """A stable key for numbers.tex: lower-case words joined by "_" ("SPHINCS+" spelled "sphincsplus")."""
    return re.sub(r"[^a-z0-9]+", "_", text.replace("+", "plus").lower()).strip("_")


def numbers(ratios: pd.DataFrame, sizes: pd.DataFrame | None = None, study_over: pd.DataFrame | None = None,
            runs=()) -> dict:
    """Every number the notebook quotes, under stable keys (for numbers.tex): each ratio in its system's own
    statistic (the study's to the digits it printed), and ours also as a ratio of means where the system reports
    medians (key suffix ``_mean``), with intervals; ``companions_mldsa_caveat``: the ML-DSA conformance sentence of
    `runs` (:func:`pqlab.studies.conforming.paper_caveat`)."""
    out = {"companions_mldsa_caveat": conforming.paper_caveat(runs, "ML-DSA")}
    for r in ratios.itertuples():
        key = _key(f"{r.study_row}_{r.construction}_{r.ratio.replace(' / ', '_over_')}_{r.system}") + ("" if r.own else "_mean")
        out[key] = float(r.value)
        if r.kind != "study":  # a published ratio has no interval; ours may lack one (NaN: not measured)
            out[f"{key}_ci_low"], out[f"{key}_ci_high"] = float(r.value_ci_low), float(r.value_ci_high)
    for r in (sizes.itertuples(index=False) if sizes is not None else []):
        for source, value in r._asdict().items():
            if (source in ("published", "ours") or source.startswith("BC ")) and value is not None and not pd.isna(value):
                out[_key(f"{r.study_row}_{r.construction}_{r.key}_bytes_{source}")] = int(value)
    for r in (study_over.itertuples() if study_over is not None else []):
        out[_key(f"study_over_ours_{r.study_row}_{r.construction}_{r.operation}_{r.system}")] = float(r.study_over_ours)
    return out


def role_times(measurements: pd.DataFrame) -> pd.DataFrame:
    """Rows for an operation-time chart: label "algorithm (backend)", role, median and quartiles in ms (a
    Bouncy Castle release is named in the label; its cold phase is left out)."""
    df = verified_rows(measurements)
    df = df[df["operation"].isin(OPERATION_ROLE) & ~flags.has(df["flags"], "jvm-cold")]
    backend = np.where(df["backend"] == "bouncycastle", "BC " + df["library_version"].astype(str), df["backend"])
    return pd.DataFrame({"label": df["algorithm"] + "\n(" + backend + ")", "role": df["operation"].map(OPERATION_ROLE),
                         "median_ms": df["time_ns_median"] / 1e6, "q1_ms": df["time_ns_q1"] / 1e6,
                         "q3_ms": df["time_ns_q3"] / 1e6})


def _runs(runs) -> list:
    return [runs] if hasattr(runs, "measurements") else [r for r in runs if r is not None]


@plotting.styled
def plot_operation_times(runs, title: str, width: float = plotting.FULL_WIDTH):
    """Median and quartiles per operation of `runs` (log axis), grouped by the study's three columns."""
    measurements = pd.concat([r.measurements for r in _runs(runs)], ignore_index=True)
    return plotting.grouped_bars(role_times(measurements), category="label", group="role", value="median_ms",
                                 low="q1_ms", high="q3_ms", ylabel="time per operation (ms, log)", title=title,
                                 width=width)


@plotting.styled
def plot_ratios(ratios: pd.DataFrame, width: float = plotting.FULL_WIDTH):
    """Each within-system ratio of means (the study's statistic) per system, with its interval over rounds as error
    bars (none for the study's single numbers or a one-process run)."""
    df = ratios[ratios["statistic"] == "mean"]
    df = df.assign(label=df["study_row"] + np.where(df["construction"] != "", " " + df["construction"], "") + "\n" + df["ratio"])
    return plotting.grouped_bars(df, category="label", group="system", value="value", low="value_ci_low",
                                 high="value_ci_high", ylabel="ratio of means within a system (log)", height=3.0,
                                 width=width, title=f"Ratios of means between operations (bars: "
                                                    f"{fmt_percent(CONFIDENCE, 0)} intervals over rounds; none for the "
                                                    "study's single numbers or one JVM)")


def _sizes(runs) -> pd.DataFrame:
    return pd.concat([r.sizes for r in _runs(runs)], ignore_index=True).drop_duplicates("algorithm")


def key_sizes(runs) -> pd.DataFrame:
    """Key sizes of `runs` in long form for a bar chart (raw keys; RSA as DER), one row per algorithm and key."""
    long = _sizes(runs).melt(id_vars="algorithm", var_name="key", value_name="bytes",
                                                   value_vars=["public_key_bytes", "secret_key_bytes",
                                                               "symmetric_key_bytes"]).dropna()
    return long.assign(key=long["key"].str.replace("_bytes", "").str.replace("_", " "))


@plotting.styled
def plot_key_sizes(runs, width: float = plotting.FULL_WIDTH):
    return plotting.grouped_bars(key_sizes(runs), category="algorithm", group="key", value="bytes",
                                 ylabel="bytes (log)", title="Key sizes (raw keys; RSA as DER)", width=width)


@plotting.styled
def plot_signature_sizes(runs, width: float = plotting.FULL_WIDTH):
    sig = _sizes(runs).dropna(subset=["signature_bytes"]).assign(kind="signature")
    return plotting.grouped_bars(sig, category="algorithm", group="kind", value="signature_bytes",
                                 ylabel="bytes (log)", title="Signature sizes", width=width)


def results_table(runs) -> pd.DataFrame:
    """Every measurement of `runs` in µs: median, quartiles and the interval over rounds of the median."""
    df = pd.concat([r.raw_summary().assign(time_ns_ci_low=r.measurements["time_ns_ci_low"],
                                       time_ns_ci_high=r.measurements["time_ns_ci_high"],
                                       library_version=r.measurements["library_version"])
                    for r in _runs(runs)], ignore_index=True)
    out = df[["algorithm", "backend", "library_version", "operation", "samples", "flags"]].copy()
    for stat in ("median", "q1", "q3", "ci_low", "ci_high"):
        out[f"time_us_{stat}"] = df[f"time_ns_{stat}"] / 1e3
    return out
