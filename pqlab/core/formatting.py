"""Formatting numbers for prose, tables and file names: one place for every unit and rounding rule.

    fmt_time_ns(51_010)       -> "51 µs"          fmt_bytes(17088)          -> "17,088 B"
    fmt_cycles(2.1e6)         -> "2.1 Mcycles"    fmt_bytes_binary(3 << 20) -> "3 MiB"
    fmt_factor(1.234)         -> "1.23×"          fmt_span([1, 3], fmt_bytes) -> "1 B to 3 B"
    fmt_energy_uj(1520)       -> "1.52 mJ"        slug("SPHINCS+-SHA2 128f") -> "SPHINCSplus-SHA2_128f"
    fmt_duration(142)         -> "2 min 22 s"

Missing values (None, NaN, pandas' NA) print as :data:`MISSING` in prose.

Text from data or metadata (run ids, CPU models, algorithm names ...) reaches each output language through
its one escaping rule, so it is always shown, never read as markup:

    latex("r9}\\typeout{X}")        -> "r9\\}\\textbackslash{}typeout\\{X\\}"  (also where="comment", "url")
    markdown("<b>|x")               -> "&lt;b&gt;\\|x"
    html("<b>")                     -> "&lt;b&gt;"
    mpl_text("$\\x$")               -> "\\$\\x\\$"   (a matplotlib text that is never mathtext)

Tables (paper exports and notebook display alike) go through :func:`table`: each column has a kind
(:data:`KINDS`, read from its name and values or given as a :class:`Column`), a header label and a unit in
brackets, and cells formatted by that kind; missing cells print as :data:`TABLE_MISSING`; flags become short
marks with a legend (:func:`flag_marks`, the one place that assigns the letters); a value whose interval spans more
than :data:`RESOLVED_FACTOR` prints as :data:`NOT_RESOLVED_MARK` ("not resolved" in prose), never as a number;
run ids and other internals never show.

    table(run.raw_summary())  -> Table: .frame (strings, "Time median [µs]"), .notes, .to_markdown()

Nothing here imports pandas at import time.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from html import escape
from urllib.parse import quote

from pqlab.core import flags as flagvocab
from pqlab.core.errors import BadInput, UnknownName, choice, close_matches
from pqlab.core.schema import UNIT_TABLE, unit_of, unit_size

MISSING = "n/a"
#: prose's display units, largest first, sized by the schema's one unit table (label, size in the stored unit)
_TIME_UNITS = tuple((u, UNIT_TABLE[u][1]) for u in ("s", "ms", "µs"))
_CYCLE_UNITS = tuple((u[0], UNIT_TABLE[u][1]) for u in ("Gcycles", "Mcycles", "kcycles"))
_ENERGY_UNITS = tuple((u, UNIT_TABLE[u][1]) for u in ("J", "mJ"))


def is_missing(value) -> bool:
    """True for None, NaN and pandas' NA/NaT (anything that is not a number)."""
    if value is None:
        return True
    try:
        return math.isnan(float(value))
    except (TypeError, ValueError):
        return True


def _scaled(value: float, units, base: str, digits: int) -> str:
    for unit, scale in units:
        if abs(value) >= scale:
            return f"{value / scale:.{digits}g} {unit}"
    return f"{value:.{digits}g} {base}"


def fmt_time_ns(ns, digits: int = 3) -> str:
    """A duration in nanoseconds with the unit that suits it (ns, µs, ms, s), `digits` significant."""
    return MISSING if is_missing(ns) else _scaled(float(ns), _TIME_UNITS, "ns", digits)


def fmt_time_ms(ms, digits: int = 3) -> str:
    """A duration in milliseconds, printed like :func:`fmt_time_ns`."""
    return MISSING if is_missing(ms) else fmt_time_ns(float(ms) * 1e6, digits)


def fmt_duration(seconds) -> str:
    """A wall time in seconds as people read run times: 42 s, 2 min 22 s, 1 h 01 min."""
    if is_missing(seconds):
        return MISSING
    s = round(float(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60} s"
    minutes = round(float(seconds) / 60)
    return f"{minutes // 60} h {minutes % 60:02d} min"


def fmt_energy_uj(uj, digits: int = 3) -> str:
    """An energy in microjoules with the unit that suits it (µJ, mJ, J)."""
    return MISSING if is_missing(uj) else _scaled(float(uj), _ENERGY_UNITS, "µJ", digits)


def fmt_cycles(cycles, digits: int = 3) -> str:
    """A cycle count: "812 cycles", "51.2 kcycles", "2.1 Mcycles"."""
    if is_missing(cycles):
        return MISSING
    c = float(cycles)
    for unit, scale in _CYCLE_UNITS:
        if c >= scale:
            return f"{c / scale:.{digits}g} {unit}cycles"
    return f"{c:.0f} cycles"


def fmt_bytes(n) -> str:
    """An exact byte count with thousands separators: "17,088 B"."""
    return MISSING if is_missing(n) else f"{int(round(float(n))):,} B"


def fmt_bytes_binary(n, digits: int = 3) -> str:
    """A byte count in B, KiB or MiB (exact where it divides, else `digits` significant); inf -> "never"."""
    if is_missing(n):
        return MISSING
    n = float(n)
    if math.isinf(n):
        return "never"
    for unit, size in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{int(n) // size} {unit}" if n == int(n) and int(n) % size == 0 else f"{n / size:.{digits}g} {unit}"
    return f"{n:.0f} B"


def fmt_factor(x, digits: int = 2) -> str:
    """A ratio as a factor: "1.23×" (`digits` decimals; thousands separated above 100)."""
    if is_missing(x):
        return MISSING
    x = float(x)
    return f"{x:,.0f}×" if abs(x) >= 100 else f"{x:.{digits}f}×"


#: The widest interval that still resolves its value: an interval whose high end is more than this factor above its
#: low end (or whose low end is not above zero) says the value is not known within a factor of this, so it is shown
#: as "not resolved" (:func:`fmt_factor_ci`, tables: :data:`NOT_RESOLVED_MARK`), never as a number.
RESOLVED_FACTOR = 2.0
#: what a table cell shows for a value whose interval does not resolve it (its note says what it means)
NOT_RESOLVED_MARK = "n.r."


def resolved(low, high) -> bool:
    """Whether the interval [low, high] resolves its value: low > 0 and high / low at most :data:`RESOLVED_FACTOR`.
    An interval with a missing end is no interval (the value is shown without one): it counts as resolved."""
    if is_missing(low) or is_missing(high):
        return True
    return float(low) > 0 and float(high) <= RESOLVED_FACTOR * float(low)


def resolved_rel(half_width) -> bool:
    """:func:`resolved` for a relative half-width h (the interval [1 - h, 1 + h] of the value): missing counts
    as resolved (no interval)."""
    return is_missing(half_width) or resolved(1 - float(half_width), 1 + float(half_width))


def not_resolved_text() -> str:
    """What prose says in place of a value whose interval does not resolve it."""
    return f"not resolved (interval wider than {fmt_factor(RESOLVED_FACTOR, 0)})"


def not_resolved_note() -> str:
    """The note under a table with :data:`NOT_RESOLVED_MARK` cells."""
    return (f"{NOT_RESOLVED_MARK}: not resolved, the interval is wider than {fmt_factor(RESOLVED_FACTOR, 0)} "
            "(its high end over its low end) or reaches zero, so no value is shown.")


def fmt_factor_ci(x, low, high, digits: int = 2) -> str:
    """A factor with its confidence interval: "1.23× [1.20, 1.26]"; :func:`not_resolved_text` where the interval
    does not resolve it (:func:`resolved`)."""
    if is_missing(x):
        return MISSING
    if is_missing(low) or is_missing(high):
        return fmt_factor(x, digits)
    if not resolved(low, high):
        return not_resolved_text()
    return f"{fmt_factor(x, digits)} [{fmt_factor(low, digits)[:-1]}, {fmt_factor(high, digits)[:-1]}]"


def fmt_percent(x, digits: int = 1, signed: bool = False) -> str:
    """A fraction as a percentage: 0.0123 -> "1.2 %" ("+1.2 %" when `signed`)."""
    if is_missing(x):
        return MISSING
    return f"{float(x) * 100:{'+' if signed else ''}.{digits}f} %"


def fmt_span(values, fmt=fmt_bytes, sep: str = " to ") -> str:
    """"x" when every value is the same, else "min to max" (missing values ignored)."""
    vals = [float(v) for v in values if not is_missing(v)]
    if not vals:
        return MISSING
    lo, hi = min(vals), max(vals)
    return fmt(lo) if lo == hi else f"{fmt(lo)}{sep}{fmt(hi)}"


def fmt_compact(x, digits: int = 3) -> str:
    """A number in little room (figure labels): `digits` significant digits, thousands and more with k, M, G:
    "0.0123", "45.6", "1.23k", "4.5M"; missing values as :data:`MISSING`."""
    if is_missing(x):
        return MISSING
    x = float(f"{float(x):.{digits}g}")
    for suffix, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(x) >= scale:
            return f"{x / scale:g}{suffix}"
    return _sig(x, digits) if x else "0"


def fmt_count(n) -> str:
    """An integer with thousands separators: "1,234"."""
    return MISSING if is_missing(n) else f"{int(n):,}"


def slug(text: str, lower: bool = False) -> str:
    """A file-safe name: "+" spelled "plus", runs of anything outside [A-Za-z0-9_.-] as one "_"."""
    out = re.sub(r"[^A-Za-z0-9_.-]+", "_", str(text).replace("+", "plus")).strip("_")
    return out.lower() if lower else out


# ----- text from data in each output language: one rule each ------------------------------------------------
# Run ids, machine facts (CPU model, hostname, versions), algorithm and backend names, flags and labels may
# come from another machine's bundle: whatever they hold, they reach a reader as text, never as markup.  Every
# export writes such a string through the one function of its language: LaTeX (:func:`latex`), Markdown
# (:func:`markdown`), HTML (:func:`html`), matplotlib (:func:`mpl_text`).

#: characters that end a line (of a TeX comment, a Markdown table row) or that no text shows
_BREAKS = re.compile(r"[\x00-\x1f\x7f\x85\u2028\u2029]")
_LATEX_CHARS = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{", "}": r"\}",
    "~": r"\textasciitilde{}", "^": r"\^{}", "µ": r"\textmu{}", "×": r"\ensuremath{\times}", "–": "--", "—": "---",
    "−": r"\ensuremath{-}", "∞": r"\ensuremath{\infty}", "≥": r"\ensuremath{\geq}", "≤": r"\ensuremath{\leq}",
    "±": r"\ensuremath{\pm}", "≈": r"\ensuremath{\approx}", "→": r"\ensuremath{\rightarrow}",
    "·": r"\textperiodcentered{}", "‑": "-", "…": r"\dots{}", "°": r"\textdegree{}", "\u00a0": "~", "’": "'",
    "<": r"\textless{}", ">": r"\textgreater{}", "|": r"\textbar{}",
    **{g: rf"\ensuremath{{\{n}}}" for g, n in zip("αβγδεηλμστω", ("alpha", "beta", "gamma", "delta", "epsilon", "eta",
                                                              "lambda", "mu", "sigma", "tau", "omega"))}}
_LATEX_RE = re.compile("|".join(re.escape(c) for c in _LATEX_CHARS))
#: what a \url{} shows as itself; anything else is percent-encoded (braces, backslash, %, #, spaces, line breaks)
_URL_SAFE = "/:@?=&+,;!*'()$"
LATEX_PLACES = ("text", "comment", "url")


def latex(text, where: str = "text") -> str:
    """`text` (from data or metadata) as LaTeX that typesets it and does nothing else, for `where` it goes:

    "text": running text, table cells, captions, a macro's body: every special character escaped (``\\ { } $ &
    # ^ _ ~ %`` ...), the Unicode pqlab writes (µ × – ∞ ≥ ...) as commands, line breaks and control characters
    as spaces.  "comment": after a ``%``: one line (line breaks and control characters as spaces; nothing else
    in a comment is read).  "url": the argument of ``\\url{}`` outside any other macro's argument: characters
    other than letters, digits and ``-._~/:@?=&+,;!*'()$`` percent-encoded, so no brace ends it early."""
    if where == "url":

        return quote(str(text), safe=_URL_SAFE)
    text = _BREAKS.sub(" ", str(text))
    if where == "comment":
        return text
    if where != "text":
        raise ValueError(f"latex(): where={where!r} is not one of {', '.join(LATEX_PLACES)}")
    return _LATEX_RE.sub(lambda m: _LATEX_CHARS[m.group(0)], text)


_MARKDOWN_CHARS = {"&": "&amp;", "<": "&lt;", ">": "&gt;", **{c: "\\" + c for c in "\\`*_[]|$~"}}
_MARKDOWN_RE = re.compile("|".join(re.escape(c) for c in _MARKDOWN_CHARS))
#: a list item, heading or rule marker where a text starts (a line of its own: a caption)
_MARKDOWN_START = re.compile(r"^(\s*)([-+=#]+|\d+[.)])(?=\s|$)")


def markdown(text) -> str:
    """`text` (from data or metadata) as Markdown that shows it, in a sentence or a table cell: one line (line
    breaks as spaces), ``| \\ ` * _ [ ] $ ~`` backslash-escaped (a ``|`` never adds a table column, a ``$`` never
    starts a formula), ``< > &`` as entities (never HTML), and a list, heading or rule marker at its start
    escaped."""
    text = _MARKDOWN_RE.sub(lambda m: _MARKDOWN_CHARS[m.group(0)], _BREAKS.sub(" ", str(text)))
    return _MARKDOWN_START.sub(lambda m: m.group(1) + (f"{m.group(2)[:-1]}\\{m.group(2)[-1]}" if m.group(2)[0].isdigit()
                                                      else "\\" + m.group(2)), text)


def html(text) -> str:
    """`text` (from data or metadata) as HTML text: ``& < > " '`` as entities."""

    return escape(str(text), quote=True)


def mpl_text(text) -> str:
    """`text` (from data or metadata) for a matplotlib text that may parse math (tick labels, legend entries,
    titles, annotations): every ``$`` escaped, so it is never mathtext and shows as written, backslashes
    included.  (A text created with ``parse_math=False``, as the figure footer, takes the text unchanged.)"""
    return str(text).replace("$", r"\$")


# ----- tables: one rule per column kind, for paper tables (pqlab.publish.export) and notebook display ------------

#: what a missing cell shows in a table (prose uses :data:`MISSING`)
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
_NAME_UNITS = {"ns": "ns", "us": "µs", "µs": "µs", "ms": "ms", "s": "s", "cycles": "cycles", "kcycles": "kcycles",
               "mcycles": "Mcycles", "uj": "µJ", "µj": "µJ", "mj": "mJ", "j": "J", "w": "W", "bytes": "bytes",
               "pct": "%", "percent": "%"}
#: unit word in a column name -> (kind, the stored values' unit in the kind's base unit)
_SOURCE_UNITS = {word: UNIT_TABLE[unit] for word, unit in _NAME_UNITS.items()}
#: display units per kind, largest first: (label, size in the base unit)
_DISPLAY_UNITS = {kind: tuple((u, unit_size(u)[1]) for u in units) for kind, units in {
    "time": ("s", "ms", "µs", "ns"), "cycles": ("Mcycles", "kcycles"), "energy": ("J", "mJ", "µJ"),
    "size": ("B",), "percent": ("%",), "power": ("W",)}.items()}
_RATIO_WORDS = {"ratio", "factor", "over", "speedup", "slowdown", "vs"}
_WORDS = {"nist": "NIST", "cv": "CV", "ci": "CI", "q1": "Q1", "q3": "Q3", "bc": "BC", "id": "ID", "rsa": "RSA",
          "aes": "AES", "jvm": "JVM", "wls": "WLS", "ols": "OLS", "se": "SE", "r2": "R²", "rss": "RSS", "tls": "TLS",
          "cpu": "CPU", "der": "DER", "kem": "KEM", "tcp": "TCP", "quic": "QUIC", "rtt": "RTT", "openssl": "OpenSSL",
          "slh": "SLH", "dsa": "DSA", "fors": "FORS"}
_MARKS = "abcdefghijklmnopqrstuvwxyz"


def _tokens(name) -> list[str]:
    return [t for t in re.split(r"[_\s]+", str(name).lower()) if t]


def kind_from_name(name) -> tuple[str, float]:
    """(kind, the stored values' unit in the kind's base unit) of a column: the unit the schema declares for one of
    its columns (:func:`pqlab.core.schema.unit_of`: ``cycles_source`` is a label, not cycles), else what a derived
    column's name says, ("", 1.0) when it says nothing: "time_ns_median" -> ("time", 1), "median_ms" ->
    ("time", 1e6), "speedup" -> ("ratio", 1)."""

    declared = unit_of(str(name))
    if declared is not None:
        return ("percent", 1.0) if declared == "fraction" else _SOURCE_UNITS.get(declared.lower(), ("", 1.0))
    tokens = _tokens(name)
    if {"cv", "rel", "fraction"} & set(tokens):  # a coefficient of variation, a relative interval: fractions
        return "percent", 1.0
    for i in range(len(tokens) - 1, -1, -1):
        if tokens[i] in _SOURCE_UNITS and (i == 0 or tokens[i - 1] != "per"):  # "per_s" is a rate, not seconds
            return _SOURCE_UNITS[tokens[i]]
    return ("ratio", 1.0) if _RATIO_WORDS & set(tokens) else ("", 1.0)


def unit_divisor(column, unit: str) -> float:
    """What divides the values of `column` to show them in `unit` (e.g. "µs"), the column's own unit read from its
    name (:func:`kind_from_name`: "time_ns_median" holds ns, "median_ms" ms, "idle_fraction" a fraction); a unit
    that does not suit the column, or a column whose name says no unit, is refused in one line."""

    kind, source = kind_from_name(column)
    units = dict(_DISPLAY_UNITS.get(kind, ()))
    if not units:
        raise BadInput(f"column {str(column)!r} does not say its unit in its name (like time_ns_median, median_ms, "
                       f"public_key_bytes, sign_cycles), so unit={unit!r} cannot convert it: rename the column, or "
                       "leave unit unset and name the axis's unit in ylabel")
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
    unit of a time, cycles or energy column, e.g. "µs"; chosen from the values when empty) and `stored` (the unit
    the values are stored in, e.g. "ms", when the column's name does not say it).  `scale` is that unit in the
    kind's base unit (ns, cycles or µJ), set from `stored` or read from the name.  Empty fields are inferred by
    :func:`resolve_column`."""

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
                             f"{', '.join(close_matches(self.kind, KINDS)) or 'none'} (kinds: {', '.join(KINDS)})")
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
    col = spec if isinstance(spec, Column) else Column(spec)  # names as the frame has them (a pivot's are numbers)
    if col.name not in df.columns:

        raise UnknownName("column", col.name, [str(c) for c in df.columns], "choose among the frame's columns")
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
    return Column(col.name, col.label or label_from_name(col.name), col.kind or kind, col.unit, col.scale or scale)


def _sig(x: float, digits: int = 3) -> str:
    """`digits` significant digits without exponent, thousands separated: 1234.5 -> "1,230", 0.012345 -> "0.0123"."""
    if x == 0:
        return "0"
    r = float(f"{x:.{digits}g}")
    return f"{r:,.{max(0, digits - 1 - math.floor(math.log10(abs(r))))}f}"


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
        return TABLE_MISSING if is_missing(value) and not isinstance(value, bool) else ("yes" if bool(value) else "no")
    if kind == "text":
        if isinstance(value, float) and not math.isnan(value):
            return _sig(value)
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
        return f"{int(round(x)):,}" if x == round(x) else _sig(x)
    if kind == "ratio":
        text = f"{x:,.2f}×"
        if interval and not any(is_missing(v) for v in interval):
            text += f" [{float(interval[0]):,.2f}, {float(interval[1]):,.2f}]"
        return text
    if kind == "percent":
        return f"{x:.1f}"
    return _sig(x)


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
        text = self.frame.to_string(index=False) if self.rows else f"(no rows; columns: {', '.join(self.headers)})"
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
    names or :class:`Column` specs, or a dict name -> label (or Column).  A ratio column ``X`` is shown with its
    interval when ``X_ci_low`` and ``X_ci_high`` exist (those two are then not shown on their own).
    `flags`: the column of :mod:`pqlab.core.flags` cells; a code on every row becomes a note "All rows: ...", other
    codes a mark (a, b, ...) with its meaning under the table; `show_flags` limits the codes shown.
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
        finite = [abs(v) / unit_scale for v in (numbers.dropna() if numbers is not None else []) if math.isfinite(v)]
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
    """The one place that turns a table's flags cells (:mod:`pqlab.core.flags`) into footnotes, for a notebook's display
    and the paper's .md and .tex alike (:func:`table`): ``(marks, legend)``, one mark per row ("a", "a,b" or "")
    and the legend lines.  A code on every row becomes "All rows: ...", other codes a letter (a, b, ... in the
    order the rows first carry them) with its meaning; `show_flags` limits the codes shown."""

    row_codes = [[c for c in flagvocab.codes(cell) if show_flags is None or c in show_flags] for cell in cells]
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
