"""The native baseline: liboqs timed from C, with no interpreter in the way.

``native/bench/pqbench`` (C, built by ``native/bench/Makefile``) calls liboqs directly and
times one call per sample with ``CLOCK_MONOTONIC`` and the cycle counter pqlab measures with
(:mod:`pqlab.measure.cycles`: core cycles, TSC reference cycles or none, same labels), checking every
output outside the timed region.  Comparing its medians with
pqlab's own (``ratio = pqlab / native``) says what pqlab's path adds per operation.

One binary per liboqs build, ``native/bench/build/<build id>/pqbench``, compiled with
that build's headers and linked to ``.venv/liboqs/<build>/lib/liboqs.so`` through an RPATH
(not ``LD_LIBRARY_PATH``); every result names the library actually loaded (``liboqs_path``).  Each build
records the binary's sha256 beside it (``pqbench.sha256``); a binary that does not match it (truncated or
replaced) is built again, with one warning line saying so (one built before pqlab recorded it, silently).

    build_native_runner(build="default") -> Path
    native_algorithms(build="default") -> {"sig": [...], "kem": [...]}
    run_native(algorithm, operations=None, message_bytes=100, budget_s=1.0, build="default", ...) -> dict
    native_run(algorithms, message_bytes=100, budget_s=1.0, build="default", study=...) -> Run
    measurements_from_result(result, base), native_samples(result, run_id)

Message sizes apply to sign and verify only: keygen and the KEM operations get an empty
(None) ``message_bytes``, as in :func:`pqlab.benchmark.bench`.  Missing values are None.
"""
from __future__ import annotations

import fcntl
import json
import math
import random
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from pqlab.core import flags, inputs, integrity
from pqlab.core.builds import OPTIONS, options_of, parse, prefix
from pqlab.core.errors import UnknownName, close_matches, shell_command, warn
from pqlab.core.paths import NATIVE
from pqlab.core.schema import typed
from pqlab.core.vocabulary import family_of
from pqlab.measure import cycles, noise
from pqlab.measure.stats import summarize
from pqlab.runners.base import RunnerError, call_json, failure, rows_over_rounds
from pqlab.runners.rounds import ROUNDS
from pqlab.store.recorder import RunRecorder, summary_columns

BENCH_DIR = NATIVE / "bench"
#: The backend column of the C runner's rows (pqlab.core.vocabulary).
BACKEND = "native"
#: The runner version this module reads (pqbench.c's PQBENCH_VERSION).
RUNNER_VERSION = "2"
#: pqbench's --counter for each of pqlab's counter labels.
COUNTER_MODE = {cycles.CORE_CYCLES: "perf", cycles.TSC: "tsc", cycles.NONE: "none"}


class NativeRunnerError(RunnerError):
    """The native runner could not be built or run, or an operation failed its check."""


class LiboqsBuildMissing(NativeRunnerError):
    """The liboqs build the runner links against is not installed."""


class UnknownNativeAlgorithm(NativeRunnerError):
    """The algorithm is not enabled in this liboqs build; ``close_matches`` lists likely names."""

    def __init__(self, message: str, close_matches: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.close_matches = list(close_matches)


def runner_path(build: str = "default") -> Path:
    """Where the runner for `build` is built (it may not exist yet)."""
    # one folder per build id (refuses unknown ones)
    return BENCH_DIR / "build" / prefix(build).name / "pqbench"


def build_native_runner(build: str = "default") -> Path:
    """Build (incrementally, with make) the runner for the `build` liboqs build; its path."""
    where = prefix(build)
    missing = [p for p in (where / "lib" / "liboqs.so", where / "include" / "oqs" / "oqs.h")
               if not p.exists()]
    if missing:
        raise LiboqsBuildMissing(
            f"the {build} build of liboqs is not installed ({', '.join(map(str, missing))} missing): "
            "run `make setup` in the repository root, or "
            f"`{shell_command(f'pqlab.app.provision liboqs {build}')}`")
    for tool in ("make", "cc"):
        if shutil.which(tool) is None:
            raise NativeRunnerError(f"building the native runner needs `{tool}` (a C toolchain): "
                                    "install build-essential (or gcc and make)")
    binary = runner_path(build)
    binary.parent.mkdir(parents=True, exist_ok=True)
    # One build at a time per build (parallel test workers would race on the output).
    with open(binary.parent / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        before = _stamp(binary)
        bad = integrity.problem(binary) if before else ""
        if bad:  # make goes by dates only: a damaged binary newer than its sources would stay
            why = bad if integrity.recorded(binary) else integrity.elf_problem(binary)  # unrecorded: quietly
            if why:
                warn(f"the native runner {binary} {why}: building it again")
            binary.unlink()
            before = None
        proc = subprocess.run(
            ["make", "-C", str(BENCH_DIR), f"LIBOQS={where}"],
            capture_output=True, text=True, timeout=300)
        if proc.returncode != 0 or not binary.exists():
            raise NativeRunnerError(
                f"building the native runner for liboqs ({build}) failed (make exit {proc.returncode}):\n"
                f"{(proc.stderr or proc.stdout).strip()[-3000:]}")
        if _stamp(binary) != before:  # make built it just now
            integrity.record(binary)
    return binary


def _stamp(path: Path) -> tuple | None:
    """(inode, size, mtime) of `path`, None when it is missing: whether make replaced it."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


def native_algorithms(build: str = "default") -> dict[str, list[str]]:
    """The signature and KEM names enabled in the `build` liboqs build (``pqbench --list``)."""
    binary = build_native_runner(build)
    proc = subprocess.run([str(binary), "--list"], capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        raise NativeRunnerError(f"{binary} --list failed (exit {proc.returncode}): {proc.stderr.strip()}")
    listing = json.loads(proc.stdout)
    check_version(listing, binary)
    return {"sig": listing["sig"], "kem": listing["kem"]}


def check_version(result: dict, binary) -> None:
    """Raise unless the runner that produced `result` is the version this module reads."""
    got = result.get("runner_version")
    if got != RUNNER_VERSION:
        raise NativeRunnerError(f"{binary} is runner version {got}, pqlab reads version {RUNNER_VERSION}: "
                                f"remove it and run again (pqlab builds the runner on first use)")


def run_native(
    algorithm: str,
    operations: Sequence[str] | str | None = None,
    message_bytes: int = 100,
    budget_s: float = 1.0,
    build: str = "default",
    *,
    min_samples: int = 5,
    max_samples: int = 1000,
    warmup: int = 3,
    pool: int = 16,
    fixed_message: bool = False,
    cpu: int | None = None,
    counter: str | None = None,
    timeout_s: float | None = None,
    allow_failed: bool = False,
) -> dict:
    """Run the native runner once and return its JSON (plus ``binary`` and ``command``).

    `operations` defaults to all of the algorithm's kind (keygen, sign, verify or keygen, encaps, decaps).
    `budget_s` is wall-clock seconds per operation, checks included; `min_samples` are always taken.
    `counter` is a label of :data:`pqlab.measure.cycles.LABELS`; by default the counter this process measures
    with (PQLAB_COUNTER), so pqlab's and the runner's cycles are the same quantity; the runner must report
    that counter.  Raises :class:`UnknownNativeAlgorithm` (with close matches) for a name this liboqs build
    does not enable, and :class:`NativeRunnerError` when the runner fails, times out, or (unless
    `allow_failed`) an operation fails its output check.
    """
    label = counter or cycles.counter().label
    binary = build_native_runner(build)
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
    cmd += ["--counter", COUNTER_MODE[label]]
    n_ops = len(operations) if operations else 3
    if timeout_s is None:
        # The budget bounds the sampling loop; set-up, warm-up and min-samples of a slow
        # algorithm (SPHINCS+-s, Classic McEliece keygen) can add tens of seconds.
        timeout_s = 120 + n_ops * (2 * budget_s + 60)
    proc, result = call_json(cmd, what="the native runner", timeout_s=timeout_s, error=NativeRunnerError)
    if result is None or proc.returncode not in (0, 1):
        if result is not None and proc.returncode == 2 and "unknown algorithm" in result.get("error", ""):
            listing = native_algorithms(build)
            near = close_matches(algorithm, listing["sig"] + listing["kem"])
            hint = (f"; close matches: {', '.join(near)}" if near
                    else "; `pqbench --list` names the enabled ones")
            raise UnknownNativeAlgorithm(
                f"{algorithm!r} is not a signature or KEM enabled in liboqs "
                f"{result.get('liboqs_version', '')} ({build} build){hint}", near)
        raise NativeRunnerError(f"the native runner failed ({failure(proc, result)}) for {algorithm}\n"
                                f"command: {' '.join(cmd)}")
    check_version(result, binary)
    if result.get("cycles_source") != label:
        raise NativeRunnerError(f"the native runner counted {result.get('cycles_source')!r}, not {label!r} "
                                "as asked")
    failed = [op for op in result["operations"] if not op["verified"]]
    if failed and not allow_failed:
        raise NativeRunnerError(f"{algorithm} ({build} build) failed its output checks: " + "; ".join(
            f"{op['operation']}: {op['error']}" for op in failed))
    result["binary"] = str(binary)
    result["command"] = cmd
    result.setdefault("build", parse(build).id)  # a runner that predates its "build" field
    return result


# --------------------------------------------------------------------------- tables


def implementation_name(result: dict) -> str:
    return f"liboqs {result['liboqs_version']} ({options_of(result['build'])} build) via C runner"


def measurements_from_result(result: dict, base: dict | None = None) -> pd.DataFrame:
    """One measurement row per operation of a :func:`run_native` result (`base`: the recorder's base columns).

    Summaries come from :func:`pqlab.measure.stats.summarize`, as for pqlab's own rows (its
    instability flags included); ``overhead_ns`` is the runner's empty timing bracket
    (two clock reads and two counter reads), the native counterpart of pqlab's do-nothing call.
    ``cycles_source`` is the runner's counter label (pqlab's vocabulary); samples whose count is
    missing (a perf counter multiplexed away during the call) are flagged ``cycles-dropped``.
    """

    rows = []
    for op in result["operations"]:
        row = dict(base or {}, backend=BACKEND, implementation=implementation_name(result),
                   library_version=result["liboqs_version"], build=result["build"],
                   algorithm=result["algorithm"], kind=result.get("kind"),
                   family=family_of(result["algorithm"]),
                   nist_level=result.get("claimed_nist_level") or None, operation=op["operation"],
                   message_bytes=op.get("message_bytes"), samples=len(op["samples_ns"]), loops=1, rounds=1,
                   overhead_ns=result.get("timer_overhead_ns"), cycles_source=result["cycles_source"],
                   verified=bool(op["verified"]))
        marks = [flags.make("no-rounds", "one process of the C runner")]
        if op["samples_ns"]:
            t = summarize(op["samples_ns"])
            marks += t["flags"]
            row.update(summary_columns(t))
        if result["cycles_source"] == cycles.NONE:
            marks.append(flags.make("no-cycles", result.get("cycles_error") or "no counter"))
        else:
            kept = [c for c in op["samples_cycles"] if c is not None]
            if kept:
                row.update(summary_columns(summarize(kept), "cycles"))
            missing = len(op["samples_cycles"]) - len(kept)
            if missing:
                marks.append(flags.make("cycles-dropped",
                                        f"{missing} of {len(op['samples_cycles'])} samples: no count (the "
                                        "perf counter was multiplexed away or a read failed)"))
        if not op["verified"]:
            marks.append(flags.make("failed", op.get("error") or "check failed"))
        row["flags"] = flags.join(marks)
        rows.append(row)
    return typed(pd.DataFrame(rows), "measurements")


def native_samples(result: dict, *, run_id: str = "", round_index: int | None = None) -> pd.DataFrame:
    """Every raw sample of a :func:`run_native` result as sample rows (warm-up excluded), in `round_index`."""
    rows = []
    for op in result["operations"]:
        n = len(op["samples_ns"])
        cycles = op["samples_cycles"] if len(op["samples_cycles"]) == n else [None] * n
        rows += [{"run_id": run_id, "backend": BACKEND, "build": result["build"],
                  "algorithm": result["algorithm"], "operation": op["operation"],
                  "message_bytes": op.get("message_bytes"), "round": round_index, "sample": i, "loops": 1,
                  "time_ns": t, "cycles": c}
                 for i, (t, c) in enumerate(zip(op["samples_ns"], cycles))]
    return typed(pd.DataFrame(rows), "samples")


def native_run(algorithms: Sequence[str], message_bytes: int = 100, budget_s: float = 1.0, *,
               build: str = "default", study: str = "", folder=None, min_samples: int = 5, warmup: int = 1,
               fixed_message: bool = True, params: dict | None = None, save: bool = True,
               rounds: int | None = None, pool: int = 16, conformance: dict):
    """Measure `algorithms` with the C runner (every operation of each) in rounds and record them as one run.

    Each round runs the C runner once per algorithm, a fresh process each, the algorithms in an order shuffled
    per round, with ``budget_s / rounds`` of sampling and ``ceil(min_samples / rounds)`` samples at least; the
    estimate and its interval are over rounds, as for :func:`pqlab.benchmark.bench`
    (:mod:`pqlab.runners.rounds`), and each round records the machine's noise and reference loops
    (:mod:`pqlab.measure.noise`).  Every input is checked first (names this liboqs build enables, with close
    matches; budget, sample count, rounds and message size; a name given twice is measured once).  A failed
    output check is a row with ``verified`` False and a ``failed`` flag, never an exception.  `pool`: the
    pre-made signatures / ciphertexts verify and decaps cycle through (1: one, verified or decapsulated again
    and again, as pqlab's own verify and decaps do, so the two harnesses time the same input and cache state).
    `conformance`: the known-answer records of that build's liboqs by algorithm
    (:func:`pqlab.checks.conformance.liboqs_records`), carried by the run.  Raises :class:`NativeRunnerError`
    if the runner did not load the `build` build."""


    budget_s = inputs.positive_number(budget_s, "budget_s")
    min_samples = inputs.sample_bounds(min_samples, 1000)[0]  # run_native's max_samples
    rounds = inputs.round_counts(ROUNDS if rounds is None else rounds,
                                 ROUNDS if rounds is None else rounds)[0]
    message_bytes = inputs.message_size(message_bytes)
    warmup = inputs.count(warmup, "warmup", 0)
    pool = inputs.count(pool, "pool")
    algorithms = inputs.unique(list(algorithms))
    listing = native_algorithms(build)
    enabled = listing["sig"] + listing["kem"]
    for name in algorithms:
        if name not in enabled:
            raise UnknownName(f"algorithm for the native runner ({build} build)", name, enabled)
    run_params = {"algorithms": list(algorithms), "message_bytes": message_bytes, "budget_s": budget_s,
                  "build": build, "fixed_message": fixed_message, "min_samples": min_samples,
                  "rounds": rounds, "pool": pool,
                  **(params or {})}
    libraries = set()
    results: dict[str, list] = {name: [] for name in algorithms}
    # the runner links that build's liboqs: its rows carry that library's conformance records, which the
    # caller checked (pqlab.checks.conformance.liboqs_records: checks sit above the runners they check
    # through)
    records = {f"{a}@{BACKEND}": r for a, r in conformance.items() if a in algorithms}
    with RunRecorder(study, run_params, label=f"{study}-native" if study else "native", folder=folder,
                     save=save, liboqs=False,
                     meta={"native": {"build": build, "fixed_message": fixed_message}, "rounds": [],
                           "isolation": "process", "conformance": records}) as rec:
        for r in range(rounds):
            before, start = noise.snapshot(), noise.reference_times()
            order = list(algorithms)
            random.Random(f"native-{r}").shuffle(order)
            for name in order:
                result = run_native(name, None, message_bytes, budget_s / rounds, build,
                                    fixed_message=fixed_message, min_samples=math.ceil(min_samples / rounds),
                                    warmup=warmup, pool=pool, allow_failed=True)
                options = parse(build).options  # a given build's options are what its maker chose
                if options in OPTIONS and bool(result.get("oqs_dist_build")) is not (options == "default"):
                    raise NativeRunnerError(f"the native runner for {name} did not load the {build} liboqs "
                                            f"build: {result.get('liboqs_path')}")
                libraries.add(result.get("liboqs_path", ""))
                results[name].append((r, result))
                rec.add(samples=native_samples(result, run_id=rec.run_id, round_index=r).to_dict("records"))
            rec.meta["native"]["liboqs_paths"] = sorted(libraries)
            rec.meta["rounds"].append(noise.round_record(r, before, start))
            rec.set_measurements([row for name in algorithms if results[name]
                                  for row in rows_over_rounds(results[name], rec, measurements_from_result,
                                                              native_samples)])
            rec.checkpoint()
    return rec.run
