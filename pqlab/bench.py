"""Run measurements: algorithms x operations x message sizes -> a saved, tidy :class:`Run`.

    run = bench(["ML-DSA-44", "Ed25519", "RSA-2048-PSS"], message_bytes=[100], budget_s=0.5,
                study="01_aes_rsa_sphincs")

Each operation is measured with :func:`pqlab.timing.measure` (outputs checked outside the
timer), summarised with :func:`pqlab.stats.summarize`, and written to ``data/results/``
after every algorithm, so an interrupted or failing run keeps what it measured.  A failure
(an exception, a wrong output) becomes a row with ``verified=False`` and the reason in
``flags``; the run goes on.  A do-nothing call through the same path is measured first and
its cost stored with every row (``overhead_ns``).
"""
from __future__ import annotations

import datetime as dt
import subprocess
import sys
import uuid
from collections.abc import Iterable, Sequence
from pathlib import Path

from . import machine
from .algorithms import Algorithm, Noop, VerificationError, random_message, resolve
from .results import Run, load_run
from .schema import SCHEMA_VERSION
from .stats import summarize
from .timing import measure

#: Operations whose cost depends on the message; the others are measured once per algorithm.
MESSAGE_OPERATIONS = {"sign", "verify", "encrypt", "decrypt"}


def new_run_id(study: str = "") -> str:
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    return f"{stamp}-{study or 'bench'}-{uuid.uuid4().hex[:6]}"


def _progress(total: int, enabled: bool, desc: str):
    if not enabled:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit="op", leave=True, dynamic_ncols=True)


def measurement_row(algo: Algorithm, operation: str, message_bytes, samples, base: dict, overhead_ns=None,
                    error: str = "") -> dict:
    """One tidy row from raw samples (or from a failure)."""
    row = dict(base, backend=algo.backend, implementation=algo.implementation, library_version=algo.library_version,
               variant=algo.extra.get("variant", ""), algorithm=algo.name, family=algo.family,
               nist_level=algo.nist_level, operation=operation, message_bytes=message_bytes, overhead_ns=overhead_ns)
    if error:
        return dict(row, samples=0, verified=False, flags=f"failed:{error}")
    t = summarize(samples.time_ns)
    flags = list(t["flags"]) + list(samples.flags)
    row.update(samples=t["n"], loops=samples.loops, time_ns_median=t["median"], time_ns_q1=t["q1"],
               time_ns_q3=t["q3"], time_ns_ci_low=t["ci_low"], time_ns_ci_high=t["ci_high"], time_ns_min=t["min"],
               time_ns_cv=t["cv"], cycles_source=samples.cycles_source, verified=True)
    if samples.cycles is not None:
        c = summarize(samples.cycles)
        row.update(cycles_median=c["median"], cycles_q1=c["q1"], cycles_q3=c["q3"])
    row["flags"] = ";".join(flags)
    return row


def sample_rows(run_id: str, algo: Algorithm, operation: str, message_bytes, samples) -> list[dict]:
    cycles = samples.cycles if samples.cycles is not None else [None] * samples.n
    variant = algo.extra.get("variant", "")
    return [{"run_id": run_id, "backend": algo.backend, "variant": variant, "algorithm": algo.name,
             "operation": operation, "message_bytes": message_bytes, "sample": i, "loops": samples.loops,
             "time_ns": t, "cycles": c} for i, (t, c) in enumerate(zip(samples.time_ns, cycles))]


def _as_list(x) -> list:
    if x is None:
        return [None]
    return list(x) if isinstance(x, Iterable) and not isinstance(x, (str, bytes)) else [x]


def bench(algorithms: Sequence, operations: Sequence[str] | None = None, message_bytes=100, *,
          budget_s: float = 1.0, min_samples: int = 5, max_samples: int = 10_000, study: str = "",
          save: bool = True, folder: Path | str | None = None, progress: bool = True, seed: int | None = 0,
          params: dict | None = None, run_id: str | None = None) -> Run:
    """Measure every operation of every algorithm; returns (and by default saves) the :class:`Run`.

    `algorithms`: names ("ML-DSA-44", "ML-DSA-44@cryptography"), (name, backend) or adapters.
    `operations`: a subset of each algorithm's operations (default: all it has).
    `message_bytes`: one size or a list; used by sign/verify/encrypt/decrypt only.
    `budget_s`: sampling time per operation and size (warm-up and checks come on top).
    """
    algos = resolve(algorithms)
    sizes = _as_list(message_bytes)
    run_id = run_id or new_run_id(study)
    started = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    run_params = {"algorithms": [f"{a.name}@{a.backend}" for a in algos], "operations": list(operations or []),
                  "message_bytes": sizes, "budget_s": budget_s, "min_samples": min_samples,
                  "max_samples": max_samples, "seed": seed, **(params or {})}
    meta = machine.collect(run_params)
    meta.update(study=study, started_at=started, status="running", schema_version=SCHEMA_VERSION)
    base = {"schema_version": SCHEMA_VERSION, "run_id": run_id, "started_at": started,
            "machine_id": meta["machine_id"], "study": study}
    measurements, size_rows, samples_rows = [], [], []
    run = Run.from_rows(run_id, measurements, size_rows, samples_rows, meta)

    def checkpoint(status: str) -> None:
        nonlocal run
        meta["status"] = status
        run = Run.from_rows(run_id, measurements, size_rows, samples_rows, meta)
        if save:
            run.save(folder)

    # The harness itself: a do-nothing call through the same path.
    noop = Noop()
    trial = noop.trial()
    overhead = measure(trial.run, trial.check, budget_s=min(0.2, budget_s), min_samples=min_samples)
    overhead_ns = summarize(overhead.time_ns)["median"]
    measurements.append(measurement_row(noop, "noop", None, overhead, base))
    meta["harness_overhead_ns"] = overhead_ns

    plan = []
    for algo in algos:
        ops = [op for op in (operations or algo.operations) if op in algo.operations]
        for op in ops:
            for size in (sizes if op in MESSAGE_OPERATIONS else [None]):
                plan.append((algo, op, size))
    bar = _progress(len(plan), progress, study or "pqlab bench")
    try:
        current = None
        for algo, op, size in plan:
            if algo is not current:
                if current is not None:
                    checkpoint("running")
                current = algo
                size_rows.append(_sizes_row(algo, run_id, random_message(sizes[0] or 0, seed)))
            if bar is not None:
                bar.set_postfix_str(f"{algo.name} {op}" + (f" {size} B" if size is not None else ""))
            message = random_message(size or 0, seed)
            try:
                t = algo.trial(op, message)
                s = measure(t.run, t.check, budget_s=budget_s, min_samples=min_samples, max_samples=max_samples)
            except VerificationError as exc:
                measurements.append(measurement_row(algo, op, size, None, base, overhead_ns, f"verification:{exc}"))
            except Exception as exc:  # noqa: BLE001 - a failing algorithm must not end the run
                measurements.append(measurement_row(algo, op, size, None, base, overhead_ns,
                                                    f"{type(exc).__name__}:{exc}"))
            else:
                measurements.append(measurement_row(algo, op, size, s, base, overhead_ns))
                samples_rows.extend(sample_rows(run_id, algo, op, size, s))
            if bar is not None:
                bar.update(1)
    except KeyboardInterrupt:
        checkpoint("interrupted")
        raise
    finally:
        if bar is not None:
            bar.close()
    checkpoint("complete")
    return run


def _sizes_row(algo: Algorithm, run_id: str, message: bytes) -> dict:
    try:
        row = algo.sizes(message)
    except Exception as exc:  # noqa: BLE001
        row = {"algorithm": algo.name, "backend": algo.backend, "family": algo.family, "error": str(exc)}
    return dict(row, schema_version=SCHEMA_VERSION, run_id=run_id)


def bench_in_worker(algorithms: Sequence[str], *, variant: str = "default", operations=None, message_bytes=100,
                    budget_s: float = 1.0, study: str = "", timeout_s: float | None = None,
                    folder: Path | str | None = None, min_samples: int = 5) -> Run:
    """Run :func:`bench` in a fresh process that loads the `variant` build of liboqs.

    liboqs-python loads one liboqs per process, so comparing builds needs one process each.
    The worker writes its run to `folder` (default data/results) and this returns it.
    """
    from .liboqs import variant_environment

    env = variant_environment(variant)
    run_id = new_run_id(f"{study}-{variant}" if study else variant)
    cmd = [sys.executable, "-m", "pqlab", "bench", *algorithms, "--budget", str(budget_s), "--run-id", run_id,
           "--study", study, "--no-progress", "--min-samples", str(min_samples)]
    if operations:
        cmd += ["--operations", *operations]
    for size in _as_list(message_bytes):
        if size is not None:
            cmd += ["--message-bytes", str(size)]
    if folder:
        cmd += ["--folder", str(folder)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout_s)
    if proc.returncode != 0:
        raise RuntimeError(f"the {variant} worker failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    return load_run(Path(folder or _results()) / run_id)


def _results() -> Path:
    from . import paths

    return paths.RESULTS
