"""`measure`: warm-up, calibrated loops, a time budget, wall time and core cycles per sample.

Vocabulary (as pyperf's): a *sample* is one timed stretch of `loops` back-to-back calls; its
value is the mean per call.  Warm-up calls run first and are never samples.  The number of
loops is calibrated so one sample lasts at least `target_sample_ns` (well above the timer's
resolution and the cost of reading the cycle counter: 20 µs keeps both under 1 %); operations
slower than that get loops = 1.  Keep loops small: a sample is the *mean* of its loops, and for
operations whose time varies from call to call (ML-DSA's rejection sampling) the median of
means sits above the median of single calls.
Sampling goes on until the time budget is spent (at least `min_samples`, at most
`max_samples`), so fast operations get thousands of samples and a one-second signature a few.

The output of the last call of every sample is checked outside the timed region; a wrong
output stops the measurement with :class:`~pqlab.algorithms.VerificationError`.

Operations that take a message (a :class:`~pqlab.algorithms.Trial` with ``fresh``) get a new one
for every call: ``fresh(loops)`` makes a sample's inputs before its clock starts, the timed loop
passes one to each call (``run(x)``), and the check gets the last input with the last output
(``check(out, x)``), so a cached result cannot pass.  What feeding costs per call is measured on
the harness's no-op (:func:`pqlab.benchmark.bench`: ``meta["harness_feed_ns"]``).
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .cycles import CycleCounter, FrequencyEstimate, open_counter

_counter: CycleCounter | FrequencyEstimate | None = None


def counter() -> CycleCounter | FrequencyEstimate:
    """The process's cycle counter (opened once)."""
    global _counter
    if _counter is None:
        _counter = open_counter()
    return _counter


@dataclass
class Samples:
    """Raw samples of one measured operation (per-call values)."""

    time_ns: np.ndarray
    cycles: np.ndarray | None
    loops: int
    warmup_calls: int
    cycles_source: str
    flags: list[str] = field(default_factory=list)
    checked: int = 0

    @property
    def n(self) -> int:
        return int(self.time_ns.size)


def measure(run: Callable[..., Any], check: Callable[..., None] | None = None, *, budget_s: float = 1.0,
            min_samples: int = 5, max_samples: int = 10_000, warmup_s: float = 0.05,
            target_sample_ns: int = 20_000, loops: int | None = None,
            fresh: Callable[[int], list] | None = None) -> Samples:
    """Time `run()` (and check its outputs outside the timer) within about `budget_s` seconds; with
    `fresh`, ``run(x)`` on a new input of ``fresh(n)`` every call (see the module's docstring)."""
    clock = time.perf_counter_ns
    cc = counter()
    hardware = cc.hardware
    read = cc.read

    # Warm-up: at least one call, then more until warmup_s has passed.  The loop count comes
    # from the median warm-up call, so one slow or fast call cannot set it.
    warm_start = clock()
    warm_times = []
    while True:
        x = fresh(1) if fresh is not None else ()
        t0 = clock()
        out = run(*x)
        warm_times.append(clock() - t0)
        if clock() - warm_start >= warmup_s * 1e9 or len(warm_times) >= 10_000:
            break
    calls = len(warm_times)
    if check is not None:
        check(out, *x)
    if loops is None:
        loops = max(1, math.ceil(target_sample_ns / max(float(np.median(warm_times)), 1.0)))

    times: list[float] = []
    cycles: list[float] = []
    deadline = clock() + budget_s * 1e9
    checked = 1
    rng = range(loops)
    batch = None
    while len(times) < max_samples and (len(times) < min_samples or clock() < deadline):
        if fresh is not None:
            batch = fresh(loops)  # the sample's inputs, made before its clock starts
            c0 = read()
            t0 = clock()
            for x in batch:
                out = run(x)
            t1 = clock()
            c1 = read()
        elif loops == 1:
            c0 = read()
            t0 = clock()
            out = run()
            t1 = clock()
            c1 = read()
        else:
            c0 = read()
            t0 = clock()
            for _ in rng:
                out = run()
            t1 = clock()
            c1 = read()
        if check is not None:
            check(out) if batch is None else check(out, batch[-1])  # outside the timed region
            checked += 1
        times.append((t1 - t0) / loops)
        if hardware:
            cycles.append((c1 - c0) / loops)
    time_ns = np.asarray(times)
    flags = []
    if hardware:
        cycles_arr = np.asarray(cycles)
        source = cc.source
    else:
        est = [cc.estimate(t) for t in times]
        cycles_arr = np.asarray(est, dtype=float) if est and est[0] is not None else None
        source = cc.source
        flags.append(f"no-cycles:{cc.reason}" if cycles_arr is None else f"cycles-estimated:{cc.reason}")
    return Samples(time_ns, cycles_arr, loops, calls, source, flags, checked)
