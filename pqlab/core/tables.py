"""Tables as a reader sees them, paper exports and notebook display alike: one rule per column kind.

:func:`table`: each column has a kind (:data:`KINDS`, read from its name and values or given as a
:class:`Column`), a header label and a unit in brackets, and cells formatted by that kind; missing cells print
as :data:`TABLE_MISSING`; flags become short marks with a legend (:func:`flag_marks`, the one place that
assigns the letters); a value whose interval spans more than :data:`pqlab.core.quantities.RESOLVED_FACTOR`
prints as :data:`pqlab.core.quantities.NOT_RESOLVED_MARK` ("not resolved" in prose), never as a number; run
ids and other internals never show.  A column's unit is read from its name (:func:`kind_from_name`,
:func:`unit_divisor`) and shown in a display unit sized by the schema's one unit table
(:data:`pqlab.core.schema.UNIT_TABLE`).

    table(run.raw_summary())  -> Table: .frame (strings, "Time median [µs]"), .notes, .to_markdown()

Nothing here imports pandas at import time.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from pqlab.core import flags as flagvocab
from pqlab.core.errors import BadInput, UnknownName, choice, close_matches
from pqlab.core.escaping import html, markdown
from pqlab.core.quantities import (
    NOT_RESOLVED_MARK,
    is_missing,
    not_resolved_note,
    resolved,
    resolved_rel,
    significant,
)
from pqlab.core.schema import UNIT_TABLE, unit_of, unit_size

#: what a missing cell shows in a table (prose uses :data:`pqlab.core.quantities.MISSING`)
TABLE_MISSING = "–"
#: column kind -> what its cells show (the unit, where there is one, goes into the header)
KINDS = {
    "text": "the value as text",
    "size": "bytes: exact integers with thousands separators",
    "count": "integers with thousands separators",
    "time": "a duration in the column's unit (ns, µs, ms or s), three significant digits",
    "cycles": "cycles in thousands or millions (the column's unit), three significant digits",
    "ratio": "two decimals and ×, with its interval [low, high] where the table has one",
    "percent": "a fraction shown as a percentage, one decimal",
    "energy": "an energy in the column's unit (µJ, mJ or J), three significant digits",
    "power": "watts, three significant digits",
    "number": "three significant digits",
    "bool": "yes or no",
}
#: columns no reader's table shows (the CSV and the export's sidecar keep them)
INTERNAL = ("run_id", "schema_version", "machine_id", "started_at", "study")
FLAGS_COLUMN = "flags"
#: unit word in a column name -> the unit it names (:data:`pqlab.core.schema.UNIT_TABLE`)
_NAME_UNITS = {"ns": "ns", "us": "µs", "µs": "µs", "ms": "ms", "s": "s", "cycles": "cycles",
               "kcycles": "kcycles", "mcycles": "Mcycles", "uj": "µJ", "µj": "µJ", "mj": "mJ", "j": "J",
               "w": "W", "bytes": "bytes", "pct": "%", "percent": "%"}
#: unit word in a column name -> (kind, the stored values' unit in the kind's base unit)
_SOURCE_UNITS = {word: UNIT_TABLE[unit] for word, unit in _NAME_UNITS.items()}
#: display units per kind, largest first: (label, size in the base unit)
_DISPLAY_UNITS = {kind: tuple((u, unit_size(u)[1]) for u in units) for kind, units in {
    "time": ("s", "ms", "µs", "ns"), "cycles": ("Mcycles", "kcycles"), "energy": ("J", "mJ", "µJ"),
    "size": ("B",), "percent": ("%",), "power": ("W",)}.items()}
_RATIO_WORDS = {"ratio", "factor", "over", "speedup", "slowdown", "vs"}
_WORDS = {"nist": "NIST", "cv": "CV", "ci": "CI", "q1": "Q1", "q3": "Q3", "bc": "BC", "id": "ID",
          "rsa": "RSA", "aes": "AES", "jvm": "JVM", "wls": "WLS", "ols": "OLS", "se": "SE", "r2": "R²",
          "rss": "RSS", "tls": "TLS", "cpu": "CPU", "der": "DER", "kem": "KEM", "tcp": "TCP", "quic": "QUIC",
          "rtt": "RTT", "openssl": "OpenSSL", "slh": "SLH", "dsa": "DSA", "fors": "FORS"}
_MARKS = "abcdefghijklmnopqrstuvwxyz"


def _tokens(name) -> list[str]:
    return [t for t in re.split(r"[_\s]+", str(name).lower()) if t]


def kind_from_name(name) -> tuple[str, float]:
    """(kind, the stored values' unit in the kind's base unit) of a column: the unit the schema declares for
    one of its columns (:func:`pqlab.core.schema.unit_of`: ``cycles_source`` is a label, not cycles), else
    what a derived column's name says, ("", 1.0) when it says nothing: "time_ns_median" -> ("time", 1),
    "median_ms" -> ("time", 1e6), "speedup" -> ("ratio", 1)."""

    declared = unit_of(str(name))
    if declared is not None:
        return ("percent", 1.0) if declared == "fraction" else _SOURCE_UNITS.get(declared.lower(), ("", 1.0))
    tokens = _tokens(name)
    if {"cv", "rel", "fraction"} & set(tokens):  # a coefficient of variation, a relative interval: fractions
        return "percent", 1.0
    for i in range(len(tokens) - 1, -1, -1):
        # "per_s" is a rate, not seconds
        if tokens[i] in _SOURCE_UNITS and (i == 0 or tokens[i - 1] != "per"):
            return _SOURCE_UNITS[tokens[i]]
    return ("ratio", 1.0) if _RATIO_WORDS & set(tokens) else ("", 1.0)


def unit_divisor(column, unit: str) -> float:
    """What divides the values of `column` to show them in `unit` (e.g. "µs"), the column's own unit read from
    its name (:func:`kind_from_name`: "time_ns_median" holds ns, "median_ms" ms, "idle_fraction" a fraction);
    a unit that does not suit the column, or a column whose name says no unit, is refused in one line."""

    kind, source = kind_from_name(column)
    units = dict(_DISPLAY_UNITS.get(kind, ()))
    if not units:
        raise BadInput(f"column {str(column)!r} does not say its unit in its name (like time_ns_median, "
                       f"median_ms, public_key_bytes, sign_cycles), so unit={unit!r} cannot convert it: "
                       "rename the column, or leave unit unset and name the axis's unit in ylabel")
    return units[choice(unit, f"unit of {kind} column {str(column)!r}", tuple(units))] / source


def label_from_name(name) -> str:
    """A header from a column name: its words without the unit (which the header shows in brackets), first
    letter capital, other letters as written ("public_key_bytes" -> "Public key", "time_ns_median" -> "Time
    median", "sign_cycles" -> "Sign", "BC 1.86 cold" unchanged)."""
    tokens = [t for t in re.split(r"[_\s]+", str(name)) if t]
    words = [_WORDS.get(t.lower(), t) for i, t in enumerate(tokens)
             if t.lower() not in _SOURCE_UNITS or (i and tokens[i - 1].lower() == "per")]
    text = " ".join(words) or str(name)
    return text[0].upper() + text[1:]


@dataclass(frozen=True)
class Column:
    """How one column is shown: `label` (header), `kind` (a key of :data:`KINDS`), `unit` (the display
    unit of a time, cycles or energy column, e.g. "µs"; chosen from the values when empty) and `stored` (the
    unit the values are stored in, e.g. "ms", when the column's name does not say it).  `scale` is that unit
    in the kind's base unit (ns, cycles or µJ), set from `stored` or read from the name.  Empty fields are
    inferred by :func:`resolve_column`."""

    name: str
    label: str = ""
    kind: str = ""
    unit: str = ""
    scale: float = 0.0
    stored: str = ""

    def __post_init__(self):
        if self.stored:

            choice(self.stored, f"stored unit of column {str(self.name)!r}", tuple(_SOURCE_UNITS))
            kind, scale = _SOURCE_UNITS[self.stored]
            object.__setattr__(self, "scale", scale)
            object.__setattr__(self, "kind", self.kind or kind)
        if self.kind and self.kind not in KINDS:

            raise ValueError(f"column {self.name!r}: unknown kind {self.kind!r}; close matches: "
                             f"{', '.join(close_matches(self.kind, KINDS)) or 'none'} "
                             f"(kinds: {', '.join(KINDS)})")
        units = [u for u, _ in _DISPLAY_UNITS.get(self.kind, ())]
        if self.kind and self.unit and self.unit not in units:
            raise ValueError(f"column {self.name!r}: unit {self.unit!r} does not suit kind {self.kind!r}; "
                             f"use one of: {', '.join(units) or 'no unit'}")


def _is_bool(series) -> bool:
    import numpy as np
    import pandas as pd

    present = series.dropna()
    return pd.api.types.is_bool_dtype(series) or bool(
        len(present) and present.map(lambda v: isinstance(v, (bool, np.bool_))).all())


def _numbers(series):
    """`series` as floats when every present value is a number (object columns of numbers too), else None."""
    import pandas as pd

    if _is_bool(series):
        return None
    values = pd.to_numeric(series, errors="coerce")
    if (values.isna() & series.notna()).any():
        return None
    return values.astype("float64")


def resolve_column(spec, df) -> Column:
    """A complete :class:`Column` for `spec` (a column name or a Column) of `df`: kind, label and scale
    inferred from the name and values where not given."""
    # names as the frame has them (a pivot's are numbers)
    col = spec if isinstance(spec, Column) else Column(spec)
    if col.name not in df.columns:

        raise UnknownName("column", col.name, [str(c) for c in df.columns],
                          "choose among the frame's columns")
    series = df[col.name]
    kind, scale = kind_from_name(col.name)
    values = _numbers(series)
    if _is_bool(series):
        kind = "bool"
    elif values is None:
        kind = "text"
    elif not kind:
        finite = [v for v in values.dropna() if math.isfinite(v)]
        kind = "count" if finite and all(v == round(v) for v in finite) else "number"
    return Column(col.name, col.label or label_from_name(col.name), col.kind or kind, col.unit,
                  col.scale or scale)


def _choose_unit(kind: str, base_values) -> tuple[str, float]:
    """The display unit of a column: the largest whose median value is at least 1."""
    units = _DISPLAY_UNITS[kind]
    finite = sorted(abs(v) for v in base_values if math.isfinite(v) and v != 0)
    if not finite:
        return units[-1]
    median = finite[len(finite) // 2]
    return next(((u, s) for u, s in units if median >= s), units[-1])


def _cell(value, kind: str, unit_scale: float, tiny: float, interval=None, unresolved: bool = False) -> str:
    if kind == "bool":
        if is_missing(value) and not isinstance(value, bool):
            return TABLE_MISSING
        return "yes" if bool(value) else "no"
    if kind == "text":
        if isinstance(value, float) and not math.isnan(value):
            return significant(value)
        return TABLE_MISSING if value is None or (isinstance(value, float) and math.isnan(value)) or \
            str(value) in ("", "nan", "<NA>", "None") else str(value)
    if is_missing(value):
        return TABLE_MISSING
    if unresolved:
        return NOT_RESOLVED_MARK
    x = float(value)
    if math.isinf(x):
        return "∞" if x > 0 else "−∞"
    x /= unit_scale
    if abs(x) < tiny:
        x = 0.0
    if kind in ("size", "count"):
        return f"{int(round(x)):,}" if x == round(x) else significant(x)
    if kind == "ratio":
        text = f"{x:,.2f}×"
        if interval and not any(is_missing(v) for v in interval):
            text += f" [{float(interval[0]):,.2f}, {float(interval[1]):,.2f}]"
        return text
    if kind == "percent":
        return f"{x:.1f}"
    return significant(x)


@dataclass
class Table:
    """A table as a reader sees it: formatted cells (strings), header labels and units, flag marks per row
    and the notes (legend) under it.  Displayed in notebooks as HTML, printed as text, exported by
    :func:`pqlab.publish.export.save_table` as Markdown and LaTeX."""

    columns: list[Column]
    units: list[str]
    rows: list[list[str]]
    marks: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def numeric(self) -> list[bool]:
        """Whether each column is right-aligned (numbers) or left-aligned (text, yes/no)."""
        return [c.kind not in ("text", "bool") for c in self.columns]

    @property
    def headers(self) -> list[str]:
        """Each column's label with its unit in brackets: "Signature [B]"."""
        return [f"{c.label} [{u}]" if u else c.label for c, u in zip(self.columns, self.units)]

    @property
    def frame(self):
        """The cells as a DataFrame of strings ("Notes" holds the flag marks, when any row has one)."""
        import pandas as pd

        df = pd.DataFrame(self.rows, columns=self.headers)
        if any(self.marks):
            df["Notes"] = self.marks
        return df

    def _legend(self, sep: str = "\n") -> str:
        return sep.join(self.notes)

    def to_string(self) -> str:
        text = (self.frame.to_string(index=False) if self.rows
                else f"(no rows; columns: {', '.join(self.headers)})")
        return text + ("\n" + self._legend() if self.notes else "")

    def _escaped(self, escape):
        """The frame with every header and cell through `escape` (:func:`markdown`, :func:`html`)."""
        import pandas as pd

        frame = self.frame
        return pd.DataFrame([[escape(c) for c in row] for row in frame.itertuples(index=False)],
                            columns=[escape(c) for c in frame.columns])

    def to_markdown(self) -> str:
        frame = self._escaped(markdown)
        align = ["right" if n else "left" for n in self.numeric] + (["left"] if any(self.marks) else [])
        text = frame.to_markdown(index=False, colalign=align, disable_numparse=True)
        return text + ("\n\n" + "  \n".join(markdown(n) for n in self.notes) if self.notes else "")

    def _repr_html_(self) -> str:
        table = self._escaped(html).to_html(index=False, border=0, escape=False)
        return table + "".join(f"<div><small>{html(n)}</small></div>" for n in self.notes)

    def __repr__(self) -> str:
        return self.to_string()

    def __len__(self) -> int:
        return len(self.rows)


def interval_columns(name: str, df) -> tuple[str, str] | None:
    """The columns holding the interval of ratio column `name`: ``NAME_ci_low``/``NAME_ci_high``,
    ``NAME_low``/``NAME_high``, or for ``X_ratio`` also ``X_low``/``X_high``; None when `df` has none."""
    stems = [f"{name}_ci", name] + ([name[: -len("_ratio")]] if name.endswith("_ratio") else [])
    return next(((f"{s}_low", f"{s}_high") for s in stems if f"{s}_low" in df and f"{s}_high" in df), None)


def _column_specs(df, columns) -> list:
    if columns is None:
        return [c for c in df.columns if c not in INTERNAL and c != FLAGS_COLUMN]
    if isinstance(columns, dict):
        return [v if isinstance(v, Column) else Column(k, label=v) for k, v in columns.items()]
    return list(columns)


def table(df, columns=None, flags: str | None = FLAGS_COLUMN, show_flags=None, notes=()) -> Table:
    """`df` as a reader sees it (:class:`Table`).

    `columns`: what to show, in order: None (every column but :data:`INTERNAL` ones and the flags), a list of
    names or :class:`Column` specs, or a dict name -> label (or Column).  A ratio column ``X`` is shown with
    its interval when ``X_ci_low`` and ``X_ci_high`` exist (those two are then not shown on their own).
    `flags`: the column of :mod:`pqlab.core.flags` cells; a code on every row becomes a note "All rows: ...",
    other codes a mark (a, b, ...) with its meaning under the table; `show_flags` limits the codes shown.
    A value whose interval does not resolve it (:func:`resolved`: a ratio's interval, or a relative half-width
    ``*_rel_ci``) shows :data:`NOT_RESOLVED_MARK`, with a note saying what that means.
    `notes`: more lines under the table."""
    specs = _column_specs(df, columns)
    internal = [str(s.name if isinstance(s, Column) else s) for s in specs
                if str(s.name if isinstance(s, Column) else s) in INTERNAL]
    if internal:
        raise ValueError(f"column {internal[0]!r} is internal: tables never show run ids or machine ids "
                         "(the export's sidecar records the runs); leave it out of `columns`")
    cols = [resolve_column(s, df) for s in specs]
    intervals_of = {c.name: interval_columns(c.name, df) for c in cols if c.kind == "ratio"}
    merged = {n for pair in intervals_of.values() if pair for n in pair}
    cols = [c for c in cols if c.name not in merged]
    units, columns_cells, unclear = [], [], 0
    for c in cols:
        series = df[c.name]
        if c.kind in _DISPLAY_UNITS:
            values = [float(v) * c.scale for v in _numbers(series).dropna()]
            unit, unit_scale = ((c.unit, dict(_DISPLAY_UNITS[c.kind])[c.unit]) if c.unit
                                else _choose_unit(c.kind, values))
            unit_scale /= c.scale
        else:
            unit, unit_scale = "", 1.0
        numbers = _numbers(series) if c.kind not in ("text", "bool") else None
        finite = [abs(v) / unit_scale for v in (numbers.dropna() if numbers is not None else [])
                  if math.isfinite(v)]
        tiny = max(1e-12, 1e-9 * max(finite, default=0.0))
        pair = intervals_of.get(c.name)
        intervals = list(zip(df[pair[0]], df[pair[1]])) if pair else [None] * len(df)
        values = numbers if numbers is not None else series
        if pair:
            unresolved = [not resolved(*iv) for iv in intervals]
        elif c.kind == "percent" and {"rel", "ci"} <= set(_tokens(c.name)):  # a relative half-width
            unresolved = [not resolved_rel(v * c.scale) for v in values]
        else:
            unresolved = [False] * len(df)
        unclear += any(unresolved)
        columns_cells.append([_cell(v, c.kind, unit_scale, tiny, iv, u)
                              for v, iv, u in zip(values, intervals, unresolved)])
        units.append(unit)
    rows = [list(r) for r in zip(*columns_cells)] if cols else [[] for _ in range(len(df))]
    marks, legend = flag_marks(df[flags] if flags and flags in df.columns else [None] * len(df), show_flags)
    return Table(cols, units, rows, marks, legend + [not_resolved_note()] * bool(unclear) + list(notes))


def flag_marks(cells, show_flags=None) -> tuple[list[str], list[str]]:
    """The one place that turns a table's flags cells (:mod:`pqlab.core.flags`) into footnotes, for a
    notebook's display and the paper's .md and .tex alike (:func:`table`): ``(marks, legend)``, one mark per
    row ("a", "a,b" or "") and the legend lines.  A code on every row becomes "All rows: ...", other codes a
    letter (a, b, ... in the order the rows first carry them) with its meaning; `show_flags` limits the codes
    shown."""

    row_codes = [[c for c in flagvocab.codes(cell) if show_flags is None or c in show_flags]
                 for cell in cells]
    everywhere = [c for c in dict.fromkeys(c for codes in row_codes for c in codes)
                  if all(c in codes for codes in row_codes)]
    letters: dict[str, str] = {}
    for codes in row_codes:
        for c in codes:
            if c not in everywhere and c not in letters:
                letters[c] = _MARKS[len(letters) % len(_MARKS)]
    marks = [",".join(letters[c] for c in codes if c in letters) for codes in row_codes]
    legend = ([f"All rows: {flagvocab.legend(c)}." for c in everywhere]
              + [f"{m}: {flagvocab.legend(c)}." for c, m in letters.items()])
    return marks, legend
