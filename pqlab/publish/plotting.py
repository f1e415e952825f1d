"""One house style for every figure: a stable colour per algorithm family, log axes where
values span decades, units in axis labels, sizes that fit a paper column.

The functions take tidy tables (as pqlab writes them) and return the matplotlib Figure;
export it with :func:`pqlab.publish.export.save_figure`.

Names and labels from the data (categories, legend entries, panel titles, annotations) are drawn through
:func:`pqlab.core.formatting.mpl_text`: a ``$`` in a name never starts mathtext.  No figure uses TeX.

The layout steps that fit texts to a drawn figure are :mod:`pqlab.publish.figure_layout` (every name is
reachable from here too).
"""
from __future__ import annotations

import functools

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.ticker import FixedLocator

from pqlab.core.escaping import mpl_text
from pqlab.core.quantities import fmt_compact, fmt_percent
from pqlab.core.tables import label_from_name, unit_divisor
from pqlab.measure.stats import CONFIDENCE
from pqlab.publish.figure_layout import (
    categories_on_y,
    draw,
    figure_legend,
    fit_tick_labels,
    grow_to_fit_labels,
)

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
#: Widths in inches at which every exported figure is drawn (pqlab.publish.export.save_figure writes both):
#: the text width of a one-column A4 article with 2.5 cm margins, and one column of a two-column paper (IEEE
#: 3.5 in, ACM 3.33 in).  Placed at these widths, no text is smaller than MIN_TEXT_PT.
FULL_WIDTH = 6.29
COLUMN_WIDTH = 3.3
MIN_TEXT_PT = 6.0
#: The figures' font: STIX (shipped with matplotlib, TrueType) matches the Times of
#: the paper (paper/pqlab.tex).
FONT = "STIXGeneral"

STYLE = {
    "figure.dpi": 110, "savefig.dpi": 300, "font.size": 8, "axes.titlesize": 8.5, "axes.labelsize": 8,
    "legend.fontsize": 7, "xtick.labelsize": 7, "ytick.labelsize": 7, "figure.titlesize": 9,
    "font.family": "serif", "font.serif": [FONT, "DejaVu Serif"], "mathtext.fontset": "stix",
    "axes.spines.top": False, "axes.spines.right": False, "axes.grid": True, "grid.alpha": 0.3,
    "grid.linewidth": 0.5, "legend.frameon": False, "pdf.fonttype": 42, "ps.fonttype": 42,
    "svg.fonttype": "none", "svg.hashsalt": "pqlab", "figure.constrained_layout.use": True,
    "text.usetex": False,
}
#: the smallest text a helper writes (value labels, annotations), in points
SMALL_PT = 6.5


def styled(draw):
    """Decorator: draw (and later save, see :func:`pqlab.publish.export.save_figure`) in the house style,
    without touching the global rcParams of the session."""
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


#: Marker shapes that, cycled beside the palette, tell apart more categories than it has colours.
MARKERS = ("o", "s", "D", "^", "v", "P", "X")


def marker_map(keys) -> dict:
    """A (colour, marker) pair per category, distinct for up to len(PALETTE) x len(MARKERS) categories when
    their lengths are coprime (a second shape where the colours repeat)."""
    keys = list(dict.fromkeys(keys))
    return {k: (PALETTE[i % len(PALETTE)], MARKERS[(i // len(PALETTE)) % len(MARKERS)])
            for i, k in enumerate(keys)}


def interval_note(low: str | None, high: str | None, drawn: str = "whiskers") -> str:
    """What whiskers (or a band: `drawn`) from the columns `low` to `high` show, as a figure must say it:
    "whiskers: quartiles" for ``*_q1``/``*_q3``, "whiskers: 95 % interval" for ``*_ci_low``/``*_ci_high`` or
    ``*_low``/``*_high``, else the two columns' labels; "" without them."""
    if not (low and high):
        return ""
    if low.endswith("_q1") and high.endswith("_q3"):
        what = "quartiles"
    elif low.endswith("_low") and high.endswith("_high"):
        what = f"{fmt_percent(CONFIDENCE, 0)} interval"
    else:
        what = f"{label_from_name(low)} to {label_from_name(high)}"
    return f"{drawn}: {what}"


def _with_note(label: str, note: str) -> str:
    return f"{label}\n({note})" if label and note else label or note


def _labels_fit_under_bars(cats, width: float, height: float) -> bool:
    """Whether category labels can stand under vertical bars: flat or slanted within the width, or upright
    without taking more than a third of the figure's height and with their lines side by side within a
    category's width (estimated from their length at 7 pt)."""
    lines = [line for c in cats for line in str(c).split("\n")] or [""]
    longest = max(map(len, lines)) * 0.5 * 7  # points
    across = max(str(c).count("\n") + 1 for c in cats or [""]) * 7 * 1.25  # points across an upright label
    per_category = 0.8 * width * 72 / max(len(cats), 1)
    return longest <= per_category * 1.6 or (longest <= height * 72 / 3 and across <= per_category * 0.8)


#: inches of figure height a category needs when the categories run down the side: bars side by side per
#: group, or (dots) one row of markers; and per line of its label (7 pt beside bars, SMALL_PT beside dots)
BAR_ROW_IN, BAR_IN, DOT_ROW_IN, LABEL_LINE_IN, DOT_LABEL_LINE_IN = 0.07, 0.07, 0.125, 0.12, 0.11
#: the tallest figure a horizontal bar chart grows to before it draws dots instead
MAX_BARS_HEIGHT_IN = 6.0


def category_rows(cats, groups: int, dots: bool = False) -> float:
    """Inches of height `cats` need down the side of a chart of `groups` bars (or dots) per category."""
    lines = max((str(c).count("\n") + 1 for c in cats), default=1)
    if dots:
        return len(cats) * max(DOT_ROW_IN, 0.015 + DOT_LABEL_LINE_IN * lines)
    return len(cats) * max(BAR_ROW_IN + BAR_IN * groups, 0.04 + LABEL_LINE_IN * lines)


@styled
def grouped_bars(df: pd.DataFrame, *, category: str, group: str, value: str, low: str | None = None,
                 high: str | None = None, unit: str = "", ylabel: str = "", log: bool = True,
                 title: str = "", colors: dict | None = None, width: float = FULL_WIDTH, height: float = 2.6,
                 ax=None, horizontal: bool | None = None, dots: bool | None = None, legend: bool = True):
    """Bars of `value` per `category`, side by side per `group` (e.g. operations), with whiskers
    from `low` to `high` (e.g. the quartiles).  Missing combinations leave a gap.  `ax`: draw
    into an existing axes (a panel of a larger figure) instead of a new figure.  `horizontal`: the bars run
    along x with the categories down the side, first at the top (None: when the labels would not fit under
    vertical bars of a figure this wide; the figure then grows to fit its categories).  `dots`: one marker
    per group on a row per category instead of bars (None: when horizontal bars would make the figure taller
    than MAX_BARS_HEIGHT_IN).  `ylabel` names the value axis either way.  `legend=False`: no legend (the
    caller makes one).  `unit`: show the values in this unit ("µs", "ms", "kcycles", "B" ...), converted from
    the unit the `value` column's name says (time_ns_median holds ns:
    :func:`pqlab.core.formatting.unit_divisor`); `low` and `high` are in the same unit.  Empty: the values as
    they are.  The axis label is `ylabel`, or the value's name with the unit."""
    scale = unit_divisor(value, unit) if unit else 1.0
    ylabel = _with_note(ylabel or (f"{label_from_name(value)} ({unit})" if unit else ""),
                        interval_note(low, high))
    cats = list(dict.fromkeys(df[category]))
    groups = list(dict.fromkeys(df[group]))
    colors = colors or color_map(groups)
    own = ax is None
    if horizontal is None:
        horizontal = own and not _labels_fit_under_bars(cats, width, height)
    if dots is None:
        dots = horizontal and 1.3 + category_rows(cats, len(groups)) > MAX_BARS_HEIGHT_IN
    if horizontal and own:
        height = max(height, 1.3 + category_rows(cats, len(groups), dots))
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(width, height))
    w = 0.8 / max(len(groups), 1)
    x = np.arange(len(cats))[::-1] if horizontal else np.arange(len(cats))
    for i, g in enumerate(groups):
        sub = df[df[group] == g].set_index(category).reindex(cats)
        y = sub[value].to_numpy(float) / scale
        err = None
        if low and high:
            err = np.vstack([y - sub[low].to_numpy(float) / scale, sub[high].to_numpy(float) / scale - y])
            err = np.where(np.isfinite(err), np.clip(err, 0, None), 0)
        offset = 0.0 if dots else (i - (len(groups) - 1) / 2) * w
        style = {"label": mpl_text(g), "color": colors[g]}
        if dots:
            ax.errorbar(y, x, xerr=err, fmt=MARKERS[i % len(MARKERS)], ms=3.2, elinewidth=0.6, capsize=0,
                        mec="white", mew=0.3, alpha=0.9, **style)
        elif horizontal:
            ax.barh(x - offset, y, w, xerr=err, error_kw={"elinewidth": 0.7, "capsize": 1.5}, **style)
        else:
            ax.bar(x + offset, y, w, yerr=err, error_kw={"elinewidth": 0.7, "capsize": 1.5}, **style)
    if horizontal:
        ax.set_yticks(x, [mpl_text(c) for c in cats])
        if dots:
            ax.tick_params(axis="y", labelsize=SMALL_PT)
        ax.set_ylim(-0.6, len(cats) - 0.4)
        ax.set_xscale("log" if log else "linear")
        ax.set_xlabel(ylabel)
        if dots:
            ax.grid(axis="y", lw=0.3)
        else:
            ax.grid(axis="y", visible=False)
    else:
        ax.set_xticks(x, [mpl_text(c) for c in cats])
        ax.set_yscale("log" if log else "linear")
        ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    if len(groups) > 1 and legend:
        if own:
            figure_legend(fig, ax.get_legend_handles_labels())
        else:
            ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    if horizontal:
        if own:
            grow_to_fit_labels(ax)
    else:
        fit_tick_labels(ax)
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
            width: float = COLUMN_WIDTH * 1.4, height: float = 3.0, annotate: bool = True,
            colors: dict | None = None):
    """One point per row, coloured by `hue` (family colours when hue is 'family'), optionally labelled."""
    fig, ax = plt.subplots(figsize=(width, height))
    keys = list(dict.fromkeys(df[hue]))
    colors = colors or ({k: family_color(k) for k in keys} if hue == "family" else color_map(keys))
    for k in keys:
        sub = df[df[hue] == k]
        ax.scatter(sub[x], sub[y], s=14, color=colors[k], label=mpl_text(k), alpha=0.85, edgecolors="none")
        if annotate and label:
            for _, r in sub.iterrows():
                ax.annotate(mpl_text(r[label]), (r[x], r[y]), fontsize=SMALL_PT, xytext=(2, 2),
                            textcoords="offset points")
    _finish(ax, logx, logy, xlabel or x, ylabel or y, title)
    ax.legend(markerscale=1.2)
    return fig


@styled
def lines(df: pd.DataFrame, *, x: str, y: str, hue: str, low: str | None = None, high: str | None = None,
          unit: str = "", xlabel: str = "", ylabel: str = "", logx: bool = False, logy: bool = True,
          title: str = "", colors: dict | None = None, width: float = COLUMN_WIDTH * 1.4, height: float = 2.8,
          ax=None):
    """One line per `hue` of `y` against `x`, with a band from `low` to `high` when given.  `unit`: show `y`
    (and the band) in this unit, converted from the unit the column's name says (as :func:`grouped_bars`)."""
    scale = unit_divisor(y, unit) if unit else 1.0
    fig, ax = (ax.figure, ax) if ax is not None else plt.subplots(figsize=(width, height))
    keys = list(dict.fromkeys(df[hue]))
    colors = colors or color_map(keys)
    for k in keys:
        sub = df[df[hue] == k].sort_values(x)
        ax.plot(sub[x], sub[y] / scale, marker="o", ms=2.5, lw=1, color=colors[k], label=mpl_text(k))
        if low and high:
            ax.fill_between(sub[x], sub[low] / scale, sub[high] / scale, color=colors[k], alpha=0.2, lw=0)
    _finish(ax, logx, logy, xlabel or x, _with_note(ylabel or y, interval_note(low, high, "band")), title)
    ax.legend()
    return fig


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
                linestyles: dict | None = None, connect: bool = True, unit: str = "", xlabel: str = "",
                ylabel: str = "", logx: bool = True, logy: bool = True, symlog_x: bool = False,
                eng_x: bool = False, model_label: str = "fitted model", mark_label: str = "",
                width: float = FULL_WIDTH, height: float = 3.0, legend_cols: int = 4, title: str = ""):
    """Small multiples: one panel per value of `panel`, one series per `hue` of `y` against `x`.

    `model` (optional): rows with columns `hue`, `panel`, ``intercept`` and ``slope`` (units of `y`
    and `x`): the straight line intercept + slope * x is drawn over the series' x range (solid when
    `connect` is False and the data are drawn as markers only, else dashed); when `mark` names a
    column of `model`, a vertical tick marks the model at that x (e.g. a crossover length).
    `symlog_x` puts x = 0 on a log-like axis (linear below 1), ticked at 0 and at powers of ten;
    `eng_x` labels x with SI prefixes (10k, 1M).  One legend below the panels.  In a narrow figure (a column)
    the panels stand one above the other, each `height` high less the legend's share.  The legend has as many
    columns (up to `legend_cols`) as fit the width.  `unit`: show `y` and the model in this unit, converted
    from the unit the column's name says (as :func:`grouped_bars`)."""
    from matplotlib.lines import Line2D
    from matplotlib.ticker import EngFormatter, NullLocator

    scale = unit_divisor(y, unit) if unit else 1.0
    panels = panels or list(dict.fromkeys(df[panel]))
    keys = list(dict.fromkeys(df[hue]))
    colors = colors or color_map(keys)
    narrow = width < 4.5 and len(panels) > 1
    if narrow:
        height = height * len(panels) * 0.8
    shape = (len(panels), 1) if narrow else (1, len(panels))
    fig, grid = plt.subplots(*shape, figsize=(width, height), sharex=True, squeeze=False)
    axes = [list(grid[:, 0])] if narrow else grid
    model_style = "-" if not connect else (0, (3, 2))
    for ax, p in zip(axes[0], panels):
        sub = df[df[panel] == p]
        for i, k in enumerate(keys):
            s = sub[sub[hue] == k].sort_values(x)
            if s.empty:
                continue
            style = (linestyles or {}).get(k, "-") if connect else "none"
            ax.plot(s[x], s[y] / scale, marker=MARKERS[i % len(MARKERS)], ms=3 if connect else 3.5, lw=0.9,
                    ls=style, color=colors[k], label=mpl_text(k), mec="white" if not connect else None,
                    mew=0.3 if not connect else 1)
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
                ax.plot([xm], [(a + b * xm) / scale], marker="|", ms=8, mew=1.2, color="0.1", ls="none",
                        zorder=3)
        if symlog_x:
            ax.set_xscale("symlog", linthresh=1, linscale=0.3)
            top = float(np.nanmax(df[x]))
            decades = range(1, int(np.log10(max(top, 10))) + 1)
            ax.xaxis.set_major_locator(FixedLocator([0] + [10.0 ** k for k in decades]))
            ax.xaxis.set_minor_locator(NullLocator())
            eng_x = True
        else:
            ax.set_xscale("log" if logx else "linear")
        if eng_x:
            ax.xaxis.set_major_formatter(EngFormatter(sep=""))
        ax.set_yscale("log" if logy else "linear")
        ax.set_title(mpl_text(p))
        if not narrow or ax is axes[0][-1]:
            ax.set_xlabel(xlabel or x)
        if narrow:
            ax.set_ylabel(ylabel or y)
    axes[0][0].set_ylabel(ylabel or y)
    pairs = [pair for ax in axes[0] for pair in zip(*ax.get_legend_handles_labels())]
    handles, labels = [h for h, _ in pairs], [lab for _, lab in pairs]  # figure_legend keeps each label once
    if model is not None:
        handles.append(Line2D([], [], ls=model_style, lw=0.8, color="0.3"))
        labels.append(model_label)
        if mark:
            handles.append(Line2D([], [], marker="|", ls="none", ms=8, mew=1.2, color="0.1"))
            labels.append(mark_label or mark.replace("_", " "))
    figure_legend(fig, (handles, labels), legend_cols)
    if title:
        fig.suptitle(title)
    return fig


@styled
def heatmap(matrix: pd.DataFrame, *, log: bool = True, cbar_label: str = "", title: str = "",
            width: float = FULL_WIDTH, height: float | None = None, fmt=None,
            annotations: pd.DataFrame | None = None):
    """A labelled heatmap of a numeric table (rows x columns), log colour scale by default.

    `annotations` (same shape): the values written in the cells instead of `matrix`'s, e.g. raw
    values over a per-column normalised colour scale; `fmt` formats them (default
    :func:`pqlab.core.formatting.fmt_compact`).  Values that do not fit their cells at this width are left
    out, and the title says so."""
    from matplotlib.colors import LogNorm


    fmt = fmt or fmt_compact

    values = matrix.to_numpy(float)
    height = height or max(2.0, 0.16 * len(matrix) + 1.0)
    fig, ax = plt.subplots(figsize=(width, height))
    positive = values[np.isfinite(values) & (values > 0)]
    norm = LogNorm(vmin=positive.min(), vmax=positive.max()) if log and positive.size else None
    im = ax.imshow(np.ma.masked_invalid(values), aspect="auto", cmap="viridis", norm=norm)
    ax.set_xticks(range(matrix.shape[1]), [mpl_text(c) for c in matrix.columns])
    ax.set_yticks(range(matrix.shape[0]), [mpl_text(i) for i in matrix.index])
    ax.grid(False)
    cells = []
    if matrix.size <= 400 or annotations is not None:
        shown = values if annotations is None else annotations.to_numpy(float)
        for (i, j), v in np.ndenumerate(shown):
            if np.isfinite(v):
                # dark text on yellow, blank
                light = not np.isfinite(values[i, j]) or im.norm(values[i, j]) > 0.65
                cells.append(ax.text(j, i, fmt(v), ha="center", va="center", fontsize=SMALL_PT,
                                     color="black" if light else "white"))
    fig.colorbar(im, ax=ax, label=cbar_label)
    if title:
        ax.set_title(title)
    fit_tick_labels(ax)
    if cells:  # values written in the cells only where they fit them (else the colours alone)
        draw(fig)
        cell_w = ax.bbox.width / matrix.shape[1]
        cell_h = ax.bbox.height / matrix.shape[0]
        if any(c.get_window_extent().width > 0.95 * cell_w or c.get_window_extent().height > cell_h
               for c in cells):
            for c in cells:
                c.remove()
            if title:
                ax.set_title(f"{title} (colours only: the values do not fit at this width)")
    return fig


@styled
def hbars(df: pd.DataFrame, *, label: str, value: str, hue: str = "family", xlabel: str = "",
          log: bool = True, title: str = "", colors: dict | None = None, width: float = COLUMN_WIDTH * 1.7,
          height: float | None = None, reference: float | None = None, fmt=None, low: str | None = None,
          high: str | None = None):
    """Horizontal bars of `value`, one per row in the given order (the first at the top), coloured by
    `hue` (family colours when hue is 'family'), each annotated with its value; a rankings chart.  On a log
    axis (`log`) each row is a point instead of a bar: a bar's length there depends on where the axis starts.
    `reference` draws a vertical line at that value (e.g. 1 for ratios); `fmt` formats the values (default
    :func:`pqlab.core.formatting.fmt_compact`); `low` and `high` name the columns of an interval drawn as
    whiskers (rows without one get none)."""

    fmt = fmt or fmt_compact
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
    if log:  # a bar's length on a log axis means nothing: a point per row, with its whiskers
        ax.errorbar(vals, y, xerr=err, fmt="none", elinewidth=0.7, capsize=1.5, ecolor="0.2")
        ax.scatter(vals, y, c=[colors[k] for k in df[hue]], s=14, zorder=3, edgecolors="white",
                   linewidths=0.3)
        ax.grid(axis="y", lw=0.3)
    else:
        ax.barh(y, vals, color=[colors[k] for k in df[hue]], height=0.75, xerr=err,
                error_kw={"elinewidth": 0.7, "capsize": 1.5, "ecolor": "0.2"})
        ax.grid(axis="y", visible=False)
    ends = vals if err is None else vals + err[1]
    for yi, v, end in zip(y, vals, ends):
        if np.isfinite(v):
            ax.annotate(fmt(v), (end, yi), xytext=(2, 0), textcoords="offset points", va="center",
                        fontsize=SMALL_PT)
    ax.set_yticks(y, [mpl_text(v) for v in df[label]])
    ax.tick_params(axis="y", labelsize=SMALL_PT if len(df) > 30 else 7)
    ax.set_ylim(-0.6, len(df) - 0.4)
    if log:
        ax.set_xscale("log")
    top = np.nanmax(vals[np.isfinite(vals)]) if np.isfinite(vals).any() else 1.0
    ax.set_xlim(right=top * (4 if log else 1.2))  # room for the value labels
    if reference is not None:
        ax.axvline(reference, color="0.3", lw=0.8, ls=":")
    ax.set_xlabel(_with_note(xlabel or value, interval_note(low, high)))
    if title:
        ax.set_title(title)
    handles = [plt.Line2D([], [], marker="o", ls="", color=colors[k]) if log
               else plt.Rectangle((0, 0), 1, 1, color=colors[k]) for k in keys]
    ax.legend(handles, [mpl_text(k) for k in keys], loc="lower right")
    return fig


def place_labels(ax, xs, ys, texts, fontsize: float = SMALL_PT) -> None:
    """Label points on log-log axes without overlaps: each label starts up and right of its point
    and moves down (a thin line then joins it to its point) until it clears the labels above it."""
    fig = ax.figure
    draw(fig)  # fixes the limits and the axes' size
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
        while any(left < r and left + w > lft and bottom < t and bottom + line > b
                  for lft, r, b, t in placed):
            bottom -= line
        placed.append((left, left + w, bottom, bottom + line))
        dx, dy = left - fx[i], bottom - fy[i]
        moved = abs(dy - 2) > 0.5
        ax.annotate(mpl_text(texts[i]), (xs[i], ys[i]), xytext=(dx, dy), textcoords="offset points",
                    fontsize=fontsize, va="bottom", ha="left",
                    arrowprops={"arrowstyle": "-", "lw": 0.4, "color": "0.5", "shrinkA": 0, "shrinkB": 2}
                    if moved else None)


def finish_ratio_bars(fig, log: bool) -> None:
    """Bars of ratios (from :func:`grouped_bars`, upright or turned horizontal for the width): a dashed line
    at 1 along the value axis, plain-number ticks on a log axis."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    ax = fig.axes[0]
    flipped = categories_on_y(ax)
    (ax.axvline if flipped else ax.axhline)(1.0, color="0.2", lw=0.8, ls="--", zorder=0)
    if log:
        axis = ax.xaxis if flipped else ax.yaxis
        axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        axis.set_minor_formatter(NullFormatter())
