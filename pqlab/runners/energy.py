"""Energy per operation from a power source, or an honest statement that there is none.

Sources share one small interface (:class:`PowerSource`: ``start``, ``mark``, ``stop``,
``result``):

* :class:`INA219` - a TI INA219 on I2C (smbus2), sampled in a background thread, as in the
  Raspberry Pi 4 study (0x40 on bus 1, 0.1 ohm shunt, 1 kHz, 50 ms idle windows).
* :class:`RAPL` - Linux powercap ``intel-rapl`` energy counters (differences of reads).
* :class:`ReplaySource` - a trace recorded earlier (``data/raw/*.csv``), analysed anywhere.
* :class:`ModelledPower` - constant power x measured time, labelled ``modelled:<W>W``.
* :class:`NoPowerSource` - nothing to measure with, and why; energy stays empty.

Energy of a window = integral of power over it minus the idle baseline power (measured in
windows just before and after it) x its duration. :attr:`EnergyResult.energy_uj` is this net
energy; :attr:`EnergyResult.gross_energy_uj` (mean power x time) is what the Pi study tabulated.
"""
from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from pqlab.backends.algorithms import get, random_message
from pqlab.core import flags, inputs
from pqlab.core.files import atomic_write
from pqlab.core.formatting import slug
from pqlab.core.paths import RAW
from pqlab.store.recorder import RunRecorder

Clock = Callable[[], float]
POWERCAP = Path("/sys/class/powercap")
TRACE_FORMAT = "pqlab power trace v1"
RECONSTRUCTED = "replay:reconstructed"
RECONSTRUCTED_NOTE = "reconstructed from published values (the study names no statistic), not a measurement"
MIN_SAMPLE_PERIODS = 20  # an operation window spans at least this many sample periods


class PowerSourceError(RuntimeError):
    """A power source failed; ``trace`` holds the samples taken before the failure, if any."""

    def __init__(self, message: str, trace: Trace | None = None) -> None:
        super().__init__(message)
        self.trace = trace


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
        return None if self.power_w is None else self.power_w * self.time_ns * 1e-3

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
    return EnergyResult(energy_uj=(op_j - base * span) * 1e6 / loops, time_ns=span * 1e9 / loops,
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
        dur, watts = row[time_col] / 1e3, row[power_col]
        if not (dur > 0 and np.isfinite(watts)):
            raise ValueError(f"row {row}: needs a positive {time_col} and a finite {power_col}")
        t += [now, now, now + dur, now + dur]
        p += [idle_w, watts, watts, idle_w]
        windows.append(Window("/".join(str(row[c]) for c in label_cols if c in row), now, now + dur))
        now += dur + gap_s
    return Trace(t + [now], p + [idle_w], windows=windows, source=RECONSTRUCTED,
                 meta={"note": RECONSTRUCTED_NOTE, "idle_w": f"{idle_w:g}"})


def _timed(clock: Clock, read: Callable[[], Any]) -> tuple[float, Any]:
    """``read()`` and the midpoint time of the read."""
    t0 = clock()
    value = read()
    return (t0 + clock()) / 2, value


class PowerSource:
    """The interface: ``start``; ``mark`` at window edges; ``stop``; ``result`` of four marks
    (idle start, op start, op end, idle end). Subclasses provide ``joules`` between marks."""

    label = ""
    available = True
    period_s = 0.0  # time resolution: windows get at least MIN_SAMPLE_PERIODS of these
    idle_windows = True  # whether the baseline windows are needed
    clock: Clock = staticmethod(time.perf_counter)

    def start(self) -> None:
        """Begin observing (a no-op for counters and models)."""

    def mark(self) -> Mark:
        return Mark(self.clock())

    def stop(self) -> None:
        """End observing; raises :class:`PowerSourceError` if the source failed meanwhile."""

    def joules(self, a: Mark, b: Mark) -> tuple[float, int]:
        raise NotImplementedError

    def result(self, marks: Sequence[Mark], loops: int) -> EnergyResult:
        return _net_energy(self.joules, marks, loops, self.label)


class SampledSource(PowerSource):
    """A source whose energy comes from a :class:`Trace` of power samples."""

    trace: Trace | None = None

    def joules(self, a: Mark, b: Mark) -> tuple[float, int]:
        if self.trace is None:
            raise PowerSourceError(f"{self.label}: no trace yet; call start() and stop() first")
        return self.trace.joules(a, b)


class ReplaySource(SampledSource):
    """A recorded trace from data/raw/; its marked windows are analysed with ``trace.results()``.

    Labelled ``replay:<file>``, or ``replay:reconstructed`` for :func:`trace_from_reference`
    traces. It cannot time a live operation (``start`` raises)."""

    def __init__(self, trace: Trace | str | Path) -> None:
        loaded = trace if isinstance(trace, Trace) else read_trace(trace)
        name = (loaded.source or "trace") if isinstance(trace, Trace) else Path(trace).name
        self.label = loaded.source if loaded.source.startswith("replay:") else f"replay:{name}"
        self.trace = replace(loaded, source=self.label, windows=list(loaded.windows))

    def start(self) -> None:
        raise PowerSourceError(f"{self.label} replays a recorded trace and cannot measure a live "
                               "operation: use .trace.results() for its marked windows")


# INA219 registers (TI SBOS448) and PGA full-scale ranges (volts, PG bits)
_CONFIG, _SHUNT, _BUS, _POWER, _CURRENT, _CALIBRATION = range(6)
_PGA = ((0.04, 0b00), (0.08, 0b01), (0.16, 0b10), (0.32, 0b11))
_REGISTER_BITS = 16
_BUS_RANGES_V = (16, 32)


def _swap16(word: int) -> int:
    """INA219 registers are big-endian; SMBus words are little-endian."""
    return ((word & 0xFF) << 8) | (word >> 8)


def _signed16(word: int) -> int:
    return word - 0x10000 if word & 0x8000 else word


def _open_smbus(bus: int) -> Any:
    try:
        from smbus2 import SMBus  # lazy: pqlab imports without smbus2
    except ImportError as exc:
        raise PowerSourceError("smbus2 is not installed: pip install 'pqlab[pi]'") from exc
    try:
        return SMBus(bus)
    except OSError as exc:
        raise PowerSourceError(f"cannot open /dev/i2c-{bus} ({exc}): enable I2C "
                               "(raspi-config > Interface Options) and check the bus number") from exc


class INA219(SampledSource):
    """TI INA219 on I2C, sampled at ``rate_hz`` in a background thread; the defaults are the
    Pi study's set-up (0x40 on bus 1, 0.1 ohm shunt, 1 kHz).

    Calibration per the datasheet (SBOS448): Current_LSB = max_expected_a / 32768 (or a rounder
    ``current_lsb_a`` >= that), Cal = trunc(0.04096 / (Current_LSB x R_shunt)), Power_LSB =
    20 x Current_LSB. The PGA range is the smallest covering max_expected_a x shunt_ohms; both
    ADCs use ``adc`` (0b0011: 12 bit, 532 us each, so a shunt+bus cycle takes ~1.06 ms and some
    1 kHz samples repeat a conversion). ``bus`` is a bus number (opened with smbus2) or any
    object with SMBus' read_word_data/write_word_data. Each sample reads bus voltage, current
    and power. The sampler is a Python thread: an operation that holds the GIL (pure Python)
    starves it to about 1 / sys.getswitchinterval() = 200 Hz; check ``samples`` per window.
    """

    label = "ina219"

    def __init__(self, bus: int | Any = 1, address: int = 0x40, *, shunt_ohms: float = 0.1,
                 max_expected_a: float = 3.2, current_lsb_a: float | None = None,
                 bus_range_v: int = 32, adc: int = 0b0011, rate_hz: float = 1000.0,
                 clock: Clock = time.perf_counter) -> None:
        where = f"/dev/i2c-{bus}" if isinstance(bus, int) else type(bus).__name__
        self.where = f"INA219 at {address:#04x} on {where}"
        self.address, self.rate_hz, self.period_s, self.clock = address, rate_hz, 1.0 / rate_hz, clock
        self.current_lsb = current_lsb_a or max_expected_a / 32768
        if self.current_lsb < max_expected_a / 32768 * (1 - 1e-9):
            raise ValueError(f"current_lsb_a {current_lsb_a} A < max_expected_a / 32768: the current "
                             "register would overflow; choose a larger LSB")
        self.power_lsb = 20 * self.current_lsb
        self.calibration = math.floor(0.04096 / (self.current_lsb * shunt_ohms) + 1e-9)
        if not 0 < self.calibration < 1 << _REGISTER_BITS:
            raise ValueError(f"calibration {self.calibration} does not fit {_REGISTER_BITS} bits: "
                             "change current_lsb_a")
        vmax = max_expected_a * shunt_ohms * (1 - 1e-9)  # 3.2 A x 0.1 ohm fits 320 mV despite rounding
        pg = next((code for full, code in _PGA if vmax <= full), None)
        if pg is None or bus_range_v not in _BUS_RANGES_V:
            raise ValueError(f"{max_expected_a} A x {shunt_ohms} ohm exceeds the {_PGA[-1][0] * 1000:g} mV shunt "
                             f"range (use a smaller shunt), or bus_range_v is not "
                             f"{' or '.join(map(str, _BUS_RANGES_V))}")
        self.config = (bus_range_v == _BUS_RANGES_V[-1]) << 13 | pg << 11 | adc << 7 | adc << 3 | 0b111
        self.meta = {"sensor": self.where, "shunt_ohms": f"{shunt_ohms:g}",
                     "config": f"{self.config:#06x}", "calibration": str(self.calibration),
                     "current_lsb_a": f"{self.current_lsb:.9g}"}
        self.bus = _open_smbus(bus) if isinstance(bus, int) else bus
        try:
            self._write(_CONFIG, self.config)
            self._write(_CALIBRATION, self.calibration)
        except OSError as exc:
            raise PowerSourceError(f"no answer from {self.where} ({exc}): check wiring and "
                                   f"`i2cdetect -y {bus if isinstance(bus, int) else 'BUS'}`") from exc
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._rows: list[tuple[float, float, float, float]] = []
        self.error: PowerSourceError | None = None

    def _write(self, reg: int, value: int) -> None:
        self.bus.write_word_data(self.address, reg, _swap16(value))

    def _read(self, reg: int) -> int:
        return _swap16(self.bus.read_word_data(self.address, reg))

    def shunt_voltage(self) -> float:
        """Shunt voltage in volts (signed, 10 uV LSB)."""
        return _signed16(self._read(_SHUNT)) * 10e-6

    def read(self) -> tuple[float, float, float]:
        """(bus volts, amps, watts); current and power are NaN when the OVF bit is set."""
        bus = self._read(_BUS)  # bits 15..3 x 4 mV, bit 1 CNVR, bit 0 OVF
        current = _signed16(self._read(_CURRENT)) * self.current_lsb
        power = self._read(_POWER) * self.power_lsb
        return (bus >> 3) * 4e-3, *((math.nan, math.nan) if bus & 1 else (current, power))

    def start(self) -> None:
        """Start sampling; returns once the first sample is in."""
        self._stop.clear()
        self._rows, self.error, self.trace = [], None, None
        first = threading.Event()
        self._thread = threading.Thread(target=self._sample, args=(first,), daemon=True,
                                        name="pqlab-ina219")
        self._thread.start()
        first.wait()
        if self.error:
            self.stop()

    def _sample(self, first: threading.Event) -> None:
        next_t = self.clock()
        try:
            while True:  # one sample after stop is asked, so the trace covers the last mark
                try:
                    t, row = _timed(self.clock, self.read)
                except OSError as exc:
                    self.error = PowerSourceError(
                        f"{self.where} stopped answering after {len(self._rows)} samples ({exc}); "
                        "they are kept in .trace. Check the sensor's wiring and supply.")
                    return
                self._rows.append((t, *row))
                first.set()
                if self._stop.is_set():
                    return
                next_t += self.period_s
                if next_t < self.clock() - self.period_s:  # fell behind: no catch-up burst
                    next_t = self.clock()
                self._stop.wait(max(next_t - self.clock(), 0.0))
        finally:
            first.set()

    def stop(self) -> Trace | None:
        """Stop sampling and build ``trace``; re-raise a sensor failure with the samples kept."""
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._thread = None
            t, v, i, p = zip(*self._rows, strict=True) if self._rows else ([],) * 4
            t = np.asarray(t, dtype=float)
            hz = (len(t) - 1) / (t[-1] - t[0]) if len(t) > 1 and t[-1] > t[0] else None
            self.trace = Trace(t, p, v, i, source=self.label, achieved_hz=hz, meta=dict(self.meta))
        if self.error:
            self.error.trace = self.trace
            raise self.error
        return self.trace


class RAPL(PowerSource):
    """Linux powercap RAPL counters (``energy_uj``) summed over zones whose name starts with
    ``zones`` (default the CPU packages, to avoid counting sub-zones or psys twice)."""

    label = "rapl"
    period_s = 1e-3  # RAPL counters update about every millisecond

    def __init__(self, root: str | Path = POWERCAP, zones: tuple[str, ...] = ("package",),
                 clock: Clock = time.perf_counter) -> None:
        self.clock = clock
        self.zones = [z for z in sorted(Path(root).glob("intel-rapl:*"))
                      if (z / "name").is_file() and (z / "name").read_text().strip().startswith(zones)]
        if not self.zones:
            raise PowerSourceError(f"no RAPL zone named {zones} under {root}")
        self.ranges = [int((z / "max_energy_range_uj").read_text()) for z in self.zones]
        self._counters()  # fail now, not mid-run, if unreadable

    def _counters(self) -> tuple[int, ...]:
        try:
            return tuple(int((z / "energy_uj").read_text()) for z in self.zones)
        except PermissionError as exc:
            raise PowerSourceError(f"cannot read {exc.filename}: since Linux 5.10 energy_uj is "
                                   "root-only; run as root or chmod o+r it") from exc

    def mark(self) -> Mark:
        t, counters = _timed(self.clock, self._counters)
        return Mark(t, counters)

    def joules(self, a: Mark, b: Mark) -> tuple[float, int]:
        """Counter difference, adding the range once where a counter wrapped (windows must be
        shorter than one wrap, i.e. range / power: tens of minutes)."""
        deltas = (e1 - e0 + (rng if e1 < e0 else 0)
                  for e0, e1, rng in zip(a.counters_uj, b.counters_uj, self.ranges, strict=True))
        return sum(deltas) / 1e6, 0


class ModelledPower(PowerSource):
    """Energy = constant ``watts`` x measured time; gross, nothing subtracted, labelled modelled."""

    idle_windows = False

    def __init__(self, watts: float) -> None:
        if not watts > 0:
            raise ValueError(f"modelled power must be positive, got {watts}")
        self.watts, self.label = watts, f"modelled:{watts:g}W"

    def energy(self, time_ns: float, loops: int = 1) -> EnergyResult:
        """The modelled result for an operation taking ``time_ns`` (e.g. a timing median)."""
        return EnergyResult(self.watts * time_ns * 1e-3, time_ns, self.watts, None, 0, loops, self.label)

    def result(self, marks: Sequence[Mark], loops: int) -> EnergyResult:
        return self.energy((marks[2].t - marks[1].t) * 1e9 / loops, loops)


class NoPowerSource(PowerSource):
    """No way to measure power here; results carry ``reason`` and no energy."""

    available, idle_windows = False, False

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def result(self, marks: Sequence[Mark], loops: int) -> EnergyResult:
        time_ns = (marks[2].t - marks[1].t) * 1e9 / loops
        return EnergyResult(None, time_ns, None, None, 0, loops, "", self.reason)


def detect_power_source(powercap_root: str | Path = POWERCAP, i2c_bus: int = 1, address: int = 0x40,
                        dev: str | Path = "/dev", **ina219: Any) -> PowerSource:
    """The best source here: an INA219 (whole-board power, as the Pi study), else RAPL, else a
    :class:`NoPowerSource` saying why. ``ina219`` keywords go to :class:`INA219`."""
    reasons = []
    if not (Path(dev) / f"i2c-{i2c_bus}").exists():
        reasons.append(f"no INA219 on {Path(dev) / f'i2c-{i2c_bus}'} (no such device)")
    else:
        try:
            return INA219(i2c_bus, address, **ina219)
        except PowerSourceError as exc:
            reasons.append(str(exc))
    if not Path(powercap_root).is_dir():
        reasons.insert(0, f"no {powercap_root} (virtual machine?)")
    else:
        try:
            return RAPL(powercap_root)
        except (PowerSourceError, OSError, ValueError) as exc:
            reasons.insert(0, f"RAPL unusable: {exc}")
    return NoPowerSource(" and ".join(reasons))


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


#: What `select_power_source` accepts.
POWER_SOURCES = ("auto", "ina219", "rapl", "none", "modelled")


def select_power_source(power_source: str = "auto", modelled_power_w: float | None = None, *,
                        i2c_bus: int = 1, i2c_address: int | str = 0x40, shunt_ohms: float = 0.1,
                        powercap_root: str | Path = POWERCAP,
                        dev: str | Path = "/dev") -> tuple[PowerSource, ModelledPower | None]:
    """The live source and the model asked for: ``(live, model)``.

    ``power_source``: ``auto`` (INA219, else RAPL, else none, with the reason), ``ina219`` or
    ``rapl`` (that source or an error saying why not: asked for explicitly, it must not fall back
    silently), ``none``, or ``modelled`` (no live measurement; needs ``modelled_power_w``).
    ``model`` is a :class:`ModelledPower` whenever ``modelled_power_w`` is given, else None.
    """
    if power_source not in POWER_SOURCES:
        raise ValueError(f"power_source {power_source!r}: choose one of {', '.join(POWER_SOURCES)}")
    if power_source == "modelled" and modelled_power_w is None:
        raise ValueError("power_source='modelled' needs modelled_power_w (watts)")
    model = None if modelled_power_w is None else ModelledPower(float(modelled_power_w))
    address = int(i2c_address, 0) if isinstance(i2c_address, str) else int(i2c_address)
    if power_source == "ina219":
        live: PowerSource = INA219(int(i2c_bus), address, shunt_ohms=shunt_ohms)
    elif power_source == "rapl":
        live = RAPL(powercap_root)
    elif power_source == "none":
        live = NoPowerSource("live measurement switched off (power_source='none')")
    elif power_source == "modelled":
        live = NoPowerSource("live measurement switched off (power_source='modelled'): energy is modelled, not measured")
    else:
        live = detect_power_source(powercap_root, int(i2c_bus), address, dev, shunt_ohms=shunt_ohms)
    return live, model


def describe_source(live: PowerSource) -> str:
    """One line naming the live source (or saying there is none)."""
    if isinstance(live, INA219):
        return f"{live.where}, shunt {live.meta['shunt_ohms']} ohm, sampled at {live.rate_hz:g} Hz (whole-board power)"
    if isinstance(live, RAPL):
        return "RAPL powercap zones " + ", ".join(z.name for z in live.zones) + " (CPU package only)"
    if isinstance(live, NoPowerSource):
        return f"none: {live.reason}"
    return getattr(live, "label", type(live).__name__)


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
                               None if pd.isna(r["message_bytes"]) else inputs.message_size(r["message_bytes"]))
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
                results.append(measure_energy(trial.run, source, idle_s=idle_s, label=label, check=trial.check,
                                              trace_path=traces / f"{slug(label)}-{k}.csv"))
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
