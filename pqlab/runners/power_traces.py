"""Power traces and the energy they hold: samples of power over time with marked operation windows, their
integral less the idle baseline (:class:`EnergyResult` per operation), and the trace files of data/raw/.

Energy of a window = integral of power over it minus the idle baseline power (measured in
windows just before and after it) x its duration. :attr:`EnergyResult.energy_uj` is this net
energy; :attr:`EnergyResult.gross_energy_uj` (mean power x time) is what the Pi study tabulated.
A trace is written and read as CSV (:func:`write_trace`, :func:`read_trace`; format: data/raw/README.md);
:func:`trace_from_reference` builds one from a study's published means, labelled as such.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from pqlab.core import flags
from pqlab.core.files import atomic_write
from pqlab.core.paths import RAW
from pqlab.core.schema import convert_unit

TRACE_FORMAT = "pqlab power trace v1"
RECONSTRUCTED = "replay:reconstructed"
RECONSTRUCTED_NOTE = "reconstructed from published values (the study names no statistic), not a measurement"


@dataclass(frozen=True)
class EnergyResult:
    """Energy and time of ONE operation, averaged over ``loops`` back-to-back calls."""

    energy_uj: float | None  # net: window energy minus baseline_w x window time, per operation
    time_ns: float  # window time per operation
    power_w: float | None  # mean (gross) power in the window
    baseline_w: float | None  # idle power subtracted; None when nothing was subtracted
    samples: int  # power samples inside the window (0 for counters and models)
    loops: int
    source: str  # the schema's energy_source label
    reason: str = ""  # why energy_uj is None

    @property
    def gross_energy_uj(self) -> float | None:
        """Mean power x time per operation, baseline included (how the Pi study reported energy)."""
        return None if self.power_w is None else self.power_w * convert_unit(self.time_ns, "ns", "µs")  # µJ

    @property
    def flag(self) -> str:
        """Entry for the schema's ``flags`` column: empty, or ``no-energy:<reason>``."""
        return "" if self.energy_uj is not None else flags.make("no-energy", self.reason)


@dataclass(frozen=True)
class Mark:
    """A point in time on a source's clock, with the counter values read then (RAPL only)."""

    t: float
    counters_uj: tuple[int, ...] = ()


@dataclass
class Window:
    """A marked stretch of a trace: ``loops`` operations between ``start_s`` and ``end_s``, with
    the idle time before/after it that gave its baseline (None: the caller's ``idle_s``)."""

    label: str
    start_s: float
    end_s: float
    loops: int = 1
    idle_before_s: float | None = None
    idle_after_s: float | None = None


def integrate(t: np.ndarray, p: np.ndarray, a: float, b: float) -> tuple[float, int]:
    """Integral of power over [a, b] in joules, and the number of samples strictly inside.

    Trapezoidal on the samples, with the power at ``a`` and ``b`` linearly interpolated between
    the neighbouring samples. Repeated times are allowed and make steps: at ``a`` the value just
    after it counts, at ``b`` the value just before it (so a step trace integrates exactly).
    """
    if not b > a:
        raise ValueError(f"empty window [{a}, {b}]: the end must come after the start")
    if len(t) < 2 or a < t[0] or b > t[-1]:
        span = f"[{t[0]:.6f}, {t[-1]:.6f}]" if len(t) else "(no samples)"
        raise ValueError(f"window [{a:.6f}, {b:.6f}] s is not covered by the trace {span}: "
                         "record longer idle windows around the operation")
    i, j = int(np.searchsorted(t, a, "right")), int(np.searchsorted(t, b, "left"))

    def edge(x: float, k: int) -> float:
        t0, t1 = t[k - 1], t[k]
        return float(p[k - 1] if t1 == t0 else p[k - 1] + (p[k] - p[k - 1]) * (x - t0) / (t1 - t0))

    tt = np.concatenate(([a], t[i:j], [b]))
    pp = np.concatenate(([edge(a, i)], p[i:j], [edge(b, j)]))
    if np.isnan(pp).any():
        raise ValueError(f"missing power (NaN) in [{a:.6f}, {b:.6f}] s: an INA219 math overflow? "
                         "raise max_expected_a")
    return float(np.sum((pp[1:] + pp[:-1]) * np.diff(tt)) / 2), j - i


def _net_energy(joules: Callable[[Mark, Mark], tuple[float, int]], marks: Sequence[Mark],
                loops: int, source: str) -> EnergyResult:
    """Energy between marks[1] and marks[2] less the idle power of [0, 1] and [2, 3], per loop."""
    m0, m1, m2, m3 = marks
    idle_s = (m1.t - m0.t) + (m3.t - m2.t)
    if idle_s <= 0:
        raise ValueError("no idle time around the window, so no baseline: give idle_s > 0")
    idle_j = sum(joules(a, b)[0] for a, b in ((m0, m1), (m2, m3)) if b.t > a.t)
    op_j, n = joules(m1, m2)
    span, base = m2.t - m1.t, idle_j / idle_s
    return EnergyResult(energy_uj=convert_unit(op_j - base * span, "J", "µJ") / loops,
                        time_ns=convert_unit(span, "s", "ns") / loops,
                        power_w=op_j / span, baseline_w=base, samples=n, loops=loops, source=source)


def _array(x: Any) -> np.ndarray | None:
    return None if x is None else np.asarray(x, dtype=float)


@dataclass
class Trace:
    """Power samples (t_s ascending, power_w) with optional voltage/current and marked windows."""

    t_s: np.ndarray
    power_w: np.ndarray
    voltage_v: np.ndarray | None = None
    current_a: np.ndarray | None = None
    windows: list[Window] = field(default_factory=list)
    source: str = ""
    achieved_hz: float | None = None
    meta: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.t_s, self.power_w = _array(self.t_s), _array(self.power_w)
        self.voltage_v, self.current_a = _array(self.voltage_v), _array(self.current_a)
        if len(self.t_s) != len(self.power_w) or (len(self.t_s) and np.any(np.diff(self.t_s) < 0)):
            raise ValueError("a trace needs as many power values as times, with times non-decreasing")

    def joules(self, a: Mark, b: Mark) -> tuple[float, int]:
        """Integral of power between two marks (see :func:`integrate`)."""
        return integrate(self.t_s, self.power_w, a.t, b.t)

    def window_result(self, w: Window, before_s: float, after_s: float) -> EnergyResult:
        """Energy per operation of window ``w``, baseline from ``before_s``/``after_s`` around it."""
        marks = [Mark(w.start_s - before_s), Mark(w.start_s), Mark(w.end_s), Mark(w.end_s + after_s)]
        return _net_energy(self.joules, marks, w.loops, self.source)

    def results(self, idle_s: float = 0.05) -> pd.DataFrame:
        """One row per marked window; baselines use the window's recorded idle times, else
        ``idle_s``, on each side, clipped to the trace and to the neighbouring windows."""
        ws = sorted(self.windows, key=lambda w: w.start_s)
        rows = []
        for k, w in enumerate(ws):
            before = idle_s if w.idle_before_s is None else w.idle_before_s
            after = idle_s if w.idle_after_s is None else w.idle_after_s
            lo = max(self.t_s[0], ws[k - 1].end_s if k else -math.inf, w.start_s - before)
            hi = min(self.t_s[-1], ws[k + 1].start_s if k + 1 < len(ws) else math.inf, w.end_s + after)
            r = self.window_result(w, max(w.start_s - lo, 0.0), max(hi - w.end_s, 0.0))
            rows.append({"label": w.label, **asdict(r), "gross_energy_uj": r.gross_energy_uj})
        return pd.DataFrame(rows)


def _raw_path(path: str | Path) -> Path:
    """A path as given, or relative to data/raw/ when it is relative and not found as given."""
    p = Path(path)
    return p if p.is_absolute() or p.exists() else RAW / p


def _opt(x: float | None) -> str:
    return "" if x is None else f"{x:.9f}"


def write_trace(trace: Trace, path: str | Path) -> Path:
    """Write ``trace`` as CSV (``#`` header lines, then t_s,power_w[,voltage_v,current_a]),
    atomically (:func:`pqlab.core.files.atomic_write`). Times start at 0."""
    path = _raw_path(path)
    t0 = float(trace.t_s[0]) if len(trace.t_s) else 0.0
    head = [TRACE_FORMAT, f"source: {trace.source}"]
    head += [f"{k}: {str(v).replace(chr(10), ' ')}" for k, v in trace.meta.items()]
    head += [f"achieved_hz: {trace.achieved_hz:.6g}"] if trace.achieved_hz else []
    head += [f"window: {w.start_s - t0:.9f},{w.end_s - t0:.9f},{w.loops},{_opt(w.idle_before_s)},"
             f"{_opt(w.idle_after_s)},{w.label}" for w in trace.windows]
    cols = {"t_s": trace.t_s - t0, "power_w": trace.power_w,
            "voltage_v": trace.voltage_v, "current_a": trace.current_a}
    frame = pd.DataFrame({k: v for k, v in cols.items() if v is not None})

    def write(tmp: str) -> None:
        with open(tmp, "w", newline="") as fh:
            fh.writelines(f"# {line}\n" for line in head)
            frame.to_csv(fh, index=False, float_format="%.12g")

    atomic_write(path, write, fsync=True)
    return path


def read_trace(path: str | Path) -> Trace:
    """Read a trace written by :func:`write_trace` (format: data/raw/README.md)."""
    path = _raw_path(path)
    head: dict[str, str] = {}
    windows: list[Window] = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if not line.startswith("#"):
                break
            key, _, value = line[1:].strip().partition(": ")
            if key == "window":
                start, end, loops, before, after, label = value.split(",", 5)
                idle = [float(x) if x else None for x in (before, after)]
                windows.append(Window(label, float(start), float(end), int(loops), *idle))
            elif value:
                head[key] = value
    df = pd.read_csv(path, comment="#")
    if missing := {"t_s", "power_w"} - set(df.columns):
        raise ValueError(f"{path}: no column(s) {sorted(missing)}; a trace has t_s,power_w "
                         "[,voltage_v,current_a] (see data/raw/README.md)")
    hz = head.pop("achieved_hz", None)
    return Trace(df["t_s"], df["power_w"], df.get("voltage_v"), df.get("current_a"), windows,
                 head.pop("source", ""), float(hz) if hz else None, head)


def trace_from_reference(df: pd.DataFrame, *, idle_w: float, gap_s: float = 0.1,
                         time_col: str = "time_ms", power_col: str = "power_w",
                         label_cols: Sequence[str] = ("algorithm", "operation")) -> Trace:
    """A step trace RECONSTRUCTED FROM PUBLISHED MEANS, NOT A MEASUREMENT.

    Each row becomes a rectangle at its published power for its published time, separated by
    ``gap_s`` at ``idle_w`` (a stated assumption: the study gives no idle power). Replaying it
    gives gross energy = time x power and net energy = time x (power - idle_w) for each row.
    """
    if missing := {time_col, power_col} - set(df.columns):
        raise ValueError(f"reference table lacks column(s) {sorted(missing)}")
    t, p, windows, now = [0.0], [idle_w], [], gap_s
    for row in df.to_dict("records"):
        dur, watts = convert_unit(row[time_col], "ms", "s"), row[power_col]
        if not (dur > 0 and np.isfinite(watts)):
            raise ValueError(f"row {row}: needs a positive {time_col} and a finite {power_col}")
        t += [now, now, now + dur, now + dur]
        p += [idle_w, watts, watts, idle_w]
        windows.append(Window("/".join(str(row[c]) for c in label_cols if c in row), now, now + dur))
        now += dur + gap_s
    return Trace(t + [now], p + [idle_w], windows=windows, source=RECONSTRUCTED,
                 meta={"note": RECONSTRUCTED_NOTE, "idle_w": f"{idle_w:g}"})
