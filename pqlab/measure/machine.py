"""Metadata of the machine and environment a run measured on (a run's .meta.json)."""
from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import platform
import re
import socket
import subprocess
import sys
from pathlib import Path

from pqlab.core.errors import BadInput
from pqlab.core.paths import ROOT
from pqlab.core.vocabulary import BACKENDS
from pqlab.liboqs.loader import liboqs_info, library_problem
from pqlab.measure.cycles import availability, describe, ghz, in_use

#: CPU flags that say whether the x86 TSC ticks at one fixed rate (constant_tsc), also in deep
#: idle states (nonstop_tsc), at a rate the kernel knows without calibrating (tsc_known_freq).
TSC_FLAGS = ("constant_tsc", "nonstop_tsc", "tsc_known_freq")
PACKAGES = tuple(p for b in BACKENDS for p in b.packages) + ("numpy", "pandas", "matplotlib")


def _read(path: str) -> str:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return ""


def cpu() -> dict:
    info = {"model": "", "flags_avx2": False, "flags_avx512f": False, "mhz_reported": None}
    text = _read("/proc/cpuinfo")
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key, value = key.strip().lower(), value.strip()
        if key == "model name" and not info["model"]:
            info["model"] = value
        elif key == "cpu mhz" and info["mhz_reported"] is None:
            info["mhz_reported"] = float(value)
        elif key == "flags" and not info.get("_flags"):
            flags = set(value.split())
            info["_flags"] = True
            info["flags_avx2"], info["flags_avx512f"] = "avx2" in flags, "avx512f" in flags
            info["hypervisor_flag"] = "hypervisor" in flags
            info["tsc_flags"] = {f: f in flags for f in TSC_FLAGS}
    info.pop("_flags", None)
    info["model"] = info["model"] or platform.processor()
    info["logical_cores"] = os.cpu_count()
    info["usable_cores"] = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    return info


def frequency() -> dict:
    """Governor, scaling limits and boost state where the kernel exposes them; why not, where not."""
    base = "/sys/devices/system/cpu/cpu0/cpufreq"
    if not Path(base).exists():
        return {"available": False,
                "reason": f"{base} does not exist (no cpufreq: typical of virtual machines)"}
    out = {"available": True}
    for name in ("scaling_governor", "scaling_min_freq", "scaling_max_freq", "cpuinfo_max_freq",
                 "scaling_driver"):
        out[name] = _read(f"{base}/{name}")
    out["boost"] = _read("/sys/devices/system/cpu/cpufreq/boost") or _read(
        "/sys/devices/system/cpu/intel_pstate/no_turbo").replace("1", "off (no_turbo=1)").replace("0", "on")
    return out


def hypervisor() -> str:
    """The virtual machine's hypervisor ("kvm"), and the container around us if any ("kvm, in docker")."""
    vendor = _read("/sys/hypervisor/type") or _read("/sys/class/dmi/id/sys_vendor")

    def detect(flag: str) -> str:
        try:
            out = subprocess.run(["systemd-detect-virt", flag], capture_output=True, text=True, timeout=5)
        except (OSError, subprocess.SubprocessError):
            return ""
        return out.stdout.strip() if out.returncode == 0 else ""

    vm = detect("--vm") or vendor or ("unnamed (cpu flag 'hypervisor')" if cpu().get("hypervisor_flag")
                                      else "")
    container = detect("--container")
    return f"{vm or 'none'}, in {container}" if container else vm


def git_state() -> dict:
    def git(*args):
        return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, timeout=10)

    try:
        head = git("rev-parse", "HEAD")
        if head.returncode != 0:
            return {"commit": "", "dirty": None, "reason": head.stderr.strip()[:200]}
        # the notebooks' nbstripout filter (.gitattributes) is not run: a file compares as it is, in
        # milliseconds (through the filter, a status after notebooks were written ran it per notebook, past
        # the timeout)
        dirty = git("-c", "filter.nbstripout.clean=cat", "status", "--porcelain",
                    "--untracked-files=no").stdout.strip() != ""
        return {"commit": head.stdout.strip(), "dirty": dirty}
    except (OSError, subprocess.SubprocessError) as exc:
        return {"commit": "", "dirty": None, "reason": str(exc)}


def package_versions() -> dict:
    out = {}
    for name in PACKAGES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = ""
    return out


def params_hash(params: dict) -> str:
    blob = json.dumps(params, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


#: the environment variable that sets a machine identity by hand (see :func:`machine_id`)
ID_OVERRIDE = "PQLAB_MACHINE_ID"
#: The longest machine id (it names a folder of the results store).
MAX_ID = 80
_SAFE_ID = re.compile(rf"[A-Za-z0-9][A-Za-z0-9._+-]{{0,{MAX_ID - 1}}}")


def host_id() -> str:
    """A stable short id of this host (hostname + CPU model), whatever identity runs are recorded under."""
    return hashlib.sha256(f"{socket.gethostname()}|{cpu()['model']}".encode()).hexdigest()[:12]


def check_machine_id(value: str, where: str = ID_OVERRIDE) -> str:
    """`value` when it is a usable machine id (it names a folder of the results store), else a one-line
    error."""
    if not isinstance(value, str) or not _SAFE_ID.fullmatch(value):
        raise BadInput(f"{where}={value!r} is not a usable machine id: use 1 to {MAX_ID} letters, digits, "
                       "'.', '_', '+' or '-', starting with a letter or digit (for example 'pi4-lab')")
    return value


def machine_id() -> str:
    """The id runs are recorded under, for merging runs from several machines: :func:`host_id`, unless the
    environment sets PQLAB_MACHINE_ID (an override, recorded as such by :func:`collect`)."""
    override = os.environ.get(ID_OVERRIDE)
    return check_machine_id(override) if override is not None else host_id()


def identity() -> dict:
    """Which id runs are recorded under and why: ``{"machine_id", "host_id", "override"}``; `override` is the
    PQLAB_MACHINE_ID value, or None when the id is this host's own."""
    mid, host = machine_id(), host_id()
    return {"machine_id": mid, "host_id": host, "override": os.environ.get(ID_OVERRIDE)}


def counters() -> dict:
    """The cycle counters here: core cycles (perf_event: works? errno), perf_event_paranoid, the TSC
    (flags, rate and how it was known, cost of a read) and the hypervisor."""

    out = availability()
    out["perf_event_paranoid"] = _read("/proc/sys/kernel/perf_event_paranoid")
    out["tsc"]["flags"] = cpu().get("tsc_flags", {})
    out["hypervisor"] = hypervisor()
    return out


def collect(params: dict | None = None, liboqs: bool = True) -> dict:
    """Everything a reader needs to judge where a number came from."""

    ident = identity()
    meta = {
        "machine_id": ident["machine_id"],
        "machine_id_override": ident["override"] and {"variable": ID_OVERRIDE, "value": ident["override"],
                                                      "host_id": ident["host_id"]},
        "hostname": socket.gethostname(),
        "arch": platform.machine(),
        "cpu": cpu(),
        "frequency": frequency(),
        "hypervisor": hypervisor(),
        "kernel": platform.release(),
        "os": platform.platform(),
        "python": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "packages": package_versions(),
        "counter": in_use(),
        "counters": counters(),
        "git": git_state(),
        "params": params or {},
        "params_hash": params_hash(params or {}),
        "profile": os.environ.get("PQLAB_PROFILE") or None,  # make reproduce PROFILE=...
    }
    if liboqs:

        problem = "" if "oqs" in sys.modules else library_problem()  # loaded: it was checked then
        meta["liboqs"] = {"available": False, "reason": problem} if problem else liboqs_info()
    try:
        from cryptography.hazmat.backends.openssl.backend import backend

        meta["openssl"] = backend.openssl_version_text()
    except Exception as exc:  # noqa: BLE001
        meta["openssl"] = f"unavailable: {exc}"
    return meta


def counter_report(info: dict | None = None, freq: dict | None = None, used: dict | None = None) -> str:
    """One screen on the cycle counters here and what a cycle table measured here is worth."""

    info = info or counters()
    freq = freq or frequency()
    used = used or in_use()
    perf, tsc = info["perf"], info["tsc"]

    def yes(v) -> str:
        return "yes" if v else "no"

    lines = [f"cycle counters here (hypervisor: {info['hypervisor'] or 'none detected'})", ""]
    if perf["available"]:
        lines.append(f"core cycles   available (perf_event_open, user space); one read costs "
                     f"{perf['read_cost_ns']:.0f} ns from Python")
    else:
        lines.append(f"core cycles   unavailable: {perf['error']}")
    lines.append(f"              perf_event_paranoid = {info['perf_event_paranoid'] or 'unknown'}")
    if tsc["available"]:
        lines.append(f"TSC           available ({tsc['instruction']}): {ghz(tsc['hz']):.4f} GHz, "
                     f"from {tsc['hz_source']}")
        lines.append(f"              one read costs {tsc['read_cost_ns']:.0f} ns = "
                     f"{tsc['read_cost_ticks']:.0f} ticks from Python, {tsc['read_cost_ticks_in_c']:.0f} "
                     "ticks inside C")
    else:
        lines.append(f"TSC           unavailable: {tsc['error']}")
    flags = tsc.get("flags") or {}
    if flags:
        lines.append("              " + ", ".join(f"{k} {yes(v)}" for k, v in flags.items()))
    if freq.get("available"):
        lines.append(f"clock         governor {freq.get('scaling_governor') or '?'}, "
                     f"boost {freq.get('boost') or 'unknown'}")
    else:
        lines.append(f"clock         {freq.get('reason')}")
    chosen = used.get("label")
    lines.append(f"in use        {used.get('requested', '?')} -> "
                 + (f"{chosen} ({describe(chosen, used.get('hz'))})" if chosen else used.get("error", "")))
    if used.get("reason") and chosen:
        lines.append(f"              because: {used['reason']}")
    lines += ["", *verdict(info, freq)]
    return "\n".join(lines)


def verdict(info: dict, freq: dict) -> list[str]:
    """What cycle tables measured here are (sentences)."""
    perf, tsc = info["perf"], info["tsc"]
    boost = str(freq.get("boost") or "")
    out = []
    if perf["available"]:
        if freq.get("available") and boost.startswith("off"):
            out.append("Cycle tables measured here are core cycles with boost off: fit for publication.")
        else:
            out.append("Core cycles count here, but boost is " + (boost or "unknown") + ": turn boost off "
                       "(and fix the governor) before publishing cycle tables.")
    elif tsc["available"]:
        out.append(f"Cycle tables measured here are TSC reference cycles at {ghz(tsc['hz']):.2f} GHz: "
                   "elapsed time in another unit, not core cycles. Do not compare them with core-cycle "
                   "tables.")
    else:
        out.append("No cycle counter works here: results carry times only.")
    flags = tsc.get("flags") or {}
    if tsc["available"] and flags and not (flags.get("constant_tsc") and flags.get("nonstop_tsc")):
        out.append("The TSC may change rate with the clock or stop in idle (constant_tsc/nonstop_tsc "
                   "missing): its counts are not reliable reference cycles.")
    if not perf["available"]:
        out.append("Publishable cycle tables need core cycles: a machine with a PMU (perf_event_open "
                   "working) and boost off.")
    return out
