"""Issue #27, `--out FILE` asks before it destroys anything: `bench`, `calibrate` and `bundle` refuse an
existing file unless --force, a symbolic link always (a link is never written through), and any file of the
results store (pqlab.core.paths.RESULTS, the --folder of the command, and their subfolders), each in one line
before anything runs.  `pytest -k reliability` runs these."""
from __future__ import annotations

import pytest

from pqlab import benchmark
from pqlab.app.cli import main
from pqlab.core import paths
from pqlab.store.recorder import RunRecorder


@pytest.fixture
def store(tmp_path, monkeypatch):
    """The results store under tmp_path, with one run in it (r1), and no measuring allowed."""
    results = tmp_path / "data" / "results"
    monkeypatch.setattr(paths, "RESULTS", results)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    with RunRecorder("t", folder=results, run_id="r1", liboqs=False) as rec:
        rec.add(measurements=[rec.row(algorithm="A", operation="sign")])

    def refuse(*args, **kwargs):
        raise AssertionError("measured although --out was refused")

    monkeypatch.setattr(benchmark, "_one_round", refuse)
    monkeypatch.setattr(benchmark, "RunRecorder", refuse)
    return results


def error_line(capsys) -> str:
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err, err
    return lines[0]


BENCH = ["bench", "Ed25519", "--operations", "sign", "--budget", "0.01", "--no-progress"]
BUNDLE = ["bundle"]


@pytest.mark.parametrize("command", [BENCH, BUNDLE, ["calibrate", "--runs", "r1"]],
                         ids=["bench", "bundle", "calibrate"])
def test_reliability_out_refuses_an_existing_file_without_force(store, tmp_path, capsys, command):
    mine = tmp_path / "notes.txt"
    mine.write_text("my notes\n")
    assert main([*command, "--out", str(mine)]) == 2
    assert error_line(capsys) == (f"error: --out {mine} exists already: pass --force to replace it, "
                                  "or name another file")
    assert mine.read_text() == "my notes\n"


@pytest.mark.parametrize("command", [BENCH, BUNDLE], ids=["bench", "bundle"])
@pytest.mark.parametrize("force", [[], ["--force"]], ids=["", "force"])
def test_reliability_out_never_writes_through_a_symbolic_link(store, tmp_path, capsys, command, force):
    target = tmp_path / "precious.txt"
    target.write_text("keep\n")
    link = tmp_path / "out.csv"
    link.symlink_to(target)
    assert main([*command, "--out", str(link), *force]) == 2
    assert error_line(capsys).startswith(f"error: --out {link} is a symbolic link: pqlab never writes "
                                         "through one")
    assert link.is_symlink() and target.read_text() == "keep\n"


@pytest.mark.parametrize("command", [BENCH, BUNDLE], ids=["bench", "bundle"])
@pytest.mark.parametrize("name", ["r1.meta.json", "machines/m/new.csv", "new.csv"])
def test_reliability_out_never_writes_into_the_results_store(store, capsys, command, name):
    meta = (store / "r1.meta.json").read_bytes()
    out = store / name
    assert main([*command, "--out", str(out), "--force"]) == 2
    assert error_line(capsys) == (f"error: --out {out} is inside the results folder {store.resolve()}, whose "
                                  "files belong to its runs: write it somewhere else")
    assert (store / "r1.meta.json").read_bytes() == meta and not (store / "new.csv").exists()


def test_reliability_out_never_writes_into_the_folder_of_the_command(store, tmp_path, capsys):
    other = tmp_path / "other-results"
    other.mkdir()
    assert main([*BENCH, "--folder", str(other), "--out", str(other / "x.csv")]) == 2
    assert f"is inside the results folder {other.resolve()}" in error_line(capsys)
    assert list(other.iterdir()) == []


def test_reliability_out_with_force_replaces_a_plain_file(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    out = tmp_path / "m.csv"
    out.write_text("old\n")
    assert main([*BENCH, "--min-samples", "3", "--folder", str(tmp_path / "results"), "--out", str(out),
                 "--force"]) == 0
    assert "Ed25519" in out.read_text() and "old" not in out.read_text()
    assert f"measurements also written to {out}" in capsys.readouterr().err


def test_reliability_a_file_that_appears_meanwhile_is_not_replaced(tmp_path):
    from pathlib import Path

    from pqlab.core.files import atomic_write

    out = tmp_path / "late.csv"

    def write(tmp):  # another writer makes the file while ours is being written
        Path(tmp).write_text("mine\n")
        out.write_text("theirs\n")

    with pytest.raises(FileExistsError):
        atomic_write(out, write, replace=False)
    assert out.read_text() == "theirs\n" and [p.name for p in tmp_path.iterdir()] == ["late.csv"]
    atomic_write(tmp_path / "new.csv", lambda tmp: Path(tmp).write_text("mine\n"), replace=False)
    assert (tmp_path / "new.csv").read_text() == "mine\n"
