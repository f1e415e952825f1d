"""The memory worker: load inputs from files, perform ONE operation (or its baseline), write the output.

    python -m pqlab.runners.memory.worker --algorithm ML-DSA-44 --backend liboqs --operation sign --inputs DIR

It imports the standard library and pqlab's adapters only (``import pqlab`` is light), so a run under
valgrind stays short.  The method it serves is described in :mod:`pqlab.runners.memory.driver`.
"""
from __future__ import annotations

import ctypes
import functools
import gc
import json
import os
import platform
import resource
import sys
import time
from collections.abc import Callable
from pathlib import Path

from pqlab.core.schema import KIND_OPERATIONS, convert_unit

SIGNATURE_OPERATIONS = KIND_OPERATIONS["sig"]


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
        return "cryptography-der-public", key.public_bytes(s.Encoding.DER,
                                                           s.PublicFormat.SubjectPublicKeyInfo)
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

        return (s.load_der_private_key(data, None) if encoding.endswith("private")
                else s.load_der_public_key(data))
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


def write_inputs(folder: Path | str, algorithm: str, backend: str, message: bytes, keys,
                 signature: bytes) -> Path:
    """Everything a worker needs for keygen, sign and verify of one algorithm and message."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    meta = {"algorithm": algorithm, "backend": backend, "message_bytes": len(message),
            **write_keys(folder, keys)}
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
                    return int(convert_unit(int(line.split()[1]), "KiB", "bytes"))
    except OSError:
        pass
    return int(convert_unit(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, "KiB", "bytes"))


def executable_mappings() -> list[list]:
    """``(start, end, path)`` of every file-backed executable mapping of this process (/proc/self/maps;
    under valgrind, the client's): what a massif code address is looked up in."""
    out = []
    try:
        with open("/proc/self/maps") as fh:
            for line in fh:
                parts = line.split(maxsplit=5)
                if len(parts) == 6 and "x" in parts[1] and parts[5].startswith("/"):
                    start, end = parts[0].split("-")
                    out.append([int(start, 16), int(end, 16), parts[5].strip()])
    except OSError:
        pass
    return out


def interpreter_objects(paths) -> list[str]:
    """Those of `paths` that are the Python interpreter itself: its executable, libpython and the
    standard library's extension modules (site-packages excluded: bindings live there)."""
    import sysconfig

    cfg = sysconfig.get_paths()
    dirs = {os.path.realpath(cfg[k]) + os.sep for k in ("stdlib", "platstdlib")}
    own = {os.path.realpath(sys.executable),
           os.path.realpath(os.path.join(sysconfig.get_config_var("LIBDIR") or "/",
                                         sysconfig.get_config_var("LDLIBRARY") or "-"))}
    return sorted(p for p in set(paths) if p in own or (any(p.startswith(d) for d in dirs)
                                                          and "-packages" + os.sep not in p))


def loaded_files() -> list[str]:
    """Every file this process runs code from: its shared objects and the source files of its imported
    modules (what a cached memory figure depends on besides the interpreter's version)."""
    files = {path for _, _, path in executable_mappings()}
    files.update(f for m in list(sys.modules.values()) if isinstance(f := getattr(m, "__file__", None), str))
    return sorted(f for f in files if Path(f).is_file())


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
    from pqlab.backends.algorithms import get, load_backend

    inputs, output = Path(inputs), Path(output)
    output.mkdir(parents=True, exist_ok=True)
    load_backend(backend)  # this backend's library only: every import is slow under valgrind
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
              "warmup": warmup, "wall_ns": wall_ns, "build": getattr(algo, "extra", {}).get("build", ""),
              "max_rss_bytes": peak_rss(), "max_rss_before_bytes": rss_before,
              "python": f"{platform.python_implementation()} {platform.python_version()}",
              "loaded_files": loaded_files(), "mappings": (maps := executable_mappings()),
              "interpreter_objects": interpreter_objects(p for _, _, p in maps)}
    if trace:
        report["tracemalloc_peak_bytes"] = traced_peak
    report.update(_write_output(output, operation, result))
    (output / "result.json").write_text(json.dumps(report, indent=1) + "\n")
    return report


def main(argv: list[str] | None = None) -> int:
    import argparse

    p = argparse.ArgumentParser(prog="python -m pqlab.runners.memory.worker",
                                description="Perform ONE operation on inputs read from files "
                                            "(see pqlab.runners.memory.driver).")
    p.add_argument("--job", help="a JSON file holding the arguments below by name (the driver's way: every "
                                 "worker then starts with the same command line, environment and so initial "
                                 "stack)")
    p.add_argument("--algorithm")
    p.add_argument("--backend")
    p.add_argument("--operation", choices=SIGNATURE_OPERATIONS)
    p.add_argument("--inputs", help="folder written by write_inputs")
    p.add_argument("--output", help="folder for result.json and the output (default: INPUTS/out)")
    p.add_argument("--baseline", type=int, default=0, choices=(0, 1), help="1: leave the operation out")
    p.add_argument("--heap-marker", type=int, default=0)
    p.add_argument("--stack-depth", type=int, default=0)
    p.add_argument("--trace", type=int, default=0, choices=(0, 1), help="1: tracemalloc around the operation")
    p.add_argument("--warmup", type=int, default=0, help="calls of the operation before the measured one")
    p.add_argument("--serve", metavar="BACKEND",
                   help="serve jobs read from stdin, one forked process each (serve())")
    a = p.parse_args(argv)
    if a.serve:
        return serve(a.serve)
    if a.job:
        a = argparse.Namespace(**{**vars(a), **json.loads(Path(a.job).read_text())})
    missing = [name for name in ("algorithm", "backend", "operation", "inputs") if not getattr(a, name)]
    if missing:
        p.error(f"--{missing[0]} is required (or --job FILE)")
    print(json.dumps(run_job(vars(a))))
    return 0


def run_job(job: dict) -> dict:
    """:func:`worker` with the arguments of a job (a job.json, or a line the server reads)."""
    return worker(job["algorithm"], job["backend"], job["operation"], job["inputs"],
                  job.get("output") or Path(job["inputs"]) / "out", baseline=bool(job.get("baseline")),
                  heap_marker=job.get("heap_marker") or 0, stack_depth=job.get("stack_depth") or 0,
                  trace=bool(job.get("trace")), warmup=job.get("warmup") or 0)


def serve(backend: str) -> int:
    """A fork server for massif runs: load `backend`'s library once, then for each job read from stdin (one
    JSON line, the fields of a job.json) fork a child that runs it in the job's output folder, exactly as a
    worker started afresh does after its imports, and answer ``{"pid", "status"}`` (os.waitpid's) on stdout.
    Why, and why its figures equal a fresh worker's: :mod:`pqlab.runners.memory.driver`.  Forking also lets
    each child inherit valgrind's translations.  A failing child leaves its traceback in ``error.txt``."""
    from pqlab.backends.algorithms import load_backend

    load_backend(backend)  # and nothing a worker started afresh does not load (its figures would differ)
    for line in sys.stdin:
        job = json.loads(line)
        pid = os.fork()
        if pid == 0:  # the child: never returns into the loop
            code = 1
            try:
                os.chdir(job["output"])
                run_job(job)
                code = 0
            except BaseException:  # noqa: BLE001 - reported through error.txt and the exit status
                import traceback

                Path(job["output"], "error.txt").write_text(traceback.format_exc())
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        sys.stdout.write(json.dumps({"pid": pid, "status": status}) + "\n")
        sys.stdout.flush()
    return 0



if __name__ == "__main__":
    raise SystemExit(main())
