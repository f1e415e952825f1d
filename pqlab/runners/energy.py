"""Energy per operation from a power source, or an honest statement that there is none.

Sources share one small interface (:class:`PowerSource`: ``start``, ``mark``, ``stop``,
``result``; in :mod:`pqlab.runners.power_sources`):

* :class:`INA219` - a TI INA219 on I2C (smbus2), sampled in a background thread, as in the
  Raspberry Pi 4 study (0x40 on bus 1, 0.1 ohm shunt, 1 kHz, 50 ms idle windows).
* :class:`RAPL` - Linux powercap ``intel-rapl`` energy counters (differences of reads).
* :class:`ReplaySource` - a trace recorded earlier (``data/raw/*.csv``), analysed anywhere.
* :class:`ModelledPower` - constant power x measured time, labelled ``modelled:<W>W``.
* :class:`NoPowerSource` - nothing to measure with, and why; energy stays empty.

Energy of a window = integral of power over it minus the idle baseline power (measured in
windows just before and after it) x its duration. :attr:`EnergyResult.energy_uj` is this net
energy; :attr:`EnergyResult.gross_energy_uj` (mean power x time) is what the Pi study tabulated.
Traces, their integral and their files are in :mod:`pqlab.runners.power_traces`; this module measures
(:func:`measure_energy` one operation, :func:`energy_run` a plan of them into the results store) and keeps
every name of both reachable as ``pqlab.runners.energy.<name>``.
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from pqlab.backends.algorithms import get, random_message
from pqlab.core import flags, inputs
from pqlab.core.formatting import slug
from pqlab.runners.power_sources import (
    INA219,
    POWER_SOURCES,
    POWERCAP,
    RAPL,
    Clock,
    ModelledPower,
    NoPowerSource,
    PowerSource,
    PowerSourceError,
    ReplaySource,
    SampledSource,
    describe_source,
    detect_power_source,
    select_power_source,
)
from pqlab.runners.power_traces import (
    RECONSTRUCTED,
    RECONSTRUCTED_NOTE,
    TRACE_FORMAT,
    EnergyResult,
    Mark,
    Trace,
    Window,
    _raw_path,
    integrate,
    read_trace,
    trace_from_reference,
    write_trace,
)
from pqlab.store.recorder import RunRecorder

__all__ = ["INA219", "MIN_SAMPLE_PERIODS", "POWERCAP", "POWER_SOURCES", "RAPL", "RECONSTRUCTED",
           "RECONSTRUCTED_NOTE", "TRACE_FORMAT", "Clock", "EnergyResult", "Mark", "ModelledPower",
           "NoPowerSource", "PowerSource", "PowerSourceError", "ReplaySource", "SampledSource", "Trace",
           "Window", "describe_source", "detect_power_source", "energy_run", "integrate", "measure_energy",
           "read_trace", "select_power_source", "trace_from_reference", "write_trace"]

MIN_SAMPLE_PERIODS = 20  # an operation window spans at least this many sample periods


def _loops_for(fn: Callable[[], object], window_s: float, clock: Clock) -> int:
    """Calls of ``fn`` needed to fill ``window_s`` (doubling until a quarter of it is timed)."""
    n = 1
    while True:
        t0 = clock()
        for _ in range(n):
            fn()
        dt = clock() - t0
        if dt >= window_s / 4 or n >= 1 << 30:
            return max(1, math.ceil(n * window_s / max(dt, 1e-9)))
        n *= 2


def measure_energy(fn: Callable[[], object], source: PowerSource, *, loops: int | None = None,
                   min_periods: int = MIN_SAMPLE_PERIODS, idle_s: float = 0.05, label: str = "op",
                   trace_path: str | Path | None = None,
                   check: Callable[[object], None] | None = None) -> EnergyResult:
    """Energy and time of one call of ``fn``: idle window, ``loops`` calls, idle window.

    Without ``loops``, calls are repeated (in calibrated batches) until the window spans
    ``min_periods`` sample periods of the source: a 1 kHz sensor cannot resolve a 10 us
    operation alone. Sampled traces are written to ``trace_path`` (relative paths go to
    data/raw/) with the operation window and its idle times marked, so replaying the file gives
    the same result. A sensor failure raises :class:`PowerSourceError` carrying the samples.
    ``check`` is called on the window's last output after the window closed (outside the measurement).
    """
    window_s = 0.0 if loops else min_periods * source.period_s
    loops = loops or _loops_for(fn, window_s, source.clock)
    idle = idle_s if source.idle_windows else 0.0
    source.start()
    try:
        m0 = source.mark()
        time.sleep(idle)
        m1 = source.mark()
        done = 0
        while not done or source.clock() - m1.t < window_s:  # top up if the calibration ran slow
            for _ in range(loops):
                out = fn()
            done += loops
        m2 = source.mark()
        time.sleep(idle)
        m3 = source.mark()
    finally:
        source.stop()
    if check is not None:
        check(out)
    trace = getattr(source, "trace", None)
    if trace is not None:
        trace.windows.append(Window(label, m1.t, m2.t, done, m1.t - m0.t, m3.t - m2.t))
        if trace_path is not None:
            write_trace(trace, trace_path)
    return source.result((m0, m1, m2, m3), done)


def energy_run(plan, source: PowerSource, *, repeats: int = 3, idle_s: float = 0.05, study: str = "",
               trace_dir: str | Path | None = None, folder: str | Path | None = None, seed: int | None = 0,
               progress: bool = True, save: bool = True):
    """Energy per operation from a live `source`, recorded as a run of the results store.

    `plan`: rows with ``algorithm``, ``backend``, ``operation`` and ``message_bytes`` (e.g. a timing
    table).  Each operation is the same checked call that is timed (``Algorithm.trial``): its output is
    checked before and after every window.  ``repeats`` windows each; the row keeps their medians:
    ``energy_uj`` (net of the idle baseline), ``power_w`` (gross mean power), ``energy_source``, and
    ``gross_energy_uj``, ``baseline_w``, ``window_time_ns``, ``power_samples``, ``windows``.  One
    trace file per window goes to `trace_dir` (relative: under data/raw/; default ``<study>/<run id>``),
    named in the run's metadata (``raw_traces``), so the energies can be recomputed by replaying them.
    """

    if not source.available:
        raise ValueError(f"no live power source: {getattr(source, 'reason', source)}")
    repeats = inputs.count(repeats, "repeats")
    idle_s = inputs.positive_number(idle_s, "idle_s", zero=True)
    todo = list(dict.fromkeys((r["algorithm"], r["backend"], r["operation"],
                               None if pd.isna(r["message_bytes"])
                               else inputs.message_size(r["message_bytes"]))
                              for r in (plan.to_dict("records") if hasattr(plan, "to_dict") else plan)))
    for name, backend, operation, _ in todo:  # every name and operation known before the first window
        inputs.operations([get(name, backend)], [operation])
    params = {"operations": [list(x) for x in todo], "repeats": repeats, "idle_s": idle_s, "seed": seed,
              "source": source.label}
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(todo) * repeats, desc="energy", unit="window", dynamic_ncols=True)
    with RunRecorder(study, params, label=f"{study}-energy" if study else "energy", folder=folder,
                     save=save) as rec:
        traces = Path(trace_dir) if trace_dir is not None else Path(study or "energy") / rec.run_id
        rec.meta["raw_traces"] = str(_raw_path(traces))
        for name, backend, operation, size in todo:
            algo = get(name, backend)
            trial = algo.trial(operation, random_message(size or 0, seed)).bound()  # one message, repeated
            trial.check(trial.run())
            label = f"{name} {operation}" + (f" {size} B" if size is not None else "")
            results = []
            for k in range(repeats):
                path = traces / f"{slug(label)}-{k}.csv"
                results.append(measure_energy(trial.run, source, idle_s=idle_s, label=label,
                                              check=trial.check, trace_path=path))
                if bar is not None:
                    bar.update(1)
            net = [x.energy_uj for x in results if x.energy_uj is not None]
            gross = [x.gross_energy_uj for x in results if x.gross_energy_uj is not None]
            rec.add(measurements=[rec.row(
                algo, operation=operation, message_bytes=size, samples=len(results), verified=True,
                loops=int(np.median([x.loops for x in results])), energy_source=results[0].source,
                energy_uj=float(np.median(net)) if net else math.nan,
                power_w=float(np.median([x.power_w for x in results])),
                gross_energy_uj=float(np.median(gross)) if gross else math.nan,
                baseline_w=float(np.median([x.baseline_w for x in results])),
                window_time_ns=float(np.median([x.time_ns for x in results])),
                power_samples=int(np.median([x.samples for x in results])),
                flags=flags.join(x.flag for x in results))])
            rec.checkpoint()
    if bar is not None:
        bar.close()
    return rec.run
