"""The platforms of the atlas: :class:`Atlas` (platforms, ratios and the samples behind them), one measured
platform per host and liboqs build from the runs of the results store (the runs of one host under several
identities or counters are one platform), how each is described (CPU, architecture, the CPU code liboqs may
run, identity), and the choice of the platforms drawn (:func:`select_platforms`) and of the reference the
others are compared with (:func:`reference_platform`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import pandas as pd

from pqlab.core import builds
from pqlab.core.errors import UnknownName
from pqlab.publish.context import counter_text, frequency_text
from pqlab.store import bundle
from pqlab.store.machines import recorded_host, run_hosts
from pqlab.studies.atlas.compared import MEASURED, PUBLISHED


@dataclass
class Atlas:
    """The platforms (one row each), the ratios (platform x comparison) and, for measured platforms, the
    samples behind each ratio (for intervals of ratios between platforms)."""

    platforms: pd.DataFrame
    ratios: pd.DataFrame
    parts: dict = field(default_factory=dict)
    #: the runs the ratios come from (what an export of the atlas records and names in its footer)
    runs: list = field(default_factory=list)
    #: the platforms the reader's selection (``platforms=``) left out
    left_out: list = field(default_factory=list)


def _arch(meta: dict) -> str:
    found = re.search(r"(x86_64|amd64|aarch64|arm64|armv\d+l?|riscv64|ppc64le)", str(meta.get("os", "")))
    return meta.get("arch") or (found.group(1) if found else "unknown arch")


#: the longest CPU model a platform label shows (the full model is in the platform table's cpu column)
SHORT_CPU = 60


def short_cpu(model: str) -> str:
    """A CPU model as a platform label shows it: trademarks, "CPU", clock and core count left out, at most
    :data:`SHORT_CPU` characters (cut with "…")."""
    text = re.sub(r"\((R|TM|tm|r)\)|\bCPU\b|\bProcessor\b|@.*$|\d+-Core", "", model or "unknown CPU")
    text = " ".join(text.split()) or "unknown CPU"
    return text if len(text) <= SHORT_CPU else text[: SHORT_CPU - 1].rstrip() + "…"


def cpu_features_text(info: dict) -> str:
    """What CPU-specific code the liboqs build may run: runtime dispatch over the extensions it detected, or
    the instructions it was compiled for."""
    if not info:
        return "liboqs not loaded"
    config = info.get("build_config") or {}
    compiled = [k.removeprefix("OQS_USE_").removesuffix("_INSTRUCTIONS") for k in config
                if re.fullmatch(r"OQS_USE_\w+_INSTRUCTIONS", k)]
    ext = info.get("cpu_extensions")
    if config.get("OQS_DIST_BUILD") == "1":
        if ext is None:
            return "runtime dispatch; the extensions it detected were not recorded"
        return f"runtime dispatch over {', '.join(ext) or 'no extension'}"
    return (f"compiled for {config.get('OQS_OPT_TARGET') or '?'}: "
            f"{', '.join(compiled) or 'no CPU-specific instructions'}")


def _identity_text(meta: dict) -> str:
    override = meta.get("machine_id_override") or None
    return (f"override {override['variable']}={override['value']} of host {override['host_id']}" if override
            else "the host's own")


def _measured_groups(folder) -> dict:
    """(host, liboqs version, liboqs build, proven) -> [(started_at, meta path, meta)], newest first: one
    platform per host and build, whichever identity (own or override) and counter its runs were recorded
    under.  The host is the one pqlab has evidence for (:func:`pqlab.store.machines.run_hosts`): a merged
    bundle's runs are its machine's unless its host proof verified, whatever their metadata claims."""
    groups: dict = {}
    for meta_path, shown_as in run_hosts(folder).items():
        meta = bundle.stored_meta(meta_path)  # an unreadable one: a warning naming it, left out
        if meta is None:
            continue
        host, proven = (recorded_host(meta), True) if shown_as is None else (shown_as, False)
        info = meta.get("liboqs") or {}
        if not info:
            continue  # a run that loaded no liboqs has no post-quantum rows of its own build
        key = (host, info.get("liboqs_version"), info.get("build"), proven)
        groups.setdefault(key, []).append((str(meta.get("started_at") or ""), meta_path, meta))
    return {k: sorted(v, key=lambda t: t[0], reverse=True) for k, v in groups.items()}


def _joined(values) -> str:
    return "; ".join(dict.fromkeys(str(v) for v in values))


def _platform_row(key, metas: list[dict], host: str) -> dict:
    """One measured platform from the runs its ratios come from (`metas`, newest first): what differs between
    them (identity, counter, frequency) is listed, each value once."""
    host_id, version, build, proven = key
    options = builds.options_of(build)
    meta = metas[0]
    this_host = proven and host_id == host
    cpu = meta.get("cpu") or {}
    label = (f"{short_cpu(cpu.get('model', ''))} · {_arch(meta)} · liboqs {options}"
             + (" · this host" if this_host else ""))
    return {"platform": label, "kind": MEASURED, "machine_id": host_id,
            "identities": _joined(m.get("machine_id") for m in metas),
            "identity": _joined(_identity_text(m) for m in metas)
            + ("" if proven else f"; merged as machine {host_id}, its claims not verified"),
            "this_host": this_host,
            "cpu": cpu.get("model") or "unknown", "arch": _arch(meta),
            "cores": cpu.get("usable_cores") or cpu.get("logical_cores"),
            "counter": _joined(map(counter_text, metas)),
            "frequency": _joined(map(frequency_text, metas)),
            "hypervisor": _joined(m.get("hypervisor") or "none detected" for m in metas),
            "liboqs": f"{version} {options} build", "liboqs_version": version,
            "cpu_features": _joined(cpu_features_text(m.get("liboqs") or {}) for m in metas),
            "runs": len(metas), "_key": key, "_options": options,
            "_own": any(not m.get("machine_id_override") for m in metas),
            "_latest": max(str(m.get("started_at") or "") for m in metas)}


def _unique_labels(platforms: pd.DataFrame) -> pd.DataFrame:
    """Platform labels made unique with what tells them apart, and only that: two hosts with the same CPU get
    their machine id, one host with two liboqs releases of one build option (notebook 04 measures several) the
    release."""
    p = platforms.copy()
    for _, same in p[p["platform"].duplicated(keep=False)].groupby("platform"):
        differ = [c for c in ("machine_id", "liboqs_version")
                  if c in same and same[c].astype(str).nunique() > 1]
        for i in same.index:
            p.at[i, "platform"] += "".join(f" · {p.at[i, c]}" for c in differ)
    return p


def select_platforms(platforms: pd.DataFrame, wanted=None) -> list[str]:
    """The labels of the platforms `wanted` names, in the atlas's order: each entry a label or part of one, a
    host's machine id or an identity its runs were recorded under, or "measured" / "published"; empty or None:
    every platform.  An entry that names none is an error listing the close matches."""
    labels = list(platforms["platform"])
    if not wanted:
        return labels
    keep: set = set()
    for w in [wanted] if isinstance(wanted, str) else list(wanted):
        w = str(w)
        ids = platforms["identities"].fillna("").map(lambda v: v.split("; "))
        hit = (platforms["platform"].str.contains(w, regex=False) | (platforms["machine_id"] == w)
               | (platforms["kind"] == w) | ids.map(lambda v, w=w: w in v))
        if not hit.any():
            raise UnknownName("platform", w, labels + [MEASURED, PUBLISHED],
                              "choose a platform label (or part of one), a machine id, 'measured' or "
                              "'published'")
        keep |= set(platforms.loc[hit, "platform"])
    return [p for p in labels if p in keep]


def reference_platform(atlas: Atlas, wanted: str = "") -> str:
    """The platform the others are compared with: `wanted` (a platform label, or part of one, or a machine
    id), else the first measured platform: this host's default build (its runs under its own identity
    first)."""
    measured = atlas.platforms[atlas.platforms["kind"] == MEASURED]
    if measured.empty:
        return ""
    if wanted:
        ids = measured["identities"].fillna("").map(lambda v: v.split("; "))
        hit = measured[measured["platform"].str.contains(wanted, regex=False)
                       | (measured["machine_id"] == wanted) | ids.map(lambda v: wanted in v)]
        if hit.empty:
            raise UnknownName("reference platform", wanted, measured["platform"])
        return hit["platform"].iloc[0]
    return measured["platform"].iloc[0]
