"""One house style for every figure: a stable colour per algorithm family, log axes where
values span decades, units in axis labels, sizes that fit a paper column.

The functions take tidy tables (as pqlab writes them) and return the matplotlib Figure;
export it with :func:`pqlab.export.save_figure`.
"""
from __future__ import annotations

import functools

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

FAMILY_COLORS = {  # colour-blind safe (Okabe-Ito), one per family, the same in every figure
    "lattice": "#0072B2",
    "hash-based": "#D55E00",
    "multivariate": "#009E73",
    "code-based": "#CC79A7",
    "RSA": "#E69F00",
    "elliptic-curve": "#56B4E9",
    "symmetric": "#999999",
    "other": "#000000",
}
#: Stable colours for categories that are not families (operations, backends, sources).
PALETTE = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000"]
COLUMN_WIDTH = 3.5  # inches: one column of a two-column paper
FULL_WIDTH = 7.2

STYLE = {
    "figure.dpi": 110, "savefig.dpi": 300, "font.size": 8, "axes.titlesize": 9, "axes.labelsize": 8,
    "legend.fontsize": 7, "xtick.labelsize": 7, "ytick.labelsize": 7, "axes.spines.top": False,
    "axes.spines.right": False, "axes.grid": True, "grid.alpha": 0.3, "grid.linewidth": 0.5,
    "legend.frameon": False, "pdf.fonttype": 42, "svg.fonttype": "none", "svg.hashsalt": "pqlab", "figure.constrained_layout.use": True,
}


def styled(draw):
    """Decorator: draw (and later save, see :func:`pqlab.export.save_figure`) in the house style, without
    touching the global rcParams of the session."""
    @functools.wraps(draw)
    def wrapper(*args, **kwargs):
        with plt.rc_context(STYLE):
            return draw(*args, **kwargs)
    return wrapper


def family_color(family: str) -> str:
    return FAMILY_COLORS.get(family, FAMILY_COLORS["other"])


def color_map(keys) -> dict:
    """Stable colours for any list of categories (in the given order)."""
    return {k: PALETTE[i % len(PALETTE)] for i, k in enumerate(dict.fromkeys(keys))}


@styled
def grouped_bars(df: pd.DataFrame, *, category: str, group: str, value: str, low: str | None = None,
                 high: str | None = None, scale: float = 1.0, ylabel: str = "", log: bool = True,
                 title: str = "", colors: dict | None = None, width: float = FULL_WIDTH, height: float = 2.6,
                 ax=None):
    """Bars of `value` per `category`, side by side per `group` (e.g. operations), with whiskers
    from `low` to `high` (e.g. the quartiles).  Missing combinations leave a gap.  `ax`: draw
    into an existing axes (a panel of a larger figure) instead of a new figure."""
    cats = list(dict.fromkeys(df[category]))
    groups = list(dict.fromkeys(df[group]))
    colors = colors or color_map(groups)
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(width, height))
    w = 0.8 / max(len(groups), 1)
    x = np.arange(len(cats))
    for i, g in enumerate(groups):
        sub = df[df[group] == g].set_index(category).reindex(cats)
        y = sub[value].to_numpy(float) / scale
        err = None
        if low and high:
            err = np.vstack([y - sub[low].to_numpy(float) / scale, sub[high].to_numpy(float) / scale - y])
            err = np.where(np.isfinite(err), np.clip(err, 0, None), 0)
        ax.bar(x + (i - (len(groups) - 1) / 2) * w, y, w, yerr=err, label=str(g), color=colors[g],
               error_kw={"elinewidth": 0.7, "capsize": 1.5})
    ax.set_xticks(x, cats, rotation=30 if max(map(len, map(str, cats))) > 8 else 0, ha="right")
    if log:
        ax.set_yscale("log")
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    if len(groups) > 1:
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return fig


def _finish(ax, logx: bool, logy: bool, xlabel: str, ylabel: str, title: str) -> None:
    """Scales, labels and title: the same for every x-y figure."""
    ax.set_xscale("log" if logx else "linear")
    ax.set_yscale("log" if logy else "linear")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)


@styled
def scatter(df: pd.DataFrame, *, x: str, y: str, label: str | None = "algorithm", hue: str = "family",
            xlabel: str = "", ylabel: str = "", logx: bool = True, logy: bool = True, title: str = "",
            width: float = COLUMN_WIDTH * 1.4, height: float = 3.0, annotate: bool = True, colors: dict | None = None):
    """One point per row, coloured by `hue` (family colours when hue is 'family'), optionally labelled."""
    fig, ax = plt.subplots(figsize=(width, height))
    keys = list(dict.fromkeys(df[hue]))
    colors = colors or ({k: family_color(k) for k in keys} if hue == "family" else color_map(keys))
    for k in keys:
        sub = df[df[hue] == k]
        ax.scatter(sub[x], sub[y], s=14, color=colors[k], label=str(k), alpha=0.85, edgecolors="none")
        if annotate and label:
            for _, r in sub.iterrows():
                ax.annotate(str(r[label]), (r[x], r[y]), fontsize=5, xytext=(2, 2), textcoords="offset points")
    _finish(ax, logx, logy, xlabel or x, ylabel or y, title)
    ax.legend(fontsize=6, markerscale=1.2)
    return fig


@styled
def lines(df: pd.DataFrame, *, x: str, y: str, hue: str, low: str | None = None, high: str | None = None,
          scale: float = 1.0, xlabel: str = "", ylabel: str = "", logx: bool = False, logy: bool = True,
          title: str = "", colors: dict | None = None, width: float = COLUMN_WIDTH * 1.4, height: float = 2.8, ax=None):
    """One line per `hue` of `y` against `x`, with a band from `low` to `high` when given."""
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(width, height))
    keys = list(dict.fromkeys(df[hue]))
    colors = colors or color_map(keys)
    for k in keys:
        sub = df[df[hue] == k].sort_values(x)
        ax.plot(sub[x], sub[y] / scale, marker="o", ms=2.5, lw=1, color=colors[k], label=str(k))
        if low and high:
            ax.fill_between(sub[x], sub[low] / scale, sub[high] / scale, color=colors[k], alpha=0.2, lw=0)
    _finish(ax, logx, logy, xlabel or x, ylabel or y, title)
    ax.legend(fontsize=6)
    return fig


MARKERS = ["o", "s", "^", "D", "v", "p", "h", "<", ">", "8"]  # filled shapes only


def shaded_family_colors(df: pd.DataFrame, key: str = "algorithm", family: str = "family") -> dict:
    """A colour per `key` (e.g. algorithm): its family's colour, in darker and lighter shades when a
    family has several members, so families stay recognisable and members distinguishable."""
    from matplotlib.colors import to_rgb

    pairs = df[[key, family]].drop_duplicates(key)
    out = {}
    for fam, sub in pairs.groupby(family, sort=False):
        base = np.array(to_rgb(family_color(fam)))
        members = list(sub[key])
        for i, k in enumerate(members):
            t = 0.0 if len(members) == 1 else -0.35 + 0.7 * i / (len(members) - 1)  # dark .. light
            rgb = base * (1 + t) if t < 0 else base + (1 - base) * t
            out[k] = tuple(np.clip(rgb, 0, 1))
    return out


@styled
def panel_lines(df: pd.DataFrame, *, x: str, y: str, hue: str, panel: str, panels: list | None = None,
                model: pd.DataFrame | None = None, mark: str | None = None, colors: dict | None = None,
                linestyles: dict | None = None, connect: bool = True, scale: float = 1.0, xlabel: str = "",
                ylabel: str = "", logx: bool = True, logy: bool = True, symlog_x: bool = False, eng_x: bool = False,
                model_label: str = "fitted model", mark_label: str = "", width: float = FULL_WIDTH,
                height: float = 3.0, legend_cols: int = 4, title: str = ""):
    """Small multiples: one panel per value of `panel`, one series per `hue` of `y` against `x`.

    `model` (optional): rows with columns `hue`, `panel`, ``intercept`` and ``slope`` (units of `y`
    and `x`): the straight line intercept + slope * x is drawn over the series' x range (solid when
    `connect` is False and the data are drawn as markers only, else dashed); when `mark` names a
    column of `model`, a vertical tick marks the model at that x (e.g. a crossover length).
    `symlog_x` puts x = 0 on a log-like axis (linear below 1), ticked at 0 and at powers of ten;
    `eng_x` labels x with SI prefixes (10k, 1M).  One legend below the panels."""
    from matplotlib.lines import Line2D
    from matplotlib.ticker import EngFormatter, FixedLocator, NullLocator

    panels = panels or list(dict.fromkeys(df[panel]))
    keys = list(dict.fromkeys(df[hue]))
    colors = colors or color_map(keys)
    fig, axes = plt.subplots(1, len(panels), figsize=(width, height), sharex=True, squeeze=False)
    model_style = "-" if not connect else (0, (3, 2))
    for ax, p in zip(axes[0], panels):
        sub = df[df[panel] == p]
        for i, k in enumerate(keys):
            s = sub[sub[hue] == k].sort_values(x)
            if s.empty:
                continue
            style = (linestyles or {}).get(k, "-") if connect else "none"
            ax.plot(s[x], s[y] / scale, marker=MARKERS[i % len(MARKERS)], ms=3 if connect else 3.5, lw=0.9, ls=style,
                    color=colors[k], label=str(k), mec="white" if not connect else None, mew=0.3 if not connect else 1)
            if model is None:
                continue
            m = model[(model[hue] == k) & (model[panel] == p)]
            if not len(m):
                continue
            a, b = float(m["intercept"].iloc[0]), float(m["slope"].iloc[0])
            lo, hi = float(s[x].min()), float(s[x].max())
            xs = np.unique(np.concatenate([[lo], np.geomspace(max(lo, 1), hi, 200)]))
            ax.plot(xs, (a + b * xs) / scale, ls=model_style, lw=0.8, color=colors[k], alpha=0.9, zorder=1)
            if mark and np.isfinite(xm := float(m[mark].iloc[0])) and lo <= xm <= hi:
                ax.plot([xm], [(a + b * xm) / scale], marker="|", ms=8, mew=1.2, color="0.1", ls="none", zorder=3)
        if symlog_x:
            ax.set_xscale("symlog", linthresh=1, linscale=0.3)
            top = float(np.nanmax(df[x]))
            ax.xaxis.set_major_locator(FixedLocator([0] + [10.0 ** k for k in range(1, int(np.log10(max(top, 10))) + 1)]))
            ax.xaxis.set_minor_locator(NullLocator())
            eng_x = True
        else:
            ax.set_xscale("log" if logx else "linear")
        if eng_x:
            ax.xaxis.set_major_formatter(EngFormatter(sep=""))
        ax.set_yscale("log" if logy else "linear")
        ax.set_title(str(p))
        ax.set_xlabel(xlabel or x)
    axes[0][0].set_ylabel(ylabel or y)
    handles, labels = axes[0][0].get_legend_handles_labels()
    for ax in axes[0][1:]:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
    if model is not None:
        handles.append(Line2D([], [], ls=model_style, lw=0.8, color="0.3"))
        labels.append(model_label)
        if mark:
            handles.append(Line2D([], [], marker="|", ls="none", ms=8, mew=1.2, color="0.1"))
            labels.append(mark_label or mark.replace("_", " "))
    fig.legend(handles, labels, loc="outside lower center", ncols=legend_cols, fontsize=6)
    if title:
        fig.suptitle(title, fontsize=9)
    return fig


@styled
def heatmap(matrix: pd.DataFrame, *, log: bool = True, cbar_label: str = "", title: str = "",
            width: float = FULL_WIDTH, height: float | None = None, fmt: str = "{:.3g}",
            annotations: pd.DataFrame | None = None):
    """A labelled heatmap of a numeric table (rows x columns), log colour scale by default.

    `annotations` (same shape): the values written in the cells instead of `matrix`'s, e.g. raw
    values over a per-column normalised colour scale."""
    from matplotlib.colors import LogNorm

    values = matrix.to_numpy(float)
    height = height or max(2.0, 0.16 * len(matrix) + 1.0)
    fig, ax = plt.subplots(figsize=(width, height))
    positive = values[np.isfinite(values) & (values > 0)]
    norm = LogNorm(vmin=positive.min(), vmax=positive.max()) if log and positive.size else None
    im = ax.imshow(np.ma.masked_invalid(values), aspect="auto", cmap="viridis", norm=norm)
    ax.set_xticks(range(matrix.shape[1]), matrix.columns, rotation=30, ha="right")
    ax.set_yticks(range(matrix.shape[0]), matrix.index)
    ax.grid(False)
    if matrix.size <= 400 or annotations is not None:
        shown = values if annotations is None else annotations.to_numpy(float)
        for (i, j), v in np.ndenumerate(shown):
            if np.isfinite(v):
                light = not np.isfinite(values[i, j]) or im.norm(values[i, j]) > 0.65  # dark text on yellow, blank
                ax.text(j, i, fmt.format(v), ha="center", va="center", fontsize=5,
                        color="black" if light else "white")
    fig.colorbar(im, ax=ax, label=cbar_label)
    if title:
        ax.set_title(title)
    return fig


@styled
def hbars(df: pd.DataFrame, *, label: str, value: str, hue: str = "family", xlabel: str = "", log: bool = True,
          title: str = "", colors: dict | None = None, width: float = COLUMN_WIDTH * 1.7, height: float | None = None,
          reference: float | None = None, fmt: str = "{:.3g}", low: str | None = None, high: str | None = None):
    """Horizontal bars of `value`, one per row in the given order (the first at the top), coloured by
    `hue` (family colours when hue is 'family'), each annotated with its value; a rankings chart.
    `reference` draws a vertical line at that value (e.g. 1 for ratios); `low` and `high` name the
    columns of an interval drawn as whiskers (rows without one get none)."""
    keys = list(dict.fromkeys(df[hue]))
    colors = colors or ({k: family_color(k) for k in keys} if hue == "family" else color_map(keys))
    height = height or max(1.6, 0.13 * len(df) + 0.8)
    fig, ax = plt.subplots(figsize=(width, height))
    y = np.arange(len(df))[::-1]
    vals = df[value].to_numpy(float)
    err = None
    if low and high:
        err = np.vstack([vals - df[low].to_numpy(float), df[high].to_numpy(float) - vals])
        err = np.where(np.isfinite(err), np.clip(err, 0, None), 0)
    ax.barh(y, vals, color=[colors[k] for k in df[hue]], height=0.75, xerr=err,
            error_kw={"elinewidth": 0.7, "capsize": 1.5, "ecolor": "0.2"})
    ends = vals if err is None else vals + err[1]
    for yi, v, end in zip(y, vals, ends):
        if np.isfinite(v):
            ax.annotate(fmt.format(v), (end, yi), xytext=(2, 0), textcoords="offset points", va="center", fontsize=5)
    ax.set_yticks(y, df[label].astype(str))
    ax.tick_params(axis="y", labelsize=5.5 if len(df) > 30 else 7)
    ax.set_ylim(-0.6, len(df) - 0.4)
    if log:
        ax.set_xscale("log")
    if reference is not None:
        ax.axvline(reference, color="0.3", lw=0.8, ls=":")
    ax.grid(axis="y", visible=False)
    ax.set_xlabel(xlabel or value)
    if title:
        ax.set_title(title)
    handles = [plt.Rectangle((0, 0), 1, 1, color=colors[k]) for k in keys]
    ax.legend(handles, [str(k) for k in keys], fontsize=6, loc="lower right")
    return fig


def place_labels(ax, xs, ys, texts, fontsize: float = 5.5) -> None:
    """Label points on log-log axes without overlaps: each label starts up and right of its point
    and moves down (a thin line then joins it to its point) until it clears the labels above it."""
    fig = ax.figure
    fig.canvas.draw()  # fixes the limits and the axes' size
    (x0, x1), (y0, y1) = np.log10(ax.get_xlim()), np.log10(ax.get_ylim())
    bbox = ax.get_window_extent()
    width_pt, height_pt = bbox.width * 72 / fig.dpi, bbox.height * 72 / fig.dpi
    fx = (np.log10(xs) - x0) / (x1 - x0) * width_pt  # positions in points from the axes' corner
    fy = (np.log10(ys) - y0) / (y1 - y0) * height_pt
    line = fontsize * 1.25
    placed = []  # (left, right, bottom, top) in points
    for i in np.argsort(-fy):
        w = 0.55 * fontsize * len(texts[i])
        left = min(fx[i] + 3, width_pt - w)
        bottom = fy[i] + 2
        while any(left < r and left + w > lft and bottom < t and bottom + line > b for lft, r, b, t in placed):
            bottom -= line
        placed.append((left, left + w, bottom, bottom + line))
        dx, dy = left - fx[i], bottom - fy[i]
        moved = abs(dy - 2) > 0.5
        ax.annotate(texts[i], (xs[i], ys[i]), xytext=(dx, dy), textcoords="offset points", fontsize=fontsize,
                    va="bottom", ha="left",
                    arrowprops={"arrowstyle": "-", "lw": 0.4, "color": "0.5", "shrinkA": 0, "shrinkB": 2}
                    if moved else None)


def finish_ratio_bars(fig, n: int, log: bool) -> None:
    """Bars of ratios (from :func:`grouped_bars`, `n` categories): a dashed line at 1, upright labels
    when crowded, plain-number ticks on a log axis, the legend above the axes."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    ax = fig.axes[0]
    ax.axhline(1.0, color="0.2", lw=0.8, ls="--", zorder=0)
    if n > 12:
        ax.tick_params(axis="x", labelrotation=90, labelsize=5.5)
        for t in ax.get_xticklabels():
            t.set_horizontalalignment("center")
    if log:
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_xlim(-0.6, n - 0.4)
    ax.grid(axis="x", visible=False)
    ax.legend(ncols=3, loc="lower left", bbox_to_anchor=(0.0, 1.0), fontsize=6, borderaxespad=0.2)
