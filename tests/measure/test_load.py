"""Measuring under a normal load (issue #41): the standard background loads pqlab starts and stops itself,
what a measuring worker does to protect itself, the graded busy verdict, and the calibration that repeats a
benchmark under a load in either profile."""
from __future__ import annotations

import os

import pytest

from pqlab import calibration
from pqlab.core.errors import UnknownName
from pqlab.measure import load, noise


def test_the_spinning_load_keeps_one_core_busy_and_is_gone_afterwards():
    with load.running("spin") as proc:
        _, _, seen = noise.quiet_now(0.5)
        assert proc.poll() is None
    assert proc.poll() is not None  # stopped on the way out
    if seen["others_cores"] is not None:
        assert seen["others_cores"] >= 0.8


def test_no_load_runs_nothing_and_an_unknown_one_is_refused_with_close_matches():
    with load.running("none") as proc:
        assert proc is None
    with pytest.raises(UnknownName, match="spin"):
        with load.running("spinn"):
            pass


def test_a_worker_pins_itself_to_the_least_busy_cpu_and_records_what_it_got():
    cpus = os.sched_getaffinity(0)
    try:
        with load.running("spin"):
            used = noise.protect()
        assert used["cpu"] in cpus and used["nice_asked"] == noise.NICE
        assert used["nice"] == noise.NICE or "priority" in used["refused"]
        assert os.sched_getaffinity(0) == ({used["cpu"]} if len(cpus) > 1 else cpus)
        record = noise.round_record(0, noise.snapshot(), noise.reference_times())
        assert record["cpu"] == used["cpu"] and str(used["cpu"]) in record["others_by_core"]
    finally:
        os.sched_setaffinity(0, cpus)
        if os.getuid() == 0:  # only root could raise it, and only root can lower it back
            os.setpriority(os.PRIO_PROCESS, 0, 0)


def test_the_busy_verdict_says_how_much_load_and_how_much_of_it_shared_the_measuring_cpu():
    record = {"others_cores": 1.02, "others_by_core": {"0": 0.04, "1": 0.98}, "cpu": 0, "steal": 0.0}
    assert noise.busy_reason(record) == ("other processes used 1.02 cores "
                                         "(0.04 of them on the measuring CPU 0)")
    assert noise.busy_reason({"others_cores": 0.01, "steal": 0.0}) == ""


def test_calibration_repeats_one_benchmark_in_the_asked_profile_under_the_asked_load(monkeypatch):
    seen = []

    def fake_bench(algorithms, **kwargs):
        _, _, noise_seen = noise.quiet_now(0.3)
        seen.append((kwargs, noise_seen["others_cores"]))
        return f"run{len(seen)}"

    monkeypatch.setattr("pqlab.benchmark.bench", fake_bench)
    runs = calibration.repeat(["Ed25519"], 2, profile="quick", load="spin")
    assert runs == ["run1", "run2"]
    for kwargs, others in seen:
        assert {k: kwargs[k] for k in calibration.PROFILES["quick"]} == calibration.PROFILES["quick"]
        assert kwargs["params"]["calibration"] == {"profile": "quick", "load": "spin",
                                                   "load_is": load.LOADS["spin"]}
        assert others is None or others >= 0.8
    with pytest.raises(UnknownName, match="quick"):
        calibration.repeat(["Ed25519"], 2, profile="quik")


def test_calibration_calls_intervals_that_are_far_wider_than_the_real_spread_wasteful():
    assert calibration.verdict_of(0.95, 1.0) == "calibrated"
    assert calibration.verdict_of(1.0, 0.24) == "calibrated but wider than the real spread"
    assert calibration.verdict_of(0.7, 3.0) == "NOT calibrated (too narrow)"


def test_a_busy_rows_flag_says_how_much_other_work_ran_and_how_much_of_it_on_the_measuring_cpu():
    records = [{"others_cores": 1.0, "others_by_core": {"0": 0.02, "1": 0.98}, "cpu": 0},
               {"others_cores": 1.2, "others_by_core": {"0": 0.06, "1": 1.0}, "cpu": 0}]
    assert noise.describe_busy(records) == ", other work 1.10 cores, 0.04 on the measuring CPU"
    assert noise.describe_busy([{"others_cores": 0.5}]) == ", other work 0.50 cores"
    assert noise.describe_busy([{}]) == ""


def test_the_screen_is_calibrated_by_its_false_positive_rate_under_the_asked_load():
    text = calibration.screen_false_positives(2, 100, load="spin")
    assert text.startswith("2 screens of ML-KEM-768 decapsulation (liboqs, `valid` labelled twice, "
                           "100 blocks each)")
    assert "one process spinning one core" in text and " gave no verdict" in text
    if "no false-positive rate can be given" not in text:  # every screen without a free core: none to count
        assert ("with a verdict found a difference" in text and "95 % interval" in text
                and "against alpha 0.01" in text)
