"""Issue #13, kills lose nothing: SIGTERM, SIGHUP, SIGINT and SIGKILL sent to `python -m pqlab bench`
at several points (before the first measurement, mid-run, during a checkpoint write), and a second
Ctrl-C during the final write.  `pytest -k reliability` runs these."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pqlab.app.cli import main
from pqlab.core import files
from pqlab.store.recorder import Interrupted, RunRecorder
from pqlab.store.results import Run, load_run

#: Runs `python -m pqlab bench ARGS` with a pause before the Nth round ("round": each round is a worker
#: process that measures every operation once) or inside the Nth checkpoint, after its temporary files are
#: written and before they are renamed ("write").  At the pause it writes MARKER and waits until RELEASE
#: exists (a signal handler that raises ends the wait; a held-back signal does not).
DRIVER = r"""
import os, sys, time, pathlib
marker, release, where, nth, *argv = sys.argv[1:]
calls = []

def pause():
    calls.append(1)
    if len(calls) == int(nth):
        pathlib.Path(marker).write_text(str(os.getpid()))
        deadline = time.monotonic() + 120
        while not pathlib.Path(release).exists() and time.monotonic() < deadline:
            time.sleep(0.01)

if where == "round":
    from pqlab import benchmark
    real_round = benchmark._one_round
    def one_round(*a, **k):
        pause()
        return real_round(*a, **k)
    benchmark._one_round = one_round
else:
    real_replace = os.replace
    def replace(src, dst):
        if str(dst).endswith(".samples.csv.gz"):
            pause()
        return real_replace(src, dst)
    os.replace = replace
from pqlab.app.cli import main
sys.exit(main(["bench", *argv]))
"""
ARGS = ["Ed25519", "--operations", "keygen", "sign", "verify", "--budget", "0.06", "--min-samples", "3",
        "--rounds", "3", "--max-rounds", "3", "--no-progress"]
ALL = ["noop", "keygen", "sign", "verify"]
#: scenario -> (signal, where, nth, the operations kept, the rounds they have)
SCENARIOS = {
    "term-before-first": (signal.SIGTERM, "round", 1, [], 0),  # before the first round: nothing measured yet
    "term-mid-run": (signal.SIGTERM, "round", 2, ALL, 1),  # between rounds: the first round's rows are kept
    "hup-mid-run": (signal.SIGHUP, "round", 2, ALL, 1),
    "int-mid-run": (signal.SIGINT, "round", 3, ALL, 2),
    "term-in-write": (signal.SIGTERM, "write", 3, ALL, 2),  # the checkpoint after round 2 completes
    "kill-before-first": (signal.SIGKILL, "round", 1, [], 0),  # the plan is on disk
    "kill-mid-run": (signal.SIGKILL, "round", 3, ALL, 2),  # every finished round is on disk
    "kill-in-write": (signal.SIGKILL, "write", 3, ALL, 1),  # the previous checkpoint (round 1) is intact
}


@pytest.fixture(scope="module")
def drivers(tmp_path_factory):
    """Every scenario's process, started at once (they spend most of their time starting up)."""
    started = {}
    for name, (_, where, nth, _, _) in SCENARIOS.items():
        work = tmp_path_factory.mktemp(name)
        env = dict(os.environ, XDG_CACHE_HOME=str(work / "cache"))
        cmd = [sys.executable, "-c", DRIVER, str(work / "marker"), str(work / "release"), where, str(nth),
               *ARGS, "--folder", str(work / "results")]
        started[name] = (subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                          env=env), work)
    yield started
    for proc, _ in started.values():
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def paused(drivers, name: str) -> tuple[subprocess.Popen, Path]:
    """The scenario's process once it waits at its pause, and its folder."""
    proc, work = drivers[name]
    deadline = time.monotonic() + 90
    while not (work / "marker").exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the driver never reached its pause"
        time.sleep(0.02)
    return proc, work


def the_run(folder: Path) -> Run:
    (meta,) = folder.glob("*.meta.json")
    return load_run(meta)


def operations(run: Run) -> list[str]:
    return list(run.measurements["operation"])


@pytest.mark.parametrize("name", [n for n, (signum, *_) in SCENARIOS.items() if signum != signal.SIGKILL])
def test_reliability_a_signal_saves_the_run_as_interrupted(drivers, name):
    signum, where, nth, kept, rounds = SCENARIOS[name]
    proc, work = paused(drivers, name)
    proc.send_signal(signum)
    (work / "release").touch()  # a signal held back during a save: the save goes on
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signum
    folder = work / "results"
    run = the_run(folder)
    line = err.strip()
    assert "\n" not in line and "Traceback" not in err
    assert line == (f"interrupted by {signal.Signals(signum).name}: run {run.run_id} stopped with "
                    f"{len(kept) - ('noop' in kept)} measurements, saved in {run.path} (status interrupted)")
    assert run.meta["status"] == "interrupted" and run.meta["interrupted_by"] == signal.Signals(signum).name
    assert operations(run) == kept and (run.measurements["rounds"] == rounds).all()
    assert run.meta["plan"] == ["Ed25519@cryptography keygen", "Ed25519@cryptography sign 100",
                                "Ed25519@cryptography verify 100"]
    assert not [p for p in folder.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize("name", [n for n, (signum, *_) in SCENARIOS.items() if signum == signal.SIGKILL])
def test_reliability_sigkill_keeps_every_checkpoint_and_the_run_loads_as_abandoned(drivers, name):
    _, where, nth, kept, rounds = SCENARIOS[name]
    proc, work = paused(drivers, name)
    proc.kill()
    proc.communicate(timeout=60)
    folder = work / "results"
    run = the_run(folder)
    assert run.meta["status"] == "abandoned" and operations(run) == kept
    assert (run.measurements["rounds"] == rounds).all()
    assert run.meta["plan"][0] == "Ed25519@cryptography keygen"
    orphans = [p for p in folder.iterdir() if p.name.endswith(".tmp")]
    assert bool(orphans) == (where == "write")
    if orphans:  # the next save in that folder removes them
        assert main(["bench", "Ed25519", "--operations", "keygen", "--budget", "0.01", "--folder",
                     str(folder), "--no-progress"]) == 0
        assert not [p for p in folder.iterdir() if p.name.endswith(".tmp")]


def test_reliability_a_second_ctrl_c_during_the_final_write_waits_for_it(tmp_path, monkeypatch):
    real_save = Run.save
    statuses = []

    def save(self, folder=None, **kwargs):
        if self.meta["status"] == "interrupted":
            os.kill(os.getpid(), signal.SIGINT)  # the second Ctrl-C, in the middle of the final write
            time.sleep(0.05)
        statuses.append(self.meta["status"])
        return real_save(self, folder, **kwargs)

    monkeypatch.setattr(Run, "save", save)
    before = signal.getsignal(signal.SIGINT)
    rec = RunRecorder("t", folder=tmp_path)
    with pytest.raises(Interrupted) as info:
        with rec:
            rec.add(measurements=[rec.row(operation="sign", kind="sig", verified=True)])
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(5)
    assert statuses == ["running", "interrupted"]  # the final write ran to its end
    assert str(info.value) == (f"SIGINT: run {rec.run_id} stopped with 1 measurements, saved in "
                               f"{tmp_path / rec.run_id}.meta.json (status interrupted)")
    assert load_run(tmp_path / rec.run_id).meta["status"] == "interrupted"
    assert signal.getsignal(signal.SIGINT) is before  # the caller's handler is back


def test_reliability_a_signal_during_the_final_write_of_a_complete_run_comes_after_it(tmp_path, monkeypatch):
    got = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: got.append(signum))
    try:
        real_save = Run.save

        def save(self, folder=None, **kwargs):
            if self.meta["status"] == "complete":
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(0.05)
                assert got == []  # held back while the files are written
            return real_save(self, folder, **kwargs)

        monkeypatch.setattr(Run, "save", save)
        with RunRecorder("t", folder=tmp_path) as rec:
            pass
        assert got == [signal.SIGTERM]  # delivered to the caller's handler once the save was complete
        assert json.loads((tmp_path / f"{rec.run_id}.meta.json").read_text())["status"] == "complete"
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_reliability_the_api_raises_keyboardinterrupt_with_the_path(tmp_path, monkeypatch):
    from pqlab import benchmark
    from pqlab.backends.algorithms import get
    from pqlab.benchmark import bench

    algo = get("Ed25519")
    real, calls = benchmark.run_round_in_worker, []

    def ctrl_c(*args, **kwargs):  # as Ctrl-C in a notebook, while the second round's worker measures
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(benchmark, "run_round_in_worker", ctrl_c)
    folder = tmp_path / "r"
    with pytest.raises(KeyboardInterrupt,
                       match=rf"^SIGINT: run x stopped with 3 measurements, saved in {folder}/x"):
        bench([algo], budget_s=0.03, min_samples=3, progress=False, folder=folder, run_id="x", rounds=3,
              max_rounds=3)
    back = load_run(folder / "x")
    assert back.meta["status"] == "interrupted" and operations(back) == ["noop", "keygen", "sign", "verify"]
    assert (back.measurements["rounds"] == 1).all() and len(back.meta["round_noise"]) == 1
    assert files.process_alive(back.meta["process"]) is True


#: Saves run "r" twice (one row, then two) and dies (like SIGKILL: no cleanup) at the Nth rename of the
#: second save: 1-3 are its data files, 4 its meta file.
CUT_SAVE = r"""
import os, sys
from pqlab.store.recorder import RunRecorder
folder, nth = sys.argv[1], int(sys.argv[2])
rec = RunRecorder("t", folder=folder, run_id="r", liboqs=False)
rec.__enter__()
rec.add(measurements=[rec.row(operation="keygen", kind="sig", verified=True)])
rec.checkpoint()
rec.add(measurements=[rec.row(operation="sign", kind="sig", verified=True)],
        samples=[{"run_id": "r", "algorithm": "A", "operation": "sign", "sample": 0, "time_ns": 5.0}])
real, calls = os.replace, []
def replace(src, dst):
    calls.append(dst)
    if len(calls) == nth:
        os._exit(9)
    return real(src, dst)
os.replace = replace
rec.checkpoint()
"""


@pytest.mark.parametrize("nth", [1, 2, 4])
@pytest.mark.parametrize("reader", ["load", "next save"])
def test_reliability_a_save_cut_among_its_renames_is_completed_not_refused(tmp_path, nth, reader):
    proc = subprocess.run([sys.executable, "-c", CUT_SAVE, str(tmp_path), str(nth)], capture_output=True,
                          text=True)
    assert proc.returncode == 9, proc.stderr
    assert len(list(tmp_path.glob(".r.*.tmp"))) == 4 - (nth - 1)  # the renames not done, the meta file's last
    if reader == "next save":  # another run saved in the folder completes it instead of removing its files
        with RunRecorder("t", folder=tmp_path, run_id="other", liboqs=False):
            pass
    run = load_run(tmp_path / "r")
    if nth == 1 and reader == "load":  # nothing renamed yet: the previous save is whole and is what loads
        assert list(run.measurements["operation"]) == ["keygen"] and run.samples.empty
        return
    assert list(run.measurements["operation"]) == ["keygen", "sign"] and len(run.samples) == 1
    assert run.meta["status"] == "abandoned" and list(tmp_path.glob(".*.tmp")) == []
