"""Rounds (pqlab.runners.rounds), the machine's noise (pqlab.measure.noise) and calibration
(pqlab.calibration): each round a fresh worker process, items interleaved in a shuffled order, intervals over
rounds, busy and shifted rounds flagged, a crashed round losing only itself, and the calibration
arithmetic."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from pqlab import benchmark
from pqlab.backends.algorithms import get
from pqlab.core.errors import BadInput
from pqlab.measure import noise, timing
from pqlab.runners import rounds
from pqlab.runners.rounds import Item

FAST = {"budget_s": 0.06, "min_samples": 3, "progress": False, "rounds": 3, "max_rounds": 3}


def _ed25519_copy():
    """Ed25519 as an adapter the registry does not hold (so its rounds run in this process, where the
    monkeypatched noise below applies)."""
    import copy

    return copy.copy(get("Ed25519", "cryptography"))


def test_order_is_shuffled_per_round_reproducibly_and_sign_comes_before_its_verify():
    items = [Item(a, op, s) for a in range(3) for op in ("keygen", "sign", "verify") for s in (None, 10)]
    orders = [rounds.order(items, r, seed=0) for r in range(6)]
    assert all(sorted(o) == list(range(len(items))) for o in orders)
    assert len({tuple(o) for o in orders}) == 6  # another order every round
    assert rounds.order(items, 2, seed=0) == orders[2] and rounds.order(items, 2, seed=1) != orders[2]
    for o in orders:
        pos = {items[i].key(): p for p, i in enumerate(o)}
        assert all(pos[(a, "sign", s)] < pos[(a, "verify", s)] for a in range(3) for s in (None, 10))


def test_bench_measures_in_fresh_worker_processes_and_its_interval_is_over_rounds():
    run = benchmark.bench(["Ed25519", "ML-KEM-768"], operations=["keygen"], save=False, **FAST)
    assert run.meta["isolation"] == "process"
    pids = {r["pid"] for r in run.meta["round_noise"]}
    import os

    assert len(pids) == 3 and os.getpid() not in pids  # one new process per round
    m = run.verified()
    assert (m["rounds"] == 3).all() and (m["time_ns_ci_low"] < m["time_ns_median"]).all()
    assert set(run.samples["round"]) == {0, 1, 2}
    values = run.sample_values("Ed25519", "keygen", backend="cryptography")
    assert list(values.index.names) == ["run_id", "round"]
    from pqlab.measure.stats import round_interval

    row = m[m["algorithm"] == "Ed25519"].iloc[0]
    assert round_interval(values)[:3] == pytest.approx((row["time_ns_median"], row["time_ns_ci_low"],
                                                        row["time_ns_ci_high"]))
    for r in run.meta["round_noise"]:  # noise recorded per round; reference loops timed at its start and end
        assert {"steal", "others_cores", "ctxt", "load1", "scalar_ns", "vector_ns", "busy"} <= set(r)


def test_fewer_rounds_than_the_minimum_are_refused_before_anything_runs(tmp_path):
    for bad in (2, 0, 2.5, "3"):
        with pytest.raises(BadInput, match="rounds must be a whole number >= 3"):
            benchmark.bench(["Ed25519"], folder=tmp_path, **{**FAST, "rounds": bad})
    with pytest.raises(BadInput, match=r"max_rounds \(3\) is below rounds \(4\)"):
        benchmark.bench(["Ed25519"], folder=tmp_path, **{**FAST, "rounds": 4})
    assert not list(tmp_path.iterdir())


def test_quiet_only_refuses_a_busy_machine_in_one_line(tmp_path, monkeypatch):
    monkeypatch.setattr(noise, "quiet_now",
                        lambda seconds=1.0: (False, "busy: other processes used 1.93 cores over 1 s", {}))
    with pytest.raises(BadInput) as err:
        benchmark.bench(["Ed25519"], folder=tmp_path, quiet_only=True, **FAST)
    assert str(err.value).startswith("the machine is busy: other processes used 1.93 cores")
    assert "\n" not in str(err.value) and not list(tmp_path.iterdir())


def test_busy_rounds_flag_their_rows(monkeypatch):
    real = noise.round_noise

    def busy(before, after):
        return dict(real(before, after), others_cores=1.6)

    monkeypatch.setattr(noise, "round_noise", busy)
    run = benchmark.bench([_ed25519_copy()], operations=["keygen"], save=False, **FAST)
    row = run.verified().iloc[0]
    assert "busy:3 of 3 rounds" in row["flags"] and "rounds-in-process" in row["flags"]
    assert all(r["busy"] == "other processes used 1.60 cores" for r in run.meta["round_noise"])


@pytest.mark.parametrize("shift, flagged", [(1.11, True), (0.89, True), (1.09, False)])
def test_a_shift_of_the_reference_loops_is_flagged_from_ten_percent(monkeypatch, shift, flagged):
    """A deliberately slowed (or sped-up) vector loop in one round, the scalar loop unchanged."""
    calls = {"n": 0}

    def fake():
        calls["n"] += 1
        third_round = calls["n"] in (5, 6)  # two timings a round: start and end (the faster counts)
        return {"scalar_ns": 1.0e6, "vector_ns": 1.0e6 * (shift if third_round else 1.0)}

    monkeypatch.setattr(noise, "reference_times", fake)
    run = benchmark.bench([_ed25519_copy()], operations=["keygen"], save=False,
                          **{**FAST, "rounds": 5, "max_rounds": 5})
    row = run.verified().iloc[0]
    from pqlab.core import flags

    assert flags.has(row["flags"], "reference-shift") == flagged
    if flagged:
        assert flags.detail(row["flags"], "reference-shift") == f"round 2 vector {shift - 1:+.0%}"
        assert run.meta["round_noise"][2]["reference_shift"] == f"vector {shift - 1:+.0%}"


def test_reference_shifts_between_runs_are_named():
    a = {"round_noise": [{"round": i, "scalar_ns": 1e6, "vector_ns": 1e6} for i in range(4)]}
    b = {"round_noise": [{"round": i, "scalar_ns": 1.01e6, "vector_ns": 1.5e6} for i in range(4)]}
    assert noise.compare_references(a, b) == "vector +50%"
    assert noise.compare_references(a, a) == ""
    assert ("reference shifts" not in noise.describe_noise(a)
            and "no reference shift" in noise.describe_noise(a))


def test_a_machine_that_reports_no_noise_data_records_unknown_never_zero(monkeypatch):
    monkeypatch.setattr(noise, "_proc_stat", lambda: None)
    monkeypatch.setattr(noise, "_load1", lambda: None)
    n = noise.round_noise(noise.snapshot(), noise.snapshot())
    assert n["steal"] is None and n["others_cores"] is None and n["ctxt"] is None and n["load1"] is None
    assert noise.busy_reason(n) == ""
    quiet, why, _ = noise.quiet_now(0.01)
    assert why.startswith("unknown: /proc/stat is not readable")
    text = noise.describe_noise({"round_noise": [{"round": 0, **n, "scalar_ns": None, "vector_ns": None}]})
    assert "steal unknown" in text and "other processes unknown cores" in text


def test_a_crashed_worker_loses_its_round_only(monkeypatch):
    real = rounds.run_round_in_worker

    def crash_in_round_one(algos, items, round_index, emit, **job):
        if round_index != 1:
            return real(algos, items, round_index, emit, **job)
        got = []
        real(algos, items, round_index, got.append, **job)
        for x in got[:2]:  # the worker reported two items, then died
            emit(x)
        return "worker exit -9"

    monkeypatch.setattr(benchmark, "run_round_in_worker", crash_in_round_one)
    run = benchmark.bench(["Ed25519"], save=False, **FAST)
    lost = run.meta["round_noise"][1]
    assert lost["error"] == "worker exit -9" and lost["lost"]
    m = run.verified()
    lost_operations = [x for x in lost["lost"] if not x.startswith("harness")]
    assert (lost_operations and m["rounds"].isin([2, 3]).all()
            and (m["rounds"] == 2).sum() == len(lost_operations))
    two = m[m["rounds"] == 2].iloc[0]
    assert np.isnan(two["time_ns_ci_low"]) and "few-rounds" in two["flags"]  # below 3 rounds: no interval


@pytest.mark.serial  # asserts how far apart real round medians lie: beside a compile they lie far apart
def test_stein_rule_adds_rounds_for_a_tight_target_only(monkeypatch):
    steps = iter(range(10**6))  # reference loops 2 % apart from round to round: a drifting machine
    monkeypatch.setattr(noise, "reference_times",
                        lambda: {"scalar_ns": 1e6 * (1 + 0.02 * (next(steps) // 2 % 2)),
                                 "vector_ns": 1e6})
    loose = benchmark.bench([_ed25519_copy()], operations=["keygen"], save=False,
                            **{**FAST, "max_rounds": 6, "target_rel_ci": 0.9})
    assert (loose.verified()["rounds"] == 3).all()
    # a target finer than the machine's drift: no number of rounds reaches it, so none are added
    drifting = benchmark.bench([_ed25519_copy()], operations=["keygen"], save=False,
                               **{**FAST, "max_rounds": 5, "target_rel_ci": 1e-3})
    row = drifting.verified().iloc[0]
    assert row["rounds"] == 3 and "precision-not-reached:machine drift" in row["flags"]
    # a machine whose reference loops do not move: Stein asks for more rounds than the most allowed (a budget
    # that pays for them whatever the machine's load: the budget's own case is the next one)
    monkeypatch.setattr(noise, "reference_times", lambda: {"scalar_ns": 1e6, "vector_ns": 1e6})
    monkeypatch.setattr(benchmark, "BUDGET_FACTOR", 100)
    tight = benchmark.bench([_ed25519_copy()], operations=["keygen"], save=False,
                            **{**FAST, "max_rounds": 5, "target_rel_ci": 1e-6})
    row = tight.verified().iloc[0]
    assert row["rounds"] == 5 and "precision-not-reached:max-rounds (5)" in row["flags"]
    # the same target, but a budget no round fits in (each round's keygens take far more than 2 µs): the
    # first stage is kept and the row says the budget ended it
    monkeypatch.setattr(benchmark, "BUDGET_FACTOR", rounds.BUDGET_FACTOR)
    poor = benchmark.bench([_ed25519_copy()], operations=["keygen"], save=False,
                           **{**FAST, "budget_s": 1e-6, "max_rounds": 5, "target_rel_ci": 1e-6})
    row = poor.verified().iloc[0]
    assert row["rounds"] == 3 and "precision-not-reached:budget (3 rounds of" in row["flags"]


def test_old_runs_convert_with_one_round_and_no_interval():
    from pqlab.core.schema import convert

    m = pd.DataFrame({"schema_version": [3], "time_ns_median": [10.0], "time_ns_ci_low": [9.9],
                      "time_ns_ci_high": [10.1],
                      "time_ns_rel_ci": [0.01], "cycles_source": ["tsc"], "flags": [""]})
    s = pd.DataFrame({"time_ns": [10.0, 10.1], "run_id": ["r", "r"]})
    out, _, samples = convert(m, pd.DataFrame({"schema_version": [3]}), s, 3)
    row = out.iloc[0]
    assert row["rounds"] == 1 and math.isnan(row["time_ns_ci_low"]) and "no-rounds" in row["flags"]
    assert list(samples["round"]) == [0, 0]


# ----- calibration


def _fake_runs(levels_per_run, per_round=20, rounds_per_run=6, seed=0):
    """Runs whose rounds scatter around each run's level (a Run-like object with what analyse reads)."""
    from pqlab.benchmark import rounds_row
    from pqlab.store.recorder import RunRecorder

    rng = np.random.default_rng(seed)
    out = []
    for k, level in enumerate(levels_per_run):
        rec = RunRecorder("cal", save=False, run_id=f"r{k}")
        rows, samples = [], []
        for name, centre in (("Ed25519", 30_000.0), ("ECDSA-P256", 20_000.0)):
            algo = get(name, "cryptography")
            results = []
            for r in range(rounds_per_run):
                t = (centre * level * np.exp(rng.normal(0, 0.02))
                     * (1 + 0.005 * rng.standard_normal(per_round)))
                results.append((r, {"time_ns": list(t), "loops": 1, "cycles_source": "none", "flags": [],
                                    "cycles": None}))
                samples += [{"run_id": rec.run_id, "backend": "cryptography", "build": "", "algorithm": name,
                             "operation": "sign", "message_bytes": 100, "round": r, "sample": i, "loops": 1,
                             "time_ns": v} for i, v in enumerate(t)]
            rows.append(rounds_row(rec, algo, "sign", 100, results, 40.0, 0.01))
        rec.add(rows, [], samples)
        out.append(rec.finish())
    return out


def test_calibration_counts_coverage_and_spread_on_runs_that_agree_and_runs_that_do_not():
    from pqlab.calibration import analyse, describe

    good = analyse(_fake_runs([1.0] * 6))
    rows = good["rows"]
    assert len(rows) == 2 and (rows["method"] == "rounds").all() and (rows["runs"] == 6).all()
    assert good["overall"]["rows"]["cover_pooled"] >= 0.8
    assert len(good["ratios"]) == 1 and good["ratios"].iloc[0]["with_interval"] == 6
    # runs 20 % apart from each other: their intervals cannot hold each other's estimates
    bad = analyse(_fake_runs([1.0, 1.2, 0.8, 1.1, 0.9, 1.25], seed=1))
    o = bad["overall"]["rows"]
    assert o["cover_other"] < 0.5 and o["spread_ratio_median"] > 3
    assert "NOT calibrated" in describe(bad)
    # the ratio of two operations measured in the same rounds cancels each run's level: it stays calibrated
    assert bad["ratios"].iloc[0]["spread_ratio"] < 3


def test_calibration_checks_runs_without_rounds_with_the_old_within_process_interval():
    from pqlab.calibration import analyse
    from pqlab.measure.stats import median_ci

    runs = _fake_runs([1.0, 1.1], rounds_per_run=1)
    rows = analyse(runs)["rows"]
    assert set(rows["method"]) == {"within-process"}
    s = runs[0].samples
    low, high = median_ci(s[s["algorithm"] == "Ed25519"]["time_ns"])
    assert rows["with_interval"].eq(2).all() and np.isfinite(low) and low < high
    with pytest.raises(ValueError, match="at least 2 runs"):
        analyse(runs[:1])


def test_a_verify_that_wants_more_rounds_cannot_pull_its_slow_sign_past_the_budget():
    # a verify round signs afresh (benchmark._active), so its cost is its own plus its sign's
    items = [Item(-1, rounds.NOOP, None), Item(0, "sign", 100), Item(0, "verify", 100),
             Item(0, "keygen", None)]
    spent = {0: 0.001, 1: 1.0, 2: 0.01, 3: 0.01}
    results = {i: [(r, {"time_ns": [1.0], "spent_s": s}) for r in range(6)] for i, s in spent.items()}
    allowed = benchmark._rounds_allowed(items, results, 6, 2.0)
    # 2 s of budget: a 1 s sign and its verify keep the first stage
    assert allowed[1] == 6 and allowed[2] == 6
    assert allowed[3] == 200  # an operation without a sign: its own cost only


def test_later_rounds_skip_the_warm_up_of_a_slow_call_only_where_its_cold_call_cost_nothing():
    slow = {"time_ns": [0.4e9, 0.41e9, 0.39e9], "first_call_ns": 0.402e9}
    assert rounds.later_warmup(slow, round_budget_s=1.0) == 0.0
    cold = dict(slow, first_call_ns=0.42e9)  # 5 % slower when cold: later rounds keep warming up
    assert rounds.later_warmup(cold, round_budget_s=1.0) == rounds.LATER_WARMUP_S
    fast = {"time_ns": [15e3] * 5, "first_call_ns": 15e3}  # fast calls always warm up, briefly
    assert rounds.later_warmup(fast, round_budget_s=1.0) == rounds.LATER_WARMUP_S
    assert rounds.later_warmup(fast, round_budget_s=0.004) == 0.002  # at most half the round's sampling
    assert rounds.later_warmup({"time_ns": [0.5e9], "first_call_ns": None}, 1.0) == rounds.LATER_WARMUP_S


def test_measure_makes_no_warm_up_call_with_fixed_loops_and_warm_up_off():
    calls = []
    s = timing.measure(lambda: calls.append(1), budget_s=0.01, min_samples=3, max_samples=3, loops=1,
                       target_rel_ci=None, warm_up=False)
    assert s.warmup_calls == 0 and len(calls) == 3 and math.isnan(s.first_call_ns)
    s = timing.measure(lambda: calls.append(1), budget_s=0.01, min_samples=3, max_samples=3, warmup_s=0,
                       target_rel_ci=None, warm_up=False)  # no loops yet: one call calibrates them
    assert s.warmup_calls == 1 and s.first_call_ns > 0


def test_a_runner_this_process_waited_for_is_not_another_process():
    import subprocess
    import sys

    before = noise.snapshot()
    subprocess.run([sys.executable, "-c",
                    "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.4: pass"],
                   check=True)
    after = noise.snapshot()
    # the child's CPU time (about 0.4 s) is this process's own: before the fix it counted as another process's
    # (0.98 cores in every round of notebook 04's native run, each flagged busy)
    assert after["own_cpu"] - before["own_cpu"] >= 0.35
