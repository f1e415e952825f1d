"""Formatting for a reader: numbers for prose, text for each output language, tables.  One place for every
unit and rounding rule, each part in its own module and every name reachable from here (``formatting.table``,
``formatting.fmt_time_ns`` ...):

:mod:`~pqlab.core.quantities`: numbers with their units as prose shows them

    fmt_time_ns(51_010)       -> "51 µs"          fmt_bytes(17088)          -> "17,088 B"
    fmt_cycles(2.1e6)         -> "2.1 Mcycles"    fmt_bytes_binary(3 << 20) -> "3 MiB"
    fmt_factor(1.234)         -> "1.23×"          fmt_span([1, 3], fmt_bytes) -> "1 B to 3 B"
    fmt_energy_uj(1520)       -> "1.52 mJ"        fmt_duration(142)         -> "2 min 22 s"

Missing values (None, NaN, pandas' NA) print as :data:`MISSING` in prose.

:mod:`~pqlab.core.escaping`: text from data or metadata (run ids, CPU models, algorithm names ...) reaches
each output language through its one escaping rule, so it is always shown, never read as markup:

    latex("r9}\\typeout{X}")        -> "r9\\}\\textbackslash{}typeout\\{X\\}"  (also where="comment", "url")
    markdown("<b>|x")               -> "&lt;b&gt;\\|x"
    html("<b>")                     -> "&lt;b&gt;"
    mpl_text("$\\x$")               -> "\\$\\x\\$"   (a matplotlib text that is never mathtext)
    slug("SPHINCS+-SHA2 128f")      -> "SPHINCSplus-SHA2_128f"  (a file name)

:mod:`~pqlab.core.tables`: tables (paper exports and notebook display alike) go through :func:`table`: each
column has a kind (:data:`KINDS`, read from its name and values or given as a :class:`Column`), a header label
and a unit in brackets, and cells formatted by that kind; missing cells print as :data:`TABLE_MISSING`; flags
become short marks with a legend (:func:`flag_marks`, the one place that assigns the letters); a value whose
interval spans more than :data:`RESOLVED_FACTOR` prints as :data:`NOT_RESOLVED_MARK` ("not resolved" in
prose), never as a number; run ids and other internals never show.

    table(run.raw_summary())  -> Table: .frame (strings, "Time median [µs]"), .notes, .to_markdown()

Nothing here imports pandas at import time.
"""
from __future__ import annotations

from pqlab.core.escaping import LATEX_PLACES, html, latex, markdown, mpl_text, slug
from pqlab.core.quantities import (
    MISSING,
    NOT_RESOLVED_MARK,
    RESOLVED_FACTOR,
    fmt_bytes,
    fmt_bytes_binary,
    fmt_compact,
    fmt_count,
    fmt_cycles,
    fmt_duration,
    fmt_energy_uj,
    fmt_factor,
    fmt_factor_ci,
    fmt_percent,
    fmt_span,
    fmt_time_ci,
    fmt_time_ms,
    fmt_time_ns,
    is_missing,
    not_resolved_note,
    not_resolved_text,
    resolved,
    resolved_rel,
    significant,
)
from pqlab.core.quantities import significant as _sig  # noqa: F401 - its name before the split
from pqlab.core.tables import (
    FLAGS_COLUMN,
    INTERNAL,
    KINDS,
    TABLE_MISSING,
    Column,
    Table,
    flag_marks,
    interval_columns,
    kind_from_name,
    label_from_name,
    resolve_column,
    table,
    unit_divisor,
)

__all__ = [
    "FLAGS_COLUMN", "INTERNAL", "KINDS", "LATEX_PLACES", "MISSING", "NOT_RESOLVED_MARK", "RESOLVED_FACTOR",
    "TABLE_MISSING", "Column", "Table", "flag_marks", "fmt_bytes", "fmt_bytes_binary", "fmt_compact",
    "fmt_count", "fmt_cycles", "fmt_duration", "fmt_energy_uj", "fmt_factor", "fmt_factor_ci", "fmt_percent",
    "fmt_span", "fmt_time_ci", "fmt_time_ms", "fmt_time_ns", "html", "interval_columns", "is_missing",
    "kind_from_name", "label_from_name", "latex", "markdown", "mpl_text", "not_resolved_note",
    "not_resolved_text", "resolve_column", "resolved", "resolved_rel", "significant", "slug", "table",
    "unit_divisor",
]
