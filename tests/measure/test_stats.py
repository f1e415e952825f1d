"""stats on samples whose answers are known: quartiles, MAD, the median's CI, instability flags,
and the Mann-Whitney test against values worked out by hand."""
from __future__ import annotations

import math

import numpy as np
import pytest

from pqlab.measure import stats
from pqlab.measure.stats import mann_whitney, summarize


def with_cv(cv: float, n: int = 50, centre: float = 100.0) -> np.ndarray:
    """n evenly spread values around `centre` with exactly the coefficient of variation `cv`."""
    z = np.linspace(-1, 1, n)
    z = z / z.std(ddof=1)
    return centre + cv * centre * z


def test_summary_of_1_to_100():
    s = summarize(np.arange(1, 101))
    assert s["n"] == 100
    assert s["median"] == 50.5
    assert (s["q1"], s["q3"]) == (25.75, 75.25)  # linear interpolation between order statistics
    assert (s["min"], s["max"], s["mean"]) == (1.0, 100.0, 50.5)
    assert s["mad"] == 25.0  # |x - 50.5| = 0.5, 0.5, 1.5, 1.5, ... 49.5: median 25
    assert s["cv"] == pytest.approx(math.sqrt(100 * 101 / 12) / 50.5)  # sample sd of 1..n is sqrt(n(n+1)/12)
    assert s["ci_low"] <= 50.5 <= s["ci_high"]
    assert set(s["flags"]) == {"unstable-cv", "min-far-from-median"}


def test_summary_of_an_odd_sample():
    s = summarize([3, 1, 2, 5, 4])
    assert (s["median"], s["q1"], s["q3"], s["mad"]) == (3.0, 2.0, 4.0, 1.0)


def test_non_finite_values_are_dropped_and_empty_is_flagged():
    assert summarize([1.0, float("nan"), 3.0, float("inf")])["n"] == 2
    assert summarize([])["flags"] == ["no-samples"]
    assert summarize([float("nan")])["n"] == 0


def test_median_ci_ranks_match_the_binomial_tables():
    # 95 % distribution-free CI of the median, 1-based order statistics from the usual tables
    # (e.g. Conover, Practical Nonparametric Statistics): n=6 -> (1, 6), n=10 -> (2, 9),
    # n=20 -> (6, 15), n=100 -> (40, 61)
    assert stats.median_ci_ranks(5) is None  # 2 / 2**5 = 6.25 % > 5 %: no 95 % interval from 5 values
    assert stats.median_ci_ranks(6) == (0, 5)
    assert stats.median_ci_ranks(10) == (1, 8)
    assert stats.median_ci_ranks(20) == (5, 14)
    assert stats.median_ci_ranks(100) == (39, 60)
    assert stats.median_ci_ranks(20, confidence=0.99) == (3, 16)  # tables: (4, 17) 1-based


def test_median_ci_covers_the_true_median_at_least_95_percent():
    rng = np.random.default_rng(3)
    for n in (6, 25, 400):
        x = rng.lognormal(0.0, 1.0, size=(2000, n))  # true median 1
        hits = sum(lo <= 1.0 <= hi for lo, hi in map(stats.median_ci, x))
        assert hits / 2000 >= 0.94, (n, hits)  # exact coverage is >= 95 %; 2000 draws leave ~0.5 % noise


def test_median_ci_edge_cases_and_summary():
    assert all(math.isnan(v) for v in stats.median_ci([1.0, 2.0, 3.0]))
    assert stats.median_ci([2.0] * 30) == (2.0, 2.0)
    x = np.arange(1.0, 101.0)
    s = summarize(x)
    assert (s["ci_low"], s["ci_high"]) == (40.0, 61.0)
    assert s["rel_ci"] == pytest.approx((61 - 40) / 2 / 50.5)
    assert math.isnan(summarize([1.0, 2.0])["rel_ci"])


def test_cv_flag_at_ten_percent():
    below, above = with_cv(0.095), with_cv(0.105)
    assert np.std(below, ddof=1) / below.mean() == pytest.approx(0.095)
    s_below, s_above = summarize(below), summarize(above)
    assert s_below["cv"] == pytest.approx(0.095) and s_above["cv"] == pytest.approx(0.105)
    assert "unstable-cv" not in s_below["flags"]
    assert "unstable-cv" in s_above["flags"]
    assert stats.CV_LIMIT == 0.10
    # neither is flagged for anything else
    assert s_below["flags"] == [] and s_above["flags"] == ["unstable-cv"]


def test_few_samples_flag():
    assert "few-samples" in summarize([100.0] * 9)["flags"]
    assert "few-samples" not in summarize([100.0] * 10)["flags"]


def test_min_far_from_median_flag():
    assert "min-far-from-median" in summarize([100.0] * 20 + [70.0])["flags"]  # 30% below the median
    assert "min-far-from-median" not in summarize([100.0] * 20 + [85.0])["flags"]  # 15%
    assert summarize([100.0] * 20 + [70.0])["flags"] == ["min-far-from-median"]  # cv 6.5%: only this flag


def test_mann_whitney_worked_examples():
    # a = 1,2,3 and b = 4,5,6: ranks of a 1+2+3 = 6, U = 6 - 3*4/2 = 0; mu = 4.5, sigma = sqrt(9*7/12);
    # z = (4.5 - 0.5) / sigma = 1.7457; p = erfc(z / sqrt 2) = 0.0809
    u, p = mann_whitney([1, 2, 3], [4, 5, 6])
    assert u == 0.0 and p == pytest.approx(0.0809, abs=1e-4)
    # with ties: a = 1,2,2 and b = 2,3,4: the three 2s share rank 3, so ranks of a = 1+3+3 = 7, U = 1;
    # tie term (3^3 - 3) / (6*5) = 0.8, sigma = sqrt(9/12 * (7 - 0.8)); z = (3.5 - 0.5)/sigma = 1.3912;
    # p = 0.1642
    u, p = mann_whitney([1, 2, 2], [2, 3, 4])
    assert u == 1.0 and p == pytest.approx(0.1642, abs=1e-4)


def test_mann_whitney_symmetry_identical_and_shifted():
    rng = np.random.default_rng(0)
    a, b = rng.normal(100, 5, 200), rng.normal(100, 5, 150)
    u_ab, p_ab = mann_whitney(a, b)
    u_ba, p_ba = mann_whitney(b, a)
    assert u_ab + u_ba == a.size * b.size and p_ab == pytest.approx(p_ba)
    assert mann_whitney(a, a)[1] == pytest.approx(1.0)
    assert mann_whitney([7.0] * 20, [7.0] * 30)[1] == 1.0  # all tied: nothing to tell apart
    assert mann_whitney(a, a + 20)[1] < 0.001
    assert mann_whitney(np.arange(30), np.arange(30) + 100)[1] < 0.001
    u, p = mann_whitney([], [1.0])
    assert math.isnan(u) and math.isnan(p)



def test_ratio_of_estimates_is_the_delta_method():
    from pqlab.measure.stats import ratio_of_estimates

    r, lo, hi = ratio_of_estimates(4.0, 0.4, 2.0, 0.2)
    se = 2.0 * ((0.1) ** 2 + (0.1) ** 2) ** 0.5
    assert (r == 2.0 and lo == pytest.approx(2.0 - 1.959964 * se, rel=1e-5)
            and hi == pytest.approx(2.0 + 1.959964 * se, rel=1e-5))
    assert np.isnan(ratio_of_estimates(4.0, float("nan"), 2.0, 0.2)[1])
    assert np.isnan(ratio_of_estimates(4.0, 0.1, 0.0, 0.2)[0])


def _rounds(values, run_id="r", per_round=None):
    """Samples labelled with their run and round: `per_round` samples a round
    (default: one round per value)."""
    import pandas as pd

    values = np.asarray(values, float)
    per_round = per_round or 1
    idx = pd.MultiIndex.from_arrays([[run_id] * values.size, np.arange(values.size) // per_round],
                                    names=["run_id", "round"])
    return pd.Series(values, index=idx)


def test_t_quantile_matches_the_tables():
    for df, q in ((1, 12.7062), (2, 4.3027), (5, 2.5706), (10, 2.2281), (30, 2.0423), (1000, 1.9623)):
        assert stats.t_quantile(df) == pytest.approx(q, abs=1e-4)
    assert stats.t_quantile(4, 0.99) == pytest.approx(4.6041, abs=1e-4)


def test_round_interval_is_a_t_interval_over_round_medians_and_none_below_three_rounds():
    # round medians 11, 101, 21, 41
    x = _rounds([10, 11, 12, 100, 101, 102, 20, 21, 22, 40, 41, 42], per_round=3)
    value, low, high, k = stats.round_interval(x)
    logs = np.log([11, 101, 21, 41])
    centre = np.median(logs)
    se = np.sqrt(np.pi / 2) * 1.4826 * np.median(np.abs(logs - centre)) / 2  # a median's, from a robust scale
    half = stats.t_quantile(3) * se
    assert k == 4 and value == pytest.approx(np.exp(centre)) == pytest.approx(np.sqrt(21 * 41))
    assert (low, high) == (pytest.approx(np.exp(centre - half)), pytest.approx(np.exp(centre + half)))
    # the machine's drift (the reference loops' spread over those rounds) widens it in quadrature
    _, low2, high2, _ = stats.round_interval(x, spread=0.1)
    half2 = stats.t_quantile(3) * np.hypot(se, 0.1)
    assert low2 == pytest.approx(np.exp(centre - half2)) and high2 == pytest.approx(np.exp(centre + half2))
    v, lo, hi, k = stats.round_interval(_rounds([1, 2, 3, 4], per_round=2))  # two rounds: no interval
    assert k == 2 and v == pytest.approx(np.sqrt(1.5 * 3.5)) and math.isnan(lo) and math.isnan(hi)
    # a round stalled by the host barely moves the estimate
    stalled = _rounds([10, 10.1, 9.9, 10.05, 14.0], per_round=1)
    assert stats.round_interval(stalled)[0] == pytest.approx(10.05)
    # no rounds (one process): the median, no interval
    v, lo, hi, k = stats.round_interval(np.array([1.0, 2.0, 3.0]))
    assert (v, k) == (2.0, 1) and math.isnan(lo)


def test_rounds_that_tie_to_the_nanosecond_still_give_an_interval_and_only_identical_rounds_none():
    # two of three round medians equal (whole nanoseconds): the MAD is 0, the rounds are not; the robust scale
    # is then sqrt(pi/2) mean|dev|, with so few rounds at least their standard deviation, and a median's
    # standard error sqrt(pi/2) scale / sqrt(k)
    centre, se, k = stats.log_center_se([35132.0, 35132.0, 34842.0])
    logs = np.log([35132.0, 35132.0, 34842.0])
    scale = max(np.sqrt(np.pi / 2) * np.mean(np.abs(logs - centre)), np.std(logs, ddof=1))
    assert k == 3 and se > 0 and se == pytest.approx(np.sqrt(np.pi / 2) * scale / np.sqrt(3))
    _, low, high, _ = stats.round_interval(_rounds([35132, 35132, 34842], per_round=1))
    assert low < 34842 < 35132 < high
    assert stats.log_center_se([5.0, 5.0, 5.0])[1] == 0.0  # rounds that all agree: nothing to widen


def test_round_intervals_cover_when_rounds_differ_and_samples_within_them_mislead():
    """Each round (process) has its own level; thousands of samples within a round say nothing about it.  The
    interval over rounds covers the true level 95 % of the time; one over the pooled samples does not."""
    rng = np.random.default_rng(7)
    hits = hits_pooled = 0
    trials = 400
    for _ in range(trials):
        levels = np.exp(rng.normal(0, 0.02, 6))  # between-round spread 2 %
        x = np.concatenate([lv * (1 + 0.01 * rng.standard_normal(200)) for lv in levels])
        _, lo, hi, _ = stats.round_interval(_rounds(x, per_round=200))
        hits += lo <= 1.0 <= hi
        plo, phi = stats.median_ci(x)
        hits_pooled += plo <= 1.0 <= phi
    assert 0.91 <= hits / trials <= 0.99
    assert hits_pooled / trials < 0.6


def test_ratio_ci_is_paired_by_round_and_drift_cancels():
    rng = np.random.default_rng(3)
    drift = np.exp(rng.normal(0, 0.05, 8))  # each round 5 % up or down, for both sides alike
    a = np.concatenate([2 * d * (1 + 0.005 * rng.standard_normal(50)) for d in drift])
    b = np.concatenate([d * (1 + 0.005 * rng.standard_normal(50)) for d in drift])
    r, lo, hi = stats.ratio_ci(_rounds(a, per_round=50), _rounds(b, per_round=50))
    # paired: the drift cancels
    assert r == pytest.approx(2, rel=0.01) and lo < 2 < hi and (hi - lo) / 2 < 0.012
    # from different runs the rounds are independent: the same data, far wider
    r2, lo2, hi2 = stats.ratio_ci(_rounds(a, "x", 50), _rounds(b, "y", 50))
    assert r2 == pytest.approx(r, rel=0.01) and (hi2 - lo2) > 5 * (hi - lo) and lo2 < 2 < hi2
    # no rounds on a side: no interval
    assert math.isnan(stats.ratio_ci(a, _rounds(b, per_round=50))[1])


def test_ratio_ci_of_sums_and_combined_ci_of_any_combination():
    rng = np.random.default_rng(1)
    sign, verify = 10 + 0.1 * rng.standard_normal(80), 2 + 0.01 * rng.standard_normal(80)
    other = 6 + 0.06 * rng.standard_normal(80)
    s, v, o = (_rounds(x, per_round=10) for x in (sign, verify, other))
    r, lo, hi = stats.ratio_ci((s, v), o)
    med = lambda x: np.median(x.reshape(8, 10), axis=1)  # noqa: E731
    per_round = (med(sign) + med(verify)) / med(other)
    # the estimate combines each side's own median (what a table shows); the per-round values give the width
    centre = lambda x: np.exp(np.median(np.log(med(x))))  # noqa: E731
    assert r == pytest.approx((centre(sign) + centre(verify)) / centre(other))
    assert per_round.min() < r < per_round.max()
    assert lo < r < hi and hi - lo < 0.1
    assert stats.ratio_ci((s, v), o) == stats.combined_ci([s, v, o], lambda x: (x[0] + x[1]) / x[2])
    v2 = stats.combined_ci([s, o, v, o], lambda x: (x[0] / x[1]) / (x[2] / x[3]))
    assert v2[1] < v2[0] < v2[2]
    assert np.isnan(stats.ratio_ci((s, _rounds([])), o)[0])  # an empty side gives nothing


def test_ratio_to_published_inverts_our_interval():
    ours = _rounds([9.0, 10.0, 11.0, 10.0, 10.5, 9.5], per_round=1)
    value, low, high, _ = stats.round_interval(ours)
    r, lo, hi = stats.ratio_to_published(20.0, ours)
    assert (r, lo, hi) == (pytest.approx(20 / value), pytest.approx(20 / high), pytest.approx(20 / low))
    assert math.isnan(stats.ratio_to_published(20.0, np.array([9.0, 10.0]))[1])  # no rounds: no interval
    assert math.isnan(stats.ratio_to_published(float("nan"), ours)[0])


def test_few_rounds_never_ignore_the_round_that_differs():
    """Issue #41: three rounds of 46.2, 17.6 and 17.75 gave 17.75 [16.89, 18.66], an interval that left out
    the first round by construction (the MAD of three ignores it).  Below ROBUST_FROM rounds every round
    counts: the interval holds each round's value, and is wide enough to be shown as not resolved."""
    value, low, high, k = stats.interval_over_rounds([46.2, 17.6, 17.75])
    assert k == 3 and value == pytest.approx(17.75)
    assert low <= 17.6 and high >= 46.2
    # from ROBUST_FROM rounds on, one stalled round among many is the robust scale's to ignore
    many = [17.6, 17.75, 17.7, 17.65, 17.8, 17.72, 17.68, 46.2]
    assert len(many) == stats.ROBUST_FROM and stats.interval_over_rounds(many)[2] < 18.5


def test_the_drift_term_counts_only_what_moves_beyond_the_reference_loops_own_noise():
    """Issue #41: on a quiet machine the reference loops' own noise made every interval about four times wider
    than the real spread.  Readings that differ between rounds only as much as a round's start and end differ
    add no drift; a real shift between rounds still counts."""
    rng = np.random.default_rng(3)

    def records(shift):
        out = []
        for r in range(8):
            level = 1e6 * (1 + (shift if r % 2 else 0))
            a, b = (level * np.exp(rng.normal(0, 0.05, 2)) for _ in range(2))
            out.append({"round": r, "scalar_start_ns": a[0], "scalar_end_ns": b[0], "vector_start_ns": a[1],
                        "vector_end_ns": b[1], "scalar_ns": min(a[0], b[0]), "vector_ns": min(a[1], b[1])})
        return out

    noise_only = records(0.0)
    naive = max(np.std(np.log([r[f"{k}_ns"] for r in noise_only]), ddof=1) for k in ("scalar", "vector"))
    assert stats.reference_spread(noise_only) < naive / 2
    assert stats.reference_spread(records(0.5)) > 0.15
