"""liboqs's algorithm names in each release and the algorithm each name means.

liboqs renames and re-uses names between releases: 0.15.0 drops ``Dilithium2``, 0.16.0 drops every
``SPHINCS+-*-simple`` and renames ``HQC-128`` to ``HQC-1`` for another HQC, and 0.16.0's ``FrodoKEM-640-AES``
is not the one of 0.15.0 (that one is ``eFrodoKEM-640-AES`` now).  Two tables in ``data/reference/`` hold what
is known, each with its provenance in ``sources.yaml``:

- ``liboqs_names``: every KEM and signature name of each listed release, transcribed from the release's
  ``src/kem/kem.h`` and ``src/sig/sig.h``;
- ``liboqs_meanings``: for each name and range of releases, the algorithm it means (a stable id such as
  ``HQC-2023-128`` or ``SLH-DSA-SHA2-128f (FIPS 205)``), its standard and version, and its *lineage*: the
  algorithms that share a parameter set across versions or standards, which is what :func:`name_for` offers
  when an algorithm is missing.

A caller asks for an algorithm by what it means and gets the release's name for it, or a one-line refusal
naming what that release has instead.  Nothing here loads liboqs; the tables are data, so any release can be
simulated.

    >>> meaning("HQC-128", "0.13.0")
    'HQC-2023-128'
    >>> name_for(meaning("FrodoKEM-640-AES", "0.15.0"), "0.16.0")
    'eFrodoKEM-640-AES'
    >>> changed_between("FrodoKEM-640-AES", "0.15.0", "0.16.0")
    True
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

from pqlab.core.builds import version_key
from pqlab.core.errors import BadInput, UnknownName, choice, close_matches
from pqlab.core.references import load_reference

#: the reference tables (``data/reference/<stem>.csv``)
NAMES_TABLE, MEANINGS_TABLE = "liboqs_names", "liboqs_meanings"
#: the kinds of algorithm a name can be: key encapsulation or signature (stateful signatures are not listed)
KINDS = ("kem", "sig")

__all__ = ["KINDS", "RELEASES", "Meaning", "changed_between", "history", "meaning", "missing_in", "name_for",
           "names", "resolve", "stand_in", "meaning_changed", "in_place_of", "last_meaning"]


@dataclass(frozen=True)
class Meaning:
    """One row of ``liboqs_meanings``: what `name` means from `first_release` to `last_release` (listed
    releases, both included)."""

    name: str
    kind: str
    first_release: str
    last_release: str
    #: the algorithm's stable id: equal ids mean the same algorithm (same specification, same known-answer
    #: test)
    algorithm: str
    #: algorithms related to this one across versions or standards (same family and parameter set or level)
    lineage: str
    standard: str
    standard_version: str
    #: ``yes`` (same algorithm as in the previous listed release), ``no`` (another one) or ``new``
    same_as_previous_release: str
    note: str
    source: str

    def covers(self, release: str) -> bool:
        """Whether this row holds in listed release `release`."""
        order = _order()
        return order[self.first_release] <= order[release] <= order[self.last_release]

    @property
    def releases(self) -> str:
        """The row's range as text: ``0.9.0`` or ``0.9.0 to 0.15.0``."""
        return _span(self.first_release, self.last_release)


def _span(first: str, last: str) -> str:
    return first if first == last else f"{first} to {last}"


@cache
def _names() -> dict[str, dict[str, tuple[str, ...]]]:
    """release -> kind -> names, in the header's order."""
    df = load_reference(NAMES_TABLE).astype(str)
    table: dict[str, dict[str, list[str]]] = {}
    for release, kind, name in zip(df["release"], df["kind"], df["name"], strict=True):
        table.setdefault(release, {k: [] for k in KINDS})[kind].append(name)
    ordered = sorted(table, key=version_key)
    return {r: {k: tuple(table[r][k]) for k in KINDS} for r in ordered}


@cache
def _order() -> dict[str, int]:
    return {release: i for i, release in enumerate(_names())}


@cache
def _meanings() -> tuple[Meaning, ...]:
    df = load_reference(MEANINGS_TABLE).fillna("").astype(str)
    fields = list(Meaning.__dataclass_fields__)
    return tuple(Meaning(**{f: row[f] for f in fields}) for row in df[fields].to_dict("records"))


@cache
def _by_name() -> dict[str, tuple[Meaning, ...]]:
    rows: dict[str, list[Meaning]] = {}
    for m in _meanings():
        rows.setdefault(m.name, []).append(m)
    return {name: tuple(sorted(ms, key=lambda m: _order()[m.first_release])) for name, ms in rows.items()}


def _release(release: str) -> str:
    return choice(release, "liboqs release", list(_names()))


#: every listed liboqs release, oldest first (from ``liboqs_names``)
RELEASES: tuple[str, ...] = tuple(_names())


def names(release: str, kind: str | None = None) -> list[str]:
    """Every algorithm name liboqs `release` lists (KEMs, then signatures; or one `kind` of :data:`KINDS`), in
    its headers' order."""
    by_kind = _names()[_release(release)]
    kinds = KINDS if kind is None else (choice(kind, "algorithm kind", KINDS),)
    return [name for k in kinds for name in by_kind[k]]


def history(name: str) -> list[Meaning]:
    """Every row of ``liboqs_meanings`` for `name`, oldest first (empty for a name no listed release has)."""
    return list(_by_name().get(name, ()))


def _row(name: str, release: str) -> Meaning:
    release = _release(release)
    for m in _by_name().get(name, ()):
        if m.covers(release):
            return m
    elsewhere = "; ".join(f"In liboqs {m.releases} it means {m.algorithm}" for m in history(name))
    hint = (f"{elsewhere}; name_for(algorithm, release) gives this release's name for it" if elsewhere else
            f"liboqs {release} lists {len(names(release))} names: pqlab.liboqs.names.names(release)")
    raise UnknownName(f"liboqs {release} algorithm name", name, names(release), hint)


def meaning(name: str, release: str) -> str:
    """The algorithm (its stable id) that `name` means in liboqs `release`, e.g. ``HQC-128`` on 0.13.0 ->
    ``HQC-2023-128``.  A name the release does not list raises :class:`~pqlab.core.errors.UnknownName` with
    the release's close matches and the releases where the name exists."""
    return _row(name, release).algorithm


def _related(algorithm: str, release: str) -> list[Meaning]:
    """Rows of `release` whose algorithm shares `algorithm`'s lineage (another algorithm than `algorithm`)."""
    lineages = {m.lineage for m in _meanings() if m.algorithm == algorithm}
    return [m for m in _meanings()
            if m.covers(release) and m.lineage in lineages and m.algorithm != algorithm]


def name_for(algorithm: str, release: str) -> str:
    """The name liboqs `release` gives `algorithm` (an id of ``liboqs_meanings``, as :func:`meaning` returns
    it): the same name, or another one where the release renamed it (the unsalted FrodoKEM-640-AES is
    ``eFrodoKEM-640-AES`` in 0.16.0).  Where the release lacks the algorithm,
    :class:`~pqlab.core.errors.BadInput` says so in one line and lists what it has instead: the related
    algorithms (SLH-DSA for round-3 SPHINCS+, the 2025 HQC for the 2023 one), each said to be another
    algorithm, else the closest algorithm ids."""
    release = _release(release)
    known = sorted({m.algorithm for m in _meanings()})
    if algorithm not in known:
        raise UnknownName("liboqs algorithm", algorithm, known,
                          "algorithm ids are those of data/reference/liboqs_meanings.csv (meaning() returns "
                          "them)")
    here = _named_in(algorithm, release)
    if here:
        return here[0].name
    related = _related(algorithm, release)
    if related:
        there = ", ".join(f"{m.algorithm} as {m.name} (related, not the same algorithm: {m.standard}, "
                          f"{m.standard_version})" for m in related)
    else:
        algorithms = {m.algorithm: m.name for m in _meanings() if m.covers(release)}
        close = close_matches(algorithm, algorithms)
        there = ", ".join(f"{a} as {algorithms[a]}" for a in close) or "nothing close"
    rows = [m for m in _meanings() if m.algorithm == algorithm]
    first = min((m.first_release for m in rows), key=version_key)
    last = max((m.last_release for m in rows), key=version_key)
    raise BadInput(f"{algorithm} is not in liboqs {release}; there: {there}. It is in liboqs "
                   f"{_span(first, last)} (named {', '.join(sorted({m.name for m in rows}))})")


def changed_between(name: str, a: str, b: str) -> bool:
    """Whether `name` means different algorithms in liboqs releases `a` and `b` (``FrodoKEM-640-AES`` between
    0.15.0 and 0.16.0: True; ``ML-KEM-768`` between 0.12.0 and 0.16.0, whose implementation changed: False).
    A name missing from either release raises :class:`~pqlab.core.errors.UnknownName` (it cannot be
    compared)."""
    return meaning(name, a) != meaning(name, b)


def resolve(names_asked: Sequence[str], release: str, baseline: str) -> dict[str, str]:
    """Each of `names_asked` (liboqs names as of release `baseline`) resolved on `release` through what it
    means: name -> the release's name for the same algorithm.  Raises the first refusal
    (:class:`BadInput`)."""
    return {name: name_for(meaning(name, baseline), release) for name in names_asked}


def last_meaning(name: str) -> Meaning:
    """The row of `name` in the newest release that lists it (:func:`history` must not be empty)."""
    return max(history(name), key=lambda m: version_key(m.last_release))


def _named_in(algorithm: str, release: str) -> list[Meaning]:
    """The rows that give `algorithm` a name in listed release `release` (at most one)."""
    return [m for m in _meanings() if m.algorithm == algorithm and m.covers(release)]


def missing_in(name: str, release: str) -> str:
    """Why liboqs `release` has no algorithm called `name` although another listed release does, in one line:
    the name it has there for the same algorithm, or what it has instead (:func:`name_for`); "" where
    `release` lists `name`, where no listed release does, or where `release` itself is not listed."""
    if release not in RELEASES or name in names(release) or not history(name):
        return ""
    latest = last_meaning(name)
    try:
        renamed = name_for(latest.algorithm, release)
    except BadInput as refusal:
        return str(refusal)
    return (f"liboqs {release} names {latest.algorithm} '{renamed}' (it was '{name}' in liboqs "
            f"{latest.releases})")


def stand_in(name: str, release: str) -> tuple[str, str]:
    """What liboqs `release` measures in place of `name`, a name it no longer lists although an earlier listed
    release does: (its name for the same algorithm, or for the one related algorithm of the same lineage,
    and the sentence that says which); ("", "") where there is no such name (or several related ones).
    ``SPHINCS+-SHA2-128f-simple`` on 0.16.0 -> ``SLH_DSA_PURE_SHA2_128F``, FIPS 205's SLH-DSA, another
    algorithm; ``HQC-128`` -> ``HQC-1``, the 2025 HQC."""
    if release not in RELEASES or name in names(release) or not history(name):
        return "", ""
    first = min((m.first_release for m in history(name)), key=version_key)
    if version_key(release) < version_key(first):  # a release from before the name: nothing stands in
        return "", ""
    latest = last_meaning(name)
    same = _named_in(latest.algorithm, release)
    if same:
        return same[0].name, (f"liboqs {release} names {latest.algorithm} '{same[0].name}' (it was '{name}' "
                              f"in liboqs {latest.releases}): the same algorithm")
    related = _related(latest.algorithm, release)
    if len(related) != 1:
        return "", ""
    m = related[0]
    return m.name, (f"liboqs {release} has no {name} ({latest.algorithm}, liboqs {latest.releases}): "
                    f"{m.name} ({m.algorithm}; {m.standard}, {m.standard_version}) is measured in its place, "
                    "a related algorithm, not the same one")


def in_place_of(name: str, release: str, baseline: str) -> str:
    """The sentence that says `name`, of liboqs `release`, stands where liboqs `baseline` (which does not list
    it) has another name: the same algorithm renamed, or the one related algorithm of its lineage
    (``SLH_DSA_PURE_SHA2_128F`` of 0.16.0 where 0.13.0 has ``SPHINCS+-SHA2-128f-simple``); "" otherwise."""
    if release == baseline or not {release, baseline} <= set(RELEASES) or name not in names(release):
        return ""
    if name in names(baseline):
        return ""
    algorithm = meaning(name, release)
    same = _named_in(algorithm, baseline)
    if same:
        return f"{name} is what liboqs {baseline} calls {same[0].name} ({algorithm}): the same algorithm"
    related = _related(algorithm, baseline)
    if len(related) != 1:
        return ""
    m = related[0]
    return (f"{name} ({algorithm}; {_standard(name, release)}) of liboqs {release} stands where liboqs "
            f"{baseline} has {m.name} ({m.algorithm}): a related algorithm, not the same one")


def _standard(name: str, release: str) -> str:
    row = _row(name, release)
    return f"{row.standard}, {row.standard_version}"


def meaning_changed(name: str, release: str, baseline: str) -> str:
    """The sentence that says `name` means another algorithm in liboqs `release` than in `baseline`
    (``FrodoKEM-640-AES`` is the salted FrodoKEM in 0.16.0), "" where it means the same or either release
    is not listed or lacks it."""
    if release not in RELEASES or baseline not in RELEASES or release == baseline:
        return ""
    if name not in names(release) or name not in names(baseline):
        return ""
    if not changed_between(name, baseline, release):
        return ""
    return (f"{name} in liboqs {release} is {meaning(name, release)}, not {meaning(name, baseline)} as in "
            f"liboqs {baseline}")
