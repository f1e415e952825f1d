"""Notebook 02's figures: time against message length with the fitted lines, the per-byte cost, the
pure-Python slowdown, and the study's times beside ours.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from pqlab.core.formatting import fmt_percent, unit_divisor
from pqlab.core.vocabulary import family_of
from pqlab.measure.stats import CONFIDENCE
from pqlab.publish import plotting
from pqlab.studies.message_scaling.published import load_study

#: how the x axis of :func:`plot_time_vs_message` shows the empty message (its label says it)
EMPTY_ON_AXIS = "0 = empty message, axis linear below 1"


#: how far beyond the smallest and largest median the time axis of :func:`plot_time_vs_message` reaches
WHISKER_ROOM = 3.0


@plotting.styled
def plot_time_vs_message(native: pd.DataFrame, fits: pd.DataFrame, width: float = plotting.FULL_WIDTH):
    """Median time against message length per operation, each median with its interval over rounds as
    whiskers (``time_ns_ci_low`` / ``_high``, where measured), with each fitted line and its crossover.  The
    x axis is symmetric-log (linear below 1 byte), so that the empty message sits at 0; the axis label says
    so, and the y label what the whiskers are.  The medians set the time axis: a whisker reaching further
    than :data:`WHISKER_ROOM` beyond them runs off its edge."""
    model = fits.assign(intercept=fits["fixed_ns"], slope=fits["per_byte_ns"],
                        crossover=fits["crossover_bytes"].where(fits["per_byte_significant"]))
    colors = plotting.shaded_family_colors(native)
    has_ci = {"time_ns_ci_low", "time_ns_ci_high"} <= set(native.columns)
    whiskers = f"\nwhiskers: {fmt_percent(CONFIDENCE, 0)} interval over rounds" if has_ci else ""
    fig = plotting.panel_lines(native, x="message_bytes", y="time_ns_median", hue="algorithm",
                               panel="operation", panels=["sign", "verify"], model=model, connect=False,
                               mark="crossover", model_label="fit: fixed + per-byte × length",
                               mark_label="crossover: hashing = fixed part", colors=colors, unit="µs",
                               symlog_x=True, xlabel=f"message length (bytes; {EMPTY_ON_AXIS})",
                               ylabel=f"median time (µs, log){whiskers}", height=3.2, width=width)
    if has_ci:
        scale = unit_divisor("time_ns_median", "µs")
        for ax, operation in zip(fig.axes, ["sign", "verify"], strict=False):
            sub = native[(native["operation"] == operation) & native["time_ns_ci_low"].notna()
                         & native["time_ns_ci_high"].notna()]
            for algorithm, g in sub.groupby("algorithm", sort=False):
                y = g["time_ns_median"].to_numpy(float) / scale
                err = np.vstack([y - g["time_ns_ci_low"].to_numpy(float) / scale,
                                 g["time_ns_ci_high"].to_numpy(float) / scale - y]).clip(min=0)
                ax.errorbar(g["message_bytes"].to_numpy(float), y, yerr=err, fmt="none",
                            ecolor=colors.get(algorithm, "0.3"), elinewidth=0.7, capsize=1.5, zorder=2)
            # the medians set the axis: a whisker wider than WHISKER_ROOM beyond them runs off its edge
            medians = native.loc[native["operation"] == operation, "time_ns_median"].to_numpy(float) / scale
            if np.isfinite(medians).any():
                ax.set_ylim(np.nanmin(medians) / WHISKER_ROOM, np.nanmax(medians) * WHISKER_ROOM)
    return fig


@plotting.styled
def plot_per_byte(fits: pd.DataFrame, width: float = plotting.FULL_WIDTH):
    """Per-byte cost with ± one standard error (positive estimates only: log axis)."""
    out = fits[fits["per_byte_ns"] > 0].copy()
    several = out.groupby("algorithm")["backend"].transform("nunique") > 1
    out["label"] = out["algorithm"].where(~several, out["algorithm"] + " (" + out["backend"] + ")")
    low = (out["per_byte_ns"] - out["per_byte_ns_se"]).clip(lower=out["per_byte_ns"] * 0.01)
    out["low"], out["high"] = low, out["per_byte_ns"] + out["per_byte_ns_se"]
    return plotting.grouped_bars(out, category="label", group="operation", value="per_byte_ns", low="low",
                                 high="high", log=False, ylabel="ns per message byte", width=width,
                                 title="Cost per message byte (± 1 SE)")


@plotting.styled
def plot_slowdown(table: pd.DataFrame, message_bytes: int | None = None, width: float = plotting.FULL_WIDTH):
    """Pure-Python over native time per pair, with intervals over rounds, at one length (default: the
    shortest)."""
    n = message_bytes if message_bytes is not None else table["message_bytes"].min()
    out = table[table["message_bytes"].isna() | (table["message_bytes"] == n)].copy()
    out["label"] = [f"{a}\nvs {b}" + ("" if same else " (round 3)")
                    for a, b, same in zip(out["algorithm"], out["native_backend"], out["same_standard"])]
    return plotting.grouped_bars(out, category="label", group="operation", value="slowdown",
                                 low="slowdown_ci_low", high="slowdown_ci_high",
                                 ylabel="pure Python / native (log)", width=width,
                                 title=f"How much slower pure Python is (bars: {fmt_percent(CONFIDENCE, 0)} "
                                       "intervals)")


@plotting.styled
def plot_study_vs_ours(table: pd.DataFrame, reference: pd.DataFrame | None = None,
                       width: float = plotting.FULL_WIDTH):
    """The study's times over its whole grid (dashed) and ours at the lengths we measured (solid)."""
    ref = load_study() if reference is None else reference
    study = pd.DataFrame({"series": "study: " + ref["algorithm"], "family": ref["algorithm"].map(family_of),
                          "operation": ref["operation"], "message_bytes": ref["message_bytes"],
                          "time_ms": ref["time_ms"]})
    ours = pd.DataFrame({"series": "ours: " + table["algorithm"] + " (" + table["backend"] + ")",
                         "family": table["study_label"].map(family_of), "operation": table["operation"],
                         "message_bytes": table["message_bytes"], "time_ms": table["ours_ms"]})
    lines = pd.concat([study, ours], ignore_index=True)
    return plotting.panel_lines(lines, x="message_bytes", y="time_ms", hue="series", panel="operation",
                                panels=["sign", "verify"], logx=False, eng_x=True,
                                colors=plotting.shaded_family_colors(lines, key="series"),
                                linestyles={s: "--" for s in study["series"].unique()},
                                xlabel="message length (bytes)", ylabel="time (ms, log)", legend_cols=3,
                                height=3.2, width=width)
