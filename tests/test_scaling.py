"""pqlab.studies.message_scaling: message lengths, the fixed + per-byte cost model, and the generated text."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from pqlab.studies import message_scaling as scaling


# ----- message lengths -----
def test_sweep_follows_supercop():
    lengths = scaling.sweep_lengths()
    assert lengths[:12] == [0, 1, 2, 3, 4, 6, 8, 11, 14, 18, 23, 29]
    assert lengths[-1] == 1 << 20
    assert lengths == sorted(set(lengths))
    ratios = [b / a for a, b in zip(lengths, lengths[1:-1]) if a >= 1000]
    assert ratios and all(1.2 <= r <= 1.3 for r in ratios)  # each about 1.25 times the last


def test_sweep_stride_keeps_both_ends():
    quick = scaling.sweep_lengths(4096, stride=5)
    assert quick[0] == 0 and quick[-1] == 4096
    assert set(quick) <= set(scaling.sweep_lengths(4096))
    assert len(quick) < len(scaling.sweep_lengths(4096))
    with pytest.raises(ValueError):
        scaling.sweep_lengths(100, stride=0)


def test_study_grid_from_its_table():
    assert scaling.study_lengths() == list(range(10_000, 100_001, 10_000))


# ----- the cost model -----
def synthetic(fixed=5_000.0, per_byte=2.5, noise=0.01, lengths=(0, 100, 1_000, 10_000, 100_000, 1_000_000),
              seed=1, algorithm="X", operation="sign", backend="b", family="lattice", ci=True):
    rng = np.random.default_rng(seed)
    n = np.asarray(lengths, float)
    truth = fixed + per_byte * n
    y = truth * (1 + noise * rng.standard_normal(n.size))
    df = pd.DataFrame({"algorithm": algorithm, "backend": backend, "operation": operation, "family": family,
                       "message_bytes": n, "time_ns_median": y})
    if ci:
        df["time_ns_ci_low"] = y * (1 - 1.96 * noise)
        df["time_ns_ci_high"] = y * (1 + 1.96 * noise)
    return df


@pytest.mark.parametrize("ci", [True, False])
def test_fit_recovers_intercept_and_slope(ci):
    """WLS on a geometric sweep with relative errors; OLS (no intervals, like a study's table) on an even grid."""
    df = synthetic(ci=ci) if ci else synthetic(lengths=range(10_000, 100_001, 10_000), noise=0.002, ci=False)
    fits = scaling.fit_linear_cost(df)
    r = fits.iloc[0]
    assert r.fixed_ns == pytest.approx(5_000, rel=0.05)
    assert r.per_byte_ns == pytest.approx(2.5, rel=0.05)
    assert abs(r.per_byte_ns - 2.5) < 4 * r.per_byte_ns_se
    assert r.crossover_bytes == pytest.approx(r.fixed_ns / r.per_byte_ns)
    assert r.per_byte_significant and r.r2 > 0.99
    assert r.method.startswith("wls" if ci else "ols")


def test_fit_without_per_byte_cost():
    fits = scaling.fit_linear_cost(synthetic(per_byte=0.0, seed=3))
    r = fits.iloc[0]
    assert not r.per_byte_significant
    assert r.fixed_ns == pytest.approx(5_000, rel=0.02)
    assert math.isinf(r.crossover_bytes) or r.crossover_bytes > 1e6


def test_fit_groups_and_skips_short_series():
    df = pd.concat([synthetic(algorithm="A"), synthetic(algorithm="B", per_byte=1.0),
                    synthetic(algorithm="C", lengths=(0, 100))])
    fits = scaling.fit_linear_cost(df)
    assert list(fits["algorithm"]) == ["A", "B"]
    assert fits.set_index("algorithm").loc["B", "per_byte_ns"] == pytest.approx(1.0, rel=0.05)


def test_describe_fits_states_the_crossover():
    df = synthetic()
    text = scaling.describe_fits(scaling.fit_linear_cost(df), df)
    assert "X at" in text and "KiB" in text
    assert "within 25%" in text


# ----- the recommendation -----
def measurements(sign_a, sign_b, verify_a=10_000.0, verify_b=10_000.0):
    rows = []
    for algo, fam, s, v in (("A", "elliptic-curve", sign_a, verify_a), ("B", "lattice", sign_b, verify_b)):
        for n in (10_000, 100_000):
            rows.append({"algorithm": algo, "backend": "x", "family": fam, "operation": "sign", "message_bytes": n,
                         "time_ns_median": s + n})
            rows.append({"algorithm": algo, "backend": "x", "family": fam, "operation": "verify", "message_bytes": n,
                         "time_ns_median": v + n})
    return pd.DataFrame(rows)


def test_recommendation_follows_the_data():
    one = scaling.recommend(measurements(sign_a=20_000, sign_b=90_000))
    other = scaling.recommend(measurements(sign_a=90_000, sign_b=20_000))
    assert one != other
    assert "sign: **A**" in one and "sign: **B**" in other
    assert "post-quantum: **B**" in one  # A is classical: the post-quantum pick is named beside it
    assert "**Recommendation**" in one


def test_ranking_uses_the_model_where_a_length_was_not_measured():
    df = measurements(20_000, 90_000)
    fits = scaling.fit_linear_cost(pd.concat([df, df.assign(message_bytes=0, time_ns_median=df["time_ns_median"]
                                                                  - df["message_bytes"])]), min_sizes=2)
    r = scaling.ranking(df, fits, message_bytes=(50_000,))
    assert set(r["source"]) == {"model"}
    assert r[(r["operation"] == "sign") & (r["rank"] == 1)]["algorithm"].item() == "A"


# ----- pure Python beside native -----
def test_slowdown_pairs_same_standard_and_round3():
    df = pd.DataFrame([
        {"algorithm": "SLH-DSA-SHA2-128f", "backend": "pure-python", "implementation": "py", "operation": "sign",
         "message_bytes": 100, "time_ns_median": 100.0},
        {"algorithm": "SLH-DSA-SHA2-128f", "backend": "pqcrypto", "implementation": "c", "operation": "sign",
         "message_bytes": 100, "time_ns_median": 20.0},
        {"algorithm": "SPHINCS+-SHA2-128f-simple", "backend": "liboqs", "implementation": "c", "operation": "sign",
         "message_bytes": 100, "time_ns_median": 10.0},
        {"algorithm": "SLH-DSA-SHA2-128f", "backend": "pqcrypto", "implementation": "c", "operation": "sign",
         "message_bytes": 999, "time_ns_median": 1.0},  # another length: not paired
    ])
    t = scaling.slowdown(df).set_index("native_backend")
    assert t.loc["pqcrypto", "slowdown"] == 5.0 and t.loc["pqcrypto", "same_standard"]
    assert t.loc["liboqs", "slowdown"] == 10.0 and not t.loc["liboqs", "same_standard"]
    text = scaling.describe_slowdown(scaling.slowdown(df))
    assert "5.0× vs pqcrypto" in text and "10.0×" in text
    note = scaling.closing_note(scaling.slowdown(df), pd.DataFrame())
    assert "5.0× (pqcrypto)" in note


def test_round3_equivalent():
    assert scaling.round3_equivalent("SLH-DSA-SHAKE-256s") == "SPHINCS+-SHAKE-256s-simple"
    assert scaling.round3_equivalent("ML-DSA-44") is None


# ----- the study -----
def test_study_findings_quote_the_contradiction():
    f = scaling.study_findings()
    assert f["rsa_faster_than_ecdsa_sign"] == f["sizes_sign"] == 10
    assert f["rsa_faster_than_ecdsa_verify"] == 10


def test_compare_with_study_ratios():
    ours = pd.DataFrame({"algorithm": "ECDSA-P256", "backend": "cryptography", "operation": "sign",
                         "message_bytes": [10_000, 20_000], "time_ns_median": [0.390999e6 / 2, 1e5]})
    t = scaling.compare_with_study(ours)
    assert list(t["study_label"].unique()) == ["ECDSA"]
    assert t.set_index("message_bytes").loc[10_000, "study_over_ours"] == pytest.approx(2.0)
    text = scaling.describe_study(t)
    assert "contradicts" in text and "ECDSA" in text


def test_describe_agreement_reports_failures():
    checks = pd.DataFrame([
        {"signer": "a@x", "verifier": "a@y", "expected": True, "verifies": True, "rejects_tampered": True},
        {"signer": "a@y", "verifier": "a@x", "expected": True, "verifies": False, "rejects_tampered": True},
        {"signer": "r3@liboqs", "verifier": "a@x", "expected": False, "verifies": False, "rejects_tampered": True},
    ])
    text = scaling.describe_agreement(checks)
    assert "1 of 2" in text and "Disagreement" in text and "a@y → a@x" in text
