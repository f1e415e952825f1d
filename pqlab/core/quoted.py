"""A number a text quotes, with what a reader needs to cite it, and the check that prose never drops it.

:class:`Quoted` is one number as every export carries it (:func:`pqlab.publish.export.save_numbers`): its
value, its interval, the statistic it is and the caveats that go with it ("different implementations: liboqs
against OpenSSL").  A notebook sentence, the LaTeX macro, the ``.txt`` file and ``numbers.export.json``
then all say the same thing, not "0.96× [0.73, 1.26]" alone::

    Quoted(0.96, 0.73, 1.26, statistic="ratio of medians, 95 % interval over 6 rounds paired by round",
           caveats=("different implementations: liboqs against OpenSSL",))
    .text -> "0.96× [0.73, 1.26]"     .note -> "ratio of medians, ...; different implementations: ..."

:func:`bare_factors` finds the factors a generated sentence prints without their interval and without saying
why (tests/nbval_prose.py runs it over every Markdown output of every notebook in ``make test``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from pqlab.core.quantities import (
    fmt_factor_ci,
    fmt_time_ci,
    fmt_time_ns,
    is_missing,
    not_resolved_note,
    not_resolved_text,
    resolved,
    significant,
)

#: the units a :class:`Quoted` formats itself in: unit -> one value as text
_FORMATS = {"×": None, "ns": fmt_time_ns, "": significant}


@dataclass(frozen=True)
class Quoted:
    """One quoted number: `value` with its interval [`low`, `high`] (None: no interval), in `unit` ("×": a
    factor, "ns": a time, "": a plain number), the `statistic` it is (what a reader needs to re-derive it) and
    its `caveats` (what differs between what it compares)."""

    value: float | None
    low: float | None = None
    high: float | None = None
    unit: str = "×"
    statistic: str = ""
    caveats: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.unit not in _FORMATS:
            raise ValueError(f"unit {self.unit!r} of a quoted number is not one of {sorted(_FORMATS)}: give "
                             "the value in ns for a time, or a plain number with unit ''")
        if isinstance(self.caveats, str):
            object.__setattr__(self, "caveats", (self.caveats,))

    @property
    def missing(self) -> bool:
        return is_missing(self.value)

    @property
    def has_interval(self) -> bool:
        return not (is_missing(self.low) or is_missing(self.high))

    @property
    def is_resolved(self) -> bool:
        return resolved(self.low, self.high) if self.unit == "×" else True

    @property
    def text(self) -> str:
        """The value with its interval as prose prints it ("0.96× [0.73, 1.26]", "10.3 µs [10.2, 10.4]"),
        "not resolved (...)" where the interval does not resolve a factor."""
        if self.unit == "×":
            return fmt_factor_ci(self.value, self.low, self.high)
        if self.unit == "ns" and self.has_interval and not self.missing:
            return fmt_time_ci(self.value, self.low, self.high)
        fmt = _FORMATS[self.unit]
        if self.missing:
            return fmt(self.value) if self.unit else "n/a"
        if not self.has_interval:
            return fmt(self.value)
        return f"{fmt(self.value)} [{fmt(self.low)}, {fmt(self.high)}]"

    @property
    def note(self) -> str:
        """The statistic and the caveats in one line ("" when there are none)."""
        return "; ".join(p for p in (self.statistic, *self.caveats) if p)

    @property
    def sentence(self) -> str:
        """The value, its interval, the statistic and the caveats: what a file read alone must say."""
        return f"{self.text} ({self.note})" if self.note else self.text

    def record(self) -> dict:
        """The fields as numbers.export.json lists them."""
        def clean(x):
            return None if is_missing(x) else float(x)

        return {"text": self.text, "value": clean(self.value), "low": clean(self.low),
                "high": clean(self.high),
                "unit": self.unit, "statistic": self.statistic, "caveats": list(self.caveats),
                "resolved": self.is_resolved}


def quoted(value):
    """`value` as a :class:`Quoted` where it is one or can say itself as one (an object with a ``quoted()``
    method: :class:`pqlab.measure.ratio.Ratio`); else None (a plain number or text)."""
    if isinstance(value, Quoted):
        return value
    method = getattr(value, "quoted", None)
    return method() if callable(method) else None


#: a factor printed as a number ("1.23×", "1,143×", "0.5 ×"; not a dimension such as "4×3")
_FACTOR = re.compile(r"(?<![\w.\[,])\d[\d,]*(?:\.\d+)?\s?×(?!\d)")
#: an interval right after a factor ("× [1.20, 1.26]"; Markdown-escaped "× \\[1.20, 1.26\\]" too)
_INTERVAL_AFTER = re.compile(r"\s?\\?\[\s?[-−+]?[\d,.]+\s?,\s?[-−+]?[\d,.]+\s?\\?\]")
#: words with which a sentence says why its factors stand without an interval, or states a threshold
WITHOUT_INTERVAL = ("no interval", "without interval", "without an interval", "threshold", "at least",
                    "at most")
#: words right before a factor that make it a published value (the study's own number: no interval to give)
_PUBLISHED_BEFORE = re.compile(r"(?:published|study|study's|theirs|their|paper's|≈)[^.;×]{0,12}$", re.I)
_SENTENCE_END = re.compile(r"(?<=[.;:!?])\s+(?=[A-Z*(`⚠])|\n+")


def bare_factors(text: str) -> list[str]:
    """The factors `text` (Markdown prose) prints without their interval, each with its sentence, where the
    sentence does not say why (:data:`WITHOUT_INTERVAL`) and the factor is not a published one (its words
    before it: "published", "study", "theirs", "≈").  Table rows (lines starting with "|") are left out:
    a table carries its interval in its own columns."""
    prose = "\n".join(line for line in str(text).splitlines() if not line.lstrip().startswith("|"))
    for fixed in (not_resolved_text(), not_resolved_note()):
        prose = prose.replace(fixed, " ")
    out = []
    for sentence in _SENTENCE_END.split(prose):
        lowered = sentence.lower()
        if any(w in lowered for w in WITHOUT_INTERVAL):
            continue
        for m in _FACTOR.finditer(sentence):
            if not _INTERVAL_AFTER.match(sentence, m.end()) and not _PUBLISHED_BEFORE.search(
                    sentence[max(0, m.start() - 40):m.start()]):
                out.append(f"{m.group(0).strip()} in: {sentence.strip()[:200]}")
    return out
