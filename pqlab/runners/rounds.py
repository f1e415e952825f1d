"""Rounds: a measurement made of independent rounds, each in a fresh worker process, with everything being
compared interleaved in a random order inside each round.

Why.  Consecutive samples in one process are not independent: memory layout, the frequency a core runs at,
cache state and neighbours on a shared host change between processes and over minutes, not between samples.
Six separate runs of one `pqlab bench` showed a between-run spread 3.3 times the one its within-process
intervals implied; their 95 % intervals held the pooled median in 40 % of the rows.  So:

* **A round is a fresh process** (``python -m pqlab.runners.rounds``, :func:`run_round_in_worker`): it imports
  pqlab, loads the libraries and makes its keys anew, so what changes between processes (address-space layout,
  the heap's state, the library's lazily set-up tables, which core and neighbours it gets) is drawn again each
  round.  Adapters that are not registered by name (a test's doubles) cannot be rebuilt in another process:
  their rounds run in this process (:func:`run_round`), and their rows carry ``rounds-in-process``.
* **Inside a round every item (algorithm x operation x size, and the harness's no-op) runs once, in an order
  shuffled per round** (:func:`order`; sign is kept before the verify that uses its signature).  Drift within
  a round then hits every item alike, and a ratio of two items is paired by round.
* **Each round gives each item one value**, the median of its samples in that round; the estimate and its 95 %
  interval are a t-interval over rounds (:func:`pqlab.measure.stats.round_interval`), and a ratio of two items
  is one ratio per round, then the same interval (:func:`pqlab.measure.stats.ratio_ci`).
* **How many rounds (a sequential rule that keeps coverage).**  A first stage of `rounds` rounds (default
  :data:`ROUNDS`); then, per item, Stein's two-stage rule: the number of rounds needed for the target
  precision ``N = ceil((t_{n0-1} s0 / log(1 + target))^2)`` from the first stage's spread ``s0`` of log round
  values, at most `max_rounds`.  The number of rounds depends on the first stage's spread only, never on the
  estimate, so stopping does not make the interval optimistic (Stein, 1945) as stopping at the first good look
  does.  An item whose N exceeds `max_rounds` stops there with ``precision-not-reached:max-rounds``.  Extra
  rounds also stop at the item's time budget (:data:`BUDGET_FACTOR` times `budget_s`, its warm-ups and output
  checks included): an operation slower than a round's share of the budget keeps its first stage,
  ``precision-not-reached:budget``.
* **Warm-up.**  The first round warms every item up for ``timing.WARMUP_S`` (capped at half its round's
  sampling) and calibrates its loops from it.  Later rounds reuse the loops and warm up for
  :data:`LATER_WARMUP_S` (fast calls settle within about ten calls, measured on ML-KEM-768 encaps and
  ML-DSA-44 verify), and a call of at least :data:`COLD_CALL_S` none at all where the first round's cold call
  was within :data:`COLD_TOLERANCE` of its sample (:func:`later_warmup`): one warm-up of a 1.5 s SPHINCS+ sign
  costs as much as its sample and tells nothing the first round did not.  A run's ``meta["warmup_skipped"]``
  names those items.
* **The noise of every round is recorded** (:mod:`pqlab.measure.noise`: steal, other processes' CPU and on
  which CPUs, context switches, load, frequency, and the reference loops at the start and end of the round) in
  ``meta["round_noise"]``.
* **A worker protects its measurement** where the operating system lets it, without changing the machine
  (:func:`pqlab.measure.noise.protect`): it pins itself to the CPU that was least busy when it started and
  asks for a higher scheduler priority as far as the user's rights go; the round's record says what it got
  (``protection``).  Rounds made in the caller's own process (``isolation="in-process"``) leave it alone.

A worker that crashes or is killed loses the items of its round that it had not reported; every other round is
kept, and the row's ``rounds`` says how many it has (``meta["round_noise"][i]["lost"]`` names the items lost).
"""
from __future__ import annotations

import json
import math
import os
import random
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from pqlab.backends.algorithms import get, random_message, resolve
from pqlab.backends.base import Algorithm, Noop, VerificationError
from pqlab.backends.liboqs import lean_noop_trial
from pqlab.core.schema import convert_unit
from pqlab.measure import noise

#: First-stage rounds (bench's default), and the most rounds an item gets as a multiple of the first stage's
#: (bench's default max_rounds: 18 for 6).  Defaults, not limits: the most rounds anyone may ask for is
#: :data:`pqlab.core.inputs.MAX_ROUND_COUNT`.
ROUNDS, MAX_ROUNDS_FACTOR = 6, 3
#: An item's extra rounds stop where its time so far (warm-ups, samples, checks) would pass this times
#: budget_s: its sampling is budget_s over max_rounds rounds, and each round's warm-up at most half its
#: sampling.
BUDGET_FACTOR = 2
MAX_ROUNDS = ROUNDS * MAX_ROUNDS_FACTOR
#: Warm-up of later rounds (the first round's calibrated the loops), and the calls that skip it: at least
#: COLD_CALL_S long, with a first-round cold call at most COLD_TOLERANCE slower than the sample.
LATER_WARMUP_S, COLD_CALL_S, COLD_TOLERANCE = 0.01, 0.1, 0.01
#: The harness's no-op items (the second fed a fresh message every call, as sign and encrypt are; the third in
#: the lean liboqs path's C loop, pqlab.backends.liboqs).
NOOP, NOOP_FED, NOOP_LEAN = "noop", "noop-fed", "noop-lean"


@dataclass
class Item:
    """One thing measured in every round: an algorithm (index into the round's algorithms; -1: the harness),
    an operation and a message size (None where the operation takes none)."""

    algo: int
    operation: str
    size: int | None

    def key(self) -> tuple:
        return (self.algo, self.operation, self.size)


@dataclass
class ItemRound:
    """What one round measured of one item: raw per-call times (and cycles), or the error that stopped it."""

    item: int
    time_ns: list = field(default_factory=list)
    cycles: list | None = None
    loops: int = 1
    warmup_calls: int = 0
    cycles_source: str = "none"
    flags: list = field(default_factory=list)
    checked: int = 0
    error: str = ""
    spent_s: float = 0.0  # the item's wall time in this round: warm-up, samples and output checks
    first_call_ns: float | None = None  # the first warm-up call (cold), None without warm-up


def later_warmup(first: dict, round_budget_s: float) -> float:
    """Warm-up seconds of an item in rounds after the first, from `first` (its first round's
    :class:`ItemRound` fields): none for a call of at least :data:`COLD_CALL_S` whose cold call was within
    :data:`COLD_TOLERANCE` of its sample, else :data:`LATER_WARMUP_S` (capped at half the round's
    sampling)."""
    times, cold = first.get("time_ns") or [], first.get("first_call_ns")
    sample = sorted(times)[len(times) // 2] if times else 0.0
    if cold and sample >= convert_unit(COLD_CALL_S, "s", "ns") and cold <= sample * (1 + COLD_TOLERANCE):
        return 0.0
    return min(LATER_WARMUP_S, round_budget_s / 2)


def order(items: list[Item], round_index: int, seed: int | None) -> list[int]:
    """The indexes of `items` in this round's order: shuffled by (seed, round), then each verify moved behind
    the sign of its algorithm and size where that came later (verify uses the signature sign made)."""
    idx = list(range(len(items)))
    random.Random(f"{seed}-{round_index}").shuffle(idx)
    position = {items[i].key(): p for p, i in enumerate(idx)}
    for p, i in enumerate(idx):
        it = items[i]
        if it.operation == "verify":
            q = position.get((it.algo, "sign", it.size))
            if q is not None and q > p:
                idx[p], idx[q] = idx[q], idx[p]
                position[items[idx[p]].key()], position[items[idx[q]].key()] = p, q
    return idx


def _keys(algo: Algorithm):
    try:
        return algo.generate()
    except Exception:  # noqa: BLE001 - each operation then makes its own, and its failure is its row
        return None


def run_round(algos: list[Algorithm], items: list[Item], round_index: int, *, seed: int | None,
              round_budget_s: float, min_samples: int, max_samples: int, loops: dict[int, int],
              sizes_at: int | None, emit: Callable[[dict], None], warmups: dict[int, float] | None = None,
              protection: dict | None = None) -> None:
    """Measure every item once, in this round's order, in this process; `emit` gets one dict per item (an
    :class:`ItemRound`'s fields), one per sizes row (``{"sizes": ...}``, when `sizes_at` is a size) and last
    the round's own record (``{"round": ...}``: noise and reference loops).  `loops`: item -> loops fixed by
    an earlier round (the first round calibrates them); `warmups`: item -> its warm-up seconds in this round
    (:func:`later_warmup`; default the first round's); `protection`: what :func:`pqlab.measure.noise.protect`
    used in this (worker) process, kept in the round's record."""
    from pqlab.measure.timing import WARMUP_S, measure

    before, ref_start = noise.snapshot(), noise.reference_times()
    keys: dict[int, object] = {}
    signed: dict[tuple, tuple] = {}
    noop = Noop()
    warmup_s = min(WARMUP_S, round_budget_s / 2)
    # each round its own messages (reproducible from the seed): fresh messages never repeat across rounds
    # either, so an adapter that remembers (rounds in one process) cannot pass a cached result
    message_seed = None if seed is None else f"{seed}-round-{round_index}"
    for i in order(items, round_index, seed):
        it = items[i]
        message = random_message(it.size or 0, message_seed)
        result = ItemRound(i)
        try:
            if it.operation == NOOP:
                trial = noop.trial()
            elif it.operation == NOOP_FED:
                trial = noop.trial("noop", random_message(100, message_seed), fed=True)
            elif it.operation == NOOP_LEAN:

                trial = lean_noop_trial()
            else:
                algo = algos[it.algo]
                if it.algo not in keys:
                    keys[it.algo] = _keys(algo)
                k = keys[it.algo]
                mine = signed.get((it.algo, it.size)) if it.operation == "verify" and k is not None else None
                trial = algo.trial(it.operation, message, k, signed=mine)
            started = time.perf_counter()
            warm = (warmups or {}).get(i, warmup_s)
            s = measure(trial.run, trial.check, budget_s=round_budget_s, min_samples=min_samples,
                        max_samples=max_samples, warmup_s=warm, warm_up=warm > 0, loops=loops.get(i),
                        fresh=trial.fresh, repeat=trial.repeat, output=trial.output,
                        target_rel_ci=None)
            result.spent_s = time.perf_counter() - started
        except Exception as exc:  # noqa: BLE001 - a failing item is a row with its error, the round goes on

            result.error = (f"verification: {exc}" if isinstance(exc, VerificationError)
                            else f"{type(exc).__name__}: {exc}")
            emit(vars(result))
            continue
        if it.operation == "sign" and keys.get(it.algo) is not None:
            signed[(it.algo, it.size)] = (s.last[1] if len(s.last) == 2 else message, s.last[0])
        result.time_ns = [float(x) for x in s.time_ns]
        result.cycles = None if s.cycles is None else [None if math.isnan(c) else float(c) for c in s.cycles]
        result.loops, result.warmup_calls, result.cycles_source = s.loops, s.warmup_calls, s.cycles_source
        result.flags, result.checked = list(s.flags), s.checked
        result.first_call_ns = None if math.isnan(s.first_call_ns) else s.first_call_ns
        emit(vars(result))
    if sizes_at is not None:
        for a, algo in enumerate(algos):
            emit({"sizes": _sizes_row(algo, random_message(sizes_at, message_seed), keys.get(a),
                                      signed.get((a, sizes_at)))})
    record = noise.round_record(round_index, before, ref_start)
    emit({**record, "protection": protection} if protection is not None else record)


def _sizes_row(algo: Algorithm, message: bytes, keys=None, signed: tuple | None = None) -> dict:
    """`algo`'s sizes row, from `signed` (a (message, signature) of `message`'s length made with `keys`) where
    given; a failure is a row with an error."""
    if keys is None:
        keys = _keys(algo)
    try:
        return algo.sizes(message, keys, signature=None if signed is None else signed[1])
    except Exception as exc:  # noqa: BLE001
        return {"algorithm": algo.name, "backend": algo.backend, "family": algo.family, "error": str(exc)}


def registered(algo: Algorithm) -> bool:
    """Whether a worker process can rebuild `algo` from its name and backend: it is the registry's own object
    (the registry gives one per name and backend)."""

    try:
        return get(algo.name, algo.backend) is algo
    except Exception:  # noqa: BLE001
        return False


def run_round_in_worker(algos: list[Algorithm], items: list[Item], round_index: int,
                        emit: Callable[[dict], None], timeout_s: float | None = None, **job) -> str:
    """:func:`run_round` in a fresh ``python -m pqlab.runners.rounds`` process, its results passed to `emit`
    as they come; returns "" or, where the worker died before finishing, why (its last lines of stderr)."""
    spec = {"algorithms": [f"{a.name}@{a.backend}" for a in algos],
            "items": [[i.algo, i.operation, i.size] for i in items],
            "round": round_index, **job, "loops": {str(k): v for k, v in job["loops"].items()},
            "warmups": {str(k): v for k, v in (job.get("warmups") or {}).items()}}
    proc = subprocess.Popen([sys.executable, "-m", "pqlab.runners.rounds"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONUNBUFFERED="1"))
    try:  # read when the worker is done: this process stays idle while it measures
        out, err = proc.communicate(json.dumps(spec), timeout=timeout_s)
        rc = proc.returncode
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    for line in out.splitlines():
        if line.strip():
            try:
                emit(json.loads(line))
            except json.JSONDecodeError:  # a line cut by the worker's death
                break
    if rc != 0:
        lines = [ln for ln in err.strip().splitlines() if ln.strip()]
        return f"worker exit {rc}" + (f": {lines[-1]}" if lines else "")
    return ""


def main() -> int:
    """The worker: a job (JSON) on stdin, one JSON line per result on stdout (anything else the libraries
    print goes to stderr)."""

    protection = noise.protect()  # before the libraries load: their threads and pages start on the chosen CPU
    out = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    job = json.load(sys.stdin)
    algos = resolve(job["algorithms"])
    items = [Item(a, op, size) for a, op, size in job["items"]]

    def emit(record: dict) -> None:
        out.write(json.dumps(record) + "\n")
        out.flush()

    run_round(algos, items, job["round"], seed=job["seed"], round_budget_s=job["round_budget_s"],
              min_samples=job["min_samples"], max_samples=job["max_samples"],
              loops={int(k): v for k, v in job["loops"].items()}, sizes_at=job["sizes_at"], emit=emit,
              warmups={int(k): v for k, v in job.get("warmups", {}).items()}, protection=protection)
    return 0


if __name__ == "__main__":
    sys.exit(main())
