"""pqlab.runners.memory: massif parsing, the one-operation worker and its files, massif runs, the fallback."""
from __future__ import annotations

import json

import pandas as pd
import pytest

import pqlab.backends.algorithms as A
from pqlab.core import flags as pqflags
from pqlab.runners.memory import cache, driver, massif, worker
from pqlab.store.results import load_run
from pqlab.studies import memory_footprint

HAS_VALGRIND = driver.find_valgrind()["available"]


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    """Every test here gets an empty memory cache of its own (never the user's)."""
    monkeypatch.setenv("PQLAB_CACHE", str(tmp_path / "memory-cache"))
    monkeypatch.delenv("PQLAB_FRESH", raising=False)
needs_valgrind = pytest.mark.skipif(not HAS_VALGRIND, reason="valgrind is not installed")
M = driver.HEAP_MARKER_BYTES

# A massif file as valgrind 3.19 writes it (--time-unit=B): start-up, the marker's allocation (a jump of
# the byte clock by the marker), the operation's peak, the marker's release.
SYNTHETIC = f"""desc: --stacks=no --time-unit=B --peak-inaccuracy=0
cmd: python -c worker
time_unit: B
#-----------
snapshot=0
#-----------
time=0
mem_heap_B=0
mem_heap_extra_B=0
mem_stacks_B=0
heap_tree=empty
#-----------
snapshot=1
#-----------
time=5000000
mem_heap_B=4000000
mem_heap_extra_B=90000
mem_stacks_B=0
heap_tree=empty
#-----------
snapshot=2
#-----------
time={5000100 + M}
mem_heap_B={4000100 + M}
mem_heap_extra_B=90016
mem_stacks_B=0
heap_tree=empty
#-----------
snapshot=3
#-----------
time={5010000 + M}
mem_heap_B={4009000 + M}
mem_heap_extra_B=90100
mem_stacks_B=0
heap_tree=peak
n2: {4009000 + M} (heap allocation functions) malloc/new/new[], --alloc-fns, etc.
 n0: {M} 0x595CF79: ??? (in /usr/lib/x86_64-linux-gnu/libffi.so.8.1.2)
 n0: 4009000 in 120 places, all below massif's threshold (1.00%)
#-----------
snapshot=4
#-----------
time={5020000 + 2 * M}
mem_heap_B=4000200
mem_heap_extra_B=90020
mem_stacks_B=18000
heap_tree=empty
"""


def test_parse_massif_reads_snapshots_and_peaks(tmp_path):
    path = tmp_path / "massif.out"
    path.write_text(SYNTHETIC)
    prof = massif.parse_massif(path)
    assert prof.time_unit == "B" and prof.command == "python -c worker"
    assert [s.index for s in prof.snapshots] == [0, 1, 2, 3, 4]
    assert prof.peak_heap == 4009000 + M and prof.peak_heap_extra == 90100
    assert prof.peak_stacks == 18000
    assert prof.peak.index == 3 and prof.peak.total == 4009000 + M + 90100
    start = prof.window_start(M)  # the snapshot at the marker's allocation: the level before the operation
    assert start.index == 2 and start.heap - M == 4000100
    assert massif.parse_massif(SYNTHETIC).peak_heap == prof.peak_heap  # text works as well as a path


def test_window_start_refuses_a_snapshot_taken_later_than_the_marker():
    # clock did not jump: not the marker's
    late = SYNTHETIC.replace(f"time={5000100 + M}\n", "time=5000100\n")
    assert massif.parse_massif(late).window_start(M) is None
    assert massif.parse_massif(SYNTHETIC.replace("time_unit: B", "time_unit: i")).window_start(M) is None


def _heap_run(text: str) -> driver.WorkerRun:
    return driver.WorkerRun("heap", {}, 1.0, profile=massif.parse_massif(text))


def test_heap_figures_subtract_the_level_and_the_empty_window():
    # the window alone: 50 B
    empty = SYNTHETIC.replace(f"mem_heap_B={4009000 + M}", f"mem_heap_B={4000150 + M}")
    fig, flags = driver.heap_figures(_heap_run(SYNTHETIC), _heap_run(empty))
    assert flags == []
    assert fig["peak_heap_raw_bytes"] == 4009000
    assert fig["peak_heap_baseline_bytes"] == 4000100 + 50
    assert fig["peak_heap_bytes"] == 4009000 - 4000100 - 50
    outside = SYNTHETIC.replace(str(4009000 + M), "4009000").replace(str(4000100 + M), "4000100")
    assert driver.heap_figures(_heap_run(outside), _heap_run(empty)) == ({}, ["peak-outside-window:heap"])
    assert driver.heap_figures(None, _heap_run(empty))[1][0].startswith("failed:massif heap")


# ----- the worker and its files -----
@pytest.fixture(scope="module")
def ml_dsa_inputs(tmp_path_factory):
    algo = A.get("ML-DSA-44", "liboqs")
    message = A.random_message(32, 0)
    keys = algo.generate()
    folder = worker.write_inputs(tmp_path_factory.mktemp("inputs"), algo.name, algo.backend, message, keys,
                                 algo.signer(keys[1])(message))
    return algo, folder


@pytest.mark.parametrize("name", ["Ed25519", "ECDSA-P256", "RSA-2048-PSS", "ML-DSA-44",
                                  "ECDSA-P256@pycryptodome"])
def test_keys_and_inputs_round_trip_through_files(tmp_path, name):
    algo = A.resolve([name])[0]
    message = A.random_message(100, 1)
    keys = algo.generate()
    signature = algo.signer(keys[1])(message)
    worker.write_inputs(tmp_path, algo.name, algo.backend, message, keys, signature)
    back = worker.read_inputs(tmp_path)
    assert back["message"] == message and back["signature"] == signature and back["message_bytes"] == 100
    assert algo.verifier(back["pk"])(message, signature) is True  # the public key survived
    assert algo.verifier(keys[0])(message, algo.signer(back["sk"])(message)) is True  # and the secret key


def test_worker_does_one_operation_and_the_parent_checks_it(ml_dsa_inputs, tmp_path):
    algo, folder = ml_dsa_inputs
    inputs = worker.read_inputs(folder)
    for op in worker.SIGNATURE_OPERATIONS:
        out = tmp_path / op
        report = worker.worker(algo.name, algo.backend, op, folder, out, trace=True, warmup=1)
        assert json.loads((out / "result.json").read_text()) == report
        assert report["tracemalloc_peak_bytes"] > 0 and report["max_rss_bytes"] > 0
        run = driver.WorkerRun("plain", report, 0.0, output=out)
        assert driver.check_output(algo, op, inputs, run) == ""
    (tmp_path / "sign" / "out_signature.bin").write_bytes(b"\x00" * 2420)  # a wrong output is caught
    bad = driver.WorkerRun("plain", {}, 0.0, output=tmp_path / "sign")
    assert driver.check_output(algo, "sign", inputs, bad) == "signature does not verify"


def test_baseline_keeps_the_prepared_call_but_leaves_the_operation_out(ml_dsa_inputs, tmp_path):
    algo, folder = ml_dsa_inputs
    report = worker.worker(algo.name, algo.backend, "sign", folder, tmp_path, baseline=True)
    assert "signature_bytes" not in report and not (tmp_path / "out_signature.bin").exists()


def test_worker_process_runs_without_importing_pqlab_init(ml_dsa_inputs, tmp_path):
    algo, folder = ml_dsa_inputs
    run = driver.run_worker(algo.name, algo.backend, "verify", folder, "plain", work=tmp_path)
    assert run.error == "" and run.report["verdict"] is True and run.report["warmup"] == 1
    assert driver.worker_command()[1:] == ["-m", "pqlab.runners.memory.worker"]



def test_a_worker_loads_only_the_library_of_its_backend(tmp_path):
    """Under valgrind every import costs: a worker registers its own backend only, so a cryptography run
    loads neither liboqs nor pqcrypto, and a liboqs run loads no OpenSSL binding."""
    for name, backend, absent in (("Ed25519", "cryptography", ("liboqs", "/oqs/", "pqcrypto")),
                                  ("ML-DSA-44", "liboqs", ("cryptography", "pqcrypto", "Crypto"))):
        algo = A.get(name, backend)
        message = A.random_message(32, 0)
        keys = algo.generate()
        folder = worker.write_inputs(tmp_path / backend, name, backend, message, keys,
                                     algo.signer(keys[1])(message))
        run = driver.run_worker(name, backend, "verify", folder, "plain", work=tmp_path / backend / "work")
        assert run.error == "" and run.report["verdict"] is True
        loaded = [f for f in run.report["loaded_files"] if any(a in f for a in absent)]
        assert not loaded, f"a {backend} worker loaded {loaded[:3]}"


# ----- massif -----
@needs_valgrind
def test_ml_dsa_sign_under_massif(ml_dsa_inputs, tmp_path, monkeypatch):
    algo, folder = ml_dsa_inputs
    monkeypatch.setitem(driver.RUNS, "heap-noop-warm", ("heap", True, 1))
    runs = {k: driver.run_worker(algo.name, algo.backend, "sign", folder, k, work=tmp_path)
            for k in ("heap", "stack", "heap-baseline", "stack-baseline", "heap-noop-warm")}
    assert all(r.error == "" for r in runs.values()), {k: r.error for k, r in runs.items()}
    heap, hflags = driver.heap_figures(runs["heap"], runs["heap-baseline"])
    stack, sflags = driver.stack_figures(runs["stack"], runs["stack-baseline"])
    assert hflags == [] and sflags == []
    # the returned signature (the lean path writes into a buffer made with the signer) and liboqs's
    # own allocations
    assert 2420 <= heap["peak_heap_bytes"] < 64 * 1024
    assert 10_000 < stack["peak_stack_bytes"] < 1 << 20  # ML-DSA keeps its matrices on the stack
    assert stack["peak_stack_raw_bytes"] > stack["peak_stack_baseline_bytes"] > 0
    # the level read in the run equals the peak of a worker that skips the operation (warm, same files)
    noop = runs["heap-noop-warm"].profile.peak_heap - M
    assert abs(heap["peak_heap_baseline_bytes"] - noop) <= 512
    assert driver.check_output(algo, "sign", worker.read_inputs(folder), runs["heap"]) == ""


def _fresh_massif_run(job_run: driver.WorkerRun) -> driver.WorkerRun:
    """The job `job_run` ran, in a worker started afresh under massif (the method before worker servers)."""
    import subprocess

    out = job_run.output
    mode = driver.RUNS[job_run.kind][0]
    before = set(out.glob("massif.*.out"))
    subprocess.run(driver.massif_command(out, mode) + driver.worker_command() + ["--job", "job.json"],
                   env=driver.worker_environment(), cwd=out, check=True, capture_output=True)
    (profile,) = set(out.glob("massif.*.out")) - before
    return driver.WorkerRun(job_run.kind, json.loads((out / "result.json").read_text()), 0.0,
                            profile=massif.parse_massif(profile), output=out)


@needs_valgrind
@pytest.mark.parametrize("operation", ["sign", "verify"])
def test_a_worker_forked_by_a_server_measures_what_a_fresh_worker_does(ml_dsa_inputs, tmp_path, operation):
    """Massif runs are forked by a worker server; the heap, native heap and stack figures are those of a
    worker process started afresh: the heap byte for byte (its allocator overhead aside), the stack to its
    alignment (ML-DSA keeps 32-byte aligned arrays on the stack, so where the window starts can move its peak
    by 16 bytes per frame that aligns them)."""
    algo, folder = ml_dsa_inputs
    assert driver.compile_bytecode()  # as measure_memory does: both kinds of worker load the same bytecode
    servers = driver.WorkerServers(tmp_path / "servers")
    try:
        forked = {k: driver.run_worker(algo.name, algo.backend, operation, folder, k, work=tmp_path / "work",
                                       servers=servers)
                  for k in ("heap", "heap-baseline", "stack", "stack-baseline")}
    finally:
        servers.close()
    assert all(r.error == "" for r in forked.values()), {k: r.error for k, r in forked.items()}
    fresh = {k: _fresh_massif_run(r) for k, r in forked.items()}
    for runs in (forked, fresh):
        assert driver.check_output(algo, operation, worker.read_inputs(folder), runs["heap"]) == ""
    heap = [driver.heap_figures(runs["heap"], runs["heap-baseline"]) for runs in (forked, fresh)]
    stack = [driver.stack_figures(runs["stack"], runs["stack-baseline"]) for runs in (forked, fresh)]
    assert heap[0][1] == heap[1][1] == [] and stack[0][1] == stack[1][1] == []
    for key in ("peak_heap_bytes", "peak_heap_native_bytes"):
        assert heap[0][0][key] == heap[1][0][key], key
    # the allocator's headers and padding depend on where the blocks land, not on the operation: tens of bytes
    # (16-64 B apart in notebook 03's rows whose heap is the same byte for byte)
    assert abs(heap[0][0]["peak_heap_extra_bytes"] - heap[1][0]["peak_heap_extra_bytes"]) <= 64
    assert heap[0][0]["peak_heap_bytes"] >= (2420 if operation == "sign" else 1)  # sign returns a signature
    # each frame that aligns its arrays can move the peak by up to 16 B where the window starts elsewhere: two
    # such steps (32 B) were seen between a forked and a fresh worker under CI's parallel tests on 30 Nov
    assert abs(stack[0][0]["peak_stack_bytes"] - stack[1][0]["peak_stack_bytes"]) <= 32
    assert stack[0][0]["peak_stack_bytes"] > 5_000
    # the profiles compared are a forked server's and a fresh worker's (massif names the command it ran;
    # their raw stacks may differ or not: Python calls take no C stack, so the two can be the same depth)
    assert all("--serve" in r.profile.command and "--job" not in r.profile.command for r in forked.values())
    assert all("--job" in r.profile.command and "--serve" not in r.profile.command for r in fresh.values())


@needs_valgrind
def test_a_worker_server_reports_a_failing_job_and_a_timeout_and_goes_on(ml_dsa_inputs, tmp_path):
    algo, folder = ml_dsa_inputs
    servers = driver.WorkerServers(tmp_path / "servers")
    try:
        bad = driver.run_worker("ML-DSA-45", algo.backend, "sign", folder, "heap", work=tmp_path / "bad",
                                servers=servers)
        assert bad.error.startswith("exit 1: ") and "ML-DSA-45" in bad.error
        slow = driver.run_worker(algo.name, algo.backend, "sign", folder, "heap", work=tmp_path / "slow",
                                 servers=servers, timeout_s=0.01)
        assert slow.error == "timeout after 0 s"
        good = driver.run_worker(algo.name, algo.backend, "sign", folder, "heap", work=tmp_path / "good",
                                 servers=servers)  # a new server replaces the one the timeout killed
        assert good.error == "" and good.profile is not None and good.report["signature_bytes"] == 2420
        server = servers.get(algo.backend, "heap", "", "valgrind", None)
    finally:
        servers.close()
    assert server.proc.returncode == 0  # closed: its input ended, so it returned


@needs_valgrind
def test_measure_memory_stores_a_run_and_a_cached_row_equals_a_fresh_one(tmp_path, monkeypatch):
    run = driver.measure_memory(["ML-DSA-44"], ["sign"], [32], cold=False, save=True, folder=tmp_path,
                                progress=False)
    # the same measurement again, fresh (PQLAB_FRESH=1, as `make reproduce FRESH=1` sets it), then
    # from the cache
    monkeypatch.setenv("PQLAB_FRESH", "1")
    fresh = driver.measure_memory(["ML-DSA-44"], ["sign"], [32], cold=False, save=False, progress=False)
    monkeypatch.delenv("PQLAB_FRESH")
    cached = driver.measure_memory(["ML-DSA-44"], ["sign"], [32], cold=False, save=False, progress=False)
    figures = ["peak_heap_bytes", "peak_stack_bytes", "peak_heap_raw_bytes", "peak_heap_baseline_bytes",
               "peak_heap_extra_bytes", "peak_stack_raw_bytes", "peak_stack_baseline_bytes",
               "peak_heap_native_bytes"]
    rows = [r.measurements.set_index("memory_source") for r in (run, fresh, cached)]
    for source, cols in ((driver.SOURCE_MASSIF, figures), (driver.SOURCE_TRACEMALLOC, ["peak_heap_bytes"])):
        first, again, reused = (r.loc[source, cols].astype(float).tolist() for r in rows)
        assert reused == again, source  # the cache returns exactly what the last (fresh) measurement stored
        if source == driver.SOURCE_MASSIF:
            assert first == again  # valgrind's byte counts of one build are deterministic
        else:  # tracemalloc's Python heap can differ by some dozens of bytes between processes (seen: 67 B)
            assert all(abs(a - b) <= 0.02 * b for a, b in zip(first, again, strict=True)), (first, again)
    assert fresh.meta["memory_cache"]["reused"] == 0 and fresh.meta["memory_cache"]["fresh"]
    assert cached.meta["memory_cache"]["reused"] == 5 and cached.meta["worker_runs"] == 1  # the probe only
    cell = cached.measurements.set_index("memory_source").loc[driver.SOURCE_MASSIF, "flags"]
    detail = pqflags.detail(cell, "from-cache")  # the key, and the run that measured the row
    entry = next(cache.cache_root().glob(f"*/{detail.split(',')[0].removeprefix('key ')}*.json"))
    assert json.loads(entry.read_text())["run_id"] == fresh.run_id and detail.endswith(f"run {fresh.run_id}")
    assert not pqflags.has(fresh.measurements["flags"], "from-cache").any()
    m = run.measurements
    assert set(m["memory_source"]) == {driver.SOURCE_MASSIF, driver.SOURCE_TRACEMALLOC, driver.SOURCE_MAXRSS}
    massif = m[m["memory_source"] == driver.SOURCE_MASSIF].iloc[0]
    assert massif["verified"] and massif["peak_heap_bytes"] > 0 and massif["peak_stack_bytes"] > 0
    assert massif["flags"] == ""
    stored = load_run(run.path)
    assert len(stored.measurements) == len(m) and stored.meta["valgrind"]["available"]
    table = memory_footprint.memory_table(stored)
    assert table.loc[0, "heap_bytes"] == massif["peak_heap_bytes"] and table.loc[0, "verified"]
    assert "ML-DSA-44 signing" in memory_footprint.closing_note(table, stored.meta["valgrind"])


# ----- without valgrind -----
def test_without_valgrind_only_tracemalloc_and_maxrss(monkeypatch, tmp_path):
    monkeypatch.setattr(driver.shutil, "which", lambda name: None)
    status = driver.find_valgrind()
    assert not status["available"] and "not installed" in status["reason"]
    with pytest.raises(RuntimeError, match="not installed"):
        driver.measure_memory(["Ed25519"], ["sign"], [32], use_valgrind=True, save=False, progress=False)
    run = driver.measure_memory(["Ed25519", "ML-DSA-44"], ["sign", "verify"], [32], save=False,
                                progress=False)
    assert set(run.measurements["memory_source"]) == {driver.SOURCE_TRACEMALLOC, driver.SOURCE_MAXRSS}
    assert run.meta["worker_runs"] == 4 + 2  # one plain worker per operation, one probe per algorithm
    assert run.meta["memory_cache"]["stored"] == 4 and run.meta["memory_cache"]["reused"] == 0
    table = memory_footprint.memory_table(run)
    assert "heap_bytes" not in table and table["python_heap_bytes"].notna().all() and table["verified"].all()
    assert "valgrind is not available" in memory_footprint.describe_valgrind(status, run)
    assert "Python-level" in memory_footprint.describe_findings(table)
    assert "valgrind was not available" in memory_footprint.closing_note(table, status)
    fig = memory_footprint.plot_peaks(table)
    assert len(fig.axes) == 1 and "tracemalloc" in fig.axes[0].get_ylabel()
    comparison = memory_footprint.compare_gravity(table, None, run.sizes)
    assert comparison.loc[0, "sign_heap_bytes"] == 34304


def test_plan_runs_shares_baselines_and_limits_the_stack_sizes(tmp_path):
    algos = A.resolve(["ML-DSA-44", "SPHINCS+-SHAKE-128s-simple", "Ed25519"])
    jobs = [driver.Job(a, op, None if op == "keygen" else n, tmp_path) for a in algos
            for op in worker.SIGNATURE_OPERATIONS for n in ((32,) if op == "keygen" else (32, 4096))]
    tasks = driver.plan_runs(jobs, use_valgrind=True, cold=True, stack_message_bytes=[32])
    kinds = pd.Series([k for _, k, _ in tasks]).value_counts().to_dict()
    assert kinds == {"plain": 15, "heap": 15, "stack": 9, "heap-cold": 9, "stack-baseline": 6,
                     "heap-baseline": 6, "heap-cold-baseline": 6}
    baseline = next(t for t in tasks if t[1] == "stack-baseline" and t[0].algo.backend == "liboqs"
                    and t[0].operation == "sign")
    assert not baseline[0].slow and len(baseline[2]) == 4  # a fast runner, shared by every liboqs signing job
    assert tasks[0][0].slow and tasks[0][1] == "stack"  # the slowest first
    assert {k for _, k, _ in driver.plan_runs(jobs, use_valgrind=False, cold=True)} == {"plain"}


def test_native_heap_nets_out_a_shared_baselines_other_algorithm():
    """The verify baseline of a backend is another algorithm's worker: its constructor differs, the net does
    not."""
    lib, py = "/opt/liboqs.so", "/py/libpython.so"
    summary = {"interpreter_objects": [py]}
    run = driver.WorkerRun("heap", {}, 1.0, summary=dict(summary, callers={
        lib: {"OQS_SIG_sphincs_new": 88, "SHA3_shake256_inc_init": 224}, py: {"_PyObject_Malloc": 9000}}))
    base = driver.WorkerRun("heap-baseline", {}, 1.0, summary=dict(summary, callers={
        lib: {"OQS_SIG_ml_dsa_44_new": 88}, py: {"_PyObject_Malloc": 4000}}))
    out = driver.native_heap(run, base)
    assert out == {"peak_heap_native_bytes": 224,
                   "peak_heap_native_callers": "liboqs.so: SHA3_shake256_inc_init 224"}
    same = driver.WorkerRun("heap", {}, 1.0,
                            summary=dict(summary, callers={lib: {"OQS_SIG_ml_dsa_44_new": 88}}))
    assert driver.native_heap(same, base) == {"peak_heap_native_bytes": 0, "peak_heap_native_callers": ""}
    assert driver.native_heap(driver.WorkerRun("heap", {}, 1.0, summary={"callers": None}), base) == {}


def test_inputs_are_written_only_for_message_sizes_that_are_measured(tmp_path, monkeypatch):
    """A second run whose worker runs all come from the cache signs nothing beyond the first size (its size
    row)."""
    monkeypatch.setattr(driver.shutil, "which", lambda name: None)  # plain workers only: quick
    store = cache.MemoryCache(tmp_path / "c")
    first = driver.measure_memory(["Ed25519"], ["sign"], [32, 64], save=False, progress=False, cache=store,
                                  keep_work=tmp_path / "w1")
    assert first.meta["memory_cache"]["stored"] == 2
    again = driver.measure_memory(["Ed25519"], ["sign"], [32, 64], save=False, progress=False, cache=store,
                                  keep_work=tmp_path / "w2")
    assert again.meta["memory_cache"]["reused"] == 2 and again.meta["worker_runs"] == 1  # the probe
    assert (tmp_path / "w2" / "Ed25519@cryptography" / "m32" / "inputs.json").exists()
    assert not (tmp_path / "w2" / "Ed25519@cryptography" / "m64").exists()
    assert len(again.sizes) == 1 and again.measurements["verified"].all()


def test_every_pqlab_module_has_bytecode_before_workers_start():
    """Workers never write bytecode; a module they compile from source changes the heap of a Python call (a
    dict table, 568 B), so the driver compiles pqlab first and every module then has current bytecode."""
    import importlib.util
    from pathlib import Path

    assert driver.compile_bytecode() is True
    package = Path(driver.__file__).resolve().parents[2]
    for source in package.rglob("*.py"):
        compiled = Path(importlib.util.cache_from_source(str(source)))
        assert compiled.exists() and compiled.stat().st_mtime >= source.stat().st_mtime - 1, source


def test_measure_memory_takes_one_name_as_a_str_and_refuses_an_unknown_one_whole(tmp_path):
    """One name may be a str, as for pqlab.bench: it is not read letter by letter (a papermill -p value is a
    str: '["ML-DSA-4"]' was refused as "unknown algorithm '['")."""
    with pytest.raises(A.UnknownAlgorithm, match=r"unknown algorithm 'ML-DSA-4'; close matches: .*ML-DSA-44"):
        driver.measure_memory("ML-DSA-4", ["sign"], [32], folder=tmp_path, progress=False)
    assert not list(tmp_path.iterdir())  # refused before anything was measured or saved
