"""Tests of pqlab.runners.energy without hardware: fake SMBus, fake powercap tree, synthetic traces."""
from __future__ import annotations

import itertools
import math
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pqlab.runners import energy
from pqlab.runners.energy import (
    INA219,
    RAPL,
    EnergyResult,
    Mark,
    ModelledPower,
    NoPowerSource,
    PowerSourceError,
    ReplaySource,
    Trace,
    Window,
    detect_power_source,
    integrate,
    measure_energy,
    read_trace,
    trace_from_reference,
    write_trace,
)

ADDR = 0x40


def smbus_word(register_value: int) -> int:
    """What SMBus read_word_data returns for a big-endian register: first byte on the wire is the LSB."""
    return int.from_bytes(register_value.to_bytes(2, "big"), "little")


class FakeBus:
    """Holds INA219 registers (chip values); fails with OSError after ``fail_after`` reads."""

    def __init__(self, regs: dict[int, int] | None = None, fail_after: int | None = None) -> None:
        self.regs = dict(regs or {})
        self.writes: list[tuple[int, int, int]] = []
        self.reads = 0
        self.fail_after = fail_after

    def write_word_data(self, addr: int, reg: int, word: int) -> None:
        self.writes.append((addr, reg, word))
        self.regs[reg] = int.from_bytes(word.to_bytes(2, "little"), "big")

    def read_word_data(self, addr: int, reg: int) -> int:
        if self.fail_after is not None and self.reads >= self.fail_after:
            raise OSError(121, "Remote I/O error")
        self.reads += 1
        return smbus_word(self.regs.get(reg, 0))


# --- INA219 register arithmetic ---------------------------------------------------------------

def test_ina219_datasheet_worked_example():
    """TI SBOS448 'Configure/Measure/Calculate Example': 10 A load, 12 V, 2 mohm shunt, 40 mV
    FSR, 16 V bus range, Current_LSB chosen 1 mA -> Cal 20480 (0x5000), config 0x019F."""
    bus = FakeBus({1: 0x07D0, 2: 0x5D98, 3: 0x1766, 4: 0x2710})
    ina = INA219(bus, ADDR, shunt_ohms=0.002, max_expected_a=15.0, current_lsb_a=0.001, bus_range_v=16)
    assert (ADDR, 0, smbus_word(0x019F)) in bus.writes  # byte-swapped on the wire
    assert (ADDR, 5, smbus_word(0x5000)) in bus.writes
    assert ina.calibration == 20480 == int(0.04096 / (0.001 * 0.002) + 1e-9)
    assert ina.shunt_voltage() == pytest.approx(2000 * 10e-6)  # 20 mV
    volts, amps, watts = ina.read()
    assert volts == pytest.approx((0x5D98 >> 3) * 0.004)  # 2995 x 4 mV = 11.98 V
    assert volts == pytest.approx(11.98)
    assert amps == pytest.approx(10000 * 0.001) == 10.0
    assert watts == pytest.approx(5990 * 20 * 0.001)  # 119.8 W
    assert watts == pytest.approx(volts * amps)


@pytest.mark.parametrize("max_a, expected_cal", [(2.0, 6710), (3.2, 4194)])
def test_ina219_calibration_from_max_current(max_a, expected_cal):
    """0.1 ohm shunt: Current_LSB = max / 2**15, Cal = trunc(0.04096 / (LSB x R))."""
    lsb = max_a / 2**15
    assert math.floor(0.04096 / (lsb * 0.1)) == expected_cal  # independent check of the literal
    bus = FakeBus({4: 1000, 3: 100, 2: (5000 // 4) << 3})
    ina = INA219(bus, ADDR, shunt_ohms=0.1, max_expected_a=max_a)
    assert bus.regs[5] == expected_cal
    assert bus.regs[0] == 0x399F  # 32 V range, PGA /8 (320 mV), 12-bit ADCs, continuous
    volts, amps, watts = ina.read()
    assert (volts, amps, watts) == pytest.approx((5.0, 1000 * lsb, 100 * 20 * lsb))


def test_ina219_round_lsb_gives_adafruit_4096():
    bus = FakeBus()
    INA219(bus, ADDR, shunt_ohms=0.1, max_expected_a=2.0, current_lsb_a=100e-6)
    assert bus.regs[5] == 4096


def test_ina219_negative_values_and_overflow():
    bus = FakeBus({1: (-2000) & 0xFFFF, 4: (-10000) & 0xFFFF, 2: 0x5D98})
    ina = INA219(bus, ADDR, shunt_ohms=0.002, max_expected_a=15.0, current_lsb_a=0.001, bus_range_v=16)
    assert ina.shunt_voltage() == pytest.approx(-0.020)
    assert ina.read()[1] == pytest.approx(-10.0)
    bus.regs[2] = 0x5D98 | 1  # OVF: current and power are not valid
    volts, amps, watts = ina.read()
    assert volts == pytest.approx(11.98) and math.isnan(amps) and math.isnan(watts)


def test_ina219_rejects_impossible_settings():
    with pytest.raises(ValueError, match="320 mV"):
        INA219(FakeBus(), shunt_ohms=0.1, max_expected_a=5.0)
    with pytest.raises(ValueError, match="overflow"):
        INA219(FakeBus(), shunt_ohms=0.1, max_expected_a=2.0, current_lsb_a=1e-6)


# --- INA219 sampling ------------------------------------------------------------------------

def run_until_failure(ina: INA219) -> None:
    """Start sampling and wait for the fake bus to fail (start itself may already raise)."""
    ina.start()
    deadline = time.monotonic() + 5
    while ina.error is None and time.monotonic() < deadline:
        time.sleep(0.001)
    ina.stop()


def test_sensor_failure_keeps_samples():
    k = 7
    bus = FakeBus({2: 5000 // 4 << 3, 3: 150, 4: 6000}, fail_after=3 * k)  # 3 reads per sample
    ina = INA219(bus, ADDR, rate_hz=5000)
    with pytest.raises(PowerSourceError, match=rf"0x40.*after {k} samples") as err:
        run_until_failure(ina)
    assert len(err.value.trace.t_s) == k == len(ina.trace.power_w)
    assert np.allclose(err.value.trace.power_w, 150 * 20 * 3.2 / 32768)


def test_sensor_failing_at_once_raises_from_start():
    ina = INA219(FakeBus(fail_after=0), ADDR)
    with pytest.raises(PowerSourceError, match="after 0 samples"):
        ina.start()


def test_achieved_rate_with_fake_clock():
    ticks = itertools.count(0.0, 1e-4)
    bus = FakeBus({3: 100}, fail_after=3 * 50)
    ina = INA219(bus, ADDR, rate_hz=1e9, clock=lambda: next(ticks))
    with pytest.raises(PowerSourceError):
        run_until_failure(ina)
    t = ina.trace.t_s
    assert ina.trace.achieved_hz == pytest.approx((len(t) - 1) / (t[-1] - t[0]))
    assert 0 < ina.trace.achieved_hz < 1e4  # bounded by the fake clock's 0.1 ms ticks


class LevelBus(FakeBus):
    """Power register follows ``level`` (set by the operation under test)."""

    def __init__(self) -> None:
        super().__init__({2: 5000 // 4 << 3})
        self.level = threading.Event()

    def read_word_data(self, addr: int, reg: int) -> int:
        if reg == 3:
            self.regs[3] = 2000 if self.level.is_set() else 500  # x Power_LSB
        return super().read_word_data(addr, reg)


def test_measure_energy_end_to_end_with_fake_sensor(tmp_path):
    bus = LevelBus()
    ina = INA219(bus, ADDR, max_expected_a=3.2, rate_hz=1000)
    plsb = 20 * 3.2 / 32768

    def op():
        bus.level.set()
        time.sleep(0.002)
        bus.level.clear()

    r = measure_energy(op, ina, idle_s=0.03, label="fake/op", trace_path=tmp_path / "t.csv")
    assert r.source == "ina219" and r.loops * r.time_ns >= 20 * 1e6  # >= 20 sample periods
    # loose: a Python thread sampling 2 ms pulses at 1 kHz on a possibly busy machine
    assert r.samples > 5 and r.baseline_w == pytest.approx(500 * plsb, rel=0.3)
    expected_uj = (2000 - 500) * plsb * r.time_ns * 1e-3
    assert r.energy_uj == pytest.approx(expected_uj, rel=0.4)
    assert ina.trace.achieved_hz > 0
    saved = read_trace(tmp_path / "t.csv")
    assert saved.windows[0].label == "fake/op" and saved.windows[0].loops == r.loops
    again = saved.results().iloc[0]  # the recorded idle windows reproduce the live result
    assert again["energy_uj"] == pytest.approx(r.energy_uj, rel=1e-6)


# --- RAPL -----------------------------------------------------------------------------------

def make_zone(root, name, zone, energy_uj, max_uj=262143328850):
    d = root / name
    d.mkdir(parents=True, exist_ok=True)
    (d / "name").write_text(zone + "\n")
    (d / "energy_uj").write_text(f"{energy_uj}\n")
    (d / "max_energy_range_uj").write_text(f"{max_uj}\n")
    return d / "energy_uj"


def test_rapl_counter_differences_wrap_and_baseline(tmp_path):
    max_uj = 10_000_000_000
    pkg = make_zone(tmp_path, "intel-rapl:0", "package-0", max_uj - 1_000_000, max_uj)
    make_zone(tmp_path, "intel-rapl:0:0", "core", 5)  # sub-zone: must not be counted twice
    make_zone(tmp_path, "intel-rapl:1", "psys", 7)
    now = iter([0.0, 0.0, 1.0, 1.0, 3.0, 3.0, 4.0, 4.0])
    rapl = RAPL(tmp_path, clock=lambda: next(now))
    assert [z.name for z in rapl.zones] == ["intel-rapl:0"]
    marks = [rapl.mark()]
    for joules in (2, 10, 2):  # 2 W idle, 5 W for 2 s, 2 W idle; the first step wraps
        pkg.write_text(str((marks[-1].counters_uj[0] + joules * 10**6) % max_uj))
        marks.append(rapl.mark())
    assert marks[1].counters_uj[0] < marks[0].counters_uj[0]  # wrapped
    assert rapl.joules(marks[0], marks[1]) == (2.0, 0)
    r = rapl.result(marks, loops=2)
    assert r.baseline_w == pytest.approx(2.0) and r.power_w == pytest.approx(5.0)
    assert r.energy_uj == pytest.approx((10 - 2 * 2) / 2 * 1e6)  # net, per operation
    assert r.time_ns == pytest.approx(1e9) and r.source == "rapl"


def test_rapl_missing_zone(tmp_path):
    with pytest.raises(PowerSourceError, match="no RAPL zone"):
        RAPL(tmp_path)


# --- detection, modelled, none --------------------------------------------------------------

def test_detect_without_anything_gives_reason(tmp_path):
    src = detect_power_source(powercap_root=tmp_path / "powercap", dev=tmp_path)
    assert isinstance(src, NoPowerSource) and not src.available
    assert "powercap (virtual machine?)" in src.reason and "no INA219 on" in src.reason
    r = measure_energy(lambda: sum(range(100)), src, loops=3)
    assert r.energy_uj is None and r.power_w is None and r.time_ns > 0
    assert r.reason == src.reason and r.flag.startswith("no-energy:") and ";" not in r.flag


def test_detect_finds_rapl(tmp_path):
    make_zone(tmp_path, "intel-rapl:0", "package-0", 123)
    assert isinstance(detect_power_source(powercap_root=tmp_path, dev=tmp_path), RAPL)


def test_modelled_energy_is_labelled():
    m = ModelledPower(3.4)
    assert m.label == "modelled:3.4W"
    r = m.energy(time_ns=250_000)  # 0.25 ms at 3.4 W = 850 uJ
    assert r.energy_uj == pytest.approx(850.0) and r.source == "modelled:3.4W"
    assert r.baseline_w is None and r.flag == ""
    r = measure_energy(lambda: None, m, loops=10)
    assert r.energy_uj == pytest.approx(3.4 * r.time_ns * 1e-3) and r.source.startswith("modelled:")
    with pytest.raises(ValueError):
        ModelledPower(0)


# --- integration on synthetic traces --------------------------------------------------------

def test_constant_power_gives_p_times_t():
    t = np.linspace(0, 1, 1001)
    e, n = integrate(t, np.full_like(t, 3.0), 0.2, 0.7)
    assert e == pytest.approx(3.0 * 0.5) and n == 499


def test_ramp_is_exact_and_edges_interpolated():
    t = np.array([0.0, 0.5, 1.0])
    assert integrate(t, t.copy(), 0.2, 0.7)[0] == pytest.approx((0.7**2 - 0.2**2) / 2)
    tri_t, tri_p = np.array([0.0, 1.0, 2.0]), np.array([0.0, 10.0, 0.0])
    assert integrate(tri_t, tri_p, 0.5, 1.5) == (pytest.approx(10 - 2 * 0.5 * 0.5 * 5), 1)
    assert integrate(tri_t, tri_p, 0.25, 0.75)[0] == pytest.approx(0.5 * 5.0)  # no sample inside
    with pytest.raises(ValueError, match="not covered"):
        integrate(tri_t, tri_p, -0.1, 1.0)


def test_rectangle_above_baseline_gives_p_minus_b_times_t():
    b, p = 2.0, 5.0
    t = np.arange(0, 1.0005, 0.001)  # 1 kHz samples, edges of the pulse on samples
    power = np.where((t >= 0.4) & (t <= 0.6), p, b)
    power[np.isclose(t, 0.4) | np.isclose(t, 0.6)] = p
    step = Trace([0, 0.4, 0.4, 0.6, 0.6, 1.0], [b, b, p, p, b, b], windows=[Window("w", 0.4, 0.6)])
    sampled = Trace(t, power, windows=[Window("w", 0.4, 0.6)])
    r = step.results(idle_s=0.1).iloc[0]
    assert r["energy_uj"] == pytest.approx((p - b) * 0.2 * 1e6)
    assert r["baseline_w"] == pytest.approx(b) and r["power_w"] == pytest.approx(p)
    assert sampled.results(idle_s=0.1).iloc[0]["energy_uj"] == pytest.approx((p - b) * 0.2 * 1e6, rel=0.02)
    # loops divide the window's energy and time
    r4 = step.window_result(Window("w", 0.4, 0.6, loops=4), 0.1, 0.1)
    assert r4.energy_uj == pytest.approx((p - b) * 0.2 * 1e6 / 4) and r4.time_ns == pytest.approx(0.05e9)


def test_nan_power_is_refused():
    with pytest.raises(ValueError, match="overflow"):
        integrate(np.array([0.0, 1.0, 2.0]), np.array([1.0, np.nan, 1.0]), 0.5, 1.5)


# --- reconstructed trace, files, replay -----------------------------------------------------

REFERENCE_ROWS = pd.DataFrame({  # three rows of the Pi 4 study's tables (time ms, power W)
    "algorithm": ["ML-KEM-512", "HQC-128", "Falcon-512"],
    "operation": ["keygen", "keygen", "sign"],
    "time_ms": [0.283, 25.818, 1.365],
    "power_w": [3.403, 3.766, 3.494],
})


def test_reconstructed_trace_reproduces_time_times_power(tmp_path):
    idle = 2.9  # stated assumption for the test
    trace = trace_from_reference(REFERENCE_ROWS, idle_w=idle)
    assert trace.source == "replay:reconstructed" and "not a measurement" in trace.meta["note"]
    path = write_trace(trace, tmp_path / "reconstructed.csv")
    src = ReplaySource(path)
    assert src.label == "replay:reconstructed"
    assert (f"# note: {energy.RECONSTRUCTED_NOTE}" in path.read_text()
            and "means" not in energy.RECONSTRUCTED_NOTE)
    res = src.trace.results()
    ms, w = REFERENCE_ROWS["time_ms"].to_numpy(), REFERENCE_ROWS["power_w"].to_numpy()
    assert list(res["label"]) == ["ML-KEM-512/keygen", "HQC-128/keygen", "Falcon-512/sign"]
    assert np.allclose(res["gross_energy_uj"], ms * w * 1e3, rtol=1e-6)
    assert np.allclose(res["energy_uj"], ms * (w - idle) * 1e3, rtol=1e-6)
    assert np.allclose(res["time_ns"], ms * 1e6) and set(res["source"]) == {"replay:reconstructed"}
    with pytest.raises(PowerSourceError, match="cannot measure a live"):
        src.start()


def test_replay_of_a_recorded_file_is_labelled_with_its_name(tmp_path):
    trace = Trace([10.0, 10.5, 11.0], [1.0, 2.0, 1.0], voltage_v=[5.0] * 3, current_a=[0.2, 0.4, 0.2],
                  windows=[Window("a,b/op", 10.4, 10.6, 3, 0.25)], source="ina219", achieved_hz=2.0,
                  meta={"sensor": "INA219 at 0x40 on /dev/i2c-1"})
    write_trace(trace, tmp_path / "pi.csv")
    back = read_trace(tmp_path / "pi.csv")
    assert np.allclose(back.t_s, [0.0, 0.5, 1.0]) and np.allclose(back.current_a, trace.current_a)
    assert back.windows == [Window("a,b/op", pytest.approx(0.4), pytest.approx(0.6), 3, 0.25, None)]
    assert back.source == "ina219" and back.achieved_hz == 2.0 and back.meta["sensor"].endswith("i2c-1")
    assert ReplaySource(tmp_path / "pi.csv").label == "replay:pi.csv"


def test_relative_trace_paths_go_to_data_raw(tmp_path, monkeypatch):
    monkeypatch.setattr("pqlab.runners.power_traces.RAW", tmp_path / "raw")
    path = write_trace(Trace([0, 1], [1, 1]), "x.csv")
    assert path == tmp_path / "raw" / "x.csv" and read_trace("x.csv").power_w.tolist() == [1, 1]


def test_write_trace_is_atomic(tmp_path, monkeypatch):
    path = write_trace(Trace([0, 1], [1, 1]), tmp_path / "t.csv")
    before = path.read_text()

    def boom(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(pd.DataFrame, "to_csv", boom)
    with pytest.raises(OSError, match="disk full"):
        write_trace(Trace([0, 1], [9, 9]), path)
    assert path.read_text() == before and [p.name for p in tmp_path.iterdir()] == ["t.csv"]


def test_read_trace_names_missing_columns(tmp_path):
    (tmp_path / "bad.csv").write_text("time,watts\n0,1\n")
    with pytest.raises(ValueError, match=r"no column\(s\) \['power_w', 't_s'\]"):
        read_trace(tmp_path / "bad.csv")


def test_energy_result_gross_and_flag():
    r = EnergyResult(10.0, 1000.0, 3.0, 2.0, 4, 1, "ina219")
    assert r.gross_energy_uj == pytest.approx(3.0) and r.flag == ""
    assert Mark(1.0).counters_uj == ()


def test_smbus2_is_imported_lazily(monkeypatch):
    code = "import sys, pqlab.runners.energy; assert 'smbus2' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(energy.__file__).parents[2])
    monkeypatch.setitem(sys.modules, "smbus2", None)  # as if not installed
    with pytest.raises(PowerSourceError, match=r"smbus2 is not installed: pip install 'pqlab\[pi\]'"):
        INA219(1)
