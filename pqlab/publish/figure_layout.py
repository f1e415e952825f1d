"""Figures laid out for print: every text measured on the drawn figure, rotated, wrapped, thinned or given
room until none overlaps another or leaves the figure (:func:`pqlab.publish.export.check_layout` then refuses
a figure where one still does).  The chart functions of :mod:`pqlab.publish.plotting` and the export call
these.
"""
from __future__ import annotations

import math
import textwrap
import warnings

from matplotlib.ticker import FixedLocator


def draw(fig) -> None:
    """Lay the figure out and draw it, unless nothing changed since it was last drawn (matplotlib marks a
    figure stale when any of its artists changes).  Every fitting step measures texts on a drawn figure; a
    draw of a dense figure costs up to a second, and most steps change nothing, so they do not draw again."""
    if fig.stale:
        fig.canvas.draw()


def wrap(text: str, chars: int) -> str:
    """`text` on lines of at most `chars` characters: broken at spaces (never at a hyphen: "ML-DSA-44" stays
    whole), and a word longer than a line (a run id, a CPU model from data) cut, never between the backslash
    and the character it escapes (``\\$`` of :func:`pqlab.core.escaping.mpl_text` stays whole)."""
    lines = []
    for line in textwrap.wrap(text, chars, break_long_words=False, break_on_hyphens=False) or [text]:
        while len(line) > chars:
            cut = chars - (line[chars - 1] == "\\")
            lines.append(line[:cut])
            line = line[cut:]
        lines.append(line)
    return "\n".join(lines)


def legend_columns(labels, width: float, most: int) -> int:
    """How many legend columns of these labels fit across `width` inches (at most `most`), from the length of
    their longest line at the legend's 7 pt."""
    chars = max((len(line) for lab in labels for line in str(lab).split("\n")), default=1)
    longest = chars * 0.5 * 7 + 22  # text, handle and gap, points
    return max(1, min(most, int(width * 72 * 0.95 // longest)))


def figure_legend(fig, handles_labels, max_cols: int = 4):
    """One legend for the figure, below the axes, in as many columns as fit its width (at most `max_cols`); a
    label wider than the figure wraps onto more lines (:func:`wrap`: at spaces, a run id or a name stays whole
    unless it is wider than the figure)."""
    handles, labels = [], []
    for h, lab in zip(*handles_labels):
        if lab not in labels:  # each label once, with its first handle
            handles.append(h)
            labels.append(lab)
    width = fig.get_figwidth()
    chars = max(12, int((width * 72 * 0.95 - 22) / (0.5 * 7)))
    labels = [wrap(str(lab), chars) for lab in labels]
    legend = fig.legend(handles, labels, loc="outside lower center",
                        ncols=legend_columns(labels, width, max_cols))
    with warnings.catch_warnings():  # a tall legend (many platforms) leaves the axes no room until the
        warnings.filterwarnings("ignore", "constrained_layout not applied")  # figure grows, just below
        draw(fig)  # the legend takes its room from the figure: give the figure that room (axes keep theirs)
    fig.set_figheight(fig.get_figheight() + legend.get_window_extent().height / fig.dpi)
    return legend


def categories_on_y(ax) -> bool:
    """Whether a grouped_bars chart runs its categories down the side (its values along x)."""
    return (isinstance(ax.yaxis.get_major_locator(), FixedLocator)
            and not isinstance(ax.xaxis.get_major_locator(), FixedLocator))


def drawn_tick_labels(axis) -> list:
    """(position along the axis in pixels, label) of every tick label `axis` draws (both sides, major and
    minor; ticks outside the view and empty labels left out).  Call after the figure was drawn."""
    ax = axis.axes
    horizontal = axis.axis_name == "x"
    low, high = sorted(axis.get_view_interval())
    out = []
    for locs, ticks in ((axis.get_majorticklocs(), axis.get_major_ticks),
                        (axis.get_minorticklocs(), axis.get_minor_ticks)):
        for loc, tick in zip(locs, ticks(len(locs))):
            if not low <= loc <= high:
                continue
            point = ax.transData.transform((loc, 0) if horizontal else (0, loc))
            out += [(point[0] if horizontal else point[1], lab) for lab in (tick.label1, tick.label2)
                    if lab.get_visible() and lab.get_text().strip()]
    return sorted(out, key=lambda p: p[0])


def _extent(label, renderer) -> tuple[float, float]:
    """Width and height in pixels of a label as if it were not rotated (the label is left as it was, drawn
    figure included: turning it and back changes nothing drawn)."""
    rotation, stale = label.get_rotation(), label.figure.stale
    label.set_rotation(0)
    box = label.get_window_extent(renderer)
    label.set_rotation(rotation)
    label.figure.stale = stale
    return box.width, box.height


def overlapping_tick_labels(axis, rotation: float | None = None, pad: float = 1.0):
    """The first two neighbouring tick labels of `axis` that overlap (as texts), or None; at the labels'
    own rotation, or at `rotation` (degrees) to ask before rotating.  Call after the figure was drawn."""
    renderer = axis.figure.canvas.get_renderer()
    labels = drawn_tick_labels(axis)
    for (p1, a), (p2, b) in zip(labels, labels[1:]):
        if a.get_position() != b.get_position() and abs(p2 - p1) < 0.5:
            continue  # label1 and label2 of one tick, on opposite sides
        (w1, h1), (w2, h2) = _extent(a, renderer), _extent(b, renderer)
        angle = math.radians(a.get_rotation() if rotation is None else rotation) % math.pi
        gap = abs(p2 - p1)
        if axis.axis_name == "y":  # stacked labels: their heights must fit the spacing
            need = (h1 + h2) / 2 if abs(math.sin(angle)) < 1e-6 else (w1 + w2) / 2
        elif abs(math.sin(angle)) < 1e-6:
            need = (w1 + w2) / 2
        else:  # parallel slanted strips: their distance across the text must exceed the text height
            gap *= abs(math.sin(angle))
            need = max(h1, h2)
        if gap + 1e-9 < need + pad:
            return a.get_text(), b.get_text()
    return None


def fit_tick_labels(ax, axis: str = "x", rotations=(0, 30, 45, 90)) -> float:
    """Rotate the tick labels of `ax`'s `axis` by the first angle in `rotations` at which no two overlap,
    laid out as the figure is (slanted labels end at their tick); returns the angle."""
    target = ax.xaxis if axis == "x" else ax.yaxis
    draw(ax.figure)
    angle = next((r for r in rotations if overlapping_tick_labels(target, r) is None), rotations[-1])
    for label in target.get_ticklabels():
        label.set_rotation(angle)
        if axis == "x" and 0 < angle < 90:
            label.set_horizontalalignment("right")
            label.set_rotation_mode("anchor")
    return angle


def fit_titles(fig, tries: int = 4) -> None:
    """Wrap every axes title and axis label, and the figure's title, onto more lines where they are longer
    than their axes (along the axis, for an axis label) or the figure; then make the figure taller while its
    layout leaves the axes no room (constrained layout gives up then)."""
    texts = [(fig._suptitle, None, "x")] if getattr(fig, "_suptitle", None) else []
    texts += [(t, ax, d) for ax in fig.axes
              for t, d in ((ax.title, "x"), (ax.xaxis.label, "x"), (ax.yaxis.label, "y"))]

    def collapsed() -> bool:  # draws the figure; whether constrained layout gave up on it
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            fig.canvas.draw()
        return any("collapsed" in str(w.message) for w in seen)

    def room(ax, d) -> float:  # a title or label no longer than its axes, the figure's title than the figure
        return 0.96 * fig.bbox.width if ax is None else 0.98 * (ax.bbox.width if d == "x" else ax.bbox.height)

    def length(t, d) -> float:
        box = t.get_window_extent()
        return box.width if d == "x" else box.height

    gave_up = collapsed()
    for _ in range(tries):
        long = [(t, ax, d) for t, ax, d in texts
                if t.get_text() and t.get_visible() and length(t, d) > room(ax, d)]
        if not long:
            break
        for t, ax, d in long:  # the longest line as drawn gives the characters a line holds
            chars = max(10, int(max(map(len, t.get_text().split("\n"))) * room(ax, d) / length(t, d)) - 2)
            t.set_text(wrap(" ".join(t.get_text().split()), chars))
        gave_up = collapsed()
    for _ in range(12):  # wrapped titles take height: the figure grows until the layout leaves its axes room
        if not gave_up:
            return
        fig.set_figheight(fig.get_figheight() + 0.3)
        gave_up = collapsed()


def refit_category_labels(fig) -> None:
    """Where category labels overlap now that the figure is laid out whole (legends, wrapped titles and
    colour bars take room after the axes were drawn): rotate them again along x, or make the figure taller
    where they stand down the side."""
    draw(fig)
    for ax in fig.axes:
        if categories_on_y(ax):
            grow_to_fit_labels(ax)
        elif isinstance(ax.xaxis.get_major_locator(), FixedLocator) and overlapping_tick_labels(ax.xaxis):
            fit_tick_labels(ax)


def thin_value_ticks(fig) -> None:
    """Where the labels of a value axis overlap, label fewer ticks: first no minor labels (log axes label 2,
    3, 4 ... within a decade), then fewer major ones.  Axes with ticks placed by hand (categories) are left
    alone."""
    from matplotlib.ticker import LogLocator, MaxNLocator, NullFormatter

    draw(fig)
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            if isinstance(axis.get_major_locator(), FixedLocator) or overlapping_tick_labels(axis) is None:
                continue
            axis.set_minor_formatter(NullFormatter())
            for n in (5, 4, 3):
                draw(fig)
                if overlapping_tick_labels(axis) is None:
                    break
                log = axis.get_scale() == "log"
                axis.set_major_locator(LogLocator(numticks=n) if log else MaxNLocator(nbins=n))


def _stack_room(axis) -> float:
    """The smallest ratio of spacing to the room two neighbouring stacked labels need (1 or more: no
    overlap)."""
    renderer = axis.figure.canvas.get_renderer()
    labels = drawn_tick_labels(axis)
    ratios = [abs(p2 - p1) / ((_extent(a, renderer)[1] + _extent(b, renderer)[1]) / 2 + 1.0)
              for (p1, a), (p2, b) in zip(labels, labels[1:])]
    return min(ratios, default=1.0)


def fit_panel_labels(axes, narrow: bool) -> None:
    """The category labels of stacked panels: narrow (bars along x, labels down the side) the figure grows
    until the first panel's labels fit; wide, the bottom panel's labels are fitted along x."""
    if narrow:
        grow_to_fit_labels(axes[0])
    else:
        fit_tick_labels(axes[-1])


def grow_to_fit_labels(ax, tries: int = 4) -> None:
    """Make the figure taller until the y tick labels of `ax` (stacked categories) no longer overlap."""
    fig = ax.figure
    for _ in range(tries):
        draw(fig)
        room = _stack_room(ax.yaxis)
        if room >= 1 and overlapping_tick_labels(ax.yaxis) is None:
            return
        axes_in = ax.get_position().height * fig.get_figheight()
        fig.set_figheight(fig.get_figheight() + axes_in * (1.05 / max(room, 0.2) - 1) + 0.05)
