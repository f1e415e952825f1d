"""`measure`: warm-up, calibrated loops, sampling to a precision target within a time budget,
wall time and cycles per sample.

Vocabulary (as pyperf's): a *sample* is one timed stretch of `loops` back-to-back calls; its
value is the mean per call.  Warm-up calls run first and are never samples: at least one call, then
more for `warmup_s` (default a tenth of the sampling budget, at most 50 ms: caches, lazily set-up
state and Python's specialising interpreter are warm after a few calls; a short budget is not
spent twice, once on warming up); none where `loops` is given and ``warm_up=False`` (a later round of
:mod:`pqlab.runners.rounds` for a slow call whose first round showed no cold-call cost).
``Samples.first_call_ns`` is the first warm-up call, the cold one.  The number of
loops is calibrated so one sample lasts at least `target_sample_ns` (well above the timer's
resolution and the cost of reading the cycle counter: 20 µs keeps both under 1 %); operations
slower than that get loops = 1.  Keep loops small: a sample is the *mean* of its loops, and for
operations whose time varies from call to call (ML-DSA's rejection sampling) the median of
means sits above the median of single calls.

Sampling stops when the median is known to `target_rel_ci`: the 95 % confidence interval of
the median time, half its width over the median, is at most the target.  The interval is the
distribution-free order-statistic (binomial) one of :func:`pqlab.measure.stats.median_ci` over this
process's samples.  It decides when one process stops sampling (a round of :mod:`pqlab.runners.rounds`
passes ``target_rel_ci=None`` and samples for its round's budget; the JVM runner mirrors this
rule); it is never shown as a row's interval, which comes from rounds
(:func:`pqlab.measure.stats.round_interval`).  It is
checked after `min_samples` and then every tenth more samples (a partial sort of the samples
so far, outside the timed region), not after every sample.  Sampling also stops when the
`budget_s` is spent or at `max_samples`; a sample set that stops before its target carries the
flag ``precision-not-reached:<budget|max-samples>``.  ``target_rel_ci=None`` samples for the whole
budget.  (Looking repeatedly and stopping at the first good look makes the interval a little
optimistic; the checks are spaced to keep the number of looks small.)

Cycles come from :func:`pqlab.measure.cycles.counter` (PQLAB_COUNTER chooses; the label is stored with
the samples).  A counter read that fails during sampling leaves that sample's cycles missing
(NaN) and flags ``cycles-dropped:<n> of <N> samples: <error>``; the times are kept.

The output of the last call of every sample is checked outside the timed region; a wrong
output stops the measurement with :class:`~pqlab.backends.algorithms.VerificationError`.  The last checked
call is kept (``Samples.last``): a verify measurement after sign verifies that signature instead of
signing again (:func:`pqlab.benchmark.bench`).

Operations that take a message (a :class:`~pqlab.backends.algorithms.Trial` with ``fresh``) get a new one
for every call: ``fresh(loops)`` makes a sample's inputs before its clock starts, the timed loop
passes one to each call (``run(x)``), and the check gets the last input with the last output
(``check(out, x)``), so a cached result cannot pass.  What feeding costs per call is measured on
the harness's no-op (:func:`pqlab.benchmark.bench`: ``meta["harness_feed_ns"]``).

Timing is strictly serial: one operation at a time in one thread, since anything running
beside it (another measurement, a build) shares the cores, caches and memory bandwidth.
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pqlab.core import flags
from pqlab.core.inputs import positive_number, precision_target, sample_bounds
from pqlab.core.schema import convert_unit
from pqlab.measure import cycles
from pqlab.measure.stats import median_ci, relative_half_width

#: Default precision target: 95 % CI of the median within ±1 % of it.
TARGET_REL_CI = 0.01
#: The longest default warm-up, seconds (a tenth of the budget below 0.5 s)
WARMUP_S = 0.05
#: The shortest sample (ns) of a trial that loops in C (``repeat``): Python's one call per sample, and what it
#: does between samples (the output check, which evicts the operation's data from the caches), then cost under
#: 1 % of a sample; such a loop costs a few ns per call, so longer samples cost nothing else.
REPEAT_SAMPLE_NS = 200_000


@dataclass
class Samples:
    """Raw samples of one measured operation (per-call values)."""

    time_ns: np.ndarray
    cycles: np.ndarray | None  # None without a counter; NaN where a read failed
    loops: int
    warmup_calls: int
    cycles_source: str  # a label of pqlab.measure.cycles.LABELS
    flags: list[str] = field(default_factory=list)
    checked: int = 0
    target_rel_ci: float | None = None
    rel_ci: float = float("nan")  # precision reached (relative half-width of the median's 95 % CI)
    stopped_by: str = ""  # precision | budget | max-samples
    last: tuple = ()  # the last checked call: (output,) or, fed, (output, input)
    first_call_ns: float = float("nan")  # the first warm-up call (a cold call; nan without warm-up)

    @property
    def n(self) -> int:
        return int(self.time_ns.size)


def precision(times) -> float:
    """Relative half-width of the 95 % CI of the median of `times` (nan when too few)."""
    lo, hi = median_ci(times)
    return relative_half_width(float(np.median(times)), lo, hi) if len(times) else float("nan")


def precision_marks(reached: float, target_rel_ci: float | None, stopped_by: str) -> list[str]:
    """``precision-not-reached:<stopped_by>`` when a target was set and the precision `reached` is not within
    it (nan, too few samples for an interval, is not); every harness with a target flags its rows so."""
    if target_rel_ci and not reached <= target_rel_ci:
        return [flags.make("precision-not-reached", stopped_by)]
    return []


def measure(run: Callable[..., Any], check: Callable[..., None] | None = None, *, budget_s: float = 1.0,
            min_samples: int = 5, max_samples: int = 10_000, warmup_s: float | None = None,
            target_sample_ns: int = 20_000, loops: int | None = None,
            fresh: Callable[[int], list] | None = None, target_rel_ci: float | None = TARGET_REL_CI,
            warm_up: bool = True, repeat: Callable[[Any], Any] | None = None,
            output: Callable[[Any], Any] | None = None) -> Samples:
    """Time `run()` (checking its outputs outside the timer) until the median is known to
    `target_rel_ci`, or `budget_s` seconds of sampling are spent, or `max_samples` are taken; with
    `fresh`, ``run(x)`` on a new input of ``fresh(n)`` every call (see the module's docstring).  With
    `repeat`, a sample's calls are ``repeat(loops)`` (``repeat(batch)`` with `fresh`): one call that loops in
    the implementation's own language, whose last output ``output(what repeat returned)`` gives after the
    clock stops (:class:`pqlab.backends.algorithms.Trial`); warm-up calls are ``run()``."""
    target_rel_ci = precision_target(target_rel_ci)
    budget_s = positive_number(budget_s, "budget_s")
    warmup_s = (min(WARMUP_S, budget_s / 10) if warmup_s is None
                else positive_number(warmup_s, "warmup_s", zero=True))
    min_samples, max_samples = sample_bounds(min_samples, max_samples)
    clock = time.perf_counter_ns
    cc = cycles.counter()
    counting = cc.label != cycles.NONE
    read = cc.read

    # Warm-up: at least one call, then more until warmup_s has passed.  The loop count comes
    # from the median warm-up call, so one slow or fast call cannot set it.  With `loops` given and
    # warm_up=False, none (pqlab.runners.rounds: a slow call whose cold call was shown to cost nothing extra).
    warm_start = clock()
    warm_times = []
    while warm_up or loops is None:
        x = fresh(1) if fresh is not None else ()
        t0 = clock()
        out = run(*x)
        warm_times.append(clock() - t0)
        if clock() - warm_start >= convert_unit(warmup_s, "s", "ns") or len(warm_times) >= 10_000:
            break
    calls = len(warm_times)
    if check is not None and calls:
        check(out, *x)
    if loops is None:
        target = max(target_sample_ns, REPEAT_SAMPLE_NS) if repeat is not None else target_sample_ns
        loops = max(1, math.ceil(target / max(float(np.median(warm_times)), 1.0)))

    times: list[float] = []
    counts: list[float] = []
    read_errors: list[str] = []
    deadline = clock() + convert_unit(budget_s, "s", "ns")
    next_look = max(min_samples, 1) if target_rel_ci else max_samples + 1
    checked = 1 if calls else 0
    rng = range(loops)
    batch = None
    last: tuple = ()
    stopped_by = "max-samples"
    while len(times) < max_samples:
        if len(times) >= min_samples and clock() >= deadline:
            stopped_by = "budget"
            break
        if fresh is not None:
            batch = fresh(loops)  # the sample's inputs, made before its clock starts
        try:
            c0 = read()
        except OSError as exc:
            c0 = None
            read_errors.append(str(exc))
        if repeat is not None:
            t0 = clock()
            done = repeat(loops if batch is None else batch)
            t1 = clock()
            out = output(done)
        elif batch is not None:
            t0 = clock()
            for x in batch:
                out = run(x)
            t1 = clock()
        elif loops == 1:
            t0 = clock()
            out = run()
            t1 = clock()
        else:
            t0 = clock()
            for _ in rng:
                out = run()
            t1 = clock()
        try:
            c1 = read()
        except OSError as exc:
            c1 = None
            read_errors.append(str(exc))
        last = (out,) if batch is None else (out, batch[-1])
        if check is not None:
            check(*last)  # outside the timed region
            checked += 1
        times.append((t1 - t0) / loops)
        if counting:
            counts.append((c1 - c0) / loops if c0 is not None and c1 is not None else math.nan)
        if len(times) >= next_look:
            if precision(times) <= target_rel_ci:
                stopped_by = "precision"
                break
            next_look = len(times) + max(1, len(times) // 10)

    time_ns = np.asarray(times)
    marks = []
    cycle_arr = np.asarray(counts, dtype=float) if counting else None
    if not counting:
        marks.append(flags.make("no-cycles", cc.reason))
    elif read_errors:
        missing = int(np.isnan(cycle_arr).sum())
        marks.append(flags.make("cycles-dropped", f"{missing} of {len(times)} samples: {read_errors[0]}"))
    reached = precision(time_ns)
    marks += precision_marks(reached, target_rel_ci, stopped_by)
    return Samples(time_ns, cycle_arr, loops, calls, cc.label, marks, checked, target_rel_ci, reached,
                   stopped_by, last, float(warm_times[0]) if warm_times else math.nan)
