"""Cycle counters, each with a fixed label: the one vocabulary of ``cycles_source``.

=============  ==========================================================================
label          what a count is
=============  ==========================================================================
core-cycles    cycles the core spent in user space on this thread: Linux perf_event_open
               (PERF_COUNT_HW_CPU_CYCLES, exclude_kernel, exclude_hv).  Needs a PMU; many
               virtual machines have none ("PMU not available due to virtualization").
tsc            reference cycles: the x86 time-stamp counter (RDTSC) or the aarch64 generic
               timer (CNTVCT_EL0), ticking at a fixed rate (``hz``) whatever the core clock
               does.  What liboqs's speed tools and SUPERCOP report on x86.  Counts wall time,
               other processes and the kernel included, so it is time in another unit.
none           no counter: cycles stay empty and rows carry ``no-cycles:<why>``.
=============  ==========================================================================

Nothing computed from the MHz in /proc/cpuinfo is ever called cycles.

``PQLAB_COUNTER=auto|perf|tsc|none`` chooses (default ``auto``: core cycles where perf_event
works, else the TSC, else none).  A forced counter that is unavailable raises
:class:`CounterUnavailable` with a one-line reason before anything is measured.

The TSC is read through a small C helper (``pqlab/measure/tsc.c``, sharing ``pqlab/measure/tsc.h`` with the
native runner) that `make setup`, or the first use, compiles with the machine's C compiler into
``$XDG_CACHE_HOME/pqlab`` (default ``~/.cache/pqlab``) and ctypes loads: no Rust or liboqs build
needed, so conda users get it too.  The sha256 recorded when it was compiled is checked before every load
(:mod:`pqlab.core.integrity`): a helper that was truncated or replaced is compiled again, with one line saying
so, and never reaches the loader.  Its rate comes from the kernel where known (sysfs
``tsc_freq_khz``, else the kernel log's "tsc: Detected/Refined ... MHz"), from CNTFRQ_EL0 on
aarch64, else it is calibrated against ``time.perf_counter_ns`` over :data:`CALIBRATION_S`;
``hz_source`` says which.  Opening a counter measures what one read costs from Python
(``read_cost_ns``, ``read_cost_ticks``); that cost goes into every run's metadata.
"""
from __future__ import annotations

import ctypes
import errno
import fcntl
import hashlib
import os
import platform
import re
import shutil
import struct
import subprocess
import time
from difflib import get_close_matches
from pathlib import Path

from pqlab.core import integrity
from pqlab.core.errors import warn
from pqlab.core.integrity import elf_problem
from pqlab.core.schema import convert_unit

#: The labels (values of the ``cycles_source`` column).
CORE_CYCLES, TSC, NONE = "core-cycles", "tsc", "none"
LABELS = (CORE_CYCLES, TSC, NONE)
#: What PQLAB_COUNTER accepts, and the label each forces.
CHOICES = {"auto": None, "perf": CORE_CYCLES, "tsc": TSC, "none": NONE}
ENV = "PQLAB_COUNTER"
#: Interval of the TSC calibration against perf_counter_ns, where the kernel does not state the rate.
CALIBRATION_S = 0.2
#: Reads timed back to back to price one read, in blocks (the median block counts).
COST_READS, COST_BLOCKS = 22_000, 11

PERF_TYPE_HARDWARE = 0
PERF_COUNT_HW_CPU_CYCLES = 0
_ATTR_SIZE = 128  # PERF_ATTR_SIZE_VER7 and later accept a zeroed tail
_EXCLUDE_KERNEL = 1 << 5
_EXCLUDE_HV = 1 << 6
_SYSCALL = {"x86_64": 298, "aarch64": 241, "arm64": 241}
_TSC_ARCH = {"x86_64": "rdtsc", "amd64": "rdtsc", "aarch64": "cntvct_el0", "arm64": "cntvct_el0"}
_SOURCES = [Path(__file__).with_name("tsc.c"), Path(__file__).with_name("tsc.h")]
#: Where some kernels state the TSC rate.
TSC_KHZ = Path("/sys/devices/system/cpu/cpu0/tsc_freq_khz")


class CounterUnavailable(RuntimeError):
    """A counter forced with PQLAB_COUNTER (or asked for by name) cannot be used here."""

    def _render_traceback_(self) -> list[str]:  # IPython (notebooks): the one line, no traceback
        return [f"{type(self).__name__}: {self}"]


def ghz(hz: float) -> float:
    """A rate in Hz (ticks per second) in GHz."""
    return convert_unit(hz, "Hz", "GHz")


def describe(label: str, hz: float | None = None) -> str:
    """How tables, axes and sentences name a counter's unit ("TSC reference cycles at 2.45 GHz")."""
    if label == CORE_CYCLES:
        return "core cycles"
    if label == TSC:
        return f"TSC reference cycles at {ghz(hz):.2f} GHz" if hz else "TSC reference cycles"
    return "no cycle counter"


def per_call(counter: dict) -> str:
    """What the ratios of this notebook divide: "mean TSC reference cycles at 2.45 GHz per call"."""
    return "mean time per call" if counter["basis"] == "time_ns" else f"mean {counter['unit']} per call"


class Counter:
    """A cycle counter: `read()` returns its value now (an int); `describe()` its metadata."""

    label = NONE
    hz: float | None = None  # ticks per second, where fixed (tsc)
    hz_source = ""
    reason = ""  # why this counter and not a better one (auto), or why none
    read_cost_ns: float | None = None
    read_cost_ticks: float | None = None

    def read(self) -> int:
        return 0

    def metadata(self) -> dict:
        return {"label": self.label, "unit": describe(self.label, self.hz), "hz": self.hz,
                "hz_source": self.hz_source, "read_cost_ns": self.read_cost_ns,
                "read_cost_ticks": self.read_cost_ticks, "reason": self.reason}

    def _price_reads(self) -> None:
        """The cost of one read through this object: the median over COST_BLOCKS blocks of back-to-back
        reads (a median, so that a block interrupted by another process does not set it)."""
        read, clock, n = self.read, time.perf_counter_ns, COST_READS // COST_BLOCKS
        ns, ticks = [], []
        for _ in range(COST_BLOCKS):
            t0, c0 = clock(), read()
            for _ in range(n):
                read()
            c1, t1 = read(), clock()
            ns.append((t1 - t0) / (n + 2))
            ticks.append((c1 - c0) / (n + 1))
        self.read_cost_ns = sorted(ns)[COST_BLOCKS // 2]
        self.read_cost_ticks = sorted(ticks)[COST_BLOCKS // 2]


class NoCounter(Counter):
    def __init__(self, reason: str) -> None:
        self.reason = reason


class PerfCounter(Counter):
    """User-space core cycles of the calling thread (perf_event_open); raises OSError where unavailable."""

    label = CORE_CYCLES
    hz_source = "not fixed: core cycles follow the core clock"

    def __init__(self) -> None:
        self.fd = -1
        self.fd = _perf_event_open()
        a = self.read()
        sum(range(20_000))
        if self.read() <= a:
            self.close()
            raise OSError(errno.ENODATA, "perf_event_open opened a cycle counter that does not count "
                                         "(the virtual PMU counts nothing)")
        self._price_reads()

    def read(self) -> int:
        return struct.unpack("q", os.read(self.fd, 8))[0]

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __del__(self) -> None:
        self.close()


def _perf_event_open() -> int:
    """A perf_event fd counting this thread's user-space core cycles, or OSError (with errno)."""
    nr = _SYSCALL.get(platform.machine())
    if nr is None or platform.system() != "Linux":
        raise OSError(errno.ENOSYS,
                      f"perf_event_open is not known on {platform.system()} {platform.machine()}")
    attr = ctypes.create_string_buffer(_ATTR_SIZE)
    struct.pack_into("IIQ", attr, 0, PERF_TYPE_HARDWARE, _ATTR_SIZE, PERF_COUNT_HW_CPU_CYCLES)
    struct.pack_into("Q", attr, 40, _EXCLUDE_KERNEL | _EXCLUDE_HV)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    fd = libc.syscall(nr, attr, 0, -1, -1, 0)  # this thread, any CPU, no group, no flags
    if fd < 0:
        err = ctypes.get_errno()
        hint = " (no PMU: typical of virtual machines)" if err == errno.ENOENT else (
            " (perf_event_paranoid forbids it)" if err in (errno.EACCES, errno.EPERM) else "")
        raise OSError(err, f"perf_event_open: {os.strerror(err)} [{errno.errorcode.get(err, err)}]{hint}")
    return fd


# --------------------------------------------------------------------------- TSC


def cache_dir() -> Path:
    """pqlab's per-user cache: $XDG_CACHE_HOME/pqlab, default ~/.cache/pqlab."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "pqlab"


def helper_path(sources: list[Path] | None = None, stem: str = "tsc") -> Path:
    """Where a helper built from `sources` (default the TSC helper's) for this architecture lives (built or
    not)."""
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in sources or _SOURCES)).hexdigest()[:16]
    return cache_dir() / f"{stem}-{platform.machine()}-{digest}.so"


def build_helper() -> Path:
    """The TSC helper, compiled with $CC (default cc) unless already cached; OSError says why not."""
    arch = platform.machine()
    if arch not in _TSC_ARCH:
        raise OSError(errno.ENOSYS,
                      f"no reference-cycle counter known on {arch} (pqlab reads rdtsc on x86-64 "
                      "and cntvct_el0 on aarch64)")
    return compile_helper(_SOURCES, "tsc", "the TSC helper")


def compile_helper(sources: list[Path], stem: str, what: str) -> Path:
    """A shared library from C `sources` (the first is compiled, the rest are its headers), compiled with $CC
    (default cc) into pqlab's cache unless there already with the sha256 recorded when it was compiled (a
    helper that does not match is compiled again, with a warning saying why, one without a record silently);
    OSError says why not."""

    path = helper_path(sources, stem)
    if not integrity.problem(path):
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(f".{path.name}.lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one compile at a time: the helper and its sha256 stay a pair
        bad = integrity.problem(path)
        if not bad:  # another process compiled it while we waited
            return path
        # one compiled before sha256 records is compiled again without a word, unless it is not even a whole
        # file
        why = bad if integrity.recorded(path) else integrity.elf_problem(path) if path.exists() else ""
        if why:

            warn(f"{what} {path} {why}: compiling it again")
        cc = os.environ.get("CC") or "cc"
        if shutil.which(cc) is None:
            raise OSError(errno.ENOENT, f"no C compiler ({cc}) to build {what}: install one "
                                        "(apt-get install gcc, or conda install -c conda-forge c-compiler)")
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        proc = subprocess.run([cc, "-O2", "-shared", "-fPIC", "-o", str(tmp), str(sources[0])],
                              capture_output=True, text=True, timeout=120)
        if proc.returncode != 0:
            tmp.unlink(missing_ok=True)
            why = " ".join((proc.stderr or proc.stdout).split())[:300]
            raise OSError(errno.EINVAL, f"{cc} could not build {what}: {why}")
        os.replace(tmp, path)
        integrity.record(path)
    return path


def load_helper(path: Path, symbols: tuple[str, ...], what: str) -> ctypes.CDLL:
    """ctypes' handle of a helper of :func:`compile_helper`, checked as a whole ELF file before it is loaded
    and for its `symbols` after; OSError (one line) otherwise."""

    bad = elf_problem(path)
    if bad:
        raise OSError(errno.EINVAL, f"{what} {path} {bad}: delete it and run again")
    lib = ctypes.CDLL(str(path))
    missing = [name for name in symbols if not hasattr(lib, name)]
    if missing:
        raise OSError(errno.EINVAL, f"{what} {path} lacks {', '.join(missing)}: delete it and run again")
    return lib


def _load_helper():
    names = ("pqlab_tsc_read", "pqlab_tsc_hz", "pqlab_tsc_span")
    lib = load_helper(build_helper(), (*names, "pqlab_tsc_name"), "the TSC helper")
    for name in names:
        getattr(lib, name).restype = ctypes.c_uint64
    lib.pqlab_tsc_span.argtypes = [ctypes.c_uint64]
    lib.pqlab_tsc_name.restype = ctypes.c_char_p
    return lib


class TscCounter(Counter):
    """Reference cycles (rdtsc / cntvct_el0) through the C helper; raises OSError where unavailable."""

    label = TSC

    def __init__(self) -> None:
        lib = _load_helper()
        self.instruction = lib.pqlab_tsc_name().decode()
        self.read = lib.pqlab_tsc_read
        a = self.read()
        time.sleep(0.001)
        if self.read() <= a:
            raise OSError(errno.ENODATA, f"{self.instruction} does not advance here")
        self.hz, self.hz_source = tsc_frequency(lib.pqlab_tsc_hz(), self.read)
        self._price_reads()
        self.read_cost_ticks_in_c = lib.pqlab_tsc_span(100_000) / 100_000

    def metadata(self) -> dict:
        return dict(super().metadata(), instruction=self.instruction,
                    read_cost_ticks_in_c=self.read_cost_ticks_in_c)


_KERNEL_TSC = re.compile(r"tsc: (?:Refined TSC clocksource calibration: |Detected )([0-9.]+) MHz")


def kernel_log_tsc_mhz(text: str) -> float | None:
    """The TSC rate the kernel log states (the last "Refined" or "Detected" line), in MHz."""
    found = _KERNEL_TSC.findall(text)
    return float(found[-1]) if found else None


def _kernel_log() -> tuple[str, str]:
    """(text, where from) of the kernel log, from the first of dmesg and journalctl -k that answers."""
    for cmd in (["dmesg"], ["journalctl", "-k", "-b", "0", "-q", "--no-pager", "-o", "cat"]):
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.SubprocessError):
            continue
        if proc.returncode == 0 and proc.stdout:
            return proc.stdout, cmd[0]
    return "", ""


def tsc_frequency(register_hz: int, read) -> tuple[float, str]:
    """(Hz, how it was obtained): the hardware register, the kernel, else a calibration."""
    if register_hz:
        return float(register_hz), "CNTFRQ_EL0 (the generic timer's stated rate)"
    try:
        return convert_unit(float(TSC_KHZ.read_text()), "kHz", "Hz"), f"kernel: {TSC_KHZ}"
    except (OSError, ValueError):
        pass
    text, where = _kernel_log()
    mhz = kernel_log_tsc_mhz(text)
    if mhz:
        return convert_unit(mhz, "MHz", "Hz"), f"kernel log ({where}): tsc {mhz} MHz"
    return calibrate(read, CALIBRATION_S), ("calibrated against time.perf_counter_ns over "
                                            f"{convert_unit(CALIBRATION_S, 's', 'ms'):.0f} ms")


def calibrate(read, seconds: float) -> float:
    """Ticks per second of `read` against perf_counter_ns over `seconds` (asleep in between)."""
    clock = time.perf_counter_ns
    t0, c0 = clock(), read()
    time.sleep(seconds)
    c1, t1 = read(), clock()
    return (c1 - c0) / convert_unit(t1 - t0, "ns", "s")


# --------------------------------------------------------------------------- choosing


def requested(value: str | None = None) -> str:
    """The counter asked for (`value`, else $PQLAB_COUNTER, else auto), checked."""
    value = (value if value is not None else os.environ.get(ENV, "")).strip().lower() or "auto"
    if value not in CHOICES:

        near = get_close_matches(value, list(CHOICES), n=1)
        hint = f" (did you mean {near[0]}?)" if near else ""
        raise CounterUnavailable(f"{ENV}={value!r} is not a counter{hint}: choose one of "
                                 f"{', '.join(CHOICES)}")
    return value


_MAKERS = {"perf": PerfCounter, "tsc": TscCounter}
_opened: dict[str, Counter | OSError] = {}


def _open(name: str) -> Counter:
    """The `name` ("perf" or "tsc") counter of this process, opened once; OSError (remembered) if
    unavailable."""
    if name not in _opened:
        try:
            _opened[name] = _MAKERS[name]()
        except OSError as exc:
            _opened[name] = exc
    got = _opened[name]
    if isinstance(got, OSError):
        raise got
    return got


def _why(exc: OSError) -> str:
    return exc.strerror or str(exc)


def counter(choice: str | None = None) -> Counter:
    """The counter `choice` (auto | perf | tsc | none; default $PQLAB_COUNTER, else auto) asks for.

    auto: core cycles, else the TSC, else none, with the reasons in ``reason``.  A forced counter
    that is unavailable raises :class:`CounterUnavailable` naming the reason and the way out.
    Counters are opened once per process and reused.
    """
    choice = requested(choice)
    if choice == "none":
        return NoCounter(f"{ENV}=none")
    if choice != "auto":
        try:
            found = _open(choice)
        except OSError as exc:
            other = "tsc" if choice == "perf" else "none"
            raise CounterUnavailable(f"{ENV}={choice}: {describe(CHOICES[choice])} are unavailable here: "
                                     f"{_why(exc)}; use {ENV}={other} or auto") from None
        found.reason = f"{ENV}={choice}"
        return found
    reasons = []
    for name in _MAKERS:
        try:
            found = _open(name)
        except OSError as exc:
            reasons.append(f"no {describe(CHOICES[name])}: {_why(exc)}")
            continue
        found.reason = "; ".join(reasons) or "auto"
        return found
    return NoCounter("; ".join(reasons))


def availability() -> dict:
    """Which counters work here ("perf", "tsc"), with their metadata, or why not (error, errno)."""
    out = {}
    for name in _MAKERS:
        try:
            out[name] = dict(_open(name).metadata(), available=True)
            out[name].pop("reason")
        except OSError as exc:
            out[name] = {"available": False, "error": _why(exc), "errno": errno.errorcode.get(exc.errno)}
    return out


def in_use() -> dict:
    """The counter measurements use (PQLAB_COUNTER), its metadata and why it was chosen; or the error."""
    try:
        return dict(counter().metadata(), requested=requested())
    except CounterUnavailable as exc:
        return {"label": None, "requested": os.environ.get(ENV, ""), "error": str(exc)}

