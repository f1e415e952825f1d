"""timing.measure (samples, budget, loop calibration, checks, warm-up) and cycles (hardware
counter or the labelled estimate)."""
from __future__ import annotations

import time

import numpy as np
import pytest

from pqlab import cycles, timing
from pqlab.algorithms import VerificationError
from pqlab.timing import measure


def busy(n: int = 20_000) -> int:
    """CPU-bound work in user space (what the cycle counter counts)."""
    return sum(range(n))


def test_min_samples_honoured_even_when_the_budget_is_spent():
    s = measure(lambda: time.sleep(0.002), budget_s=0.0001, min_samples=7, warmup_s=0)
    assert s.n >= 7 and s.loops == 1
    assert s.time_ns.min() >= 2e6  # every sample lasted at least the sleep


def test_max_samples_honoured():
    s = measure(lambda: None, budget_s=5, max_samples=25, warmup_s=0.001)
    assert s.n == 25


def test_budget_bounds_wall_time():
    t0 = time.perf_counter()
    s = measure(lambda: None, budget_s=0.2, warmup_s=0.01, max_samples=10**8)  # the budget binds, not the cap
    elapsed = time.perf_counter() - t0
    assert 0.2 <= elapsed < 0.2 + 0.01 + 0.25, elapsed
    assert s.n > 100  # a trivially fast op gets many samples
    t0 = time.perf_counter()
    measure(lambda: time.sleep(0.002), budget_s=0.1, min_samples=1, warmup_s=0)
    assert time.perf_counter() - t0 < 0.1 + 0.05  # a slow op stops at the budget (within one call)


def test_loops_calibrated_above_one_for_a_fast_op_and_one_for_a_slow_op():
    fast = measure(lambda: None, budget_s=0.05, warmup_s=0.01)
    assert fast.loops > 1
    # a sample lasts far longer than the timer's resolution (calibration aims at 20 us from the median
    # timed warm-up call, which includes the timer's own cost, so it may undershoot a few times)
    assert fast.loops * fast.time_ns.min() >= 0.1 * 20_000
    slow = measure(lambda: time.sleep(0.002), budget_s=0.02, warmup_s=0)
    assert slow.loops == 1


def test_explicit_loops_are_used():
    s = measure(lambda: None, budget_s=0.01, loops=3, warmup_s=0)
    assert s.loops == 3


def test_values_are_per_call():
    """A sample is the mean of `loops` calls: a 1 ms sleep is reported as >= 1 ms, whatever the loops."""
    s = measure(lambda: time.sleep(0.001), budget_s=0.03, loops=4, warmup_s=0, min_samples=2)
    assert 1e6 <= np.median(s.time_ns) < 4e6


def test_check_is_called_on_outputs_of_run():
    produced, checked = [], []

    def run():
        produced.append(len(produced))
        return produced[-1]

    s = measure(run, checked.append, budget_s=0.02, warmup_s=0.005)
    assert s.checked == len(checked) == s.n + 1  # every sample plus the warm-up
    assert set(checked) <= set(produced)
    assert checked == sorted(checked) and len(set(checked)) == len(checked)  # fresh outputs, in order
    assert checked[-1] == produced[-1]  # the last output of the last sample


def test_a_failing_check_stops_the_measurement():
    calls = []

    def run():
        calls.append(1)
        return len(calls)

    def check(out):
        if out > 50:
            raise VerificationError("wrong output")

    with pytest.raises(VerificationError):
        measure(run, check, budget_s=1, loops=1, warmup_s=0)
    assert len(calls) == 51  # stopped at the first wrong output, not at the end of the budget


def test_warm_up_is_not_in_the_samples():
    calls = []

    def run():
        calls.append(1)
        if len(calls) == 1:
            time.sleep(0.03)  # a slow first call (imports, caches, lazy initialisation)

    s = measure(run, budget_s=0.02, warmup_s=0, loops=1)
    assert s.warmup_calls == 1
    assert s.time_ns.max() < 0.025e9  # the 30 ms call is not a sample (margin for preemption)
    assert len(calls) == s.n + s.warmup_calls


def test_warm_up_lasts_warmup_s():
    s = measure(lambda: None, budget_s=0.01, warmup_s=0.02)
    assert s.warmup_calls > 10


# ----- cycles -----
def test_counter_is_hardware_or_a_labelled_estimate():
    cc = cycles.open_counter()
    if cc.hardware:
        assert isinstance(cc, cycles.CycleCounter) and cc.source == cycles.HARDWARE_SOURCE
        a = cc.read()
        busy()
        assert cc.read() > a
    else:
        assert isinstance(cc, cycles.FrequencyEstimate) and cc.reason
        assert cc.source.startswith("estimate:time-x-") or cc.source == ""


def test_measure_records_the_counter_and_plausible_cycles():
    s = measure(busy, budget_s=0.1, warmup_s=0.01)
    cc = timing.counter()
    assert s.cycles_source == cc.source
    if not cc.hardware:
        pytest.skip(f"no hardware cycle counter here: {cc.reason}")
    assert s.cycles is not None and s.cycles.shape == s.time_ns.shape
    ghz = np.median(s.cycles) / np.median(s.time_ns)
    assert 0.2 < ghz < 10, f"cycles/ns = {ghz:.3f}: counter and clock disagree"
    assert not any(f.startswith(("no-cycles", "cycles-estimated")) for f in s.flags)


def test_frequency_estimate_is_labelled(monkeypatch):
    monkeypatch.setattr(cycles, "nominal_mhz", lambda: 2500.0)
    est = cycles.FrequencyEstimate("no PMU")
    assert not est.hardware and est.read() == 0
    assert est.source == "estimate:time-x-2500MHz"
    assert est.estimate(1000.0) == pytest.approx(2500.0)  # 1 us at 2.5 GHz
    monkeypatch.setattr(cycles, "nominal_mhz", lambda: None)
    none = cycles.FrequencyEstimate("no PMU")
    assert none.source == "" and none.estimate(1000.0) is None


def test_measure_with_the_fallback_flags_estimated_or_missing_cycles(monkeypatch):
    monkeypatch.setattr(cycles, "nominal_mhz", lambda: 2000.0)
    monkeypatch.setattr(timing, "_counter", cycles.FrequencyEstimate("perf_event_open refused"))
    s = measure(busy, budget_s=0.02, warmup_s=0)
    assert s.cycles_source == "estimate:time-x-2000MHz"
    assert "cycles-estimated:perf_event_open refused" in s.flags
    np.testing.assert_allclose(s.cycles, s.time_ns * 2.0)  # cycles follow from the recorded times
    monkeypatch.setattr(cycles, "nominal_mhz", lambda: None)
    monkeypatch.setattr(timing, "_counter", cycles.FrequencyEstimate("no counter"))
    s = measure(busy, budget_s=0.02, warmup_s=0)
    assert s.cycles is None and "no-cycles:no counter" in s.flags


def test_open_counter_falls_back_when_the_counter_cannot_open(monkeypatch):
    def refuse(self):
        raise OSError(13, "perf_event_open: Permission denied")

    monkeypatch.setattr(cycles.CycleCounter, "__init__", refuse)
    monkeypatch.setattr(cycles.CycleCounter, "__del__", lambda self: None)
    cc = cycles.open_counter()
    assert isinstance(cc, cycles.FrequencyEstimate) and "Permission denied" in cc.reason


def test_nominal_mhz_reads_proc_cpuinfo():
    mhz = cycles.nominal_mhz()
    try:
        text = open("/proc/cpuinfo").read().lower()
    except OSError:
        text = ""
    if "cpu mhz" in text:
        assert mhz is not None and 100 < mhz < 10_000
    else:
        assert mhz is None


def test_loop_calibration_is_robust_to_one_slow_warm_up_call():
    calls = []

    def run():
        calls.append(1)
        if len(calls) == 10_000:  # the last warm-up call (measure stops warming up at 10,000 calls)
            time.sleep(0.001)

    s = measure(run, budget_s=0.01, warmup_s=30)
    assert s.warmup_calls == 10_000  # 9,999 fast warm-up calls and one slow one
    assert s.loops > 10
