"""Issue #46, round 3 of the bundles, at the command line: what it prints from data never drives the terminal
(D12), every count has an upper bound (D14), `bench --run-id` refuses an id a merged machine holds (D10), an
interrupted merge says what it left (D9), and `bundle` writes under PQLAB_OUTPUT."""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest
from test_results import make_run

from pqlab.app import cli
from pqlab.app.cli import main
from pqlab.core import inputs, paths
from pqlab.store.recorder import Interrupted

HOSTILE = "\x1b]0;pwned\x07\x1b[2J"


def error_lines(capsys) -> list[str]:
    return capsys.readouterr().err.splitlines()


# --------------------------------------------------------------------------- D12: terminal escapes


def test_merge_shows_a_hostile_bundle_name_as_visible_text(tmp_path, capsys):
    name = tmp_path / f"b{HOSTILE}.tar.gz"
    assert main(["merge", str(name)]) == 2
    out, err = capsys.readouterr()
    assert "\x1b" not in out + err and "\x07" not in out + err
    (line,) = err.splitlines()
    assert line.startswith("error: ") and "b<U+001B>]0;pwned<U+0007><U+001B>[2J.tar.gz" in line


def test_merge_from_the_shell_prints_no_escape_byte(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "pqlab", "merge", str(tmp_path / f"b{HOSTILE}.tar.gz")],
                          capture_output=True, timeout=120)
    assert proc.returncode == 2 and b"\x1b" not in proc.stdout + proc.stderr
    assert b"<U+001B>" in proc.stderr


def test_warnings_and_errors_from_data_are_one_visible_line(capsys):
    cli._show_warning(f"run x{HOSTILE}\nfake: line", UserWarning, "f.py", 1)
    (line,) = error_lines(capsys)
    assert line == "warning: run x<U+001B>]0;pwned<U+0007><U+001B>[2J<U+000A>fake: line"
    assert main(["compare", f"a{HOSTILE}", "b"]) == 2
    out, err = capsys.readouterr()
    assert "\x1b" not in out + err and "<U+001B>" in err


def test_a_table_keeps_its_lines_and_shows_what_is_in_them(capsys):
    cli._say(f"a\tb\nc{HOSTILE}", lines=True)
    assert capsys.readouterr().out == "a<U+0009>b\nc<U+001B>]0;pwned<U+0007><U+001B>[2J\n"


# --------------------------------------------------------------------------- D14: every count has a bound


def test_endless_rounds_are_refused_at_once():
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "pqlab", "bench", "ML-KEM-512", "--rounds",
                           "99999999999999999999"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and time.monotonic() - start < 60
    (line,) = proc.stderr.splitlines()
    assert (f"--rounds must be a whole number from {inputs.MIN_ROUNDS} to {inputs.MAX_ROUND_COUNT}, "
            "got 99999999999999999999") in line


@pytest.mark.parametrize("argv, bound", [
    (["bench", "Ed25519", "--max-rounds"], f"--max-rounds must be a whole number from 1 to "
                                          f"{inputs.MAX_ROUND_COUNT}"),
    (["bench", "Ed25519", "--min-samples"], f"argument --min-samples: the value must be a whole number "
                                           f"from 1 to {inputs.MAX_SAMPLES}"),
    (["bench", "Ed25519", "--max-samples"], f"argument --max-samples: the value must be a whole number "
                                           f"from 1 to {inputs.MAX_SAMPLES}"),
    (["fidelity", "--blocks"], f"argument --blocks: the value must be a whole number from 1 to "
                               f"{inputs.MAX_ROUND_COUNT}"),
    (["calibrate", "Ed25519", "--repeats"], f"to {inputs.MAX_REPEATS}, got"),
    (["calibrate", "--screen"], f"to {inputs.MAX_SCREEN_BLOCKS}, got"),
    (["calibrate", "Ed25519", "--rounds"], f"to {inputs.MAX_ROUND_COUNT}, got"),
    (["lab", "--port"], "--port must be a whole number from 1 to 65535"),
])
def test_every_count_option_has_an_upper_bound(argv, bound, capsys):
    with pytest.raises(SystemExit) as stopped:
        main([*argv, "99999999999999999999"])
    assert stopped.value.code == 2
    (line,) = error_lines(capsys)
    assert bound in line and line.endswith("got 99999999999999999999 (see `python -m pqlab " + argv[0]
                                           + " --help`)")


# --------------------------------------------------------------------------- D10: bench --run-id


def test_bench_refuses_a_run_id_a_merged_machine_holds(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    store = tmp_path / "store"
    held = store / "machines" / "m1"
    held.mkdir(parents=True)
    (held / "seq1.meta.json").write_text(json.dumps({"run_id": "seq1"}))
    assert main(["bench", "AES-256-GCM@pycryptodome", "--operations", "encrypt", "--budget", "0.02",
                 "--run-id", "seq1", "--folder", str(store), "--no-progress"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.splitlines() == [
        f"error: run id 'seq1' exists already in {held}: choose a new one (CLI: another --run-id; or leave "
        "it out: pqlab makes a unique one)"]
    assert [p.name for p in store.iterdir()] == ["machines"]  # nothing measured, nothing saved


# --------------------------------------------------------------------------- D9: an interrupted merge


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_an_interrupted_merge_says_nothing_of_the_bundle_is_visible(signum, capsys, monkeypatch):
    def stopped(*args, **kwargs):
        raise Interrupted(signum)

    monkeypatch.setattr(cli, "merge_bundles", stopped)
    assert main(["merge", "x.tar.gz"]) == 128 + signum
    out, err = capsys.readouterr()
    assert out == "" and err.splitlines() == [
        f"merge interrupted by {signal.Signals(signum).name}: nothing of the bundle being imported is "
        "visible in the store yet; run the same merge again to complete it"]


# --------------------------------------------------------------------------- bundle under PQLAB_OUTPUT


def test_bundle_without_out_writes_under_the_output_tree(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PQLAB_MACHINE_ID", "lab-a")
    monkeypatch.setenv("PQLAB_HOST_KEY", str(tmp_path / "host.key"))
    monkeypatch.delenv("PQLAB_PROFILE", raising=False)
    monkeypatch.setattr(paths, "RAW", tmp_path / "raw")
    monkeypatch.setattr(paths, "BUILD", tmp_path / "checkout" / "build")  # the checkout's build/
    monkeypatch.setattr(paths, "OUTPUT", tmp_path / "output")  # PQLAB_OUTPUT
    folder = tmp_path / "results"
    make_run("r1").save(folder)
    assert main(["bundle", "--folder", str(folder), "--no-notebooks"]) == 0
    (printed,) = capsys.readouterr().out.splitlines()
    (made,) = (tmp_path / "output" / "build" / "bundles").glob("pqlab-lab-a-all-*.tar.gz")
    assert printed == str(made) and not (tmp_path / "checkout").exists()
