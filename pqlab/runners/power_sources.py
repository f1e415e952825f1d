"""The power sources: one small interface (:class:`PowerSource`: ``start``, ``mark``, ``stop``, ``result``)
over a sensor, a counter, a recorded trace, a model or nothing, and the choice of one for this machine.

* :class:`INA219` - a TI INA219 on I2C (smbus2), sampled in a background thread, as in the
  Raspberry Pi 4 study (0x40 on bus 1, 0.1 ohm shunt, 1 kHz, 50 ms idle windows).
* :class:`RAPL` - Linux powercap ``intel-rapl`` energy counters (differences of reads).
* :class:`ReplaySource` - a trace recorded earlier (``data/raw/*.csv``), analysed anywhere.
* :class:`ModelledPower` - constant power x measured time, labelled ``modelled:<W>W``.
* :class:`NoPowerSource` - nothing to measure with, and why; energy stays empty.

:func:`detect_power_source` finds the best one here, :func:`select_power_source` the one asked for.
"""
from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from pqlab.core.schema import convert_unit
from pqlab.runners.power_traces import EnergyResult, Mark, Trace, _net_energy, read_trace

Clock = Callable[[], float]
POWERCAP = Path("/sys/class/powercap")


class PowerSourceError(RuntimeError):
    """A power source failed; ``trace`` holds the samples taken before the failure, if any."""

    def __init__(self, message: str, trace: Trace | None = None) -> None:
        super().__init__(message)
        self.trace = trace


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
            full_mv = convert_unit(_PGA[-1][0], "V", "mV")
            raise ValueError(f"{max_expected_a} A x {shunt_ohms} ohm exceeds the {full_mv:g} "
                             f"mV shunt range (use a smaller shunt), or bus_range_v is not "
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
        return convert_unit(sum(deltas), "µJ", "J"), 0


class ModelledPower(PowerSource):
    """Energy = constant ``watts`` x measured time; gross, nothing subtracted, labelled modelled."""

    idle_windows = False

    def __init__(self, watts: float) -> None:
        if not watts > 0:
            raise ValueError(f"modelled power must be positive, got {watts}")
        self.watts, self.label = watts, f"modelled:{watts:g}W"

    def energy(self, time_ns: float, loops: int = 1) -> EnergyResult:
        """The modelled result for an operation taking ``time_ns`` (e.g. a timing median)."""
        energy_uj = self.watts * convert_unit(time_ns, "ns", "µs")  # W x µs = µJ
        return EnergyResult(energy_uj, time_ns, self.watts, None, 0, loops, self.label)

    def result(self, marks: Sequence[Mark], loops: int) -> EnergyResult:
        return self.energy(convert_unit(marks[2].t - marks[1].t, "s", "ns") / loops, loops)


class NoPowerSource(PowerSource):
    """No way to measure power here; results carry ``reason`` and no energy."""

    available, idle_windows = False, False

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def result(self, marks: Sequence[Mark], loops: int) -> EnergyResult:
        time_ns = convert_unit(marks[2].t - marks[1].t, "s", "ns") / loops
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
        live = NoPowerSource("live measurement switched off (power_source='modelled'): energy is modelled, "
                             "not measured")
    else:
        live = detect_power_source(powercap_root, int(i2c_bus), address, dev, shunt_ohms=shunt_ohms)
    return live, model


def describe_source(live: PowerSource) -> str:
    """One line naming the live source (or saying there is none)."""
    if isinstance(live, INA219):
        return (f"{live.where}, shunt {live.meta['shunt_ohms']} ohm, sampled at {live.rate_hz:g} Hz "
                "(whole-board power)")
    if isinstance(live, RAPL):
        return "RAPL powercap zones " + ", ".join(z.name for z in live.zones) + " (CPU package only)"
    if isinstance(live, NoPowerSource):
        return f"none: {live.reason}"
    return getattr(live, "label", type(live).__name__)
