"""Core-cycle counting through Linux perf_event_open, with a clearly labelled fallback.

`perf_event_open` (PERF_TYPE_HARDWARE / PERF_COUNT_HW_CPU_CYCLES) counts the cycles the
calling thread spends in user space.  It works unprivileged with ``exclude_kernel=1``
(kernel counting needs root or a low ``perf_event_paranoid``), so kernel time -- system
calls, page faults -- is not in the count; the cycles_source label says so.

Where the counter cannot be opened (no PMU in the VM, a restrictive paranoid level, not
Linux), :func:`open_counter` returns a :class:`FrequencyEstimate`: cycles = elapsed time x
the nominal clock from /proc/cpuinfo, labelled ``estimate:time-x-<MHz>MHz``.  Every result
records which of the two produced its cycles.
"""
from __future__ import annotations

import ctypes
import os
import platform
import struct

PERF_TYPE_HARDWARE = 0
PERF_COUNT_HW_CPU_CYCLES = 0
_ATTR_SIZE = 128  # PERF_ATTR_SIZE_VER7 and later accept a zeroed tail
_EXCLUDE_KERNEL = 1 << 5
_EXCLUDE_HV = 1 << 6
_SYSCALL = {"x86_64": 298, "aarch64": 241, "arm64": 241}

HARDWARE_SOURCE = "perf_event_open:cpu-cycles:user"


class CycleCounter:
    """A running user-space cycle counter of the calling thread; `read()` returns its value."""

    source = HARDWARE_SOURCE
    hardware = True

    def __init__(self) -> None:
        nr = _SYSCALL.get(platform.machine())
        if nr is None or not hasattr(os, "read"):
            raise OSError(f"perf_event_open is not known on {platform.system()} {platform.machine()}")
        attr = ctypes.create_string_buffer(_ATTR_SIZE)
        struct.pack_into("IIQ", attr, 0, PERF_TYPE_HARDWARE, _ATTR_SIZE, PERF_COUNT_HW_CPU_CYCLES)
        struct.pack_into("Q", attr, 40, _EXCLUDE_KERNEL | _EXCLUDE_HV)
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        fd = libc.syscall(nr, attr, 0, -1, -1, 0)  # this thread, any CPU, no group, no flags
        if fd < 0:
            err = ctypes.get_errno()
            raise OSError(err, f"perf_event_open: {os.strerror(err)}")
        self.fd = fd
        if self.read() == 0 and self.read() == 0:
            self.close()
            raise OSError("perf_event_open opened, but the cycle counter does not count (no PMU exposed?)")

    def read(self) -> int:
        return struct.unpack("q", os.read(self.fd, 8))[0]

    def close(self) -> None:
        if getattr(self, "fd", -1) >= 0:
            os.close(self.fd)
            self.fd = -1

    def __del__(self) -> None:
        self.close()


class FrequencyEstimate:
    """Fallback: no counter; cycles are estimated from time x the nominal clock."""

    hardware = False

    def __init__(self, reason: str) -> None:
        self.reason = reason
        self.mhz = nominal_mhz()
        self.source = f"estimate:time-x-{self.mhz:.0f}MHz" if self.mhz else ""

    def read(self) -> int:
        return 0

    def estimate(self, time_ns: float) -> float | None:
        return time_ns * self.mhz / 1000.0 if self.mhz else None


def nominal_mhz() -> float | None:
    """The clock /proc/cpuinfo reports (first CPU), in MHz, or None."""
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.lower().startswith("cpu mhz"):
                    return float(line.split(":")[1])
    except (OSError, ValueError):
        pass
    return None


def open_counter() -> CycleCounter | FrequencyEstimate:
    """The hardware cycle counter when it works here, else the labelled estimate (with its reason)."""
    try:
        return CycleCounter()
    except OSError as exc:
        return FrequencyEstimate(str(exc))


#: Counter labels of schema 1 (results written before the label vocabulary) -> today's labels.
LEGACY_SOURCES = {"perf_event_open:cpu-cycles:user": "core-cycles"}
