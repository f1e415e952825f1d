"""Exports a paper can use unedited: figures in two widths, tables that fit, numbers as LaTeX macros.

    save_figure(lambda w: plot(df, width=w), "01_aes_rsa_sphincs", "operation_times", runs=[run])
        -> figures/01_aes_rsa_sphincs/operation_times.{pdf,svg,png}       (drawn at plotting.FULL_WIDTH)
           figures/01_aes_rsa_sphincs/operation_times.col.{pdf,svg,png}   (drawn at plotting.COLUMN_WIDTH)
    save_table(df, "01_aes_rsa_sphincs", "sizes", runs=[run], caption="...", columns=[...])
        -> data/tables/01_aes_rsa_sphincs/sizes.csv (every column, full precision) and, for the paper,
           sizes.md and sizes.tex (the chosen columns, formatted by pqlab.core.formatting.table)
    save_numbers({"sphincs_sign_over_verify": 14.7}, "01_aes_rsa_sphincs", runs=[run])
        -> data/tables/01_aes_rsa_sphincs/numbers.tex (\\newcommand{\\pqlabSphincsSignOverVerify}{14.7})
           and one .txt per number for other tools

Where: the profile's export tree (:func:`pqlab.core.paths.export_root`): the full profile's in figures/ and
data/tables/, the quick profile's in build/quick/, and a notebook run by hand (the "interactive" profile:
JupyterLab, your own notebooks) in build/interactive/figures/ and build/interactive/data/tables/.  Each
function returns the files it wrote as :class:`Written`, which a notebook shows as where they went
(:func:`written`).  Every export records its profile and the runs it shows: in a sidecar NAME.export.json, in
the PDF/SVG/PNG metadata and in numbers.tex comments.  Every file is written atomically.

Tables are pre-formatted text, not siunitx S columns: the same rules (pqlab.core.formatting) then give the
notebook display, the Markdown and the LaTeX, units and "–" included, and a paper needs only booktabs and
longtable.  A .tex table is ``\\pqlabtable{...}`` of pqlabtables.sty (written beside the tables): in a
two-column document a table that fits \\columnwidth is a column float and a wider one spans the page
(table*); a table wider than the page is a LaTeX error naming the fix, never silently too wide.

Strings from data or metadata (run ids, machine facts, names, captions, notes) may come from another machine's
bundle: each export writes them through the escaping rule of its language (pqlab.core.escaping): ``latex()``
in .tex cells, captions and comments, ``markdown()`` in .md, ``csv_cell()`` in every CSV cell and header (no
formula a spreadsheet runs), and the figure footer as plain text through ``figure_text()``, never mathtext.

Figures and tables are written here; numbers by :mod:`pqlab.publish.export_numbers`, and what every export
records and returns by :mod:`pqlab.publish.export_records`: every name is reachable from here.
"""
from __future__ import annotations

import math
import os
import pickle
import re
import signal
import sys
import textwrap
import warnings
from importlib import resources
from pathlib import Path

from pqlab.checks import conformance
from pqlab.core import inputs, paths
from pqlab.core.escaping import csv_cell, figure_text, latex, markdown
from pqlab.core.files import atomic_write, atomic_write_text
from pqlab.core.tables import FLAGS_COLUMN, INTERNAL, table
from pqlab.publish.context import context_line
from pqlab.publish.export_numbers import save_numbers as save_numbers  # notebooks call export.save_numbers
from pqlab.publish.export_records import Written, as_runs, check_name, export_stamp, provenance, write_sidecar
from pqlab.publish.export_records import written as written  # notebooks call export.written

#: figure sizes: file-name suffix -> width attribute of pqlab.publish.plotting
SIZES = {"": "FULL_WIDTH", ".col": "COLUMN_WIDTH"}
#: tables with more rows than this are long tables (longtable: they break across pages)
LONG_ROWS = 40
LAYOUTS = ("auto", "page", "landscape")
#: the formats save_figure writes (each with its metadata: _metadata)
FORMATS = ("pdf", "svg", "png")
STYLE_FILE = "pqlabtables.sty"
FOOTER_PT = 6.0
#: draw a figure's narrow width in a forked process while the full width is drawn: None decides by the
#: machine (Linux with two or more usable cores); True or False forces it (the tests run both ways)
FORK_FIGURES: bool | None = None
#: characters of a header line in a .tex table: a longer label wraps onto two or three lines
HEADER_LINE = 11
#: characters of a text cell's line in a .tex table: a longer text (a CPU model from a bundle, a sentence)
#: wraps onto balanced lines no longer, so the table still fits the page
CELL_LINE = 48


# ----- figures
# -----------------------------------------------------------------------------------------------

def _wrap_to_width(fig, text: str, width_pt: float) -> list[str]:
    """`text` wrapped into lines no wider than `width_pt` at the footer's size, measured as drawn (run ids and
    capitals are wider than an average character)."""
    renderer = fig.canvas.get_renderer()
    probe = fig.text(0, 0, "", fontsize=FOOTER_PT, parse_math=False)
    chars = max(20, int(width_pt / (0.5 * FOOTER_PT)))
    try:
        while True:
            lines = textwrap.wrap(text, chars, break_on_hyphens=False)  # run ids stay whole
            widest = max((probe.set_text(line) or probe.get_window_extent(renderer).width for line in lines),
                         default=0)
            if widest * 72 / fig.dpi <= width_pt or chars <= 20:
                return lines
            chars = int(chars * 0.9)
    finally:
        probe.remove()


def _add_footer(fig, text: str):
    """`text` in small grey type in a band added under the figure, wrapped to its width.  The figure is laid
    out first at its drawn size; then everything keeps its size and place above the band.  Returns the text.
    The footer is plain text (``parse_math=False``): the machine facts and run ids it shows are never
    mathtext."""
    from pqlab.publish.figure_layout import draw

    draw(fig)
    to_fraction = fig.transFigure.inverted()
    anchors = [to_fraction.transform_bbox(leg.get_bbox_to_anchor()) for leg in fig.legends]
    fig.set_layout_engine("none")  # keep the layout just computed
    footer = fig.text(0.005, 0, "\n".join(_wrap_to_width(fig, text, fig.get_figwidth() * 72 - 4)), ha="left",
                      va="bottom", fontsize=FOOTER_PT, color="0.35", linespacing=1.2, parse_math=False)
    # the band is the text's height as drawn (ten lines are taller than ten times the line spacing) and 2 pt
    # above and below it, the text 2 pt above the bottom edge, whatever the figure's height
    old = fig.get_figheight()
    fig.set_figheight(old + footer.get_window_extent(fig.canvas.get_renderer()).height / fig.dpi + 4 / 72)
    k = old / fig.get_figheight()
    for ax in fig.axes:
        p = ax.get_position()
        ax.set_position([p.x0, 1 - k + p.y0 * k, p.width, p.height * k])
    for leg, a in zip(fig.legends, anchors):
        leg.set_bbox_to_anchor((a.x0, 1 - k + a.y0 * k, a.width, a.height * k), transform=fig.transFigure)
    for t in fig.texts:
        t.set_y(1 - k + t.get_position()[1] * k)
    footer.set_y(2 / 72 / fig.get_figheight())
    return footer


def _texts(fig) -> list:
    """Every text the figure draws: titles, labels, legends, annotations, and the tick labels it shows."""
    from matplotlib.text import Text

    from pqlab.publish.figure_layout import drawn_tick_labels

    ticks = {id(lab) for ax in fig.axes for axis in (ax.xaxis, ax.yaxis)
             for t in axis.get_major_ticks() + axis.get_minor_ticks() for lab in (t.label1, t.label2)}
    out = [t for t in fig.findobj(Text) if id(t) not in ticks and t.get_visible() and t.get_text().strip()]
    return out + [lab for ax in fig.axes for axis in (ax.xaxis, ax.yaxis)
                  for _, lab in drawn_tick_labels(axis)]


def check_layout(fig, what: str, footer=None) -> float:
    """Refuse a figure whose text would be unreadable in print: any text smaller than
    plotting.MIN_TEXT_PT, outside the figure, over the `footer` text, or over another text (tick labels,
    titles, axis labels, annotations, legend entries).  Returns the smallest text size."""
    from pqlab.publish.figure_layout import draw, drawn_tick_labels, overlapping_tick_labels
    from pqlab.publish.plotting import MIN_TEXT_PT

    draw(fig)
    renderer = fig.canvas.get_renderer()
    frame = fig.bbox
    texts = _texts(fig)
    for t in texts:
        if t.get_fontsize() < MIN_TEXT_PT:
            raise ValueError(f"{what}: text {t.get_text()!r} is {t.get_fontsize():g} pt, below "
                             f"{MIN_TEXT_PT:g} pt: draw it larger")
        box = t.get_window_extent(renderer)
        if box.x0 < frame.x0 - 1 or box.y0 < frame.y0 - 1 or box.x1 > frame.x1 + 1 or box.y1 > frame.y1 + 1:
            raise ValueError(f"{what}: text {t.get_text()!r} falls outside the figure: shorten it or lay the "
                             "figure out for its width")
    if footer is not None:
        box = footer.get_window_extent(renderer)
        others = [t for t in texts if t is not footer] + fig.legends + [
            leg for ax in fig.axes for leg in [ax.get_legend()] if leg is not None]
        for other in others:
            if box.overlaps(other.get_window_extent(renderer)):
                shown = getattr(other, "get_text", lambda: "a legend")()
                raise ValueError(f"{what}: the footer line overlaps {shown!r}")
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            pair = overlapping_tick_labels(axis)
            if pair:
                raise ValueError(f"{what}: {axis.axis_name} tick labels {pair[0]!r} and {pair[1]!r} overlap: "
                                 "rotate them (plotting.fit_tick_labels), shorten them or use fewer ticks")
    axis_of = {id(lab): id(axis) for ax in fig.axes for axis in (ax.xaxis, ax.yaxis)
               for _, lab in drawn_tick_labels(axis)}
    square = [t for t in texts if t.get_rotation() % 90 == 0]  # boxes of slanted texts are not their outline
    boxes = sorted(((t.get_window_extent(renderer).padded(-1), t) for t in square), key=lambda b: b[0].x0)
    # any two texts (labels, annotations, titles, legends): a sweep along x
    for i, (box, t) in enumerate(boxes):
        for other, u in boxes[i + 1:]:
            if other.x0 >= box.x1:
                break
            # two tick labels of one axis: checked above, exactly
            same_axis = id(t) in axis_of and axis_of.get(id(t)) == axis_of.get(id(u))
            if box.overlaps(other) and not same_axis:
                raise ValueError(f"{what}: the texts {t.get_text()!r} and {u.get_text()!r} overlap: lay the "
                                 "figure out for its width (fewer or shorter labels, more room)")
    return min((t.get_fontsize() for t in texts), default=MIN_TEXT_PT)


def _fork_figures() -> bool:
    if FORK_FIGURES is not None:
        return FORK_FIGURES
    return sys.platform == "linux" and len(os.sched_getaffinity(0)) > 1


class _Forked:
    """``fn(*args)`` in a forked process.  :meth:`result` waits and returns its value, or raises its
    exception, after re-emitting here the warnings it raised; :meth:`cancel` kills it if it is still running.
    The child writes nothing to the parent's streams (in a notebook those are the kernel's) and ends with
    ``os._exit``, so it never runs the parent's exit handlers."""

    def __init__(self, fn, *args) -> None:
        read, write = os.pipe()
        with warnings.catch_warnings():  # Python 3.12+ warns of fork in a threaded process (a kernel): the
            warnings.simplefilter("ignore", DeprecationWarning)  # child only draws and writes files
            self.pid = os.fork()
        if self.pid == 0:
            os.close(read)
            try:
                sys.stdout = sys.stderr = open(os.devnull, "w")
                with warnings.catch_warnings(record=True) as caught:
                    try:
                        outcome = ("value", fn(*args))
                    except BaseException as exc:  # noqa: BLE001 - handed to the parent, which raises it
                        outcome = ("error", exc)
                said = [(w.message, w.category, w.filename, w.lineno) for w in caught]
                try:
                    data = pickle.dumps((outcome, said))
                except Exception:  # noqa: BLE001 - something unpicklable: the same, as text
                    if outcome[0] == "error":
                        outcome = ("error", RuntimeError(f"{type(outcome[1]).__name__}: {outcome[1]}"))
                    data = pickle.dumps((outcome, [(str(m), UserWarning, f, n) for m, _, f, n in said]))
                with os.fdopen(write, "wb") as pipe:
                    pipe.write(data)
            finally:
                os._exit(0)
        os.close(write)
        self._pipe = os.fdopen(read, "rb")

    def result(self):
        data = self._pipe.read()
        self._pipe.close()
        _, status = os.waitpid(self.pid, 0)
        self.pid = None
        if not data:
            raise RuntimeError(f"the process drawing a figure ended without a result (wait status {status}): "
                               "set pqlab.publish.export.FORK_FIGURES = False to draw in this process and "
                               "see why")
        (kind, value), said = pickle.loads(data)
        for message, category, filename, lineno in said:
            warnings.warn_explicit(message, category, filename, lineno)
        if kind == "error":
            raise value
        return value

    def cancel(self) -> None:
        if self.pid is not None:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
            self.pid = None
            self._pipe.close()


def _metadata(ext: str, title: str, prov: dict) -> dict:
    stamp = export_stamp(prov)
    if ext == "pdf":  # no dates: identical inputs give identical files
        return {"Creator": "pqlab", "Title": title, "Subject": stamp,
                "Keywords": f"profile={prov['profile']}", "CreationDate": None}
    if ext == "svg":
        return {"Creator": "pqlab", "Title": title, "Description": stamp,
                "Keywords": [f"profile={prov['profile']}"], "Date": None}
    return {"Software": "pqlab", "Title": title, "Description": stamp}


def save_figure(draw, topic: str, name: str, *, runs, formats=("pdf", "svg", "png"), dpi: int = 300,
                footer: bool = True) -> list[Path]:
    """Draw and write a figure at both widths: ``draw(width_in_inches)`` returns a matplotlib Figure laid
    out for that width (a study's plot function with ``width=``).

    Written: FIGURES/TOPIC/NAME.{pdf,svg,png} (plotting.FULL_WIDTH) and NAME.col.* (plotting.COLUMN_WIDTH),
    each checked by :func:`check_layout`, with the runs' context line (machine, counter, run ids) as a
    footer when `footer` and `runs` are given, and NAME.export.json.  FIGURES is
    :data:`pqlab.core.paths.FIGURES`: figures/ for ``make reproduce``, build/quick/figures/ for the quick
    profile, and build/interactive/figures/ for a notebook run by hand.  `runs`: the runs the figure shows
    (``[]`` for published data only).  In a notebook the full-width figure is shown each time and then closed
    (no figure stays open).  Returns the files as :class:`Written` (a notebook shows where they went)."""
    import matplotlib.pyplot as plt
    from matplotlib.figure import Figure

    from pqlab.publish import figure_layout, plotting

    check_name(topic, name)
    formats = tuple(inputs.choice(f, "figure format", FORMATS) for f in formats)
    if not callable(draw) or isinstance(draw, Figure):
        raise TypeError(f"save_figure({topic}/{name}): pass a function of the width in inches that returns "
                        "the figure, e.g. lambda w: plot(df, width=w), not a drawn Figure")
    prov = provenance(runs)
    line = context_line(as_runs(runs)) if footer else ""
    base = paths.FIGURES / topic / name

    def write(suffix: str):
        """The figure at the width of `suffix`: drawn, checked and written in every format."""
        width = getattr(plotting, SIZES[suffix])
        with plt.rc_context(plotting.STYLE):  # fonts, embedding and the SVG hash salt are read when saving
            fig = draw(width)
            what = f"figure {topic}/{name}{suffix}"
            if not isinstance(fig, Figure):
                raise TypeError(f"{what}: the draw function returned {type(fig).__name__}, not a Figure")
            if abs(fig.get_figwidth() - width) > 0.01:
                plt.close(fig)
                raise ValueError(f"{what}: drawn {fig.get_figwidth():.2f} in wide, not {width} in: pass the "
                                 "width to the plot function (width=w)")
            figure_layout.fit_titles(fig)
            figure_layout.refit_category_labels(fig)
            figure_layout.thin_value_ticks(fig)
            # plain text, shown as it is but for what the style's fonts cannot draw
            smallest = check_layout(fig, what, _add_footer(fig, figure_text(line)) if line else None)
            fig.set_layout_engine("none")  # each format saves the layout just checked, not one laid out again
            files = []
            for ext in formats:
                meta = _metadata(ext, f"{topic}/{name}{suffix}", prov)
                files.append(atomic_write(Path(f"{base}{suffix}.{ext}"),
                                          lambda tmp, f=fig, e=ext, m=meta: f.savefig(
                                              tmp, format=e, dpi=dpi, metadata=m)))
        size = {"width_in": width, "height_in": round(fig.get_figheight(), 3), "smallest_text_pt": smallest}
        if not suffix:
            show_in_notebook(fig)
        plt.close(fig)
        return files, size

    # The narrow figure is drawn in a forked process while this one draws the full width (figures are
    # written after a notebook's timings, never beside them); the files are those a serial save writes.
    narrow = [s for s in SIZES if s]
    pending = {s: _Forked(write, s) for s in narrow} if _fork_figures() else {}
    out, sizes = [], {}
    try:
        for suffix in SIZES:
            files, size = pending[suffix].result() if suffix in pending else write(suffix)
            out += files
            sizes[suffix or "full"] = size
    finally:
        for job in pending.values():
            job.cancel()
    write_sidecar(base, "figure", topic, name, prov, out, sizes=sizes)
    return Written(out)


def show_in_notebook(fig) -> bool:
    """Show `fig` in the cell's output when this process is a Jupyter kernel (whatever the matplotlib
    backend); returns whether it did.  The caller closes the figure: none piles up."""
    shell = sys.modules.get("IPython") and sys.modules["IPython"].get_ipython()
    if shell is None or not hasattr(shell, "kernel"):
        return False
    from IPython.display import display

    display(fig)
    return True


def save_figure_or_note(draw, topic: str, name: str, missing: str, *, runs) -> str:
    """Write the figure ``draw(width)`` returns (as :func:`save_figure`) and return ""; or, where it returns
    None because nothing was measured to plot, write nothing, remove the figure an earlier run left there
    (both widths), and return a Markdown note naming the figure and `missing` (why).  No empty figure is ever
    exported."""
    import matplotlib.pyplot as plt

    from pqlab.publish import plotting

    check_name(topic, name)
    probe = draw(plotting.FULL_WIDTH)
    if probe is not None:
        plt.close(probe)
        save_figure(draw, topic, name, runs=runs)
        return ""
    for suffix in SIZES:
        for ext in ("png", "svg", "pdf"):
            (paths.FIGURES / topic / f"{name}{suffix}.{ext}").unlink(missing_ok=True)
    (paths.FIGURES / topic / f"{name}.export.json").unlink(missing_ok=True)
    return f"*Figure `{name}` is not written: {markdown(missing)}.*"


# ----- tables
# ------------------------------------------------------------------------------------------------

def _header_cell(label: str, align: str) -> str:
    """A header label, on two or three balanced lines when long (a nested tabular: no package needed)."""
    if len(label) <= HEADER_LINE or " " not in label:
        return latex(label)
    lines = min(3, math.ceil(len(label) / HEADER_LINE))
    parts = textwrap.wrap(label, math.ceil(len(label) / lines) + 2)
    # a line that starts with "[" is braced: \\ would take it for its optional argument
    return (rf"\begin{{tabular}}[b]{{@{{}}{align}@{{}}}}" + r"\\".join(_cell_tex(p) for p in parts)
            + r"\end{tabular}")


def _cell_tex(text: str, numeric: bool = False) -> str:
    """A cell: a leading minus as a minus sign; braced when it starts with "[", which \\ would take for its
    optional argument."""
    if numeric and text.startswith("-"):
        text = "−" + text[1:]
    return "{" + latex(text) + "}" if text.startswith("[") else latex(text)


def _body_cell(text: str, numeric: bool, align: str) -> str:
    """A body cell (:func:`_cell_tex`); a text longer than :data:`CELL_LINE` characters on balanced lines no
    longer (a nested tabular, top-aligned; a word longer than a line is cut)."""
    if numeric or len(text) <= CELL_LINE:
        return _cell_tex(text, numeric)
    lines = math.ceil(len(text) / CELL_LINE)
    parts = textwrap.wrap(text, min(CELL_LINE, math.ceil(len(text) / lines) + 2), break_on_hyphens=False)
    return (rf"\begin{{tabular}}[t]{{@{{}}{align}@{{}}}}" + r"\\".join(_cell_tex(p) for p in parts)
            + r"\end{tabular}")


def table_tex(t, topic: str, name: str, caption: str, layout: str, prov: dict) -> str:
    """The LaTeX of a formatted table (:class:`pqlab.core.formatting.Table`) as a ``\\pqlabtable`` or, above
    LONG_ROWS rows, a ``\\pqlablongtable`` of pqlabtables.sty."""
    aligns = ["r" if n else "l" for n in t.numeric]
    head = " & ".join(_header_cell(c.label, a) for c, a in zip(t.columns, aligns)) + r" \\"
    if any(t.units):
        head += "\n" + " & ".join(_cell_tex(f"[{u}]") if u else "" for u in t.units) + r" \\"
    body = []
    for row, mark in zip(t.rows, t.marks or [""] * len(t.rows)):
        cells = [_body_cell(c, n, a) for c, n, a in zip(row, t.numeric, aligns)]
        if mark and cells:
            cells[0] += rf"\textsuperscript{{{mark}}}"
        body.append(" & ".join(cells) + r" \\")
    notes = "\n".join((rf"\textsuperscript{{{n.split(':', 1)[0]}}}\,{latex(n.split(':', 1)[1].strip())}"
                       if re.match(r"^[a-z]:", n) else latex(n)) + r"\par" for n in t.notes)
    long = len(t.rows) > LONG_ROWS
    macro = ((r"\pqlablongtable[landscape]" if layout == "landscape" else r"\pqlablongtable") if long
             else rf"\pqlabtable{{{layout}}}")
    return "\n".join([
        f"% pqlab table {topic}/{name}: {latex(export_stamp(prov), 'comment')}",
        (f"% written by pqlab.publish.export.save_table; needs \\usepackage{{pqlabtables}} "
         f"({STYLE_FILE} beside the tables)"),
        r"\ifdefined\pqlabtable\else\errmessage{pqlab table " + f"{topic}/{name}"
        + r": add \string\usepackage{pqlabtables} to the preamble (" + STYLE_FILE
        + r" is in the exported tables folder)}\fi",
        f"{macro}{{tab:{topic}:{name}}}{{{latex(caption)}}}{{{''.join(aligns)}}}{{%",
        head, "}{%", *body, "}{%", notes, "}", ""])


def _write_style() -> Path:
    text = resources.files("pqlab.publish").joinpath(STYLE_FILE).read_text(encoding="utf-8")
    path = paths.TABLES / STYLE_FILE
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return path
    return atomic_write_text(path, text)


def csv_frame(df):
    """`df` as its CSV shows it: every text cell and header through :func:`pqlab.core.escaping.csv_cell` (a
    spreadsheet never runs a formula of the data; control and format characters shown as ``<U+XXXX>``),
    numbers as they are."""
    out = df.copy(deep=False)
    for i, dtype in enumerate(df.dtypes):
        if dtype.kind == "O":  # text, mixed, categorical: numbers in them pass unchanged
            out.isetitem(i, df.iloc[:, i].map(csv_cell))
    out.columns = [csv_cell(c) for c in df.columns]
    return out


def save_table(df, topic: str, name: str, *, runs, caption: str = "", columns=None, paper: bool = True,
               layout: str = "auto", show_flags=None, notes=()) -> list[Path]:
    """Write `df` as TABLES/TOPIC/NAME.csv (every column, full precision) and, when `paper`, a table a
    paper can use unedited: NAME.md and NAME.tex with `columns` only (see :func:`pqlab.core.formatting.table`:
    human headers with units, numbers formatted per column kind, "–" for missing values, flags as marks
    with a legend, run ids never), plus NAME.export.json (profile, runs).  TABLES is
    :data:`pqlab.core.paths.TABLES`: data/tables/ for ``make reproduce``, build/quick/data/tables/ for the
    quick profile, and build/interactive/data/tables/ for a notebook run by hand.  Returns the files as
    :class:`Written`.

    `runs`: the runs the table shows (``[]`` for published data only).  `caption`: required for a paper
    table.  `layout`: "auto" (a column float in a two-column document when it fits, else the page's width),
    "page" (always the page's width), "landscape" (a rotated float).  Tables of more than LONG_ROWS rows are
    long tables (longtable, breaking across pages; landscape ones on rotated pages).  `paper=False`: the CSV
    only (data-only tables).

    A table with no rows (nothing was measured for it here, e.g. no JDK for Bouncy Castle's rows) is never
    exported as an empty paper table: its CSV holds the header only, the .md and .tex an earlier run left
    are removed, its sidecar says ``paper: false, rows: 0``, and a warning names it."""
    check_name(topic, name)
    inputs.choice(layout, "layout", LAYOUTS)
    if paper and not caption:
        raise ValueError(f"table {topic}/{name}: a paper table needs a caption (caption=...), or paper=False "
                         "for a data-only CSV")
    prov = provenance(runs)
    base = paths.TABLES / topic / name
    # every row that shows a time says what its implementation passed: a column in the CSV, a mark in .md/.tex
    # (the paper table keeps the columns it would have shown: the marks and notes carry the verdicts there)
    if columns is None and not df.empty:
        columns = [c for c in df.columns if c not in INTERNAL and c != FLAGS_COLUMN]
    df, failing = conformance.with_conformance(df, runs)
    notes = [*notes, *failing]
    if show_flags is not None:
        show_flags = [*show_flags, *conformance.FLAG_CODES]
    if paper and df.empty:
        warnings.warn(f"table {topic}/{name} has no rows here: only its header is written ({name}.csv), "
                      "no paper table", stacklevel=2)
        paper = False
        for ext in ("md", "tex"):
            Path(f"{base}.{ext}").unlink(missing_ok=True)
    t = table(df, columns, show_flags=show_flags, notes=notes) if paper else None
    out = [atomic_write(f"{base}.csv", lambda tmp: csv_frame(df).to_csv(tmp, index=False))]
    if t is not None:
        out.append(atomic_write_text(f"{base}.md", f"{markdown(caption)}\n\n{t.to_markdown()}\n"))
        out.append(atomic_write_text(f"{base}.tex", table_tex(t, topic, name, caption, layout, prov)))
        _write_style()
    write_sidecar(base, "table", topic, name, prov, out, caption=caption, paper=paper,
             rows=len(df), long=bool(t is not None and len(t.rows) > LONG_ROWS), layout=layout)
    return Written(out)
