"""Notebook 03's figures: the heap and stack each operation adds, what a longer message adds, and the study's
Gravity-SPHINCS heap beside the sets of its hash length.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from pqlab.publish import figure_layout, plotting
from pqlab.runners.memory.worker import SIGNATURE_OPERATIONS
from pqlab.studies.memory_footprint.published import gravity_bars

if TYPE_CHECKING:
    import pandas as pd


def _panels(memory: pd.DataFrame) -> list[tuple[str, str]]:
    """(column, axis label) of what was measured: native heap and stack, else Python-level allocations."""
    native = [(c, f"{w} added (bytes, log)") for c, w in (("heap_bytes", "heap"), ("stack_bytes", "stack"))
              if c in memory and memory[c].notna().any()]
    return native or [("python_heap_bytes", "Python-level allocations\n(tracemalloc; bytes, log)")]


@plotting.styled
def plot_peaks(memory: pd.DataFrame, message_bytes: int | None = None, width: float = plotting.FULL_WIDTH):
    """Heap and stack each operation adds, per algorithm, at one message size (log axes); without valgrind,
    the Python-level allocations (tracemalloc) alone.  At full width the panels stand one above the other
    with the algorithms along x; in a column, side by side with the algorithms down the side."""
    import matplotlib.pyplot as plt

    size = message_bytes if message_bytes is not None else memory["message_bytes"].dropna().min()
    df = memory[memory["message_bytes"].isna() | (memory["message_bytes"] == size)].copy()
    df["label"] = df["algorithm"] + df["backend"].map(lambda b: "" if b in ("liboqs", "cryptography")
                                                      else f" ({b})")
    ops = [op for op in SIGNATURE_OPERATIONS if op in set(df["operation"])]
    colors = plotting.color_map(ops)
    panels = _panels(df)
    narrow = width < 4.5
    if narrow:
        height = 1.2 + df["label"].nunique() * (0.07 + 0.07 * len(ops))
        fig, axes = plt.subplots(1, len(panels), figsize=(width, height), sharey=True, squeeze=False)
        axes = axes[0, :]
    else:
        height = 1.3 + 1.9 * len(panels) + 0.035 * df["label"].str.len().max()
        fig, axes = plt.subplots(len(panels), 1, figsize=(width, height), sharex=True, squeeze=False)
        axes = axes[:, 0]
    for ax, (col, label) in zip(axes, panels):
        part = df.dropna(subset=[col])
        part = part.assign(**{col: part[col].astype(float).clip(lower=1)})  # 0 B drawn at 1 B (log axis)
        plotting.grouped_bars(part, category="label", group="operation", value=col, colors=colors, ax=ax,
                              ylabel=label.replace(" (", "\n(") if narrow else label, horizontal=narrow)
        if ax.get_legend() is not None:
            ax.get_legend().remove()
    plotting.figure_legend(fig, axes[0].get_legend_handles_labels(), max_cols=len(ops))
    source = ("valgrind massif" if panels[0][0] != "python_heap_bytes"
              else "tracemalloc: valgrind was not available")
    fig.suptitle(f"Memory one operation adds ({source}; sign and verify of {size}-byte messages)")
    figure_layout.fit_panel_labels(axes, narrow)
    return fig


@plotting.styled
def plot_message_sizes(memory: pd.DataFrame, width: float = plotting.FULL_WIDTH):
    """What a longer message adds, per algorithm: heap and stack of signing and verifying beyond their
    values at the smallest message, coloured by binding, with "one copy of the message" for reference.
    With a single message size, the values themselves (log axes)."""
    import numpy as np
    import pandas as pd
    from matplotlib.lines import Line2D

    df = memory.dropna(subset=["message_bytes"])
    df = df[df["operation"].isin(["sign", "verify"])]
    sizes = sorted(df["message_bytes"].unique())
    first = sizes[0]
    rows = []
    for op in ("sign", "verify"):
        for col, label in _panels(df):
            part = df[df["operation"] == op].dropna(subset=[col])
            what = label.split(" added")[0].split("\n")[0]
            base = part[part["message_bytes"] == first].set_index(["algorithm", "backend"])[col].astype(float)
            delta = part[col].astype(float) - [base.get((a, b), np.nan) for a, b in zip(part["algorithm"],
                                                                                      part["backend"])]
            rows.append(pd.DataFrame({"algorithm": part["algorithm"], "backend": part["backend"],
                                      "family": part["family"],
                                      "message_bytes": part["message_bytes"].astype(float),
                                      "bytes": part[col].astype(float).clip(lower=1), "delta": delta,
                                      "panel": f"{op}: {what}"}))
    long = pd.concat(rows, ignore_index=True)
    if len(sizes) < 2:
        return plotting.panel_lines(long, x="message_bytes", y="bytes", hue="algorithm", panel="panel",
                                    colors=plotting.shaded_family_colors(long), xlabel="message (bytes, log)",
                                    ylabel="added (bytes, log)", height=2.6, legend_cols=4, width=width,
                                    title="Memory added at the one message size measured")
    backends = list(dict.fromkeys(long["backend"]))
    by_backend = plotting.color_map(backends)
    colors = {a: by_backend[b] for a, b in zip(long["algorithm"], long["backend"])}
    fig = plotting.panel_lines(long.dropna(subset=["delta"]), x="message_bytes", y="delta", hue="algorithm",
                               panel="panel", colors=colors, logy=False, xlabel="message (bytes, log)",
                               ylabel=f"added beyond a {first}-byte message (bytes)", height=2.9, width=width,
                               title="What a longer message costs in memory, per algorithm, coloured by "
                                     "binding")
    xs = np.geomspace(first, sizes[-1], 50)
    for ax in fig.axes:
        if "heap" in ax.get_title():
            ax.plot(xs, xs - first, ls=(0, (1, 1.5)), lw=1.0, color="0.25", zorder=0)
    for legend in list(fig.legends):
        legend.remove()
    handles = [Line2D([], [], color=by_backend[b], lw=1.2, marker="o", ms=2.5) for b in backends]
    handles.append(Line2D([], [], color="0.25", ls=(0, (1, 1.5)), lw=1.0))
    labels = [*backends, "one copy of the message"]
    plotting.figure_legend(fig, (handles, labels), len(labels))
    return fig


@plotting.styled
def plot_gravity(comparison: pd.DataFrame, width: float = plotting.FULL_WIDTH):
    """The study's Gravity-SPHINCS heap beside the heap (all of it, and what code outside the interpreter
    allocated) and stack of the sets of its hash length (log axis), with the study's figure drawn across;
    None when no such set was measured."""

    bars = gravity_bars(comparison)
    if not (comparison["source"] == "measured here").any() or bars.empty:
        return None
    fig = plotting.grouped_bars(bars, category="label", group="quantity", value="bytes", ylabel="bytes (log)",
                                height=3.0, width=width,
                                title="Gravity-SPHINCS (Small) as published, beside the SPHINCS+ and SLH-DSA "
                                      "sets of its hash length measured here")
    ax = fig.axes[0]
    study = comparison[comparison["source"].str.startswith("study")]["sign_heap_bytes"].dropna()
    if len(study):
        value = float(study.iloc[0])
        if ax.get_xscale() == "log":  # horizontal bars (a narrow figure): the value runs along x
            ax.axvline(value, ls=(0, (4, 2)), lw=0.8, color="0.3", zorder=0)
            ax.annotate(f"study's peak heap, {int(value):,} B", (value, 1.0),
                        xycoords=("data", "axes fraction"), xytext=(3, -2), textcoords="offset points",
                        ha="left", va="top", fontsize=6.5, color="0.3")
        else:
            ax.axhline(value, ls=(0, (4, 2)), lw=0.8, color="0.3", zorder=0)
            ax.annotate(f"study's peak heap, {int(value):,} B", (1.0, value),
                        xycoords=("axes fraction", "data"), xytext=(-2, 3), textcoords="offset points",
                        ha="right", fontsize=6.5, color="0.3")
    return fig
