"""timing.measure: samples, budget, precision target, loop calibration, checks, warm-up, and the
counter label it records."""
from __future__ import annotations

import time

import numpy as np
import pytest

from pqlab.backends.base import VerificationError
from pqlab.core.errors import BadInput
from pqlab.measure import cycles, timing
from pqlab.measure.timing import measure


def busy(n: int = 20_000) -> int:
    """CPU-bound work in user space (what the cycle counter counts)."""
    return sum(range(n))


def test_min_samples_honoured_even_when_the_budget_is_spent():
    s = measure(lambda: time.sleep(0.002), budget_s=0.0001, min_samples=7, warmup_s=0)
    assert s.n >= 7 and s.loops == 1
    assert s.time_ns.min() >= 2e6  # every sample lasted at least the sleep


def test_max_samples_honoured():
    s = measure(lambda: None, budget_s=5, max_samples=25, warmup_s=0.001, target_rel_ci=None)
    assert s.n == 25


def test_budget_bounds_wall_time():
    t0 = time.perf_counter()
    # the budget binds, not the cap or a precision target
    s = measure(lambda: None, budget_s=0.2, warmup_s=0.01, max_samples=10**8, target_rel_ci=None)
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
        measure(run, check, budget_s=1, loops=1, warmup_s=0, target_rel_ci=None)
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


# ----- the counter (tests/measure/test_cycles.py forces each branch) -----
@pytest.mark.counter
def test_measure_records_the_counter_of_the_process():
    cc = cycles.counter()
    s = measure(busy, budget_s=0.05, warmup_s=0.01)
    assert s.cycles_source == cc.label
    if cc.label == cycles.NONE:
        assert s.cycles is None and f"no-cycles:{cc.reason}" in s.flags
        return
    assert s.cycles is not None and s.cycles.shape == s.time_ns.shape
    ghz = np.median(s.cycles) / np.median(s.time_ns)
    assert 0.2 < ghz < 10, f"cycles/ns = {ghz:.3f}: counter and clock disagree"
    assert not any(f.startswith(("no-cycles", "cycles-dropped")) for f in s.flags)


# ----- sampling to a precision target -----
def test_a_steady_operation_stops_at_the_precision_target():
    t0 = time.perf_counter()
    s = measure(busy, budget_s=20, warmup_s=0.01, target_rel_ci=0.05, min_samples=20)
    assert time.perf_counter() - t0 < 10  # far inside the budget (a noisy shared machine still gets there)
    assert s.stopped_by == "precision" and s.rel_ci <= 0.05 and s.target_rel_ci == 0.05
    assert s.n >= 20 and not any(f.startswith("precision-not-reached") for f in s.flags)
    assert s.rel_ci == timing.precision(s.time_ns)


def test_running_out_of_budget_first_is_flagged_with_the_precision_reached():
    rng = np.random.default_rng(0)
    s = measure(lambda: time.sleep(rng.choice([0.0001, 0.002])), budget_s=0.05, warmup_s=0, loops=1,
                target_rel_ci=0.001)
    assert s.stopped_by == "budget" and "precision-not-reached:budget" in s.flags
    assert s.rel_ci > 0.001 or np.isnan(s.rel_ci)


def test_hitting_max_samples_first_is_flagged():
    s = measure(busy, budget_s=5, max_samples=8, warmup_s=0, target_rel_ci=1e-9, min_samples=3)
    assert s.n == 8 and s.stopped_by == "max-samples" and "precision-not-reached:max-samples" in s.flags


def test_without_a_target_the_whole_budget_is_used():
    t0 = time.perf_counter()
    s = measure(lambda: None, budget_s=0.1, warmup_s=0, target_rel_ci=None, max_samples=10**8)
    assert time.perf_counter() - t0 >= 0.1
    assert s.stopped_by == "budget" and s.target_rel_ci is None
    assert not any(f.startswith("precision-not-reached") for f in s.flags)


def test_min_samples_come_before_the_target():
    s = measure(lambda: None, budget_s=5, warmup_s=0, target_rel_ci=0.5, min_samples=300)
    assert s.n >= 300 and s.stopped_by == "precision"


def test_precision_is_checked_every_tenth_sample_not_after_each(monkeypatch):
    looks = []
    real = timing.precision

    def counted(times):
        looks.append(len(times))
        return real(times)

    monkeypatch.setattr(timing, "precision", counted)
    rng = np.random.default_rng(0)
    s = measure(lambda: sum(range(int(rng.integers(1, 300)))), budget_s=5, warmup_s=0.01, target_rel_ci=1e-9,
                min_samples=10, max_samples=2000, loops=1)  # work of random size: never that precise
    during = looks[:-1]  # the last call is the final precision of the whole sample set
    assert during[0] == 10 and all(b == a + max(1, a // 10) for a, b in zip(during, during[1:]))
    assert len(during) < 80 and s.n == 2000  # about log(n/10)/log(1.1) looks, not one per sample


def test_a_bad_target_is_refused_before_anything_runs():
    calls = []
    for bad in (0, -0.01, float("nan")):
        with pytest.raises(BadInput, match=r"^target_rel_ci must be a finite number > 0, got "):
            measure(lambda: calls.append(1), budget_s=0.01, target_rel_ci=bad)
    with pytest.raises(BadInput,
                       match=r"^target_rel_ci is a fraction of the median \(0.01 = ±1 %\), got 1.5$"):
        measure(lambda: calls.append(1), budget_s=0.01, target_rel_ci=1.5)
    assert calls == []


def test_loop_calibration_is_robust_to_one_slow_warm_up_call():
    calls = []

    def run():
        calls.append(1)
        if len(calls) == 10_000:  # the last warm-up call (measure stops warming up at 10,000 calls)
            time.sleep(0.001)

    s = measure(run, budget_s=0.01, warmup_s=30)
    assert s.warmup_calls == 10_000  # 9,999 fast warm-up calls and one slow one
    assert s.loops > 10


@pytest.mark.parametrize("budget_s, warmup_s, calls", [(0.1, None, 10), (2.0, None, 50), (2.0, 0, 1),
                                                       (0.1, 0.02, 20)])
def test_warm_up_lasts_a_tenth_of_the_budget_at_most_50_ms_unless_given(monkeypatch, budget_s, warmup_s,
                                                                         calls):
    """On a clock that advances 1 ms per call only (deterministic): the default warm-up is
    min(50 ms, budget / 10), at least one call; an explicit warmup_s wins."""
    now = [0]
    monkeypatch.setattr(timing.time, "perf_counter_ns", lambda: now[0])

    def run():
        now[0] += 1_000_000

    s = timing.measure(run, budget_s=budget_s, warmup_s=warmup_s, min_samples=3, max_samples=3,
                       target_rel_ci=None)
    assert s.warmup_calls == calls and s.n == 3
