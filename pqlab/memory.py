"""Peak memory of ONE operation: native heap and stack (valgrind massif), Python heap (tracemalloc),
maximum resident set size (coarse).

Method, as liboqs' own memory tests and the OQS profiling do it: one operation per process.  The
parent generates keys, a message and a signature and writes them to files (:func:`write_inputs`);
a *worker* process loads them, performs one operation and writes its output to a file
(:func:`worker`); the parent checks that output (the signature verifies, fresh keys sign and
verify, the verdict is True), so no figure of a wrong result is reported.

    python -m pqlab.memory worker --algorithm ML-DSA-44 --backend liboqs --operation sign --inputs DIR

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

The worker starts without ``pqlab/__init__`` (which imports pandas), which keeps a run under
valgrind at about 2 s of CPU instead of 7 s; this module imports only the standard library at
its top.
"""
from __future__ import annotations

import ctypes
import functools
import gc
import json
import math
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

#: Held across the operation window of a massif run; larger than any heap the interpreter reaches.
HEAP_MARKER_BYTES = 256 << 20
#: Calls through C before the operation (about 0.5 KiB of C stack each on CPython 3.11).
STACK_MARKER_DEPTH = 400
#: A lower bound of the C stack one marker level takes: the check that the peak is in the window.
STACK_MARKER_MIN_BYTES_PER_LEVEL = 256
MASSIF_DEPTH = 12
SOURCE_MASSIF = "valgrind-massif:stacks"
SOURCE_MASSIF_FIRST_CALL = "valgrind-massif:first-call"
SOURCE_TRACEMALLOC = "tracemalloc"
SOURCE_MAXRSS = "maxrss"
SIGNATURE_OPERATIONS = ("keygen", "sign", "verify")
#: Stored with every run (meta["memory_method"]).
METHOD = ("one operation per worker process, inputs and outputs through files, outputs checked by the parent; "
          "valgrind massif, heap run (--stacks=no --time-unit=B) and stack run (--heap=no --stacks=yes), "
          f"--peak-inaccuracy=0; a {HEAP_MARKER_BYTES >> 20} MiB heap marker and a {STACK_MARKER_DEPTH}-call "
          "stack marker put the peaks inside the operation; heap = (peak - level when the marker was allocated) "
          "- the same of a baseline worker calling nothing in the window; stack = peak - peak of that baseline "
          "worker; warm = one call before the measured one; garbage collector run before and paused in the window")
_PACKAGE_DIR = Path(__file__).resolve().parent


# ----- massif output -----
@dataclass(frozen=True)
class MassifSnapshot:
    index: int
    time: int
    heap: int
    heap_extra: int
    stacks: int
    tree: str  # empty | detailed | peak

    @property
    def total(self) -> int:
        return self.heap + self.heap_extra + self.stacks


@dataclass
class MassifProfile:
    """The snapshots of one massif output file."""

    snapshots: list[MassifSnapshot]
    command: str = ""
    description: str = ""
    time_unit: str = ""

    def _max(self, attr: str) -> MassifSnapshot:
        if not self.snapshots:
            raise ValueError("massif output without snapshots")
        return max(self.snapshots, key=lambda s: (getattr(s, attr), s.heap_extra))

    @property
    def peak_heap(self) -> int:
        """Largest mem_heap_B over every snapshot (bytes the program asked for)."""
        return self._max("heap").heap

    @property
    def peak_heap_extra(self) -> int:
        """mem_heap_extra_B (allocator headers and alignment) in the snapshot of the largest heap."""
        return self._max("heap").heap_extra

    @property
    def peak_stacks(self) -> int:
        """Largest mem_stacks_B over every snapshot (0 unless massif ran with --stacks=yes)."""
        return self._max("stacks").stacks

    @property
    def peak(self) -> MassifSnapshot | None:
        """Massif's own peak snapshot (largest heap + extra + stacks), if it took one."""
        return next((s for s in self.snapshots if s.tree == "peak"), None)

    def window_start(self, marker: int) -> MassifSnapshot | None:
        """The snapshot taken when the heap marker was allocated: the first whose heap reaches
        `marker`.  With ``--time-unit=B`` (time = bytes allocated + freed) the marker's allocation
        moves massif's clock by far more than its interval between snapshots, so massif must take
        one right then; checked here: the clock jumped by the marker since the snapshot before."""
        for prev, snap in zip(self.snapshots, self.snapshots[1:]):
            if snap.heap >= marker:
                exact = self.time_unit == "B" and snap.time - prev.time >= marker and prev.heap < marker
                return snap if exact else None
        return None


_FIELD = re.compile(r"^(snapshot|time|mem_heap_B|mem_heap_extra_B|mem_stacks_B|heap_tree)=(\S*)\s*$")
_HEADER = re.compile(r"^(desc|cmd|time_unit):\s?(.*)$")


def parse_massif(source: Path | str) -> MassifProfile:
    """Read a massif output file (a path, or the text itself when it contains a newline)."""
    text = source if isinstance(source, str) and "\n" in source else Path(source).read_text()
    header: dict[str, str] = {}
    snapshots: list[MassifSnapshot] = []
    current: dict[str, str] | None = None

    def close() -> None:
        if current is not None and "time" in current:
            snapshots.append(MassifSnapshot(int(current["snapshot"]), int(current["time"]),
                                            int(current.get("mem_heap_B", 0)), int(current.get("mem_heap_extra_B", 0)),
                                            int(current.get("mem_stacks_B", 0)), current.get("heap_tree", "empty")))

    for line in text.splitlines():
        m = _FIELD.match(line)
        if m:
            key, value = m.groups()
            if key == "snapshot":
                close()
                current = {"snapshot": value}
            elif current is not None:
                current[key] = value
        elif current is None and (h := _HEADER.match(line)):
            header[h.group(1)] = h.group(2).strip()
    close()
    return MassifProfile(snapshots, header.get("cmd", ""), header.get("desc", ""), header.get("time_unit", ""))


# ----- inputs and outputs through files -----
def encode_key(key) -> tuple[str, bytes]:
    """A key as (encoding, bytes): raw bytes as they are, library key objects as DER."""
    if isinstance(key, (bytes, bytearray)):
        return "raw", bytes(key)
    module = type(key).__module__
    if module.startswith("cryptography"):
        from cryptography.hazmat.primitives import serialization as s

        if hasattr(key, "private_bytes"):
            return "cryptography-der-private", key.private_bytes(s.Encoding.DER, s.PrivateFormat.PKCS8,
                                                                 s.NoEncryption())
        return "cryptography-der-public", key.public_bytes(s.Encoding.DER, s.PublicFormat.SubjectPublicKeyInfo)
    if module.startswith("Crypto."):
        kind = "ecc" if "ECC" in module else "rsa"
        return f"pycryptodome-{kind}-der", key.export_key(format="DER")
    raise TypeError(f"cannot write a key of type {type(key).__module__}.{type(key).__name__} to a file")


def decode_key(encoding: str, data: bytes):
    """The inverse of :func:`encode_key`."""
    if encoding == "raw":
        return data
    if encoding.startswith("cryptography-der"):
        from cryptography.hazmat.primitives import serialization as s

        return (s.load_der_private_key(data, None) if encoding.endswith("private") else s.load_der_public_key(data))
    if encoding == "pycryptodome-ecc-der":
        from Crypto.PublicKey import ECC

        return ECC.import_key(data)
    if encoding == "pycryptodome-rsa-der":
        from Crypto.PublicKey import RSA

        return RSA.import_key(data)
    raise ValueError(f"unknown key encoding {encoding!r}")


def write_keys(folder: Path, keys, prefix: str = "") -> dict:
    """pk.bin and sk.bin in `folder`; returns their encodings."""
    pk, sk = keys
    (pk_enc, pk_bytes), (sk_enc, sk_bytes) = encode_key(pk), encode_key(sk)
    (folder / f"{prefix}pk.bin").write_bytes(pk_bytes)
    (folder / f"{prefix}sk.bin").write_bytes(sk_bytes)
    return {"pk_encoding": pk_enc, "sk_encoding": sk_enc}


def read_keys(folder: Path, encodings: dict, prefix: str = ""):
    return (decode_key(encodings["pk_encoding"], (folder / f"{prefix}pk.bin").read_bytes()),
            decode_key(encodings["sk_encoding"], (folder / f"{prefix}sk.bin").read_bytes()))


def write_inputs(folder: Path | str, algorithm: str, backend: str, message: bytes, keys, signature: bytes) -> Path:
    """Everything a worker needs for keygen, sign and verify of one algorithm and message."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    meta = {"algorithm": algorithm, "backend": backend, "message_bytes": len(message), **write_keys(folder, keys)}
    (folder / "message.bin").write_bytes(message)
    (folder / "signature.bin").write_bytes(signature)
    (folder / "inputs.json").write_text(json.dumps(meta, indent=1) + "\n")
    return folder


def read_inputs(folder: Path | str) -> dict:
    folder = Path(folder)
    meta = json.loads((folder / "inputs.json").read_text())
    pk, sk = read_keys(folder, meta)
    return dict(meta, pk=pk, sk=sk, message=(folder / "message.bin").read_bytes(),
                signature=(folder / "signature.bin").read_bytes())


# ----- the worker: one operation per process -----
def _noop(*args) -> None:
    return None


def prepare_operation(algo, operation: str, inputs: dict) -> Callable[[], object]:
    """The zero-argument call of `operation`, with everything it needs already loaded."""
    if operation == "keygen":
        return algo.generate
    if operation == "sign":
        return functools.partial(algo.signer(inputs["sk"]), inputs["message"])
    if operation == "verify":
        return functools.partial(algo.verifier(inputs["pk"]), inputs["message"], inputs["signature"])
    raise ValueError(f"memory measures {', '.join(SIGNATURE_OPERATIONS)}, not {operation!r}")


def as_baseline(call: Callable[[], object]) -> Callable[[], object]:
    """The same prepared call (its objects kept alive), with the operation itself left out."""
    if isinstance(call, functools.partial):
        return functools.partial(_noop, call.func, *call.args)
    return functools.partial(_noop, call)


def _dive(depth: int, call: Callable[[], object]):
    """Call `call` at the bottom of `depth` nested calls through C (functools.partial)."""
    if depth <= 0:
        return call()
    return functools.partial(_dive, depth - 1, call)()


class Window:
    """The markers that put a massif run's peaks inside the operation: set up before it starts."""

    def __init__(self, heap_marker: int = 0, stack_depth: int = 0) -> None:
        self.heap_marker, self.stack_depth = heap_marker, stack_depth
        libc = ctypes.CDLL(None)
        self._malloc, self._free = libc.malloc, libc.free
        self._malloc.restype = ctypes.c_void_p
        self._malloc.argtypes = [ctypes.c_size_t]
        self._free.argtypes = [ctypes.c_void_p]

    def run(self, call: Callable[[], object]):
        marker = self._malloc(self.heap_marker) if self.heap_marker else None
        if self.heap_marker and not marker:
            raise MemoryError(f"could not reserve the {self.heap_marker}-byte heap marker")
        try:
            return _dive(self.stack_depth, call)
        finally:
            if marker:
                self._free(marker)


def peak_rss() -> int:
    """This process's peak resident set size in bytes: VmHWM of /proc/self/status, which starts afresh
    at exec (``ru_maxrss`` does not on Linux: a child inherits its parent's high-water mark)."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _write_output(out: Path, operation: str, result) -> dict:
    if result is None:
        return {}
    if operation == "keygen":
        return write_keys(out, result, prefix="out_")
    if operation == "sign":
        (out / "out_signature.bin").write_bytes(result)
        return {"signature_bytes": len(result)}
    return {"verdict": result is True}


def worker(algorithm: str, backend: str, operation: str, inputs: Path | str, output: Path | str, *,
           baseline: bool = False, heap_marker: int = 0, stack_depth: int = 0, trace: bool = False,
           warmup: int = 0) -> dict:
    """Load the inputs, perform ONE operation (or its baseline), write the output and result.json.

    `warmup`: calls of the operation before the measured one (in the baseline too), so that a
    library's one-time initialisation on first use is not counted as the operation's memory."""
    from .algorithms import get

    inputs, output = Path(inputs), Path(output)
    output.mkdir(parents=True, exist_ok=True)
    algo = get(algorithm, backend)
    data = read_inputs(inputs) if operation != "keygen" else {}
    call = prepare_operation(algo, operation, data)
    for _ in range(warmup):
        call()
    if baseline:
        call = as_baseline(call)
    window = Window(heap_marker, stack_depth)
    gc.collect()  # older garbage is freed now, not inside the window (where it would offset the operation)
    gc.disable()
    if trace:
        import tracemalloc

        tracemalloc.start()
    rss_before = peak_rss()  # after tracemalloc's own tables
    if trace:
        start_bytes = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
    t0 = time.perf_counter_ns()
    try:
        result = window.run(call)
    finally:
        wall_ns = time.perf_counter_ns() - t0
        gc.enable()
    if trace:
        traced_peak = tracemalloc.get_traced_memory()[1] - start_bytes
        tracemalloc.stop()
    report = {"algorithm": algorithm, "backend": backend, "operation": operation, "baseline": baseline,
              "warmup": warmup, "wall_ns": wall_ns, "variant": getattr(algo, "extra", {}).get("variant", ""),
              "max_rss_bytes": peak_rss(), "max_rss_before_bytes": rss_before}
    if trace:
        report["tracemalloc_peak_bytes"] = traced_peak
    report.update(_write_output(output, operation, result))
    (output / "result.json").write_text(json.dumps(report, indent=1) + "\n")
    return report


def _worker_cli(argv: list[str]) -> int:
    import argparse

    p = argparse.ArgumentParser(prog="python -m pqlab.memory worker",
                                description="Perform ONE operation on inputs read from files (see pqlab.memory).")
    p.add_argument("--algorithm", required=True)
    p.add_argument("--backend", required=True)
    p.add_argument("--operation", required=True, choices=SIGNATURE_OPERATIONS)
    p.add_argument("--inputs", required=True, help="folder written by pqlab.memory.write_inputs")
    p.add_argument("--output", help="folder for result.json and the output (default: INPUTS/out)")
    p.add_argument("--baseline", type=int, default=0, choices=(0, 1), help="1: leave the operation out")
    p.add_argument("--heap-marker", type=int, default=0)
    p.add_argument("--stack-depth", type=int, default=0)
    p.add_argument("--trace", type=int, default=0, choices=(0, 1), help="1: tracemalloc around the operation")
    p.add_argument("--warmup", type=int, default=0, help="calls of the operation before the measured one")
    a = p.parse_args(argv)
    report = worker(a.algorithm, a.backend, a.operation, a.inputs, a.output or Path(a.inputs) / "out",
                    baseline=bool(a.baseline), heap_marker=a.heap_marker, stack_depth=a.stack_depth,
                    trace=bool(a.trace), warmup=a.warmup)
    print(json.dumps(report))
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["worker"]:
        return _worker_cli(argv[1:])
    print("usage: python -m pqlab.memory worker --algorithm A --backend B --operation OP --inputs DIR "
          "[--output DIR] [--baseline 0|1] [--heap-marker BYTES] [--stack-depth N] [--trace 0|1]", file=sys.stderr)
    return 2


# ----- the driver -----
_BOOTSTRAP = (
    "import sys, types\n"
    "pkg = types.ModuleType('pqlab')\n"
    "pkg.__path__ = [{path!r}]\n"
    "sys.modules['pqlab'] = pkg\n"
    "from pqlab.memory import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


def worker_command(python: str | None = None) -> list[str]:
    """The interpreter command that starts a worker without importing pqlab/__init__ (and pandas)."""
    return [python or sys.executable, "-c", _BOOTSTRAP.format(path=str(_PACKAGE_DIR))]


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


def massif_command(out_file: Path, kind: str, depth: int = MASSIF_DEPTH, valgrind: str = "valgrind") -> list[str]:
    """valgrind massif for the heap run (`kind` "heap") or the stack run ("stack").

    The heap run counts time in bytes allocated and freed, so that allocating the marker jumps
    the clock and massif must take a snapshot right then (the heap level before the operation)."""
    which = ["--stacks=no", "--time-unit=B"] if kind == "heap" else ["--heap=no", "--stacks=yes"]
    return [valgrind, "-q", "--tool=massif", *which, "--peak-inaccuracy=0", "--detailed-freq=1000000",
            "--read-inline-info=no",
            f"--depth={depth}", f"--massif-out-file={out_file}"]


@dataclass
class WorkerRun:
    """One worker process: what it reported and, under massif, the profile."""

    kind: str  # a key of RUNS
    report: dict
    wall_s: float
    variant: str = ""
    profile: MassifProfile | None = None
    error: str = ""
    output: Path | None = None


#: The worker runs of a measurement: name -> (mode, baseline, warm-up calls before the window).
#: "warm" runs call the operation once first, so a library's one-time initialisation on first
#: use (OpenSSL 3 fetching its provider's methods, a binding resolving its C functions) is not
#: counted as the operation's memory; "heap-cold" measures exactly that first call.
RUNS = {
    "plain": ("plain", False, 1),
    "heap": ("heap", False, 1),
    "stack": ("stack", False, 1),
    "heap-cold": ("heap", False, 0),
    "stack-baseline": ("stack", True, 0),
    "heap-baseline": ("heap", True, 0),
}
_UNSUPPORTED = re.compile(r"unhandled instruction|unrecognised instruction|SIGILL|illegal instruction", re.I)


def run_worker(algorithm: str, backend: str, operation: str, inputs: Path, kind: str, *, work: Path,
               timeout_s: float = 1800, variant: str = "", valgrind: str = "valgrind",
               python: str | None = None) -> WorkerRun:
    """Start one worker (`kind`: a key of :data:`RUNS`) and collect its report and massif profile."""
    mode, baseline, warmup = RUNS[kind]
    out = Path(work) / f"{operation}-{kind}{'-' + variant if variant else ''}"
    out.mkdir(parents=True, exist_ok=True)
    args = ["worker", "--algorithm", algorithm, "--backend", backend, "--operation", operation,
            "--inputs", str(inputs), "--output", str(out), "--baseline", str(int(baseline)), "--warmup", str(warmup)]
    env = dict(os.environ, PYTHONHASHSEED="0", PYTHONDONTWRITEBYTECODE="1")
    if variant and variant != "default":
        from .liboqs import variant_environment

        env = variant_environment(variant, env)
    cmd = worker_command(python)
    massif_out = out / "massif.out"
    if mode == "plain":
        args += ["--trace", "1"]
    else:
        args += ["--heap-marker", str(HEAP_MARKER_BYTES), "--stack-depth", str(STACK_MARKER_DEPTH)]
        cmd = massif_command(massif_out, mode, valgrind=valgrind) + cmd
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd + args, env=env, cwd=out, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return WorkerRun(kind, {}, time.perf_counter() - t0, variant, error=f"timeout after {timeout_s:.0f} s",
                         output=out)
    wall = time.perf_counter() - t0
    if proc.returncode != 0 or not (out / "result.json").exists():
        tail = (proc.stderr or proc.stdout)[-1500:].strip()
        return WorkerRun(kind, {}, wall, variant, error=f"exit {proc.returncode}: {tail}", output=out)
    report = json.loads((out / "result.json").read_text())
    profile = parse_massif(massif_out) if mode != "plain" else None
    return WorkerRun(kind, report, wall, variant or report.get("variant", ""), profile, output=out)


def check_output(algo, operation: str, inputs: dict, run: WorkerRun) -> str:
    """"" when a worker's output is right (checked here, in the parent), else what is wrong."""
    if run.error:
        return run.error
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


def execute(job: Job, kind: str, timeout_s: float = 1800) -> WorkerRun:
    """Run `kind` for `job`; when valgrind cannot run liboqs' CPU-optimised build, the portable one."""
    algo = job.algo
    run = run_worker(algo.name, algo.backend, job.operation, job.inputs, kind, work=job.work, timeout_s=timeout_s)
    if run.error and RUNS[kind][0] != "plain" and algo.backend == "liboqs" and _UNSUPPORTED.search(run.error):
        run = run_worker(algo.name, algo.backend, job.operation, job.inputs, kind, work=job.work,
                         timeout_s=timeout_s, variant="generic")
    return run


def _failed(what: str, why: str) -> str:
    return f"failed:{what}: {why}".replace(";", ",").replace("\n", " ")[:300]


def _window_heap(run: WorkerRun) -> tuple[MassifSnapshot | None, str]:
    prof = run.profile
    if prof.peak_heap < HEAP_MARKER_BYTES:
        return None, "peak-outside-window:heap"
    start = prof.window_start(HEAP_MARKER_BYTES)
    return (start, "") if start is not None else (None, "heap-level-before-operation-not-captured")


def heap_figures(run: WorkerRun | None, baseline: WorkerRun | None) -> tuple[dict, list[str]]:
    """What the operation adds to the heap: (peak - level when the window opened) of the run,
    minus the same of the baseline run (what the empty window itself allocates, ~0.1 KiB)."""
    flags = [_failed(f"massif {name}", r.error if r else "not run") for name, r in (("heap", run),
             ("heap-baseline", baseline)) if r is None or r.error or r.profile is None]
    if flags:
        return {}, flags
    (start, why), (base_start, base_why) = _window_heap(run), _window_heap(baseline)
    if why or base_why:
        return {}, [f for f in (why, base_why and f"{base_why}-baseline") if f]
    prof, base = run.profile, baseline.profile
    window = base.peak_heap - base_start.heap
    raw, level = prof.peak_heap - HEAP_MARKER_BYTES, start.heap - HEAP_MARKER_BYTES + window
    extra = (prof.peak_heap_extra - start.heap_extra) - (base.peak_heap_extra - base_start.heap_extra)
    return {"peak_heap_bytes": raw - level, "peak_heap_raw_bytes": raw, "peak_heap_baseline_bytes": level,
            "peak_heap_extra_bytes": extra}, []


def stack_figures(run: WorkerRun | None, baseline: WorkerRun | None) -> tuple[dict, list[str]]:
    """What the operation adds to the stack: peak of the run minus peak of the baseline run."""
    flags = [_failed(f"massif {name}", r.error if r else "not run") for name, r in (("stack", run),
             ("stack-baseline", baseline)) if r is None or r.error or r.profile is None]
    if flags:
        return {}, flags
    raw, level = run.profile.peak_stacks, baseline.profile.peak_stacks
    flags = [f"peak-outside-window:{name}" for name, value in (("stack", raw), ("stack-baseline", level))
             if value < STACK_MARKER_DEPTH * STACK_MARKER_MIN_BYTES_PER_LEVEL]
    return {"peak_stack_bytes": raw - level, "peak_stack_raw_bytes": raw, "peak_stack_baseline_bytes": level}, flags


def measurement_rows(job: Job, base: dict, inputs: dict) -> list[dict]:
    """The schema rows of one job: massif heap and stack (warm), massif heap of the first call
    (when measured), tracemalloc and maxrss.  Every worker's output is checked here."""
    algo = job.algo
    common = dict(base, backend=algo.backend, implementation=algo.implementation,
                  library_version=algo.library_version, variant=algo.extra.get("variant", ""),
                  algorithm=algo.name, family=algo.family, nist_level=algo.nist_level, operation=job.operation,
                  message_bytes=job.message_bytes, samples=1)
    wrong = {k: why for k, r in job.runs.items() if not RUNS[k][1] and (why := check_output(algo, job.operation,
                                                                                             inputs, r))}
    rows = []
    if "heap" in job.runs or "stack" in job.runs:
        heap, hflags = heap_figures(job.runs.get("heap"), job.runs.get("heap-baseline"))
        stack, sflags = (stack_figures(job.runs["stack"], job.runs.get("stack-baseline")) if "stack" in job.runs
                         else ({}, []))
        failed = [_failed(k, wrong[k]) for k in ("heap", "stack") if k in wrong]
        variants = {r.variant for k, r in job.runs.items() if k in ("heap", "stack") and r.variant}
        extra = ["valgrind-used-generic-build"] if "generic" in variants else []
        if "stack" not in job.runs:
            extra.append("stack-measured-at-other-message-sizes")
        rows.append(dict(common, memory_source=SOURCE_MASSIF, verified=not failed and not hflags and not sflags,
                         flags=";".join(failed + hflags + sflags + extra), massif_variant=",".join(sorted(variants)),
                         valgrind_wall_s=round(sum(job.runs[k].wall_s for k in ("heap", "stack") if k in job.runs), 2),
                         **heap, **stack))
    if "heap-cold" in job.runs:
        heap, hflags = heap_figures(job.runs["heap-cold"], job.runs.get("heap-baseline"))
        failed = [_failed("heap-cold", wrong["heap-cold"])] if "heap-cold" in wrong else []
        rows.append(dict(common, memory_source=SOURCE_MASSIF_FIRST_CALL, verified=not failed and not hflags,
                         flags=";".join(failed + hflags + ["first-call-in-process:includes-one-time-initialisation"]),
                         **heap))
    plain = job.runs.get("plain")
    ok = plain is not None and not plain.error
    failed = [_failed("plain", wrong["plain"])] if "plain" in wrong else []
    rows.append(dict(common, memory_source=SOURCE_TRACEMALLOC, verified=ok and not failed,
                     peak_heap_bytes=plain.report.get("tracemalloc_peak_bytes") if ok else None,
                     flags=";".join(failed + ["python-level-allocations-only"])))
    rss_op = plain.report.get("max_rss_bytes") if ok else None
    rss_base = plain.report.get("max_rss_before_bytes") if ok else None
    rows.append(dict(common, memory_source=SOURCE_MAXRSS, verified=ok and not failed,
                     peak_heap_bytes=None if rss_op is None or rss_base is None else rss_op - rss_base,
                     max_rss_raw_bytes=rss_op, max_rss_baseline_bytes=rss_base,
                     flags=";".join(failed + ["coarse:resident-pages-of-the-whole-process"])))
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
    empty window: they depend on the call path only)."""
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
            tasks += [(runner, "stack-baseline", members), (runner, "heap-baseline", members)]
    # slowest first (stack runs of the "s" sets), so that the workers finish together
    return sorted(tasks, key=lambda t: (not t[0].slow, RUNS[t[1]][0] != "stack", RUNS[t[1]][0] != "heap"))


def measure_memory(algorithms: Sequence, operations: Sequence[str] = SIGNATURE_OPERATIONS,
                   message_bytes: Sequence[int] | int = (32,), *, jobs: int = 2, use_valgrind: bool | None = None,
                   cold: bool = True, stack_message_bytes: Sequence[int] | None = None,
                   study: str = "03_memory_footprint", seed: int | None = 0,
                   timeout_s: float = 1800, save: bool = True, folder: Path | str | None = None,
                   progress: bool = True, keep_work: Path | str | None = None, params: dict | None = None):
    """Peak memory of every operation of every algorithm and message size; returns (and saves) a Run.

    keygen does not depend on the message: it is measured once (``message_bytes`` empty).  Worker
    processes run `jobs` at a time.  `use_valgrind`: None = when valgrind is installed; without
    it only tracemalloc and maxrss are measured and the run's meta says why.  `cold`: also the
    heap of the first call in a process (once per algorithm and operation).  `stack_message_bytes`:
    the message sizes at which the stack is measured too (default: all; the stack does not depend on
    the message, and its massif runs are the slow ones).
    """
    import datetime as dt

    from . import machine
    from .algorithms import random_message, resolve
    from .bench import new_run_id
    from .results import Run
    from .schema import SCHEMA_VERSION

    algos = resolve(algorithms)
    sizes = [message_bytes] if isinstance(message_bytes, int) else list(message_bytes)
    status = find_valgrind()
    if use_valgrind is None:
        use_valgrind = status["available"]
    elif use_valgrind and not status["available"]:
        raise RuntimeError(status["reason"])
    run_id = new_run_id(f"{study}-memory" if study else "memory")
    started = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    run_params = {"algorithms": [f"{a.name}@{a.backend}" for a in algos], "operations": list(operations),
                  "message_bytes": sizes, "jobs": jobs, "seed": seed, "use_valgrind": use_valgrind, "cold": cold,
                  "stack_message_bytes": None if stack_message_bytes is None else list(stack_message_bytes),
                  "heap_marker_bytes": HEAP_MARKER_BYTES, "stack_marker_depth": STACK_MARKER_DEPTH,
                  "massif_depth": MASSIF_DEPTH, **(params or {})}
    meta = machine.collect(run_params)
    meta.update(study=study, started_at=started, schema_version=SCHEMA_VERSION, valgrind=status,
                memory_method=METHOD)
    base = {"schema_version": SCHEMA_VERSION, "run_id": run_id, "started_at": started,
            "machine_id": meta["machine_id"], "study": study}
    tmp = Path(keep_work) if keep_work else Path(tempfile.mkdtemp(prefix="pqlab-memory-"))
    t_start = time.perf_counter()
    try:
        plan: list[Job] = []
        size_rows, inputs = [], {}
        for algo in algos:
            for size in sizes:
                message = random_message(size, seed)
                keys = algo.generate()
                signature = algo.signer(keys[1])(message)
                folder_in = write_inputs(tmp / _safe(f"{algo.name}@{algo.backend}") / f"m{size}", algo.name,
                                         algo.backend, message, keys, signature)
                inputs[folder_in] = read_inputs(folder_in)
                if size == sizes[0]:
                    size_rows.append(dict(_size_row(algo, keys, signature), schema_version=SCHEMA_VERSION,
                                          run_id=run_id))
                plan += [Job(algo, op, None if op == "keygen" else size, folder_in) for op in operations
                         if op in algo.operations and (op != "keygen" or size == sizes[0])]
        tasks = plan_runs(plan, use_valgrind, cold, stack_message_bytes)
        bar = None
        if progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=len(tasks), desc=f"{study or 'memory'}: worker processes", unit="run", leave=True,
                       dynamic_ncols=True)

        def one(task) -> None:
            runner, kind, members, *variant = task
            run = (run_worker(runner.algo.name, runner.algo.backend, runner.operation, runner.inputs, kind,
                              work=runner.work, timeout_s=timeout_s, variant=variant[0])
                   if variant else execute(runner, kind, timeout_s))
            for job in members:
                job.runs[kind] = run
            if bar is not None:
                bar.update(1)

        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            list(pool.map(one, tasks))
            # a job whose massif runs fell back to the portable build needs a baseline of that build
            redo = [(job, kind, [job], "generic") for job in plan for kind in ("stack-baseline", "heap-baseline")
                    if job.runs.get(kind[:-9]) and job.runs[kind[:-9]].variant == "generic"]
            list(pool.map(one, redo))
        if bar is not None:
            bar.close()
        measurements = []
        for job in plan:
            measurements += measurement_rows(job, base, inputs[job.inputs])
    finally:
        if not keep_work:
            shutil.rmtree(tmp, ignore_errors=True)
    meta.update(status="complete", wall_s=round(time.perf_counter() - t_start, 1), worker_runs=len(tasks))
    run = Run.from_rows(run_id, measurements, size_rows, [], meta)
    if save:
        run.save(folder)
    return run


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.@-]", "_", name)




# ----- tables, figures and text for the notebook -----
_KEYS = ["algorithm", "backend", "family", "nist_level", "operation", "message_bytes"]
_OPERATION_ORDER = {op: i for i, op in enumerate(SIGNATURE_OPERATIONS)}
_SOURCES = {  # memory_source -> {schema column: table column}
    SOURCE_MASSIF: {"peak_heap_bytes": "heap_bytes", "peak_stack_bytes": "stack_bytes",
                    "peak_heap_extra_bytes": "heap_extra_bytes", "peak_heap_raw_bytes": "heap_raw_bytes",
                    "peak_stack_raw_bytes": "stack_raw_bytes", "peak_heap_baseline_bytes": "heap_baseline_bytes",
                    "peak_stack_baseline_bytes": "stack_baseline_bytes", "massif_variant": "massif_variant"},
    SOURCE_MASSIF_FIRST_CALL: {"peak_heap_bytes": "heap_first_call_bytes"},
    SOURCE_TRACEMALLOC: {"peak_heap_bytes": "python_heap_bytes"},
    SOURCE_MAXRSS: {"peak_heap_bytes": "max_rss_delta_bytes", "max_rss_raw_bytes": "max_rss_bytes"},
}
_ROUTINE_FLAGS = ("python-level-allocations-only", "coarse:resident-pages-of-the-whole-process",
                  "first-call-in-process:includes-one-time-initialisation", "stack-measured-at-other-message-sizes")


def _order(df, algorithms: Sequence[str] | None = None):
    order = {a: i for i, a in enumerate(dict.fromkeys(algorithms if algorithms is not None else df["algorithm"]))}
    return (df.assign(_a=df["algorithm"].map(order), _o=df["operation"].map(_OPERATION_ORDER).fillna(9),
                      _m=df["message_bytes"].fillna(-1))
            .sort_values(["_a", "_o", "_m"]).drop(columns=["_a", "_o", "_m"]).reset_index(drop=True))


def _run_algorithms(run) -> list[str] | None:
    names = getattr(run, "meta", {}).get("params", {}).get("algorithms")
    return [n.split("@")[0] for n in names] if names else None


def memory_table(run) -> pd.DataFrame:
    """One row per algorithm, backend, operation and message size (keygen: none): what the operation
    adds to the heap and the stack (massif, warm), the heap of the first call in a process, Python-level
    allocations (tracemalloc), the max-RSS difference, the raw peaks and levels, verified and flags."""
    import pandas as pd

    m = run.measurements if hasattr(run, "measurements") else run
    table = None
    for source, columns in _SOURCES.items():
        part = m[m["memory_source"] == source]
        if part.empty:
            continue
        cols = {c: t for c, t in columns.items() if c in part}
        part = part[_KEYS + list(cols) + ["verified", "flags"]].rename(columns=cols)
        part = part.rename(columns={"verified": f"verified_{source}", "flags": f"flags_{source}"})
        part["message_bytes"] = part["message_bytes"].fillna(-1)
        table = part if table is None else table.merge(part, on=_KEYS, how="outer")
    if table is None:
        return pd.DataFrame(columns=_KEYS)
    table["message_bytes"] = table["message_bytes"].where(table["message_bytes"] >= 0).astype("Int64")
    verified = [c for c in table if c.startswith("verified_")]
    table["verified"] = table[verified].fillna(True).astype(bool).all(axis=1)  # every source that ran
    flag_cols = [c for c in table if c.startswith("flags_")]
    table["flags"] = table[flag_cols].fillna("").apply(
        lambda r: ";".join(dict.fromkeys(f for v in r for f in str(v).split(";") if f and f not in _ROUTINE_FLAGS)),
        axis=1)
    table = table.drop(columns=verified + flag_cols)
    for col in table:
        if col.endswith("_bytes") and col != "message_bytes":
            table[col] = pd.to_numeric(table[col], errors="coerce").round().astype("Int64")
    if {"heap_bytes", "stack_bytes"} <= set(table):
        table["heap_plus_stack_bytes"] = table["heap_bytes"] + table["stack_bytes"]
    return _order(table, _run_algorithms(run))


def size_table(run, message_bytes: Sequence[int], deterministic: bool = False) -> pd.DataFrame:
    """Key, signature and signed-message sizes per algorithm and message size.

    The signed message is what NIST's and SUPERCOP's ``crypto_sign`` returns: the signature attached
    to the message, so its size is message + signature.  `deterministic`: one row per algorithm with
    the declared maximum signature (Falcon's and DER-encoded ECDSA signatures vary in length) and
    without encodings whose length varies from key to key (RSA's PKCS#8 secret key), for checking."""
    import pandas as pd

    s = run.sizes if hasattr(run, "sizes") else run
    rows = []
    for _, r in s.iterrows():
        if deterministic and r["family"] == "RSA":
            continue
        sig = int(r["signature_max_bytes"] if deterministic else r["signature_bytes"])
        row = {"algorithm": r["algorithm"], "backend": r["backend"], "public_key_bytes": int(r["public_key_bytes"]),
               "secret_key_bytes": int(r["secret_key_bytes"]), "signature_bytes": sig}
        if not deterministic:
            row["signature_max_bytes"] = int(r["signature_max_bytes"])
        for n in message_bytes:
            row[f"signed_message_{n}_bytes"] = n + sig
        rows.append(row)
    return pd.DataFrame(rows)


def time_table(run) -> pd.DataFrame:
    """Median time per operation (µs) with quartiles, from a :func:`pqlab.bench` run."""
    m = run.measurements if hasattr(run, "measurements") else run
    m = m[m["operation"].isin(SIGNATURE_OPERATIONS)].copy()
    out = m[["algorithm", "backend", "operation", "message_bytes", "samples", "verified"]].copy()
    for col in ("median", "q1", "q3"):
        out[f"time_us_{col}"] = m[f"time_ns_{col}"] / 1e3
    out["message_bytes"] = out["message_bytes"].astype("Int64")
    return _order(out, _run_algorithms(run))


def footprint_table(memory: pd.DataFrame, times: pd.DataFrame | None = None) -> pd.DataFrame:
    """The reader's table: time and memory per algorithm, operation and message size."""
    cols = [c for c in ("algorithm", "backend", "family", "operation", "message_bytes", "heap_bytes", "stack_bytes",
                        "heap_plus_stack_bytes", "heap_first_call_bytes", "python_heap_bytes", "max_rss_delta_bytes",
                        "verified") if c in memory]
    out = memory[cols].copy()
    if times is not None and not times.empty:
        t = times[["algorithm", "backend", "operation", "message_bytes", "time_us_median"]]
        out = out.merge(t, on=["algorithm", "backend", "operation", "message_bytes"], how="left")
        out.insert(5, "time_us", out.pop("time_us_median").round(2))
    return out


def _panels(memory: pd.DataFrame) -> list[tuple[str, str]]:
    """(column, axis label) of what was measured: native heap and stack, else Python-level allocations."""
    native = [(c, f"{w} added (bytes, log)") for c, w in (("heap_bytes", "heap"), ("stack_bytes", "stack"))
              if c in memory and memory[c].notna().any()]
    return native or [("python_heap_bytes", "Python-level allocations\n(tracemalloc; bytes, log)")]


def plot_peaks(memory: pd.DataFrame, message_bytes: int | None = None):
    """Heap (top) and stack (bottom) each operation adds, per algorithm, at one message size (log axes);
    without valgrind, the Python-level allocations (tracemalloc) alone."""
    import matplotlib.pyplot as plt

    from . import plotting

    size = message_bytes if message_bytes is not None else memory["message_bytes"].dropna().min()
    df = memory[memory["message_bytes"].isna() | (memory["message_bytes"] == size)].copy()
    df["label"] = df["algorithm"] + df["backend"].map(lambda b: "" if b in ("liboqs", "cryptography") else f" ({b})")
    ops = [op for op in SIGNATURE_OPERATIONS if op in set(df["operation"])]
    colors = plotting.color_map(ops)
    panels = _panels(df)
    height = 1.3 + 1.9 * len(panels) + 0.035 * df["label"].str.len().max()
    fig, axes = plt.subplots(len(panels), 1, figsize=(plotting.FULL_WIDTH, height), sharex=True, squeeze=False)
    axes = axes[:, 0]
    for ax, (col, label) in zip(axes, panels):
        part = df.dropna(subset=[col])
        part = part.assign(**{col: part[col].astype(float).clip(lower=1)})  # 0 B drawn at 1 B (log axis)
        plotting.grouped_bars(part, category="label", group="operation", value=col, ylabel=label, colors=colors,
                              ax=ax)
        if ax is not axes[0] and ax.get_legend() is not None:
            ax.get_legend().remove()
    source = "valgrind massif" if panels[0][0] != "python_heap_bytes" else "tracemalloc: valgrind was not available"
    axes[0].set_title(f"Memory one operation adds ({source}; sign and verify of {size}-byte messages)")
    for tick in axes[-1].get_xticklabels():
        tick.set_rotation(60)
        tick.set_fontsize(6)
    return fig


def plot_message_sizes(memory: pd.DataFrame):
    """What a longer message adds, per algorithm: heap and stack of signing and verifying beyond their
    values at the smallest message, coloured by binding, with "one copy of the message" for reference.
    With a single message size, the values themselves (log axes)."""
    import numpy as np
    import pandas as pd
    from matplotlib.lines import Line2D

    from . import plotting

    df = memory.dropna(subset=["message_bytes"])
    df = df[df["operation"].isin(["sign", "verify"])]
    sizes = sorted(df["message_bytes"].unique())
    first = sizes[0]
    rows = []
    for op in ("sign", "verify"):
        for col, label in _panels(df):
            part = df[df["operation"] == op].dropna(subset=[col])
            what = label.split(" added")[0].split("\n")[0]
            base = part[part["message_bytes"] == first].set_index(["algorithm", "backend"])[col].astype(float)
            delta = part[col].astype(float) - [base.get((a, b), np.nan) for a, b in zip(part["algorithm"],
                                                                                      part["backend"])]
            rows.append(pd.DataFrame({"algorithm": part["algorithm"], "backend": part["backend"],
                                      "family": part["family"], "message_bytes": part["message_bytes"].astype(float),
                                      "bytes": part[col].astype(float).clip(lower=1), "delta": delta,
                                      "panel": f"{op}: {what}"}))
    long = pd.concat(rows, ignore_index=True)
    if len(sizes) < 2:
        return plotting.panel_lines(long, x="message_bytes", y="bytes", hue="algorithm", panel="panel",
                                    colors=plotting.shaded_family_colors(long), xlabel="message (bytes, log)",
                                    ylabel="added (bytes, log)", height=2.6, legend_cols=4,
                                    title="Memory added at the one message size measured")
    backends = list(dict.fromkeys(long["backend"]))
    by_backend = plotting.color_map(backends)
    colors = {a: by_backend[b] for a, b in zip(long["algorithm"], long["backend"])}
    fig = plotting.panel_lines(long.dropna(subset=["delta"]), x="message_bytes", y="delta", hue="algorithm",
                               panel="panel", colors=colors, logy=False, xlabel="message (bytes, log)",
                               ylabel=f"added beyond a {first}-byte message (bytes)", height=2.9,
                               title="What a longer message costs in memory, per algorithm, coloured by binding")
    xs = np.geomspace(first, sizes[-1], 50)
    for ax in fig.axes:
        if "heap" in ax.get_title():
            ax.plot(xs, xs - first, ls=(0, (1, 1.5)), lw=1.0, color="0.25", zorder=0)
    for legend in list(fig.legends):
        legend.remove()
    handles = [Line2D([], [], color=by_backend[b], lw=1.2, marker="o", ms=2.5) for b in backends]
    handles.append(Line2D([], [], color="0.25", ls=(0, (1, 1.5)), lw=1.0))
    fig.legend(handles, [*backends, "one copy of the message"], loc="outside lower center",
               ncols=len(handles), fontsize=7)
    return fig


def plot_gravity(comparison: pd.DataFrame):
    """The study's Gravity-SPHINCS heap beside the heap and stack of the "s" sets (log axis), with the
    study's figure drawn across for reference."""
    from . import plotting

    bars = gravity_bars(comparison)
    if bars.empty:
        return None
    fig = plotting.grouped_bars(bars, category="label", group="quantity", value="bytes", ylabel="bytes (log)",
                                height=3.0, title="Gravity-SPHINCS (Small) as published, beside the SPHINCS+ and "
                                                  "SLH-DSA \"s\" sets measured here")
    ax = fig.axes[0]
    study = comparison[comparison["source"].str.startswith("study")]["sign_heap_bytes"].dropna()
    if len(study):
        ax.axhline(float(study.iloc[0]), ls=(0, (4, 2)), lw=0.8, color="0.3", zorder=0)
        ax.annotate(f"study's peak heap, {int(study.iloc[0]):,} B", (1.0, float(study.iloc[0])),
                    xycoords=("axes fraction", "data"), xytext=(-2, 3), textcoords="offset points", ha="right",
                    fontsize=6, color="0.3")
    return fig


def describe_method(first_call: bool = True) -> str:
    """The method in a paragraph, its constants read from this module."""
    return (f"Each operation runs in a worker process of its own, which loads keys, message and signature from "
            f"files and writes its output to a file that the notebook's process checks. valgrind's massif measures "
            f"the heap (`--stacks=no --time-unit=B`) and the stack (`--heap=no --stacks=yes`) in two runs, both "
            f"with `--peak-inaccuracy=0`. A {HEAP_MARKER_BYTES >> 20} MiB heap block that is never touched and "
            f"{STACK_MARKER_DEPTH} nested calls through C open a window around the operation, so that the peaks of "
            f"the run fall inside it and not in the interpreter's start-up. What the operation *adds* is the peak "
            f"minus the level just before it: for the heap read in the same run (massif must take a snapshot when "
            f"the marker's allocation advances its byte clock), for the stack the peak of a baseline worker that "
            f"calls nothing in the window (one per backend and operation). The worker calls the operation once "
            f"before the measured call, and Python's garbage collector is run before the window and paused inside "
            f"it. " + ("The *first call* in a process is measured too (heap only), as are " if first_call else
                       "Also measured: ") +
            "Python-level allocations (tracemalloc, without valgrind) and the workers' maximum resident set size "
            "(coarse). Massif's heap "
            "is what `malloc` hands out: CPython serves its small objects from arenas it maps itself, which "
            "massif does not count as heap and tracemalloc does, so the two differ.")


# ----- the study: Gravity-SPHINCS -----
REFERENCE = "03_memory_gravity_sphincs"


def load_gravity() -> dict:
    """The study's published figures (sphincs-bench block), with units made explicit; None = not published."""
    from .reference import load_reference

    ref = load_reference(REFERENCE)
    bench = ref[ref["source_block"].str.startswith("sphincs-bench")]

    def value(metric: str, operation: str | None = None):
        sel = bench[(bench["metric"] == metric) & ((bench["operation"] == operation) if operation else
                                                   bench["operation"].isna())]
        v = sel["value"].dropna()
        return float(v.iloc[0]) if len(v) else None

    out = {"scheme": bench["scheme"].iloc[0], "backend": bench["backend"].iloc[0],
           "machine": bench["machine"].iloc[0], "public_key_bytes": value("public_key_size"),
           "secret_key_bytes": value("secret_key_size"), "signature_bytes": value("signature_size"),
           "signed_message_bytes": value("signed_message_size")}
    for op in SIGNATURE_OPERATIONS:
        out[f"{op}_ms"] = value("time", op)
    for op in ("sign", "verify"):
        out[f"{op}_heap_bytes"] = value("peak_heap", op)
    out["anomalies"] = ref.attrs["source"].get("anomalies", [])
    out["placeholders"] = int(ref["value"].isna().sum())
    out["rows"] = len(ref)
    return out


def _small_sets(names) -> list[str]:
    return [n for n in names if re.search(r"^(SPHINCS\+|SLH-DSA)-.*\d{3}s(-simple)?$", n)]


def compare_gravity(memory: pd.DataFrame, times: pd.DataFrame | None, sizes: pd.DataFrame,
                    message_bytes: int | None = None) -> pd.DataFrame:
    """The study's Gravity-SPHINCS (Small) row beside every SPHINCS+/SLH-DSA "s" set measured here."""
    import pandas as pd

    g = load_gravity()
    rows = [{"source": "study (published)", "algorithm": g["scheme"], "implementation": g["backend"],
             "public_key_bytes": g["public_key_bytes"], "secret_key_bytes": g["secret_key_bytes"],
             "signature_bytes": g["signature_bytes"], "keygen_ms": g["keygen_ms"], "sign_ms": g["sign_ms"],
             "verify_ms": g["verify_ms"], "sign_heap_bytes": g["sign_heap_bytes"],
             "verify_heap_bytes": g["verify_heap_bytes"], "sign_stack_bytes": None, "verify_stack_bytes": None}]
    size = message_bytes if message_bytes is not None else memory["message_bytes"].dropna().min()

    def pick(df, algorithm, backend, op, col):
        if df is None or df.empty or col not in df:
            return None
        sel = df[(df["algorithm"] == algorithm) & (df["backend"] == backend) & (df["operation"] == op)]
        if op != "keygen":
            sel = sel[sel["message_bytes"] == size]
        v = sel[col].dropna()
        return float(v.iloc[0]) if len(v) else None

    for _, s in sizes.iterrows():
        if s["algorithm"] not in _small_sets([s["algorithm"]]):
            continue
        a, b = s["algorithm"], s["backend"]
        row = {"source": "measured here", "algorithm": a, "implementation": b,
               "public_key_bytes": s["public_key_bytes"], "secret_key_bytes": s["secret_key_bytes"],
               "signature_bytes": s["signature_bytes"]}
        for op in SIGNATURE_OPERATIONS:
            t = pick(times, a, b, op, "time_us_median")
            row[f"{op}_ms"] = None if t is None else t / 1e3
        for op in ("sign", "verify"):
            row[f"{op}_heap_bytes"] = pick(memory, a, b, op, "heap_bytes")
            row[f"{op}_stack_bytes"] = pick(memory, a, b, op, "stack_bytes")
        rows.append(row)
    out = pd.DataFrame(rows)
    for col in out:
        if col.endswith("_bytes"):
            out[col] = pd.to_numeric(out[col], errors="coerce").round().astype("Int64")
        elif col.endswith("_ms"):
            out[col] = pd.to_numeric(out[col], errors="coerce").round(3)
    return out


def gravity_bars(comparison: pd.DataFrame) -> pd.DataFrame:
    """Long table for a bar chart: heap (and stack) during signing and verifying, study beside ours."""
    import pandas as pd

    rows = []
    for _, r in comparison.iterrows():
        label = r["algorithm"] + (", study" if r["source"].startswith("study") else
                                  ("" if r["implementation"] == "liboqs" else f" ({r['implementation']})"))
        for op in ("sign", "verify"):
            for what in ("heap", "stack"):
                v = r.get(f"{op}_{what}_bytes")
                if v is not None and not pd.isna(v):
                    rows.append({"label": label, "quantity": f"{op}: {what}", "bytes": max(float(v), 1.0)})
    return pd.DataFrame(rows, columns=["label", "quantity", "bytes"])


# ----- generated text -----
def _b(n) -> str:
    return "n/a" if n is None or (isinstance(n, float) and math.isnan(n)) else f"{int(round(float(n))):,} B"


def _span(values, fmt=_b, sep=" to ") -> str:
    """"x" when every value is the same, else "min to max"."""
    import pandas as pd

    vals = [float(v) for v in values if not pd.isna(v)]
    if not vals:
        return "n/a"
    lo, hi = min(vals), max(vals)
    return fmt(lo) if lo == hi else f"{fmt(lo)}{sep}{fmt(hi)}"


def _get(table, algorithm: str, operation: str, col: str, message_bytes=None):
    sel = table[(table["algorithm"] == algorithm) & (table["operation"] == operation)]
    if message_bytes is not None and operation != "keygen":
        sel = sel[sel["message_bytes"] == message_bytes]
    elif operation != "keygen":
        sel = sel[sel["message_bytes"] == sel["message_bytes"].min()]
    if col not in sel:
        return None
    v = sel[col].dropna()
    return v.iloc[0] if len(v) else None


def describe_valgrind(status: dict, run=None) -> str:
    """Which memory sources this run had, in a sentence or three."""
    if not status.get("available"):
        return (f"**valgrind is not available here** ({status.get('reason', 'not found')}), so native heap and "
                "stack could not be measured. Shown instead: Python-level allocations during each operation "
                "(tracemalloc, which does not see what C libraries allocate) and the difference of the worker "
                "processes' maximum resident set size (page-granular, coarse). `make setup` installs valgrind "
                "where apt-get can.")
    text = (f"{status['version']} (`{status['path']}`) ran every worker under massif. ")
    if run is not None:
        flags = ";".join(run.measurements["flags"].fillna("").astype(str))
        if "valgrind-used-generic-build" in flags:
            text += ("valgrind could not run liboqs's CPU-optimised build, so the portable (generic) build was "
                     "measured for memory where needed (flagged `valgrind-used-generic-build`). ")
        else:
            text += ("It ran liboqs's default (CPU-optimised, run-time dispatched) build; under valgrind's "
                     "synthetic CPU, code that dispatches at run time takes its AVX2 paths. ")
        meta = run.meta
        params = meta.get("params", {})
        text += (f"{meta.get('worker_runs', '?')} worker processes took {meta.get('wall_s', float('nan')):.0f} s "
                 f"({params.get('jobs', '?')} at a time).")
        stack_sizes = params.get("stack_message_bytes")
        if stack_sizes is not None and sorted(stack_sizes) != sorted(params.get("message_bytes", [])):
            text += (f" The stack was measured at {' and '.join(f'{n}-byte' for n in stack_sizes)} messages only (it does "
                     "not depend on the message, as the findings below show); the heap at every size.")
    return text


def describe_findings(memory: pd.DataFrame, sizes: pd.DataFrame | None = None) -> str:
    """What the measurements say, generated from them."""
    if memory.empty or "stack_bytes" not in memory or memory["stack_bytes"].dropna().empty:
        py = memory.dropna(subset=["python_heap_bytes"]) if "python_heap_bytes" in memory else memory.iloc[:0]
        if py.empty:
            return "No memory figure was measured."
        top = py.loc[py["python_heap_bytes"].astype(float).idxmax()]
        return (f"Without valgrind only Python-level allocations were seen: the largest, "
                f"{_b(top['python_heap_bytes'])}, by {top['algorithm']} {top['operation']}.")
    m = memory.dropna(subset=["stack_bytes", "heap_bytes"])
    lines = []
    top = m.loc[m["stack_bytes"].astype(float).idxmax()]
    low = m.loc[m["stack_bytes"].astype(float).idxmin()]
    lines.append(f"The deepest stack: {top['algorithm']} {top['operation']}, {_b(top['stack_bytes'])}; the "
                 f"shallowest: {low['algorithm']} {low['operation']}, {_b(low['stack_bytes'])}.")
    if sizes is not None and not sizes.empty:
        first = m["message_bytes"].min()
        sig = m[(m["operation"] == "sign") & (m["message_bytes"] == first)].merge(sizes[["algorithm", "backend", "signature_bytes"]],
                                                on=["algorithm", "backend"])
        pq = sig[~sig["family"].isin(["RSA", "elliptic-curve"])]
        if not pq.empty:
            extra = pq["heap_bytes"].astype(float) - 2 * pq["signature_bytes"].astype(float)
            per = "; ".join(f"{backend}: {_span(extra[pq['backend'] == backend])}"
                            for backend in dict.fromkeys(pq["backend"]))
            lines.append(f"Post-quantum signing ({first}-byte messages) adds two signature-sized buffers to the heap "
                         "(the binding's output buffer and the returned bytes) and a fixed amount per binding on top ("
                         + per + "): the C "
                         "code (liboqs, PQClean) allocates nothing itself and keeps its working state on the stack.")
        cl = sig[sig["family"].isin(["RSA", "elliptic-curve"])]
        if not cl.empty and "heap_first_call_bytes" in cl:
            first = cl.dropna(subset=["heap_first_call_bytes"])
            if not first.empty:
                lines.append("OpenSSL's first signature in a process allocates far more than later ones ("
                             + ", ".join(f"{r['algorithm']} {_b(r['heap_first_call_bytes'])} against "
                                         f"{_b(r['heap_bytes'])}" for _, r in first.iterrows())
                             + "): OpenSSL 3 fetches and caches its provider's methods on first use.")
    sizes_seen = sorted(m["message_bytes"].dropna().unique())
    if len(sizes_seen) > 1:
        lo, hi = sizes_seen[0], sizes_seen[-1]
        per = m[m["operation"].isin(["sign", "verify"])].pivot_table(
            index=["algorithm", "backend", "operation"], columns="message_bytes", values=["heap_bytes", "stack_bytes"])
        dheap = (per[("heap_bytes", hi)] - per[("heap_bytes", lo)]) / (hi - lo)
        dstack = (per[("stack_bytes", hi)] - per[("stack_bytes", lo)]).abs()
        lines.append(f"From {lo} to {hi}-byte messages the heap grows by {dheap.min():.2f} to {dheap.max():.2f} "
                     f"bytes per message byte (copies of the message), and the stack changes by at most "
                     f"{_b(dstack.max())}: every scheme hashes the message instead of holding it.")
    return " ".join(lines)


def describe_gravity(comparison: pd.DataFrame) -> str:
    """The study's Gravity-SPHINCS figures beside the SPHINCS+/SLH-DSA "s" sets: where they agree, and why not."""
    g = load_gravity()
    ours = comparison[comparison["source"] == "measured here"]
    text = [f"**Gravity-SPHINCS has no implementation in any registry we reach** (PyPI and npm have no such "
            f"package, crates.io's `gravity` crate is unrelated, Debian has none; the study built gravity-rs from "
            f"its source repository), so its published figures stay the reference row. Of the study's "
            f"{g['rows']} published values {g['placeholders']} are placeholders (signature and signed-message "
            "sizes, every Divan figure); its machine attribution (an arm64 Apple M1 Pro, which the crate's own "
            "README says it does not support) is doubtful."]
    if ours.empty:
        return " ".join(text + ["No SPHINCS+ or SLH-DSA \"s\" set was measured in this run (the full run "
                                "measures them)."])
    same_keys = ours[(ours["public_key_bytes"] == g["public_key_bytes"]) &
                     (ours["secret_key_bytes"] == g["secret_key_bytes"])]
    if not same_keys.empty:
        text.append(f"Its keys ({int(g['public_key_bytes'])}-byte public, {int(g['secret_key_bytes'])}-byte secret) "
                    f"are exactly those of {', '.join(same_keys['algorithm'].unique())}.")
    heap = ours.dropna(subset=["sign_heap_bytes"])
    if not heap.empty and g["sign_heap_bytes"]:
        lo, hi = heap["sign_heap_bytes"].min(), heap["sign_heap_bytes"].max()
        stack = ours["sign_stack_bytes"].dropna()
        ratio = _span([lo / g["sign_heap_bytes"], hi / g["sign_heap_bytes"]], fmt=lambda v: f"{v:.2f}")
        who = "Our \"s\" sets add" if len(heap) > 1 else f"{heap['algorithm'].iloc[0]} adds"
        text.append(f"The study's peak heap, {_b(g['sign_heap_bytes'])} for signing and again for verifying, is a "
                    f"heap-only figure (its stack was not measured). {who} {_span([lo, hi])} of heap when signing "
                    f"({ratio} times the study's), the output buffers of the Python bindings,"
                    + (f" and {_span(stack)} of stack, where these C implementations keep their working state."
                       if not stack.empty else "."))
    for sig in sorted(set(comparison["signature_bytes"].dropna().astype(int))):
        rest = int(g["sign_heap_bytes"] or 0) - 2 * sig
        if 0 <= rest <= 256:
            names = comparison[comparison["signature_bytes"] == sig]["algorithm"].tolist()
            text.append(f"A coincidence worth checking against the study's source: {_b(g['sign_heap_bytes'])} is "
                        f"exactly two {sig:,}-byte signatures ({', '.join(names)}) plus {rest} B.")
    t = ours.dropna(subset=["sign_ms"])
    if not t.empty and g["sign_ms"]:
        ms = _span(t["sign_ms"], fmt=lambda v: f"{v:.1f} ms")
        ratio = _span(t["sign_ms"] / g["sign_ms"], fmt=lambda v: f"{v:.2f}")
        text.append(f"Signing took the study {g['sign_ms']:.1f} ms; the \"s\" sets here take {ms} (another scheme, "
                    f"implementation, CPU and language: the ratio, {ratio}, is context, not a verdict).")
    return " ".join(text)


def closing_note(memory: pd.DataFrame, status: dict,
                 focus: Sequence[str] = ("SPHINCS+-SHAKE-128f-simple", "ML-DSA-44")) -> str:
    """The figures the issue asks for (signing with `focus`), raw and baseline-subtracted, and the method."""
    parts = []
    for name in focus:
        if name not in set(memory["algorithm"]):
            parts.append(f"{name} was not measured in this run.")
            continue
        h, s = _get(memory, name, "sign", "heap_bytes"), _get(memory, name, "sign", "stack_bytes")
        size = memory[(memory["algorithm"] == name) & (memory["operation"] == "sign")]["message_bytes"].min()
        if h is None and s is None:
            parts.append(f"{name} signing: no valgrind figure (Python-level allocations "
                         f"{_b(_get(memory, name, 'sign', 'python_heap_bytes'))}).")
            continue
        parts.append(f"**{name} signing** ({size}-byte message) adds **{_b(h)} of heap and {_b(s)} of stack**; "
                     f"the worker's raw massif peaks, interpreter and markers included, were "
                     f"{_b(_get(memory, name, 'sign', 'heap_raw_bytes'))} of heap and "
                     f"{_b(_get(memory, name, 'sign', 'stack_raw_bytes'))} of stack (levels without the operation "
                     f"{_b(_get(memory, name, 'sign', 'heap_baseline_bytes'))} and "
                     f"{_b(_get(memory, name, 'sign', 'stack_baseline_bytes'))})"
                     + ("." if (first := _get(memory, name, "sign", "heap_first_call_bytes")) is None
                        else f"; its first call in a process adds {_b(first)} of heap."))
    method = ("Method: one operation per valgrind massif process after one warm-up call, heap and stack in separate "
              "runs, peaks forced into the operation by a heap and a stack marker, and the level before the "
              "operation subtracted (heap: read in the same run; stack: a worker calling nothing at the same place)."
              if status.get("available") else
              "valgrind was not available: only tracemalloc and max-RSS figures were measured.")
    return " ".join(parts + [method])


def save_numbers(memory: pd.DataFrame, topic: str = "03_memory_footprint",
                 focus: Sequence[str] = ("SPHINCS+-SHAKE-128f-simple", "ML-DSA-44")) -> list[Path]:
    """The closing note's figures as single numbers (data/tables/TOPIC/*.txt)."""
    from .export import save_number

    out = []
    for name in focus:
        for col in ("heap_bytes", "stack_bytes"):
            v = _get(memory, name, "sign", col) if name in set(memory["algorithm"]) else None
            if v is not None and not (isinstance(v, float) and math.isnan(v)):
                stem = re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_").lower()
                out.append(save_number(int(v), topic, f"{stem}_sign_{col}"))
    return out


if __name__ == "__main__":
    raise SystemExit(main())
