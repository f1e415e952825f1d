"""Peak memory of ONE operation: native heap and stack (valgrind massif), Python heap (tracemalloc),
maximum resident set size (coarse).

Method, as liboqs' own memory tests and the OQS profiling do it: one operation per process.  The
parent generates keys, a message and a signature, writes them to files (:func:`write_inputs`)
and starts a *worker* that loads them, performs exactly one operation and writes its output to
a file (:func:`worker`).  The parent checks that output (the signature verifies, the fresh keys
sign and verify, the verdict is True): a memory figure of a wrong result is never reported.

    python -m pqlab.memory worker --algorithm ML-DSA-44 --backend liboqs --operation sign --inputs DIR

A Python worker holds the interpreter's own heap and stack, so every worker runs twice: once
doing the operation and once doing nothing in its place (a *baseline*: same imports, same file
loading, same prepared callable, the call left out).  Operation = peak(op run) - peak(baseline
run).  To make that difference exact, the peak of both runs must fall *inside* the operation's
window, not during the interpreter's start-up; the worker forces it there with two markers:

* heap: a ``malloc`` of :data:`HEAP_MARKER_BYTES` (256 MiB, never touched, so it costs no RSS)
  is held across the window, so the largest heap of the run is necessarily inside the window;
  the marker is subtracted from the raw figures;
* stack: the operation runs at the bottom of a recursion of :data:`STACK_MARKER_DEPTH` calls
  through C (about 0.5 KiB of C stack each), so the deepest stack of the run is inside it too.

Heap and stack are measured in two massif runs (``--stacks=no`` and ``--heap=no --stacks=yes``,
both ``--peak-inaccuracy=0``) because massif's peak snapshot maximises their *sum*; peak heap is
the largest ``mem_heap_B`` over the snapshots (``mem_heap_extra_B``, the allocator's overhead,
is reported apart) and peak stack the largest ``mem_stacks_B``.  What the operation adds
includes its binding's call path (ctypes buffers, cffi, pyo3), since a Python caller pays it.

Each measured thing becomes a row of the results schema (``peak_heap_bytes``,
``peak_stack_bytes``, ``memory_source``): ``valgrind-massif:stacks`` (native heap and stack),
``tracemalloc`` (Python-level allocations during the operation) and ``maxrss`` (the difference
of the two runs' ``ru_maxrss``, page-granular and coarse: a labelled fallback).  Where valgrind
is missing, only the last two are measured and :func:`valgrind_status` says why.

The worker is started without ``pqlab/__init__`` (which imports pandas): under valgrind that
keeps one run at about 2 s instead of 7 s.  This module therefore imports only the standard
library at its top.
"""
from __future__ import annotations

import ctypes
import functools
import json
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

from . import paths

#: Held across the operation window of a massif run; larger than any heap the interpreter reaches.
HEAP_MARKER_BYTES = 256 << 20
#: Calls through C before the operation (about 0.5 KiB of C stack each on CPython 3.11).
STACK_MARKER_DEPTH = 400
#: A lower bound of the C stack one marker level takes: the check that the peak is in the window.
STACK_MARKER_MIN_BYTES_PER_LEVEL = 256
MASSIF_DEPTH = 12
SOURCE_MASSIF = "valgrind-massif:stacks"
SOURCE_TRACEMALLOC = "tracemalloc"
SOURCE_MAXRSS = "maxrss"
SIGNATURE_OPERATIONS = ("keygen", "sign", "verify")
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


def run_window(call: Callable[[], object], heap_marker: int = 0, stack_depth: int = 0):
    """Run `call` inside the markers that put a massif run's peaks into this window."""
    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    marker = libc.malloc(heap_marker) if heap_marker else None
    if heap_marker and not marker:
        raise MemoryError(f"could not reserve the {heap_marker}-byte heap marker")
    try:
        return _dive(stack_depth, call)
    finally:
        if marker:
            libc.free(marker)


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
           baseline: bool = False, heap_marker: int = 0, stack_depth: int = 0, trace: bool = False) -> dict:
    """Load the inputs, perform ONE operation (or its baseline), write the output and result.json."""
    from .algorithms import get

    inputs, output = Path(inputs), Path(output)
    output.mkdir(parents=True, exist_ok=True)
    algo = get(algorithm, backend)
    data = read_inputs(inputs) if operation != "keygen" else {}
    call = prepare_operation(algo, operation, data)
    if baseline:
        call = as_baseline(call)
    if trace:
        import tracemalloc

        tracemalloc.start()
        start_bytes = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
    t0 = time.perf_counter_ns()
    result = run_window(call, heap_marker, stack_depth)
    wall_ns = time.perf_counter_ns() - t0
    report = {"algorithm": algorithm, "backend": backend, "operation": operation, "baseline": baseline,
              "wall_ns": wall_ns, "variant": getattr(algo, "extra", {}).get("variant", ""),
              "max_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}
    if trace:
        report["tracemalloc_peak_bytes"] = tracemalloc.get_traced_memory()[1] - start_bytes
        tracemalloc.stop()
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
    a = p.parse_args(argv)
    report = worker(a.algorithm, a.backend, a.operation, a.inputs, a.output or Path(a.inputs) / "out",
                    baseline=bool(a.baseline), heap_marker=a.heap_marker, stack_depth=a.stack_depth,
                    trace=bool(a.trace))
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


def valgrind_status() -> dict:
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
    """valgrind massif for the heap run (`kind` "heap") or the stack run ("stack")."""
    which = ["--stacks=no"] if kind == "heap" else ["--heap=no", "--stacks=yes"]
    return [valgrind, "-q", "--tool=massif", *which, "--peak-inaccuracy=0", "--detailed-freq=1000000",
            f"--depth={depth}", f"--massif-out-file={out_file}"]


@dataclass
class WorkerRun:
    """One worker process: what it reported and, under massif, the profile."""

    mode: str  # plain | heap | stack
    baseline: bool
    report: dict
    wall_s: float
    variant: str = ""
    profile: MassifProfile | None = None
    error: str = ""


_UNSUPPORTED = re.compile(r"unhandled instruction|Unrecognised instruction|SIGILL|illegal instruction", re.I)


def run_worker(algorithm: str, backend: str, operation: str, inputs: Path, mode: str, *, baseline: bool,
               work: Path, timeout_s: float = 1800, variant: str = "", valgrind: str = "valgrind",
               python: str | None = None) -> WorkerRun:
    """Start one worker (`mode` plain, heap or stack) and collect its report and massif profile."""
    tag = f"{operation}-{mode}-{'baseline' if baseline else 'op'}"
    out = work / tag
    out.mkdir(parents=True, exist_ok=True)
    args = ["worker", "--algorithm", algorithm, "--backend", backend, "--operation", operation,
            "--inputs", str(inputs), "--output", str(out), "--baseline", str(int(baseline))]
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
        return WorkerRun(mode, baseline, {}, time.perf_counter() - t0, variant, error=f"timeout after {timeout_s:.0f} s")
    wall = time.perf_counter() - t0
    if proc.returncode != 0 or not (out / "result.json").exists():
        tail = (proc.stderr or proc.stdout)[-1500:].strip()
        return WorkerRun(mode, baseline, {}, wall, variant, error=f"exit {proc.returncode}: {tail}")
    report = json.loads((out / "result.json").read_text())
    profile = parse_massif(massif_out) if mode != "plain" else None
    return WorkerRun(mode, baseline, report, wall, variant or report.get("variant", ""), profile)


def check_output(algo, operation: str, inputs: dict, out: Path, report: dict) -> str:
    """"" when the worker's output is right (checked here, in the parent), else what is wrong."""
    try:
        if operation == "sign":
            sig = (out / "out_signature.bin").read_bytes()
            return "" if algo.verifier(inputs["pk"])(inputs["message"], sig) is True else "signature does not verify"
        if operation == "verify":
            return "" if report.get("verdict") is True else "the worker rejected a valid signature"
        pk, sk = read_keys(out, report, prefix="out_")
        message = inputs["message"]
        return "" if algo.verifier(pk)(message, algo.signer(sk)(message)) is True else "fresh keys do not sign/verify"
    except Exception as exc:  # noqa: BLE001
        return f"{type(exc).__name__}: {exc}"


@dataclass
class Job:
    """One measured thing: an algorithm's operation at one message size."""

    algorithm: str
    backend: str
    operation: str
    message_bytes: int | None
    inputs: Path
    work: Path
    runs: dict = field(default_factory=dict)  # (mode, baseline) -> WorkerRun


def _modes(use_valgrind: bool) -> list[tuple[str, bool]]:
    modes = [("plain", False), ("plain", True)]
    if use_valgrind:
        modes += [("heap", False), ("heap", True), ("stack", False), ("stack", True)]
    return modes


def _execute(job: Job, mode: str, baseline: bool, timeout_s: float, variant: str) -> WorkerRun:
    run = run_worker(job.algorithm, job.backend, job.operation, job.inputs, mode, baseline=baseline,
                     work=job.work, timeout_s=timeout_s, variant=variant)
    if run.error and mode != "plain" and job.backend == "liboqs" and _UNSUPPORTED.search(run.error):
        # valgrind cannot run the CPU-optimised build: the portable one, labelled
        run = run_worker(job.algorithm, job.backend, job.operation, job.inputs, mode, baseline=baseline,
                         work=job.work, timeout_s=timeout_s, variant="generic")
    return run


def measurement_rows(job: Job, algo, base: dict, inputs: dict) -> list[dict]:
    """The schema rows of one job: massif (heap and stack), tracemalloc and maxrss."""
    common = dict(base, backend=algo.backend, implementation=algo.implementation,
                  library_version=algo.library_version, variant=algo.extra.get("variant", ""),
                  algorithm=algo.name, family=algo.family, nist_level=algo.nist_level, operation=job.operation,
                  message_bytes=job.message_bytes, samples=1)
    rows = []
    plain, plain_base = job.runs.get(("plain", False)), job.runs.get(("plain", True))
    problem = plain.error if plain else "not run"
    if plain and not plain.error:
        problem = check_output(algo, job.operation, inputs, job.work / f"{job.operation}-plain-op", plain.report)
    verified = not problem
    flags = [] if verified else [f"failed:{problem}".replace(";", ",")]
    if ("heap", False) in job.runs:
        rows.append(_massif_row(job, common, verified, flags))
    if plain and not plain.error:
        tm = plain.report.get("tracemalloc_peak_bytes")
        rows.append(dict(common, memory_source=SOURCE_TRACEMALLOC, peak_heap_bytes=tm, verified=verified,
                         flags=";".join(flags + ["python-level-allocations-only"])))
        rss_op = plain.report.get("max_rss_bytes")
        rss_base = plain_base.report.get("max_rss_bytes") if plain_base and not plain_base.error else None
        rows.append(dict(common, memory_source=SOURCE_MAXRSS,
                         peak_heap_bytes=None if rss_base is None else rss_op - rss_base,
                         max_rss_raw_bytes=rss_op, max_rss_baseline_bytes=rss_base, verified=verified,
                         flags=";".join(flags + ["coarse:resident-pages-of-whole-process"])))
    else:
        rows.append(dict(common, memory_source=SOURCE_TRACEMALLOC, verified=False, flags=";".join(flags)))
    return rows


def _massif_row(job: Job, common: dict, verified: bool, flags: list[str]) -> dict:
    runs = {k: job.runs.get(k) for k in (("heap", False), ("heap", True), ("stack", False), ("stack", True))}
    errors = [f"{m}{'-baseline' if b else ''}:{r.error if r else 'not run'}" for (m, b), r in runs.items()
              if r is None or r.error]
    row = dict(common, memory_source=SOURCE_MASSIF, verified=verified)
    if errors:
        return dict(row, verified=False, flags=";".join(flags + [f"failed:massif {e}".replace(";", ",")[:300]
                                                                 for e in errors]))
    heap_op, heap_base = runs[("heap", False)].profile, runs[("heap", True)].profile
    stack_op, stack_base = runs[("stack", False)].profile, runs[("stack", True)].profile
    variants = {r.variant for r in runs.values()}
    extra_flags = []
    if "generic" in variants:
        extra_flags.append("valgrind-used-generic-build")
    for name, prof in (("heap", heap_op), ("heap-baseline", heap_base)):
        if prof.peak_heap < HEAP_MARKER_BYTES:
            extra_flags.append(f"peak-outside-window:{name}")
    for name, prof in (("stack", stack_op), ("stack-baseline", stack_base)):
        if prof.peak_stacks < STACK_MARKER_DEPTH * STACK_MARKER_MIN_BYTES_PER_LEVEL:
            extra_flags.append(f"peak-outside-window:{name}")
    raw_heap = heap_op.peak_heap - HEAP_MARKER_BYTES
    base_heap = heap_base.peak_heap - HEAP_MARKER_BYTES
    return dict(row, peak_heap_bytes=raw_heap - base_heap, peak_stack_bytes=stack_op.peak_stacks - stack_base.peak_stacks,
                peak_heap_raw_bytes=raw_heap, peak_heap_baseline_bytes=base_heap,
                peak_heap_extra_bytes=heap_op.peak_heap_extra - heap_base.peak_heap_extra,
                peak_stack_raw_bytes=stack_op.peak_stacks, peak_stack_baseline_bytes=stack_base.peak_stacks,
                massif_variant=",".join(sorted(v for v in variants if v)),
                valgrind_wall_s=sum(r.wall_s for r in runs.values()),
                flags=";".join(flags + extra_flags))


def _sizes_row(algo, keys, signature: bytes, message: bytes) -> dict:
    pk, sk = keys
    row = {"algorithm": algo.name, "backend": algo.backend, "family": algo.family, "nist_level": algo.nist_level}
    row.update(algo.key_sizes(keys))
    row["signature_bytes"] = len(signature)
    row["signature_max_bytes"] = algo.declared_sizes().get("signature_max_bytes", len(signature))
    return row


def measure_memory(algorithms: Sequence, operations: Sequence[str] = SIGNATURE_OPERATIONS,
                   message_bytes: Sequence[int] | int = (32,), *, jobs: int = 2, use_valgrind: bool | None = None,
                   study: str = "03_memory_footprint", seed: int | None = 0, timeout_s: float = 1800,
                   save: bool = True, folder: Path | str | None = None, progress: bool = True,
                   keep_work: Path | str | None = None, params: dict | None = None):
    """Peak memory of every operation of every algorithm and size; returns (and saves) a Run.

    keygen does not depend on the message: it is measured once (message_bytes empty).  Worker
    processes run `jobs` at a time.  `use_valgrind`: None = when valgrind is installed.
    """
    import datetime as dt

    from . import machine
    from .algorithms import random_message, resolve
    from .bench import new_run_id
    from .results import Run
    from .schema import SCHEMA_VERSION

    algos = resolve(algorithms)
    sizes = [message_bytes] if isinstance(message_bytes, int) else list(message_bytes)
    status = valgrind_status()
    if use_valgrind is None:
        use_valgrind = status["available"]
    elif use_valgrind and not status["available"]:
        raise RuntimeError(status["reason"])
    run_id = new_run_id(f"{study}-memory" if study else "memory")
    started = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    run_params = {"algorithms": [f"{a.name}@{a.backend}" for a in algos], "operations": list(operations),
                  "message_bytes": sizes, "jobs": jobs, "seed": seed, "use_valgrind": use_valgrind,
                  "heap_marker_bytes": HEAP_MARKER_BYTES, "stack_marker_depth": STACK_MARKER_DEPTH,
                  "massif_depth": MASSIF_DEPTH, **(params or {})}
    meta = machine.collect(run_params)
    meta.update(study=study, started_at=started, schema_version=SCHEMA_VERSION, valgrind=status,
                memory_method=__doc__.split("\n\n")[1].replace("\n", " "))
    base = {"schema_version": SCHEMA_VERSION, "run_id": run_id, "started_at": started,
            "machine_id": meta["machine_id"], "study": study}
    tmp = Path(keep_work) if keep_work else Path(tempfile.mkdtemp(prefix="pqlab-memory-"))
    t_start = time.perf_counter()
    try:
        plan, size_rows, prepared = [], [], {}
        for algo in algos:
            for size in sizes:
                message = random_message(size, seed)
                keys = algo.generate()
                signature = algo.signer(keys[1])(message)
                inputs_dir = tmp / _safe(f"{algo.name}@{algo.backend}") / f"m{size}"
                write_inputs(inputs_dir, algo.name, algo.backend, message, keys, signature)
                prepared[(algo.key, size)] = read_inputs(inputs_dir)
                if size == sizes[0]:
                    size_rows.append(dict(_sizes_row(algo, keys, signature, message), schema_version=SCHEMA_VERSION,
                                          run_id=run_id))
                for op in operations:
                    if op == "keygen" and size != sizes[0]:
                        continue
                    plan.append((algo, Job(algo.name, algo.backend, op, None if op == "keygen" else size,
                                           inputs_dir, inputs_dir / "work")))
        tasks = [(algo, job, mode, baseline) for algo, job in plan for mode, baseline in _modes(use_valgrind)]
        # slow ones first, so the two workers finish together
        tasks.sort(key=lambda t: (t[2] != "stack", t[2] != "heap", "s-simple" not in t[1].algorithm))
        bar = None
        if progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=len(tasks), desc=f"{study or 'memory'}: worker processes", unit="run", leave=True,
                       dynamic_ncols=True)

        def one(task):
            algo, job, mode, baseline = task
            job.runs[(mode, baseline)] = _execute(job, mode, baseline, timeout_s, "")
            if bar is not None:
                bar.update(1)

        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            list(pool.map(one, tasks))
        if bar is not None:
            bar.close()
        measurements = []
        for algo, job in plan:
            measurements += measurement_rows(job, algo, base, prepared[(algo.key, sizes[0] if job.message_bytes is None
                                                                        else job.message_bytes)])
    finally:
        if not keep_work:
            shutil.rmtree(tmp, ignore_errors=True)
    meta.update(status="complete", wall_s=round(time.perf_counter() - t_start, 1))
    run = Run.from_rows(run_id, measurements, size_rows, [], meta)
    if save:
        run.save(folder)
    return run


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.@-]", "_", name)


if __name__ == "__main__":
    raise SystemExit(main())
