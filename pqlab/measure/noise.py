"""The machine's noise, measured in every round: what else ran, how much the hypervisor took, and whether the
machine's speed for scalar and for vector code moved.

Per round (:func:`snapshot` at its start and end, :func:`round_noise` between them):

* ``steal``: the share of CPU time the hypervisor gave to other guests (``/proc/stat``, all CPUs);
* ``others_cores``: the CPU time of every other process during the round, in cores (the machine's busy time
  from ``/proc/stat`` less this process's own ``getrusage`` time, over the round's wall time);
* ``ctxt``: context switches on the whole machine, and ``own_involuntary``: this process's involuntary ones;
* ``load1``: the 1-minute load average at the round's end (``/proc/loadavg``);
* ``mhz``: the mean current frequency of the CPUs where cpufreq exposes it.

What the machine does not report is recorded as None ("unknown"), never as zero.  A round is *busy*
(:func:`busy_reason`) when other processes used :data:`BUSY_OTHERS_CORES` cores or more, or steal reached
:data:`BUSY_STEAL`; its rows carry the flag ``busy``.  ``python -m pqlab machine`` and
``bench(quiet_only=True)`` look for :data:`QUIET_CHECK_S` before measuring (:func:`quiet_now`).

**The reference workload** (``pqlab/measure/reference_loops.c``, compiled like the TSC helper into pqlab's
cache): a fixed scalar loop (a dependent chain of integer multiply-adds) and a fixed vector loop (AVX2 16-bit
multiplies as in the NTTs of ML-KEM and ML-DSA, and FMAs; SSE2, NEON or plain C elsewhere), each a few
milliseconds, timed :data:`REFERENCE_REPEATS` times at the start and at the end of every round (the fastest
counts; the round's reading is the faster of its start and end).  A move of the host's speed for vector code
that leaves scalar code alone (seen on these KVM guests: liboqs's AVX2 rows 1.5x slower for minutes while
OpenSSL's scalar rows did not move) shows as a move of ``vector_ns`` alone.  :func:`reference_shifts` flags
each round whose reference is :data:`SHIFT_LIMIT` or more away from the run's median, and
:func:`compare_references` does the same between two runs; rows and ratios over such rounds carry
``reference-shift`` with its size.
"""
from __future__ import annotations

import ctypes
import os
import resource
import statistics
import time
from pathlib import Path

from pqlab.core.schema import convert_unit
from pqlab.measure.cycles import compile_helper

#: Other processes' CPU, in cores, from which a round is busy.
BUSY_OTHERS_CORES = 0.2
#: Steal share from which a round is busy.
BUSY_STEAL = 0.05
#: How long `quiet_now` watches the machine.
QUIET_CHECK_S = 1.0
#: Fixed iteration counts of the reference loops (a few ms each on a 2.5 GHz x86-64 core).
SCALAR_STEPS, VECTOR_STEPS = 1 << 20, 1 << 19
REFERENCE_REPEATS = 5
#: A reference that moved by this fraction or more from the run's median (or the other run's) is a shift.
#: Between fresh processes on a quiet 2-core KVM guest the loops' own spread (the fastest of 5, 20 processes)
#: was 2.3 % (scalar) and 7 % (vector) standard deviation, single processes up to 8 % and 28 % off: that
#: spread is real (it is what rounds are for), and this limit keeps a single ordinary round from being called
#: a shift.
SHIFT_LIMIT = 0.10
_SOURCES = [Path(__file__).with_name("reference_loops.c")]
_PROC_STAT, _LOADAVG = Path("/proc/stat"), Path("/proc/loadavg")
_CPUFREQ = Path("/sys/devices/system/cpu")
_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _proc_stat() -> dict | None:
    """The all-CPU line of /proc/stat in seconds (busy, idle, steal), each CPU's busy seconds (``cores``) and
    ctxt; None where unreadable."""
    try:
        lines = _PROC_STAT.read_text().splitlines()
    except OSError:
        return None
    out: dict = {"cores": {}}
    for line in lines:
        parts = line.split()
        if parts and parts[0].startswith("cpu"):
            v = [int(x) for x in parts[1:]] + [0] * 8
            user, nice, system, idle, iowait, irq, softirq, steal = v[:8]
            busy = (user + nice + system + irq + softirq) / _TICK
            if parts[0] == "cpu":
                out.update(busy=busy, idle=(idle + iowait) / _TICK, steal=steal / _TICK,
                           steal_known=len(parts) > 8)
            elif parts[0][3:].isdigit():
                out["cores"][int(parts[0][3:])] = busy
        elif parts and parts[0] == "ctxt":
            out["ctxt"] = int(parts[1])
    return out if "busy" in out else None


def _load1() -> float | None:
    try:
        return float(_LOADAVG.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _mhz() -> float | None:
    values = []
    for f in _CPUFREQ.glob("cpu[0-9]*/cpufreq/scaling_cur_freq"):
        try:
            values.append(convert_unit(int(f.read_text()), "kHz", "MHz"))
        except (OSError, ValueError):
            pass
    return statistics.fmean(values) if values else None


#: The scheduler priority a measuring process asks for (a nice value; lower runs first).  Only a user with the
#: right (root, or RLIMIT_NICE) gets it; anyone else keeps their own, and the round records which.
NICE = -5
#: How long :func:`protect` watches the CPUs to find the least busy one.
PICK_S = 0.05


def _affinity() -> set[int]:
    try:
        return set(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return set()


def protect(pin: bool = True) -> dict:
    """Protect this (measuring) process from a normal background load without changing the machine: pin it to
    the CPU that was least busy over the last :data:`PICK_S` seconds (among those it may use: other work then
    keeps the others and this process is not migrated between caches mid-sample), and raise its scheduler
    priority to :data:`NICE` as far as the user's rights go.  Returns what was used, for the round's record:
    ``{"cpu": n or None, "nice": the value in force, "nice_asked": NICE, "refused": why, where something
    was}``."""
    used: dict = {"cpu": None, "nice_asked": NICE, "refused": []}
    cpus = _affinity()
    if pin and len(cpus) > 1:
        a = _proc_stat()
        time.sleep(PICK_S)
        b = _proc_stat()
        if a and b:
            load = {c: b["cores"].get(c, 0.0) - a["cores"].get(c, 0.0) for c in cpus}
            best = min(sorted(load), key=load.get)
            try:
                os.sched_setaffinity(0, {best})
                used["cpu"] = best
            except OSError as exc:
                used["refused"].append(f"affinity: {exc.strerror}")
    elif len(cpus) == 1:
        used["cpu"] = next(iter(cpus))
    try:
        if os.getpriority(os.PRIO_PROCESS, 0) > NICE:
            os.setpriority(os.PRIO_PROCESS, 0, NICE)
    except (AttributeError, OSError) as exc:
        used["refused"].append(f"priority: {getattr(exc, 'strerror', exc)}")
    try:
        used["nice"] = os.getpriority(os.PRIO_PROCESS, 0)
    except (AttributeError, OSError):
        used["nice"] = None
    used["refused"] = "; ".join(used["refused"])
    return used


def snapshot() -> dict:
    """The counters :func:`round_noise` compares: /proc/stat, this process's CPU time and switches, the clock.
    Its own CPU time includes its finished children's: a runner it waited for (the native C runner, a JVM) is
    the measurement, not another process."""
    ru, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    cpus = _affinity()
    return {"t": time.monotonic(), "stat": _proc_stat(),
            "own_cpu": ru.ru_utime + ru.ru_stime + kids.ru_utime + kids.ru_stime,
            "own_involuntary": ru.ru_nivcsw, "mhz": _mhz(),
            "cpu": next(iter(cpus)) if len(cpus) == 1 else None}


def round_noise(before: dict, after: dict) -> dict:
    """What the machine did between two snapshots (see the module's docstring); None where unknown."""
    wall = max(after["t"] - before["t"], 1e-9)
    a, b = before["stat"], after["stat"]
    out = {"wall_s": wall, "steal": None, "others_cores": None, "ctxt": None,
           "own_involuntary": after["own_involuntary"] - before["own_involuntary"], "load1": _load1(),
           "mhz": after["mhz"]}
    if a and b:
        total = (b["busy"] - a["busy"]) + (b["idle"] - a["idle"]) + (b["steal"] - a["steal"])
        if b["steal_known"] and total > 0:
            out["steal"] = (b["steal"] - a["steal"]) / total
        own = after["own_cpu"] - before["own_cpu"]
        out["others_cores"] = max(0.0, (b["busy"] - a["busy"]) - own) / wall
        pinned = after.get("cpu")
        # where the other work ran: each CPU's busy share, ours less our own
        if a.get("cores") and b.get("cores"):
            out["others_by_core"] = {str(c): round(max(0.0, b["cores"][c] - a["cores"].get(c, 0.0)
                                                       - (own if c == pinned else 0.0)) / wall, 3)
                                     for c in sorted(b["cores"])}
            if pinned is not None:
                out["cpu"] = pinned
        if "ctxt" in a and "ctxt" in b:
            out["ctxt"] = b["ctxt"] - a["ctxt"]
    return out


def busy_reason(noise: dict) -> str:
    """Why a round with this noise is busy ("" when it is not, or nothing is known), graded: how many cores
    other work used, and where the round was pinned to one CPU (:func:`protect`), how much of that CPU it
    shared."""
    parts = []
    if noise.get("others_cores") is not None and noise["others_cores"] >= BUSY_OTHERS_CORES:
        where = ""
        by_core, pinned = noise.get("others_by_core") or {}, noise.get("cpu")
        if by_core and pinned is not None and str(pinned) in by_core:
            where = f" ({by_core[str(pinned)]:.2f} of them on the measuring CPU {pinned})"
        parts.append(f"other processes used {noise['others_cores']:.2f} cores{where}")
    if noise.get("steal") is not None and noise["steal"] >= BUSY_STEAL:
        parts.append(f"steal {noise['steal']:.1%}")
    return ", ".join(parts)


def describe_busy(records: list[dict]) -> str:
    """How busy the busy rounds of `records` were, graded, as a clause for a row's flag: the mean cores other
    processes used and, where the rounds were pinned (:func:`protect`), the mean share of the measuring CPU
    they took (what slows a measurement; the rest ran beside it): ", other work 1.02 cores, 0.03 on the
    measuring CPU"."""
    others = [r["others_cores"] for r in records if r.get("others_cores") is not None]
    if not others:
        return ""
    mine = [(r.get("others_by_core") or {}).get(str(r.get("cpu"))) for r in records
            if r.get("cpu") is not None]
    mine = [x for x in mine if x is not None]
    return (f", other work {statistics.fmean(others):.2f} cores"
            + (f", {statistics.fmean(mine):.2f} on the measuring CPU" if mine else ""))


def quiet_now(seconds: float = QUIET_CHECK_S) -> tuple[bool, str, dict]:
    """Whether the machine is quiet right now: (quiet, one line saying why or why not, the noise seen) after
    watching it for `seconds` while this process sleeps."""
    before = snapshot()
    time.sleep(seconds)
    noise = round_noise(before, snapshot())
    reason = busy_reason(noise)
    if noise["others_cores"] is None:
        return True, f"unknown: /proc/stat is not readable here, so pqlab cannot tell ({_PROC_STAT})", noise
    if reason:
        return False, f"busy: {reason} over {seconds:g} s", noise
    steal = "unknown" if noise["steal"] is None else f"{noise['steal']:.1%}"
    return True, (f"quiet: other processes used {noise['others_cores']:.2f} cores, steal {steal} over "
                  f"{seconds:g} s"), noise


# --------------------------------------------------------------------------- the reference workload

_LIB = None


def _library():
    """The reference loops' library (compiled on first use), or an OSError saying why not."""
    global _LIB
    if _LIB is None:

        lib = ctypes.CDLL(str(compile_helper(_SOURCES, "reference", "the reference workload")))
        for name in ("pqlab_ref_scalar", "pqlab_ref_vector"):
            getattr(lib, name).restype = ctypes.c_uint64
            getattr(lib, name).argtypes = [ctypes.c_uint64]
        lib.pqlab_ref_vector_isa.restype = ctypes.c_char_p
        _LIB = lib
    return _LIB


def reference_available() -> str:
    """"" when the reference workload runs here, else why not (one line)."""
    try:
        _library()
    except OSError as exc:
        return str(exc.strerror or exc)
    return ""


def vector_isa() -> str:
    return _library().pqlab_ref_vector_isa().decode()


def _time_loop(fn, steps: int) -> float:
    clock = time.perf_counter_ns
    times = []
    for _ in range(REFERENCE_REPEATS):
        t0 = clock()
        fn(steps)
        times.append(clock() - t0)
    return float(min(times))  # the machine's speed: an interrupt only ever adds


def reference_times() -> dict:
    """The reference loops timed now: ``{"scalar_ns", "vector_ns"}`` (the fastest of
    :data:`REFERENCE_REPEATS`), or both None where the loops cannot be built here."""
    try:
        lib = _library()
    except OSError:
        return {"scalar_ns": None, "vector_ns": None}
    return {"scalar_ns": _time_loop(lib.pqlab_ref_scalar, SCALAR_STEPS),
            "vector_ns": _time_loop(lib.pqlab_ref_vector, VECTOR_STEPS)}


KINDS = ("scalar", "vector")


def round_record(round_index: int, before: dict, start: dict) -> dict:
    """A round's record at its end: the noise since `before` (:func:`snapshot`), the reference loops at its
    start (`start`, :func:`reference_times`) and now (the round's reading is the faster of the two: an
    interrupt only adds), and whether it was busy."""
    end = reference_times()
    record = {"round": round_index, "pid": os.getpid(), **round_noise(before, snapshot())}
    for kind in KINDS:
        a, b = start[f"{kind}_ns"], end[f"{kind}_ns"]
        record.update({f"{kind}_start_ns": a, f"{kind}_end_ns": b,
                       f"{kind}_ns": min(a, b) if a and b else None})
    record["busy"] = busy_reason(record)
    return record


def reference_shifts(rounds: list[dict], limit: float = SHIFT_LIMIT) -> dict[int, str]:
    """{round: description} of the rounds whose reference moved by `limit` or more from the run's median.

    `rounds`: one dict per round with ``round`` and ``scalar_ns``/``vector_ns`` (the faster of the start and
    end timings; None where unknown).  The description names the kind and the size, e.g. ``"vector +48%"``."""
    medians = {}
    for kind in KINDS:
        values = [r[f"{kind}_ns"] for r in rounds if r.get(f"{kind}_ns")]
        medians[kind] = statistics.median(values) if values else None
    out = {}
    for r in rounds:
        moved = []
        for kind in KINDS:
            v, m = r.get(f"{kind}_ns"), medians[kind]
            if v and m and abs(v / m - 1) >= limit:
                moved.append(f"{kind} {v / m - 1:+.0%}")
        if moved:
            out[int(r["round"])] = ", ".join(moved)
    return out


def run_reference(meta: dict) -> dict:
    """A run's reference: the median over its rounds of each kind's time (None where unknown)."""
    rounds = meta.get("round_noise") or []
    out = {}
    for kind in KINDS:
        values = [r[f"{kind}_ns"] for r in rounds if r.get(f"{kind}_ns")]
        out[f"{kind}_ns"] = statistics.median(values) if values else None
    return out


def compare_references(a: dict, b: dict, limit: float = SHIFT_LIMIT) -> str:
    """How run b's reference moved from run a's (``"vector +48%"``), "" when neither kind moved by `limit`."""
    ra, rb = run_reference(a), run_reference(b)
    moved = [f"{kind} {rb[f'{kind}_ns'] / ra[f'{kind}_ns'] - 1:+.0%}" for kind in KINDS
             if ra[f"{kind}_ns"] and rb[f"{kind}_ns"]
             and abs(rb[f"{kind}_ns"] / ra[f"{kind}_ns"] - 1) >= limit]
    return ", ".join(moved)


def describe_noise(meta: dict) -> str:
    """One sentence on the noise a run's rounds saw (for run contexts): rounds, busy ones, steal, others' CPU,
    the reference's spread and shifts."""
    rounds = meta.get("round_noise") or []
    if not rounds:
        return "no rounds recorded (a run made before rounds, or by a runner that cannot do them)"

    def span(key, fmt):
        values = [r[key] for r in rounds if r.get(key) is not None]
        return "unknown" if not values else f"{fmt(min(values))}–{fmt(max(values))}"

    def ms(v):
        return f"{convert_unit(v, 'ns', 'ms'):.2f}"

    busy = [r for r in rounds if r.get("busy")]
    shifts = [f"round {r['round']} {r['reference_shift']}" for r in rounds if r.get("reference_shift")]
    text = (f"{len(rounds)} rounds, {len(busy)} busy; steal {span('steal', lambda v: f'{v:.1%}')}, other "
            f"processes {span('others_cores', lambda v: f'{v:.2f}')} cores; reference loops scalar "
            f"{span('scalar_ns', ms)} ms, vector {span('vector_ns', ms)} ms")
    text += "; reference shifts: " + "; ".join(shifts) if shifts else "; no reference shift"
    return text + describe_protection(rounds)


def describe_protection(rounds: list[dict]) -> str:
    """What the rounds' workers did to protect their measurement (:func:`protect`), as a clause ("" where they
    recorded nothing: runs made before it, or rounds made in the caller's process)."""
    got = [r["protection"] for r in rounds if isinstance(r.get("protection"), dict)]
    if not got:
        return ""
    cpus = sorted({p["cpu"] for p in got if p.get("cpu") is not None})
    nices = sorted({p["nice"] for p in got if p.get("nice") is not None})
    refused = sorted({p["refused"] for p in got if p.get("refused")})
    return (f"; workers pinned to CPU {', '.join(map(str, cpus)) or 'none'} at nice "
            f"{', '.join(map(str, nices)) or '?'}" + (f" (refused: {'; '.join(refused)})" if refused else ""))
