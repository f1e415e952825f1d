"""Notebook 02's figures: time against message length with the fitted lines, the per-byte cost, the
pure-Python slowdown, and the study's times beside ours.
"""
from __future__ import annotations

import pandas as pd

from pqlab.core.formatting import fmt_percent
from pqlab.core.vocabulary import family_of
from pqlab.measure.stats import CONFIDENCE
from pqlab.publish import plotting
from pqlab.studies.message_scaling.published import load_study


@plotting.styled
def plot_time_vs_message(native: pd.DataFrame, fits: pd.DataFrame, width: float = plotting.FULL_WIDTH):
    """Median time against message length per operation, with each fitted line and its crossover."""
    model = fits.assign(intercept=fits["fixed_ns"], slope=fits["per_byte_ns"],
                        crossover=fits["crossover_bytes"].where(fits["per_byte_significant"]))
    return plotting.panel_lines(native, x="message_bytes", y="time_ns_median", hue="algorithm",
                                panel="operation", panels=["sign", "verify"], model=model, connect=False,
                                mark="crossover", model_label="fit: fixed + per-byte × length",
                                mark_label="crossover: hashing = fixed part",
                                colors=plotting.shaded_family_colors(native), unit="µs", symlog_x=True,
                                xlabel="message length (bytes)", ylabel="median time (µs, log)", height=3.2,
                                width=width)


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
