"""The figure of notebook 08: each algorithm's implementations side by side, every operation's median with its
interval (:func:`plot_dots`).
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd

from pqlab.checks import conformance
from pqlab.core.schema import KIND_OPERATIONS, convert_unit
from pqlab.publish import plotting


@plotting.styled
def plot_dots(table: pd.DataFrame, algorithms: Sequence[str], width: float = plotting.COLUMN_WIDTH):
    """One panel per algorithm, one line per implementation (fastest first, by the algorithm's first
    operation): each operation's median as a dot with its interval (log time)."""
    import matplotlib.pyplot as plt

    algorithms = [a for a in algorithms if (table["algorithm"] == a).any()]
    operations = list(dict.fromkeys(op for ops in KIND_OPERATIONS.values() for op in ops
                                    if (table["operation"] == op).any()))
    styles = plotting.marker_map(operations)
    heights = [0.13 * table.loc[table["algorithm"] == a, "implementation"].nunique() + 0.45
               for a in algorithms]
    fig, axes = plt.subplots(len(algorithms), 1, figsize=(width, sum(heights) + 0.5), squeeze=False,
                             gridspec_kw={"height_ratios": heights})
    for ax, alg in zip(axes[:, 0], algorithms):
        mine = table[table["algorithm"] == alg]
        first = mine[mine["operation"] == mine["operation"].iloc[0]].sort_values("median_ns")
        names = list(dict.fromkeys(list(first["implementation"]) + sorted(mine["implementation"].unique())))
        bad = (set(mine.loc[mine["status"] == conformance.NONCONFORMING, "implementation"])
               if "status" in mine else set())
        for _, r in mine.iterrows():
            x, y = convert_unit(r["median_ns"], "ns", "µs"), names.index(r["implementation"])
            err = None
            if math.isfinite(r["ci_low_ns"]) and math.isfinite(r["ci_high_ns"]):
                err = [[x - convert_unit(r["ci_low_ns"], "ns", "µs")],
                       [convert_unit(r["ci_high_ns"], "ns", "µs") - x]]
            color, marker = styles[r["operation"]]
            ax.errorbar([x], [y], xerr=err, fmt=marker, ms=3, lw=0.8, color=color)
        ax.set_yticks(range(len(names)), [f"{n} (non-conforming)" if n in bad else n for n in names])
        ax.set_ylim(len(names) - 0.5, -0.5)
        ax.set_xscale("log")
        ax.set_title(alg)
    axes[-1, 0].set_xlabel("time per call (µs, log scale)")
    handles = [plt.Line2D([], [], marker=styles[op][1], ls="", color=styles[op][0]) for op in operations]
    plotting.figure_legend(fig, (handles, operations), max_cols=3)
    return fig
