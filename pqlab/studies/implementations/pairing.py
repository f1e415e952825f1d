"""What a comparison of notebook 08 puts side by side, read from the runs: the build each implementation ran
(:func:`build_of`: the package a program of ``native/impls`` built, pqlab's liboqs build, the library a wheel
bundles as its SBOM says), the work a timed call does that the others' do not, or skips
(:func:`different_work`: the clauses of a program's options that say so, the same text its options column
shows), both sides of a pairing (:func:`pair_label`), the implementations tied with the fastest (:func:`ties`:
intervals overlapping), a time with its interval (:func:`row_time`, through
:func:`pqlab.core.quantities.fmt_time_ci`) and a difference of two times with its interval
(:func:`difference_ci`).
"""
from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Sequence
from importlib import metadata

import pandas as pd

from pqlab.core.quantities import fmt_time_ci, is_missing, resolved
from pqlab.core.vocabulary import find
from pqlab.measure.stats import CONFIDENCE, combined_ci

#: The statistic of every ratio notebook 08 prints and exports (:func:`pqlab.measure.stats.ratio_ci`), named
#: where the ratio is quoted.
RATIO_STATISTIC = (f"each side's median over its round medians, one over the other, with a {CONFIDENCE:.0%} "
                   "interval from the per-round ratios (paired by round where both ran in one run, else each "
                   "side's rounds combined)")
#: What the whiskers of the dot plot and every bracketed interval of a time are.
TIME_INTERVAL = f"{CONFIDENCE:.0%} interval over rounds"

#: The words a program's options use for each operation (:func:`different_work`).
OPERATION_WORDS = {"keygen": "key generation", "encaps": "encapsulation", "decaps": "decapsulation",
                   "sign": "signing", "verify": "verification"}
#: A clause that says the timed call does other work than the same call elsewhere: it skips work, or keeps
#: work done outside the timed region.
_DIFFERENT = re.compile(r"\btimed\b.*\b(?:skips?|does not|do not|leaves? out)\b|\boutside the timed\b",
                        re.IGNORECASE)
#: An algorithm family a clause restricts itself to ("ML-KEM", "ML-DSA").
_FAMILY = re.compile(r"\b[A-Z]{2,}-[A-Z]{2,}\b")


def row_time(row) -> str:
    """:func:`fmt_time_ci` of a row of :func:`pqlab.studies.implementations.comparison`."""
    return fmt_time_ci(row["median_ns"], row.get("ci_low_ns"), row.get("ci_high_ns"))


def difference_ci(a, b) -> tuple[float, float, float]:
    """``a - b`` of two measurements' samples (each side's median over its round medians), with its interval
    over rounds (:func:`pqlab.measure.stats.combined_ci`, on the logarithm of the difference: paired by round
    where both ran in one run); no interval where the difference is not above zero."""
    return combined_ci([a, b], lambda s: s[0] - s[1])


def clauses(text: str) -> list[str]:
    """`text` split at its "; " outside parentheses."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += (ch == "(") - (ch == ")")
        if ch == ";" and depth == 0:
            out.append(text[start:i].strip())
            start = i + 1
    out.append(text[start:].strip())
    return [c for c in out if c]


def options_of(runs: Sequence) -> dict[str, str]:
    """{implementation: its options} of every program implementation in the runs' metadata."""
    return {i["implementation"]: i.get("options", "") for run in runs
            for about in run.meta.get("implementations_programs", {}).values()
            for i in about["implementations"]}


def different_work(options: str, algorithm: str, operation: str) -> str:
    """The clauses of an implementation's `options` that say its timed `operation` of `algorithm` does other
    work than the same call elsewhere (skips a check, keeps work done once outside the timed region), "; "
    joined; "" where none does.  A clause naming algorithm families (ML-KEM, ML-DSA) holds for those only."""
    word = OPERATION_WORDS.get(operation)
    if not word or not options:
        return ""
    found = []
    for clause in clauses(str(options)):
        if not _DIFFERENT.search(clause) or not re.search(rf"\b{word}\b", clause, re.IGNORECASE):
            continue
        families = _FAMILY.findall(clause)
        if families and not any(str(algorithm).startswith(f) for f in families):
            continue
        found.append(clause)
    return "; ".join(found)


@functools.cache
def bundled(package: str, version: str) -> str:
    """What the installed wheel of `package` bundles, as its SBOM (``*.dist-info/sboms/*.json``, CycloneDX)
    says: each component that records its build flags, with its version and flags; "" where the installed
    version is not `version` (the run's), or no SBOM names one."""
    try:
        dist = metadata.distribution(package)
    except metadata.PackageNotFoundError:
        return ""
    if dist.version != str(version):
        return ""
    found = []
    for f in dist.files or ():
        if "sboms" not in f.parts or f.suffix != ".json":
            continue
        try:
            document = json.loads(f.read_text())
        except (OSError, ValueError):
            continue
        for c in document.get("components", []):
            flags = [p["value"] for p in c.get("properties", []) if p.get("name") == "build:flags"]
            if flags:
                found.append(f"{c.get('name')} {c.get('version')} (built with {flags[0]})")
    return "; ".join(found)


def build_of(run, backend: str, release: str, build: str = "") -> str:
    """The build `backend` ran in `run`, from the run: a program's package and the program that built it
    (native/impls), pqlab's own build of a library (the measurement's build column), or what the installed
    wheel of its Python package bundles (:func:`bundled`); else the package and release the run recorded."""
    for name, about in run.meta.get("implementations_programs", {}).items():
        for i in about["implementations"]:
            if i["implementation"] == backend:
                return f"{i.get('package') or backend}, built by pqlab's {name} program"
    if isinstance(build, str) and build:
        return f"pqlab's build {build}"
    record = find(backend)
    package = record.packages[0] if record and record.packages else backend
    version = (run.meta.get("packages") or {}).get(package) or release
    inside = bundled(package, str(version))
    return (f"{inside}, bundled in the {package} {version} wheel (its SBOM)" if inside
            else f"the {package} {version} package")


def pair_label(label: str, other: str) -> str:
    """Both sides of a pairing of two rows' release labels: the one label where both are the same release,
    else "A over B" with the implementation's name said once ("rustcrypto ml-kem 0.3.4 over x25519-dalek
    3.0.0")."""
    label, other = str(label), str(other)
    if label == other:
        return label
    head = label.split(" ", 1)[0]
    return f"{label} over {other.removeprefix(head + ' ') if other.startswith(head + ' ') else other}"


def sure(group: pd.DataFrame) -> pd.Series:
    """Per row of `group`, whether its interval resolves its time (:func:`pqlab.core.quantities.resolved`:
    within a factor of two; a row without an interval counts as resolved)."""
    return pd.Series([resolved(lo, hi) for lo, hi in zip(group["ci_low_ns"], group["ci_high_ns"])],
                     index=group.index, dtype=bool)


def ties(group: pd.DataFrame, best) -> pd.DataFrame:
    """The rows of `group` other than `best` whose interval overlaps `best`'s: a claim of "fastest" cannot
    tell them apart (none where `best` has no interval).  A row whose interval does not resolve its time
    (:func:`sure`) is no tie: it cannot be ranked at all, and the claim says so."""
    others = group[group.index != best.name]
    if others.empty or is_missing(best.get("ci_low_ns")) or is_missing(best.get("ci_high_ns")):
        return others.iloc[:0]
    overlap = (others["ci_low_ns"].le(best["ci_high_ns"]) & others["ci_high_ns"].ge(best["ci_low_ns"])
               & sure(others))
    return others[overlap].sort_values("median_ns")


def finite(*values) -> bool:
    """Whether every value is a finite number."""
    return all(not is_missing(v) and math.isfinite(float(v)) for v in values)
