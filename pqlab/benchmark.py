"""Run measurements: algorithms x operations x message sizes -> a saved, tidy :class:`Run`.

    run = bench(["ML-DSA-44", "Ed25519", "RSA-2048-PSS"], message_bytes=[100], budget_s=0.5,
                study="01_aes_rsa_sphincs")

Every input is checked before anything is measured (:mod:`pqlab.inputs`: known operations that
every algorithm has, budgets, sample counts, message sizes; an algorithm given twice is measured
once).  Each operation is measured with :func:`pqlab.timing.measure` (outputs checked outside the
timer), summarised with :func:`pqlab.stats.summarize`, and recorded through
:class:`pqlab.recorder.RunRecorder`, which saves the plan before the first measurement and
checkpoints the run after every operation and message size, so an interrupted or failing run keeps
what it measured.  A failure (an exception, a wrong output) becomes a row with ``verified=False``
and a ``failed`` flag; the run goes on.  A do-nothing call through the same path is measured first
and its cost stored with every row (``overhead_ns``); sign and encrypt get a fresh message every call
(:class:`pqlab.algorithms.Trial`), and a no-op fed the same way says what that adds
(``meta["harness_feed_ns"]``, :func:`describe_harness`).  Every operation and size of an algorithm uses
one key pair; verify verifies the signature that sign's last checked call made at the same size, and
the algorithm's sizes row is read from it, so a slow signer (a SPHINCS+ s-set signs for about a
second) is not called again for either.
"""
from __future__ import annotations

import itertools
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from . import cycles, flags, inputs, paths
from .algorithms import Algorithm, Noop, VerificationError, random_message, resolve
from .recorder import RunRecorder, new_run_id, summary_columns
from .results import Run, load_run
from .stats import summarize
from .timing import TARGET_REL_CI, measure

#: Operations that get a fresh message every call (Algorithm.trial); their overhead_ns is the fed no-op's.
FED_OPERATIONS = ("sign", "encrypt")


def describe_harness(run: Run) -> str:
    """What the harness costs per call, from the run's no-op measurements (one sentence, Markdown)."""
    from .formatting import fmt_time_ns

    text = f"Harness cost per call (a do-nothing call through it): {fmt_time_ns(run.meta['harness_overhead_ns'])}"
    if "harness_feed_ns" in run.meta:
        feed = run.meta["harness_feed_ns"]
        text += (f"; fed a fresh message every call, as sign and encrypt are so that a cached result cannot pass: "
                 f"{fmt_time_ns(run.meta['harness_fed_ns'])} ({fmt_time_ns(abs(feed))} {'more' if feed >= 0 else 'less'})")
    return text + "."


def _progress(total: int, enabled: bool, desc: str):
    if not enabled:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit="op", leave=True, dynamic_ncols=True)


def measurement_row(rec: RunRecorder, algo: Algorithm, operation: str, message_bytes, samples, overhead_ns=None,
                    error: str = "") -> dict:
    """One tidy row from raw samples (or from a failure)."""
    row = rec.row(algo, operation=operation, message_bytes=message_bytes, overhead_ns=overhead_ns)
    if error:
        return dict(row, samples=0, verified=False, flags=flags.make("failed", error))
    t = summarize(samples.time_ns)
    row.update(samples=t["n"], loops=samples.loops, cycles_source=samples.cycles_source, verified=True,
               target_rel_ci=samples.target_rel_ci, **summary_columns(t))
    if samples.cycles is not None:
        row.update(summary_columns(summarize(samples.cycles), "cycles"))
    row["flags"] = flags.join([*t["flags"], *samples.flags])
    return row


def sample_rows(run_id: str, algo: Algorithm, operation: str, message_bytes, samples) -> list[dict]:
    counts = samples.cycles if samples.cycles is not None else [None] * samples.n
    variant = algo.extra.get("variant", "")
    return [{"run_id": run_id, "backend": algo.backend, "variant": variant, "algorithm": algo.name,
             "operation": operation, "message_bytes": message_bytes, "sample": i, "loops": samples.loops,
             "time_ns": t, "cycles": c} for i, (t, c) in enumerate(zip(samples.time_ns, counts))]


def bench(algorithms: Sequence, operations: Sequence[str] | str | None = None, message_bytes=100, *,
          budget_s: float = 1.0, min_samples: int = 5, max_samples: int = 10_000,
          target_rel_ci: float | None = TARGET_REL_CI, study: str = "", save: bool = True,
          folder: Path | str | None = None, progress: bool = True, seed: int | None = 0,
          params: dict | None = None, run_id: str | None = None) -> Run:
    """Measure every operation of every algorithm; returns (and by default saves) the :class:`Run`.

    `algorithms`: names ("ML-DSA-44", "ML-DSA-44@cryptography"), (name, backend) or adapters, at least one
    (a single name may be given as a str); one given twice is measured once (with a warning).
    `study` (and `run_id`) become part of file names: letters, digits, '.', '_' and '-' only
    (:func:`pqlab.inputs.file_label`).
    `operations`: None or "all" (each algorithm's own), or names every algorithm must have
    (:func:`pqlab.inputs.operations`: a typo gets close matches, an algorithm lacking one is named).
    `message_bytes`: one size or a list (whole numbers >= 0); used by sign/verify/encrypt/decrypt only.
    `budget_s`: most sampling time per operation and size (warm-up and checks come on top), finite and > 0.
    `target_rel_ci`: sampling stops earlier once the median is known to this precision (a fraction,
    :func:`pqlab.timing.measure`; None: the whole budget).
    `min_samples`, `max_samples`: 1 <= min <= max.  `run_id`: new in `folder`.
    Bad input, or a counter forced with PQLAB_COUNTER that is unavailable here, raises
    :class:`pqlab.errors.BadInput` before anything is measured.
    """
    cycles.counter()
    budget_s = inputs.positive_number(budget_s, "budget_s")
    target_rel_ci = inputs.precision_target(target_rel_ci)
    min_samples, max_samples = inputs.sample_bounds(min_samples, max_samples)
    sizes = inputs.message_sizes(message_bytes)
    study = inputs.file_label(study, "study", empty=True)
    run_id = inputs.file_label(run_id, "run id") if run_id is not None else None
    algos = inputs.unique(resolve(inputs.names(algorithms, "algorithm")))
    plan = inputs.plan(algos, operations, sizes)
    wanted = operations if operations is None or isinstance(operations, str) else list(operations)
    run_params = {"algorithms": [f"{a.name}@{a.backend}" for a in algos], "operations": wanted or [],
                  "message_bytes": sizes, "budget_s": budget_s, "min_samples": min_samples,
                  "max_samples": max_samples, "target_rel_ci": target_rel_ci, "seed": seed, **(params or {})}
    planned = [f"{a.name}@{a.backend} {op}" + ("" if size is None else f" {size}") for a, op, size in plan]
    with RunRecorder(study, run_params, folder=folder, run_id=run_id, save=save, meta={"plan": planned}) as rec:
        # The harness itself: a do-nothing call through the same path (and fed a fresh message per call,
        # as sign and encrypt are: what that feeding adds).
        noop = Noop()
        trial = noop.trial()
        overhead = measure(trial.run, trial.check, budget_s=min(0.2, budget_s), min_samples=min_samples,
                           target_rel_ci=target_rel_ci)
        overhead_ns = summarize(overhead.time_ns)["median"]
        rec.add(measurements=[measurement_row(rec, noop, "noop", None, overhead)])
        rec.meta["harness_overhead_ns"] = overhead_ns
        fed_ns = overhead_ns
        if any(op in FED_OPERATIONS for _, op, _ in plan):
            fed = noop.trial("noop", random_message(100, seed), fed=True)
            fed_ns = summarize(measure(fed.run, fed.check, budget_s=min(0.2, budget_s), min_samples=min_samples,
                                       fresh=fed.fresh, target_rel_ci=target_rel_ci).time_ns)["median"]
            rec.meta.update(harness_fed_ns=fed_ns, harness_feed_ns=fed_ns - overhead_ns)
        bar = _progress(len(plan), progress, study or "pqlab bench")
        try:
            for algo, steps in itertools.groupby(plan, key=lambda step: step[0]):
                keys, signed = _keys(algo), {}
                for _, op, size in steps:
                    if bar is not None:
                        bar.set_postfix_str(f"{algo.name} {op}" + (f" {size} B" if size is not None else ""))
                    rows, sample_rows, made = _measure_one(
                        rec, algo, op, size, seed, fed_ns if op in FED_OPERATIONS else overhead_ns, budget_s,
                        min_samples, max_samples, target_rel_ci, keys, signed.get(size) if op == "verify" else None)
                    rec.add(measurements=rows, samples=sample_rows)
                    if made is not None:
                        signed[size] = made
                    rec.checkpoint()
                    if bar is not None:
                        bar.update(1)
                rec.add(sizes=[_sizes_row(algo, random_message(sizes[0], seed), keys, signed.get(sizes[0]))])
                rec.checkpoint()
        finally:
            if bar is not None:
                bar.close()
    return rec.run


def _keys(algo: Algorithm):
    """The keys every operation and size of `algo` is measured with (one key pair per algorithm and run, as
    SUPERCOP does); None where making them fails: each operation then tries itself and its failure is a row."""
    try:
        return algo.generate()
    except Exception:  # noqa: BLE001 - recorded per operation
        return None


def _measure_one(rec: RunRecorder, algo: Algorithm, op: str, size, seed, overhead_ns, budget_s: float,
                 min_samples: int, max_samples: int, target_rel_ci: float | None,
                 keys=None, signed: tuple[bytes, bytes] | None = None) -> tuple[list[dict], list[dict], tuple | None]:
    """(measurement rows, sample rows, what sign made) of one operation at one size, with `keys` (None: new
    ones); a failure is a row.  What sign made is the (message, signature) of its last checked call, which
    verify at the same size is then given as `signed` instead of signing again (None for other operations)."""
    message = random_message(size or 0, seed)
    try:
        t = algo.trial(op, message, keys, signed=signed)
        s = measure(t.run, t.check, budget_s=budget_s, min_samples=min_samples, max_samples=max_samples, fresh=t.fresh,
                    target_rel_ci=target_rel_ci)
    except VerificationError as exc:
        return [measurement_row(rec, algo, op, size, None, overhead_ns, f"verification: {exc}")], [], None
    except Exception as exc:  # noqa: BLE001 - a failing algorithm must not end the run
        return [measurement_row(rec, algo, op, size, None, overhead_ns, f"{type(exc).__name__}: {exc}")], [], None
    made = None
    if op == "sign" and keys is not None:
        made = (s.last[1] if len(s.last) == 2 else message, s.last[0])
    return [measurement_row(rec, algo, op, size, s, overhead_ns)], sample_rows(rec.run_id, algo, op, size, s), made


def _sizes_row(algo: Algorithm, message: bytes, keys=None, signed: tuple[bytes, bytes] | None = None) -> dict:
    """`algo`'s sizes row, from `signed` (a (message, signature) of `message`'s length made with `keys`) where
    given; a failure is a row with an error."""
    try:
        return algo.sizes(message, keys, signature=None if signed is None else signed[1])
    except Exception as exc:  # noqa: BLE001
        return {"algorithm": algo.name, "backend": algo.backend, "family": algo.family, "error": str(exc)}


def bench_in_worker(algorithms: Sequence[str], *, variant: str = "default", operations=None, message_bytes=100,
                    budget_s: float = 1.0, study: str = "", timeout_s: float | None = None,
                    folder: Path | str | None = None, min_samples: int = 5, env: dict | None = None,
                    target_rel_ci: float | None = TARGET_REL_CI) -> Run:
    """Run :func:`bench` in a fresh process that loads the `variant` build of liboqs.

    liboqs-python loads one liboqs per process, so comparing builds needs one process each.
    The worker writes its run to `folder` (default data/results) and this returns it.  `env`: more
    environment variables for the worker (e.g. PQLAB_MACHINE_ID).
    """
    from .liboqs_loader import variant_environment

    cycles.counter()  # a forced counter that is unavailable here stops before the worker starts
    budget_s = inputs.positive_number(budget_s, "budget_s")
    min_samples = inputs.count(min_samples, "min_samples")
    study = inputs.file_label(study, "study", empty=True)
    env = {**variant_environment(variant), **(env or {})}
    run_id = new_run_id(f"{study}-{variant}" if study else variant)
    cmd = [sys.executable, "-m", "pqlab", "bench", *algorithms, "--budget", str(budget_s), "--run-id", run_id,
           "--study", study, "--no-progress", "--min-samples", str(min_samples),
           "--target-rel-ci", str(target_rel_ci or 0)]
    if operations:
        cmd += ["--operations", *operations]
    for size in inputs.message_sizes(message_bytes):
        cmd += ["--message-bytes", str(size)]
    if folder:
        cmd += ["--folder", str(folder)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout_s)
    if proc.returncode != 0:
        raise RuntimeError(f"the {variant} worker failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    return load_run(Path(folder or paths.RESULTS) / run_id)
