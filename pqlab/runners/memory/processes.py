"""Worker processes of a memory measurement: the command and environment a worker starts with, valgrind
massif around it, one worker run (a process of its own, or forked by a :class:`WorkerServer` that loaded the
backend under valgrind once), its report and profile (:class:`WorkerRun`), and the parent's check of its
output (:func:`check_output`)."""
from __future__ import annotations

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
from dataclasses import dataclass, field
from pathlib import Path

from pqlab.core import builds
from pqlab.liboqs.loader import build_environment
from pqlab.runners.memory.massif import MassifProfile, attribute_sites, parse_massif
from pqlab.runners.memory.method import _PORTABLE, HEAP_MARKER_BYTES, MASSIF_DEPTH, RUNS, STACK_MARKER_DEPTH
from pqlab.runners.memory.worker import read_keys


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
        version = subprocess.run([path, "--version"], capture_output=True, text=True,
                                 timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        return {"available": False, "path": path, "version": "", "reason": f"valgrind does not run: {exc}"}
    return {"available": bool(version), "path": path, "version": version,
            "reason": "" if version else "valgrind --version printed nothing"}


def massif_command(folder: Path, kind: str, depth: int = MASSIF_DEPTH,
                   valgrind: str = "valgrind") -> list[str]:
    """valgrind massif for the heap runs (`kind` "heap") or the stack runs ("stack") of a worker server,
    writing each process's profile and valgrind's messages to `folder` (``massif.PID.out``,
    ``valgrind.PID.log``).

    The heap run counts time in bytes allocated and freed, so that allocating the marker jumps
    the clock and massif must take a snapshot right then (the heap level before the operation)."""
    which = ["--stacks=no", "--time-unit=B"] if kind == "heap" else ["--heap=no", "--stacks=yes"]
    return [valgrind, "-q", "--tool=massif", *which, "--peak-inaccuracy=0", "--detailed-freq=1000000",
            "--threshold=0", "--read-inline-info=no", f"--depth={depth}",
            f"--massif-out-file={Path(folder) / 'massif.%p.out'}",
            f"--log-file={Path(folder) / 'valgrind.%p.log'}"]


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
    return {"peak_heap": prof.peak_heap, "peak_heap_extra": prof.peak_heap_extra,
            "peak_stacks": prof.peak_stacks, "start_heap": start.heap if start else None,
            "start_heap_extra": start.heap_extra if start else None, "callers": callers,
            "interpreter_objects": list(interpreter or ())}


#: What a worker inherits from the environment (where liboqs, valgrind and pqlab are); nothing else,
#: so that every worker starts with the same environment, and so the same initial stack.
WORKER_ENVIRONMENT = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "PYTHONPATH", "OQS_INSTALL_PATH",
                      "LD_LIBRARY_PATH", "CONDA_PREFIX", "PQLAB_ROOT", "VALGRIND_LIB", "PQLAB_LIBOQS_BUILD",
                      "PQLAB_LIBOQS_SOURCES")


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
            proc = subprocess.run(worker_command(python) + ["--job", "job.json"],
                                  env=worker_environment(build), cwd=out, capture_output=True, text=True,
                                  timeout=timeout_s)
            error = ("" if proc.returncode == 0
                     else f"exit {proc.returncode}: {(proc.stderr or proc.stdout)[-1500:].strip()}")
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
    return WorkerRun(kind, report, wall, report.get("build") or build, profile,  # the build it loaded
                     output=out)


class WorkerServer:
    """A worker server (``python -m pqlab.runners.memory.worker --serve BACKEND``) under valgrind massif in
    `mode` ("heap" or "stack"), with the environment of `build`: it loads the backend once and forks one
    process per job (:func:`pqlab.runners.memory.worker.serve`), whose profile :meth:`run` moves into the
    job's output folder."""

    def __init__(self, folder: Path, backend: str, mode: str, build: str = "", valgrind: str = "valgrind",
                 python: str | None = None) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix=f"{backend}-{mode}-", dir=folder))
        with open(self.folder / "server.err", "w") as err:  # the server's own; this process keeps no handle
            self.proc = subprocess.Popen(massif_command(self.folder, mode, valgrind=valgrind)
                                         + worker_command(python) + ["--serve", backend],
                                         env=worker_environment(build), cwd=self.folder,
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True,
                                         start_new_session=True)

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def run(self, job: dict, out: Path, timeout_s: float) -> str:
        """Run `job` in a forked process; "" when it exited 0, else why (its traceback, valgrind's
        messages)."""
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
                server = self._servers[key] = WorkerServer(self.folder, backend, mode, build, valgrind,
                                                           python)
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
            verifies = algo.verifier(inputs["pk"])(inputs["message"], sig) is True
            return "" if verifies else "signature does not verify"
        if operation == "verify":
            return "" if run.report.get("verdict") is True else "the worker rejected a valid signature"
        pk, sk = read_keys(run.output, run.report, prefix="out_")
        message = inputs["message"]
        verifies = algo.verifier(pk)(message, algo.signer(sk)(message)) is True
        return "" if verifies else "fresh keys do not sign/verify"
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
    run = run_worker(algo.name, algo.backend, job.operation, job.inputs, kind, work=job.work,
                     timeout_s=timeout_s, servers=servers)
    if run.error and RUNS[kind][0] != "plain" and algo.backend == "liboqs" and _UNSUPPORTED.search(run.error):
        run = run_worker(algo.name, algo.backend, job.operation, job.inputs, kind, work=job.work,
                         timeout_s=timeout_s, build=_PORTABLE, servers=servers)
    return run
