"""The one flag vocabulary of the results store, and its one writer and reader.

A row's ``flags`` cell holds ``;``-separated flags, each ``code`` or ``code:detail``.  Codes come
from :data:`FLAGS` only (an unknown code is a programming error, raised at once); details are free
text made safe by :func:`sanitize` (one line, no ``;``, at most :data:`MAX_DETAIL` characters), so
exception messages can never split a flag.  Readers test codes exactly (:func:`has`), never by
substring.

    cell = join([make("no-cycles", "perf_event_open: ENOENT"), "few-samples"])
    has(cell, "few-samples") -> True;  codes(cell) -> ["no-cycles", "few-samples"]
"""
from __future__ import annotations

from collections.abc import Iterable

SEPARATOR = ";"
MAX_DETAIL = 240
#: Thresholds of the instability flags (pyperf-like; pqlab.measure.stats applies them): raise them in a run's
#: parameters if needed.
CV_LIMIT = 0.10
MIN_SAMPLES = 10
MIN_FAR = 0.20  # (median - min) / median

#: code -> what it means (the legend printed under tables).
FLAGS: dict[str, str] = {
    # sampling (pqlab.measure.stats, pqlab.measure.timing)
    "unstable-cv": f"coefficient of variation of the samples is {CV_LIMIT * 100:g} % or more",
    "few-samples": f"fewer than {MIN_SAMPLES} samples",
    "min-far-from-median": f"the fastest sample is more than {MIN_FAR * 100:g} % below the median",
    "no-samples": "no sample was taken",
    # conformance (pqlab.checks.conformance)
    "non-conforming": "the implementation failed known-answer or invalid-input checks (the note names how): "
                      "its time is not comparable with a conforming implementation's",
    "conformance-not-checked": "no known-answer vectors ran for this implementation and algorithm (the "
                               "detail says why); only the timing's own output checks",
    "no-rounds": "measured in one process only: no interval is shown (an interval needs rounds; the detail "
                 "says why)",
    "few-rounds": "fewer rounds than an interval needs: none is shown",
    "rounds-in-process": "the rounds ran in this process, not in fresh worker processes; the detail says why",
    "busy": "the machine was busy during some rounds (other processes' CPU or steal); the detail says how "
            "many",
    "reference-shift": "the reference loops' speed moved during some rounds; the detail gives the rounds and "
                       "sizes",
    "precision-not-reached": "the interval is wider than the target precision (target_rel_ci); the detail "
                             "says what ended the sampling (the budget, the most rounds, or the machine's "
                             "drift)",
    # counters
    "no-cycles": "no cycle counter was available; the detail says why",
    "cycles-dropped": "the cycle counter failed for some samples; their cycles are missing",
    # outcome
    "failed": "the operation failed or its output was wrong; the detail says how",
    # platforms
    "jvm-cold": "first calls in a fresh JVM (interpreted and JIT-compiling code)",
    # energy
    "no-energy": "no energy measurement; the detail says why",
    # memory (pqlab.runners.memory)
    "peak-outside-window": "the massif peak fell outside the operation's window; no figure is given",
    "heap-level-before-operation-not-captured": "massif took no snapshot when the window opened",
    "valgrind-used-generic-build": "valgrind ran liboqs's portable build (it cannot run the optimised one)",
    "stack-measured-at-other-message-sizes": "the stack was measured at other message sizes only",
    "first-call-in-process": "the first call in a process, one-time initialisation included",
    "python-level-allocations-only": "tracemalloc: Python-level allocations only, not what C code allocates",
    "coarse-rss": "maximum resident set size: whole pages of the whole process",
    "from-cache": "a deterministic measurement reused from the cache; the detail names the key",
}

#: Schema-1 spellings and what they became.
LEGACY = {"coarse": "coarse-rss", "cycles-estimated": "no-cycles"}


class UnknownFlag(ValueError):
    """A flag code outside :data:`FLAGS`."""


def sanitize(detail) -> str:
    """A detail safe inside a flag: one line, no separator, at most MAX_DETAIL characters."""
    text = " ".join(str(detail).replace(SEPARATOR, ",").split())
    return text if len(text) <= MAX_DETAIL else text[: MAX_DETAIL - 1] + "…"


def make(code: str, detail="") -> str:
    """One flag, ``code`` or ``code:detail``; `code` must be in :data:`FLAGS`."""
    if code not in FLAGS:
        raise UnknownFlag(f"unknown flag code {code!r}: add it to pqlab.core.flags.FLAGS with its meaning")
    detail = sanitize(detail) if detail not in (None, "") else ""
    return f"{code}:{detail}" if detail else code


def parse(cell) -> list[tuple[str, str]]:
    """``[(code, detail), ...]`` of a flags cell (empty for a missing cell)."""
    if cell is None or not isinstance(cell, str):
        return []
    out = []
    for part in cell.split(SEPARATOR):
        part = part.strip()
        if part:
            code, _, detail = part.partition(":")
            out.append((code, detail))
    return out


def join(flags: Iterable[str]) -> str:
    """A flags cell from flags (each from :func:`make` or a cell), duplicates dropped, order kept."""
    parts = [p for f in flags for p in (f.split(SEPARATOR) if f else []) if p.strip()]
    return SEPARATOR.join(dict.fromkeys(p.strip() for p in parts))


def add(cell, code: str, detail="") -> str:
    """`cell` with one more flag."""
    return join([cell if isinstance(cell, str) else "", make(code, detail)])


def codes(cell) -> list[str]:
    """The codes of a flags cell, in order."""
    return [code for code, _ in parse(cell)]


def has(cell, code: str):
    """Whether a cell (or every cell of a pandas Series) carries `code`, matched exactly."""
    if code not in FLAGS:
        raise UnknownFlag(f"unknown flag code {code!r}; known: {', '.join(FLAGS)}")
    if hasattr(cell, "map") and not isinstance(cell, str):
        return cell.map(lambda c: code in codes(c)).astype(bool)
    return code in codes(cell)


def detail(cell, code: str) -> str:
    """The detail of the first `code` flag in a cell ("" when absent or without detail)."""
    return next((d for c, d in parse(cell) if c == code), "")


def legend(code: str) -> str:
    """What `code` means, for the legend under a table (tables show no details, so the pointer to the
    detail is left out)."""
    return FLAGS.get(code, code).split("; the detail")[0]


def upgrade(cell) -> str:
    """A schema-1 flags cell in today's vocabulary (see :data:`LEGACY`); codes that no longer exist
    are dropped."""
    out = []
    for code, det in parse(cell):
        code = LEGACY.get(code, code)
        if code in FLAGS:
            out.append(make(code, det))
    return join(out)
