"""The Java program (native/impls/java) as the first study's Bouncy Castle runner, and its Python driver
pqlab/runners/jvm.py."""
from __future__ import annotations

import json
import subprocess

import pandas as pd
import pytest

from pqlab.core import flags
from pqlab.core.errors import BadInput
from pqlab.core.schema import MEASUREMENT_COLUMNS, SIZE_COLUMNS
from pqlab.runners import jvm

OK, WHY = jvm.jdk_available()
pytestmark = [pytest.mark.slow, pytest.mark.skipif(not OK, reason=WHY)]

ALGORITHMS = ["AES-256-CBC", "RSA-2048", "SPHINCS+-SHAKE-128f-simple", "SPHINCS+-SHAKE-128f-robust",
              "SLH-DSA-SHAKE-128f"]
TINY = dict(cold=2, warm_budget_s=0.05, warmup_s=0.1, min_samples=3)


@pytest.fixture(scope="module")
def jar():
    return jvm.build_bc_runner()


@pytest.fixture(scope="module")
def results(jar):
    return {alg: jvm.run_bc(alg, **TINY) for alg in ALGORITHMS}


def test_build_is_cached(jar):
    assert jar == jvm.JAR and jar.is_file()
    mtime = jar.stat().st_mtime
    assert jvm.build_bc_runner() == jar and jar.stat().st_mtime == mtime  # up to date: Maven not rerun


def test_list_names_the_algorithms(jar):
    listed = jvm.bc_algorithms()
    assert set(ALGORITHMS) <= set(listed) and "ML-KEM-768" in listed  # notebook 08's, from the same jar


@pytest.mark.parametrize("alg", ALGORITHMS)
def test_runs_verify_and_separate_cold_from_warm(results, alg):
    r = results[alg]
    assert r["algorithm"] == alg and r["bouncycastle_version"] == jvm.default_version() and r["java_version"]
    expected = ["keygen", "sign", "verify"] if r["kind"] == "sig" else ["keygen", "encrypt", "decrypt"]
    assert [op["operation"] for op in r["operations"]] == expected
    for op in r["operations"]:
        assert op["verified"] is True and op["error"] is None, op
        assert op["message_bytes"] == 100
        assert len(op["cold_ns"]) == 2 and len(op["warm_ns"]) >= 3
        assert all(t > 0 for t in op["cold_ns"] + op["warm_ns"])
        assert op["cold_mean_first5_ns"] == pytest.approx(sum(op["cold_ns"]) / 2)


def test_api_names_the_implementation(results):
    assert results["SPHINCS+-SHAKE-128f-simple"]["api"] == "org.bouncycastle.pqc.legacy.sphincsplus (round 3)"
    assert "shake_128f_robust" in results["SPHINCS+-SHAKE-128f-robust"]["classes"]
    assert results["SLH-DSA-SHAKE-128f"]["api"] == "FIPS 205 SLH-DSA"
    assert "AES/CBC/PKCS5Padding" in results["AES-256-CBC"]["api"]
    assert "RSA/ECB/PKCS1Padding" in results["RSA-2048"]["api"]


@pytest.mark.parametrize("alg", ["SPHINCS+-SHAKE-128f-simple", "SPHINCS+-SHAKE-128f-robust",
                                 "SLH-DSA-SHAKE-128f"])
def test_hash_based_sizes(results, alg):
    s = results[alg]["sizes"]
    assert s["signature_bytes"] == 17088
    assert s["public_key_raw_bytes"] == 32 and s["secret_key_raw_bytes"] == 64
    assert s["public_key_encoded_bytes"] > 32 and s["secret_key_encoded_bytes"] > 64
    if alg == "SLH-DSA-SHAKE-128f":  # RFC 9909: 13-byte AlgorithmIdentifier, no parameters
        assert (s["public_key_encoded_bytes"], s["secret_key_encoded_bytes"]) == (50, 84)


def test_classical_sizes(results):
    aes, rsa = results["AES-256-CBC"]["sizes"], results["RSA-2048"]["sizes"]
    assert aes["symmetric_key_bytes"] == 32 and aes["ciphertext_bytes"] == 112  # 100 bytes padded to 7 blocks
    assert (rsa["modulus_bits"] == 2048 and rsa["public_key_raw_bytes"] == 256
            and rsa["ciphertext_bytes"] == 256)
    assert rsa["public_key_encoded_bytes"] == 294  # the study's "~294"
    # the study's "~1218" (DER integers vary by a byte)
    assert 1210 <= rsa["secret_key_encoded_bytes"] <= 1220


def test_measurement_rows(results):
    r = results["SPHINCS+-SHAKE-128f-simple"]
    df = jvm.bc_measurements(r, {"run_id": "t", "study": ""})
    assert list(df.columns) == MEASUREMENT_COLUMNS and (df["run_id"] == "t").all()
    assert len(df) == 6 and set(df["backend"]) == {"bouncycastle"} and (df["study"] == "").all()
    assert df["implementation"].iloc[0].startswith(f"Bouncy Castle {jvm.default_version()} "
                                                   "(org.bouncycastle.pqc.legacy.sphincsplus")
    cold = df[flags.has(df["flags"], "jvm-cold")]
    warm = df[~flags.has(df["flags"], "jvm-cold")]
    assert list(cold["operation"]) == list(warm["operation"]) == ["keygen", "sign", "verify"]
    assert (cold["samples"] == 2).all() and (warm["samples"] >= 3).all()
    assert flags.has(df["flags"], "no-cycles").all() and df["cycles_median"].isna().all()
    assert df["verified"].all()
    sign = warm.set_index("operation").loc["sign"]
    assert sign["time_ns_q1"] <= sign["time_ns_median"] <= sign["time_ns_q3"]
    # fewer values give no 95 % interval of the median (pqlab.measure.stats.median_ci)
    if sign["samples"] >= 6:
        assert sign["time_ns_ci_low"] <= sign["time_ns_median"] <= sign["time_ns_ci_high"]
    else:
        assert pd.isna(sign["time_ns_ci_low"]) and pd.isna(sign["time_ns_rel_ci"])


def test_size_rows(results):
    df = jvm.bc_sizes(results["SLH-DSA-SHAKE-128f"])
    assert list(df.columns) == [*SIZE_COLUMNS, "public_key_encoded_bytes", "secret_key_encoded_bytes"]
    row = df.iloc[0]
    assert (row["public_key_bytes"], row["secret_key_bytes"], row["signature_bytes"]) == (32, 64, 17088)
    assert (row["public_key_encoded_bytes"], row["secret_key_encoded_bytes"]) == (50, 84)
    assert jvm.bc_sizes(results["AES-256-CBC"]).iloc[0]["symmetric_key_bytes"] == 32


def test_operation_subset_and_aliases(jar):
    r = jvm.run_bc("RSA-2048", operations=["encrypt"], **TINY)
    assert [op["operation"] for op in r["operations"]] == ["encrypt"]
    r = jvm.run_bc("SLH-DSA-SHAKE-128f", operations=["decrypt"], **TINY)  # the study's "Decrypt/Verify"
    assert [op["operation"] for op in r["operations"]] == ["verify"] and r["operations"][0]["verified"]


def test_unknown_algorithm_lists_supported_names(jar):
    with pytest.raises(ValueError) as e:
        jvm.run_bc("NOPE-1", **TINY)
    msg = str(e.value)
    assert "unknown algorithm 'NOPE-1'" in msg and all(name in msg for name in ALGORITHMS) and "\n" not in msg
    with pytest.raises(ValueError, match="did you mean AES-256-CBC"):
        jvm.run_bc("aes-256-cbc", **TINY)
    proc = subprocess.run([*jvm.bc_program().command(), "time", "--alg", "nope"], capture_output=True,
                          text=True)
    assert proc.returncode == 2 and json.loads(proc.stdout)["error"] and len(proc.stdout.splitlines()) == 1


def test_unknown_operation(jar):
    with pytest.raises(ValueError, match="unknown operation 'encaps'.*use keygen,encrypt,decrypt"):
        jvm.run_bc("AES-256-CBC", operations=["encaps"], **TINY)


def test_failed_verification_is_flagged(results):
    r = results["AES-256-CBC"]
    bad = {**r, "operations": [{**r["operations"][2], "verified": False, "error": "round trip failed; oops"}]}
    row = jvm.bc_measurements(bad).iloc[0]
    assert not row["verified"] and flags.detail(row["flags"], "failed") == "round trip failed, oops"


def test_sampling_stops_at_the_precision_target_or_the_row_carries_a_flag(jar):
    """As pqlab.measure.timing.measure: the runner samples until the median is known to the target (its
    precision computed as pqlab.measure.stats does) or the budget ends, and says which came first.  The rows
    show no interval: one JVM process has no rounds (pqlab.runners.rounds), so the within-process precision
    only decides when sampling stops."""
    r = jvm.run_bc("AES-256-CBC", cold=2, warm_budget_s=2.0, warmup_s=0.1, min_samples=5, target_rel_ci=0.05)
    assert r["target_rel_ci"] == 0.05
    rows = jvm.bc_measurements(r)
    warm = rows[~flags.has(rows["flags"], "jvm-cold")].reset_index(drop=True)
    assert [op["stopped_by"] for op in r["operations"]].count("precision") >= 2  # AES takes microseconds
    for op, row in zip(r["operations"], warm.to_dict("records")):
        assert row["target_rel_ci"] == 0.05 and row["samples"] == len(op["warm_ns"]) >= 5
        assert pd.isna(row["time_ns_rel_ci"]) and flags.has(row["flags"], "no-rounds") and row["rounds"] == 1
        if op["stopped_by"] == "precision":
            assert not flags.has(row["flags"], "precision-not-reached")
    first = r["operations"][0]
    spread = {**r, "operations": [{**first, "warm_ns": [100, 200, 400, 800, 1600, 3200],
                                   "stopped_by": "budget"}]}
    row = jvm.bc_measurements(spread).iloc[0]
    assert flags.detail(row["flags"], "precision-not-reached") == "budget" and row["target_rel_ci"] == 0.05
    untargeted = jvm.bc_measurements({**spread, "target_rel_ci": None}).iloc[0]
    assert (not flags.has(untargeted["flags"], "precision-not-reached")
            and pd.isna(untargeted["target_rel_ci"]))


def test_no_jdk_reason(monkeypatch):
    monkeypatch.setattr(jvm.shutil, "which", lambda name: None)
    assert jvm.jdk_available.__wrapped__() == (False, jvm.NO_JDK)


def test_bc_run_raises_why_nothing_ran_in_one_line(monkeypatch):
    """Where no JDK is installed the runner raises, as every runner does; notebook 01's study records the
    reason (tests/studies/test_aes_rsa_sphincs.py)."""
    from pqlab.runners import jvm

    monkeypatch.setattr(jvm, "jdk_available",
                        lambda: (False, "no JDK installed: install openjdk-17-jdk-headless"))
    with pytest.raises(jvm.BouncyCastleUnavailable, match=r"^no JDK installed: install openjdk-17\S+$"):
        jvm.bc_run(["AES-256-CBC"])
    with pytest.raises(BadInput, match="cold"):  # checked before anything runs, a JDK or not
        jvm.bc_run(["AES-256-CBC"], cold=-1)


def test_bc_run_records_every_row_with_the_run_start(jar, tmp_path, monkeypatch):
    """The JVM runner records through the run recorder: started_at and machine_id on every row."""
    from pqlab.core import paths
    from pqlab.store.results import load_run

    monkeypatch.setattr(paths, "RESULTS", tmp_path)
    run = jvm.bc_run(["AES-256-CBC"], cold=2, warm_budget_s=0.05, study="t01")
    assert run.meta["not_run"] == "" and not run.measurements.empty
    back = load_run(tmp_path / run.run_id)
    m = back.measurements
    assert back.meta["status"] == "complete" and back.meta["started_at"]
    assert ((m["started_at"] == back.meta["started_at"]).all()
            and (m["machine_id"] == back.meta["machine_id"]).all())
    assert (m["study"] == "t01").all() and set(m["kind"]) == {"cipher"}


def test_the_first_studys_release_runs_with_its_own_api_and_encodings():
    """Bouncy Castle 1.72 (the first study's): round-3 SPHINCS+ from org.bouncycastle.pqc.crypto.sphincsplus,
    where the unsuffixed shake_128f is the robust construction; its encoded keys are the study's 58 and 132
    bytes."""
    try:
        jvm.build_bc_runner(version="1.72")
    except jvm.BouncyCastleUnavailable as e:
        # the registry decides; the notebook says so from the same message
        pytest.skip(str(e))
    assert "SLH-DSA-SHAKE-128f" not in jvm.bc_algorithms("1.72")
    r = jvm.run_bc("SPHINCS+-SHAKE-128f-robust", version="1.72", **TINY)
    assert (r["bouncycastle_version"] == "1.72"
            and r["api"] == "org.bouncycastle.pqc.crypto.sphincsplus (round 3)")
    assert "shake_128f (robust in this API)" in r["classes"]
    assert all(op["verified"] for op in r["operations"])
    s = r["sizes"]
    assert ((s["public_key_encoded_bytes"], s["secret_key_encoded_bytes"], s["signature_bytes"])
            == (58, 132, 17088))
