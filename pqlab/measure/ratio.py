"""One operation of one algorithm over one of another, from one run: the ratio with its interval, and what it
compares.

    run = pqlab.bench(["ML-DSA-65", "ECDSA-P384"], operations=["sign", "verify"])
    run.ratio("ML-DSA-65", "ECDSA-P384", operation="sign")
    -> ML-DSA-65@liboqs sign / ECDSA-P384@cryptography sign: 0.49× [0.48, 0.49] (...), and a warning: liboqs
       against OpenSSL

A number belongs to an implementation and a release, not to an algorithm name: a ratio whose two sides ran in
different implementations (liboqs against OpenSSL through ``cryptography``) or different releases or builds of
one says so in its text and its flags, every time.  Where a side did not name its backend (``"ML-DSA-65"``
rather than ``"ML-DSA-65@liboqs"``) and the sides differ, it also warns (:func:`pqlab.core.errors.warn`): the
conclusion then rests on a default the caller never chose.

The estimate is the ratio of the two medians a table of the run shows (each side's median of its round
medians), and the interval is over rounds, paired by round (both operations were measured in the same rounds
of the run: :func:`pqlab.measure.stats.ratio_ci`), centred on it: the ratio never disagrees with the medians
printed beside it.  The statistic is the median, whatever the sides' loop counts; a mean is used only where
asked for (``statistic="mean"``, to compare with a published mean), and the ratio then says so.

**Loop counts.**  A sample is the mean per call of `loops` back-to-back calls (:mod:`pqlab.measure.timing`),
so a median of samples is a median of batch means.  For an operation whose time does not vary from call to
call that is the median call whatever the loops; for one that varies by design (the rejection sampling of
ML-DSA and Falcon signing), a median of batches of four calls sits above the median of single calls, towards
the mean.  A ratio whose sides batch differently carries the flag ``unequal-batches`` and says each side's
loops, so a reader knows where that matters; switching to per-round means instead (as pqlab did until
issue #41) let a few 0.4-1.1 ms stalls among 18 µs calls move a ratio from 0.67 to 0.96.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from pqlab.core import builds
from pqlab.core.errors import BadInput, UnknownName, warn
from pqlab.core.formatting import fmt_factor_ci, fmt_percent, html, markdown
from pqlab.core.quoted import Quoted
from pqlab.core.schema import KIND_OPERATIONS
from pqlab.measure.stats import CONFIDENCE, MIN_ROUNDS, has_rounds, ratio_ci
from pqlab.measure.stats import statistic as stat_choice

#: ratio flags: code -> meaning
FLAGS = {
    "cross-implementation": "the two sides ran in different implementations (libraries)",
    "cross-release": "the two sides ran in different releases or builds of one implementation",
    "no-interval": "no interval: fewer shared rounds than an interval needs",
    "unequal-batches": "the sides' samples are means of different numbers of calls (their loops)",
    "cross-operation": "the two sides are different operations (e.g. sign over verify of one algorithm)",
}


@dataclass(frozen=True)
class Side:
    """One side of a ratio: what ran, and whether the caller named its backend."""

    algorithm: str
    backend: str
    build: str
    operation: str
    implementation: str
    library_version: str
    named: bool

    @property
    def label(self) -> str:
        """What ran, as the ratio names it: "ML-DSA-65@liboqs sign" (a number belongs to an
        implementation)."""
        return f"{self.algorithm}@{self.backend} {self.operation}"


@dataclass(frozen=True)
class Ratio:
    """``numerator / denominator`` of one run, with its interval over rounds and what differs between the
    sides.  ``str()`` and a notebook's display give the sentence; ``flags`` the codes of :data:`FLAGS`."""

    numerator: Side
    denominator: Side
    value: float
    low: float
    high: float
    statistic: str
    rounds: int
    run_id: str
    flags: tuple[str, ...]
    loops: tuple[int, int] = (1, 1)

    @property
    def text(self) -> str:
        """The value with its interval: "0.49× [0.48, 0.49]" (no interval: the value alone)."""
        return fmt_factor_ci(self.value, self.low, self.high)

    @property
    def differs(self) -> str:
        """What differs between the sides' implementations, in words ("" when they ran in the same one)."""
        a, b = self.numerator, self.denominator
        if a.implementation == b.implementation and a.build == b.build:
            return ""
        what = "implementations" if "cross-implementation" in self.flags else "releases or builds"
        return f"different {what}: {_ran(a)} against {_ran(b)}"

    @property
    def statistic_text(self) -> str:
        """What the number is: "ratio of medians of 6 rounds, 95 % interval over rounds, paired by round"."""
        if "no-interval" in self.flags:
            return f"ratio of {self.statistic}s; no interval: {FLAGS['no-interval']}"
        return (f"ratio of {self.statistic}s of {self.rounds} rounds, {fmt_percent(CONFIDENCE, 0)} interval "
                "over rounds, paired by round")

    @property
    def caveats(self) -> tuple[str, ...]:
        """What a reader of the number alone must know: what differs between the sides, unequal batches."""
        a, b = self.numerator, self.denominator
        out = [f"{a.label} over {b.label}"]
        if self.differs:
            out.append(self.differs)
        if "unequal-batches" in self.flags:
            out.append(f"samples are means of {self.loops[0]} and {self.loops[1]} calls")
        return tuple(out)

    def quoted(self) -> Quoted:
        """The ratio as an export quotes it (:func:`pqlab.publish.export.save_numbers`): value, interval,
        statistic and caveats, so the macro, the .txt and the JSON say what this sentence says."""
        return Quoted(self.value, self.low, self.high, "×", self.statistic_text, self.caveats)

    def lines(self) -> list[str]:
        a, b = self.numerator, self.denominator
        out = [f"{a.label} / {b.label}: {self.text} ({self.statistic_text.removeprefix('ratio of ')}; "
               f"run {self.run_id})"]
        if "unequal-batches" in self.flags:
            out.append(f"Each side's samples are means of {self.loops[0]} and {self.loops[1]} calls: for an "
                       "operation whose time varies from call to call, a median of larger batches sits "
                       "nearer the mean.")
        if self.differs:
            out.append(f"⚠ {self.differs}." + ("" if a.named and b.named else
                                                " Name both backends (e.g. " + ", ".join(_alternatives(self))
                                                + ") to say which comparison you mean."))
        else:
            out.append(f"Both sides ran in {_ran(a)}.")
        return out

    def __repr__(self) -> str:  # the sentence, in a terminal and in IPython's text display (not the fields)
        return "\n".join(self.lines())

    def _repr_html_(self) -> str:
        return "<br>".join(html(line) for line in self.lines())

    def _repr_markdown_(self) -> str:
        return "  \n".join(markdown(line) for line in self.lines())


def _kinds(run, a: Side, b: Side) -> tuple[str, str]:
    """Each side's kind of algorithm (sig, kem, cipher ...): the run's table's, else what its operation says
    (encaps: kem; sign: sig; encrypt: a cipher or public-key encryption, keygen: any)."""
    m = run.verified()

    def kind(s: Side) -> str:
        rows = m.loc[(m["algorithm"] == s.algorithm) & (m["backend"] == s.backend)]
        given = rows["kind"].iloc[0] if "kind" in rows.columns and len(rows) else None
        if isinstance(given, str) and given:
            return given
        kinds = [k for k, ops in KIND_OPERATIONS.items() if s.operation in ops]
        return "cipher or pke" if set(kinds) == {"pke", "cipher"} else kinds[0] if len(kinds) == 1 else ""

    return kind(a), kind(b)


def _ran(side: Side) -> str:
    options = builds.options_of(side.build)
    return side.implementation + (f", build {side.build}" if options and options not in side.implementation
                                  else "")


def _alternatives(r: Ratio) -> list[str]:
    return [f"'{s.algorithm}@{s.backend}'" for s in (r.numerator, r.denominator)]


def _side(run, spec: str, operation: str, build: str | None, message_bytes) -> tuple[Side, object, int]:
    """The verified measurement row `spec` ("NAME", "NAME@backend" or "NAME@liboqs-0.12.0": a liboqs build,
    which must be the one the run loaded) names in `run`, with its samples and loops."""
    spec, asked = builds.split(str(spec))
    loaded = (run.meta.get("liboqs") or {}).get("build", "")
    if asked and asked not in (loaded, loaded.removesuffix(f"+{builds.GIVEN}")):
        raise BadInput(f"run {run.run_id} loaded {loaded or 'no liboqs build pqlab knows'}, not {asked} (one "
                       "run loads one liboqs): compare runs of two builds with "
                       "pqlab.store.results.compare_runs")
    name, _, backend = spec.partition("@")
    m = run.verified()
    if name not in set(m["algorithm"]):
        raise UnknownName("algorithm in this run", name, sorted(set(m["algorithm"])),
                          f"run {run.run_id} measured: {', '.join(sorted(set(m['algorithm'])))}")
    rows = m[m["algorithm"] == name]
    if backend:
        if backend not in set(rows["backend"]):
            raise UnknownName(f"backend of {name} in this run", backend, sorted(set(rows["backend"])),
                              f"{name} ran here on: {', '.join(sorted(set(rows['backend'])))}")
        rows = rows[rows["backend"] == backend]
    elif rows["backend"].nunique() > 1:
        raise BadInput(f"{name} ran on several backends in run {run.run_id}: name one, e.g. "
                       + " or ".join(f"'{name}@{b}'" for b in sorted(set(rows["backend"]))))
    if operation not in set(rows["operation"]):
        raise UnknownName(f"operation of {spec}", operation, sorted(set(rows["operation"])),
                          f"{spec} has: {', '.join(sorted(set(rows['operation'])))}")
    rows = rows[rows["operation"] == operation]
    if build is not None:
        rows = rows[builds.selected(rows["build"], build)]
    if rows["build"].fillna("").nunique() > 1:
        raise BadInput(f"{spec} {operation} ran in several builds here: choose one with build= "
                       f"({', '.join(sorted(set(rows['build'].fillna(''))))})")
    sizes = sorted(set(rows["message_bytes"].dropna().astype(int)))
    if message_bytes is not None:
        rows = rows[rows["message_bytes"].eq(message_bytes).fillna(False).astype(bool)]
    elif len(sizes) > 1:
        raise BadInput(f"{spec} {operation} was measured at several message sizes: choose one with "
                       f"message_bytes= ({', '.join(map(str, sizes))})")
    if rows.empty:
        raise BadInput(f"run {run.run_id} has no verified {spec} {operation} row"
                       + (f" for {message_bytes} bytes (sizes: {', '.join(map(str, sizes))})" if sizes
                          else ""))
    row = rows.iloc[0]
    side = Side(name, str(row["backend"]), str(row["build"]) if isinstance(row["build"], str) else "",
                operation, str(row.get("implementation") or row["backend"]),
                str(row.get("library_version") or ""), bool(backend))
    # keygen, encaps ...: no message
    mb = None if pd.isna(row["message_bytes"]) else int(row["message_bytes"])
    values = run.sample_values(name, operation, backend=side.backend, build=side.build, message_bytes=mb)
    return side, values, row["loops"]


def run_ratio(run, numerator: str, denominator: str, operation: str, *,
              denominator_operation: str | None = None,
              build: str | None = None, message_bytes=None, statistic: str = "median") -> Ratio:
    """:meth:`pqlab.store.results.Run.ratio`: `numerator` over `denominator` ("NAME" or "NAME@backend") for
    `operation` (and `denominator_operation` for the denominator, e.g. sign over verify of one algorithm);
    `statistic` of each round, "median" (the table's) or, asked for, "mean"."""
    statistic = stat_choice(statistic)
    a, xa, loops_a = _side(run, numerator, operation, build, message_bytes)
    b, xb, loops_b = _side(run, denominator, denominator_operation or operation, build, message_bytes)
    kinds = _kinds(run, a, b)
    if a.operation != b.operation and all(kinds) and kinds[0] != kinds[1]:
        raise BadInput(f"{a.label} over {b.label} divides a {kinds[0]} operation by a {kinds[1]} one, which "
                       f"do different work: compare {a.operation} with {a.operation} "
                       f"(operation='{a.operation}' without denominator_operation), or two operations of one "
                       "kind")
    value, low, high = ratio_ci(xa, xb, statistic)
    shared = (len(set(xa.index).intersection(xb.index)) if has_rounds(xa) and has_rounds(xb) else 0)
    flags = []
    if a.backend != b.backend:
        flags.append("cross-implementation")
    elif a.implementation != b.implementation or a.build != b.build:
        flags.append("cross-release")
    if not (math.isfinite(low) and math.isfinite(high)) or shared < MIN_ROUNDS:
        flags.append("no-interval")
    if int(loops_a) != int(loops_b):
        flags.append("unequal-batches")
    if a.operation != b.operation:
        flags.append("cross-operation")
    r = Ratio(a, b, value, low, high, statistic, shared, run.run_id, tuple(flags),
              (int(loops_a), int(loops_b)))
    if r.differs and not (a.named and b.named):
        warn(f"{a.label} / {b.label} compares {r.differs}; name both backends "
             f"({', '.join(_alternatives(r))}) to choose the comparison")
    return r
