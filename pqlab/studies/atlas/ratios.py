"""The ratios of the atlas: :func:`build_atlas` collects every platform of the results store (one per host and
liboqs build, each ratio from one run) and the published ones, computes every ratio with an interval over
rounds, and keeps the platforms the reader selects (``platforms=``); :func:`cross_platform` divides each
platform's ratios by a reference platform's: which algorithms lose or gain most, relative to their baseline,
from one platform to the other.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from pqlab.core.schema import MESSAGE_OPERATIONS
from pqlab.measure import machine
from pqlab.measure.stats import combined_ci, ratio_ci
from pqlab.store.results import load_run
from pqlab.studies.atlas.compared import INTERVAL, NO_ROUNDS, STATISTICS, _comp_fields, statistic_text
from pqlab.studies.atlas.platforms import (
    Atlas,
    _joined,
    _measured_groups,
    _platform_row,
    _unique_labels,
    select_platforms,
)
from pqlab.studies.atlas.published import published_platforms


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
    """The newest run of the platform that measured every operation of both sides: (row fields, parts, run);
    parts are (samples, numerator count, statistic)."""

    for _, meta_path, _meta in runs:
        if meta_path not in cache:
            cache[meta_path] = load_run(meta_path)
        run = cache[meta_path]
        num = [_part(run, comp.algorithm, op, comp.backend, build if comp.backend == "liboqs" else None,
                     message_bytes) for op in comp.operations]
        den = [_part(run, comp.baseline, op, comp.baseline_backend,
                     build if comp.baseline_backend == "liboqs" else None, message_bytes)
               for op in comp.operations]
        if all(p is not None for p in num + den):
            value, low, high = ratio_ci(tuple(num), tuple(den), stat)  # sums of `stat`s over sums
            return ({"ratio": value, "ci_low": low, "ci_high": high, "statistic": stat,
                     "interval": INTERVAL if np.isfinite(low) else NO_ROUNDS, "run_id": run.run_id,
                     "samples": min(a.size for a in num + den), "reason": ""},
                    (num + den, len(num), stat), run)
    return ({"statistic": stat, "interval": "",
             "reason": "not measured (with its baseline, in one run) on this platform"}, None, None)


def build_atlas(comps: pd.DataFrame, *, message_bytes: int, folder: Path | str | None = None,
                published: bool = True, platforms=None) -> Atlas:
    """Every platform of the results store (this machine's runs and every merged machine's) with each
    comparison's ratio on it, and with `published` the published platforms.

    A measured platform is one host and one liboqs build (its id: release and options): its runs under other
    identities (an identity override of the host) or other counters are the same platform, and each of its
    ratios comes from the newest of them that measured both sides (one run: never a ratio across runs).  A
    measured platform none of whose comparisons was measured is left out.  `platforms` chooses what is drawn
    (:func:`select_platforms`; empty: every platform, each host and build once)."""
    host = machine.host_id()
    groups = _measured_groups(folder)
    rows, ratios, parts, cache = [], [], {}, {}
    for key, runs in groups.items():
        found, used = [], {}
        for comp in comps.itertuples():
            fields, p, run = _measured_ratio(runs, comp, key[2], message_bytes, cache,
                                             STATISTICS[comp.baseline_kind])
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


def cross_platform(atlas: Atlas, reference: str) -> pd.DataFrame:
    """Each platform's ratio over the reference platform's, per comparison, with an interval over rounds (for
    a published platform, from the reference's samples only).  A factor above 1: on that platform the
    algorithm costs more, relative to its baseline, than on the reference (it loses there).  ``statistic``:
    the statistic of both ratios, or "platform's / reference's" where they differ (a published value's
    unstated statistic over our means); ``interval``: where the interval comes from."""
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
                value, low, high = combined_ci(ref_arrays, lambda s, v=comp.ratio, f=ref_ratio: v / f(s),
                                               ref_stat)
                interval = f"{INTERVAL}, of the reference only: the published value has none"
            else:
                arrays, k, _ = mine
                n = len(arrays)
                value, low, high = combined_ci(arrays + ref_arrays, lambda s, n=n, k=k, f=ref_ratio:
                                                _sum_ratio(k)(s[:n]) / f(s[n:]), ref_stat)
                interval = INTERVAL
            finite = bool(np.isfinite(low))
            verdict = (("loses" if low > 1 else "gains" if high < 1 else "no clear change") if finite
                       else "no interval")
            stat = comp.statistic if comp.statistic == ref_stat else f"{comp.statistic} / {ref_stat}"
            rows.append({"platform": platform, "reference": reference, "comparison": comp.comparison,
                         "algorithm": comp.algorithm, "use": comp.use, "baseline": comp.baseline,
                         "baseline_kind": comp.baseline_kind, "statistic": stat, "factor": value,
                         "ci_low": low, "ci_high": high, "interval": interval if finite else NO_ROUNDS,
                         "verdict": verdict})
    return pd.DataFrame(rows, columns=["platform", "reference", "comparison", "algorithm", "use", "baseline",
                                       "baseline_kind", "statistic", "factor", "ci_low", "ci_high",
                                       "interval", "verdict"])
