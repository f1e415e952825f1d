"""Issue #13, nothing measured is lost (in one process): output checked before measuring, fallback
folders, checksums and strict JSON in the meta file, damaged files named on load, abandoned runs,
orphan temporary files, partial runs in compare.  `pytest -k reliability` runs these."""
from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from pqlab.app.cli import main
from pqlab.benchmark import bench
from pqlab.core import files
from pqlab.core.errors import BadInput, PqlabWarning
from pqlab.store import recorder
from pqlab.store.recorder import RunRecorder
from pqlab.store.results import CorruptRun, compare_runs, load_run, load_runs

FAST = dict(operations=["sign"], budget_s=0.01, min_samples=3, progress=False)


@pytest.fixture(autouse=True)
def private_fallback(tmp_path, monkeypatch):
    """A fallback save goes under tmp_path, never into the user's real cache."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


def no_measuring(monkeypatch):
    """Make any measurement fail the test: refused input must be refused before the first one."""
    from pqlab import benchmark

    def measure(*args, **kwargs):
        raise AssertionError("measured although the input was refused")

    monkeypatch.setattr(benchmark, "_one_round", measure)


def failing_replace(monkeypatch, folder: Path, code: int, after: int = 0):
    """os.replace raises `code` for targets in `folder` once `after` calls have gone through."""
    real, calls = os.replace, []

    def replace(src, dst, *args, **kwargs):
        if Path(dst).parent == folder:
            calls.append(dst)
            if len(calls) > after:
                raise OSError(code, os.strerror(code), str(dst))
        return real(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "replace", replace)


def one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err, err
    return lines[0]


# ----- outputs checked before measuring -----
@pytest.mark.parametrize("code", [errno.EROFS, errno.ENOSPC])
def test_reliability_unwritable_folder_is_refused_before_measuring(tmp_path, monkeypatch, capsys, code):
    folder = tmp_path / "results"
    failing_replace(monkeypatch, folder, code)
    no_measuring(monkeypatch)
    with pytest.raises(BadInput, match=f"cannot write in the results folder {folder} .*--folder"):
        bench(["Ed25519"], folder=folder, **FAST)
    assert main(["bench", "Ed25519", "--budget", "0.01", "--folder", str(folder), "--no-progress"]) == 2
    assert str(folder) in one_error_line(capsys.readouterr().err)
    assert [p.name for p in folder.iterdir()] == []


def test_reliability_a_full_disk_is_refused_before_measuring(tmp_path, monkeypatch):
    no_measuring(monkeypatch)
    monkeypatch.setattr(recorder.shutil, "disk_usage", lambda p: type("U", (), {"free": 60 << 10})())
    with pytest.raises(BadInput, match="has 60 KiB free, less than the 32 MiB a run needs"):
        bench(["Ed25519"], folder=tmp_path, **FAST)


def test_reliability_folder_that_is_a_file_or_under_proc_is_refused(tmp_path, monkeypatch, capsys):
    no_measuring(monkeypatch)
    a_file = tmp_path / "afile"
    a_file.write_text("x")
    assert main(["bench", "Ed25519", "--budget", "0.01", "--folder", str(a_file), "--no-progress"]) == 2
    assert "is a file, not a folder" in one_error_line(capsys.readouterr().err)
    assert main(["bench", "Ed25519", "--budget", "0.01", "--folder", "/proc/pqlab/results",
                 "--no-progress"]) == 2
    assert "cannot write in the results folder /proc/pqlab/results" in one_error_line(capsys.readouterr().err)
    assert main(["bench", "Ed25519", "--budget", "0.01", "--folder", str(tmp_path), "--no-progress",
                 "--out", "/proc/pqlab/m.csv"]) == 2
    assert "folder of --out /proc/pqlab" in one_error_line(capsys.readouterr().err)


def test_reliability_run_id_must_be_new(tmp_path, monkeypatch, capsys):
    run = bench(["Ed25519"], folder=tmp_path, run_id="mine", **FAST)
    # (cache/: the helpers built)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    no_measuring(monkeypatch)
    assert main(["bench", "Ed25519", "--budget", "0.01", "--folder", str(tmp_path), "--no-progress",
                 "--run-id", run.run_id]) == 2
    assert "run id 'mine' exists already" in one_error_line(capsys.readouterr().err)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()} == before
    with pytest.raises(BadInput, match="cannot be part of a file name"):
        RunRecorder("t", folder=tmp_path, run_id="../escape")


# ----- a save that fails mid-run -----
def test_reliability_save_failing_mid_run_goes_to_the_fallback_folder(tmp_path, monkeypatch):
    folder = tmp_path / "results"
    # the folder check and the first checkpoint land
    failing_replace(monkeypatch, folder, errno.ENOSPC, after=5)
    with pytest.warns(PqlabWarning, match=r"could not save run .*\(No space left on device\); it is saved in "
                                          rf"{tmp_path / 'cache' / 'pqlab' / 'results'} instead"):
        run = bench(["Ed25519"], folder=folder, **FAST)
    fallback = tmp_path / "cache" / "pqlab" / "results"
    assert run.path == fallback / f"{run.run_id}.meta.json"
    back = load_run(run.path)
    assert back.meta["status"] == "complete" and list(back.measurements["operation"]) == ["noop", "sign"]
    assert back.meta["saved_to_fallback"]["folder"] == str(folder)
    assert list(folder.iterdir()) == []  # the older checkpoint left the first folder


def test_reliability_when_every_folder_fails_the_rows_stay_in_memory(tmp_path, monkeypatch):
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(recorder.tempfile, "gettempdir", lambda: str(tmp_path / "tmp"))
    rec = RunRecorder("t", folder=tmp_path / "results")
    with pytest.raises(OSError, match=r"could not be saved in .*results \(Read-only file system\), "
                                      r".*cache.*, .*tmp.*: its 1 measurements are in memory only"), rec:
        rec.add(measurements=[rec.row(operation="sign", kind="sig", verified=True)])
        monkeypatch.setattr(os, "replace",
                            lambda *a: (_ for _ in ()).throw(OSError(errno.EROFS, "Read-only file system")))
    assert list(rec.run.measurements["operation"]) == ["sign"] and rec.run.meta["status"] == "complete"


# ----- the meta file: strict JSON, checksums -----
def test_reliability_meta_is_strict_json_with_rows_and_checksums(tmp_path):
    rec = RunRecorder("t", {"budget": float("nan")}, folder=tmp_path,
                      meta={"x": np.float64("inf"), "n": np.int64(3)})
    with rec:
        rec.add(measurements=[rec.row(operation="sign", kind="sig", verified=True, time_ns_median=12.5)],
                samples=[{"run_id": rec.run_id, "algorithm": "A", "operation": "sign", "sample": 0,
                          "time_ns": 1.0}])
    text = (tmp_path / f"{rec.run_id}.meta.json").read_text()
    meta = json.loads(text, parse_constant=lambda c: pytest.fail(f"{c} in meta.json"))
    assert meta["x"] is None and meta["params"]["budget"] is None and meta["n"] == 3
    assert {k: v["rows"] for k, v in meta["files"].items()} == {"samples.csv.gz": 1, "sizes.csv": 0,
                                                                "measurements.csv": 1}
    assert meta["process"]["pid"] == os.getpid()


def saved(tmp_path, name="r") -> Path:
    run = bench(["Ed25519"], folder=tmp_path, run_id=name, **FAST)
    return tmp_path / run.run_id


@pytest.mark.parametrize("suffix", ["measurements.csv", "samples.csv.gz", "sizes.csv"])
def test_reliability_a_truncated_file_is_refused_naming_it(tmp_path, suffix):
    base = saved(tmp_path)
    path = Path(f"{base}.{suffix}")
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(CorruptRun) as info:
        load_run(base)
    assert str(info.value).startswith(f"{path} does not match the checksum in r.meta.json")
    assert "load_run(..., verify=False)" in str(info.value)
    if suffix == "samples.csv.gz":  # read anyway: the damage is still named
        with pytest.raises(CorruptRun, match=rf"{path} cannot be read \(EOFError"):
            load_run(base, verify=False)


def test_reliability_every_load_error_names_the_file(tmp_path, capsys):
    base = saved(tmp_path)
    meta = Path(f"{base}.meta.json")
    good = meta.read_text()
    meta.write_text("[1, 2]\n")
    with pytest.raises(CorruptRun, match=rf"{meta} holds a JSON list, not a run's metadata"):
        load_run(base)
    meta.write_text(good[:40])
    with pytest.raises(CorruptRun, match=rf"{meta} is not readable JSON"):
        load_run(base)
    meta.write_text(good)
    Path(f"{base}.sizes.csv").unlink()
    with pytest.raises(CorruptRun, match=rf"{base}.sizes.csv cannot be read"):
        load_run(base)
    assert main(["compare", str(base), str(base)]) == 2
    assert f"{base}.sizes.csv" in one_error_line(capsys.readouterr().err)


# ----- runs whose process is gone; their temporary files -----
def dead_pid() -> int:
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True)
    return int(proc.stdout)


def test_reliability_a_running_run_of_a_dead_process_loads_as_abandoned(tmp_path):
    rec = RunRecorder("t", folder=tmp_path)
    rec.__enter__()
    rec._restore_signals()
    assert load_run(tmp_path / rec.run_id).meta["status"] == "running"  # this process is alive
    rec.meta["process"] = dict(rec.meta["process"], pid=dead_pid())
    rec.checkpoint()
    back = load_run(tmp_path / rec.run_id)
    assert back.meta["status"] == "abandoned" and "no longer exists" in back.meta["abandoned"]
    assert files.process_alive(dict(rec.meta["process"], host="elsewhere")) is None


def test_reliability_orphan_temporary_files_of_dead_writers_are_removed_on_the_next_save(tmp_path):
    host = files._host()
    dead = tmp_path / f".old.samples.csv.gz.{host}.{dead_pid()}-0.x1y2.tmp"
    alive = (tmp_path
             / f".other.measurements.csv.{host}.{os.getpid()}-{files._start_ticks(os.getpid())}.a1b2.tmp")
    foreign = tmp_path / f".third.sizes.csv.otherhost.{dead_pid()}-0.c3d4.tmp"
    unnamed_old, unnamed_new = tmp_path / ".r.sizes.csv.k2j3h4.tmp", tmp_path / ".q.sizes.csv.a8b7c6.tmp"
    for p in (dead, alive, foreign, unnamed_old, unnamed_new):
        p.write_text("half")
    two_days_ago = time.time() - 2 * 86400
    os.utime(unnamed_old, (two_days_ago, two_days_ago))
    bench(["Ed25519"], folder=tmp_path, **FAST)
    assert not dead.exists() and not unnamed_old.exists()
    assert alive.exists() and foreign.exists() and unnamed_new.exists()


# ----- compare and merge: partial runs are marked -----
def test_reliability_partial_runs_are_refused_by_compare_and_marked(tmp_path, capsys):
    a, b = saved(tmp_path, "a"), saved(tmp_path, "b")
    meta = json.loads(Path(f"{b}.meta.json").read_text())
    meta["status"] = "interrupted"
    Path(f"{b}.meta.json").write_text(json.dumps(meta))
    with pytest.raises(ValueError, match="b is interrupted: it holds part of its plan only"
                                         ".*allow_partial=True"):
        compare_runs(a, b)
    assert set(compare_runs(a, b, allow_partial=True)["operation"]) == {"sign"}
    assert main(["compare", str(a), str(b), "--allow-partial"]) == 0
    assert "note: b is interrupted: a partial run" in capsys.readouterr().err
    merged = load_runs([a, b])
    assert dict(zip(merged["run_id"], merged["run_status"])) == {"a": "complete", "b": "interrupted"}


def test_reliability_unrelated_runs_have_no_measurement_in_common(tmp_path, capsys):
    a = saved(tmp_path, "a")
    other = bench(["AES-256-GCM"], operations=["encrypt"], budget_s=0.01, min_samples=3, progress=False,
                  folder=tmp_path, run_id="b")
    assert main(["compare", str(a), str(tmp_path / other.run_id), "--allow-different"]) == 1
    assert "runs A and B have no measurement in common" in capsys.readouterr().err


def test_reliability_samples_with_other_columns_are_saved_whole(tmp_path):
    """Samples are encoded once per add(); a batch with other columns makes the whole table encoded again."""
    with RunRecorder("t", folder=tmp_path) as rec:
        rec.add(samples=[{"run_id": rec.run_id, "algorithm": "A", "sample": i, "time_ns": 1.0 + i}
                         for i in range(3)])
        rec.checkpoint()
        rec.add(samples=[{"run_id": rec.run_id, "algorithm": "B", "sample": 0, "time_ns": 9.0, "extra": "x"}])
    back = load_run(tmp_path / rec.run_id)
    assert (list(back.samples["algorithm"]) == ["A", "A", "A", "B"]
            and list(back.samples["time_ns"]) == [1, 2, 3, 9])
    assert back.samples["extra"].isna().sum() == 3 and back.samples["extra"].iloc[-1] == "x"


# ----- the second probe -----
@pytest.mark.parametrize("files", ["drop", "text", "no sizes", "no checksum"])
def test_reliability_a_meta_file_without_checksums_is_refused_naming_it(tmp_path, files):
    base = saved(tmp_path)
    meta_path = Path(f"{base}.meta.json")
    meta = json.loads(meta_path.read_text())
    if files == "drop":
        del meta["files"]
    elif files == "text":
        meta["files"] = "ok"
    elif files == "no sizes":
        del meta["files"]["sizes.csv"]
    else:
        del meta["files"]["measurements.csv"]["sha256"]
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(CorruptRun) as info:
        load_run(base)
    assert (str(info.value).startswith(f"{meta_path} does not record its files' checksums")
            and "\n" not in str(info.value))
    assert len(load_run(base, verify=False).measurements) == 2  # read unchecked when asked


def test_reliability_an_abandoned_checkpoint_compares_with_allow_partial(tmp_path, capsys):
    rec = RunRecorder("t", {"budget_s": 1}, folder=tmp_path)
    rec.__enter__()
    rec._restore_signals()
    rec.add(measurements=[rec.row(algorithm="A", backend="b", operation="sign", kind="sig", verified=True,
                                  loops=1, message_bytes=100)],
            samples=[{"run_id": rec.run_id, "algorithm": "A", "backend": "b", "operation": "sign",
                      "message_bytes": 100, "sample": i, "loops": 1, "time_ns": 10.0 + i} for i in range(9)])
    rec.meta["process"] = dict(rec.meta["process"], pid=dead_pid())
    rec.checkpoint()
    path = str(tmp_path / rec.run_id)
    meta = load_run(path).meta
    assert meta["status"] == "abandoned" and meta["machine_id"] and meta["params_hash"] and "liboqs" in meta
    assert main(["compare", path, path, "--allow-partial"]) == 0
    err = capsys.readouterr().err
    assert "differ" not in err and f"note: {rec.run_id} is abandoned: a partial run" in err
    from pqlab.store.results import run_differences
    bare = type("R", (), {"meta": {"status": "abandoned"}})()
    assert run_differences(bare, bare) == []  # nothing recorded on either side is no difference


def test_reliability_out_in_an_unwritable_folder_names_the_out_option(tmp_path, capsys):
    assert main(["bench", "Ed25519", "--folder", str(tmp_path / "r"), "--out", "/proc/pqlab/x.csv",
                 "--no-progress"]) == 2
    line = one_error_line(capsys.readouterr().err)
    assert "folder of --out /proc/pqlab" in line and line.endswith("name an --out file in a writable folder")
    assert "--folder" not in line and "PQLAB_OUTPUT" not in line


@pytest.mark.parametrize("where", ["summary", "out"])
def test_reliability_a_signal_after_the_save_says_the_run_is_complete(tmp_path, monkeypatch, capsys, where):
    import signal

    from pqlab.core import files as files_module
    from pqlab.store.recorder import Interrupted
    from pqlab.store.results import Run

    def stop(*args, **kwargs):
        raise Interrupted(signal.SIGINT if where == "summary" else signal.SIGTERM)

    from pqlab.backends import algorithms
    from pqlab.checks import conformance

    # its record cached first: only the run is saved
    conformance.check(algorithms.get("Ed25519", "cryptography"))
    monkeypatch.setattr(*(Run, "summary", stop) if where == "summary"
                        else (files_module, "atomic_write", stop))
    out, folder = tmp_path / "out.csv", tmp_path / "runs"  # --out never goes into the results folder
    rc = main(["bench", "Ed25519", "--operations", "sign", "--budget", "0.01", "--min-samples", "3",
               "--run-id", "r", "--folder", str(folder), "--out", str(out), "--no-progress"])
    err = capsys.readouterr().err.strip().splitlines()
    name = "SIGINT" if where == "summary" else "SIGTERM"
    assert rc == 128 + getattr(signal, name)
    assert err[-1] == (f"interrupted by {name} after the run was saved: run r is complete in "
                       f"{folder / 'r.meta.json'} (status complete); --out {out} not written")
    assert load_run(folder / "r").meta["status"] == "complete" and not out.exists()


def test_reliability_merge_says_which_runs_are_partial(tmp_path, monkeypatch, capsys):
    from pqlab.core import paths

    monkeypatch.setattr(paths, "RAW", tmp_path / "raw")
    saved(tmp_path / "lab", "done")
    with pytest.raises(KeyboardInterrupt), RunRecorder("t", folder=tmp_path / "lab", run_id="cut") as rec:
        rec.add(measurements=[rec.row(operation="sign", kind="sig", verified=True)])
        raise KeyboardInterrupt
    assert main(["bundle", "--folder", str(tmp_path / "lab"), "--no-notebooks", "--out",
                 str(tmp_path / "b.tar.gz")]) == 0
    capsys.readouterr()
    assert main(["merge", str(tmp_path / "b.tar.gz"), "--folder", str(tmp_path / "store"), "--override"]) == 0
    out = capsys.readouterr().out
    assert "note: run cut is interrupted: a partial run (it holds part of its plan only)" in out
    assert "run done" not in out
