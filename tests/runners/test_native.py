"""The native C runner (native/bench/pqbench) and its Python driver pqlab.runners.native."""
from __future__ import annotations

import hashlib
import json
import subprocess

import pandas as pd
import pytest

from pqlab.core import flags, paths
from pqlab.core.paths import LIBOQS_PREFIX
from pqlab.core.schema import MEASUREMENT_COLUMNS
from pqlab.measure import cycles
from pqlab.runners import native
from pqlab.runners.program import build_record, ensure_built, program
from pqlab.store.results import load_run

DEFAULT = LIBOQS_PREFIX / "liboqs-0.13.0"
if not (DEFAULT / "lib" / "liboqs.so").exists() or not (DEFAULT / "include" / "oqs" / "oqs.h").exists():
    pytest.skip(f"liboqs (default build) is not installed at {DEFAULT}: run `make setup`",
                allow_module_level=True)

TINY = dict(budget_s=0.05, min_samples=5, max_samples=50, warmup=1)
TINY_RUN = dict(budget_s=0.05, min_samples=5, warmup=1)
pytestmark = pytest.mark.counter


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
    assert runner.exists() and runner == native.runner_path("default")
    mtime = runner.stat().st_mtime_ns
    assert native.build_native_runner("default") == runner
    assert runner.stat().st_mtime_ns == mtime  # nothing to rebuild
    record = build_record(native.runner_program("default"))  # the Program record's, beside the binary
    assert record["program"] == "pqbench"
    assert record["sha256"] == hashlib.sha256(runner.read_bytes()).hexdigest()
    assert ml_dsa["liboqs_version"] and ml_dsa["liboqs_version"] == ml_dsa["liboqs_version_compiled"]
    assert ml_dsa["liboqs_path"] == str((DEFAULT / "lib" / "liboqs.so").resolve())
    assert ml_dsa["build"] == "liboqs-0.13.0"
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
        check_cycles(result, op)


def check_cycles(result, op):
    """The runner counted with the counter of this process, and its counts fit that counter."""
    cc = cycles.counter()
    assert result["cycles_source"] == cc.label
    if cc.label == cycles.NONE:
        assert result["cycles_error"], "cycles absent without a reason"
        assert op["samples_cycles"] == []
        return
    counts = op["samples_cycles"]
    assert len(counts) == len(op["samples_ns"])
    pairs = [(c, ns) for c, ns in zip(counts, op["samples_ns"], strict=True) if c is not None]
    assert pairs, "no sample kept its cycle count"
    assert all(c > 0 for c, _ in pairs)
    ghz = sorted(c / ns for c, ns in pairs)[len(pairs) // 2]
    if cc.label == cycles.TSC:  # the same counter as pqlab's, at its stated rate
        assert ghz == pytest.approx(cc.hz / 1e9, rel=0.05), op["operation"]
    else:
        assert 0.2 < ghz < 10, f"{op['operation']}: median cycles/ns {ghz:.2f} is not a plausible clock"


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
    assert ((df["time_ns_q1"] <= df["time_ns_median"]).all()
            and (df["time_ns_median"] <= df["time_ns_q3"]).all())
    assert df["message_bytes"].tolist()[1:] == [100, 100] and pd.isna(df["message_bytes"].iloc[0])
    assert set(df["cycles_source"]) == {ml_dsa["cycles_source"]}
    if ml_dsa["cycles_source"] == cycles.NONE:
        assert df["cycles_median"].isna().all() and flags.has(df["flags"], "no-cycles").all()
    else:
        assert (df["cycles_median"] > 0).all() and not flags.has(df["flags"], "no-cycles").any()
    # one process of the C runner: no rounds, so no interval (never one over consecutive samples)
    assert (df["time_ns_ci_low"].isna().all() and (df["rounds"] == 1).all()
            and flags.has(df["flags"], "no-rounds").all())
    kem = native.measurements_from_result(ml_kem)
    assert list(kem["operation"]) == ["keygen", "encaps", "decaps"]
    samples = native.native_samples(ml_kem)
    assert len(samples) == sum(len(op["samples_ns"]) for op in ml_kem["operations"])


def test_native_run_records_a_run(runner, tmp_path):
    from pqlab.checks.conformance import liboqs_records

    records = liboqs_records(["ML-DSA-44"], "default")
    run = native.native_run(["ML-DSA-44"], message_bytes=1000, study="test", folder=tmp_path, pool=1,
                            conformance=records, **TINY_RUN)
    back = load_run(tmp_path / run.run_id)
    # the caller's records, carried
    assert back.meta["conformance"] == {"ML-DSA-44@native": records["ML-DSA-44"]}
    assert back.meta["params"]["pool"] == 1  # verify one signature again and again, as pqlab's verify does
    assert back.meta["status"] == "complete" and back.meta["study"] == "test" and back.meta["started_at"]
    m = back.measurements
    assert list(m["operation"]) == ["keygen", "sign", "verify"] and m["verified"].all()
    assert (m["started_at"] == back.meta["started_at"]).all() and (m["backend"] == "native").all()
    assert set(m["kind"]) == {"sig"} and set(m["family"]) == {"lattice"}
    # the runner links the default build's liboqs: its rows carry that library's record
    # (pqlab.checks.conformance)
    record = back.meta["conformance"]["ML-DSA-44@native"]
    assert record["status"] == "non-conforming" and record["liboqs"]["build"] == "liboqs-0.13.0"
    assert list(m["message_bytes"].astype("float")[1:]) == [1000, 1000]
    assert len(back.samples) == m["samples"].sum()
    # in rounds, each a fresh runner process: the estimate and its interval are over rounds, as bench's
    from pqlab.measure.stats import round_interval

    assert ((m["rounds"] == 6).all() and set(back.samples["round"]) == set(range(6))
            and len(back.meta["round_noise"]) == 6)
    assert not flags.has(m["flags"], "no-rounds").any() and (m["time_ns_ci_low"] < m["time_ns_ci_high"]).all()
    sign = back.sample_values("ML-DSA-44", "sign", backend="native")
    row = m[m["operation"] == "sign"].iloc[0]
    assert round_interval(sign)[:3] == pytest.approx((row["time_ns_median"], row["time_ns_ci_low"],
                                                      row["time_ns_ci_high"]))


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
    monkeypatch.setattr(paths, "LIBOQS_PREFIX", tmp_path)
    with pytest.raises(native.LiboqsBuildMissing, match="make setup"):
        native.build_native_runner("generic")


def test_rows_flag_failures_and_missing_cycles(ml_dsa):
    result = dict(ml_dsa, cycles_source="none", cycles_error="no core cycles: perf_event_open: EACCES; x")
    result["operations"] = [dict(op, samples_cycles=[]) for op in ml_dsa["operations"]]
    result["operations"][1].update(verified=False, error="verify rejected a fresh signature")
    df = native.measurements_from_result(result)
    assert df["cycles_median"].isna().all() and (df["cycles_source"] == "none").all()
    assert (flags.has(df["flags"], "no-cycles")).all()
    assert (df["flags"].map(lambda c: flags.detail(c, "no-cycles"))
            .str.startswith("no core cycles: perf_event_open").all())
    assert df.loc[1, "verified"] == False  # noqa: E712 - a numpy bool
    assert "failed:verify rejected a fresh signature" in df.loc[1, "flags"].split(";")
    assert all(";" not in flag.split(":", 1)[1] for flag in df.loc[0, "flags"].split(";") if ":" in flag)


def test_samples_without_a_count_are_flagged(ml_dsa):
    op = dict(ml_dsa["operations"][0], samples_ns=[100, 110, 120], samples_cycles=[300, None, 360])
    df = native.measurements_from_result(dict(ml_dsa, cycles_source="core-cycles", operations=[op]))
    assert df.loc[0, "cycles_median"] == 330
    assert flags.detail(df.loc[0, "flags"], "cycles-dropped") == (
        "1 of 3 samples: no count (the perf counter was multiplexed away or a read failed)")


@pytest.mark.parametrize("label", [cycles.TSC, cycles.NONE])
def test_the_runner_counts_with_the_counter_it_is_given(runner, label):
    result = native.run_native("ML-KEM-768", ["encaps"], counter=label, **TINY)
    assert result["cycles_source"] == label and result["counter_requested"] == native.COUNTER_MODE[label]
    assert (result["operations"][0]["samples_cycles"] == []) == (label == cycles.NONE)


def test_a_forced_counter_that_does_not_work_is_one_line(runner):
    proc = subprocess.run([str(runner), "time", "--impl", "liboqs", "--alg", "ML-KEM-768",
                           "--counter", "perf", "--budget", "0"], capture_output=True, text=True)
    if proc.returncode == 0:
        pytest.skip("this machine has a working PMU: the runner counted core cycles")
    assert proc.returncode == 2
    assert proc.stderr.startswith("pqbench: --counter perf: core cycles are unavailable here: "
                                  "perf_event_open: ")
    assert proc.stderr.count("\n") == 1
    assert json.loads(proc.stdout) == {"error": proc.stderr.removeprefix("pqbench: ").strip()}


def test_the_runner_follows_pqlab_counter(runner, monkeypatch):
    monkeypatch.setenv(cycles.ENV, "none")
    assert native.run_native("ML-KEM-768", ["keygen"], **TINY)["cycles_source"] == cycles.NONE


def test_a_runner_of_another_protocol_is_refused(runner):
    with pytest.raises(native.NativeRunnerError,
                       match=r"speaks protocol 1 as 'pqbench', pqlab speaks protocol 2 with 'pqbench': "
                             r"remove it and run again \(pqlab builds the runner on first use\)"):
        native.check_version({"protocol": 1, "program": "pqbench"}, runner)
    native.check_version(native.run_native("ML-KEM-768", ["keygen"], **TINY), runner)


def test_list_speaks_protocol_2(runner):
    listing = json.loads(subprocess.run([str(runner), "list"], capture_output=True, text=True,
                                        check=True).stdout)
    assert (listing["protocol"], listing["program"], listing["language"]) == (2, "pqbench", "C")
    assert listing["commands"] == list(program("pqbench").commands) == ["time"] and listing["toolchain"]
    assert listing["implementations"] == [{"implementation": "liboqs", "version": listing["liboqs_version"],
                                           "package": "liboqs", "provenance": "", "options": "liboqs-0.13.0"}]
    names = native.native_algorithms("default")
    assert {"ML-DSA-44", "ML-KEM-768"} <= {a["algorithm"] for a in listing["algorithms"]}
    assert sorted(names["sig"] + names["kem"]) == sorted(a["algorithm"] for a in listing["algorithms"])
    assert all(a["implementation"] == "liboqs" and a["seeded"] == [] for a in listing["algorithms"])


@pytest.mark.parametrize("args, problem", [
    (["times"], "unknown command 'times'"),
    (["time", "--impl", "go", "--alg", "ML-KEM-768"], "unknown implementation 'go'"),
    (["time", "--alg", "ML-KEM-768", "--budget", "soon"], "bad value for --budget: 'soon'"),
    (["time", "--alg", "ML-KEM-768", "--bogus", "1"], "unknown option '--bogus'"),
    (["time", "--alg", "Kyber-9000"], "unknown algorithm 'Kyber-9000'"),
])
def test_a_bad_request_is_exit_2_with_one_error_line(runner, args, problem):
    proc = subprocess.run([str(runner), *args], capture_output=True, text=True)
    assert proc.returncode == 2
    error = json.loads(proc.stdout)["error"]
    assert list(json.loads(proc.stdout)) == ["error"] and problem in error and "\n" not in error


def test_the_time_document_speaks_protocol_2(ml_kem):
    assert (ml_kem["protocol"], ml_kem["program"], ml_kem["implementation"]) == (2, "pqbench", "liboqs")
    assert ml_kem["version"] == ml_kem["liboqs_version"]
    assert ml_kem["sizes"] == {"public_key": 1184, "secret_key": 2400, "secret_key_format": "liboqs",
                               "ciphertext": 1088, "shared_secret": 32}
    assert all(op["loops"] == 1 and op["cold_ns"] == [] for op in ml_kem["operations"])


def test_a_damaged_runner_is_built_again(runner):
    """make goes by dates: a truncated binary newer than its sources would stay; the build record's sha256
    does not."""
    good = runner.read_bytes()
    runner.write_bytes(good[: len(good) // 2])
    assert native.build_native_runner("default") == runner
    record = build_record(native.runner_program("default"))
    assert record["why"] == "damaged" and record["sha256"] == hashlib.sha256(runner.read_bytes()).hexdigest()
    assert ensure_built(native.runner_program("default")) == runner  # now a hit
    assert build_record(native.runner_program("default"))["built_at"] == record["built_at"]
