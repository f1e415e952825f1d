"""Issue #13, bad input is refused up front: in the API (bench, native_run, measure_memory, fidelity,
energy_run) and the CLI, with one line naming the problem and the fix, before the harness no-op is
measured.  `pytest -k reliability` runs these."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from pqlab import benchmark
from pqlab.app.cli import main
from pqlab.core import inputs, paths
from pqlab.core.errors import BadInput, PqlabWarning, UnknownName


@pytest.fixture
def no_measuring(monkeypatch):
    """Any measurement (or the start of a run) fails the test: refused input is refused before them."""
    def refuse(*args, **kwargs):
        raise AssertionError("measured although the input was refused")

    monkeypatch.setattr(benchmark, "_one_round", refuse)
    monkeypatch.setattr(benchmark, "RunRecorder", refuse)


@pytest.mark.parametrize("args, message", [
    (["Ed25519", "--operations", "frobnicate"], "unknown operation 'frobnicate'; close matches: none"),
    (["Ed25519", "--operations", "sing", "verify"], "unknown operation 'sing'; close matches: sign"),
    (["ML-DSA-44", "--operations", "encaps"],
     "ML-DSA-44@liboqs (sig: keygen, sign, verify) has no operation 'encaps'"),
    (["Ed25519", "ML-KEM-768", "--operations", "sign"], "ML-KEM-768@liboqs (kem: keygen, encaps, decaps) has "
                                                        "no operation 'sign'"),
    (["Ed25519", "--budget", "-1"], "argument --budget: the value must be a finite number > 0, got '-1'"),
    (["Ed25519", "--budget", "0"], "argument --budget: the value must be a finite number > 0, got '0'"),
    (["Ed25519", "--budget", "nan"], "argument --budget: the value must be a finite number > 0, got 'nan'"),
    (["Ed25519", "--budget", "inf"], "argument --budget: the value must be a finite number > 0, got 'inf'"),
    (["Ed25519", "--min-samples", "0"],
     "argument --min-samples: the value must be a whole number >= 1, got 0"),
    (["Ed25519", "--min-samples", "9", "--max-samples", "5"],
     "min_samples (9) must not exceed max_samples (5)"),
    (["Ed25519", "--message-bytes", "-1"], "a message size must be a whole number of bytes >= 0, got -1"),
    (["Ed25519", "--message-bytes", "1.5"], "argument --message-bytes: '1.5' is not a whole number"),
    (["ML-DSA-45"], "unknown algorithm 'ML-DSA-45'; close matches: ML-DSA-65, ML-DSA-44"),
    (["Ed25519", "--message-bytes", "268435457"], "message size 268435457 B is above the largest pqlab "
                                                  "measures, 268435455 B (256 MiB less one byte"),
])
def test_reliability_bad_bench_arguments_get_one_line_and_nothing_runs(tmp_path, capsys, no_measuring, args,
                                                                        message):
    rc = exit_code(["bench", *args, "--folder", str(tmp_path), "--no-progress"])
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert rc == 2 and len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith("error: ") and message in lines[0], lines[0]
    assert list(tmp_path.iterdir()) == []


def exit_code(argv) -> int:
    """main()'s exit code, argparse's usage errors included."""
    try:
        return main(argv)
    except SystemExit as exc:
        return exc.code


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(operations=["frobnicate"]), UnknownName, "unknown operation 'frobnicate'"),
    (dict(operations="encaps"), BadInput,
     "Ed25519@cryptography (sig: keygen, sign, verify) has no operation 'encaps'"),
    (dict(operations=[]), BadInput, "no operation given"),
    (dict(budget_s=-1), BadInput, "budget_s must be a finite number > 0, got -1"),
    (dict(budget_s=float("nan")), BadInput, "budget_s must be a finite number > 0, got nan"),
    (dict(min_samples=0), BadInput, "min_samples must be a whole number >= 1, got 0"),
    (dict(min_samples=2.5), BadInput, "min_samples must be a whole number >= 1, got 2.5"),
    (dict(min_samples=20, max_samples=10), BadInput, "min_samples (20) must not exceed max_samples (10)"),
    (dict(message_bytes=-1), BadInput, "a message size must be a whole number of bytes >= 0, got -1"),
    (dict(message_bytes=[100, "64"]), BadInput, "got '64'"),
    (dict(message_bytes=[]), BadInput, "no message size given"),
])
def test_reliability_bench_refuses_bad_input_before_measuring(tmp_path, no_measuring, kwargs, error, message):
    with pytest.raises(error) as info:
        benchmark.bench(["Ed25519"], **{"folder": tmp_path, "progress": False, **kwargs})
    assert message in str(info.value) and "\n" not in str(info.value)


def test_reliability_all_operations_and_duplicates(tmp_path):
    with pytest.warns(PqlabWarning,
                      match=r"Ed25519@cryptography was asked for more than once: measured once"):
        run = benchmark.bench(["Ed25519", "Ed25519@cryptography", ("Ed25519", "cryptography")],
                              operations="all", budget_s=0.01, min_samples=3, save=False, progress=False)
    assert list(run.measurements["operation"]) == ["noop", "keygen", "sign", "verify"]
    assert run.meta["plan"] == ["Ed25519@cryptography keygen", "Ed25519@cryptography sign 100",
                                "Ed25519@cryptography verify 100"]


def test_reliability_large_messages_warn_with_the_memory_they_need():
    with pytest.warns(PqlabWarning,
                      match=r"message size 80 MiB is above 64 MiB: measuring it can hold up to 480 MiB"):
        assert inputs.message_sizes([100, 80 << 20, 80 << 20]) == [100, 80 << 20, 80 << 20]
    assert inputs.message_sizes(100.0) == [100]  # a whole number, even as a float


def test_reliability_a_message_above_the_largest_is_refused_with_the_limit(tmp_path, no_measuring):
    """Above MAX_MESSAGE_BYTES a reproducible message cannot be drawn
    (random.randbytes raised OverflowError)."""
    from pqlab.backends.algorithms import random_message

    assert len(random_message(16, seed=1)) == 16  # the generator the limit protects
    with pytest.raises(OverflowError):
        random_message(inputs.MAX_MESSAGE_BYTES + 1, seed=1)
    for size in (inputs.MAX_MESSAGE_BYTES + 1, 1 << 40):
        with pytest.raises(BadInput, match=rf"message size {size} B is above the largest pqlab measures, "
                                           rf"{inputs.MAX_MESSAGE_BYTES} B .*: choose a smaller size"):
            benchmark.bench(["Ed25519"], ["sign"], size, folder=tmp_path, progress=False)
    assert list(tmp_path.iterdir()) == []


ENV_CHECK = "import pqlab.core.paths, pqlab.app.cli; print('imported')"


@pytest.mark.parametrize("variable, value, message", [
    ("PQLAB_PROFILE", "Full", "error: PQLAB_PROFILE='Full' is not a profile name: use full or quick "
                              "(lower case), or leave it unset (interactive)"),
    ("PQLAB_PROFILE", "../x", "error: PQLAB_PROFILE='../x' is not a profile name"),
    ("PQLAB_OUTPUT", "relative/out", "error: PQLAB_OUTPUT='relative/out' is a relative path, which would "
                                     "depend on the working directory: set it to an absolute path"),
])
def test_reliability_a_bad_environment_variable_is_one_line_not_an_import_crash(tmp_path, variable, value,
                                                                                 message):
    env = dict(os.environ, **{variable: value})
    imported = subprocess.run([sys.executable, "-c", ENV_CHECK], env=env, cwd=tmp_path, capture_output=True,
                              text=True, timeout=120)
    # before: ValueError
    assert imported.returncode == 0 and imported.stdout.strip() == "imported", imported.stderr
    api = subprocess.run([sys.executable, "-c", "from pqlab import paths; paths.RESULTS; paths.FIGURES"],
                         env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert "pqlab.core.errors.BadInput: " + message[len("error: "):] in api.stderr
    for argv in (["list"], ["bench", "Ed25519", "--operations", "sign", "--budget", "0.01", "--no-progress"]):
        proc = subprocess.run([sys.executable, "-m", "pqlab", *argv], env=env, cwd=tmp_path,
                              capture_output=True, text=True, timeout=120)
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode == 2 and len(lines) == 1 and lines[0].startswith(message), proc.stderr
    assert list(tmp_path.iterdir()) == []  # nothing written under the working directory


def test_reliability_an_empty_pqlab_output_counts_as_unset(tmp_path):
    code = "from pqlab import paths; print(paths.OUTPUT, paths.RESULTS)"
    for value, expected in (("", str(paths.ROOT)), (str(tmp_path / "out"), str(tmp_path / "out"))):
        proc = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, PQLAB_OUTPUT=value),
                              cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert proc.stdout.split() == [expected, f"{expected}/data/results"], proc.stderr



def test_reliability_fidelity_refuses_zero_blocks(capsys):
    from pqlab.runners import fidelity

    with pytest.raises(BadInput, match="blocks must be a whole number >= 1, got 0"):
        fidelity.measure_fidelity(blocks=0)
    with pytest.raises(BadInput, match="budget_s must be a finite number > 0"):
        fidelity.measure_fidelity(budget_s=float("inf"))
    assert exit_code(["fidelity", "--blocks", "0"]) == 2
    assert capsys.readouterr().err.strip() == ("error: argument --blocks: the value must be a whole number "
                                               ">= 1, got 0 (see `python -m pqlab fidelity --help`)")


def test_reliability_native_run_refuses_bad_input_before_running(tmp_path):
    from pqlab.runners import native

    with pytest.raises(BadInput, match="budget_s must be a finite number > 0, got 0"):
        native.native_run(["ML-DSA-44"], budget_s=0, folder=tmp_path, conformance={})
    with pytest.raises(BadInput, match="min_samples must be a whole number >= 1"):
        native.native_run(["ML-DSA-44"], min_samples=0, folder=tmp_path, conformance={})
    with pytest.raises(BadInput, match="pool must be a whole number >= 1"):
        native.native_run(["ML-DSA-44"], pool=0, folder=tmp_path, conformance={})
    with pytest.raises(UnknownName, match=r"unknown algorithm for the native runner \(default build\) "
                                          "'ML-DSA-45'; close matches: ML-DSA-65, ML-DSA-44"):
        native.native_run(["ML-DSA-44", "ML-DSA-45"], folder=tmp_path, conformance={})
    assert list(tmp_path.iterdir()) == []


def test_reliability_measure_memory_refuses_bad_input_before_any_worker(tmp_path):
    from pqlab.runners.memory import driver

    with pytest.raises(BadInput,
                       match=r"measure_memory measures signature schemes; ML-KEM-768@liboqs \(kem\) is not"):
        driver.measure_memory(["ML-DSA-44", "ML-KEM-768"], folder=tmp_path, progress=False)
    with pytest.raises(UnknownName, match="unknown operation 'sing'"):
        driver.measure_memory(["ML-DSA-44"], ["sing"], folder=tmp_path, progress=False)
    with pytest.raises(BadInput, match="jobs must be a whole number >= 1, got 0"):
        driver.measure_memory(["ML-DSA-44"], jobs=0, folder=tmp_path, progress=False)
    assert list(tmp_path.iterdir()) == []


def test_reliability_energy_run_refuses_bad_input_before_any_window(tmp_path):
    from pqlab.runners.energy import ModelledPower, energy_run

    plan = [{"algorithm": "Ed25519", "backend": "cryptography", "operation": "sign", "message_bytes": 100}]
    for kwargs, message in ((dict(repeats=0), "repeats must be a whole number >= 1"),
                            (dict(idle_s=-1), "idle_s must be a finite number >= 0, got -1")):
        with pytest.raises(BadInput, match=message):
            energy_run(plan, ModelledPower(2.0), folder=tmp_path, progress=False, **kwargs)
    with pytest.raises(BadInput, match="has no operation 'encaps'"):
        energy_run(plan + [dict(plan[0], operation="encaps")], ModelledPower(2.0), folder=tmp_path,
                   progress=False)
    assert list(tmp_path.iterdir()) == []


# ----- the second probe: names that become file names, compare's thresholds,
# list, the API's other entries -----
@pytest.mark.parametrize("args, message", [
    (["bench", "Ed25519", "--study", "a/b"],
     "study 'a/b' cannot be part of a file name: use 1 to 100 letters"),
    (["bench", "Ed25519", "--study", "../up"], "study '../up' cannot be part of a file name"),
    (["bench", "Ed25519", "--run-id", "x y"], "run id 'x y' cannot be part of a file name"),
    (["compare", "a", "b", "--alpha", "nan"], "alpha must be a finite number > 0, got nan"),
    (["compare", "a", "b", "--alpha", "-1"], "alpha must be a finite number > 0, got -1.0"),
    (["compare", "a", "b", "--alpha", "5"], "alpha must be a number between 0 and 1 (exclusive), got 5.0"),
    (["compare", "a", "b", "--min-factor", "0"], "min_factor must be a finite number > 0, got 0.0"),
    (["compare", "a", "b", "--min-factor", "nan"], "min_factor must be a finite number > 0, got nan"),
    (["compare", "a", "b", "--min-factor", "-3"], "min_factor must be a finite number > 0, got -3.0"),
    (["compare", "a", "b", "--min-factor", "0.5"],
     "min_factor must be a finite number >= 1 (the smallest factor"),
    (["list", "--backend", "liboq"],
     "unknown backend 'liboq'; close matches: liboqs, liboqs-python. backend is one of "),
    (["list", "--backend", "nope"], "unknown backend 'nope'; close matches: none. backend is one of "),
])
def test_reliability_bad_names_and_thresholds_get_one_line(tmp_path, capsys, no_measuring, args, message):
    rc = exit_code([*args, *(["--folder", str(tmp_path), "--no-progress"] if args[0] == "bench" else [])])
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert rc == 2 and len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith("error: ") and message in lines[0], lines[0]
    assert list(tmp_path.iterdir()) == []


def test_reliability_bench_takes_one_name_as_a_str_and_refuses_none(tmp_path, monkeypatch):
    run = benchmark.bench("Ed25519", operations=["sign"], budget_s=0.01, min_samples=3, progress=False,
                          save=False)
    assert set(run.measurements["algorithm"]) == {"noop", "Ed25519"}
    monkeypatch.setattr(benchmark, "RunRecorder", lambda *a, **k: pytest.fail("started although refused"))
    with pytest.raises(BadInput, match=r"^no algorithm given: name at least one \(e.g. ML-DSA-44\)$"):
        benchmark.bench([], progress=False, save=False)
    with pytest.raises(BadInput, match=r"^study 'a/b' cannot be part of a file name"):
        benchmark.bench(["Ed25519"], study="a/b", progress=False, save=False)


@pytest.mark.parametrize("call, message", [
    (lambda: __import__("pqlab.measure.timing").timing.measure(lambda: None, budget_s=float("nan")),
     "budget_s must be a finite number > 0, got nan"),
    (lambda: __import__("pqlab.measure.timing").timing.measure(lambda: None, max_samples=0),
     "max_samples must be a whole number >= 1, got 0"),
    (lambda: __import__("pqlab.runners.fidelity").fidelity.measure_noop(-1),
     "budget_s must be a finite number > 0, got -1"),
])
def test_reliability_measuring_entries_refuse_bad_budgets_and_counts(call, message):
    with pytest.raises(BadInput) as info:
        call()
    assert str(info.value) == message


def test_reliability_atlas_refuses_a_bad_budget_before_any_worker(tmp_path, monkeypatch):
    import subprocess

    from pqlab.studies import atlas

    monkeypatch.setattr(subprocess, "run", lambda *a, **k: pytest.fail("a worker was started"))
    monkeypatch.setattr(atlas.measure.shutil, "rmtree",
                        lambda *a, **k: pytest.fail("the staging folder was touched"))
    with pytest.raises(BadInput, match=r"^budget_s must be a finite number > 0, got nan$"):
        atlas.measure_local(["default"], ["ML-DSA-44"], message_bytes=100, budget_s=float("nan"),
                            min_samples=3, staging=tmp_path)
    with pytest.raises(BadInput, match=r"^min_samples must be a whole number >= 1, got 0$"):
        benchmark.bench_in_worker(["ML-DSA-44"], budget_s=0.1, min_samples=0, folder=tmp_path)
