"""The atlas's figures: every ratio against one kind of baseline, one marker per platform
(:func:`plot_ratios`), and each platform's ratios over the reference platform's (:func:`plot_cross_platform`).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from pqlab.core.formatting import mpl_text
from pqlab.publish import plotting
from pqlab.studies.atlas.compared import ANCHOR, CLASSICAL, INTERVAL, PUBLISHED, statistic_text
from pqlab.studies.atlas.platforms import Atlas


def _legend_labels(df: pd.DataFrame, value: str) -> dict:
    """platform -> its legend entry: the label and the statistic of its points (:func:`statistic_text`)."""
    return {p: f"{p}: {statistic_text(g, value)}" for p, g in df.groupby("platform", sort=False)}


def _dot_rows(ax, df: pd.DataFrame, value: str, rows: list, hue: str, colors: dict, hollow=(),
              labels=None) -> None:
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
        ax.errorbar(x, y, xerr=err, fmt="D" if k in hollow else "o", ms=3, lw=0.8, capsize=1.5,
                    color=colors[k], mfc="white" if k in hollow else colors[k],
                    label=mpl_text((labels or {}).get(k, k)), ls="none")
    ax.axvline(1, color="0.3", lw=0.8, ls=":")
    ax.set_xscale("log")
    narrow = ax.figure.get_figwidth() < plotting.FULL_WIDTH  # a column: each ratio's two terms on two lines
    ax.set_yticks(y0, [mpl_text(r.replace(" / ", "\n/ ") if narrow else r) for r in rows])
    ax.set_ylim(-0.6, len(rows) - 0.4)
    ax.grid(axis="y", visible=False)


@plotting.styled
def plot_ratios(atlas: Atlas, baseline_kind: str, title: str = "", width: float = plotting.FULL_WIDTH):
    """Every ratio against one kind of baseline, one marker per platform (hollow: published, no interval);
    each legend entry names its platform's statistic."""
    import matplotlib.pyplot as plt

    df = atlas.ratios[(atlas.ratios["baseline_kind"] == baseline_kind) & atlas.ratios["ratio"].notna()]
    rows = list(dict.fromkeys(df["comparison"]))
    fig, ax = plt.subplots(figsize=(width, max(2.0, 0.2 * len(rows) + 1.2)))
    colors = plotting.color_map(atlas.platforms["platform"])
    hollow = set(atlas.platforms.loc[atlas.platforms["kind"] == PUBLISHED, "platform"])
    _dot_rows(ax, df, "ratio", rows, "platform", colors, hollow, _legend_labels(df, "ratio"))
    ax.set_xlabel(f"ratio to the {baseline_kind} baseline on the same platform (bars: {INTERVAL}; hollow: "
                  "published, no interval)")
    # the title wraps to the figure
    fig.suptitle(title or f"Cost relative to the {baseline_kind} baseline, per platform")
    plotting.figure_legend(fig, ax.get_legend_handles_labels(), 2)
    return fig


@plotting.styled
def plot_cross_platform(cross: pd.DataFrame, atlas: Atlas, title: str = "",
                        width: float = plotting.FULL_WIDTH):
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
    axes[-1, 0].set_xlabel(f"ratio on the platform / ratio on the reference (bars: {INTERVAL}; of the "
                           "reference only for a published platform)")
    fig.suptitle(title or "Which algorithms lose (right) or gain (left) from one platform to another; "
                 f"reference: {mpl_text(df['reference'].iloc[0])}")
    pairs = [pair for ax in axes[:, 0] for pair in zip(*ax.get_legend_handles_labels())]
    plotting.figure_legend(fig, tuple(zip(*pairs)), 2)
    return fig
