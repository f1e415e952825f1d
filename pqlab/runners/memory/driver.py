"""Peak memory of ONE operation: native heap and stack (valgrind massif), Python heap (tracemalloc),
maximum resident set size (coarse).

Method, as liboqs' own memory tests and the OQS profiling do it: one operation per process.  The
parent generates keys, a message and a signature and writes them to files (:func:`write_inputs`);
a *worker* process loads them, performs one operation and writes its output to a file
(:func:`worker`); the parent checks that output (the signature verifies, fresh keys sign and
verify, the verdict is True), so no figure of a wrong result is reported.

    python -m pqlab.runners.memory.worker --algorithm ML-DSA-44 --backend liboqs --operation sign --inputs DIR

A Python worker carries the interpreter's own heap and stack, so what the operation adds is a
difference: its peak minus the level just before it.  For that difference to be exact, the
peak of the run must fall *inside* the operation, not in the interpreter's start-up; the worker
forces it there with two markers around the operation (:class:`Window`):

* heap: a ``malloc`` of :data:`HEAP_MARKER_BYTES` (256 MiB, never touched, so it costs no RSS)
  is held across the operation, so the largest heap of the run lies inside it.  The massif heap
  run counts time in bytes allocated (``--time-unit=B``): the marker's allocation jumps that
  clock, so massif snapshots the heap right then, which is the level before the operation.
  Operation heap = (peak - that level) minus the same difference in a *baseline* worker that
  calls nothing in the window (same imports, same loading, same markers: what the empty window
  itself allocates, normally nothing); raw = peak - marker.
* stack: the operation runs at the bottom of :data:`STACK_MARKER_DEPTH` nested calls through
  C (about 0.5 KiB of C stack each), so the deepest stack of the run lies inside it.  Operation
  stack = peak stack - peak stack of the baseline worker.

The baselines depend on the call path only, so one of each is measured per backend and
operation (the level before the operation, which depends on the keys and message loaded, is
read in each run itself).

Heap and stack take two massif runs (``--stacks=no`` and ``--heap=no --stacks=yes``, both with
``--peak-inaccuracy=0``), because massif's peak snapshot maximises their *sum*.  Peak heap is
the largest ``mem_heap_B`` of the snapshots (``mem_heap_extra_B``, the allocator's headers and
padding, is reported apart), peak stack the largest ``mem_stacks_B``.  Massif's heap is what
``malloc`` hands out: CPython serves objects of up to 512 bytes from arenas it maps itself, which
massif does not count (tracemalloc does).  Python's cyclic garbage collector runs before the
window and is paused inside it, so that freeing older garbage does not offset the operation's
allocations.  The worker calls the operation once before the measured call (*warm*): libraries
that initialise on first use (OpenSSL 3 fetching its provider's methods, a binding resolving its
C functions) pay that once per process, not per operation; ``heap-cold`` runs measure that first
call too.  What the operation adds includes its binding's call path (ctypes buffers, cffi or pyo3
glue), since a Python caller pays it.  The stack does not depend on the message, so
:func:`measure_memory` can measure it at some message sizes only (its runs are the slow ones).

Each measured thing is a row of the results schema (``peak_heap_bytes``, ``peak_stack_bytes``,
``memory_source``): ``valgrind-massif:stacks`` (warm heap and stack), ``valgrind-massif:first-call``
(heap of the first call in a process), ``tracemalloc`` (Python-level allocations during the
operation, in a worker without valgrind) and ``maxrss`` (that worker's peak resident set size,
``VmHWM``: how far the operation raised it, and the peak itself; whole pages of the whole
process, coarse, a labelled fallback).  Where valgrind is missing only the last two are
measured, and :func:`find_valgrind` says why.

The worker (:mod:`pqlab.runners.memory.worker`) imports the standard library and pqlab's adapters only
(``import pqlab`` loads neither pandas nor oqs), which keeps a run under valgrind short.  Under valgrind
an interpreter takes about 1.5 s to start and the imports 1 s more, longer than most operations, so
massif runs come from a *worker server* per backend and massif mode (:class:`WorkerServer`): it starts
and imports once under valgrind, then forks one process per run, which reads its inputs, performs its
one operation and exits; massif writes one profile per process.  A forked worker's figures equal a fresh
one's: the heap is read from the level when its window opens, and its stack above the server's frames is
the same in the run and its baseline (both forked from the same place), so the difference is unchanged
(``tests/runners/test_memory.py`` checks both against a worker started afresh).  Plain runs (tracemalloc and
maxrss) stay processes of their own, as a forked process inherits its parent's resident set.
Massif output is read by :mod:`pqlab.runners.memory.massif`; notebook 03's tables, figures and text are in
:mod:`pqlab.studies.memory_footprint`.

This module plans and runs a measurement (:func:`plan_runs`, :func:`measure_memory`); the method's constants
are in :mod:`pqlab.runners.memory.method`, the worker processes and servers in
:mod:`pqlab.runners.memory.processes`, the rows computed from their runs in :mod:`pqlab.runners.memory.rows`,
and every name of those stays reachable here (``pqlab.runners.memory.driver.<name>``).
"""

from __future__ import annotations

import compileall
import contextlib
import os
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from pqlab.backends.algorithms import random_message, resolve
from pqlab.core import builds, inputs
from pqlab.core.errors import BadInput
from pqlab.runners.memory.cache import MemoryCache, cache_key, file_digests
from pqlab.runners.memory.method import (
    _PORTABLE,
    BASELINE_OF,
    HEAP_MARKER_BYTES,
    MASSIF_DEPTH,
    METHOD,
    METHOD_VERSION,
    RUNS,
    SOURCE_MASSIF,
    SOURCE_MASSIF_FIRST_CALL,
    SOURCE_MAXRSS,
    SOURCE_TRACEMALLOC,
    STACK_MARKER_DEPTH,
    STACK_MARKER_MIN_BYTES_PER_LEVEL,
)
from pqlab.runners.memory.processes import (
    WORKER_ENVIRONMENT,
    Job,
    WorkerRun,
    WorkerServer,
    WorkerServers,
    check_output,
    execute,
    find_valgrind,
    massif_command,
    profile_summary,
    run_worker,
    worker_command,
    worker_environment,
)
from pqlab.runners.memory.rows import _size_row, heap_figures, measurement_rows, native_heap, stack_figures
from pqlab.runners.memory.worker import SIGNATURE_OPERATIONS, read_inputs, write_inputs
from pqlab.store.recorder import RunRecorder

#: every name of the driver before it was split (method, processes, rows), and its own
__all__ = ["BASELINE_OF", "HEAP_MARKER_BYTES", "MASSIF_DEPTH", "METHOD", "METHOD_VERSION", "RUNS",
           "SOURCE_MASSIF", "SOURCE_MASSIF_FIRST_CALL", "SOURCE_MAXRSS", "SOURCE_TRACEMALLOC",
           "STACK_MARKER_DEPTH", "STACK_MARKER_MIN_BYTES_PER_LEVEL", "WORKER_ENVIRONMENT", "Job", "WorkerRun",
           "WorkerServer", "WorkerServers", "check_output", "compile_bytecode", "execute", "find_valgrind",
           "heap_figures", "massif_command", "measure_memory", "measurement_rows", "native_heap", "plan_runs",
           "profile_summary", "run_worker", "stack_figures", "worker_command", "worker_environment"]


def plan_runs(jobs: Sequence[Job], use_valgrind: bool, cold: bool,
              stack_message_bytes: Sequence[int] | None = None) -> list[tuple[Job, str, list[Job]]]:
    """(job that runs it, RUNS key, jobs that share the result): per job plain (+ heap, + stack at
    `stack_message_bytes`, default every size); once per algorithm and operation: the first-call heap
    (at the first message size); shared per backend and operation: the heap and stack baselines (the
    empty window: they depend on the call path only), and the first call's heap baseline."""
    tasks = []
    groups: dict[tuple, list[Job]] = {}
    backends: dict[tuple, list[Job]] = {}
    for job in jobs:
        groups.setdefault((job.algo.key, job.operation), []).append(job)
        backends.setdefault((job.algo.backend, job.operation), []).append(job)
        tasks.append((job, "plain", [job]))
        if use_valgrind:
            tasks.append((job, "heap", [job]))
            if (stack_message_bytes is None or job.message_bytes is None
                    or job.message_bytes in stack_message_bytes):
                tasks.append((job, "stack", [job]))
    for members in groups.values():
        if use_valgrind and cold:
            tasks.append((members[0], "heap-cold", members[:1]))
    if use_valgrind:
        for members in backends.values():
            runner = min(members, key=lambda j: (j.slow, j.message_bytes or 0))
            tasks += [(runner, kind, members) for kind in ("stack-baseline", "heap-baseline")]
            if cold:
                tasks.append((runner, "heap-cold-baseline", members))
    # slowest first (stack runs of the "s" sets), so that the workers finish together
    return sorted(tasks, key=lambda t: (not t[0].slow, RUNS[t[1]][0] != "stack", RUNS[t[1]][0] != "heap"))


def measure_memory(algorithms: Sequence, operations: Sequence[str] = SIGNATURE_OPERATIONS,
                   message_bytes: Sequence[int] | int = (32,), *, jobs: int = 2,
                   use_valgrind: bool | None = None, cold: bool = True,
                   stack_message_bytes: Sequence[int] | None = None, study: str = "", seed: int | None = 0,
                   timeout_s: float = 1800, save: bool = True, folder: Path | str | None = None,
                   progress: bool = True, keep_work: Path | str | None = None, params: dict | None = None,
                   cache: MemoryCache | bool | None = None):
    """Peak memory of every operation of every algorithm and message size; returns (and saves) a Run.

    keygen does not depend on the message: it is measured once (``message_bytes`` empty).  Worker
    processes run `jobs` at a time.  `use_valgrind`: None = when valgrind is installed; without
    it only tracemalloc and maxrss are measured and the run's meta says why.  `cold`: also the
    heap of the first call in a process (once per algorithm and operation).  `stack_message_bytes`:
    the message sizes at which the stack is measured too (default: all; the stack does not depend on
    the message, and its massif runs are the slow ones).  `cache`: where worker runs are reused from
    and stored (:mod:`pqlab.runners.memory.cache`; None = the default one, which ``PQLAB_FRESH=1`` makes
    measure everything again; False = none).

    Only memory is measured here, and its worker processes run `jobs` at a time: byte counts do not
    depend on what else runs.  Times are not (``pqlab.bench`` runs alone, serially, and is never
    cached).
    """

    algos = inputs.unique(resolve(inputs.names(algorithms, "algorithm")))
    not_signatures = [f"{a.name}@{a.backend} ({a.kind})" for a in algos if a.kind != "sig"]
    if not_signatures:
        one = len(not_signatures) == 1
        raise BadInput(f"measure_memory measures signature schemes; {', '.join(not_signatures)} "
                       f"{'is' if one else 'are'} not: leave {'it' if one else 'them'} out")
    operations = sorted(set(op for ops in inputs.operations(algos, operations) for op in ops),
                        key=SIGNATURE_OPERATIONS.index)
    sizes = inputs.message_sizes(message_bytes)
    if stack_message_bytes is not None:
        stack_message_bytes = inputs.message_sizes(stack_message_bytes)
    jobs = inputs.count(jobs, "jobs")
    timeout_s = inputs.positive_number(timeout_s, "timeout_s")
    status = find_valgrind()
    if use_valgrind is None:
        use_valgrind = status["available"]
    elif use_valgrind and not status["available"]:
        raise RuntimeError(status["reason"])
    run_params = {"algorithms": [f"{a.name}@{a.backend}" for a in algos], "operations": list(operations),
                  "message_bytes": sizes, "jobs": jobs, "seed": seed, "use_valgrind": use_valgrind,
                  "cold": cold,
                  "stack_message_bytes": None if stack_message_bytes is None else list(stack_message_bytes),
                  "heap_marker_bytes": HEAP_MARKER_BYTES, "stack_marker_depth": STACK_MARKER_DEPTH,
                  "massif_depth": MASSIF_DEPTH, **(params or {})}
    rec = RunRecorder(study, run_params, label=f"{study}-memory" if study else "memory", folder=folder,
                      save=save, meta={"valgrind": status, "memory_method": METHOD})
    if cache is None or cache is True:
        cache = MemoryCache()
    tmp = Path(keep_work) if keep_work else Path(tempfile.mkdtemp(prefix="pqlab-memory-"))
    t_start = time.perf_counter()
    with rec:
        _measure_jobs(rec, algos, operations, sizes, seed, tmp, use_valgrind, cold, stack_message_bytes, jobs,
                      timeout_s, progress, study, cache or None, status["version"] if use_valgrind else "")
        rec.meta["wall_s"] = round(time.perf_counter() - t_start, 1)
    if not keep_work:
        shutil.rmtree(tmp, ignore_errors=True)
    return rec.run


def compile_bytecode() -> bool:
    """Compile pqlab's modules to bytecode where it is missing or stale (in place, as an import would), so
    that every worker loads them the same way; whether all of them have it now.  A worker that compiles a
    module from source at import is left in another state: inside the window its interpreter then grows a dict
    table more or less, and the heap of a Python call differs by 568 bytes (measured: ML-DSA-44 verify through
    liboqs-python, 9,404 B without pqlab's bytecode and 9,972 B with it).  Workers never write bytecode
    themselves (PYTHONDONTWRITEBYTECODE), so without this the figures depended on whether some earlier
    import had written it."""

    try:
        return bool(compileall.compile_dir(Path(__file__).resolve().parents[2], quiet=2))
    except OSError:
        return False


def _measure_jobs(rec, algos, operations, sizes, seed, tmp: Path, use_valgrind: bool, cold: bool,
                  stack_message_bytes, jobs: int, timeout_s: float, progress: bool, study: str,
                  cache: MemoryCache | None, valgrind_version: str) -> None:
    """Plan the worker processes of every job, take what the cache holds, run the rest `jobs` at a
    time, record the rows in `rec`."""

    plan: list[Job] = []
    inputs: dict[Path, dict] = {}  # folder -> what it holds, once written
    pending: dict[Path, tuple] = {}  # folder -> (algorithm, message size) still to write
    lock = threading.Lock()

    def ensure(folder: Path) -> dict:
        """The inputs in `folder`, written first (keys, message, signature) if not yet: a message size whose
        worker runs all come from the cache needs none."""
        with lock:
            if folder not in inputs:
                algo, size = pending.pop(folder)
                message = random_message(size, seed)
                keys = algo.generate()
                signature = algo.signer(keys[1])(message)
                write_inputs(folder, algo.name, algo.backend, message, keys, signature)
                inputs[folder] = read_inputs(folder)
                inputs[folder]["_sizes"] = _size_row(algo, keys, signature)
            return inputs[folder]

    for algo in algos:
        for size in sizes:
            folder_in = tmp / _safe(f"{algo.name}@{algo.backend}") / f"m{size}"
            pending[folder_in] = (algo, size)
            if size == sizes[0]:  # the size table's row, and the probe's inputs
                rec.add(sizes=[ensure(folder_in)["_sizes"]])
            plan += [Job(algo, op, None if op == "keygen" else size, folder_in) for op in operations
                     if op in algo.operations and (op != "keygen" or size == sizes[0])]
    tasks = plan_runs(plan, use_valgrind, cold, stack_message_bytes)
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(tasks), desc=f"{study or 'memory'}: worker processes", unit="run", leave=True,
                   dynamic_ncols=True)
    started, reused, stored = [], [], []
    servers = WorkerServers(tmp / "servers")
    rec.meta["worker_bytecode"] = bytecode = compile_bytecode()

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool, contextlib.closing(servers):
        probes = {}
        if cache is not None:  # the files each algorithm's worker loads: part of its runs' keys
            firsts: dict[tuple, Job] = {}
            for job in plan:
                firsts.setdefault(job.algo.key, job)  # at the first message size, whose inputs exist
            firsts = list(firsts.values())
            for job, run in zip(firsts, pool.map(lambda j: run_worker(j.algo.name, j.algo.backend, "verify",
                                                                       j.inputs, "probe", work=j.work,
                                                                       timeout_s=timeout_s),
                                                  firsts)):
                started.append(run)
                if not run.error:
                    probes[job.algo.key] = {"python": run.report["python"],
                                            "files": file_digests(run.report["loaded_files"])}

        def one(task) -> None:
            runner, kind, members, *build = task
            algo = runner.algo
            probe = probes.get(algo.key)
            parts = None if probe is None else {
                "method_version": METHOD_VERSION, "valgrind": valgrind_version, "python": probe["python"],
                "algorithm": algo.name, "backend": algo.backend, "build": build[0] if build else
                algo.extra.get("build", ""), "operation": runner.operation,
                "message_bytes": runner.message_bytes, "kind": kind, "files": probe["files"],
                "bytecode": bytecode}
            key = cache_key(parts) if parts else ""
            entry = cache.get(key) if key else None
            if entry is not None:
                run = _cached_run(kind, entry)
                reused.append(run)
            else:
                given = ensure(runner.inputs)
                run = (run_worker(algo.name, algo.backend, runner.operation, runner.inputs, kind,
                                  work=runner.work, timeout_s=timeout_s, build=build[0], servers=servers)
                       if build
                       else execute(runner, kind, timeout_s, servers))
                started.append(run)
                if not RUNS[kind][1] and not run.error:
                    run.check = check_output(algo, runner.operation, given, run)
                if key and _cacheable(run, parts):
                    cache.put(key, parts, _cache_value(run), rec.run_id)
                    stored.append(run)
            for job in members:
                job.runs[kind] = run
            if bar is not None:
                bar.update(1)

        list(pool.map(one, tasks))
        # a job whose massif runs fell back to the portable build needs baselines of that build
        redo = [(job, base, [job], _PORTABLE) for job in plan for kind, base in BASELINE_OF.items()
                if job.runs.get(kind) and builds.matches(job.runs[kind].build, "generic")
                and base in job.runs]
        list(pool.map(one, redo))
    if bar is not None:
        bar.close()
    rec.meta["worker_runs"] = len(started)
    if cache is not None:
        files = {p: d for probe in probes.values() for p, d in probe["files"].items()}
        rec.meta["memory_cache"] = {
            "root": str(cache.root), "fresh": cache.fresh, "reused": len(reused), "stored": len(stored),
            "measured": len(tasks) + len(redo) - len(reused), "method_version": METHOD_VERSION,
            "valgrind": valgrind_version, "python": sorted({p["python"] for p in probes.values()}),
            "files": {p: d[:16] for p, d in sorted(files.items())}}
    for job in plan:
        rec.add(measurements=measurement_rows(job, rec.base, inputs.get(job.inputs, {})))


#: report fields a cached run keeps (the file lists are in the key; the mappings are in the summary)
_REPORT_KEPT = ("algorithm", "backend", "operation", "baseline", "warmup", "build", "python", "verdict",
                "signature_bytes", "tracemalloc_peak_bytes", "max_rss_bytes", "max_rss_before_bytes")


def _cacheable(run: WorkerRun, parts: dict) -> bool:
    """A run is stored when it worked, its output (if any) checked out, and every file it loaded is in
    its key (valgrind's own preloaded objects aside: the valgrind version is in the key)."""
    if run.error or run.check not in (None, "") or (RUNS[run.kind][0] != "plain" and not run.summary):
        return False
    loaded = [f for f in run.report.get("loaded_files", []) if f"{os.sep}valgrind{os.sep}" not in f]
    return set(loaded) <= set(parts["files"])


def _cache_value(run: WorkerRun) -> dict:
    return {"report": {k: run.report[k] for k in _REPORT_KEPT if k in run.report}, "summary": run.summary,
            "build": run.build, "wall_s": run.wall_s, "check": run.check}


def _cached_run(kind: str, entry: dict) -> WorkerRun:
    v = entry["value"]
    return WorkerRun(kind, v["report"], v["wall_s"], v["build"], summary=v["summary"], check=v["check"],
                     cached=entry["key"], origin=entry["run_id"])


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.@-]", "_", name)
