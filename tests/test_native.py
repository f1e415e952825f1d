"""The native C runner (native/bench/pqbench) and its Python driver pqlab.native."""
from __future__ import annotations

import pandas as pd
import pytest

from pqlab import flags, native
from pqlab.paths import LIBOQS_PREFIX
from pqlab.results import load_run
from pqlab.schema import MEASUREMENT_COLUMNS

DEFAULT = LIBOQS_PREFIX / "default"
if not (DEFAULT / "lib" / "liboqs.so").exists() or not (DEFAULT / "include" / "oqs" / "oqs.h").exists():
    pytest.skip(f"liboqs (default build) is not installed at {DEFAULT}: run `make setup`",
                allow_module_level=True)

TINY = dict(budget_s=0.05, min_samples=5, max_samples=50, warmup=1)
TINY_RUN = dict(budget_s=0.05, min_samples=5, warmup=1)


@pytest.fixture(scope="module")
def runner():
    return native.build_native_runner("default")


@pytest.fixture(scope="module")
def ml_dsa(runner):
    return native.run_native("ML-DSA-44", **TINY)


@pytest.fixture(scope="module")
def ml_kem(runner):
    return native.run_native("ML-KEM-768", **TINY)


def test_build_is_incremental_and_reports_the_library(runner, ml_dsa):
    assert runner.exists()
    mtime = runner.stat().st_mtime_ns
    assert native.build_native_runner("default") == runner
    assert runner.stat().st_mtime_ns == mtime  # nothing to rebuild
    assert ml_dsa["liboqs_version"] and ml_dsa["liboqs_version"] == ml_dsa["liboqs_version_compiled"]
    assert ml_dsa["liboqs_path"] == str((DEFAULT / "lib" / "liboqs.so").resolve())
    assert ml_dsa["variant"] == "default"
    assert ml_dsa["oqs_dist_build"] is True


def _check_operations(result, expected_ops):
    assert [op["operation"] for op in result["operations"]] == expected_ops
    assert result["verified"] is True
    for op in result["operations"]:
        assert op["verified"] is True, op["error"]
        assert op["error"] == ""
        assert len(op["samples_ns"]) >= TINY["min_samples"]
        assert len(op["samples_ns"]) <= TINY["max_samples"]
        assert all(ns > 0 for ns in op["samples_ns"])
        assert len(op["warmup_ns"]) == TINY["warmup"]
        if result["cycles_source"]:
            assert result["cycles_source"] in ("core-cycles", "perf_event_open:cpu-cycles:user")
            cycles = op["samples_cycles"]
            assert len(cycles) == len(op["samples_ns"])
            pairs = [(c, ns) for c, ns in zip(cycles, op["samples_ns"], strict=True) if c is not None]
            assert pairs, "no sample kept its cycle count"
            assert all(c > 0 for c, _ in pairs)
            ghz = sorted(c / ns for c, ns in pairs)[len(pairs) // 2]
            assert 0.2 < ghz < 10, f"{op['operation']}: median cycles/ns {ghz:.2f} is not a plausible clock"
        else:
            assert result["cycles_error"], "cycles absent without a reason"
            assert op["samples_cycles"] == []


def test_ml_dsa_44(ml_dsa):
    _check_operations(ml_dsa, ["keygen", "sign", "verify"])
    assert ml_dsa["kind"] == "sig"
    assert (ml_dsa["public_key_bytes"], ml_dsa["secret_key_bytes"]) == (1312, 2560)
    assert ml_dsa["signature_bytes"] == ml_dsa["signature_max_bytes"] == 2420
    sign = ml_dsa["operations"][1]
    assert sign["message_bytes"] == 100 and sign["signature_bytes_max"] == 2420
    assert ml_dsa["operations"][0]["message_bytes"] is None


def test_ml_kem_768(ml_kem):
    _check_operations(ml_kem, ["keygen", "encaps", "decaps"])
    assert ml_kem["kind"] == "kem"
    assert ml_kem["public_key_bytes"] == 1184
    assert ml_kem["ciphertext_bytes"] == 1088
    assert ml_kem["shared_secret_bytes"] == 32


def test_measurement_rows(ml_dsa, ml_kem):
    df = native.measurements_from_result(ml_dsa, {"run_id": "r1"})
    assert list(df.columns) == MEASUREMENT_COLUMNS and (df["run_id"] == "r1").all()
    assert list(df["operation"]) == ["keygen", "sign", "verify"]
    assert set(df["backend"]) == {"native"}
    assert set(df["implementation"]) == {f"liboqs {ml_dsa['liboqs_version']} (default build) via C runner"}
    assert (df["loops"] == 1).all() and df["verified"].all()
    assert (df["time_ns_q1"] <= df["time_ns_median"]).all() and (df["time_ns_median"] <= df["time_ns_q3"]).all()
    assert df["message_bytes"].tolist()[1:] == [100, 100] and pd.isna(df["message_bytes"].iloc[0])
    if ml_dsa["cycles_source"]:
        assert (df["cycles_median"] > 0).all()
        assert set(df["cycles_source"]) == {ml_dsa["cycles_source"]}
    else:
        assert flags.has(df["flags"], "no-cycles").all() and df["cycles_median"].isna().all()
    kem = native.measurements_from_result(ml_kem)
    assert list(kem["operation"]) == ["keygen", "encaps", "decaps"]
    samples = native.native_samples(ml_kem)
    assert len(samples) == sum(len(op["samples_ns"]) for op in ml_kem["operations"])


def test_native_run_records_a_run(runner, tmp_path):
    run = native.native_run(["ML-DSA-44"], message_bytes=1000, study="test", folder=tmp_path, **TINY_RUN)
    back = load_run(tmp_path / run.run_id)
    assert back.meta["status"] == "complete" and back.meta["study"] == "test" and back.meta["started_at"]
    m = back.measurements
    assert list(m["operation"]) == ["keygen", "sign", "verify"] and m["verified"].all()
    assert (m["started_at"] == back.meta["started_at"]).all() and (m["backend"] == "native").all()
    assert set(m["kind"]) == {"sig"} and set(m["family"]) == {"lattice"}
    assert list(m["message_bytes"].astype("float")[1:]) == [1000, 1000]
    assert len(back.samples) == m["samples"].sum()


def test_unknown_algorithm_lists_close_matches(runner):
    with pytest.raises(native.UnknownNativeAlgorithm) as info:
        native.run_native("ML-DSA-45", **TINY)
    message = str(info.value)
    assert "ML-DSA-45" in message and "ML-DSA-44" in message
    assert "ML-DSA-44" in info.value.close_matches
    with pytest.raises(native.UnknownNativeAlgorithm, match="ML-KEM-768"):
        native.run_native("ml-kem-768x", **TINY)


def test_wrong_operation_for_kind_is_a_clear_error(runner):
    with pytest.raises(native.NativeRunnerError, match="not one of keygen,encaps,decaps"):
        native.run_native("ML-KEM-768", ["sign"], **TINY)


def test_missing_liboqs_build_names_the_fix(monkeypatch, tmp_path):
    monkeypatch.setattr(native, "LIBOQS_PREFIX", tmp_path)
    with pytest.raises(native.LiboqsBuildMissing, match="make setup"):
        native.build_native_runner("generic")


def test_rows_flag_failures_and_missing_cycles(ml_dsa):
    result = dict(ml_dsa, cycles_source="", cycles_error="perf_event_open(cpu-cycles, user) failed: EACCES; x")
    result["operations"] = [dict(op, samples_cycles=[]) for op in ml_dsa["operations"]]
    result["operations"][1].update(verified=False, error="verify rejected a fresh signature")
    df = native.measurements_from_result(result)
    assert df["cycles_median"].isna().all() and (df["cycles_source"] == "").all()
    assert df["flags"].str.contains("no-cycles:perf_event_open").all()
    assert df.loc[1, "verified"] == False  # noqa: E712 - a numpy bool
    assert "failed:verify rejected a fresh signature" in df.loc[1, "flags"].split(";")
    assert all(";" not in flag.split(":", 1)[1] for flag in df.loc[0, "flags"].split(";") if ":" in flag)
