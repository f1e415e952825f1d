"""The atlas's tables as a reader sees them: the platforms, the ratios per comparison and platform with their
intervals and statistics, the published ratios, and pqm4's rows for the algorithms compared.
"""
from __future__ import annotations

import pandas as pd

from pqlab.core.formatting import Column, fmt_factor_ci, table
from pqlab.studies.atlas.compared import INTERVAL, algorithms_to_measure, statistic_words
from pqlab.studies.atlas.platforms import Atlas


def platform_table(atlas: Atlas) -> pd.DataFrame:
    cols = ["platform", "kind", "identity", "cpu", "arch", "cores", "counter", "frequency", "hypervisor",
            "liboqs", "cpu_features", "statistic", "interval", "machine_id"]
    return atlas.platforms[cols]


def ratio_table(atlas: Atlas, baseline_kind: str) -> pd.DataFrame:
    """comparison x platform: the ratio with its interval as text (no interval where there is none).  Each
    platform's header names the statistic of its cells (:func:`statistic_words`); where one platform's cells
    differ in it, each cell names its own."""
    r = atlas.ratios[(atlas.ratios["baseline_kind"] == baseline_kind) & atlas.ratios["ratio"].notna()].copy()
    headers = {}
    for platform, g in r.groupby("platform", sort=False):
        stats = list(dict.fromkeys(g["statistic"]))
        headers[platform] = f"{platform}: {statistic_words(stats[0])}" if len(stats) == 1 else platform
    mixed = {p for p, h in headers.items() if h == p}
    r["value"] = [fmt_factor_ci(x, lo, hi) + (f" ({statistic_words(st)})" if p in mixed else "")
                  for x, lo, hi, p, st in zip(r["ratio"], r["ci_low"], r["ci_high"], r["platform"],
                                              r["statistic"])]
    wide = r.pivot(index="comparison", columns="platform", values="value")
    wide = wide.reindex(index=list(dict.fromkeys(r["comparison"])), columns=list(headers)).fillna("")
    return wide.rename(columns=headers).rename_axis(columns=None).reset_index()


def ratio_view(atlas: Atlas, baseline_kind: str):
    """:func:`ratio_table` as a reader sees it (:func:`pqlab.core.formatting.table`): headers as written, and
    a note on the statistics and intervals."""
    df = ratio_table(atlas, baseline_kind)
    notes = [f"Intervals: {INTERVAL}, where a platform's rounds give one; a published value is a single "
             "number without interval. Each header names the statistic of its column's ratios."]
    return table(df, [Column(c, label=str(c), kind="text") for c in df.columns], notes=notes)


def published_ratio_table(ratios: pd.DataFrame):
    """Published ratios (:func:`pqlab.studies.atlas.published.published_platforms`) as a reader sees them
    (:func:`pqlab.core.formatting.table`): deterministic, a checked notebook output."""
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
