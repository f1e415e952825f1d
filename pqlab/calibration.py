"""Calibration: do the 95 % intervals hold?  The same benchmark run K times as separate runs, and each run's
intervals checked against the others (``python -m pqlab calibrate``).

Per measurement (algorithm, backend, operation, size) and over all of them:

* ``cover_pooled``: how often a run's interval contains the *pooled median*, the median of every sample of all
  K runs (a 95 % interval should, about 95 % of the time);
* ``cover_other``: how often a run's interval contains *another* run's estimate (pairs i != j; for two
  estimates with the same spread a 95 % interval holds the other's about 83 % of the time, so this one runs
  lower);
* ``spread_ratio``: the real spread of the estimates between runs (standard deviation of their logs) over the
  spread the intervals imply (their half-width on the log scale over the quantile they used); 1 is honest, 3
  means the intervals are three times too narrow.

The same for paired ratios within a run: every two algorithms of the run that share an operation and size, one
ratio per round (:func:`pqlab.measure.stats.ratio_ci`), against the ratio of the pooled medians.

Runs measured before rounds (schema < 4, or any row with one round) are checked with the interval pqlab gave
then, the order-statistic interval of the median over all of one process's samples
(:func:`pqlab.measure.stats.median_ci`), so the old method and the new can be compared on the same footing
(``method``).

Runs to check are made by :func:`repeat` (``python -m pqlab calibrate``): K separate runs of one benchmark in
one of :data:`PROFILES`, through pqlab's harness or through notebook 08's programs, quiet or under one of the
standard loads that :mod:`pqlab.measure.load` starts and stops itself; each run's parameters record the
profile and the load.
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from pqlab import benchmark
from pqlab.checks import leakage
from pqlab.core import inputs
from pqlab.core.formatting import fmt_percent
from pqlab.measure import load as loads
from pqlab.measure.stats import (
    CONFIDENCE,
    MIN_ROUNDS,
    median_ci,
    ratio_ci,
    round_interval,
    t_quantile,
    with_rounds,
)
from pqlab.runners import impls
from pqlab.store.results import KEY, Run, _keyed, load_run

#: Coverage from which `describe` calls the intervals calibrated (a 95 % interval, K runs of sampling error).
#: An interval that holds the pooled median more often than GOOD_COVERAGE_MAX, or whose spread ratio is below
#: GOOD_SPREAD_MIN, is honest but wider than the real spread (time spent for nothing): issue #41's bands.
GOOD_COVERAGE, GOOD_SPREAD = 0.90, 1.5
GOOD_COVERAGE_MAX, GOOD_SPREAD_MIN = 0.99, 0.5
#: The measurement settings a calibration can repeat: bench's defaults, and the notebooks' quick profile
#: (their stored parameters: a tenth of a second of sampling per operation over three rounds, target ±5 %).
#: Programs (notebook 08's, :func:`pqlab.runners.impls.measure`) take `budget_s` and `rounds` of the same
#: profile.
PROFILES = {"default": {},
            "quick": {"budget_s": 0.1, "rounds": 3, "max_rounds": 3, "target_rel_ci": 0.05}}
#: Fewest runs a calibration compares.
MIN_RUNS = 2


def _interval(run: Run, samples: pd.DataFrame) -> tuple[float, float, float, float, str]:
    """(estimate, low, high, quantile, method) of one row: over rounds where it has them (recomputed from the
    samples, as the row's own), else the old method."""
    values = with_rounds(samples, noise={run.run_id: run.meta.get("round_noise") or []})
    if _has_rounds(values):
        value, low, high, k = round_interval(values)
        return value, low, high, t_quantile(k - 1), "rounds"
    x = samples["time_ns"].to_numpy(float)
    low, high = median_ci(x)
    return float(np.median(x)) if x.size else math.nan, low, high, 1.96, "within-process"


def _summarise(group: pd.DataFrame, pooled: float) -> dict:
    est, low, high, q = (group[c].to_numpy(float) for c in ("estimate", "low", "high", "quantile"))
    ok = np.isfinite(low) & np.isfinite(high)
    pairs = [(i, j) for i in range(len(est)) for j in range(len(est)) if i != j and ok[i]]
    logs = np.log(est[np.isfinite(est) & (est > 0)])
    implied = np.log(high[ok] / low[ok]) / 2 / q[ok]
    real = float(np.std(logs, ddof=1)) if logs.size > 1 else math.nan
    return {"runs": len(group), "with_interval": int(ok.sum()), "pooled": pooled,
            "estimate_min": float(np.nanmin(est)), "estimate_max": float(np.nanmax(est)),
            "half_width": float(np.median((high[ok] - low[ok]) / 2 / est[ok])) if ok.any() else math.nan,
            "cover_pooled": (float(np.mean((low[ok] <= pooled) & (pooled <= high[ok]))) if ok.any()
                             else math.nan),
            "cover_other": (float(np.mean([low[i] <= est[j] <= high[i] for i, j in pairs])) if pairs
                            else math.nan),
            "spread_ratio": (real / float(np.median(implied)) if implied.size and np.median(implied) > 0
                             else math.nan)}


def analyse(runs: Sequence[Run | str]) -> dict:
    """``{"rows": per measurement, "ratios": per paired ratio, "overall": dict}`` of K runs of one
    benchmark."""
    runs = [r if isinstance(r, Run) else load_run(r) for r in runs]
    if len(runs) < MIN_RUNS:
        raise ValueError(f"calibration needs at least {MIN_RUNS} runs of the same benchmark, got {len(runs)}")
    per_run, pooled_samples, ratio_rows = [], {}, []
    for run in runs:
        m = _keyed(run.verified())
        s = _keyed(run.samples)
        groups = {k: g for k, g in s.groupby(KEY, dropna=False)}
        values = {}
        for _, row in m.iterrows():
            key = tuple(row[k] for k in KEY)
            g = groups.get(key)
            if g is None or g.empty:
                continue
            est, low, high, q, method = _interval(run, g)
            per_run.append({**dict(zip(KEY, key)), "run_id": run.run_id, "estimate": est, "low": low,
                            "high": high, "quantile": q, "method": method})
            pooled_samples.setdefault(key, []).append(g["time_ns"].to_numpy(float))
            values[key] = with_rounds(g, noise={run.run_id: run.meta.get("round_noise") or []})
        for a, b in itertools.combinations(sorted(values, key=str), 2):
            if a[0] == b[0] or a[3:] != b[3:]:  # the same algorithm, or another operation or size
                continue
            if _has_rounds(values[a]) and _has_rounds(values[b]):
                value, low, high = ratio_ci(values[a], values[b])
                q, method = _ratio_quantile(values[a], values[b]), "rounds"
            else:
                value, low, high = within_process_ratio(values[a], values[b])
                q, method = 1.96, "within-process"
            ratio_rows.append({"numerator": f"{a[0]}@{a[1]}", "denominator": f"{b[0]}@{b[1]}",
                               "operation": a[3],
                               "message_bytes": a[4], "run_id": run.run_id, "estimate": value, "low": low,
                               "high": high, "quantile": q, "method": method, "key": (a, b)})
    table = pd.DataFrame(per_run)
    pooled = {k: float(np.median(np.concatenate(v))) for k, v in pooled_samples.items()}
    rows = []
    for key, g in table.groupby(KEY, dropna=False):
        rows.append({**dict(zip(KEY, key)), "method": "/".join(sorted(set(g["method"]))),
                     **_summarise(g, pooled[key])})
    ratios = []
    if ratio_rows:
        rt = pd.DataFrame(ratio_rows)
        for (num, den, op, size), g in rt.groupby(["numerator", "denominator", "operation", "message_bytes"],
                                                   dropna=False):
            a, b = g["key"].iloc[0]
            ratios.append({"numerator": num, "denominator": den, "operation": op, "message_bytes": size,
                           "method": "/".join(sorted(set(g["method"]))),
                           **_summarise(g, pooled[a] / pooled[b])})
    rows, ratios = pd.DataFrame(rows), pd.DataFrame(ratios)
    return {"rows": rows, "ratios": ratios, "overall": {
        "runs": len(runs), "rows": _overall(rows), "ratios": _overall(ratios),
        "methods": sorted(set(table["method"])) if not table.empty else []}}


def _has_rounds(values) -> bool:
    return hasattr(values, "index") and len(set(values.index.get_level_values("round"))) >= MIN_ROUNDS


def within_process_ratio(a, b, resamples: int = 2000, seed: int = 0) -> tuple[float, float, float]:
    """The interval pqlab gave a ratio before rounds (schema < 4), recomputed to check it: the ratio of
    medians with a percentile bootstrap that resamples each side's samples independently, as if consecutive
    samples of one process were independent draws."""
    x, y = np.asarray(a, float), np.asarray(b, float)
    if x.size < 2 or y.size < 2:
        return math.nan, math.nan, math.nan
    rng = np.random.default_rng(seed)
    bx = np.median(x[rng.integers(0, x.size, (resamples, x.size))], axis=1)
    by = np.median(y[rng.integers(0, y.size, (resamples, y.size))], axis=1)
    r = bx / by
    alpha = (1 - CONFIDENCE) / 2
    return float(np.median(x) / np.median(y)), float(np.quantile(r, alpha)), float(np.quantile(r, 1 - alpha))


def _ratio_quantile(a, b) -> float:
    """The t quantile a paired ratio's interval used (its shared rounds less one degree of freedom)."""
    try:
        shared = len(a.index.intersection(b.index))
    except AttributeError:
        return math.nan
    return t_quantile(shared - 1) if shared >= MIN_ROUNDS else math.nan


def _overall(df: pd.DataFrame) -> dict:
    if df.empty or "cover_pooled" not in df:
        return {"measurements": 0}
    w = df["with_interval"].to_numpy(float)
    def weighted(col):
        v = df[col].to_numpy(float)
        ok = np.isfinite(v) & (w > 0)
        return float(np.average(v[ok], weights=w[ok])) if ok.any() else math.nan
    return {"measurements": len(df), "cover_pooled": weighted("cover_pooled"),
            "cover_other": weighted("cover_other"), "spread_ratio_median": float(df["spread_ratio"].median()),
            "spread_ratio_max": float(df["spread_ratio"].max()),
            "half_width_median": float(df["half_width"].median())}


def verdict_of(cover: float, spread: float) -> str:
    """"calibrated", or what is wrong: too narrow (the intervals miss), or too wide (they cost time for
    nothing)."""
    if not (cover >= GOOD_COVERAGE and spread <= GOOD_SPREAD):
        return "NOT calibrated (too narrow)"
    if cover > GOOD_COVERAGE_MAX or spread < GOOD_SPREAD_MIN:
        return "calibrated but wider than the real spread"
    return "calibrated"


def describe(result: dict) -> str:
    """The verdict in a few lines: coverage and spread ratio of rows and ratios, and what to do when they
    fail."""
    lines = []
    for what in ("rows", "ratios"):
        o = result["overall"][what]
        if not o.get("measurements"):
            continue
        if not math.isfinite(o["cover_pooled"]):
            lines.append(f"{what}: {o['measurements']} measurements over {result['overall']['runs']} runs; "
                         f"no run gave them an interval (fewer than {MIN_ROUNDS} rounds)")
            continue
        verdict = verdict_of(o["cover_pooled"], o["spread_ratio_median"])
        lines.append(f"{what}: {o['measurements']} measurements over {result['overall']['runs']} runs; a "
                     f"run's {fmt_percent(CONFIDENCE, 0)} interval held the pooled median "
                     f"{o['cover_pooled']:.0%} of the time and another run's estimate "
                     f"{o['cover_other']:.0%}; real spread / implied spread: "
                     f"median {o['spread_ratio_median']:.2f}, largest {o['spread_ratio_max']:.2f}; median "
                     f"half-width ±{o['half_width_median']:.1%} -> "
                     + verdict)
    lines.append(f"method: {', '.join(result['overall']['methods'])}; a {fmt_percent(CONFIDENCE, 0)} "
                 f"interval should hold the pooled median {GOOD_COVERAGE:.0%}-{GOOD_COVERAGE_MAX:.0%} of the "
                 f"time (K runs: sampling error) with a spread ratio of {GOOD_SPREAD_MIN}-{GOOD_SPREAD}")
    return "\n".join(lines)


def repeat(algorithms: Sequence[str], repeats: int, *, profile: str = "default", load: str = "none",
           programs: Sequence[str] | None = None, folder=None, progress=None, **options) -> list[Run]:
    """`repeats` separate runs of one benchmark of `algorithms` in `profile` (:data:`PROFILES`; `options`
    override it, as bench's), under the standard `load` (:mod:`pqlab.measure.load`, started before the first
    run and stopped after the last); through notebook 08's `programs` (:func:`pqlab.runners.impls.measure`)
    where given, else through :func:`pqlab.benchmark.bench`.  Every input is checked before anything runs;
    `progress(k, run)` is called after each run."""

    profile = inputs.choice(profile, "profile", tuple(PROFILES))
    load = inputs.choice(load, "load", tuple(loads.LOADS))
    repeats = inputs.count(repeats, "repeats", MIN_RUNS, inputs.MAX_REPEATS)
    settings = {**PROFILES[profile], **{k: v for k, v in options.items() if v is not None}}
    params = {"calibration": {"profile": profile, "load": load, "load_is": loads.describe(load)}}
    if programs:

        def one():
            return impls.measure(algorithms, programs=list(programs), budget_s=settings.get("budget_s", 1.0),
                                 rounds=settings.get("rounds"), study="calibrate", folder=folder,
                                 params=params)
    else:
        def one():  # intervals are calibrated whatever an implementation's conformance; the run records it
            return benchmark.bench(algorithms, study="calibrate", folder=folder, progress=False,
                                   params=params, allow_nonconforming=True, **settings)
    runs = []
    with loads.running(load):
        for k in range(repeats):
            runs.append(one())
            if progress is not None:
                progress(k, runs[-1])
    return runs


def screen_false_positives(runs: int, blocks: int, *, load: str = "none", alpha: float | None = None) -> str:
    """The leakage screen's calibration: its false-positive rate over `runs` screens of one class labelled
    twice (liboqs ML-KEM-768 decapsulation of a valid ciphertext, notebook 09's experiment) of `blocks` blocks
    each, under the standard `load` (:mod:`pqlab.measure.load`): how many of the screens with a verdict found
    a difference, with the exact (Clopper-Pearson) 95 % interval of the rate against alpha, and how many gave
    no verdict."""
    from scipy.stats import binomtest


    runs = inputs.count(runs, "runs", 1, inputs.MAX_REPEATS)
    blocks = inputs.count(blocks, "blocks", leakage.MIN_BLOCKS, inputs.MAX_SCREEN_BLOCKS)
    alpha = leakage.ALPHA if alpha is None else alpha
    with loads.running(load):
        screens = [leakage.screen("liboqs", "ML-KEM-768-decaps", classes=["valid", "valid"], blocks=blocks,
                                  alpha=alpha, seed=k + 1) for k in range(runs)]
    judged = [s for s in screens if s.verdict in (leakage.LEAK, leakage.UNRESOLVED, leakage.NO_LEAK)]
    alarms = sum(s.verdict in (leakage.LEAK, leakage.UNRESOLVED) for s in judged)
    loaded = [s.others_cores for s in judged if s.load]
    head = (f"{len(screens)} screens of ML-KEM-768 decapsulation (liboqs, `valid` labelled twice, {blocks} "
            f"blocks each) under {loads.describe(load)}: {len(screens) - len(judged)} gave no verdict")
    if not judged:
        return head + "; no false-positive rate can be given."
    ci = binomtest(alarms, len(judged), alpha).proportion_ci(CONFIDENCE, method="exact")
    return (head + f"; {alarms} of the {len(judged)} with a verdict found a difference: a rate of "
            f"{alarms / len(judged):.1%} ({fmt_percent(CONFIDENCE, 0)} interval {ci.low:.1%} to "
            f"{ci.high:.1%}) against alpha {alpha:g}"
            + (f"; other work {min(loaded):.2f}-{max(loaded):.2f} cores" if loaded else "")
            + (" -> holds its level" if ci.low <= alpha else " -> ABOVE its level"))
