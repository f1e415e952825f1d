"""stats on samples whose answers are known: quartiles, MAD, the median's CI, instability flags,
and the Mann-Whitney test against values worked out by hand."""
from __future__ import annotations

import math

import numpy as np
import pytest

from pqlab import stats
from pqlab.stats import mann_whitney, summarize


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
    # tie term (3^3 - 3) / (6*5) = 0.8, sigma = sqrt(9/12 * (7 - 0.8)); z = (3.5 - 0.5)/sigma = 1.3912; p = 0.1642
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
    from pqlab.stats import ratio_of_estimates

    r, lo, hi = ratio_of_estimates(4.0, 0.4, 2.0, 0.2)
    se = 2.0 * ((0.1) ** 2 + (0.1) ** 2) ** 0.5
    assert r == 2.0 and lo == pytest.approx(2.0 - 1.959964 * se, rel=1e-5) and hi == pytest.approx(2.0 + 1.959964 * se, rel=1e-5)
    assert np.isnan(ratio_of_estimates(4.0, float("nan"), 2.0, 0.2)[1])
    assert np.isnan(ratio_of_estimates(4.0, 0.1, 0.0, 0.2)[0])


def test_ratio_ci_of_sums_of_statistics():
    rng = np.random.default_rng(1)
    sign, verify = 10 + rng.standard_normal(200), 2 + 0.1 * rng.standard_normal(200)
    other = 6 + 0.1 * rng.standard_normal(200)
    r, lo, hi = stats.ratio_ci((sign, verify), other)
    assert r == pytest.approx((np.median(sign) + np.median(verify)) / np.median(other))
    assert lo < r < hi and hi - lo < 0.2
    assert np.isnan(stats.ratio_ci((sign, np.array([])), other)[0])
    assert np.isnan(stats.ratio_ci((sign, np.array([1.0])), other)[1])


def test_bootstrap_ci_of_any_combination_of_samples():
    rng = np.random.default_rng(1)
    enc, dec, base = rng.normal(30, 0.3, 500), rng.normal(30, 0.3, 500), rng.normal(40, 0.4, 500)
    value, low, high = stats.bootstrap_ci([enc, dec, base], lambda s: (s[0] + s[1]) / s[2])
    assert value == pytest.approx((np.median(enc) + np.median(dec)) / np.median(base))
    assert stats.ratio_ci((enc, dec), base) == (value, low, high)  # ratio_ci's sums are this combination
    other = rng.normal(10, 0.1, 500)  # a ratio of ratios (one machine's over another's)
    v2 = stats.bootstrap_ci([enc, base, dec, other], lambda s: (s[0] / s[1]) / (s[2] / s[3]))
    assert v2[0] == pytest.approx((np.median(enc) / np.median(base)) / (np.median(dec) / np.median(other)))
    assert v2[1] < v2[0] < v2[2]
    assert low < value < high and high - low < 0.02
    assert stats.bootstrap_ci([enc, dec, base], lambda s: (s[0] + s[1]) / s[2]) == (value, low, high)  # seeded
    # ratio_ci is the two-sample case
    assert stats.ratio_ci(enc, base) == stats.bootstrap_ci([enc, base], lambda s: s[0] / s[1])
    # one value says nothing about its spread; an empty sample gives nothing
    v, lo, hi = stats.bootstrap_ci([enc, [5.0]], lambda s: s[0] / s[1])
    assert v == pytest.approx(np.median(enc) / 5) and math.isnan(lo) and math.isnan(hi)
    assert all(math.isnan(x) for x in stats.bootstrap_ci([enc, []], lambda s: s[0] / s[1]))


def test_precision_summary_counts_rows_that_missed_their_target():
    import pandas as pd

    df = pd.DataFrame({"time_ns_rel_ci": [0.004, 0.008, 0.03, float("nan")],
                       "target_rel_ci": [0.01, 0.01, 0.01, 0.01],
                       "flags": ["", "unstable-cv", "few-samples;precision-not-reached:budget", "failed:x"]})
    s = stats.precision_summary(df)
    assert s == {"rows": 4, "with_precision": 3, "median": 0.008, "worst": 0.03, "targeted": 4, "missed": 1,
                 "target": 0.01}
    none = stats.precision_summary(df.drop(columns=["time_ns_rel_ci"]))
    assert none["with_precision"] == 0 and none["median"] is None
