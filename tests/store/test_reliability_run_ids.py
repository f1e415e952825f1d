"""Issue #27, a run id is taken by one process only: two processes that start at once with one `run_id` cannot
both record it (the id is reserved with a lock before its files are checked); the loser gets one line, the
winner's run is complete, a reservation left by a process that died blocks nothing, and readers of the results
store never see it.  `pytest -k reliability` runs these."""
from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys

import pytest

from pqlab.app.cli import main
from pqlab.core.errors import BadInput
from pqlab.measure import machine
from pqlab.store.bundle import stored_runs
from pqlab.store.recorder import LOCK_SUFFIX, RunRecorder, release_run_id, reserve_run_id
from pqlab.store.results import load_run

TRIALS = 20


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    """A fallback save goes under tmp_path, never into the user's real cache."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


def _record(folder: str, run_id: str, barrier, results) -> None:
    """One contender: waits for the other, then records a run with one row under `run_id`."""
    barrier.wait()
    try:
        with RunRecorder("race", {"who": os.getpid()}, folder=folder, run_id=run_id, liboqs=False) as rec:
            rec.add(measurements=[rec.row(algorithm="A", backend="b", operation="sign",
                                          time_ns_median=float(os.getpid()))])
            rec.checkpoint()
        results.put(("won", os.getpid()))
    except BadInput as exc:
        results.put(("refused", str(exc)))
    except BaseException as exc:  # noqa: BLE001 - anything else is the test's failure, reported whole
        results.put(("crashed", f"{type(exc).__name__}: {exc}"))


def test_reliability_two_processes_with_one_run_id_one_wins_and_nothing_is_lost(tmp_path):
    machine.collect({}, liboqs=False)  # counters opened once here: each contender starts from the same state
    ctx = multiprocessing.get_context("fork")
    for trial in range(TRIALS):
        run_id, results = f"same-{trial}", ctx.Queue()
        barrier = ctx.Barrier(2)
        procs = [ctx.Process(target=_record, args=(str(tmp_path), run_id, barrier, results))
                 for _ in range(2)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(120)
            assert p.exitcode == 0, f"trial {trial}: a contender ended with exit code {p.exitcode}"
        outcomes = sorted(results.get(timeout=10) for _ in procs)
        kinds = [k for k, _ in outcomes]
        assert kinds == ["refused", "won"], f"trial {trial}: {outcomes}"
        refusal = outcomes[0][1]
        assert "\n" not in refusal and f"run id {run_id!r}" in refusal and "choose a new one" in refusal
        assert "being recorded right now" in refusal or "exists already" in refusal
        run = load_run(tmp_path / run_id)
        winner = outcomes[1][1]
        assert run.meta["status"] == "complete" and run.meta["params"] == {"who": winner}
        assert list(run.measurements["time_ns_median"]) == [float(winner)]
        assert not (tmp_path / f"{run_id}{LOCK_SUFFIX}").exists()
    assert len(stored_runs(tmp_path)) == TRIALS


def test_reliability_a_run_id_being_recorded_is_refused_in_one_line(tmp_path, capsys):
    fd = reserve_run_id(tmp_path, "busy")  # held as another process would hold it
    try:
        with pytest.raises(BadInput, match=r"run id 'busy' is being recorded right now in .* "
                                           r"\(pid \d+ on host"):
            RunRecorder("t", folder=tmp_path, run_id="busy", liboqs=False)
        assert main(["bench", "Ed25519", "--operations", "sign", "--budget", "0.01", "--folder",
                     str(tmp_path), "--run-id", "busy", "--no-progress"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("error: run id 'busy' is being recorded right now"), err
        assert stored_runs(tmp_path) == []  # the reservation is no run
    finally:
        release_run_id(fd, tmp_path, "busy")
    assert not (tmp_path / f"busy{LOCK_SUFFIX}").exists()


def test_reliability_a_reservation_left_by_a_killed_process_blocks_nothing(tmp_path):
    code = ("import os, sys; from pqlab.store.recorder import reserve_run_id; "
            "reserve_run_id(sys.argv[1], 'left'); os._exit(0)")  # ends without releasing it, as SIGKILL would
    subprocess.run([sys.executable, "-c", code, str(tmp_path)], check=True, timeout=60)
    assert (tmp_path / f"left{LOCK_SUFFIX}").exists()
    with RunRecorder("t", folder=tmp_path, run_id="left", liboqs=False) as rec:
        rec.add(measurements=[rec.row(algorithm="A", operation="sign")])
    assert load_run(tmp_path / "left").meta["status"] == "complete"
    assert not (tmp_path / f"left{LOCK_SUFFIX}").exists()
    with pytest.raises(BadInput, match="run id 'left' exists already"):
        RunRecorder("t", folder=tmp_path, run_id="left", liboqs=False)
    assert not (tmp_path / f"left{LOCK_SUFFIX}").exists()  # the refused attempt leaves nothing behind


def test_reliability_a_recorder_that_fails_to_start_releases_its_run_id(tmp_path, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("no metadata")

    real = machine.collect
    monkeypatch.setattr(machine, "collect", broken)
    with pytest.raises(RuntimeError, match="no metadata"):
        RunRecorder("t", folder=tmp_path, run_id="early", liboqs=False)
    assert not (tmp_path / f"early{LOCK_SUFFIX}").exists()
    monkeypatch.setattr(machine, "collect", real)
    with RunRecorder("t", folder=tmp_path, run_id="early", liboqs=False) as rec:
        rec.add(measurements=[rec.row(algorithm="A", operation="sign")])
    assert load_run(tmp_path / "early").meta["status"] == "complete"
