"""Robust summaries of timing samples: median, quartiles, the CI of the median, MAD, instability flags."""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from . import flags

#: Thresholds of the instability flags (pyperf-like): raise them in a run's parameters if needed.
CV_LIMIT = 0.10
MIN_SAMPLES = 10
MIN_FAR = 0.20  # (median - min) / median
#: Confidence level of every interval pqlab computes (the median's order-statistic interval, bootstrap
#: percentile intervals of ratios).
CONFIDENCE = 0.95


@lru_cache(maxsize=4096)
def median_ci_ranks(n: int, confidence: float = CONFIDENCE) -> tuple[int, int] | None:
    """0-based ranks (j, n-1-j) of the order statistics that bound a `confidence` CI of the median.

    Distribution-free: the number of samples below the true median is Binomial(n, 1/2), so
    [x_(j), x_(n-1-j)] covers it with probability 1 - 2 P(B <= j), at least `confidence` for the
    largest such j.  None where n is too small for any (n < 6 at 95 %).
    """
    alpha = (1 - confidence) / 2
    log_pmf = -n * math.log(2)  # P(B = 0)
    cdf, j = 0.0, 0
    while j < n:
        cdf += math.exp(log_pmf)  # P(B <= j)
        if cdf > alpha:
            break
        log_pmf += math.log((n - j) / (j + 1))
        j += 1
    return None if j == 0 else (j - 1, n - j)


def median_ci(values, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Order-statistic (binomial) confidence interval of the median; (nan, nan) when too few values."""
    x = np.asarray(values, dtype=float)
    ranks = median_ci_ranks(x.size, confidence) if x.size else None
    if ranks is None:
        return (float("nan"), float("nan"))
    lo, hi = np.partition(x, ranks)[list(ranks)]
    return float(lo), float(hi)


def relative_half_width(median: float, ci_low: float, ci_high: float) -> float:
    """The precision of a median: half its confidence interval's width over the median (nan if unknown)."""
    if not median or not math.isfinite(ci_low) or not math.isfinite(ci_high):
        return float("nan")
    return (ci_high - ci_low) / 2 / abs(median)


def summarize(values) -> dict:
    """median, q1, q3, ci_low, ci_high (:func:`median_ci`, 95 %), rel_ci (:func:`relative_half_width`),
    min, max, mean, cv, mad, n and instability flags."""
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    if x.size == 0:
        return {"n": 0, "flags": ["no-samples"]}
    q1, median, q3 = np.percentile(x, [25, 50, 75])
    mean = float(x.mean())
    cv = float(x.std(ddof=1) / mean) if x.size > 1 and mean else 0.0
    lo, hi = median_ci(x)
    flags = []
    if cv >= CV_LIMIT:
        flags.append("unstable-cv")
    if x.size < MIN_SAMPLES:
        flags.append("few-samples")
    if median and (median - x.min()) / median > MIN_FAR:
        flags.append("min-far-from-median")
    return {"n": int(x.size), "median": float(median), "q1": float(q1), "q3": float(q3), "ci_low": lo,
            "ci_high": hi, "rel_ci": relative_half_width(float(median), lo, hi), "min": float(x.min()),
            "max": float(x.max()), "mean": mean, "cv": cv, "mad": float(np.median(np.abs(x - median))),
            "flags": flags}


def mann_whitney(a, b) -> tuple[float, float]:
    """Two-sided Mann-Whitney U test (normal approximation with tie correction): (U of a, p-value)."""
    from math import erfc, sqrt

    a, b = np.asarray(a, float), np.asarray(b, float)
    n1, n2 = a.size, b.size
    if n1 == 0 or n2 == 0:
        return float("nan"), float("nan")
    both = np.concatenate([a, b])
    order = both.argsort(kind="mergesort")
    ranks = np.empty(both.size)
    sorted_vals = both[order]
    # average ranks for ties
    _, start, counts = np.unique(sorted_vals, return_index=True, return_counts=True)
    avg = start + (counts + 1) / 2.0
    ranks[order] = np.repeat(avg, counts)
    u1 = ranks[:n1].sum() - n1 * (n1 + 1) / 2.0
    mu = n1 * n2 / 2.0
    n = n1 + n2
    tie = (counts ** 3 - counts).sum() / (n * (n - 1)) if n > 1 else 0.0
    sigma = sqrt(n1 * n2 / 12.0 * ((n + 1) - tie))
    if sigma == 0:
        return float(u1), 1.0
    z = (abs(u1 - mu) - 0.5) / sigma  # continuity correction
    return float(u1), float(min(1.0, erfc(max(z, 0.0) / sqrt(2))))


_STATISTICS = {"median": np.median, "mean": np.mean}


def _parts(samples) -> list[np.ndarray]:
    """Samples as a list of finite arrays: a tuple of arrays stands for the sum of their statistics."""
    parts = samples if isinstance(samples, tuple) else (samples,)
    out = [np.asarray(p, float) for p in parts]
    return [p[np.isfinite(p)] for p in out]


def bootstrap_ci(samples, combine, stat: str = "median", confidence: float = CONFIDENCE, resamples: int = 2000,
                 seed: int = 0) -> tuple[float, float, float]:
    """``combine([stat(x) for x in samples])`` with a percentile bootstrap confidence interval.

    Each sample (a separate measurement) is resampled independently; `combine` takes the list of
    statistics (floats, or arrays of resampled statistics) and returns one value each, e.g.
    ``lambda s: (s[0] / s[1]) / (s[2] / s[3])`` for a ratio on one machine over the same ratio on another.
    `stat` is "median" or "mean": compare like with like.  With fewer than two values in any sample the
    interval is (nan, nan): one value says nothing about its spread.  Returns ``(value, low, high)``.
    """
    f = _STATISTICS[stat]
    xs = [np.asarray(x, float) for x in samples]
    xs = [x[np.isfinite(x)] for x in xs]
    if any(x.size == 0 for x in xs):
        return float("nan"), float("nan"), float("nan")
    value = float(combine([f(x) for x in xs]))
    if any(x.size < 2 for x in xs):
        return value, float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    chunk = max(1, min(resamples, 4_000_000 // max(x.size for x in xs)))
    values = []
    for start in range(0, resamples, chunk):
        n = min(chunk, resamples - start)
        values.append(combine([f(x[rng.integers(0, x.size, size=(n, x.size))], axis=1) for x in xs]))
    r = np.concatenate(values)
    alpha = (1 - confidence) / 2
    return value, float(np.quantile(r, alpha)), float(np.quantile(r, 1 - alpha))


def ratio_ci(numerator, denominator, stat: str = "median", confidence: float = CONFIDENCE, resamples: int = 2000,
             seed: int = 0) -> tuple[float, float, float]:
    """``stat(numerator) / stat(denominator)`` with a percentile bootstrap confidence interval.

    The samples are resampled independently (they come from separate measurements).  `stat` is
    "median" or "mean": compare like with like (means where means are compared).  Either side may be a
    tuple of samples, standing for the sum of their statistics (e.g. sign + verify).  With fewer than two
    values in any sample the interval is (nan, nan): one value says nothing about its spread.
    Returns ``(ratio, low, high)`` (:func:`bootstrap_ci` of the parts).
    """
    a, b = _parts(numerator), _parts(denominator)
    k = len(a)
    return bootstrap_ci(a + b, lambda s: sum(s[:k]) / sum(s[k:]), stat, confidence, resamples, seed)


def ratio_to_published(published: float, ours, stat: str = "median", confidence: float = CONFIDENCE,
                       resamples: int = 2000, seed: int = 0) -> tuple[float, float, float]:
    """``published / stat(ours)`` with an interval from our side only (a published single number has
    none): ``(ratio, low, high)``."""
    x = np.asarray(ours, float)
    x = x[np.isfinite(x)]
    if x.size == 0 or published is None or not np.isfinite(published):
        return float("nan"), float("nan"), float("nan")
    ratio = float(published / _STATISTICS[stat](x))
    if x.size < 2:
        return ratio, float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    boot = _STATISTICS[stat](x[rng.integers(0, x.size, size=(resamples, x.size))], axis=1)
    alpha = (1 - confidence) / 2
    return ratio, float(published / np.quantile(boot, 1 - alpha)), float(published / np.quantile(boot, alpha))


def ratio_of_estimates(num: float, num_se: float, den: float, den_se: float,
                       confidence: float = CONFIDENCE) -> tuple[float, float, float]:
    """``num / den`` of two independent estimates given with standard errors (fitted slopes, say), with a
    normal-approximation (delta-method) interval: ``(ratio, low, high)``; (nan, nan) without both errors."""
    from statistics import NormalDist

    if not den or not np.isfinite(num) or not np.isfinite(den):
        return float("nan"), float("nan"), float("nan")
    ratio = float(num / den)
    if not (np.isfinite(num_se) and np.isfinite(den_se)) or num == 0:
        return ratio, float("nan"), float("nan")
    se = abs(ratio) * float(np.hypot(num_se / num, den_se / den))
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    return ratio, ratio - z * se, ratio + z * se


def welch_p(a, b) -> float:
    """Two-sided p-value of Welch's t-test of equal means (normal approximation of the t distribution
    above 30 degrees of freedom; used where samples are means of different loop counts)."""
    from math import erfc, sqrt

    a, b = np.asarray(a, float), np.asarray(b, float)
    if a.size < 2 or b.size < 2:
        return float("nan")
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    if va + vb == 0:
        return 0.0 if a.mean() != b.mean() else 1.0
    t = abs(a.mean() - b.mean()) / sqrt(va + vb)
    return float(min(1.0, erfc(t / sqrt(2))))


def precision_summary(measurements) -> dict:
    """How precise a table of measurement rows is: rows with a precision, the median and the worst
    precision reached (time_ns_rel_ci), rows with a target and how many missed it (flag
    ``precision-not-reached``)."""
    rel = measurements["time_ns_rel_ci"].astype(float) if "time_ns_rel_ci" in measurements else None
    if rel is None or rel.notna().sum() == 0:
        return {"rows": int(len(measurements)), "with_precision": 0, "median": None, "worst": None,
                "targeted": 0, "missed": 0, "target": None}
    targets = measurements["target_rel_ci"].astype(float) if "target_rel_ci" in measurements else rel * np.nan
    missed = flags.has(measurements["flags"], "precision-not-reached")
    known = targets.dropna().unique()
    return {"rows": int(len(measurements)), "with_precision": int(rel.notna().sum()),
            "median": float(rel.median()), "worst": float(rel.max()), "targeted": int(targets.notna().sum()),
            "missed": int(missed.sum()), "target": float(known[0]) if len(known) == 1 else None}
