"""The native baseline: liboqs timed from C, with no interpreter in the way.

``native/bench/pqbench`` (C, built by ``native/bench/Makefile``) calls liboqs directly and
times one call per sample with ``CLOCK_MONOTONIC`` and the ``perf_event_open`` user-space
cycle counter, checking every output outside the timed region.  Comparing its medians with
pqlab's own (``ratio = pqlab / native``) says what the Python harness adds per operation.

One binary per liboqs build variant, ``native/bench/build/<variant>/pqbench``, compiled with
that build's headers and linked to ``.venv/liboqs/<variant>/lib/liboqs.so`` through an RPATH
(not ``LD_LIBRARY_PATH``); every result names the library actually loaded (``liboqs_path``).

    build_native_runner(variant="default") -> Path
    native_algorithms(variant="default") -> {"sig": [...], "kem": [...]}
    run_native(algorithm, operations=None, message_bytes=100, budget_s=1.0, variant="default", ...) -> dict
    native_measurements(algorithms, operations=None, message_bytes=100, budget_s=1.0, variant="default", ...)
        -> DataFrame with the MEASUREMENT_COLUMNS of pqlab.schema
    measurements_from_result(result, ...), native_samples(result, ...), native_sizes(result, ...)

Message sizes apply to sign and verify only: keygen and the KEM operations get an empty
(None) ``message_bytes``, as in :func:`pqlab.bench.bench`.  Missing values are None.
"""
from __future__ import annotations

import difflib
import fcntl
import json
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from pathlib import Path

import pandas as pd

from .paths import LIBOQS_PREFIX, NATIVE
from .schema import MEASUREMENT_COLUMNS, SAMPLE_COLUMNS, SCHEMA_VERSION, SIZE_COLUMNS
from .stats import summarize

VARIANTS = ("default", "generic")
BENCH_DIR = NATIVE / "bench"
CYCLES_SOURCE = "perf_event_open:cpu-cycles:user"


class NativeRunnerError(RuntimeError):
    """The native runner could not be built or run, or an operation failed its check."""


class LiboqsBuildMissing(NativeRunnerError):
    """The liboqs build the runner links against is not installed."""


class UnknownNativeAlgorithm(NativeRunnerError):
    """The algorithm is not enabled in this liboqs build; ``close_matches`` lists likely names."""

    def __init__(self, message: str, close_matches: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.close_matches = list(close_matches)


def _prefix(variant: str) -> Path:
    if variant not in VARIANTS:
        raise ValueError(f"unknown liboqs variant {variant!r}: choose one of {', '.join(VARIANTS)}")
    return LIBOQS_PREFIX / variant


def runner_path(variant: str = "default") -> Path:
    """Where the runner for `variant` is built (it may not exist yet)."""
    _prefix(variant)
    return BENCH_DIR / "build" / variant / "pqbench"


def build_native_runner(variant: str = "default") -> Path:
    """Build (incrementally, with make) the runner for the `variant` liboqs build; its path."""
    prefix = _prefix(variant)
    missing = [p for p in (prefix / "lib" / "liboqs.so", prefix / "include" / "oqs" / "oqs.h") if not p.exists()]
    if missing:
        raise LiboqsBuildMissing(
            f"the {variant} build of liboqs is not installed ({', '.join(map(str, missing))} missing): "
            f"run `make setup` in the repository root (it builds liboqs from native/), or "
            f"`native/build-liboqs.sh .venv/bin/python .venv/liboqs {variant}`")
    for tool in ("make", "cc"):
        if shutil.which(tool) is None:
            raise NativeRunnerError(f"building the native runner needs `{tool}` (a C toolchain): "
                                    "install build-essential (or gcc and make)")
    binary = runner_path(variant)
    binary.parent.mkdir(parents=True, exist_ok=True)
    # One build at a time per variant (parallel test workers would race on the output).
    with open(binary.parent / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        proc = subprocess.run(
            ["make", "-C", str(BENCH_DIR), f"VARIANT={variant}", f"LIBOQS={prefix}"],
            capture_output=True, text=True, timeout=300)
    if proc.returncode != 0 or not binary.exists():
        raise NativeRunnerError(
            f"building the native runner for liboqs ({variant}) failed (make exit {proc.returncode}):\n"
            f"{(proc.stderr or proc.stdout).strip()[-3000:]}")
    return binary


def native_algorithms(variant: str = "default") -> dict[str, list[str]]:
    """The signature and KEM names enabled in the `variant` liboqs build (``pqbench --list``)."""
    binary = build_native_runner(variant)
    proc = subprocess.run([str(binary), "--list"], capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        raise NativeRunnerError(f"{binary} --list failed (exit {proc.returncode}): {proc.stderr.strip()}")
    listing = json.loads(proc.stdout)
    return {"sig": listing["sig"], "kem": listing["kem"]}


def close_matches(name: str, names: Iterable[str], n: int = 5) -> list[str]:
    """Names like `name` (case-insensitive difflib match)."""
    by_lower: dict[str, str] = {}
    for candidate in names:
        by_lower.setdefault(candidate.lower(), candidate)
    hits = difflib.get_close_matches(name.lower(), list(by_lower), n=n, cutoff=0.6)
    return [by_lower[h] for h in hits]


def run_native(
    algorithm: str,
    operations: Sequence[str] | str | None = None,
    message_bytes: int = 100,
    budget_s: float = 1.0,
    variant: str = "default",
    *,
    min_samples: int = 5,
    max_samples: int = 1000,
    warmup: int = 3,
    pool: int = 16,
    fixed_message: bool = False,
    cpu: int | None = None,
    cycles: bool = True,
    timeout_s: float | None = None,
    allow_failed: bool = False,
) -> dict:
    """Run the native runner once and return its JSON (plus ``binary`` and ``command``).

    `operations` defaults to all of the algorithm's kind (keygen, sign, verify or keygen, encaps,
    decaps).  `budget_s` is wall-clock seconds per operation, checks included; `min_samples` are
    always taken.  Raises :class:`UnknownNativeAlgorithm` (with close matches) for a name this
    liboqs build does not enable, and :class:`NativeRunnerError` when the runner fails, times out,
    or (unless `allow_failed`) an operation fails its output check.
    """
    binary = build_native_runner(variant)
    if isinstance(operations, str):
        operations = [operations]
    cmd = [str(binary), "--alg", algorithm, "--message-bytes", str(int(message_bytes)),
           "--budget", repr(float(budget_s)), "--min-samples", str(int(min_samples)),
           "--max-samples", str(int(max_samples)), "--warmup", str(int(warmup)), "--pool", str(int(pool))]
    if operations:
        cmd += ["--ops", ",".join(operations)]
    if fixed_message:
        cmd.append("--fixed-message")
    if cpu is not None:
        cmd += ["--cpu", str(int(cpu))]
    if not cycles:
        cmd.append("--no-cycles")
    n_ops = len(operations) if operations else 3
    if timeout_s is None:
        # The budget bounds the sampling loop; set-up, warm-up and min-samples of a slow
        # algorithm (SPHINCS+-s, Classic McEliece keygen) can add tens of seconds.
        timeout_s = 120 + n_ops * (2 * budget_s + 60)
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired as exc:
        raise NativeRunnerError(f"the native runner timed out after {timeout_s:.0f} s: {' '.join(cmd)}") from exc
    result = None
    try:
        result = json.loads(proc.stdout)
    except json.JSONDecodeError:
        pass
    if result is None or proc.returncode not in (0, 1):
        if result is not None and proc.returncode == 2 and "unknown algorithm" in result.get("error", ""):
            listing = native_algorithms(variant)
            near = close_matches(algorithm, listing["sig"] + listing["kem"])
            hint = f"; close matches: {', '.join(near)}" if near else "; `pqbench --list` names the enabled ones"
            raise UnknownNativeAlgorithm(
                f"{algorithm!r} is not a signature or KEM enabled in liboqs "
                f"{result.get('liboqs_version', '')} ({variant} build){hint}", near)
        why = (result or {}).get("error") or proc.stderr.strip()[-2000:] or "no output"
        status = f"signal {-proc.returncode}" if proc.returncode < 0 else f"exit {proc.returncode}"
        raise NativeRunnerError(f"the native runner failed ({status}) for {algorithm}: {why}\n"
                                f"command: {' '.join(cmd)}")
    failed = [op for op in result["operations"] if not op["verified"]]
    if failed and not allow_failed:
        raise NativeRunnerError(f"{algorithm} ({variant} build) failed its output checks: " + "; ".join(
            f"{op['operation']}: {op['error']}" for op in failed))
    result["binary"] = str(binary)
    result["command"] = cmd
    result.setdefault("variant", variant)
    return result


# --------------------------------------------------------------------------- tables


def _flag_text(text: str) -> str:
    """A flag value: one line, no ';' (the flags separator)."""
    return " ".join(str(text).replace(";", ",").split())


def implementation_name(result: dict) -> str:
    return f"liboqs {result['liboqs_version']} ({result['variant']} build) via C runner"


def measurements_from_result(result: dict, *, run_id: str = "", started_at: str = "", machine_id: str = "",
                             study: str = "") -> pd.DataFrame:
    """One MEASUREMENT_COLUMNS row per operation of a :func:`run_native` result.

    Summaries come from :func:`pqlab.stats.summarize`, as for pqlab's own rows (its
    instability flags included); ``overhead_ns`` is the runner's empty timing bracket
    (two clock reads and two counter reads), the native counterpart of pqlab's do-nothing call.
    """
    rows = []
    for op in result["operations"]:
        row = dict.fromkeys(MEASUREMENT_COLUMNS)
        row.update(
            schema_version=SCHEMA_VERSION, run_id=run_id, started_at=started_at, machine_id=machine_id,
            study=study, backend="native", implementation=implementation_name(result),
            library_version=result["liboqs_version"], variant=result["variant"],
            algorithm=result["algorithm"], nist_level=result.get("claimed_nist_level") or None,
            operation=op["operation"], message_bytes=op.get("message_bytes"),
            samples=len(op["samples_ns"]), loops=1, overhead_ns=result.get("timer_overhead_ns"),
            cycles_source="", verified=bool(op["verified"]))
        flags = []
        if op["samples_ns"]:
            t = summarize(op["samples_ns"])
            flags += t["flags"]
            row.update(time_ns_median=t["median"], time_ns_q1=t["q1"], time_ns_q3=t["q3"],
                       time_ns_ci_low=t["ci_low"], time_ns_ci_high=t["ci_high"], time_ns_min=t["min"],
                       time_ns_cv=t["cv"])
        if result.get("cycles_source"):
            kept = [c for c in op["samples_cycles"] if c is not None]
            if kept:
                c = summarize(kept)
                row.update(cycles_median=c["median"], cycles_q1=c["q1"], cycles_q3=c["q3"],
                           cycles_source=result["cycles_source"])
            elif op["samples_ns"]:
                flags.append("no-cycles:counter not running during any sample")
            if op.get("cycles_dropped"):
                flags.append(f"cycles-dropped:{op['cycles_dropped']}")
        else:
            flags.append("no-cycles:" + _flag_text(result.get("cycles_error") or "unavailable"))
        if not op["verified"]:
            flags.append("failed:" + _flag_text(op.get("error") or "check failed"))
        row["flags"] = ";".join(flags)
        rows.append(row)
    return pd.DataFrame(rows, columns=MEASUREMENT_COLUMNS)


def native_samples(result: dict, *, run_id: str = "") -> pd.DataFrame:
    """Every raw sample of a :func:`run_native` result as SAMPLE_COLUMNS rows (warm-up excluded)."""
    frames = []
    for op in result["operations"]:
        n = len(op["samples_ns"])
        cycles = op["samples_cycles"] if len(op["samples_cycles"]) == n else [None] * n
        frames.append(pd.DataFrame({
            "run_id": run_id, "backend": "native", "variant": result["variant"],
            "algorithm": result["algorithm"], "operation": op["operation"],
            "message_bytes": op.get("message_bytes"),
            "sample": range(n), "loops": 1, "time_ns": op["samples_ns"],
            "cycles": pd.array([c if c is not None else pd.NA for c in cycles], dtype="Int64")}))
    if not frames:
        return pd.DataFrame(columns=SAMPLE_COLUMNS)
    return pd.concat(frames, ignore_index=True)[SAMPLE_COLUMNS]


def native_sizes(result: dict, *, run_id: str = "") -> pd.DataFrame:
    """The SIZE_COLUMNS row of a :func:`run_native` result (sizes from liboqs and observed)."""
    row = dict.fromkeys(SIZE_COLUMNS)
    row.update(schema_version=SCHEMA_VERSION, run_id=run_id, algorithm=result["algorithm"], backend="native",
               nist_level=result.get("claimed_nist_level") or None)
    for key in ("public_key_bytes", "secret_key_bytes", "signature_bytes", "signature_max_bytes",
                "ciphertext_bytes", "shared_secret_bytes"):
        if result.get(key) is not None:
            row[key] = result[key]
    return pd.DataFrame([row], columns=SIZE_COLUMNS)


def native_measurements(
    algorithms: str | Iterable[str],
    operations: Sequence[str] | None = None,
    message_bytes: int | Iterable[int] = 100,
    budget_s: float = 1.0,
    variant: str = "default",
    *,
    run_id: str = "",
    started_at: str = "",
    machine_id: str = "",
    study: str = "",
    **run_options,
) -> pd.DataFrame:
    """Measure `algorithms` natively and return MEASUREMENT_COLUMNS rows (backend "native").

    For each signature algorithm, keygen runs once and sign / verify once per message size;
    KEM operations run once.  A failed output check gives a row with ``verified`` False and a
    ``failed:<why>`` flag rather than an exception.  `run_options` go to :func:`run_native`.
    """
    names = [algorithms] if isinstance(algorithms, str) else list(algorithms)
    sizes = [message_bytes] if isinstance(message_bytes, int) else list(message_bytes)
    listing = native_algorithms(variant)
    context = dict(run_id=run_id, started_at=started_at, machine_id=machine_id, study=study)
    frames = []
    for name in names:
        if name in listing["kem"]:
            ops = list(operations) if operations else ["keygen", "encaps", "decaps"]
            plan = [(ops, sizes[0])]
        else:
            ops = list(operations) if operations else ["keygen", "sign", "verify"]
            plan = [(["keygen"], sizes[0])] if "keygen" in ops else []
            per_size = [op for op in ops if op != "keygen"]
            if per_size:
                plan += [(per_size, size) for size in sizes]
        for ops_now, size in plan:
            result = run_native(name, ops_now, size, budget_s, variant, allow_failed=True, **run_options)
            frames.append(measurements_from_result(result, **context))
    if not frames:
        return pd.DataFrame(columns=MEASUREMENT_COLUMNS)
    return pd.concat(frames, ignore_index=True)
