"""Run measurements: algorithms x operations x message sizes -> a saved, tidy :class:`Run`.

    run = bench(["ML-DSA-44", "Ed25519", "RSA-2048-PSS"], message_bytes=[100], budget_s=0.5,
                study="01_aes_rsa_sphincs")

Every input is checked before anything is measured (:mod:`pqlab.core.inputs`: known operations that
every algorithm has, budgets, sample counts, rounds, message sizes; an algorithm given twice is measured
once).  The measurement is made of rounds (:mod:`pqlab.runners.rounds`): each round is a fresh worker process
that measures every operation once, in an order shuffled per round, with :func:`pqlab.measure.timing.measure`
(outputs checked outside the timer) and records the machine's noise and the reference loops
(:mod:`pqlab.measure.noise`).  A row's estimate and 95 % interval are over rounds
(:func:`pqlab.measure.stats.round_interval`); its quartiles and spread are of all its samples
(:func:`pqlab.measure.stats.summarize`).  Rows are recorded through :class:`pqlab.store.recorder.RunRecorder`,
which saves the plan before the first measurement and checkpoints the run after every round, so an interrupted
or failing run keeps what it measured.  A failure (an exception, a wrong output) becomes a row with
``verified=False`` and a ``failed`` flag; the run goes on.  A do-nothing call through the same path is
measured in every round and its cost stored with every row (``overhead_ns``); sign and encrypt get a fresh
message every call (:class:`pqlab.backends.algorithms.Trial`), and a no-op fed the same way says what that
adds (``meta["harness_feed_ns"]``, :func:`describe_harness`).  In a round every operation and size of an
algorithm uses one key pair; verify verifies the signature that sign's last checked call made at the same size
in that round, and the algorithm's sizes row is read from the first round's, so a slow signer (a SPHINCS+
s-set signs for about a second) is not called again for either.
"""
from __future__ import annotations

import math
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from pqlab.backends.algorithms import announce_defaults, liboqs_name_notes, resolve
from pqlab.backends.base import Algorithm, Noop
from pqlab.checks import conformance
from pqlab.core import builds, flags, inputs, paths
from pqlab.core.errors import BadInput, LiboqsNotFound, UnknownName, shell_command
from pqlab.core.formatting import fmt_time_ns
from pqlab.core.schema import KIND_OPERATIONS
from pqlab.core.vocabulary import c_loop
from pqlab.liboqs.loader import build_environment, given_builds, liboqs_info
from pqlab.measure import cycles, noise
from pqlab.measure.stats import (
    MIN_ROUNDS,
    interval_over_rounds,
    log_center_se,
    reference_spread,
    relative_half_width,
    summarize,
    t_quantile,
)
from pqlab.measure.timing import TARGET_REL_CI
from pqlab.runners.rounds import (
    BUDGET_FACTOR,
    MAX_ROUNDS_FACTOR,
    NOOP,
    NOOP_FED,
    NOOP_LEAN,
    ROUNDS,
    Item,
    later_warmup,
    registered,
    run_round,
    run_round_in_worker,
)
from pqlab.store.recorder import RunRecorder, new_run_id, summary_columns
from pqlab.store.results import Run, load_run

#: _rounds_needed's answer where the machine's drift alone exceeds the precision target.
DRIFT_BOUND = -1
#: Where rounds run (bench's `isolation`).
ISOLATIONS = ("process", "in-process")
#: Operations that get a fresh message every call (Algorithm.trial); their overhead_ns is the fed no-op's.
FED_OPERATIONS = ("sign", "encrypt")
#: The message size measured where none is given (bench's `message_bytes`, the CLI's --message-bytes).
MESSAGE_BYTES = 100


def describe_harness(run: Run) -> str:
    """What the harness costs per call, from the run's no-op measurements (one sentence, Markdown)."""

    text = ("Harness cost per call (a do-nothing call through it): "
            f"{fmt_time_ns(run.meta['harness_overhead_ns'])}")
    if "harness_feed_ns" in run.meta:
        feed = run.meta["harness_feed_ns"]
        text += (f"; fed a fresh message every call, as sign and encrypt are so that a cached result cannot "
                 f"pass: {fmt_time_ns(run.meta['harness_fed_ns'])} ({fmt_time_ns(abs(feed))} "
                 f"{'more' if feed >= 0 else 'less'})")
    if "harness_lean_ns" in run.meta:
        text += (f"; liboqs rows run a sample's calls in pqlab's C loop, which costs "
                 f"{fmt_time_ns(run.meta['harness_lean_ns'])} per call")
    return text + "."


def _progress(total: int, enabled: bool, desc: str):
    if not enabled:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit="op", leave=True, dynamic_ncols=True)


def measurement_row(rec: RunRecorder, algo: Algorithm, operation: str, message_bytes, samples,
                    overhead_ns=None, error: str = "") -> dict:
    """One tidy row from raw samples of one process (a runner that cannot do rounds), or from a failure: the
    median and quartiles of the samples, and no interval (an interval needs rounds: :func:`rounds_row`)."""
    row = rec.row(algo, operation=operation, message_bytes=message_bytes, overhead_ns=overhead_ns)
    if error:
        return dict(row, samples=0, verified=False, flags=flags.make("failed", error))
    t = summarize(samples.time_ns)
    row.update(samples=t["n"], loops=samples.loops, cycles_source=samples.cycles_source, verified=True,
               target_rel_ci=samples.target_rel_ci, rounds=1)
    row.update({**summary_columns(t), "time_ns_ci_low": np.nan, "time_ns_ci_high": np.nan,
                "time_ns_rel_ci": np.nan})
    if samples.cycles is not None:
        row.update(summary_columns(summarize(samples.cycles), "cycles"))
    row["flags"] = flags.join([*t["flags"], *samples.flags, flags.make("no-rounds", "one process")])
    return row


def rounds_row(rec: RunRecorder, algo: Algorithm, operation: str, message_bytes, results: list, overhead_ns,
               target_rel_ci, extra_flags=()) -> dict:
    """One tidy row from an item's rounds (``[(round, ItemRound fields)]``): the estimate and its 95 %
    interval over rounds (:func:`pqlab.measure.stats.round_interval`), the quartiles, spread and cycles of all
    samples pooled."""
    row = rec.row(algo, operation=operation, message_bytes=message_bytes, overhead_ns=overhead_ns)
    failed = next((r["error"] for _, r in results if r.get("error")), "")
    if failed:
        return dict(row, samples=0, verified=False, rounds=len(results), flags=flags.make("failed", failed))
    times = np.concatenate([np.asarray(r["time_ns"], float) for _, r in results])
    value, low, high, k = _over_rounds(rec, results)
    t = summarize(times)
    row.update(samples=t["n"], loops=results[0][1]["loops"], cycles_source=results[0][1]["cycles_source"],
               verified=True, target_rel_ci=target_rel_ci, rounds=k)
    row.update({**summary_columns(t), "time_ns_median": value, "time_ns_ci_low": low, "time_ns_ci_high": high,
                "time_ns_rel_ci": relative_half_width(value, low, high)})
    counts = [(k, r["cycles"]) for k, r in results if r.get("cycles") is not None]
    if counts:
        cyc = [{"time_ns": [np.nan if c is None else c for c in cs]} for _, cs in counts]
        row.update(summary_columns(summarize(np.concatenate([x["time_ns"] for x in cyc]).astype(float)),
                                   "cycles"))
        # the same estimator as the time's, so that cycles / time is the counter's rate in every row
        row["cycles_median"] = _over_rounds(rec, list(zip([k for k, _ in counts], cyc)))[0]
    marks = [*t["flags"], *(f for _, r in results for f in r["flags"]), *extra_flags]
    if k < MIN_ROUNDS:
        marks.append(flags.make("few-rounds", f"{k} of the {MIN_ROUNDS} an interval needs"))
    row["flags"] = flags.join([m for m in marks if flags.parse(m)[0][0] != "few-samples"])
    return row


def sample_rows(run_id: str, algo: Algorithm, operation: str, message_bytes, samples,
                round_index=None) -> list[dict]:
    counts = samples.cycles if samples.cycles is not None else [None] * samples.n
    build = algo.extra.get("build", "")
    return [{"run_id": run_id, "backend": algo.backend, "build": build, "algorithm": algo.name,
             "operation": operation, "message_bytes": message_bytes, "round": round_index, "sample": i,
             "loops": samples.loops, "time_ns": t, "cycles": c}
            for i, (t, c) in enumerate(zip(samples.time_ns, counts))]


def bench(algorithms: Sequence, operations: Sequence[str] | str | None = None, message_bytes=MESSAGE_BYTES, *,
          budget_s: float = 1.0, min_samples: int = 5, max_samples: int = 10_000,
          target_rel_ci: float | None = TARGET_REL_CI, rounds: int = ROUNDS, max_rounds: int | None = None,
          quiet_only: bool = False, isolation: str = "process", study: str = "", save: bool = True,
          folder: Path | str | None = None,
          progress: bool = True, seed: int | None = 0, params: dict | None = None, run_id: str | None = None,
          allow_nonconforming: bool = False) -> Run:
    """Measure every operation of every algorithm in rounds; returns (and by default saves) the :class:`Run`.

    `algorithms`: names ("ML-DSA-44", "ML-DSA-44@cryptography"), (name, backend) or adapters, at least one
    (a single name may be given as a str); one given twice is measured once (with a warning).  A name may ask
    for a liboqs build, ``ML-DSA-44@liboqs-0.12.0`` (:mod:`pqlab.core.builds`); all that do must ask for the
    same one (one process loads one liboqs), and where it is not the loaded one the whole run is made by a
    worker process that loads it (:func:`bench_in_worker`), after every name is checked against that release's
    name list.  A name without a backend that several backends implement runs on the preferred one, and bench
    says which, once per name.  `study` (and `run_id`) become part of file names: letters, digits, '.', '_'
    and '-' only (:func:`pqlab.core.inputs.file_label`).
    `operations`: None or "all" (each algorithm's own), or names every algorithm must have
    (:func:`pqlab.core.inputs.operations`: a typo gets close matches, an algorithm lacking one is named).
    `message_bytes`: one size or a list (whole numbers >= 0); used by sign/verify/encrypt/decrypt only.
    `rounds`, `max_rounds`: the first stage's rounds (at least :data:`pqlab.measure.stats.MIN_ROUNDS`) and the
    most an operation gets (default three times `rounds`) (:mod:`pqlab.runners.rounds`: each round a fresh
    worker process, the operations interleaved in a random order; the interval is over rounds).  `budget_s`:
    most sampling time per operation and size over `max_rounds` rounds (each round samples for
    ``budget_s / max_rounds``; warm-up, keys and checks come on top), finite and > 0.  `target_rel_ci`: more
    rounds than the first stage's are made for an operation until its interval is expected to be within this
    fraction (Stein's rule), at most `max_rounds` (None: `max_rounds`), and only while its time so far stays
    within ``BUDGET_FACTOR * budget_s`` (:mod:`pqlab.runners.rounds`).  `min_samples`: at least this many
    samples per operation over the first stage (``ceil(min_samples / rounds)`` per round); `max_samples`: at
    most this many per round.  `quiet_only`: refuse to start when the machine is busy
    (:func:`pqlab.measure.noise.quiet_now`).  `isolation`: "process" (each round a fresh worker process;
    adapters that are not in the registry cannot be rebuilt there and run in this process, flagged
    ``rounds-in-process``) or "in-process" (every round in this process: to show what fresh processes change,
    e.g. with ``pqlab calibrate
    --isolation in-process``).  `run_id`: new in `folder`.
    Every algorithm's implementation is checked against its known answers and invalid inputs first
    (:func:`pqlab.checks.conformance.check`, cached per build); one that fails them is refused before anything
    is measured unless `allow_nonconforming` (the run then records that it was asked), and every record goes
    into the run's ``meta["conformance"]``.
    Bad input, or a counter forced with PQLAB_COUNTER that is unavailable here, raises
    :class:`pqlab.core.errors.BadInput` before anything is measured.
    """
    cycles.counter()
    budget_s = inputs.positive_number(budget_s, "budget_s")
    target_rel_ci = inputs.precision_target(target_rel_ci)
    min_samples, max_samples = inputs.sample_bounds(min_samples, max_samples)
    rounds, max_rounds = inputs.round_counts(rounds, max_rounds, MAX_ROUNDS_FACTOR)
    isolation = inputs.choice(isolation, "isolation", ISOLATIONS)
    sizes = inputs.message_sizes(message_bytes)
    study = inputs.file_label(study, "study", empty=True)
    run_id = inputs.file_label(run_id, "run id") if run_id is not None else None
    algorithms, build = _asked_build(inputs.names(algorithms, "algorithm"), operations)
    if build is not None:
        isolation_args = {"isolation": isolation} if isolation != "process" else {}
        return _bench_elsewhere(algorithms, build, save, operations=operations, message_bytes=sizes,
                                budget_s=budget_s, study=study, folder=folder, min_samples=min_samples,
                                max_samples=max_samples, target_rel_ci=target_rel_ci, rounds=rounds,
                                max_rounds=max_rounds, quiet_only=quiet_only, run_id=run_id,
                                progress=progress, allow_nonconforming=allow_nonconforming, **isolation_args)
    algos = inputs.unique(resolve(algorithms))
    plan = inputs.plan(algos, operations, sizes)
    records = conformance.for_run(algos, allow_nonconforming)
    announce_defaults(algorithms)  # after every check: bad input is refused alone
    if quiet_only:
        quiet, why, _ = noise.quiet_now()
        if not quiet:
            raise BadInput(f"the machine is {why}: wait until it is quiet (pqlab.measure.noise.quiet_now() "
                           f"says when; shell: {shell_command('pqlab machine')}), "
                           "or measure anyway without --quiet-only (API: quiet_only=False)")
    in_process = isolation == "in-process" or not all(registered(a) for a in algos)
    wanted = operations if operations is None or isinstance(operations, str) else list(operations)
    run_params = {"algorithms": [f"{a.name}@{a.backend}" for a in algos], "operations": wanted or [],
                  "message_bytes": sizes, "budget_s": budget_s, "min_samples": min_samples,
                  "max_samples": max_samples, "target_rel_ci": target_rel_ci, "rounds": rounds,
                  "max_rounds": max_rounds, "seed": seed, **(params or {})}
    planned = [f"{a.name}@{a.backend} {op}" + ("" if size is None else f" {size}") for a, op, size in plan]
    index = {id(a): i for i, a in enumerate(algos)}
    items = [Item(-1, NOOP, None)]
    if any(op in FED_OPERATIONS for _, op, _ in plan):
        items.append(Item(-1, NOOP_FED, None))
    if any(c_loop(a.backend) for a, _, _ in plan):
        items.append(Item(-1, NOOP_LEAN, None))
    items += [Item(index[id(a)], op, size) for a, op, size in plan]
    job = {"seed": seed, "round_budget_s": budget_s / max_rounds,
           "min_samples": math.ceil(min_samples / rounds),
           "max_samples": max_samples, "loops": {}, "warmups": {}}
    meta = {"plan": planned, "conformance": records, "liboqs_names": liboqs_name_notes(algos),
            "allowed_nonconforming": sorted(k for k, r in records.items()
                                            if r["status"] == conformance.NONCONFORMING)}
    with RunRecorder(study, run_params, folder=folder, run_id=run_id, save=save, meta=meta) as rec:
        rec.meta.update(round_noise=[], isolation="in-process" if in_process else "process",
                        isolation_asked=isolation)
        results: dict[int, list] = {i: [] for i in range(len(items))}
        needed: dict[int, int] = {}
        allowed: dict[int, int] = {}
        bar = _progress(len(plan) * rounds, progress, study or "pqlab bench")
        try:
            for r in range(max_rounds):
                measured = _active(items, results, {i: min(n, allowed.get(i, n)) for i, n in needed.items()},
                                   r, rounds)
                if not measured and r >= rounds:
                    break
                active = [i for i, it in enumerate(items) if it.algo < 0] + measured
                record = _one_round(rec, algos, items, active, r, job, results, in_process, sizes[0], bar)
                rec.meta["round_noise"].append(record)
                if r == 0:
                    rec.meta["warmup_skipped"] = [_label(algos, items[i])
                                                  for i, w in job["warmups"].items() if w == 0]
                if r == rounds - 1:
                    drift = reference_spread(rec.meta["round_noise"])
                    needed = _rounds_needed(results, rounds, max_rounds, target_rel_ci, drift)
                    allowed = _rounds_allowed(items, results, rounds, BUDGET_FACTOR * budget_s)
                if bar is not None and r == rounds - 1:
                    bar.total = bar.n + sum(max(0, min(needed.get(i, 0), allowed.get(i, max_rounds)) - rounds)
                                            for i in range(len(items)) if items[i].algo >= 0)
                    bar.refresh()
                _set_rows(rec, algos, items, results, needed, allowed, max_rounds, target_rel_ci, in_process)
                rec.checkpoint()
            if bar is not None:  # ended well: the bar ends full (Stein's rule may ask fewer rounds)
                bar.total = bar.n
        finally:
            if bar is not None:
                bar.close()
    return rec.run


def _active(items: list[Item], results: dict, needed: dict, r: int, rounds: int) -> list[int]:
    """The items measured in round `r`: every one in the first stage, then those Stein's rule asks more rounds
    of, with the sign of any verify among them (verify verifies what sign made in the same round: nothing
    signs outside a measurement); none that failed."""
    ok = [i for i, it in enumerate(items) if it.algo >= 0 and not any(x.get("error") for _, x in results[i])]
    chosen = {i for i in ok if r < rounds or needed.get(i, 0) > r}
    index = {items[i].key(): i for i in ok}
    for i in list(chosen):
        it = items[i]
        sign = index.get((it.algo, "sign", it.size)) if it.operation == "verify" else None
        if sign is not None:
            chosen.add(sign)
    return sorted(chosen)


def _one_round(rec: RunRecorder, algos, items, active, r, job, results, in_process, sizes_at, bar) -> dict:
    """Round `r` of the `active` items: their samples recorded, the round's record (noise, reference loops,
    items lost to a worker that died) returned."""
    sub = [items[i] for i in active]
    seen: set[int] = set()
    record: dict = {}
    rows: list[dict] = []  # the round's samples, recorded at once (a typed frame per item cost seconds a run)

    def emit(x: dict) -> None:
        if "sizes" in x:
            rec.add(sizes=[x["sizes"]])
        elif "item" in x:
            i = active[x["item"]]
            x["item"] = i
            results[i].append((r, x))
            if i not in job["loops"] and x.get("loops"):
                job["loops"][i] = x["loops"]
                job["warmups"][i] = later_warmup(x, job["round_budget_s"])
            seen.add(i)
            it = items[i]
            algo = algos[it.algo] if it.algo >= 0 else Noop()
            if not x.get("error") and it.operation not in (NOOP_FED, NOOP_LEAN):
                counts = x["cycles"] or [None] * len(x["time_ns"])
                rows.extend({"run_id": rec.run_id, "backend": algo.backend,
                             "build": algo.extra.get("build", ""),
                             "algorithm": algo.name, "operation": it.operation if it.algo >= 0 else "noop",
                             "message_bytes": it.size, "round": r, "sample": j, "loops": x["loops"],
                             "time_ns": t, "cycles": counts[j]} for j, t in enumerate(x["time_ns"]))
        else:
            record.update(x)

    local = {k: v for k, v in job.items() if k not in ("loops", "warmups")}
    loops = {active.index(i): n for i, n in job["loops"].items() if i in active}
    warmups = {active.index(i): w for i, w in job["warmups"].items() if i in active}
    if in_process:
        run_round(algos, sub, r, loops=loops, warmups=warmups, sizes_at=sizes_at if r == 0 else None,
                  emit=emit, **local)
        died = ""
    else:
        died = run_round_in_worker(algos, sub, r, emit, loops=loops, warmups=warmups,
                                   sizes_at=sizes_at if r == 0 else None, **local)
    rec.add(samples=rows)
    if bar is not None:  # once a round: a notebook's progress widget is one message per refresh
        bar.set_postfix_str(f"round {r + 1}", refresh=False)
        bar.update(sum(1 for i in seen if items[i].algo >= 0))
    record = record or {"round": r}
    lost = [i for i in active if i not in seen]
    if lost or died:
        record["lost"] = [_label(algos, items[i]) for i in lost]
        record["error"] = died or "the round ended early"
    return record


def _label(algos, it: Item) -> str:
    name = "harness" if it.algo < 0 else f"{algos[it.algo].name}@{algos[it.algo].backend}"
    return f"{name} {it.operation}" + ("" if it.size is None else f" {it.size}")


def _round_medians(results: list) -> np.ndarray:
    return np.asarray([np.median(x["time_ns"]) for _, x in results if x.get("time_ns")], float)


def _rounds_needed(results: dict, rounds: int, max_rounds: int, target_rel_ci: float | None,
                   drift: float = 0.0) -> dict[int, int]:
    """Per item, the rounds Stein's two-stage rule asks for after the first `rounds` (pqlab.runners.rounds):
    the half-width ``t sqrt(s0²/N + drift²)`` within ``log(1 + target)``, so
    ``N = t² s0² / (d² - t² drift²)``, where s0 is the first stage's spread of log round values (the robust
    one of :func:`pqlab.measure.stats.log_center_se`: the estimate is their median) and `drift` the machine's
    (:func:`pqlab.measure.stats.machine_spread`).  Where the machine's drift alone exceeds the target no
    number of rounds reaches it: the first stage is kept (:data:`DRIFT_BOUND`, more rounds would only cost
    time)."""

    out = {}
    d = math.log1p(target_rel_ci) if target_rel_ci else 0.0
    for i, res in results.items():
        m = _round_medians(res)
        m = m[m > 0]
        if target_rel_ci is None:
            out[i] = max_rounds
        elif m.size >= 2:
            t = t_quantile(m.size - 1)
            room = d ** 2 - (t * drift) ** 2
            # the spread behind the interval's (pqlab.measure.stats)
            s0 = log_center_se(m)[1] * math.sqrt(m.size)
            out[i] = DRIFT_BOUND if room <= 0 else max(rounds, math.ceil((t * s0) ** 2 / room))
        else:
            out[i] = rounds
    return out


def _rounds_allowed(items: list[Item], results: dict, rounds: int, item_budget_s: float) -> dict[int, int]:
    """Per item, the most rounds its time budget pays for: `item_budget_s` over the median time a round of it
    took (warm-up, samples and output checks), never fewer than the first stage's `rounds`.  A verify's round
    costs its sign's too (a verify round signs afresh: :func:`_active`), so a slow sign cannot be pulled past
    its budget by a fast verify that wants more rounds."""
    def per_round(i: int) -> float:
        spent = [x.get("spent_s", 0.0) for _, x in results[i] if x.get("spent_s")]
        return float(np.median(spent)) if spent else 0.0

    index = {it.key(): i for i, it in enumerate(items)}
    out = {}
    for i in results:
        cost = per_round(i)
        it = items[i]
        sign = index.get((it.algo, "sign", it.size)) if it.operation == "verify" else None
        cost += per_round(sign) if sign is not None else 0.0
        if cost > 0:
            out[i] = max(rounds, math.floor(item_budget_s / cost))
    return out


def _set_rows(rec: RunRecorder, algos, items, results, needed, allowed, max_rounds, target_rel_ci,
              in_process) -> None:
    """Every item's row from its rounds so far (rows are rewritten after each round, so an interrupted run
    keeps rows for what it measured), the harness's cost in the metadata."""
    shifts = noise.reference_shifts([x for x in rec.meta["round_noise"] if "round" in x])
    busy = {x["round"] for x in rec.meta["round_noise"] if x.get("busy")}
    for x in rec.meta["round_noise"]:
        x["reference_shift"] = shifts.get(x["round"], "")

    def estimate(i):
        return _over_rounds(rec, results[i])[0] if results[i] else math.nan

    noops = {it.operation: i for i, it in enumerate(items) if it.algo < 0}
    overhead_ns = estimate(0)
    fed_ns = estimate(noops[NOOP_FED]) if NOOP_FED in noops else overhead_ns
    lean_ns = estimate(noops[NOOP_LEAN]) if NOOP_LEAN in noops else math.nan
    rec.meta["harness_overhead_ns"] = overhead_ns
    if fed_ns is not overhead_ns:
        rec.meta.update(harness_fed_ns=fed_ns, harness_feed_ns=fed_ns - overhead_ns)
    if NOOP_LEAN in noops:
        rec.meta["harness_lean_ns"] = lean_ns
    rows = []
    for i, it in enumerate(items):
        if it.operation in (NOOP_FED, NOOP_LEAN) or not results[i]:
            continue
        algo = algos[it.algo] if it.algo >= 0 else Noop()
        op = it.operation if it.algo >= 0 else "noop"
        mine = [r for r, _ in results[i]]
        extra = []
        if in_process:
            extra.append(flags.make("rounds-in-process",
                                    "asked for" if rec.meta.get("isolation_asked") == "in-process"
                                    else "an adapter not in the registry"))
        cap = min(max_rounds, allowed.get(i, max_rounds))
        # what ended the rounds: the detail of the flag a row gets when its interval is wider than the target
        if needed.get(i, 0) > cap and cap < max_rounds:
            stopped = f"budget ({cap} rounds of {needed[i]} wanted)"
        elif needed.get(i, 0) > max_rounds:
            stopped = f"max-rounds ({max_rounds})"
        elif needed.get(i) == DRIFT_BOUND:
            stopped = "machine drift (the reference loops moved more than the target allows)"
        else:
            stopped = f"the {len(mine)} rounds Stein's rule asked for"
        if busy & set(mine):
            extra.append(flags.make("busy", f"{len(busy & set(mine))} of {len(mine)} rounds"
                                            + noise.describe_busy([x for x in rec.meta["round_noise"]
                                                                   if x.get("round") in busy & set(mine)])))
        moved = [f"round {r} {shifts[r]}" for r in mine if r in shifts]
        if moved:
            extra.append(flags.make("reference-shift", ", ".join(moved)))
        cost = lean_ns if c_loop(algo.backend) else fed_ns if it.operation in FED_OPERATIONS else overhead_ns
        row = rounds_row(rec, algo, op, it.size, results[i], cost, target_rel_ci, extra)
        # the precision reached
        if target_rel_ci is not None and row.get("time_ns_rel_ci", math.nan) > target_rel_ci:
            row["flags"] = flags.add(row["flags"], "precision-not-reached", stopped)
        rows.append(row)
    rec.set_measurements(rows)


def _over_rounds(rec: RunRecorder, results: list) -> tuple[float, float, float, int]:
    """:func:`pqlab.measure.stats.round_interval` of an item's rounds (``[(round, {"time_ns": [...]})]``),
    from their medians directly (a run rewrites its rows after every round), with the machine's drift over
    those rounds."""
    medians = [(k, float(np.nanmedian(x["time_ns"]))) for k, x in results if len(x.get("time_ns", []))]
    medians = [(k, m) for k, m in medians if m > 0]
    records = {r["round"]: r for r in rec.meta.get("round_noise", [])}
    spread = reference_spread([records[k] for k, _ in medians if k in records])
    return interval_over_rounds(np.asarray([m for _, m in medians], float), spread)


def _asked_build(algorithms: list, operations=None) -> tuple[list, builds.Build | None]:
    """`algorithms` with the liboqs build their names ask for taken off (``X@liboqs-0.12.0`` -> ``X@liboqs``),
    and that build where it is not the one this process loaded (else None).  Names asking for two builds, an
    unknown build, a name the build's release does not list (:mod:`pqlab.liboqs.names`), or `operations` one
    of the algorithms lacks are refused here, before a worker starts."""
    out, asked, others = [], {}, []
    for a in algorithms:
        name, spec = builds.split(a) if isinstance(a, str) else (a, "")
        out.append(name)
        if spec:
            asked.setdefault(spec, []).append(name.rpartition("@")[0])
        else:
            others.append(a)
    if not asked:
        return out, None
    if len(asked) > 1:
        raise BadInput(f"these names ask for {len(asked)} liboqs builds ({', '.join(asked)}), and one run "
                       "measures one (a process loads one liboqs): bench each build on its own and compare "
                       f"the runs ({shell_command('pqlab compare RUN_A RUN_B')})")
    from pqlab.liboqs.names import RELEASES, missing_in, names

    spec, wanted = next(iter(asked.items()))
    build = builds.parse(spec, given_builds())
    for name in wanted if build.release in RELEASES else ():
        if name not in names(build.release):
            raise UnknownName(f"algorithm in liboqs {build.release}", name, names(build.release),
                              missing_in(name, build.release)
                              or f"{shell_command('pqlab builds')} lists the builds")
    if operations is not None and build.release in RELEASES:  # the release's kinds stand in for its adapters
        kind = {n: k for k in ("kem", "sig") for n in names(build.release, k)}
        there = [SimpleNamespace(name=n, backend=builds.LIBRARY, kind=kind[n],
                                 operations=KIND_OPERATIONS[kind[n]])
                 for n in wanted]
        inputs.operations([*resolve(others), *there], operations)
    try:
        loaded = liboqs_info()["build"]
    except LiboqsNotFound:  # no liboqs in this process: the worker loads the one asked for
        loaded = ""
    return out, (None if build.id == loaded else build)


def _bench_elsewhere(algorithms: list, build: builds.Build, save: bool, *, folder, **options) -> Run:
    """:func:`bench_in_worker` for :func:`bench`, into `folder`, or a folder removed afterwards when not
    `save`."""
    if save:
        return _worker(algorithms, build, folder=folder, **options)

    with tempfile.TemporaryDirectory(prefix="pqlab-worker-") as scratch:
        return _worker(algorithms, build, folder=scratch, **options)


def bench_in_worker(algorithms: Sequence[str], *, build="default", operations=None,
                    message_bytes=MESSAGE_BYTES, budget_s: float = 1.0, study: str = "",
                    timeout_s: float | None = None, folder: Path | str | None = None, min_samples: int = 5,
                    env: dict | None = None, target_rel_ci: float | None = TARGET_REL_CI,
                    rounds: int = ROUNDS, max_rounds: int | None = None, max_samples: int | None = None,
                    quiet_only: bool = False, isolation: str | None = None, run_id: str | None = None,
                    progress: bool = False, allow_nonconforming: bool = False) -> Run:
    """Run :func:`bench` in a fresh process that loads liboqs `build` (:mod:`pqlab.core.builds`: ``default``,
    ``generic``, ``liboqs-0.12.0``..., or a :class:`pqlab.core.builds.Build`), built first on first need.

    liboqs-python loads one liboqs per process, so comparing builds needs one process each.
    The worker writes its run to `folder` (default data/results) and this returns it.  `env`: more
    environment variables for the worker (e.g. PQLAB_MACHINE_ID).  `progress`: the worker's progress bar and
    messages go to this process's stderr (a terminal) instead of being kept for an error message.
    """

    cycles.counter()  # a forced counter that is unavailable here stops before the worker starts
    budget_s = inputs.positive_number(budget_s, "budget_s")
    min_samples = inputs.count(min_samples, "min_samples", 1, inputs.MAX_SAMPLES)
    rounds, max_rounds = inputs.round_counts(rounds, max_rounds, MAX_ROUNDS_FACTOR)
    study = inputs.file_label(study, "study", empty=True)
    return _worker(algorithms, builds.parse(build), operations=operations, message_bytes=message_bytes,
                   budget_s=budget_s, study=study, timeout_s=timeout_s, folder=folder,
                   min_samples=min_samples, env=env, target_rel_ci=target_rel_ci, rounds=rounds,
                   max_rounds=max_rounds, max_samples=max_samples, quiet_only=quiet_only, isolation=isolation,
                   run_id=run_id, progress=progress, allow_nonconforming=allow_nonconforming)


def _worker(algorithms: Sequence[str], build: builds.Build, *, operations, message_bytes, budget_s: float,
            study: str, folder, min_samples: int, target_rel_ci, rounds: int, max_rounds: int | None,
            max_samples: int | None, quiet_only: bool, run_id: str | None, progress: bool,
            allow_nonconforming: bool, timeout_s: float | None = None, env: dict | None = None,
            isolation: str | None = None) -> Run:
    """The worker of :func:`bench_in_worker` on inputs its caller checked (:func:`bench` checks each once,
    where it enters; the worker's own ``bench`` checks what comes over its command line, in its process)."""
    env = {**build_environment(build), **(env or {})}
    label = build.id.replace("+", "-")
    run_id = run_id or new_run_id(f"{study}-{label}" if study else label)
    cmd = [sys.executable, "-m", "pqlab", "bench", *algorithms, "--budget", str(budget_s), "--run-id", run_id,
           "--study", study, "--min-samples", str(min_samples), *([] if progress else ["--no-progress"]),
           "--target-rel-ci", str(target_rel_ci or 0), "--rounds", str(rounds), "--max-rounds",
           str(max_rounds)]
    cmd += ((["--max-samples", str(max_samples)] if max_samples else [])
            + (["--quiet-only"] if quiet_only else []))
    cmd += ["--isolation", isolation] if isolation else []
    cmd += ["--allow-nonconforming"] if allow_nonconforming else []
    if operations and operations != "all":
        cmd += ["--operations", *([operations] if isinstance(operations, str) else operations)]
    for size in inputs.message_sizes(message_bytes):
        cmd += ["--message-bytes", str(size)]
    if folder:
        cmd += ["--folder", str(folder)]
    if progress:
        print(f"{build.id}: measuring in a worker process that loads it", file=sys.stderr)
    proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=None if progress else subprocess.PIPE,
                          text=True, timeout=timeout_s)
    if proc.returncode != 0:
        said = "its message is above" if progress else proc.stderr[-3000:]
        raise RuntimeError(f"the {build.id} worker failed (exit {proc.returncode}):\n{said}")
    return load_run(Path(folder or paths.RESULTS) / run_id)
