"""pqlab.studies.message_scaling: message lengths, the fixed + per-byte cost model, and the generated text."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from pqlab.backends import algorithms
from pqlab.checks import interop
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
    """WLS on a geometric sweep with relative errors; OLS (no intervals, like a
    study's table) on an even grid."""
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
            rows.append({"algorithm": algo, "backend": "x", "family": fam, "operation": "sign",
                         "message_bytes": n, "time_ns_median": s + n})
            rows.append({"algorithm": algo, "backend": "x", "family": fam, "operation": "verify",
                         "message_bytes": n, "time_ns_median": v + n})
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
    fits = scaling.fit_linear_cost(pd.concat([df, df.assign(message_bytes=0,
                                                            time_ns_median=df["time_ns_median"]
                                                            - df["message_bytes"])]), min_sizes=2)
    r = scaling.ranking(df, fits, message_bytes=(50_000,))
    assert set(r["source"]) == {"model"}
    assert r[(r["operation"] == "sign") & (r["rank"] == 1)]["algorithm"].item() == "A"


# ----- pure Python beside native -----
def test_slowdown_pairs_same_standard_and_round3():
    df = pd.DataFrame([
        {"algorithm": "SLH-DSA-SHA2-128f", "backend": "pure-python", "implementation": "py",
         "operation": "sign", "message_bytes": 100, "time_ns_median": 100.0},
        {"algorithm": "SLH-DSA-SHA2-128f", "backend": "pqcrypto", "implementation": "c", "operation": "sign",
         "message_bytes": 100, "time_ns_median": 20.0},
        {"algorithm": "SPHINCS+-SHA2-128f-simple", "backend": "liboqs", "implementation": "c",
         "operation": "sign", "message_bytes": 100, "time_ns_median": 10.0},
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
        {"signer": "r3@liboqs", "verifier": "a@x", "expected": False, "verifies": False,
         "rejects_tampered": True},
    ])
    text = interop.describe_agreement(checks)
    assert "1 of 2" in text and "Disagreement" in text and "a@y → a@x" in text
    version = algorithms.get("SPHINCS+-SHA2-128f-simple", "liboqs").library_version
    assert f"liboqs {version} ships SPHINCS+ as submitted in round 3" in text


# ----- issue #14: the study's SPHINCS-256, intervals, what the study's RSA says, caveats, numbers -----
def test_sphincs256_sizes_follow_from_its_parameters():
    s = scaling.sphincs256()
    assert (s["hash_bytes"], s["signature_bytes"], s["public_key_bytes"],
            s["secret_key_bytes"]) == (32, 41000, 1056, 1088)
    assert "-O3" in s["compiler"] and "NIF" in s["binding"] and "ref" in s["code"]


def test_comparators_share_sphincs256s_hash_length():
    assert (scaling.parameter_set("SLH-DSA-SHAKE-256s") == (32, "s")
            and scaling.parameter_set("ML-DSA-44") is None)
    assert scaling.parameter_set("SPHINCS+-SHA2-128f-simple") == (16, "f")
    comp = scaling.study_comparators(("f",))["SPHINCS"]
    assert comp and all(scaling.parameter_set(c.split("@")[0]) == (32, "f") for c in comp)
    assert not any(c.endswith("@pure-python") or "-robust" in c for c in comp)
    assert set(scaling.study_comparators(("f", "s"))["SPHINCS"]) > set(comp)
    label = scaling.study_labels(pd.DataFrame({"algorithm": ["SLH-DSA-SHA2-256f"],
                                               "signature_max_bytes": [49856]}),
                                 {"SPHINCS": ["SLH-DSA-SHA2-256f@pqcrypto"]})["SPHINCS"]
    assert "hash length 256 bits, signatures of 41,000 B" in label and "signatures of 49,856 B" in label
    assert "not the same scheme" in label and "unoptimised" not in label


def fake_samples(rows):
    """samples_of-like dict from (algorithm, backend, operation, length, centre ns)."""
    from conftest import in_rounds

    rng = np.random.default_rng(3)
    return {(a, b, o, float(n if n is not None else -1)): in_rounds(c * (1 + 0.02 * rng.standard_normal(30)),
                                                                    f"{a}@{b}")
            for a, b, o, n, c in rows}


def test_slowdown_and_study_ratios_carry_intervals():
    df = pd.DataFrame([
        {"algorithm": "ML-DSA-44", "backend": "pure-python", "implementation": "py", "operation": "sign",
         "message_bytes": 100, "time_ns_median": 1e6},
        {"algorithm": "ML-DSA-44", "backend": "liboqs", "implementation": "c", "operation": "sign",
         "message_bytes": 100, "time_ns_median": 1e4}])
    samples = fake_samples([("ML-DSA-44", "pure-python", "sign", 100, 1e6),
                            ("ML-DSA-44", "liboqs", "sign", 100, 1e4)])
    t = scaling.slowdown(df, samples).iloc[0]
    assert t.slowdown_ci_low < t.slowdown < t.slowdown_ci_high and t.slowdown == pytest.approx(100, rel=0.05)
    # no samples: no interval, said by the table
    assert np.isnan(scaling.slowdown(df).iloc[0].slowdown_ci_low)
    ours = pd.DataFrame({"algorithm": "ECDSA-P256", "backend": "cryptography", "operation": "sign",
                         "message_bytes": [10_000], "time_ns_median": [0.390999e6 / 2]})
    beside = scaling.compare_with_study(ours, fake_samples([("ECDSA-P256", "cryptography", "sign", 10_000,
                                                             0.390999e6 / 2)]))
    row = beside.iloc[0]
    assert (row.ci_low < row.study_over_ours < row.ci_high
            and row.study_over_ours == pytest.approx(2.0, rel=0.05))


def test_hashing_passes_need_the_interval():
    def fits(sign, sign_se, verify=1.0, verify_se=0.01):
        return pd.DataFrame([{"algorithm": "E", "backend": "b", "operation": "sign", "per_byte_ns": sign,
                              "per_byte_ns_se": sign_se},
                             {"algorithm": "E", "backend": "b", "operation": "verify", "per_byte_ns": verify,
                              "per_byte_ns_se": verify_se}])
    assert scaling.hashing_passes(fits(2.0, 0.02)).iloc[0].passes == "twice"
    assert scaling.hashing_passes(fits(2.0, 1.0)).iloc[0].passes == "other"  # interval too wide to tell
    assert scaling.hashing_passes(fits(1.05, 0.02)).iloc[0].passes == "same"
    assert scaling.hashing_passes(fits(1.05, 0.5)).iloc[0].passes == "other"
    row = scaling.hashing_passes(fits(2.0, 0.02)).iloc[0]
    assert row.ci_low < 2.0 < row.ci_high


def test_rsa_evidence_from_the_studys_own_table():
    native = pd.DataFrame([{"algorithm": "RSA-2048-PKCS1v15-sig", "backend": "cryptography", "operation": op,
                            "message_bytes": 0, "time_ns_median": t}
                           for op, t in (("sign", 7e5), ("verify", 2e4))])
    fits = pd.DataFrame([{"algorithm": "RSA-2048-PKCS1v15-sig", "backend": "cryptography",
                          "operation": "sign", "per_byte_ns": 2.5, "per_byte_ns_se": 0.05}])
    samples = fake_samples([("RSA-2048-PKCS1v15-sig", "cryptography", "sign", 0, 7e5),
                            ("RSA-2048-PKCS1v15-sig", "cryptography", "verify", 0, 2e4)])
    ev = scaling.rsa_evidence(native, fits, samples)
    assert not ev["study_sign_per_byte_significant"] and ev["grid_span_bytes"] == 90_000
    assert ev["hash_rise_over_grid_ms"] == pytest.approx(2.5 * 90_000 / 1e6)
    assert (ev["ours_sign_over_verify"] == pytest.approx(35, rel=0.05)
            and ev["ours_sign_over_verify_ci_low"] > 30)
    assert ev["implied_modulus_bits"] == pytest.approx(2048 * ev["study_sign_over_verify_median"]
                                                       / ev["ours_sign_over_verify"])
    text = scaling.describe_rsa_evidence(ev)
    assert "cannot have included hashing the message" in text and "*Model, not measurement:*" in text
    assert "modulus smaller than 2048" not in text
    # hashing as cheap as the study's scatter would not tell; a study ratio near ours is not called different
    weak = scaling.describe_rsa_evidence({**ev, "ours_sign_per_byte_ns": 0.3,
                                          "ours_sign_over_verify_ci_low": 1.0})
    assert "too large to tell" in weak and "Model" not in weak and "not clearly below ours" in weak
    grows = scaling.describe_rsa_evidence({**ev, "study_sign_per_byte_significant": True})
    assert "grows with the message" in grows


def test_recommendation_factors_have_intervals_and_no_unoptimised_argument():
    df = measurements(sign_a=20_000, sign_b=90_000)
    samples = fake_samples([(r.algorithm, r.backend, r.operation, r.message_bytes, r.time_ns_median)
                            for r in df.itertuples()])
    text = scaling.recommend(df, samples=samples, slowdowns=pd.DataFrame(
        [{"algorithm": "ML-DSA-44", "operation": "sign", "slowdown": 100.0, "same_standard": True}]))
    assert "takes" in text and "× [" in text and "unoptimised" not in text
    assert "× [" not in scaling.recommend(df)  # without samples: no interval shown


def test_caveats_and_numbers():
    native = pd.DataFrame([{"algorithm": "X", "backend": "b", "operation": "sign", "message_bytes": 0,
                            "time_ns_median": 1000.0, "flags": "few-samples"},
                           {"algorithm": "Y", "backend": "b", "operation": "sign", "message_bytes": 0,
                            "time_ns_median": 1e7, "flags": ""}])
    run = type("R", (), {"meta": {"harness_overhead_ns": 50.0}})()
    text = scaling.caveats(native, scaling.load_study(), run)
    assert "1 of 2 of our measurements have fewer than 10 samples" in text and "costs 50 ns" in text
    assert "SPHINCS-256, not SPHINCS+" in text and "256 bits" in text
    quiet = scaling.caveats(native.assign(flags=""), scaling.load_study(), None)
    assert "samples" not in quiet and "harness" not in quiet
    fits = scaling.fit_linear_cost(synthetic())
    nums = scaling.numbers(pd.DataFrame(), fits, evidence={"implied_modulus_bits": 80.0, "ours": "x"})
    assert "per_byte_ns_x_b_sign" in nums and "per_byte_ns_x_b_sign_se" in nums
    assert nums["rsa_evidence_implied_modulus_bits"] == 80.0 and all(k == k.lower() for k in nums)


def test_plots_draw(tmp_path):
    df = synthetic()
    fits = scaling.fit_linear_cost(df)
    assert scaling.plot_time_vs_message(df, fits).axes
    assert scaling.plot_per_byte(fits).axes


def test_native_spread_is_a_labelled_hypothesis_with_an_interval():
    df = pd.DataFrame([
        {"algorithm": "ML-DSA-44", "backend": b, "implementation": impl, "operation": "sign",
         "message_bytes": 100, "time_ns_median": t}
        for b, impl, t in (("pure-python", "py", 1e7), ("liboqs", "liboqs 0", 7e4),
                           ("pqcrypto", "crate z", 3.5e7))])
    samples = fake_samples([("ML-DSA-44", r.backend, "sign", 100, r.time_ns_median) for r in df.itertuples()])
    text = scaling.describe_slowdown(scaling.slowdown(df, samples), samples)
    assert ("differ by large factors" in text and "pqcrypto runs crate z" in text
            and "liboqs 70 µs: 49" in text)
    assert "hypothesis these measurements do not test" in text
    close = df.assign(time_ns_median=[1e7, 7e4, 1e5])
    assert "differ by large factors" not in scaling.describe_slowdown(scaling.slowdown(close))


def test_slowdown_and_study_figures_draw():
    df = pd.DataFrame([
        {"algorithm": "ML-DSA-44", "backend": b, "implementation": b, "operation": "sign",
         "message_bytes": 100, "time_ns_median": t} for b, t in (("pure-python", 1e7), ("liboqs", 7e4))])
    assert scaling.plot_slowdown(scaling.slowdown(df)).axes
    ours = pd.DataFrame({"algorithm": "ECDSA-P256", "backend": "cryptography",
                         "operation": ["sign", "verify"], "message_bytes": [10_000, 10_000],
                         "time_ns_median": [2e5, 3e5]})
    assert len(scaling.plot_study_vs_ours(scaling.compare_with_study(ours)).axes) >= 2
