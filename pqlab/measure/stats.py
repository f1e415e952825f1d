"""Robust summaries of timing samples (median, quartiles, MAD, instability flags) and the intervals pqlab
shows: over rounds (:func:`round_interval`, :func:`combined_ci`, :func:`ratio_ci`), never over one process's
consecutive samples alone (:func:`median_ci` is kept for the within-round precision and the old schema)."""
from __future__ import annotations

import math
from functools import lru_cache
from math import erfc, sqrt
from statistics import NormalDist

import numpy as np
import pandas as pd

from pqlab.core.errors import choice
from pqlab.core.flags import (  # the instability flags' thresholds, defined with the flags
    CV_LIMIT,
    MIN_FAR,
    MIN_SAMPLES,
)
from pqlab.core.inputs import MIN_ROUNDS  # noqa: F401 (stats.MIN_ROUNDS: fewest rounds with an interval)

#: Confidence level of every interval pqlab computes (t-intervals over rounds, the order-statistic interval
#: that decides when one process stops sampling, the leakage screen's bootstrap intervals).
CONFIDENCE = 0.95
#: the step in log space of ratio_ci's numerical derivative d log f / d log g_i (a nudge, not a unit)
LOG_STEP = 1e-6


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
#: The index levels that mark values as samples of rounds (pqlab.store.results.Run.sample_values).
ROUND_LEVELS = ("run_id", "round")


def _betacf(a: float, b: float, x: float) -> float:
    """The continued fraction of the regularised incomplete beta function (modified Lentz)."""
    tiny, qab, qap, qam = 1e-300, a + b, a + 1, a - 1
    c, d = 1.0, 1 - qab * x / qap
    d = 1 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        for num in (m * (b - m) * x / ((qam + m2) * (a + m2)),
                    -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1 + num * d
            d = 1 / (d if abs(d) > tiny else tiny)
            c = 1 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1) < 1e-15:
            break
    return h


def _t_cdf(t: float, df: float) -> float:
    """P(T <= t) of Student's t with `df` degrees of freedom (through the incomplete beta function)."""
    x = df / (df + t * t)
    a, b = df / 2, 0.5
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x)
                     + b * math.log1p(-x))
    ib = front * _betacf(a, b, x) / a if x < (a + 1) / (a + b + 2) else 1 - front * _betacf(b, a, 1 - x) / b
    return 1 - ib / 2 if t >= 0 else ib / 2


@lru_cache(maxsize=1024)
def t_quantile(df: float, confidence: float = CONFIDENCE) -> float:
    """The two-sided `confidence` quantile of Student's t with `df` degrees of freedom (t_{df, (1+c)/2})."""
    p = (1 + confidence) / 2
    lo, hi = 0.0, 1e3
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _t_cdf(mid, df) < p else (lo, mid)
    return (lo + hi) / 2


def has_rounds(values) -> bool:
    """Whether `values` are samples labelled with their run and round (a Series indexed by ROUND_LEVELS)."""
    return type(values).__name__ == "Series" and tuple(getattr(values.index, "names", ())) == ROUND_LEVELS


def statistic(stat) -> str:
    """`stat` when it is one of the statistics of a round ("median", "mean"); anything else refused with close
    matches."""

    return choice(stat, "stat", tuple(_STATISTICS))


def round_values(values, stat: str = "median"):
    """The per-round `stat` of samples labelled with their rounds (:func:`has_rounds`), positive values only,
    indexed by (run_id, round); None for values that carry no rounds."""
    statistic(stat)
    if not has_rounds(values):
        return None
    v = values[np.isfinite(values.to_numpy(float))]
    r = v.groupby(level=list(ROUND_LEVELS)).agg(stat)
    return r[r > 0]


def machine_spread(values, index, ratio: bool = False) -> float:
    """How much the machine's own speed moved over the rounds in `index` ((run_id, round) pairs): the standard
    deviation of the log times of the reference loops (:mod:`pqlab.measure.noise`) over those rounds, the
    larger of the scalar and the vector loop's (`ratio`: of the vector/scalar ratio, what moves a ratio of
    vector to scalar code); 0 where `values` carry no reference (``attrs["round_noise"]``: run id -> the run's
    ``meta["round_noise"]``)."""
    noise = getattr(values, "attrs", {}).get("round_noise") or {}
    if not noise:
        return 0.0
    refs = {(run, int(r["round"])): r for run, rounds in noise.items() for r in rounds}
    return reference_spread([refs[k] for k in index if k in refs], ratio)


def reference_spread(records: list[dict], ratio: bool = False) -> float:
    """:func:`machine_spread` of the round records given (each with ``scalar_ns`` and ``vector_ns``, and where
    recorded the start and end readings ``<kind>_start_ns``/``<kind>_end_ns``).

    The spread counted is drift the machine has, not the reference loops' own noise: from the variance of the
    readings over rounds, the variance one reading has by itself is taken away, estimated from the start and
    end readings of each round (half the variance of their log difference; that difference holds the loops'
    noise and whatever moved within a round, which the rounds' own spread already carries).  On a quiet
    machine the loops' noise was most of their spread and inflated every interval about fourfold (issue #41:
    six runs' spread was 0.24 of what their intervals implied); a machine whose speed really moves between
    rounds keeps it."""
    picked = [r for r in records if r.get("scalar_ns") and r.get("vector_ns")]
    if len(picked) < 2:
        return 0.0

    def drift(kind: str) -> np.ndarray:
        return np.log([r[f"{kind}_ns"] for r in picked])

    def own_noise(kind: str) -> np.ndarray:
        pairs = [(r[f"{kind}_start_ns"], r[f"{kind}_end_ns"]) for r in picked
                 if r.get(f"{kind}_start_ns") and r.get(f"{kind}_end_ns")]
        return np.log([a for a, _ in pairs]) - np.log([b for _, b in pairs]) if pairs else np.zeros(0)

    def beyond_noise(total_var: float, noise: np.ndarray) -> float:
        floor = float(np.mean(noise ** 2)) / 2 if noise.size else 0.0
        return math.sqrt(max(0.0, total_var - floor))

    if ratio:
        vector, scalar = own_noise("vector"), own_noise("scalar")
        noise = vector - scalar if vector.size == scalar.size else np.zeros(0)
        return beyond_noise(float(np.var(drift("vector") - drift("scalar"), ddof=1)), noise)
    return max(beyond_noise(float(np.var(drift(kind), ddof=1)), own_noise(kind))
               for kind in ("scalar", "vector"))


#: The standard error of a median of k normal values over that of their mean (sqrt(pi / 2), Fisher).
MEDIAN_SE = math.sqrt(math.pi / 2)
#: The median absolute deviation of normal values over their standard deviation's estimate (1 / 0.6745).
MAD_SD = 1.4826


#: Below this many rounds the scale of the rounds is their standard deviation wherever that is larger than the
#: robust one.  With three to seven rounds the median absolute deviation ignores the one round that differs:
#: three rounds of 46.2, 17.6 and 17.75 (notebook 03) gave a MAD scale of 0.6 % and an interval of ±5 % that
#: excluded the first round by construction; among so few rounds a stalled round cannot be told from a real
#: one, so it counts.
ROBUST_FROM = 8


def log_center_se(values) -> tuple[float, float, int]:
    """(median, its standard error, k) of the logs of `values` (round values): the median, robust to a round
    the host stalled, and its standard error ``sqrt(pi/2) * scale / sqrt(k)``.  The scale is robust from
    :data:`ROBUST_FROM` rounds on (``1.4826 * MAD``: a stalled round among many inflates a standard deviation
    as much as it would have dragged a mean); below it, the larger of that and the standard deviation, so that
    no round is ignored by construction.  Where rounds tie (round values are medians of whole nanoseconds, so
    two of three rounds now and then agree to the nanosecond) the MAD is 0 although the rounds differ: the
    robust scale is then the mean absolute deviation's, ``sqrt(pi/2) * mean|dev|``, zero only where every
    round agrees."""
    logs = np.log(np.asarray(values, float))
    k = logs.size
    centre = float(np.median(logs))
    deviations = np.abs(logs - centre)
    scale = MAD_SD * float(np.median(deviations))
    if scale == 0.0:
        scale = math.sqrt(math.pi / 2) * float(np.mean(deviations))  # a normal's SD over its mean |dev|
    if 1 < k < ROBUST_FROM:
        scale = max(scale, float(np.std(logs, ddof=1)))
    return centre, (MEDIAN_SE * scale / math.sqrt(k) if k > 1 else math.nan), k


def round_interval(values, stat: str = "median", confidence: float = CONFIDENCE,
                   spread: float | None = None) -> tuple[float, float, float, int]:
    """The estimate of a measurement made in rounds and its `confidence` interval:
    ``(value, low, high, rounds)``.

    Each round (a fresh worker process: pqlab.runners.rounds) gives one value, the `stat` of its samples; the
    estimate is their median, and the interval a t-interval on their logarithms widened by the machine's own
    drift: ``exp(median ± t_{k-1} sqrt(se² + m²))``, where se is the standard error of the median log round
    value (:func:`log_center_se`, from the median absolute deviation) and m the spread of the machine's speed
    over those rounds, read from the reference loops (:func:`machine_spread`; `spread` gives it instead).

    Why these choices.  Rounds, because consecutive samples of one process are correlated and their interval
    is too narrow.  A t-interval rather than a cluster bootstrap, because with the 3-20 rounds a run affords a
    percentile bootstrap cannot widen for the few clusters it has, while the t quantile does.  Logarithms,
    because times are positive and skewed and ratios are then symmetric.  The median of the rounds and a
    robust scale, because a shared host now and then stalls a whole round (a round 40 % slow among quiet ones
    was seen here), which would drag a mean and inflate a standard deviation.  The machine's drift, because
    the speed of a shared virtual machine wanders over minutes: a run samples one stretch of it, so its rounds
    alone under-state how far another run lands (six back-to-back runs held the pooled median in 70 % of their
    intervals without this term, 98 % with it: README, "Do the intervals hold here?").  The reference loops
    measure that drift in the same rounds, whatever is being measured.  Fewer than :data:`MIN_ROUNDS` rounds,
    or values without rounds: no interval."""
    r = round_values(values, stat)
    if r is None:
        x = np.asarray(values, float)
        x = x[np.isfinite(x)]
        return (float(_STATISTICS[stat](x)) if x.size else math.nan), math.nan, math.nan, (1 if x.size else 0)
    if r.empty:
        return math.nan, math.nan, math.nan, 0
    return interval_over_rounds(r.to_numpy(float),
                                machine_spread(values, r.index) if spread is None else spread, confidence)


def interval_over_rounds(per_round, spread: float = 0.0,
                         confidence: float = CONFIDENCE) -> tuple[float, float, float, int]:
    """:func:`round_interval` of one value per round (positive), the machine's drift over them given."""
    centre, se, k = log_center_se(per_round)
    if k < MIN_ROUNDS:
        return (math.exp(centre) if k else math.nan), math.nan, math.nan, k
    q = t_quantile(k - 1, confidence) * math.hypot(se, spread)
    return math.exp(centre), math.exp(centre - q), math.exp(centre + q), k


def _parts(samples) -> list:
    """Samples as a list: a tuple of them stands for the sum of their statistics."""
    return list(samples) if isinstance(samples, tuple) else [samples]


def combined_ci(samples, combine, stat: str = "median",
                confidence: float = CONFIDENCE) -> tuple[float, float, float]:
    """``combine([estimate of x for x in samples])`` with a `confidence` interval over rounds.

    `combine` takes a list of values (floats, or arrays of per-round values) and returns one value each, e.g.
    ``lambda s: (s[0] / s[1]) / (s[2] / s[3])`` for a ratio on one machine over the same ratio on another.

    The estimate is always ``combine`` of each side's own estimate over all its rounds (the median of its
    round medians: the number a table beside it shows), so a ratio never disagrees with the medians printed
    next to it.

    * **Paired by round** where every sample has rounds and they share :data:`MIN_ROUNDS` or more (run, round)
      pairs: one combined value per shared round gives the interval's width (:func:`log_center_se` of their
      logs, the t quantile), centred on the estimate, widened by how much the vector/scalar speed ratio of the
      machine moved over those rounds (drift that hits every side of a round alike cancels; drift that hits
      vector code and not scalar code does not).
    * **Independent** where they share fewer (different runs): each side's median log round value and its
      standard error, its machine drift added, combined by the delta method with Welch-Satterthwaite degrees
      of freedom.
    * No interval (nan, nan) where any side has no rounds (a runner that cannot do them) or fewer than
      :data:`MIN_ROUNDS`.  Returns ``(value, low, high)``."""
    parts = list(samples)
    rounds = [round_values(x, stat) for x in parts]
    if any(r is None for r in rounds):
        xs = [np.asarray(x, float) for x in parts]
        xs = [x[np.isfinite(x)] for x in xs]
        if any(x.size == 0 for x in xs):
            return math.nan, math.nan, math.nan
        return float(combine([_STATISTICS[stat](x) for x in xs])), math.nan, math.nan
    if any(r.empty for r in rounds):
        return math.nan, math.nan, math.nan
    shared = rounds[0].index
    for r in rounds[1:]:
        shared = shared.intersection(r.index)
    stats = [log_center_se(r) for r in rounds]
    estimates = [math.exp(m) for m, _, _ in stats]
    value = float(combine(estimates))  # of each side's own estimate: what a table beside it shows
    if len(shared) >= MIN_ROUNDS:
        per_round = np.asarray(combine([r.loc[shared].to_numpy(float) for r in rounds]), float)
        spread = max(machine_spread(x, shared, ratio=True) for x in parts)
        _, se, k = log_center_se(per_round[per_round > 0])
        if k < MIN_ROUNDS or not value > 0:
            return value, math.nan, math.nan
        q = t_quantile(k - 1, confidence) * math.hypot(se, spread)
        return value, value * math.exp(-q), value * math.exp(q)
    if any(k < MIN_ROUNDS for _, _, k in stats) or not value > 0:
        return value, math.nan, math.nan
    terms = []
    for i, ((_, se, k), x, r) in enumerate(zip(stats, parts, rounds)):  # d log f / d log g_i, numerically
        bumped = list(estimates)
        bumped[i] *= math.exp(LOG_STEP)
        slope = (math.log(float(combine(bumped))) - math.log(value)) / LOG_STEP
        terms.append(((slope * math.hypot(se, machine_spread(x, r.index))) ** 2, k - 1))
    var = sum(t for t, _ in terms)
    if var == 0:
        return value, value, value
    df = var ** 2 / sum(t ** 2 / d for t, d in terms if t > 0)
    q = t_quantile(df, confidence) * math.sqrt(var)
    return value, value * math.exp(-q), value * math.exp(q)


def ratio_ci(numerator, denominator, stat: str = "median",
             confidence: float = CONFIDENCE) -> tuple[float, float, float]:
    """``estimate(numerator) / estimate(denominator)`` with its interval over rounds (:func:`combined_ci`:
    paired by round where both were measured in the same rounds).  Either side may be a tuple of samples,
    standing for the sum of their estimates (e.g. sign + verify).  `stat` is each round's statistic, "median"
    or "mean": compare like with like.  Returns ``(ratio, low, high)``; no interval without rounds."""
    a, b = _parts(numerator), _parts(denominator)
    k = len(a)
    return combined_ci(a + b, lambda s: sum(s[:k]) / sum(s[k:]), stat, confidence)


def ratio_to_published(published: float, ours, stat: str = "median",
                       confidence: float = CONFIDENCE) -> tuple[float, float, float]:
    """``published / estimate(ours)`` with an interval from our side only (a published single number has
    none): ``(ratio, low, high)``; no interval where ours has no rounds (:func:`round_interval`)."""
    if published is None or not np.isfinite(published):
        return math.nan, math.nan, math.nan
    value, low, high, k = round_interval(ours, stat, confidence)
    if not k or not np.isfinite(value):
        return math.nan, math.nan, math.nan
    return float(published / value), float(published / high), float(published / low)


def ratio_of_estimates(num: float, num_se: float, den: float, den_se: float,
                       confidence: float = CONFIDENCE) -> tuple[float, float, float]:
    """``num / den`` of two independent estimates given with standard errors (fitted slopes, say), with a
    normal-approximation (delta-method) interval: ``(ratio, low, high)``; (nan, nan) without both errors."""

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

    a, b = np.asarray(a, float), np.asarray(b, float)
    if a.size < 2 or b.size < 2:
        return float("nan")
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    if va + vb == 0:
        return 0.0 if a.mean() != b.mean() else 1.0
    t = abs(a.mean() - b.mean()) / sqrt(va + vb)
    return float(min(1.0, erfc(t / sqrt(2))))


def with_rounds(samples: pd.DataFrame, column: str = "time_ns", noise: dict | None = None):
    """`column` of sample rows as a Series indexed by (run_id, round) when every row has its round (the input
    of :func:`pqlab.measure.stats.round_interval` and :func:`pqlab.measure.stats.ratio_ci`), else as a plain
    array.  `noise`: run id -> that run's ``meta["round_noise"]`` (each round's noise and reference loops),
    kept in ``attrs["round_noise"]`` for the interval."""
    values = samples[column].to_numpy(dtype=float)
    if "round" not in samples.columns or samples.empty or samples["round"].isna().any():
        return values
    index = pd.MultiIndex.from_arrays([samples["run_id"].astype(str).to_numpy(),
                                       samples["round"].astype(int).to_numpy()], names=["run_id", "round"])
    out = pd.Series(values, index=index)
    out.attrs["round_noise"] = noise or {}
    return out


def round_records(*runs) -> dict:
    """Run id -> that run's round records (``meta["round_noise"]``: noise and reference loops), for
    :func:`with_rounds` over samples of several runs."""
    return {str(getattr(r, "run_id", "")): (getattr(r, "meta", None) or {}).get("round_noise") or []
            for r in runs if r is not None}
