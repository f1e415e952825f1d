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
"""

from __future__ import annotations

import compileall
import contextlib
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from pqlab.backends.algorithms import random_message, resolve
from pqlab.core import builds, flags, inputs
from pqlab.core.errors import BadInput
from pqlab.liboqs.loader import build_environment
from pqlab.runners.memory.cache import MemoryCache, cache_key, file_digests
from pqlab.runners.memory.massif import MassifProfile, attribute_sites, parse_massif
from pqlab.runners.memory.worker import SIGNATURE_OPERATIONS, read_inputs, read_keys, write_inputs
from pqlab.store.recorder import RunRecorder

#: Held across the operation window of a massif run; larger than any heap the interpreter reaches.
HEAP_MARKER_BYTES = 256 << 20
#: Calls through C before the operation (about 0.5 KiB of C stack each on CPython 3.11).
STACK_MARKER_DEPTH = 400
#: A lower bound of the C stack one marker level takes: the check that the peak is in the window.
STACK_MARKER_MIN_BYTES_PER_LEVEL = 256
#: Frames kept in massif's allocation tree: the direct caller of the allocator is all that
#: :func:`native_heap` reads (each site attributed to the shared object whose code called malloc).
MASSIF_DEPTH = 1
#: Raised whenever anything that changes a figure changes (markers, massif options, warm-up calls, the
#: baselines): part of every cache key (:mod:`pqlab.runners.memory.cache`).
METHOD_VERSION = 4
SOURCE_MASSIF = "valgrind-massif:stacks"
SOURCE_MASSIF_FIRST_CALL = "valgrind-massif:first-call"
SOURCE_TRACEMALLOC = "tracemalloc"
SOURCE_MAXRSS = "maxrss"
#: the build valgrind falls back to where it cannot run liboqs's CPU-specific code: the setup release's portable one
_PORTABLE = builds.parse("generic").id
#: Stored with every run (meta["memory_method"]).
METHOD = ("one operation per worker process, inputs and outputs through files, outputs checked by the parent; "
          "massif runs forked by a worker server that loaded the backend under valgrind once; "
          "valgrind massif, heap run (--stacks=no --time-unit=B) and stack run (--heap=no --stacks=yes), "
          f"--peak-inaccuracy=0, --threshold=0, --depth={MASSIF_DEPTH}; a {HEAP_MARKER_BYTES >> 20} MiB heap "
          f"marker and a {STACK_MARKER_DEPTH}-call stack marker put the peaks inside the operation; heap = (peak - "
          "level when the marker was allocated) - the same of a baseline worker calling nothing in the window; "
          "stack = peak - peak of that baseline worker; native heap = bytes live at the peak whose allocator was "
          "called by code outside the Python installation, minus the same in the baseline worker; warm = one "
          "call before the measured one (baselines too); garbage collector run before and paused in the window; "
          f"method version {METHOD_VERSION}")


# ----- the driver -----
def worker_command(python: str | None = None) -> list[str]:
    """The interpreter command that starts a worker (``import pqlab`` is light: no pandas, no oqs)."""
    return [python or sys.executable, "-m", "pqlab.runners.memory.worker"]


def find_valgrind() -> dict:
    """Whether valgrind (massif) can be used here: path, version, or the reason it cannot."""
    path = shutil.which("valgrind")
    if path is None:
        return {"available": False, "path": "", "version": "",
                "reason": "valgrind is not installed (on Debian/Ubuntu: apt-get install valgrind); "
                          "native heap and stack cannot be measured"}
    try:
        version = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        return {"available": False, "path": path, "version": "", "reason": f"valgrind does not run: {exc}"}
    return {"available": bool(version), "path": path, "version": version,
            "reason": "" if version else "valgrind --version printed nothing"}


def massif_command(folder: Path, kind: str, depth: int = MASSIF_DEPTH, valgrind: str = "valgrind") -> list[str]:
    """valgrind massif for the heap runs (`kind` "heap") or the stack runs ("stack") of a worker server,
    writing each process's profile and valgrind's messages to `folder` (``massif.PID.out``,
    ``valgrind.PID.log``).

    The heap run counts time in bytes allocated and freed, so that allocating the marker jumps
    the clock and massif must take a snapshot right then (the heap level before the operation)."""
    which = ["--stacks=no", "--time-unit=B"] if kind == "heap" else ["--heap=no", "--stacks=yes"]
    return [valgrind, "-q", "--tool=massif", *which, "--peak-inaccuracy=0", "--detailed-freq=1000000",
            "--threshold=0", "--read-inline-info=no", f"--depth={depth}",
            f"--massif-out-file={Path(folder) / 'massif.%p.out'}", f"--log-file={Path(folder) / 'valgrind.%p.log'}"]


def profile_summary(prof: MassifProfile, mappings=None, interpreter=None) -> dict:
    """The figures of a massif profile that the rows need (and the cache stores): peaks, the heap
    when the window opened (None when massif took no snapshot then), and, given the worker's
    executable `mappings`, the bytes live at the peak per shared object and function that called
    the allocator (None without mappings, or when massif's peak snapshot is not the heap's peak), and
    which of those objects are the interpreter (`interpreter`, as the worker reports them)."""
    start, peak = prof.window_start(HEAP_MARKER_BYTES), prof.peak
    callers = None
    if mappings is not None and peak is not None and peak.heap == prof.peak_heap:
        callers = {}
        for path, function, size in attribute_sites(peak.sites, mappings):
            callers.setdefault(path, {})
            callers[path][function] = callers[path].get(function, 0) + size
    return {"peak_heap": prof.peak_heap, "peak_heap_extra": prof.peak_heap_extra, "peak_stacks": prof.peak_stacks,
            "start_heap": start.heap if start else None, "start_heap_extra": start.heap_extra if start else None,
            "callers": callers, "interpreter_objects": list(interpreter or ())}


#: What a worker inherits from the environment (where liboqs, valgrind and pqlab are); nothing else,
#: so that every worker starts with the same environment, and so the same initial stack.
WORKER_ENVIRONMENT = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "PYTHONPATH", "OQS_INSTALL_PATH", "LD_LIBRARY_PATH",
                      "CONDA_PREFIX", "PQLAB_ROOT", "VALGRIND_LIB")


def worker_environment(build: str = "") -> dict:
    """The environment of a worker: :data:`WORKER_ENVIRONMENT` from this process, a fixed hash seed, and the
    variables that select the liboqs `build`.  Arguments travel in a file (``--job job.json``, run in
    the output folder): a process's command line and environment lie on its stack, and a stack figure is a
    difference of two processes' stacks, so both must start alike."""
    env = {k: os.environ[k] for k in WORKER_ENVIRONMENT if k in os.environ}
    env.update(PYTHONHASHSEED="0", PYTHONDONTWRITEBYTECODE="1")
    if build and not builds.matches(build, "default"):

        env = build_environment(build, env)
    return env


@dataclass
class WorkerRun:
    """One worker process (or its cached figures): what it reported and the figures of its profile."""

    kind: str  # a key of RUNS
    report: dict
    wall_s: float
    build: str = ""
    profile: MassifProfile | None = None
    error: str = ""
    output: Path | None = None
    summary: dict = field(default_factory=dict)  # profile_summary(): what the rows are computed from
    check: str | None = None  # "" when the output was checked and right, else why; None: not checked
    cached: str = ""  # the cache key, when the figures came from the cache
    origin: str = ""  # the run id that measured them (cached runs)

    def __post_init__(self) -> None:
        if self.profile is not None and not self.summary:
            self.summary = profile_summary(self.profile, self.report.get("mappings"),
                                           self.report.get("interpreter_objects"))


#: The worker runs of a measurement: name -> (mode, baseline, warm-up calls before the window).
#: "warm" runs call the operation once first, so a library's one-time initialisation on first
#: use is not counted as the operation's memory; "heap-cold" measures exactly that first call.
#: Each baseline makes the same warm-up calls as what it is subtracted from (a warm-up's lasting
#: allocations are then on both sides).  "probe" lists the files a worker loads (the cache key).
RUNS = {
    "plain": ("plain", False, 1),
    "heap": ("heap", False, 1),
    "stack": ("stack", False, 1),
    "heap-cold": ("heap", False, 0),
    "stack-baseline": ("stack", True, 0),
    "heap-baseline": ("heap", True, 1),
    "heap-cold-baseline": ("heap", True, 0),
    "probe": ("probe", False, 0),
}
#: the baseline each measured kind is subtracted from
BASELINE_OF = {"heap": "heap-baseline", "stack": "stack-baseline", "heap-cold": "heap-cold-baseline"}
_UNSUPPORTED = re.compile(r"unhandled instruction|unrecognised instruction|SIGILL|illegal instruction", re.I)


def run_worker(algorithm: str, backend: str, operation: str, inputs: Path, kind: str, *, work: Path,
               timeout_s: float = 1800, build: str = "", valgrind: str = "valgrind",
               python: str | None = None, servers: WorkerServers | None = None) -> WorkerRun:
    """Run one worker (`kind`: a key of :data:`RUNS`) and collect its report and massif profile: a plain run
    (and the probe) as a process of its own, a massif run forked by a worker server of `servers` (None: one
    started for this run only)."""
    mode, baseline, warmup = RUNS[kind]
    out = Path(work) / f"{operation}-{kind}{'-' + build if build else ''}"
    out.mkdir(parents=True, exist_ok=True)
    job = {"algorithm": algorithm, "backend": backend, "operation": operation, "inputs": str(inputs),
           "output": str(out), "baseline": int(baseline), "warmup": warmup}
    if mode in ("plain", "probe"):  # the probe loads what a plain run loads (tracemalloc included)
        job["trace"] = 1
    else:
        job.update(heap_marker=HEAP_MARKER_BYTES, stack_depth=STACK_MARKER_DEPTH)
    (out / "job.json").write_text(json.dumps(job) + "\n")
    t0 = time.perf_counter()
    if mode in ("plain", "probe"):  # a process of its own: its peak RSS starts afresh
        try:
            proc = subprocess.run(worker_command(python) + ["--job", "job.json"], env=worker_environment(build),
                                  cwd=out, capture_output=True, text=True, timeout=timeout_s)
            error = "" if proc.returncode == 0 else f"exit {proc.returncode}: {(proc.stderr or proc.stdout)[-1500:].strip()}"
        except subprocess.TimeoutExpired:
            error = f"timeout after {timeout_s:.0f} s"
    else:
        own = servers is None
        servers = WorkerServers(work) if own else servers
        try:
            error = servers.get(backend, mode, build, valgrind, python).run(job, out, timeout_s)
        finally:
            if own:
                servers.close()
    wall = time.perf_counter() - t0
    if not error and not (out / "result.json").exists():
        error = "the worker wrote no result.json"
    if error:
        return WorkerRun(kind, {}, wall, build, error=error, output=out)
    report = json.loads((out / "result.json").read_text())
    profile = parse_massif(out / "massif.out") if mode in ("heap", "stack") else None
    return WorkerRun(kind, report, wall, report.get("build") or build, profile, output=out)  # the one it loaded


class WorkerServer:
    """A worker server (``python -m pqlab.runners.memory.worker --serve BACKEND``) under valgrind massif in `mode`
    ("heap" or "stack"), with the environment of `build`: it loads the backend once and forks one
    process per job (:func:`pqlab.runners.memory.worker.serve`), whose profile :meth:`run` moves into the job's
    output folder."""

    def __init__(self, folder: Path, backend: str, mode: str, build: str = "", valgrind: str = "valgrind",
                 python: str | None = None) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix=f"{backend}-{mode}-", dir=folder))
        with open(self.folder / "server.err", "w") as err:  # the server's own; this process keeps no handle
            self.proc = subprocess.Popen(massif_command(self.folder, mode, valgrind=valgrind) + worker_command(python)
                                         + ["--serve", backend], env=worker_environment(build), cwd=self.folder,
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True,
                                         start_new_session=True)

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def run(self, job: dict, out: Path, timeout_s: float) -> str:
        """Run `job` in a forked process; "" when it exited 0, else why (its traceback, valgrind's messages)."""
        try:
            self.proc.stdin.write(json.dumps(job) + "\n")
            self.proc.stdin.flush()
            ready, _, _ = select.select([self.proc.stdout], [], [], timeout_s)
            line = self.proc.stdout.readline() if ready else None
        except OSError:
            line = ""
        if line is None:
            self.close(kill=True)
            return f"timeout after {timeout_s:.0f} s"
        if not line:
            self.close(kill=True)
            return f"the worker server ended: {_tail(self.folder / 'server.err')}"
        answer = json.loads(line)
        pid, code = answer["pid"], os.waitstatus_to_exitcode(answer["status"])
        log, profile = self.folder / f"valgrind.{pid}.log", self.folder / f"massif.{pid}.out"
        if profile.exists():
            profile.replace(out / "massif.out")
        if code == 0:
            return ""
        why = " ".join(t for t in (_tail(out / "error.txt"), _tail(log)) if t)
        return f"exit {code}: {why or 'no message'}"

    def close(self, kill: bool = False) -> None:
        if self.proc.poll() is None:
            if kill:
                os.killpg(self.proc.pid, signal.SIGKILL)
            else:
                self.proc.stdin.close()
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            if not stream.closed:
                stream.close()


class WorkerServers:
    """The worker servers of a measurement: one per thread, backend, massif mode, build and interpreter,
    started when first needed (a thread's server runs one job at a time); :meth:`close` ends them all."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self._servers: dict[tuple, WorkerServer] = {}
        self._lock = threading.Lock()

    def get(self, backend: str, mode: str, build: str, valgrind: str, python: str | None) -> WorkerServer:
        key = (threading.get_ident(), backend, mode, build, valgrind, python)
        with self._lock:
            server = self._servers.get(key)
            if server is None or not server.alive:
                server = self._servers[key] = WorkerServer(self.folder, backend, mode, build, valgrind, python)
        return server

    def close(self) -> None:
        with self._lock:
            servers, self._servers = list(self._servers.values()), {}
        for server in servers:
            server.close()


def _tail(path: Path, chars: int = 1500) -> str:
    try:
        return path.read_text(errors="replace")[-chars:].strip()
    except OSError:
        return ""


def check_output(algo, operation: str, inputs: dict, run: WorkerRun) -> str:
    """"" when a worker's output is right (checked here, in the parent), else what is wrong.  A run
    whose output was checked already (a cached one was checked when it was measured) keeps that verdict."""
    if run.error:
        return run.error
    if run.check is not None:
        return run.check
    try:
        if operation == "sign":
            sig = (run.output / "out_signature.bin").read_bytes()
            return "" if algo.verifier(inputs["pk"])(inputs["message"], sig) is True else "signature does not verify"
        if operation == "verify":
            return "" if run.report.get("verdict") is True else "the worker rejected a valid signature"
        pk, sk = read_keys(run.output, run.report, prefix="out_")
        message = inputs["message"]
        return "" if algo.verifier(pk)(message, algo.signer(sk)(message)) is True else "fresh keys do not sign/verify"
    except Exception as exc:  # noqa: BLE001
        return f"{type(exc).__name__}: {exc}"


@dataclass
class Job:
    """One measured thing: an algorithm's operation at one message size, and its worker runs."""

    algo: object
    operation: str
    message_bytes: int | None
    inputs: Path
    runs: dict = field(default_factory=dict)  # RUNS key -> WorkerRun (shared runs included)

    @property
    def work(self) -> Path:
        return self.inputs / "work"

    @property
    def slow(self) -> bool:
        """SPHINCS+/SLH-DSA "s" sets: the slow signers (started first, never used for baselines)."""
        return bool(re.search(r"\d{3}s(\b|-)", self.algo.name))


def execute(job: Job, kind: str, timeout_s: float = 1800, servers: WorkerServers | None = None) -> WorkerRun:
    """Run `kind` for `job`; when valgrind cannot run liboqs' CPU-optimised build, the portable one."""
    algo = job.algo
    run = run_worker(algo.name, algo.backend, job.operation, job.inputs, kind, work=job.work, timeout_s=timeout_s,
                     servers=servers)
    if run.error and RUNS[kind][0] != "plain" and algo.backend == "liboqs" and _UNSUPPORTED.search(run.error):
        run = run_worker(algo.name, algo.backend, job.operation, job.inputs, kind, work=job.work,
                         timeout_s=timeout_s, build=_PORTABLE, servers=servers)
    return run


def _failed(what: str, why: str) -> str:
    return flags.make("failed", f"{what}: {why}")


def _window_heap(run: WorkerRun) -> str:
    s = run.summary
    if s["peak_heap"] < HEAP_MARKER_BYTES:
        return flags.make("peak-outside-window", "heap")
    return "" if s["start_heap"] is not None else flags.make("heap-level-before-operation-not-captured")


def _missing(pairs) -> list[str]:
    return [_failed(f"massif {name}", r.error if r else "not run") for name, r in pairs
            if r is None or r.error or not r.summary]


def heap_figures(run: WorkerRun | None, baseline: WorkerRun | None) -> tuple[dict, list[str]]:
    """What the operation adds to the heap: (peak - level when the window opened) of the run,
    minus the same of the baseline run (what the empty window itself allocates, ~0.1 KiB); and
    what of it code outside the Python installation allocated (:func:`native_heap`)."""
    failed = _missing((("heap", run), ("heap-baseline", baseline)))
    if failed:
        return {}, failed
    why, base_why = _window_heap(run), _window_heap(baseline)
    if why or base_why:
        return {}, [f for f in (why, base_why and f"{base_why} (baseline run)") if f]
    s, b = run.summary, baseline.summary
    window = b["peak_heap"] - b["start_heap"]
    raw, level = s["peak_heap"] - HEAP_MARKER_BYTES, s["start_heap"] - HEAP_MARKER_BYTES + window
    extra = (s["peak_heap_extra"] - s["start_heap_extra"]) - (b["peak_heap_extra"] - b["start_heap_extra"])
    return {"peak_heap_bytes": raw - level, "peak_heap_raw_bytes": raw, "peak_heap_baseline_bytes": level,
            "peak_heap_extra_bytes": extra, **native_heap(run, baseline)}, []


def native_heap(run: WorkerRun, baseline: WorkerRun) -> dict:
    """Bytes live at the run's heap peak that code outside the Python installation (liboqs, OpenSSL,
    a binding's extension module) asked the allocator for, minus the same in the baseline run, and
    the functions that did (``object: function bytes``, largest first); massif's tree names them.
    Empty when either run has no breakdown."""
    ours, theirs = run.summary.get("callers"), baseline.summary.get("callers")
    if ours is None or theirs is None:
        return {}
    interpreter = set(run.summary.get("interpreter_objects") or ()) | set(baseline.summary.get("interpreter_objects")
                                                                          or ())
    delta: dict[tuple[str, str], int] = {}
    for sign, callers in ((1, ours), (-1, theirs)):
        for path, functions in callers.items():
            if path == "?" or path in interpreter:
                continue
            for function, size in functions.items():
                delta[(path, function)] = delta.get((path, function), 0) + sign * size
    per_object: dict[str, int] = {}
    for (path, _), size in delta.items():
        per_object[path] = per_object.get(path, 0) + size
    # per object that added bytes, its largest allocating functions up to that net amount (a baseline shared by
    # a backend's algorithms built another algorithm's objects through other functions: those cancel in the net)
    named = []
    for path, net in per_object.items():
        for function, size in sorted(((f, v) for (p, f), v in delta.items() if p == path and v > 0),
                                     key=lambda t: -t[1]):
            if net <= 0:
                break
            named.append((path, function, size))
            net -= size
    named.sort(key=lambda t: -t[2])
    return {"peak_heap_native_bytes": sum(per_object.values()),
            "peak_heap_native_callers": ", ".join(f"{Path(p).name}: {f} {v}" for p, f, v in named[:4])}


def stack_figures(run: WorkerRun | None, baseline: WorkerRun | None) -> tuple[dict, list[str]]:
    """What the operation adds to the stack: peak of the run minus peak of the baseline run."""
    failed = _missing((("stack", run), ("stack-baseline", baseline)))
    if failed:
        return {}, failed
    raw, level = run.summary["peak_stacks"], baseline.summary["peak_stacks"]
    marks = [flags.make("peak-outside-window", name) for name, value in (("stack", raw), ("stack-baseline", level))
             if value < STACK_MARKER_DEPTH * STACK_MARKER_MIN_BYTES_PER_LEVEL]
    return {"peak_stack_bytes": raw - level, "peak_stack_raw_bytes": raw, "peak_stack_baseline_bytes": level}, marks


def _cache_flags(runs) -> list[str]:
    """``from-cache`` when every worker run behind a row came from the cache (detail: the key of the
    first and the run that measured them)."""
    runs = [r for r in runs if r is not None]
    if not runs or not all(r.cached for r in runs):
        return []
    origins = ", ".join(sorted({r.origin for r in runs}))
    return [flags.make("from-cache", f"key {runs[0].cached[:16]}, measured in run {origins}")]


def measurement_rows(job: Job, base: dict, inputs: dict) -> list[dict]:
    """The schema rows of one job: massif heap and stack (warm), massif heap of the first call
    (when measured), tracemalloc and maxrss.  Every worker's output is checked here (a cached run's
    was checked when it was measured)."""
    algo, runs = job.algo, job.runs
    common = dict(base, **algo.identity(), operation=job.operation, message_bytes=job.message_bytes, samples=1)
    wrong = {k: why for k, r in runs.items() if not RUNS[k][1] and (why := check_output(algo, job.operation,
                                                                                         inputs, r))}
    rows = []
    if "heap" in runs or "stack" in runs:
        heap, hflags = heap_figures(runs.get("heap"), runs.get(BASELINE_OF["heap"]))
        stack, sflags = (stack_figures(runs["stack"], runs.get(BASELINE_OF["stack"])) if "stack" in runs
                         else ({}, []))
        failed = [_failed(k, wrong[k]) for k in ("heap", "stack") if k in wrong]
        measured = [k for k in ("heap", "stack") if k in runs]
        builds_used = {runs[k].build for k in measured if runs[k].build}
        extra = ([flags.make("valgrind-used-generic-build")] if any(builds.matches(b, "generic") for b in builds_used)
                 else [])
        if "stack" not in runs:
            extra.append(flags.make("stack-measured-at-other-message-sizes"))
        extra += _cache_flags([runs.get(k) for k in measured] + [runs.get(BASELINE_OF[k]) for k in measured])
        rows.append(dict(common, memory_source=SOURCE_MASSIF, verified=not failed and not hflags and not sflags,
                         flags=flags.join(failed + hflags + sflags + extra), massif_build=",".join(sorted(builds_used)),
                         valgrind_wall_s=round(sum(runs[k].wall_s for k in measured if not runs[k].cached), 2),
                         **heap, **stack))
    if "heap-cold" in runs:
        heap, hflags = heap_figures(runs["heap-cold"], runs.get(BASELINE_OF["heap-cold"]))
        failed = [_failed("heap-cold", wrong["heap-cold"])] if "heap-cold" in wrong else []
        cached = _cache_flags([runs["heap-cold"], runs.get(BASELINE_OF["heap-cold"])])
        rows.append(dict(common, memory_source=SOURCE_MASSIF_FIRST_CALL, verified=not failed and not hflags,
                         flags=flags.join([*failed, *hflags, flags.make("first-call-in-process"), *cached]),
                         **heap))
    plain = runs.get("plain")
    ok = plain is not None and not plain.error
    failed = [_failed("plain", wrong["plain"])] if "plain" in wrong else []
    cached = _cache_flags([plain])
    rows.append(dict(common, memory_source=SOURCE_TRACEMALLOC, verified=ok and not failed,
                     peak_heap_bytes=plain.report.get("tracemalloc_peak_bytes") if ok else None,
                     flags=flags.join([*failed, flags.make("python-level-allocations-only"), *cached])))
    rss_op = plain.report.get("max_rss_bytes") if ok else None
    rss_base = plain.report.get("max_rss_before_bytes") if ok else None
    rows.append(dict(common, memory_source=SOURCE_MAXRSS, verified=ok and not failed,
                     peak_heap_bytes=None if rss_op is None or rss_base is None else rss_op - rss_base,
                     max_rss_raw_bytes=rss_op, max_rss_baseline_bytes=rss_base,
                     flags=flags.join([*failed, flags.make("coarse-rss"), *cached])))
    return rows


def _size_row(algo, keys, signature: bytes) -> dict:
    row = {"algorithm": algo.name, "backend": algo.backend, "family": algo.family, "nist_level": algo.nist_level}
    row.update(algo.key_sizes(keys))
    row["signature_bytes"] = len(signature)
    row["signature_max_bytes"] = algo.declared_sizes().get("signature_max_bytes", len(signature))
    return row


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
            if stack_message_bytes is None or job.message_bytes is None or job.message_bytes in stack_message_bytes:
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
                   message_bytes: Sequence[int] | int = (32,), *, jobs: int = 2, use_valgrind: bool | None = None,
                   cold: bool = True, stack_message_bytes: Sequence[int] | None = None,
                   study: str = "", seed: int | None = 0,
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
    depend on what else runs.  Times are not (``pqlab.bench`` runs alone, serially, and is never cached).
    """

    algos = inputs.unique(resolve(inputs.names(algorithms, "algorithm")))
    not_signatures = [f"{a.name}@{a.backend} ({a.kind})" for a in algos if a.kind != "sig"]
    if not_signatures:
        raise BadInput(f"measure_memory measures signature schemes; {', '.join(not_signatures)} "
                       f"{'is' if len(not_signatures) == 1 else 'are'} not: leave {'it' if len(not_signatures) == 1 else 'them'} out")
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
                  "message_bytes": sizes, "jobs": jobs, "seed": seed, "use_valgrind": use_valgrind, "cold": cold,
                  "stack_message_bytes": None if stack_message_bytes is None else list(stack_message_bytes),
                  "heap_marker_bytes": HEAP_MARKER_BYTES, "stack_marker_depth": STACK_MARKER_DEPTH,
                  "massif_depth": MASSIF_DEPTH, **(params or {})}
    rec = RunRecorder(study, run_params, label=f"{study}-memory" if study else "memory", folder=folder, save=save,
                      meta={"valgrind": status, "memory_method": METHOD})
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
    """Compile pqlab's modules to bytecode where it is missing or stale (in place, as an import would), so that
    every worker loads them the same way; whether all of them have it now.  A worker that compiles a module
    from source at import is left in another state: inside the window its interpreter then grows a dict table
    more or less, and the heap of a Python call differs by 568 bytes (measured: ML-DSA-44 verify through
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
            for job, run in zip(firsts, pool.map(lambda j: run_worker(j.algo.name, j.algo.backend, "verify", j.inputs,
                                                                       "probe", work=j.work, timeout_s=timeout_s),
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
                algo.extra.get("build", ""), "operation": runner.operation, "message_bytes": runner.message_bytes,
                "kind": kind, "files": probe["files"], "bytecode": bytecode}
            key = cache_key(parts) if parts else ""
            entry = cache.get(key) if key else None
            if entry is not None:
                run = _cached_run(kind, entry)
                reused.append(run)
            else:
                given = ensure(runner.inputs)
                run = (run_worker(algo.name, algo.backend, runner.operation, runner.inputs, kind, work=runner.work,
                                  timeout_s=timeout_s, build=build[0], servers=servers) if build
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
                if job.runs.get(kind) and builds.matches(job.runs[kind].build, "generic") and base in job.runs]
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



