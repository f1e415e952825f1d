"""The native baseline: liboqs timed from C, with no interpreter in the way.

``native/bench/pqbench`` (C, the program ``pqbench`` of :mod:`pqlab.runners.program`, described by
``native/bench/program.toml``) calls liboqs directly and times one call per sample with ``CLOCK_MONOTONIC``
and the cycle counter pqlab measures with (:mod:`pqlab.measure.cycles`: core cycles, TSC reference cycles or
none, same labels), checking every output outside the timed region.  It speaks pqlab's program protocol
(``native/PROTOCOL.md``): ``pqbench list``, ``pqbench time --impl liboqs --alg NAME ...``.  Comparing its
medians with pqlab's own (``ratio = pqlab / native``) says what pqlab's path adds per operation.

One binary per liboqs build, ``native/bench/build/<build id>/pqbench`` (the program's ``{build}`` and
``{liboqs}`` placeholders), compiled with that build's headers and linked to
``.venv/liboqs/<build>/lib/liboqs.so`` through an RPATH (not ``LD_LIBRARY_PATH``); every result names the
library actually loaded (``liboqs_path``).  The Program record builds it on first need, one build at a time,
and again when its sources or that liboqs build change or the binary no longer matches the sha256 its build
record (``pqlab-build.json`` beside it) holds.

    build_native_runner(build="default") -> Path
    native_algorithms(build="default") -> {"sig": [...], "kem": [...]}
    run_native(algorithm, operations=None, message_bytes=100, budget_s=1.0, build="default", ...) -> dict
    native_run(algorithms, message_bytes=100, budget_s=1.0, build="default", study=...) -> Run
    measurements_from_result(result, base), native_samples(result, run_id)

Message sizes apply to sign and verify only: keygen and the KEM operations get an empty
(None) ``message_bytes``, as in :func:`pqlab.benchmark.bench`.  Missing values are None.
"""
from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from pqlab.core import flags, inputs, paths
from pqlab.core.builds import OPTIONS, options_of, parse, prefix
from pqlab.core.errors import UnknownName, close_matches, shell_command
from pqlab.core.paths import NATIVE
from pqlab.core.schema import typed
from pqlab.core.vocabulary import family_of
from pqlab.measure import cycles
from pqlab.measure.stats import summarize
from pqlab.runners.base import RunnerError, in_rounds
from pqlab.runners.program import PROTOCOL, Program, ProgramError, call, describe, ensure_built, program
from pqlab.runners.rounds import ROUNDS
from pqlab.store.recorder import RunRecorder, summary_columns

BENCH_DIR = NATIVE / "bench"
#: The C runner's name in pqlab.runners.program.REGISTRY.
PROGRAM = "pqbench"
#: The backend column of the C runner's rows (pqlab.core.vocabulary).
BACKEND = "native"
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


def runner_program(build: str = "default") -> Program:
    """The C runner's Program record for the `build` liboqs build (refuses an unknown build id).

    ``{liboqs}`` is the install prefix, relative to native/bench when it lies in this checkout, as the
    program.toml's default is, so the default build's record is the same whoever asks for it."""
    where = prefix(build)
    try:
        liboqs = os.path.relpath(where, BENCH_DIR) if where.is_relative_to(paths.ROOT) else str(where)
    except ValueError:
        liboqs = str(where)
    return program(PROGRAM, build=where.name, liboqs=liboqs)


def runner_path(build: str = "default") -> Path:
    """Where the runner for `build` is built (it may not exist yet)."""
    return runner_program(build).artifact_path


def _check_installed(build: str) -> None:
    where = prefix(build)
    missing = [p for p in (where / "lib" / "liboqs.so", where / "include" / "oqs" / "oqs.h")
               if not p.exists()]
    if missing:
        raise LiboqsBuildMissing(
            f"the {build} build of liboqs is not installed ({', '.join(map(str, missing))} missing): "
            "run `make setup` in the repository root, or "
            f"`{shell_command(f'pqlab.app.provision liboqs {build}')}`")


def build_native_runner(build: str = "default") -> Path:
    """Build the runner for the `build` liboqs build unless it is the intact build of today's sources
    (:func:`pqlab.runners.program.ensure_built`); its path."""
    _check_installed(build)
    try:
        return ensure_built(runner_program(build))
    except ProgramError as exc:
        raise NativeRunnerError(str(exc)) from exc


def native_algorithms(build: str = "default") -> dict[str, list[str]]:
    """The signature and KEM names enabled in the `build` liboqs build (``pqbench list``)."""
    _check_installed(build)
    prog = runner_program(build)
    try:
        listing = describe(prog)
    except ProgramError as exc:
        raise NativeRunnerError(str(exc)) from exc
    check_version(listing, prog.artifact_path)
    algorithms = listing.get("algorithms", [])
    return {kind: [a["algorithm"] for a in algorithms if a.get("kind") == kind] for kind in ("sig", "kem")}


def _liboqs_version(build: str) -> str:
    listing = describe(runner_program(build))
    return next((i.get("version", "") for i in listing.get("implementations", ())
                 if i.get("implementation") == "liboqs"), "")


def check_version(result: dict, binary) -> None:
    """Raise unless `result` is a document of the C runner in the protocol this module speaks."""
    got, name = result.get("protocol"), result.get("program")
    if got != PROTOCOL or name != PROGRAM:
        raise NativeRunnerError(f"{binary} speaks protocol {got} as {name!r}, pqlab speaks protocol "
                                f"{PROTOCOL} with {PROGRAM!r}: remove it and run again (pqlab builds the "
                                "runner on first use)")


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
    """Run the native runner's ``time`` once and return its JSON (plus ``binary`` and ``command``).

    `operations` defaults to all of the algorithm's kind (keygen, sign, verify or keygen, encaps, decaps).
    `budget_s` is wall-clock seconds per operation, checks included; `min_samples` are always taken.
    `counter` is a label of :data:`pqlab.measure.cycles.LABELS`; by default the counter this process measures
    with (PQLAB_COUNTER), so pqlab's and the runner's cycles are the same quantity; the runner must report
    that counter.  Raises :class:`UnknownNativeAlgorithm` (with close matches) for a name this liboqs build
    does not enable, and :class:`NativeRunnerError` when the runner fails, times out, or (unless
    `allow_failed`) an operation fails its output check.
    """
    label = counter or cycles.counter().label
    listing = native_algorithms(build)  # builds the runner first when needed
    if algorithm not in listing["sig"] + listing["kem"]:
        near = close_matches(algorithm, listing["sig"] + listing["kem"])
        hint = (f"; close matches: {', '.join(near)}" if near
                else "; `pqbench list` names the enabled ones")
        raise UnknownNativeAlgorithm(
            f"{algorithm!r} is not a signature or KEM enabled in liboqs {_liboqs_version(build)} "
            f"({build} build){hint}", near)
    prog = runner_program(build)
    if isinstance(operations, str):
        operations = [operations]
    args = ["--impl", "liboqs", "--alg", algorithm, "--message-bytes", str(int(message_bytes)),
            "--budget", repr(float(budget_s)), "--min-samples", str(int(min_samples)),
            "--max-samples", str(int(max_samples)), "--warmup", str(int(warmup)), "--pool", str(int(pool))]
    if operations:
        args += ["--ops", ",".join(operations)]
    if fixed_message:
        args.append("--fixed-message")
    if cpu is not None:
        args += ["--cpu", str(int(cpu))]
    args += ["--counter", COUNTER_MODE[label]]
    n_ops = len(operations) if operations else 3
    if timeout_s is None:
        # The budget bounds the sampling loop; set-up, warm-up and min-samples of a slow
        # algorithm (SPHINCS+-s, Classic McEliece keygen) can add tens of seconds.
        timeout_s = 120 + n_ops * (2 * budget_s + 60)
    try:
        result = call(prog, "time", args, timeout_s=timeout_s, accept=(0, 1), error=NativeRunnerError)
    except ProgramError as exc:  # the build, before the call
        raise NativeRunnerError(str(exc)) from exc
    except NativeRunnerError as exc:
        raise NativeRunnerError(f"{algorithm} ({build} build): {exc}") from exc
    binary = prog.artifact_path
    check_version(result, binary)
    if result.get("cycles_source") != label:
        raise NativeRunnerError(f"the native runner counted {result.get('cycles_source')!r}, not {label!r} "
                                "as asked")
    failed = [op for op in result["operations"] if not op["verified"]]
    if failed and not allow_failed:
        raise NativeRunnerError(f"{algorithm} ({build} build) failed its output checks: " + "; ".join(
            f"{op['operation']}: {op['error']}" for op in failed))
    result["binary"] = str(binary)
    result["command"] = [*prog.command(), "time", *args]
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
    options = parse(build).options  # a given build's options are what its maker chose
    # the runner links that build's liboqs: its rows carry that library's conformance records, which the
    # caller checked (pqlab.checks.conformance.liboqs_records: checks sit above the runners they check
    # through)
    records = {f"{a}@{BACKEND}": r for a, r in conformance.items() if a in algorithms}
    with RunRecorder(study, run_params, label=f"{study}-native" if study else "native", folder=folder,
                     save=save, liboqs=False,
                     meta={"native": {"build": build, "fixed_message": fixed_message},
                           "isolation": "process", "conformance": records}) as rec:

        def run_one(name: str, r: int) -> dict:
            result = run_native(name, None, message_bytes, budget_s / rounds, build,
                                fixed_message=fixed_message, min_samples=math.ceil(min_samples / rounds),
                                warmup=warmup, pool=pool, allow_failed=True)
            if options in OPTIONS and bool(result.get("oqs_dist_build")) is not (options == "default"):
                raise NativeRunnerError(f"the native runner for {name} did not load the {build} liboqs "
                                        f"build: {result.get('liboqs_path')}")
            libraries.add(result.get("liboqs_path", ""))
            rec.meta["native"]["liboqs_paths"] = sorted(libraries)
            return result

        # a failed round raises (lost=()): the run keeps the rounds it finished (checkpointed)
        in_rounds(rec, algorithms, rounds, run_one, measurements_from_result, native_samples, label="native",
                  lost=(), describe=lambda name: {"algorithm": name})
    return rec.run
