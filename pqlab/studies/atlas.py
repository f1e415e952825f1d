"""The atlas across machines: the analysis of notebook 07 (``07_atlas``).

Absolute times do not travel between machines (clock, core design, compiler and liboqs build all
differ); a ratio against a baseline measured in the same run on the same machine does: "ML-DSA-44 sign
/ Ed25519 sign".  This module

* :func:`comparisons` names the ratios: each post-quantum signature and KEM of the notebook's
  parameters against a classical baseline (Ed25519, X25519) and against a post-quantum anchor
  (ML-DSA-44, ML-KEM-768), the only kind of baseline the published platforms have;
* :func:`measure_local` measures this machine once per liboqs build, each build as its own platform
  under its own machine identity (the default build under this machine's id, any other under the
  override ``<id>+<build>-build``, recorded as an override), and packs each into a bundle with
  ``python -m pqlab bundle``; :func:`merge` imports bundles as ``python -m pqlab merge`` does;
* :func:`build_atlas` collects every platform of the results store (one per host and liboqs build: the runs of one
  host under several identities or counters are one platform, each ratio from one run) and the published ones
  (study 004's Raspberry Pi 4, pqm4's Cortex-M4), computes every ratio with an interval over rounds, and draws
  the platforms the reader selects (``platforms=``);
* every ratio names its statistic (:data:`STATISTICS`: medians against the classical baseline, means against the
  post-quantum anchor, as pqm4 publishes means; a published statistic as its source states it, "unstated" where it
  states none) and carries an interval only where rounds give one;
* :func:`cross_platform` divides each platform's ratios by a reference platform's: which algorithms
  lose or gain most, relative to their baseline, from one platform to the other;
* ``describe_*`` write the sentences that state numbers, ``plot_*`` draw the figures and
  :func:`numbers` gives the values quoted in a write-up.
"""
from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from pqlab.backends.algorithms import get
from pqlab.benchmark import bench_in_worker
from pqlab.core import builds, inputs, paths
from pqlab.core.builds import parse
from pqlab.core.errors import UnknownName
from pqlab.core.formatting import Column, fmt_factor_ci, markdown, mpl_text, slug, table
from pqlab.core.schema import MESSAGE_OPERATIONS
from pqlab.liboqs.loader import build_environment
from pqlab.measure import machine
from pqlab.measure.stats import CONFIDENCE, combined_ci, ratio_ci
from pqlab.publish import plotting
from pqlab.publish.context import counter_text, frequency_text
from pqlab.store import bundle
from pqlab.store.results import load_run
from pqlab.studies import conforming

TOPIC = "07_atlas"
#: one use of an algorithm: the operations whose costs are summed
USES = {"sig": (("keygen",), ("sign",), ("verify",)), "kem": (("keygen",), ("encaps", "decaps"))}
KIND_LABEL = {"sig": "signature", "kem": "KEM"}
CLASSICAL, ANCHOR = "classical", "post-quantum anchor"
#: the statistic of a measured ratio, per kind of baseline (a sample is the mean of its loop's calls; each round gives
#: the statistic of its samples, the ratio is the median over rounds).  Against the classical baseline, which only
#: measured platforms have: medians, robust to the interference of a shared machine.  Against the post-quantum
#: anchor: means, the statistic pqm4 publishes, so that a measured platform and pqm4 compare like with like (a
#: signature's rejection loop makes its mean differ from its median).
STATISTICS = {CLASSICAL: "median", ANCHOR: "mean"}
#: the statistic of a published value whose source does not name one (study 004's times)
UNSTATED = "unstated"
#: how every interval of the atlas is described
INTERVAL = f"{CONFIDENCE:.0%} interval over rounds"
#: what a ratio without interval says about it
NO_INTERVAL = "none (published single numbers)"
NO_ROUNDS = "none (a side has too few rounds)"
MEASURED, PUBLISHED = "measured", "published"
PI4 = "Raspberry Pi 4 (study 004, published)"
PQM4_CLEAN = "Cortex-M4 (pqm4 clean C, published)"
PQM4_FASTEST = "Cortex-M4 (pqm4 fastest code, published)"


# --------------------------------------------------------------------------- what is compared
def _checked(name: str, kind: str, role: str):

    algo = get(name)  # an unknown name: UnknownName with close matches
    if algo.kind != kind:
        raise ValueError(f"{role} {name!r} is a {KIND_LABEL.get(algo.kind, algo.kind)}, not a {KIND_LABEL[kind]}: "
                         f"move it to the {'kems' if algo.kind == 'kem' else 'signatures'} parameter")
    return algo


def comparisons(signatures, kems, baselines: dict, anchors: dict) -> pd.DataFrame:
    """Every ratio of the atlas: algorithm x use x baseline (classical, then post-quantum anchor), with the
    backends that measure them here.  Names are checked first (one-line errors with close matches)."""
    rows = []
    for kind, names in (("sig", signatures), ("kem", kems)):
        algos = [_checked(n, kind, "algorithm") for n in names]
        for role, base_name in ((CLASSICAL, baselines.get(kind)), (ANCHOR, anchors.get(kind))):
            if not base_name:
                continue
            base = _checked(base_name, kind, f"{role} baseline")
            for algo in algos:
                if algo.name == base.name:
                    continue
                for ops in USES[kind]:
                    use = "+".join(ops)
                    rows.append({"kind": kind, "algorithm": algo.name, "backend": algo.backend, "use": use,
                                 "operations": ops, "baseline": base.name, "baseline_backend": base.backend,
                                 "baseline_kind": role, "comparison": f"{algo.name} {use} / {base.name} {use}"})
    if not rows:
        raise ValueError("nothing to compare: give at least one signature or KEM and a baseline for its kind")
    return pd.DataFrame(rows)


def algorithms_to_measure(comps: pd.DataFrame) -> list[str]:
    return list(dict.fromkeys([*comps["algorithm"], *comps["baseline"]]))


# --------------------------------------------------------------------------- measuring here
def local_identity(build: str) -> str:
    """The machine id a local liboqs build is recorded under: this machine's own for the default build,
    ``<id>+<build>-build`` (an identity override) for any other."""
    own = machine.machine_id()
    return own if build == "default" else machine.check_machine_id(f"{own}+{build}-build", "local identity")


def find_bundles(patterns) -> list[Path]:
    """The bundle files the patterns name (relative ones from the project root); a pattern that matches
    nothing is an error, raised before anything is measured."""
    found = []
    for pattern in patterns:
        full = pattern if Path(pattern).is_absolute() else str(paths.ROOT / pattern)
        hits = sorted(Path(p) for p in glob.glob(full))
        if not hits:
            raise FileNotFoundError(f"bundles: no file matches {pattern!r} (relative patterns start at {paths.ROOT})")
        found += hits
    return found


def measure_local(builds, algorithms, *, message_bytes: int, budget_s: float, min_samples: int,
                  staging: Path | str | None = None) -> list[dict]:
    """Measure `algorithms` once per liboqs build in `builds`, each in a fresh process under
    :func:`local_identity`, then pack each run into a bundle (``python -m pqlab bundle``).  Every build
    is checked before anything is measured.  Returns ``[{"build", "machine_id", "override", "run_id",
    "bundle", "run"}]`` (``run``: the :class:`pqlab.store.results.Run`, its conformance record in its metadata)."""

    budget_s, min_samples = inputs.positive_number(budget_s, "budget_s"), inputs.count(min_samples, "min_samples")
    for build in builds:
        parse(build)  # an unknown build: one line naming those there are
    for build in builds:
        build_environment(build)  # built on first need; cannot be: a one-line error
    staging = Path(staging or paths.OUTPUT / "build" / TOPIC / "local")
    out = []
    for build in builds:
        ident = local_identity(build)
        env = {} if build == "default" else {machine.ID_OVERRIDE: ident}
        folder = staging / ident
        shutil.rmtree(folder, ignore_errors=True)
        run = bench_in_worker(algorithms, build=build, message_bytes=message_bytes, budget_s=budget_s,
                              min_samples=min_samples, study=TOPIC, folder=folder, env=env,
                              allow_nonconforming=True)  # every build is timed; its record says whether it conforms
        target = staging / f"{ident}.tar.gz"
        target.unlink(missing_ok=True)  # the staging folder's bundle of an earlier run (`bundle --out` never replaces)
        cmd = [sys.executable, "-m", "pqlab", "bundle", "--folder", str(folder), "--no-notebooks", "--out", str(target)]
        proc = subprocess.run(cmd, env={**os.environ, **env}, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"bundling the {build} build's run failed: {proc.stderr.strip().splitlines()[-1:]}")
        out.append({"build": build, "machine_id": ident, "override": bool(env) or bool(run.meta.get("machine_id_override")),
                    "run_id": run.run_id, "bundle": target, "run": run})
        _PACKED_HERE.add(target.resolve())
    return out


#: the bundles :func:`measure_local` packed in this process: this host's own runs (the default build's carries this
#: machine's id, which a merge refuses from any other bundle)
_PACKED_HERE: set[Path] = set()


def merge(bundles, folder: Path | str | None = None) -> list[dict]:
    """Import bundles into the results store, as ``python -m pqlab merge`` does (:func:`pqlab.store.bundle.merge_bundles`):
    those :func:`measure_local` packed here first, with ``override=True`` (they are this machine's own), then the
    others, without it (a bundle from elsewhere that carries this machine's id is refused)."""
    bundles = list(bundles)
    own = [b for b in bundles if Path(b).resolve() in _PACKED_HERE]
    others = [b for b in bundles if Path(b).resolve() not in _PACKED_HERE]
    return ((bundle.merge_bundles(own, folder, override=True) if own else [])
            + (bundle.merge_bundles(others, folder) if others else []))


def describe_local(local: list[dict], reports: list[dict]) -> str:
    """What was measured here, under which identities, and what each merge did.  The atlas counts one platform per
    host and liboqs build: a run under an identity override joins its host's other runs of the same build."""
    lines = []
    for item in local:
        if not item["override"]:
            who = "this machine's own identity"
        elif item["build"] == "default":
            who = ("the identity `PQLAB_MACHINE_ID` sets, recorded as an override of this machine in its run and bundle; "
                   "the atlas counts it as this host's platform of the default build")
        else:
            who = (f"an **identity override** of this machine (`PQLAB_MACHINE_ID`), recorded as such in its run and "
                   f"bundle: the same host with the {markdown(item['build'])} build, not another machine; the atlas "
                   f"counts it with this host's other runs of that build as one platform")
        lines.append(f"- liboqs **{markdown(item['build'])}** build: run `{item['run_id']}` as machine "
                     f"`{item['machine_id']}`, {who}; bundle `{Path(item['bundle']).name}`.")
    for r in reports:
        state = ("already imported, nothing changed" if r["status"] == "already imported" else
                 f"{len(r['imported'])} run(s) imported ({len(r['converted'])} converted from an older schema), "
                 f"{len(r['present'])} already present")
        lines.append(f"- merged `{Path(r['bundle']).name}` (machine `{r['machine_id']}`): {state}.")
    return "\n".join(lines) if lines else "Nothing was measured or merged by this run (`local_builds` and `bundles` are empty)."


# --------------------------------------------------------------------------- platforms and ratios
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


def short_cpu(model: str) -> str:
    text = re.sub(r"\((R|TM|tm|r)\)|\bCPU\b|\bProcessor\b|@.*$|\d+-Core", "", model or "unknown CPU")
    return " ".join(text.split()) or "unknown CPU"


def cpu_features_text(info: dict) -> str:
    """What CPU-specific code the liboqs build may run: runtime dispatch over the extensions it detected, or the
    instructions it was compiled for."""
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
    return f"compiled for {config.get('OQS_OPT_TARGET') or '?'}: {', '.join(compiled) or 'no CPU-specific instructions'}"


def _host_of(meta: dict) -> str:
    """The host a run was measured on: the host id its identity override records, else its machine id."""
    return str((meta.get("machine_id_override") or {}).get("host_id") or meta.get("machine_id"))


def _identity_text(meta: dict) -> str:
    override = meta.get("machine_id_override") or None
    return (f"override {override['variable']}={override['value']} of host {override['host_id']}" if override
            else "the host's own")


def _measured_groups(folder) -> dict:
    """(host, liboqs version, liboqs build) -> [(started_at, meta path, meta)], newest first: one platform per host
    and build, whichever identity (own or override) and counter its runs were recorded under."""
    groups: dict = {}
    for meta_path in bundle.stored_runs(folder):
        meta = bundle.stored_meta(meta_path)  # an unreadable one: a warning naming it, left out
        if meta is None:
            continue
        info = meta.get("liboqs") or {}
        if not info:
            continue  # a run that loaded no liboqs has no post-quantum rows of its own build
        key = (_host_of(meta), info.get("liboqs_version"), info.get("build"))
        groups.setdefault(key, []).append((str(meta.get("started_at") or ""), meta_path, meta))
    return {k: sorted(v, key=lambda t: t[0], reverse=True) for k, v in groups.items()}


def _joined(values) -> str:
    return "; ".join(dict.fromkeys(str(v) for v in values))


def _platform_row(key, metas: list[dict], host: str) -> dict:
    """One measured platform from the runs its ratios come from (`metas`, newest first): what differs between
    them (identity, counter, frequency) is listed, each value once."""
    host_id, version, build = key
    options = builds.options_of(build)
    meta = metas[0]
    this_host = host_id == host
    cpu = meta.get("cpu") or {}
    label = f"{short_cpu(cpu.get('model', ''))} · {_arch(meta)} · liboqs {options}" + (" · this host" if this_host else "")
    return {"platform": label, "kind": MEASURED, "machine_id": host_id,
            "identities": _joined(m.get("machine_id") for m in metas),
            "identity": _joined(_identity_text(m) for m in metas), "this_host": this_host,
            "cpu": cpu.get("model") or "unknown", "arch": _arch(meta),
            "cores": cpu.get("usable_cores") or cpu.get("logical_cores"), "counter": _joined(map(counter_text, metas)),
            "frequency": _joined(map(frequency_text, metas)),
            "hypervisor": _joined(m.get("hypervisor") or "none detected" for m in metas),
            "liboqs": f"{version} {options} build", "liboqs_version": version,
            "cpu_features": _joined(cpu_features_text(m.get("liboqs") or {}) for m in metas),
            "runs": len(metas), "_key": key, "_options": options,
            "_own": any(not m.get("machine_id_override") for m in metas),
            "_latest": max(str(m.get("started_at") or "") for m in metas)}


def _part(run, algorithm: str, op: str, backend: str, build: str | None, message_bytes: int):
    """The samples of one verified measurement of the run (each the mean of its loop's calls), or None."""
    m = run.verified()
    sel = (m["algorithm"] == algorithm) & (m["operation"] == op) & (m["backend"] == backend)
    if build is not None:
        sel &= m["build"].fillna("") == build
    size = message_bytes if op in MESSAGE_OPERATIONS else None
    if size is not None:
        sel &= m["message_bytes"] == size
    if not sel.any():
        return None
    values = run.sample_values(algorithm, op, backend=backend, build=build, message_bytes=size)
    return values if values.size else None


def _sum_ratio(k: int):
    return lambda s: sum(s[:k]) / sum(s[k:])


def _measured_ratio(runs, comp, build: str, message_bytes: int, cache: dict, stat: str):
    """The newest run of the platform that measured every operation of both sides: (row fields, parts, run); parts
    are (samples, numerator count, statistic)."""

    for _, meta_path, _meta in runs:
        if meta_path not in cache:
            cache[meta_path] = load_run(meta_path)
        run = cache[meta_path]
        num = [_part(run, comp.algorithm, op, comp.backend, build if comp.backend == "liboqs" else None, message_bytes)
               for op in comp.operations]
        den = [_part(run, comp.baseline, op, comp.baseline_backend, build if comp.baseline_backend == "liboqs" else None,
                     message_bytes) for op in comp.operations]
        if all(p is not None for p in num + den):
            value, low, high = ratio_ci(tuple(num), tuple(den), stat)  # sums of `stat`s over sums
            return ({"ratio": value, "ci_low": low, "ci_high": high, "statistic": stat,
                     "interval": INTERVAL if np.isfinite(low) else NO_ROUNDS, "run_id": run.run_id,
                     "samples": min(a.size for a in num + den), "reason": ""}, (num + den, len(num), stat), run)
    return ({"statistic": stat, "interval": "", "reason": "not measured (with its baseline, in one run) on this platform"},
            None, None)


def published_statistic(column: str) -> str:
    """The statistic of a published column, as its transcription names it (``cycles_mean``: pqm4's mean of its
    executions); :data:`UNSTATED` where the name states none (study 004's ``time_ms``: the study never says)."""
    last = column.rsplit("_", 1)[-1]
    return last if last in ("mean", "median", "min", "max") else UNSTATED


def published_platforms(comps: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The published platforms (study 004's Pi 4; pqm4's Cortex-M4 with its clean C and with the fastest
    implementation of each operation) and their ratios: sums of published values, each labelled with the statistic
    its source states (:func:`published_statistic`), no interval (one number each); classical comparisons stay empty
    (neither publishes a classical baseline)."""
    from pqlab.core.references import load_reference, reference_source

    pi = load_reference("05_energy_pi4")
    setup = load_reference("05_energy_pi4_setup").set_index("parameter")["value"]
    pq = load_reference("07_pqm4")
    pq_src = reference_source("07_pqm4")
    fastest = pq.loc[pq.groupby(["algorithm", "operation"])["cycles_mean"].idxmin()]
    pi_stat, pq_stat = published_statistic("time_ms"), published_statistic("cycles_mean")
    pi_what = ("the study's time in ms, its statistic not stated" if pi_stat == UNSTATED
               else f"the study's {pi_stat} time (ms)")
    tables = {
        PI4: (pi.set_index(["algorithm", "operation"])["time_ms"], None, pi_what, pi_stat),
        PQM4_CLEAN: (pq[pq["implementation"] == "clean"].set_index(["algorithm", "operation"])["cycles_mean"], None,
                     f"pqm4's {pq_stat} cycles", pq_stat),
        PQM4_FASTEST: (fastest.set_index(["algorithm", "operation"])["cycles_mean"],
                       fastest.set_index(["algorithm", "operation"])["implementation"], f"pqm4's {pq_stat} cycles",
                       pq_stat),
    }
    m4 = {"kind": PUBLISHED, "machine_id": "", "identities": "", "identity": "published", "this_host": False,
          "cpu": f"ARM Cortex-M4 at {pq_src['clock_hz'] / 1e6:g} MHz ({pq_src['repository']})", "arch": "armv7e-m",
          "cores": 1, "counter": "cycles (pqm4's benchmark)", "frequency": f"fixed {pq_src['clock_hz'] / 1e6:g} MHz",
          "hypervisor": "none (bare metal)", "runs": 0}
    platforms = pd.DataFrame([
        {"platform": PI4, "kind": PUBLISHED, "machine_id": "", "identities": "", "identity": "published", "this_host": False,
         "cpu": f"Raspberry Pi 4, CPU model '{setup['cpu']}', {setup['cores']} cores", "arch": "aarch64",
         "cores": int(setup["cores"]), "counter": f"none (time: {setup['timer']})",
         "frequency": f"governor {setup['cpu_governor']}, boost unknown", "hypervisor": "none stated",
         "liboqs": f"version {setup['liboqs']}", "cpu_features": "not stated", "runs": 0},
        {**m4, "platform": PQM4_CLEAN, "liboqs": "none (pqm4, clean implementations from PQClean)",
         "cpu_features": "portable C"},
        {**m4, "platform": PQM4_FASTEST, "liboqs": "none (pqm4, fastest implementation per operation)",
         "cpu_features": "Cortex-M4F assembly where pqm4 has it (m4f, m4fspeed, m4fstack), else clean C"}])
    rows = []
    for platform, (values, impls, what, stat) in tables.items():
        for comp in comps.itertuples():
            row = {"platform": platform, **_comp_fields(comp), "statistic": stat, "interval": NO_INTERVAL,
                   "run_id": "", "samples": np.nan, "ci_low": np.nan, "ci_high": np.nan}
            keys = [(a, op) for a in (comp.algorithm, comp.baseline) for op in comp.operations]
            if comp.baseline_kind == CLASSICAL:
                rows.append({**row, "ratio": np.nan, "reason": f"no classical baseline published ({what} only)"})
            elif not all(k in values.index for k in keys):
                rows.append({**row, "ratio": np.nan, "reason": "not in the published data"})
            else:
                k = len(comp.operations)
                v = [float(values[key]) for key in keys]
                used = "" if impls is None else ", ".join(dict.fromkeys(str(impls[key]) for key in keys))
                rows.append({**row, "ratio": sum(v[:k]) / sum(v[k:]), "reason": "",
                             "source": f"{what}{f'; implementations {used}' if used else ''}"})
    return platforms, pd.DataFrame(rows)


def _comp_fields(comp) -> dict:
    return {"kind": comp.kind, "comparison": comp.comparison, "algorithm": comp.algorithm, "use": comp.use,
            "baseline": comp.baseline, "baseline_kind": comp.baseline_kind}


def build_atlas(comps: pd.DataFrame, *, message_bytes: int, folder: Path | str | None = None,
                published: bool = True, platforms=None) -> Atlas:
    """Every platform of the results store (this machine's runs and every merged machine's) with each
    comparison's ratio on it, and with `published` the published platforms.

    A measured platform is one host and one liboqs build (its id: release and options): its runs under other identities
    (an identity override of the host) or other counters are the same platform, and each of its ratios comes from
    the newest of them that measured both sides (one run: never a ratio across runs).  A measured platform none of
    whose comparisons was measured is left out.  `platforms` chooses what is drawn (:func:`select_platforms`;
    empty: every platform, each host and build once)."""
    host = machine.host_id()
    groups = _measured_groups(folder)
    rows, ratios, parts, cache = [], [], {}, {}
    for key, runs in groups.items():
        found, used = [], {}
        for comp in comps.itertuples():
            fields, p, run = _measured_ratio(runs, comp, key[2], message_bytes, cache, STATISTICS[comp.baseline_kind])
            found.append({"platform": key, **_comp_fields(comp), "source": "", **fields})
            if p is not None:
                parts[(key, comp.comparison)] = p
                used[run.run_id] = run.meta
        if used:
            rows.append(_platform_row(key, sorted(used.values(), key=lambda m: str(m.get("started_at") or ""),
                                                  reverse=True), host))
            ratios += found
    rows = _unique_labels(pd.DataFrame(rows)).to_dict("records") if rows else []
    # this host first, its default build first, runs under its own identity before overrides, the newest first
    rows.sort(key=lambda r: r["platform"])
    rows.sort(key=lambda r: r["_latest"], reverse=True)
    rows.sort(key=lambda r: (not r["this_host"], r["_options"] != "default", not r["_own"]))
    label = {r["_key"]: r["platform"] for r in rows}
    ratios = [{**f, "platform": label[f["platform"]]} for f in ratios]
    parts = {(label[k], c): v for (k, c), v in parts.items()}
    table = pd.DataFrame(rows).drop(columns=["_key", "_options", "_latest", "_own"], errors="ignore")
    if published:
        pub_platforms, pub_ratios = published_platforms(comps)
        table = pd.concat([table, pub_platforms], ignore_index=True) if len(table) else pub_platforms
        ratios += pub_ratios.to_dict("records")
    if table.empty:
        table = pd.DataFrame(columns=["platform", "kind", "machine_id", "identities", "this_host"])
    keep, labels = select_platforms(table, platforms), list(table["platform"])
    table = table[table["platform"].isin(keep)].reset_index(drop=True)
    columns = ["platform", "kind", "comparison", "algorithm", "use", "baseline", "baseline_kind", "statistic",
               "ratio", "ci_low", "ci_high", "interval", "samples", "run_id", "source", "reason"]
    out = pd.DataFrame(ratios).reindex(columns=columns)
    out = out[out["platform"].isin(keep)]
    out["kind"] = out["platform"].map(dict(zip(table["platform"], table["kind"])))
    out.insert(2, "algorithm_kind", out["comparison"].map(dict(zip(comps["comparison"], comps["kind"]))))
    order = {p: i for i, p in enumerate(table["platform"])}
    out = out.sort_values("platform", key=lambda c: c.map(order), kind="stable").reset_index(drop=True)
    table["statistic"] = [statistic_text(out[out["platform"] == p]) for p in table["platform"]]
    table["interval"] = [_joined(v for v in out.loc[(out["platform"] == p) & out["ratio"].notna(), "interval"]
                                 if v) or "none" for p in table["platform"]]
    used_runs = set(out["run_id"].dropna())
    return Atlas(table, out, {k: v for k, v in parts.items() if k[0] in keep},
                 [r for r in cache.values() if r.run_id in used_runs], [p for p in labels if p not in keep])


def select_platforms(platforms: pd.DataFrame, wanted=None) -> list[str]:
    """The labels of the platforms `wanted` names, in the atlas's order: each entry a label or part of one, a host's
    machine id or an identity its runs were recorded under, or "measured" / "published"; empty or None: every
    platform.  An entry that names none is an error listing the close matches."""
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
                              "choose a platform label (or part of one), a machine id, 'measured' or 'published'")
        keep |= set(platforms.loc[hit, "platform"])
    return [p for p in labels if p in keep]


def statistic_words(stat: str) -> str:
    """How a cell's statistic is named: "ratio of medians", "ratio of means", "statistic unstated"; a factor
    between platforms ("unstated / mean"): each side's."""
    if " / " in stat:
        mine, ref = stat.split(" / ", 1)
        return f"{statistic_words(mine)} over the reference's {statistic_words(ref)}"
    return "statistic unstated" if stat == UNSTATED else f"ratio of {stat}s"


def statistic_text(ratios: pd.DataFrame, value: str = "ratio") -> str:
    """The statistics of one platform's ratios (those with a `value`), each with the kinds of baseline it covers."""
    r = ratios[ratios[value].notna()]
    pairs = list(dict.fromkeys(zip(r["statistic"], r["baseline_kind"])))
    stats = list(dict.fromkeys(s for s, _ in pairs))
    if len(stats) <= 1:
        return statistic_words(stats[0]) if stats else "no ratio"
    return "; ".join(f"{statistic_words(s)} ({', '.join(k for t, k in pairs if t == s)})" for s in stats)


def _unique_labels(platforms: pd.DataFrame) -> pd.DataFrame:
    """Platform labels made unique with what tells them apart, and only that: two hosts with the same CPU get
    their machine id, one host with two liboqs releases of one build option (notebook 04 measures several) the
    release."""
    p = platforms.copy()
    for _, same in p[p["platform"].duplicated(keep=False)].groupby("platform"):
        differ = [c for c in ("machine_id", "liboqs_version") if c in same and same[c].astype(str).nunique() > 1]
        for i in same.index:
            p.at[i, "platform"] += "".join(f" · {p.at[i, c]}" for c in differ)
    return p


def reference_platform(atlas: Atlas, wanted: str = "") -> str:
    """The platform the others are compared with: `wanted` (a platform label, or part of one, or a machine
    id), else the first measured platform: this host's default build (its runs under its own identity first)."""
    measured = atlas.platforms[atlas.platforms["kind"] == MEASURED]
    if measured.empty:
        return ""
    if wanted:
        ids = measured["identities"].fillna("").map(lambda v: v.split("; "))
        hit = measured[measured["platform"].str.contains(wanted, regex=False) | (measured["machine_id"] == wanted)
                       | ids.map(lambda v: wanted in v)]
        if hit.empty:
            raise UnknownName("reference platform", wanted, measured["platform"])
        return hit["platform"].iloc[0]
    return measured["platform"].iloc[0]


def cross_platform(atlas: Atlas, reference: str) -> pd.DataFrame:
    """Each platform's ratio over the reference platform's, per comparison, with an interval over rounds (for a
    published platform, from the reference's samples only).  A factor above 1: on that platform the
    algorithm costs more, relative to its baseline, than on the reference (it loses there).  ``statistic``: the
    statistic of both ratios, or "platform's / reference's" where they differ (a published value's unstated
    statistic over our means); ``interval``: where the interval comes from."""
    r = atlas.ratios
    rows = []
    for platform in atlas.platforms["platform"]:
        if platform == reference:
            continue
        for comp in r[(r["platform"] == platform) & r["ratio"].notna()].itertuples():
            ref = atlas.parts.get((reference, comp.comparison))
            if ref is None:
                continue
            ref_arrays, k_ref, ref_stat = ref
            ref_ratio = _sum_ratio(k_ref)
            mine = atlas.parts.get((platform, comp.comparison))
            if mine is None:  # published: one number
                value, low, high = combined_ci(ref_arrays, lambda s, v=comp.ratio, f=ref_ratio: v / f(s), ref_stat)
                interval = f"{INTERVAL}, of the reference only: the published value has none"
            else:
                arrays, k, _ = mine
                n = len(arrays)
                value, low, high = combined_ci(arrays + ref_arrays, lambda s, n=n, k=k, f=ref_ratio:
                                                _sum_ratio(k)(s[:n]) / f(s[n:]), ref_stat)
                interval = INTERVAL
            finite = bool(np.isfinite(low))
            verdict = ("loses" if low > 1 else "gains" if high < 1 else "no clear change") if finite else "no interval"
            stat = comp.statistic if comp.statistic == ref_stat else f"{comp.statistic} / {ref_stat}"
            rows.append({"platform": platform, "reference": reference, "comparison": comp.comparison,
                         "algorithm": comp.algorithm, "use": comp.use, "baseline": comp.baseline,
                         "baseline_kind": comp.baseline_kind, "statistic": stat, "factor": value, "ci_low": low,
                         "ci_high": high, "interval": interval if finite else NO_ROUNDS, "verdict": verdict})
    return pd.DataFrame(rows, columns=["platform", "reference", "comparison", "algorithm", "use", "baseline",
                                       "baseline_kind", "statistic", "factor", "ci_low", "ci_high", "interval",
                                       "verdict"])


# --------------------------------------------------------------------------- tables for display
def platform_table(atlas: Atlas) -> pd.DataFrame:
    cols = ["platform", "kind", "identity", "cpu", "arch", "cores", "counter", "frequency", "hypervisor", "liboqs",
            "cpu_features", "statistic", "interval", "machine_id"]
    return atlas.platforms[cols]


def ratio_table(atlas: Atlas, baseline_kind: str) -> pd.DataFrame:
    """comparison x platform: the ratio with its interval as text (no interval where there is none).  Each platform's
    header names the statistic of its cells (:func:`statistic_words`); where one platform's cells differ in it, each
    cell names its own."""
    r = atlas.ratios[(atlas.ratios["baseline_kind"] == baseline_kind) & atlas.ratios["ratio"].notna()].copy()
    headers = {}
    for platform, g in r.groupby("platform", sort=False):
        stats = list(dict.fromkeys(g["statistic"]))
        headers[platform] = f"{platform}: {statistic_words(stats[0])}" if len(stats) == 1 else platform
    mixed = {p for p, h in headers.items() if h == p}
    r["value"] = [fmt_factor_ci(x, lo, hi) + (f" ({statistic_words(st)})" if p in mixed else "")
                  for x, lo, hi, p, st in zip(r["ratio"], r["ci_low"], r["ci_high"], r["platform"], r["statistic"])]
    wide = r.pivot(index="comparison", columns="platform", values="value")
    wide = wide.reindex(index=list(dict.fromkeys(r["comparison"])), columns=list(headers)).fillna("")
    return wide.rename(columns=headers).rename_axis(columns=None).reset_index()


def ratio_view(atlas: Atlas, baseline_kind: str):
    """:func:`ratio_table` as a reader sees it (:func:`pqlab.core.formatting.table`): headers as written, and a note on
    the statistics and intervals."""
    df = ratio_table(atlas, baseline_kind)
    notes = [f"Intervals: {INTERVAL}, where a platform's rounds give one; a published value is a single number "
             "without interval. Each header names the statistic of its column's ratios."]
    return table(df, [Column(c, label=str(c), kind="text") for c in df.columns], notes=notes)


def published_ratio_table(ratios: pd.DataFrame):
    """Published ratios (:func:`published_platforms`) as a reader sees them (:func:`pqlab.core.formatting.table`):
    deterministic, a checked notebook output."""
    r = ratios[ratios["ratio"].notna()]
    return table(r, ["platform", "comparison", "statistic", "ratio", "source"],
                 notes=[] if len(r) else ["No published ratio for these comparisons."])


def pqm4_table(comps: pd.DataFrame) -> pd.DataFrame:
    """pqm4's rows for the algorithms of the comparisons: cycles, stack and code size per implementation."""
    from pqlab.core.references import load_reference

    pq = load_reference("07_pqm4")
    names = algorithms_to_measure(comps)
    pq = pq[pq["algorithm"].isin(names)]
    return pq[["algorithm", "implementation", "operation", "cycles_mean", "stack_bytes", "code_total_bytes"]]


# --------------------------------------------------------------------------- text from data
def describe_platforms(atlas: Atlas) -> str:
    """How many platforms are drawn (one per host and liboqs build), which of them are this host, which merge runs of
    several identities, what differs between them, and what `platforms` left out."""
    p = atlas.platforms
    measured, pub = p[p["kind"] == MEASURED], p[p["kind"] == PUBLISHED]
    left = (f" Left out by `platforms`: {', '.join(map(markdown, atlas.left_out))}." if atlas.left_out else "")
    if measured.empty:
        return (f"**No measured platform** is drawn: no run of the results store measured both sides of a comparison"
                f"{', or `platforms` selected none' if atlas.left_out else ''}. Only the {len(pub)} published "
                f"platform(s) are shown.{left}")
    here = measured[measured["this_host"]]
    text = [f"The atlas draws **{len(measured)} measured platform(s)**, one per host and liboqs build "
            f"({measured['machine_id'].nunique()} host(s)), and {len(pub)} published one(s)."]
    if len(here):
        text.append(f"{len(here)} of the measured platforms are this host, one per liboqs build.")
    for row in measured[measured["identities"].str.contains("; ", regex=False)].itertuples():
        text.append(f"**{markdown(row.platform)}** holds runs recorded under {len(row.identities.split('; '))} "
                    f"identities ({markdown(row.identity)}): one host and one build, so one platform.")
    for what, col in (("cycle counter", "counter"), ("liboqs build", "liboqs"), ("frequency", "frequency"),
                      ("liboqs CPU code", "cpu_features")):
        values = list(dict.fromkeys(measured[col]))
        text.append(f"Every measured platform has the same {what}: {markdown(values[0])}." if len(values) == 1 else
                    f"The {what} differs: " + "; ".join(
                        f"{markdown(v)} ({', '.join(map(markdown, measured.loc[measured[col] == v, 'platform']))})"
                        for v in values) + ".")
    text.append("Each ratio is taken within one run of its platform, the newest that measured both sides (its run id "
                "is in the exported ratios): a ratio never combines runs, hosts or builds.")
    return " ".join(text) + left


def _interval_words(interval: str) -> str:
    return f"with a {interval}" if interval.startswith(INTERVAL) else f"no interval {interval.removeprefix('none ')}"


def describe_statistics(atlas: Atlas) -> str:
    """Per kind of baseline: which statistic the ratios of each platform are, and which have an interval."""
    r = atlas.ratios[atlas.ratios["ratio"].notna()]
    if r.empty:
        return "No ratio to describe."
    lines = []
    for kind in (CLASSICAL, ANCHOR):
        g = r[r["baseline_kind"] == kind]
        if g.empty:
            continue
        parts = [f"{statistic_words(stat)}, {_interval_words(interval)}, on "
                 + ", ".join(markdown(x) for x in dict.fromkeys(h["platform"]))
                 for (stat, interval), h in g.groupby(["statistic", "interval"], sort=False)]
        mixed = g["statistic"].nunique() > 1
        lines.append(f"- Against the **{kind}** baseline: " + "; ".join(parts) + "."
                     + (" These cells differ in statistic: each header, legend entry and exported row names its own."
                        if mixed else ""))
    return "\n".join(lines)


def describe_ratios(atlas: Atlas) -> str:
    """Per measured platform and kind: the range of the ratios against the classical baseline, with their statistic;
    then the caveat of any non-conforming implementation the runs timed (:func:`pqlab.studies.conforming.caveat`)."""
    r = atlas.ratios[(atlas.ratios["kind"] == MEASURED) & (atlas.ratios["baseline_kind"] == CLASSICAL)
                     & atlas.ratios["ratio"].notna()]
    if r.empty:
        return "No platform measured a post-quantum algorithm and its classical baseline in one run."
    lines = []
    for platform, g in r.groupby("platform", sort=False):
        parts = []
        for kind, h in g.groupby("algorithm_kind", sort=False):
            lo, hi = h.loc[h["ratio"].idxmin()], h.loc[h["ratio"].idxmax()]
            parts.append(f"{KIND_LABEL[kind]}s from {fmt_factor_ci(lo.ratio, lo.ci_low, lo.ci_high)} "
                         f"({markdown(lo.comparison)}) to {fmt_factor_ci(hi.ratio, hi.ci_low, hi.ci_high)} "
                         f"({markdown(hi.comparison)})")
        lines.append(f"- **{markdown(platform)}** ({statistic_text(g)}; intervals: "
                     f"{'; '.join(dict.fromkeys(g['interval']))}): " + "; ".join(parts) + ".")
    warning = conforming.caveat(atlas.runs)  # a ratio of a non-conforming verifier is not like for like
    return "\n".join(lines) + (f"\n\n{warning}" if warning else "")


def describe_cross_platform(cross: pd.DataFrame, reference: str, n: int = 2) -> str:
    """Per platform: the statistics its factors divide, how many changed beyond their interval, and which algorithms
    lose or gain most."""
    if not reference:
        return "No measured platform to compare the others with."
    if cross.empty:
        return f"No other platform shares a comparison with **{markdown(reference)}**."
    lines = [f"Factors are each platform's ratio over the same ratio on **{markdown(reference)}** (above 1: the algorithm "
             "loses there, relative to its baseline; below 1: it gains)."]
    for platform, g in cross.groupby("platform", sort=False):
        g = g[np.isfinite(g["factor"])].sort_values("factor")

        def items(df) -> str:
            return "; ".join(f"{markdown(x.comparison)} {fmt_factor_ci(x.factor, x.ci_low, x.ci_high)}"
                             for x in df.itertuples())

        changed = int(g["verdict"].isin(["loses", "gains"]).sum())
        with_interval = g[g["interval"] != NO_ROUNDS]
        lines.append(f"- **{markdown(platform)}** ({statistic_text(g, 'factor')}): {changed} of {len(g)} ratios "
                     f"changed beyond their interval ({'; '.join(dict.fromkeys(with_interval['interval'])) or 'none'}). "
                     f"Loses most: {items(g.tail(n).iloc[::-1])}. Gains most: {items(g.head(n))}.")
    return "\n".join(lines)


def numbers(atlas: Atlas, cross: pd.DataFrame, reference: str) -> dict[str, tuple[float, str]]:
    """Values for the write-up (name -> (value, format)): platform counts, the reference platform's headline
    ratios, each platform's largest loss factor, and the ML-DSA conformance caveat of the runs
    (:func:`pqlab.studies.conforming.paper_caveat`)."""
    p = atlas.platforms
    out = {"platforms_measured": (int((p["kind"] == MEASURED).sum()), "{}"),
           "platforms_published": (int((p["kind"] == PUBLISHED).sum()), "{}"),
           "atlas_mldsa_caveat": (conforming.paper_caveat(atlas.runs, "ML-DSA"), "{}")}
    r = atlas.ratios
    for row in r[(r["platform"] == reference) & (r["baseline_kind"] == CLASSICAL) & r["ratio"].notna()].itertuples():
        out[f"reference_{slug(row.comparison.replace(' / ', '_over_'), lower=True)}"] = (row.ratio, "{:.2f}")
    for platform, g in cross.groupby("platform", sort=False):
        if np.isfinite(g["factor"]).any():
            out[f"largest_loss_{slug(platform, lower=True)}"] = (float(g["factor"].max()), "{:.2f}")
    return out


# --------------------------------------------------------------------------- figures
def _legend_labels(df: pd.DataFrame, value: str) -> dict:
    """platform -> its legend entry: the label and the statistic of its points (:func:`statistic_text`)."""
    return {p: f"{p}: {statistic_text(g, value)}" for p, g in df.groupby("platform", sort=False)}


def _dot_rows(ax, df: pd.DataFrame, value: str, rows: list, hue: str, colors: dict, hollow=(), labels=None) -> None:
    """One marker with its interval per (row, hue), hues side by side within a row; log x with a line at 1;
    `labels`: hue -> legend entry."""
    keys = list(dict.fromkeys(df[hue]))
    y0 = np.arange(len(rows))[::-1]
    step = 0.7 / max(len(keys), 1)
    for i, k in enumerate(keys):
        sub = df[df[hue] == k].drop_duplicates("comparison").set_index("comparison").reindex(rows)
        x = sub[value].to_numpy(float)
        err = np.vstack([x - sub["ci_low"].to_numpy(float), sub["ci_high"].to_numpy(float) - x])
        err = np.where(np.isfinite(err), np.clip(err, 0, None), 0)
        y = y0 + (len(keys) - 1) / 2 * step - i * step
        ax.errorbar(x, y, xerr=err, fmt="D" if k in hollow else "o", ms=3, lw=0.8, capsize=1.5, color=colors[k],
                    mfc="white" if k in hollow else colors[k], label=mpl_text((labels or {}).get(k, k)), ls="none")
    ax.axvline(1, color="0.3", lw=0.8, ls=":")
    ax.set_xscale("log")
    narrow = ax.figure.get_figwidth() < plotting.FULL_WIDTH  # a column: each ratio's two terms on two lines
    ax.set_yticks(y0, [mpl_text(r.replace(" / ", "\n/ ") if narrow else r) for r in rows])
    ax.set_ylim(-0.6, len(rows) - 0.4)
    ax.grid(axis="y", visible=False)


@plotting.styled
def plot_ratios(atlas: Atlas, baseline_kind: str, title: str = "", width: float = plotting.FULL_WIDTH):
    """Every ratio against one kind of baseline, one marker per platform (hollow: published, no interval); each
    legend entry names its platform's statistic."""
    import matplotlib.pyplot as plt

    df = atlas.ratios[(atlas.ratios["baseline_kind"] == baseline_kind) & atlas.ratios["ratio"].notna()]
    rows = list(dict.fromkeys(df["comparison"]))
    fig, ax = plt.subplots(figsize=(width, max(2.0, 0.2 * len(rows) + 1.2)))
    colors = plotting.color_map(atlas.platforms["platform"])
    hollow = set(atlas.platforms.loc[atlas.platforms["kind"] == PUBLISHED, "platform"])
    _dot_rows(ax, df, "ratio", rows, "platform", colors, hollow, _legend_labels(df, "ratio"))
    ax.set_xlabel(f"ratio to the {baseline_kind} baseline on the same platform (bars: {INTERVAL}; hollow: "
                  "published, no interval)")
    fig.suptitle(title or f"Cost relative to the {baseline_kind} baseline, per platform")  # wraps to the figure
    plotting.figure_legend(fig, ax.get_legend_handles_labels(), 2)
    return fig


@plotting.styled
def plot_cross_platform(cross: pd.DataFrame, atlas: Atlas, title: str = "", width: float = plotting.FULL_WIDTH):
    """Each platform's ratios over the reference's: one panel per kind of baseline, rows sorted by the first
    platform's factor (largest loss at the top); colours and markers as in :func:`plot_ratios`."""
    import matplotlib.pyplot as plt

    df = cross[np.isfinite(cross["factor"])]
    kinds = [k for k in (CLASSICAL, ANCHOR) if (df["baseline_kind"] == k).any()]
    rows = {}
    for k in kinds:
        sub = df[df["baseline_kind"] == k]
        first = sub[sub["platform"] == sub["platform"].iloc[0]].sort_values("factor", ascending=False)
        rows[k] = list(dict.fromkeys([*first["comparison"], *sub["comparison"]]))
    heights = [len(rows[k]) + 1.5 for k in kinds]
    fig, axes = plt.subplots(len(kinds), 1, figsize=(width, 0.17 * sum(heights) + 1.2), squeeze=False,
                             gridspec_kw={"height_ratios": heights}, sharex=True)
    colors = plotting.color_map(atlas.platforms["platform"])
    hollow = set(atlas.platforms.loc[atlas.platforms["kind"] == PUBLISHED, "platform"])
    labels = _legend_labels(df, "factor")
    for ax, k in zip(axes[:, 0], kinds):
        _dot_rows(ax, df[df["baseline_kind"] == k], "factor", rows[k], "platform", colors, hollow, labels)
        ax.set_title(f"against the {k} baseline")
    axes[-1, 0].set_xlabel(f"ratio on the platform / ratio on the reference (bars: {INTERVAL}; of the reference "
                           "only for a published platform)")
    fig.suptitle(title or "Which algorithms lose (right) or gain (left) from one platform to another; reference: "
                 f"{mpl_text(df['reference'].iloc[0])}")
    pairs = [pair for ax in axes[:, 0] for pair in zip(*ax.get_legend_handles_labels())]
    plotting.figure_legend(fig, tuple(zip(*pairs)), 2)
    return fig
