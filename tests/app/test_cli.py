"""`python -m pqlab list | bench | compare | fidelity`: exit codes, output, files."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pqlab.app.cli import main
from pqlab.core import flags
from pqlab.runners import fidelity
from pqlab.store.results import load_run


def bench_into(folder, *extra) -> int:
    return main(["bench", "AES-256-GCM@pycryptodome", "--operations", "encrypt", "--budget", "0.02",
                 "--folder", str(folder), "--no-progress", *extra])


def only_run(folder) -> str:
    (meta,) = folder.glob("*.meta.json")
    return meta.name[: -len(".meta.json")]


def test_list_prints_names(capsys):
    assert main(["list"]) == 0
    out, err = capsys.readouterr()
    for name in ("ML-DSA-44", "ML-KEM-768", "SPHINCS+-SHAKE-128f-simple", "AES-256-GCM", "RSA-2048-PSS",
                 "Ed25519"):
        assert name in out
    assert "algorithm/backend pairs" in err


def test_list_filters_by_kind_and_backend(capsys):
    assert main(["list", "--kind", "kem", "--backend", "liboqs"]) == 0
    out = capsys.readouterr().out
    lines = out.strip().splitlines()[1:]
    assert len(lines) == 29 and "ML-KEM-768" in out and "ML-DSA-44" not in out
    assert all(" kem " in f" {line} " and "liboqs" in line for line in lines)


def test_module_entry_point_lists():
    proc = subprocess.run([sys.executable, "-m", "pqlab", "list", "--kind", "cipher"], capture_output=True,
                          text=True, timeout=60)
    assert (proc.returncode == 0 and "ChaCha20-Poly1305" in proc.stdout
            and proc.stdout.count("AES-256-GCM") >= 2)


def test_bench_writes_a_run_into_folder(tmp_path, capsys):
    assert bench_into(tmp_path, "--message-bytes", "32", "--study", "cli-test") == 0
    out, err = capsys.readouterr()
    run = load_run(tmp_path / only_run(tmp_path))
    m = run.measurements
    assert list(m["operation"]) == ["noop", "encrypt"]
    row = m.iloc[1]
    assert (row["algorithm"], row["backend"], row["message_bytes"], row["study"]) == (
        "AES-256-GCM", "pycryptodome", 32, "cli-test")
    assert bool(row["verified"]) and row["samples"] >= 5
    assert "AES-256-GCM" in out and "saved run" in err and run.run_id in err


def test_bench_out_writes_the_measurements_csv(tmp_path):
    csv = tmp_path / "copy" / "m.csv"
    assert bench_into(tmp_path, "--out", str(csv)) == 0
    assert list(pd.read_csv(csv)["operation"]) == ["noop", "encrypt"]


def test_bench_unknown_algorithm_exits_2_with_close_matches(tmp_path, capsys):
    assert main(["bench", "ML-DSA-45", "--budget", "0.01", "--folder", str(tmp_path), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: unknown algorithm 'ML-DSA-45'")
    assert "ML-DSA-44" in err and "ML-DSA-65" in err
    assert "Traceback" not in err and not err.startswith("error: \"")  # the message, not KeyError's repr
    assert list(tmp_path.iterdir()) == []  # nothing measured, nothing written


def test_bench_unknown_backend_exits_2(capsys):
    assert main(["bench", "ML-DSA-44@pycryptodome", "--budget", "0.01", "--no-progress"]) == 2
    assert "liboqs" in capsys.readouterr().err


def test_bench_exit_code_1_when_an_operation_fails(tmp_path, monkeypatch):
    from pqlab.backends import pycryptodome
    from pqlab.checks import conformance

    # the broken adapter's conformance record goes to a cache of its own: in the real one it would stand for
    # the real PyCryptodome (the key names the build, not this patch) and make every later bench refuse it
    monkeypatch.setattr(conformance, "cache_folder", lambda: tmp_path / "conformance")
    monkeypatch.setattr(pycryptodome.DomeCipher, "decryptor", lambda self, key: (lambda ct: b"wrong"))
    assert bench_into(tmp_path / "runs", "--isolation", "in-process", "--allow-nonconforming") == 1
    m = load_run(tmp_path / "runs" / only_run(tmp_path / "runs")).measurements
    assert m.iloc[1]["flags"].startswith("failed:verification")


def test_compare_two_runs(tmp_path, capsys):
    a, b = tmp_path / "a", tmp_path / "b"
    assert bench_into(a) == 0 and bench_into(b) == 0
    capsys.readouterr()
    assert main(["compare", str(a / only_run(a)), str(b / only_run(b))]) == 0
    out = capsys.readouterr().out
    assert "b/a [95% CI]" in out and "verdict" in out
    assert "AES-256-GCM" in out and "noop" not in out  # the harness row is not a measurement in common


def test_compare_missing_run_exits_2(tmp_path, capsys):
    assert main(["compare", str(tmp_path / "nope"), str(tmp_path / "nope2")]) == 2
    assert "no run 'nope'" in capsys.readouterr().err


def test_no_command_is_a_usage_error():
    with pytest.raises(SystemExit) as info:
        main([])
    assert info.value.code == 2


def test_fidelity_runs_and_prints_the_table(capsys, monkeypatch):
    """A smoke test of `fidelity` with a tiny budget on one fast operation (the numbers are not judged)."""
    monkeypatch.setattr(fidelity, "DEFAULT_OPERATIONS", (("ML-KEM-768", "encaps"),))
    assert main(["fidelity", "--budget", "0.08", "--blocks", "2"]) == 0
    out = capsys.readouterr().out
    assert "ML-KEM-768 encaps" in out and "pqlab/native" in out and "liboqs-python/native" in out
    assert "harness overhead" in out and "C loop" in out


def test_fidelity_measures_every_arm_in_fresh_processes_against_native():
    df = fidelity.measure_fidelity((("ML-DSA-44", "verify"),), budget_s=0.09, blocks=3)
    row = df.iloc[0]
    assert all(row[f"{arm}_samples"] > 0 for arm in fidelity.ARMS)
    for arm in fidelity.ARMS[:-1]:  # the same operation of the same build: roughly the same time
        assert (0.3 < row[f"{arm}_ratio"] < 3
                and row[f"{arm}_low"] <= row[f"{arm}_paired"] <= row[f"{arm}_high"])
    assert row["within_5pct"] == (True if row["pqlab_high"] <= 1.05 else False if row["pqlab_low"] > 1.05
                                  else None)
    two = fidelity.measure_fidelity((("ML-DSA-44", "verify"),), budget_s=0.06, blocks=2).iloc[0]
    # two blocks give no interval: no verdict
    assert np.isnan(two["pqlab_low"]) and two["within_5pct"] is None


def test_lab_passes_allow_root_only_as_root():
    from pqlab.app.lab import lab_command

    as_root = lab_command("127.0.0.1", 8890, "t0k", euid=0, folder=Path("/x/y"))
    as_user = lab_command("127.0.0.1", 8890, "t0k", euid=1000, folder=Path("/x/y"))
    assert "--allow-root" in as_root and "--allow-root" not in as_user
    assert as_root[1] == "lab" and "--port=8890" in as_root and "--ServerApp.port_retries=0" in as_root
    assert "--IdentityProvider.token=t0k" in as_root and "--notebook-dir=/x/y" in as_root


def test_lab_opens_the_checkout_with_a_home_for_own_notebooks_or_lab_dir(tmp_path, monkeypatch):
    from pqlab.app import lab as cli
    from pqlab.core import paths
    from pqlab.core.errors import BadInput

    monkeypatch.setattr(paths, "ROOT", tmp_path)
    assert cli.lab_dir("") == tmp_path and (tmp_path / cli.MY_NOTEBOOKS).is_dir()
    assert cli.lab_dir(str(tmp_path / cli.MY_NOTEBOOKS)) == tmp_path / cli.MY_NOTEBOOKS
    with pytest.raises(BadInput, match="LAB_DIR='/no/such' is not a folder"):
        cli.lab_dir("/no/such")


def test_my_notebooks_are_ignored_by_git():
    from pqlab.app import lab as cli
    from pqlab.core import paths

    probe = f"{cli.MY_NOTEBOOKS}/question.ipynb"
    assert subprocess.run(["git", "-C", str(paths.ROOT), "check-ignore", "-q", probe]).returncode == 0


def test_lab_kernels_find_this_venv_first_on_path():
    from pqlab.app.lab import lab_environment

    env = lab_environment({"PATH": "/usr/bin:/bin"})
    first = env["PATH"].split(os.pathsep)[0]
    assert Path(first, "python").exists() and Path(first) == Path(sys.executable).parent
    assert env["PATH"].endswith("/usr/bin:/bin")
    out = subprocess.run(["python", "-m", "pqlab", "list", "--kind", "kem"], env=env, capture_output=True,
                         text=True)
    assert out.returncode == 0 and "ML-KEM-768" in out.stdout


@pytest.mark.counter
def test_bench_with_an_unavailable_forced_counter_stops_before_measuring(tmp_path, capsys, monkeypatch):
    from pqlab.measure import cycles

    monkeypatch.setattr(cycles, "_opened", {})
    monkeypatch.setattr(cycles, "_perf_event_open", lambda: (_ for _ in ()).throw(
        OSError(2, "perf_event_open: No such file or directory [ENOENT] (no PMU: typical of virtual "
                   "machines)")))
    monkeypatch.setenv("PQLAB_COUNTER", "perf")
    assert bench_into(tmp_path) == 2
    err = capsys.readouterr().err
    assert err == ("error: PQLAB_COUNTER=perf: core cycles are unavailable here: perf_event_open: No such "
                   "file or directory [ENOENT] (no PMU: typical of virtual machines); use PQLAB_COUNTER=tsc "
                   "or auto\n")
    assert list(tmp_path.iterdir()) == []  # nothing measured, nothing written


@pytest.mark.counter
def test_bench_records_the_counter_and_the_precision(tmp_path):
    from pqlab.measure import cycles

    assert bench_into(tmp_path, "--target-rel-ci", "0.5") == 0
    run = load_run(tmp_path / only_run(tmp_path))
    row = run.measurements.iloc[1]
    used = run.meta["counter"]
    assert row["cycles_source"] == used["label"] == cycles.counter().label
    # the target is met, or the row says it ran out of budget first (a loaded machine may not get there)
    assert row["target_rel_ci"] == 0.5 and row["time_ns_rel_ci"] > 0
    assert row["time_ns_rel_ci"] <= 0.5 or flags.has(row["flags"], "precision-not-reached")
    assert used["read_cost_ns"] is None if used["label"] == "none" else used["read_cost_ns"] > 0
    assert {"perf", "tsc", "perf_event_paranoid", "hypervisor"} <= set(run.meta["counters"])
    # x86 CPUs list the TSC flags (present or not); other CPUs have none of them
    assert (set(run.meta["counters"]["tsc"]["flags"])
            in ({"constant_tsc", "nonstop_tsc", "tsc_known_freq"}, set()))


def test_machine_prints_the_counter_situation():
    proc = subprocess.run([sys.executable, "-m", "pqlab", "machine"], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    for part in ("core cycles", "TSC", "perf_event_paranoid", "in use", "hypervisor"):
        assert part in out
    assert len(out.splitlines()) <= 25  # one screen
