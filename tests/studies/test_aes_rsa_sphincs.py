"""pqlab.studies.aes_rsa_sphincs (notebook 01): systems, ratios with intervals, the study's cold calls beside
ours, sizes against each Bouncy Castle release, caveats and quoted numbers; synthetic runs, every branch."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from pqlab.core import flags
from pqlab.core.references import load_reference
from pqlab.publish import plotting
from pqlab.studies import aes_rsa_sphincs as S

RNG = np.random.default_rng(0)


def spread(center_ms, n, rel=0.03):
    return center_ms * 1e6 * (1 + rel * RNG.standard_normal(n))


def quartiles(v):
    q1, median, q3 = np.percentile(v, [25, 50, 75])
    return {"time_ns_median": median, "time_ns_q1": q1, "time_ns_q3": q3}


def python_run(times: dict, overhead_ns=50.0, few=()):
    """A bench-like run: times = {(algorithm, backend, operation): centre in ms}."""
    m, s = [], []
    for (alg, backend, op), ms in times.items():
        v = spread(ms, 40)
        m.append({"algorithm": alg, "backend": backend, "operation": op, "verified": True,
                  "library_version": "1", **quartiles(v),
                  "flags": flags.make("few-samples") if alg in few else ""})
        s += [{"run_id": "py", "algorithm": alg, "backend": backend, "operation": op, "round": i % 8,
               "time_ns": x}
              for i, x in enumerate(v)]  # in 8 rounds, as bench measures
    return SimpleNamespace(run_id="py", measurements=pd.DataFrame(m), samples=pd.DataFrame(s),
                           sizes=pd.DataFrame(), meta={"harness_overhead_ns": overhead_ns})


def bc_run(release: str, times: dict, sizes: list[dict], cold_factor=3.0, cold=5):
    """A Bouncy Castle run: steady-state times (ms) per (algorithm, operation);
    cold calls cold_factor slower."""
    m, s = [], []
    for (alg, op), ms in times.items():
        for phase, v in (("cold", spread(ms * cold_factor, cold, 0.2)), ("warm", spread(ms, 30))):
            m.append({"algorithm": alg, "backend": "bouncycastle", "operation": op, "verified": True,
                      "library_version": release, **quartiles(v),
                      "flags": flags.make("jvm-cold") if phase == "cold" else ""})
            s += [{"algorithm": alg, "backend": "bouncycastle", "operation": op, "phase": phase, "time_ns": x}
                  for x in v]
    return SimpleNamespace(measurements=pd.DataFrame(m), samples=pd.DataFrame(s), sizes=pd.DataFrame(sizes),
                           meta={"bouncycastle_version": release, "params": {"cold": cold},
                                 "java_version": "17"})


SPHINCS_OPS = {("SPHINCS+-SHAKE-128f-robust", "keygen"): 12, ("SPHINCS+-SHAKE-128f-robust", "sign"): 216,
               ("SPHINCS+-SHAKE-128f-robust", "verify"): 12, ("SPHINCS+-SHAKE-128f-simple", "keygen"): 8,
               ("SPHINCS+-SHAKE-128f-simple", "sign"): 150, ("SPHINCS+-SHAKE-128f-simple", "verify"): 8,
               ("RSA-2048", "keygen"): 600, ("RSA-2048", "encrypt"): 0.05, ("RSA-2048", "decrypt"): 1.4}
BC_SIZES = [{"algorithm": "SPHINCS+-SHAKE-128f-robust", "public_key_encoded_bytes": 58,
             "secret_key_encoded_bytes": 132, "signature_bytes": 17088},
            {"algorithm": "SPHINCS+-SHAKE-128f-simple", "public_key_encoded_bytes": 58,
             "secret_key_encoded_bytes": 132, "signature_bytes": 17088}]


@pytest.fixture(scope="module")
def runs():
    py = python_run({("SPHINCS+-SHAKE-128f-simple", "liboqs", "keygen"): 1,
                     ("SPHINCS+-SHAKE-128f-simple", "liboqs", "sign"): 12,
                     ("SPHINCS+-SHAKE-128f-simple", "liboqs", "verify"): 1,
                     ("RSA-2048-PKCS1v15-enc", "cryptography", "keygen"): 100,
                     ("RSA-2048-PKCS1v15-enc", "cryptography", "encrypt"): 0.03,
                     ("RSA-2048-PKCS1v15-enc", "cryptography", "decrypt"): 0.7,
                     ("AES-256-CBC", "cryptography", "keygen"): 0.0005}, few=("AES-256-CBC",))
    old = bc_run("1.72", SPHINCS_OPS, BC_SIZES)
    new = bc_run("1.86", SPHINCS_OPS, [{**r, "public_key_encoded_bytes": 47} for r in BC_SIZES])
    return py, old, new


@pytest.fixture(scope="module")
def values(runs):
    return S.system_values(*runs[:1], runs[1:])


def test_systems_statistics_and_the_study_against_both_constructions(values):
    kinds = values.groupby("system")["kind"].first()
    assert kinds[S.study_label()] == S.STUDY and kinds["liboqs"] == S.PYTHON
    assert kinds["BC 1.72 cold (mean of first 5)"] == S.COLD and kinds["BC 1.86 steady state"] == S.STEADY
    study = values[values["kind"] == S.STUDY]
    assert set(study.loc[study["study_row"] == "SPHINCS+-SHAKE-128f", "construction"]) == {"simple", "robust"}
    assert set(values.loc[values["kind"] == S.COLD, "statistic"]) == {"mean"}
    cold = values[(values["system"] == "BC 1.72 cold (mean of first 5)")
                  & (values["operation"] == "sign")].iloc[0]
    assert cold.value_ms == pytest.approx(cold["values"].mean() / 1e6) and cold.n == 5
    assert S.study_label() == f"study (BC {S.study_platform()['bouncycastle']}, mean of 5)"
    wide = S.times_by_system(values)
    assert {"study_row", "construction", "operation", "liboqs: median", "liboqs: mean",
            "BC 1.86 steady state: median", "BC 1.72 cold (mean of first 5)",
            f"{S.study_label()}: as printed"} <= set(wide.columns)


def test_ratios_carry_intervals_except_the_studys(values):
    ratios = S.ratio_table(values)
    study = ratios[ratios["kind"] == S.STUDY]
    # 5 pairs, SPHINCS+'s two against both constructions
    assert study["value_ci_low"].isna().all() and len(study) == 7
    ours = ratios[ratios["kind"] == S.PYTHON]  # measured in rounds: an interval, paired by round
    assert (len(ours) and (ours["value_ci_low"] <= ours["value"]).all()
            and (ours["value"] <= ours["value_ci_high"]).all())
    assert (set(ours["statistic"]) == {"median", "mean"}
            and set(ratios.loc[ratios["kind"] == S.COLD, "statistic"]) == {"mean"})
    jvm = ratios[ratios["kind"].isin([S.COLD, S.STEADY])]  # one JVM process, no rounds: no interval
    assert len(jvm) and jvm["value_ci_low"].isna().all() and jvm["value"].notna().all()
    everyone = ratios[ratios["kind"] != S.STUDY]
    robust = everyone[(everyone["construction"] == "robust") & (everyone["ratio"] == "sign / verify")]
    assert set(robust["system"]) == {"BC 1.72 cold (mean of first 5)", "BC 1.72 steady state",
                                     "BC 1.86 cold (mean of first 5)", "BC 1.86 steady state"}
    steady = robust[(robust["system"] == "BC 1.72 steady state") & robust["own"]].iloc[0]
    assert steady.value == pytest.approx(18, rel=0.05) and steady.statistic == "median"


def test_agreement_reads_the_interval():
    assert S._agrees(3.0, 1.5, 5.0, ref=10, factor=2)  # interval reaches the band [5, 20]
    assert not S._agrees(3.0, 2.0, 4.0, ref=10, factor=2)
    assert (S._agrees(6.0, np.nan, np.nan, ref=10, factor=2)
            and not S._agrees(4.0, np.nan, np.nan, ref=10, factor=2))


def test_describe_ratios_never_ranks_systems_by_how_often_they_overlap(values):
    """Referee round 3 (01 c15): counting overlaps rewards width, so no kind of system is said to agree "most
    often"; agreement is counted only for ratios that can be told (resolved, or one process's value)."""
    text = S.describe_ratios(S.ratio_table(values))
    assert ("robust; the study's construction is not stated" in text
            and "resolved ratio" in text and "within a factor of 2" in text)
    assert "most often" not in text and "The systems are not ranked" in text
    ratios = S.ratio_table(values)
    cold_leads = ratios.copy()
    # far off
    cold_leads.loc[cold_leads["kind"] == S.STEADY, ["value", "value_ci_low", "value_ci_high"]] = 1e6
    assert "most often" not in S.describe_ratios(cold_leads)
    assert S.describe_ratios(ratios[ratios["kind"] == S.STUDY]).startswith("No ratio of ours")


def test_study_over_ours_is_like_for_like(values):
    table = S.study_over_ours(values)
    assert set(table["system"]) == {"BC 1.72 cold (mean of first 5)", "BC 1.86 cold (mean of first 5)"}
    row = table[(table["construction"] == "robust") & (table["operation"] == "sign")
                & (table["system"] == "BC 1.72 cold (mean of first 5)")].iloc[0]
    assert row.study_over_ours == pytest.approx(row.study_ms / row.ours_ms, rel=5e-3)  # to the study's digits
    assert np.isnan(row.study_over_ours_ci_low) and np.isnan(row.study_over_ours_ci_high)  # one JVM process
    assert "against BC 1.72 cold" in S.describe_study_over_ours(table)
    assert S.describe_study_over_ours(table.iloc[0:0]).startswith("No Bouncy Castle cold calls")


def test_sizes_are_checked_against_each_release(runs):
    py, old, new = runs
    ours = pd.DataFrame([{"algorithm": "SPHINCS+-SHAKE-128f-simple", "public_key_bytes": 32,
                          "secret_key_bytes": 64, "signature_bytes": 17088, "key_encoding": "raw"},
                         {"algorithm": "RSA-2048-PKCS1v15-enc", "public_key_bytes": 294,
                          "secret_key_bytes": 1217, "key_encoding": "DER"},
                         {"algorithm": "RSA-2048-PKCS1v15-enc", "public_key_bytes": 294,
                          "secret_key_bytes": 1218, "key_encoding": "DER"}])
    table = S.size_table(ours, [old, new])
    pk = table[(table["key"] == "public key") & (table["construction"] == "simple")].iloc[0]
    assert (pk.published, pk.ours, pk["BC 1.72"], pk["BC 1.86"]) == (58, 32, 58, 47)
    rsa_sk = table[(table["study_row"] == "RSA-2048") & (table["key"] == "secret key")].iloc[0]
    assert rsa_sk.ours is None or pd.isna(rsa_sk.ours)
    text = S.describe_sizes(table)
    assert ("SPHINCS+-SHAKE-128f (simple) public key, published 58 B: equal to the byte in BC 1.72; "
            "ours (raw) 32 B, BC 1.86 47 B." in text)
    assert "ours 1,217 B–1,218 B (by key)" in text
    labels = [getattr(c, "label", c) for c in S.size_columns(table)]
    assert {"Published", "Ours", "BC 1.72", "BC 1.86"} <= set(labels) and "ours_encoding" not in labels
    # [B] in the unit row
    assert all(c.kind == "size" for c in S.size_columns(table)[3:] if c.name != "ours_note")
    assert "RSA-2048 public key, published 294 B: equal to the byte in ours (DER)." in text
    assert "reproduced by none of our sources" in S.describe_sizes(table.assign(**{"BC 1.72": None}))


def test_describe_bc_names_releases_or_the_recorded_reason(runs):
    _, old, new = runs
    new.measurements["implementation"] = "Bouncy Castle 1.86 (x)"
    new.meta["not_run"] = "not in Bouncy Castle 1.86: Y"
    text = S.describe_bc({S.CURRENT: new, S.STUDYS: S.not_run(
        "Maven could not provide org.bouncycastle:bcprov-jdk18on:1.72: Could not find artifact")})
    assert "**Bouncy Castle 1.86** on Java 17" in text and "Not run: not in Bouncy Castle 1.86: Y." in text
    assert "**the study's release: not run.** Maven could not provide" in text


def test_run_bouncycastle_asks_for_the_studys_release(monkeypatch):
    from pqlab.runners import jvm

    calls = []

    def fake(algorithms, version=None, **kw):
        calls.append(version)
        raise jvm.BouncyCastleUnavailable(f"reason {version}")
    monkeypatch.setattr(jvm, "bc_run", fake)
    out = S.run_bouncycastle(["RSA-2048"], cold=5)
    assert (calls == [None, S.study_platform()["bouncycastle"]]
            and out[S.STUDYS].meta["not_run"] == f"reason {calls[1]}")
    assert S.measured(out) == []  # nothing ran: no run to set beside the study
    calls.clear()
    assert list(S.run_bouncycastle(["RSA-2048"], study_release=False)) == [S.CURRENT] and calls == [None]
    monkeypatch.setattr(jvm, "default_version", lambda: S.study_platform()["bouncycastle"])
    same = S.run_bouncycastle(["RSA-2048"])[S.STUDYS].meta["not_run"]
    assert "the Java program's release is the study's" in same
    calls.clear()
    off = S.run_bouncycastle(["RSA-2048"], enabled=False)
    assert calls == [] and "switched off" in off[S.CURRENT].meta["not_run"]


def test_caveats_apply_only_where_the_data_say_so(runs, values):
    py, old, new = runs
    text = S.caveats(values, py, [old, new])
    assert text.count("\n- ") + 1 == len(text.split("\n"))
    assert load_reference(S.TOPIC).attrs["source"]["machine"] in text
    assert "1 of " in text and "fewer than 10 samples" in text  # the AES row is flagged few-samples
    assert "A do-nothing call through pqlab's harness costs 50 ns" in text  # AES keygen 500 ns < 100 x 50 ns
    assert "RSA key generation searches for random primes" in text
    quiet = S.caveats(values[values["kind"] != S.COLD],
                      python_run({("X", "b", "sign"): 5.0}, overhead_ns=1.0))
    assert "harness" not in quiet and "random primes" not in quiet and "samples" not in quiet


def test_numbers_have_stable_keys_and_intervals(values):
    ratios = S.ratio_table(values)
    nums = S.numbers(ratios, study_over=S.study_over_ours(values))
    key = "sphincsplus_shake_128f_robust_sign_over_verify_bc_1_72_steady_state"
    assert key in nums and f"{key}_ci_low" in nums and f"{key}_ci_high" in nums and f"{key}_mean" in nums
    assert "sphincsplus_shake_128f_robust_sign_over_verify_study_bc_1_72_mean_of_5_ci_low" not in nums
    assert all(k == S._key(k) for k in nums)


def test_figures_and_results_table(runs, values):
    py, old, new = runs
    # laid out for its width: bars may turn horizontal
    for width in (plotting.FULL_WIDTH, plotting.COLUMN_WIDTH):
        ax = S.plot_ratios(S.ratio_table(values), width=width).axes[0]
        assert (ax.get_xscale() if plotting.categories_on_y(ax) else ax.get_yscale()) == "log"
    assert len(S.role_times(pd.concat([old.measurements, new.measurements]))["label"]
               .str.contains("BC 1.72").unique()) == 2
