"""Numbers with their units as prose shows them: one place for every display unit and rounding rule.

    fmt_time_ns(51_010)       -> "51 µs"          fmt_bytes(17088)          -> "17,088 B"
    fmt_cycles(2.1e6)         -> "2.1 Mcycles"    fmt_bytes_binary(3 << 20) -> "3 MiB"
    fmt_factor(1.234)         -> "1.23×"          fmt_span([1, 3], fmt_bytes) -> "1 B to 3 B"
    fmt_energy_uj(1520)       -> "1.52 mJ"        fmt_duration(142)         -> "2 min 22 s"

Missing values (None, NaN, pandas' NA) print as :data:`MISSING`.  A value whose interval spans more than
:data:`RESOLVED_FACTOR` is "not resolved" (:func:`resolved`, :func:`fmt_factor_ci`), never a number.  The
display units are sized by the schema's one unit table (:data:`pqlab.core.schema.UNIT_TABLE`).
"""
from __future__ import annotations

import math

from pqlab.core.schema import UNIT_TABLE

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
            if n == int(n) and int(n) % size == 0:
                return f"{int(n) // size} {unit}"
            return f"{n / size:.{digits}g} {unit}"
    return f"{n:.0f} B"


def fmt_factor(x, digits: int = 2) -> str:
    """A ratio as a factor: "1.23×" (`digits` decimals; thousands separated above 100)."""
    if is_missing(x):
        return MISSING
    x = float(x)
    return f"{x:,.0f}×" if abs(x) >= 100 else f"{x:.{digits}f}×"


#: The widest interval that still resolves its value: an interval whose high end is more than this factor
#: above its low end (or whose low end is not above zero) says the value is not known within a factor of this,
#: so it is shown as "not resolved" (:func:`fmt_factor_ci`, tables: :data:`NOT_RESOLVED_MARK`), never
#: as a number.
RESOLVED_FACTOR = 2.0
#: what a table cell shows for a value whose interval does not resolve it (its note says what it means)
NOT_RESOLVED_MARK = "n.r."


def resolved(low, high) -> bool:
    """Whether the interval [low, high] resolves its value: low > 0 and high / low at most
    :data:`RESOLVED_FACTOR`. An interval with a missing end is no interval (the value is shown without one):
    it counts as resolved."""
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
    """A factor with its confidence interval: "1.23× [1.20, 1.26]"; :func:`not_resolved_text` where the
    interval does not resolve it (:func:`resolved`)."""
    if is_missing(x):
        return MISSING
    if is_missing(low) or is_missing(high):
        return fmt_factor(x, digits)
    if not resolved(low, high):
        return not_resolved_text()
    return f"{fmt_factor(x, digits)} [{fmt_factor(low, digits)[:-1]}, {fmt_factor(high, digits)[:-1]}]"


def fmt_time_ci(median, low, high) -> str:
    """A time with its interval in the same unit: "10.3 µs [10.2, 10.4]"; "10.3 µs (no interval: no rounds)"
    where the row has none."""
    text = fmt_time_ns(median)
    if is_missing(median):
        return text
    if is_missing(low) or is_missing(high):
        return f"{text} (no interval: too few rounds)"
    value, unit = text.split(" ", 1)
    ends = (significant(float(float(x) / UNIT_TABLE[unit][1])) for x in (low, high))
    return f"{value} {unit} [{', '.join(ends)}]"


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
    return significant(x, digits) if x else "0"


def fmt_count(n) -> str:
    """An integer with thousands separators: "1,234"."""
    return MISSING if is_missing(n) else f"{int(n):,}"



def significant(x: float, digits: int = 3) -> str:
    """`digits` significant digits without exponent, thousands separated: 1234.5 -> "1,230", 0.012345 ->
    "0.0123"."""
    if x == 0:
        return "0"
    r = float(f"{x:.{digits}g}")
    return f"{r:,.{max(0, digits - 1 - math.floor(math.log10(abs(r))))}f}"
