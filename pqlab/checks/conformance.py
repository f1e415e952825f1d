"""Conformance: does an implementation pqlab times pass its known-answer and invalid-input checks?

A number for an implementation that accepts forged signatures is not comparable with one for an implementation
that does not (liboqs 0.12.0 and 0.13.0's default ML-DSA verifier accepts Wycheproof's "z out of bound"
signatures; their portable build refuses them).  So every implementation pqlab times is checked before it is
timed, and every row that shows a time says what its implementation passed.

**A record per (implementation, build, algorithm)** (:func:`check`): the vectors that ran
(:mod:`pqlab.checks.vectors`: source and files), how many passed, failed and were skipped (with the reasons),
and the failures by kind (:data:`pqlab.checks.vectors.FAILURE_KINDS`: "accepts invalid signatures", "refuses a
valid signature", ...).  Its ``status`` is :data:`CONFORMS` (every vector that ran passed),
:data:`NONCONFORMING` (one failed) or :data:`NOT_CHECKED` (no vector could run: no source for the algorithm,
or the vectors could not be fetched, with the reason).  A record is made once and cached per user
(``~/.cache/pqlab/conformance/``) under the build's identity: the implementation and its release, the liboqs
build (release, options, its library's checksum) where that is what ran, the vectors' source and the checking
code's own hash, so a new build, a new release or a new check is checked again and an unchanged one costs
nothing.

**Where it is used.**  :func:`pqlab.benchmark.bench` checks every algorithm before anything is measured,
refuses a non-conforming one unless asked (``allow_nonconforming=True``, CLI ``--allow-nonconforming``; the
run records that it was asked), and stores the records in the run's metadata (``meta["conformance"]``, keyed
``NAME@backend``); :func:`pqlab.publish.export.save_table` turns them into a ``conformance`` column and a
footnote on every row that shows a time.  ``python -m pqlab conformance [NAME@backend ...]`` prints the
records as a table (``--json``).

    check(pqlab.backends.algorithms.get("ML-DSA-44", "liboqs"))   -> the record (a dict)
    table(["ML-DSA-44@liboqs", "Ed25519@cryptography"])  -> a DataFrame, one row per record
"""
from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

from pqlab.backends.algorithms import get, resolve
from pqlab.checks import vectors
from pqlab.core import builds, flags, inputs
from pqlab.core.errors import BadInput, LiboqsNotFound
from pqlab.core.files import atomic_write_text
from pqlab.core.formatting import markdown as md
from pqlab.core.integrity import sha256_file
from pqlab.liboqs.loader import build_environment, given_builds, liboqs_info
from pqlab.measure.cycles import cache_dir
from pqlab.runners.rounds import registered

#: A record's status.
CONFORMS, NONCONFORMING, NOT_CHECKED = "conforms", "non-conforming", "not checked"
#: The flags a table row carries for its conformance (:mod:`pqlab.core.flags`).
FLAG_CODES = ("non-conforming", "conformance-not-checked")
#: Bump when a record's fields change: older cache entries are then made again.
RECORD_VERSION = 1
_SOURCES = [Path(__file__).with_name("vectors.py"), Path(__file__), Path(__file__).with_name("crosscheck.py")]


def cache_folder() -> Path:
    """Where records are cached: pqlab's per-user cache (:func:`pqlab.measure.cycles.cache_dir`),
    ``conformance/``."""

    return cache_dir() / "conformance"


def _code_hash() -> str:
    h = hashlib.sha256()
    for path in _SOURCES:
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def identity(algo) -> dict:
    """What a record belongs to: the algorithm's implementation, release and build (for liboqs, the loaded
    build's id, options, compiler settings and the sha256 of its library file), the vectors' source and the
    checks' code."""

    out = {"algorithm": algo.name, "backend": algo.backend, "implementation": algo.implementation,
           "library_version": algo.library_version, "build": algo.extra.get("build", ""),
           "adapter": f"{type(algo).__module__}.{type(algo).__qualname__}",
           "record_version": RECORD_VERSION, "code": _code_hash()}
    try:
        out["vectors"] = vectors.provenance()
    except (OSError, KeyError, StopIteration) as exc:
        out["vectors"] = {"unavailable": str(exc)}
    if algo.backend in ("liboqs", "liboqs-python"):

        info = liboqs_info()
        out["liboqs"] = {"build": info["build"], "options": info["options"],
                         "build_config": info["build_config"],
                         "library_sha256": sha256_file(info["liboqs_path"]) if info["liboqs_path"] else ""}
    return out


def _key(ident: dict) -> str:
    return hashlib.sha256(json.dumps(ident, sort_keys=True, default=str).encode()).hexdigest()[:24]


def record_from_rows(rows: pd.DataFrame, ident: dict, seconds: float, why_not: str = "") -> dict:
    """A record from the vector rows one implementation and algorithm ran
    (:func:`pqlab.checks.vectors.run`)."""

    ran = rows[rows["passed"].notna()] if not rows.empty else rows
    failed = ran[ran["passed"] == False] if not ran.empty else ran  # noqa: E712 - object column
    skipped = rows[rows["passed"].isna()] if not rows.empty else rows
    kinds = (failed["kind"].fillna("error").value_counts().to_dict() if "kind" in failed and not failed.empty
             else {"error": len(failed)} if len(failed) else {})
    status = NOT_CHECKED if ran.empty else NONCONFORMING if len(failed) else CONFORMS
    return {**ident, "status": status,
            "why_not": why_not or ("no vector of its API ran" if ran.empty else ""), "ran": int(len(ran)),
            "passed": int(len(ran) - len(failed)), "failed": int(len(failed)), "skipped": int(len(skipped)),
            "skip_reasons": skipped["detail"].fillna("").value_counts().to_dict() if len(skipped) else {},
            "failures": {getattr(vectors, "FAILURE_KINDS", {}).get(k, k): int(n) for k, n in kinds.items()},
            "files": sorted({f for f in rows.get("file", pd.Series(dtype=str)).dropna() if f}),
            "sources": sorted({s for s in rows.get("source", pd.Series(dtype=str)).dropna() if s}),
            "seconds": round(seconds, 3), "checked_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def _participant(algo):
    """`algo` as the vectors see it: pqlab's Python participant of its backend, answering with this very
    adapter (a test's planted double is checked as itself)."""
    from pqlab.checks.crosscheck import PythonParticipant

    class One(PythonParticipant):
        def _algo(self, alg):
            return algo if alg == algo.name else super()._algo(alg)

    return One(algo.backend)


def check(algo, *, refresh: bool = False) -> dict:
    """The conformance record of `algo` (an adapter of :mod:`pqlab.backends.algorithms`, in the liboqs build
    this process loaded), from the cache where this identity was checked before, else checked now (its vectors
    through :class:`pqlab.checks.crosscheck.PythonParticipant`) and cached; an adapter that is not the
    registry's own (a test's double) is never cached.  ``record["cached"]`` says which."""

    ident = identity(algo)
    path = cache_folder() / f"{_key(ident)}.json"
    cacheable = registered(algo)
    if not refresh and cacheable:
        try:
            cached = json.loads(path.read_text())
            if {k: cached.get(k) for k in ident} == json.loads(json.dumps(ident, default=str)):
                return {**cached, "cached": True}
        except (OSError, ValueError, RecursionError):
            pass  # a missing or unreadable entry is a miss
    started = time.perf_counter()
    why_not, fetched = "", True
    covered = algo.name in vectors.FILES
    try:
        rows = vectors.run({algo.backend: _participant(algo)}, [algo.name]) if covered \
            else pd.DataFrame(columns=["passed"])
    except vectors.VectorsUnavailable as exc:
        rows, why_not, fetched = pd.DataFrame(columns=["passed"]), str(exc), False
    ran = not rows.empty and rows["passed"].notna().any()
    if not ran and not why_not:
        why_not = ((f"none of {algo.name}'s Wycheproof vectors fit its API" if covered else
                    f"Wycheproof has no vectors for {algo.name} (pqlab.checks.vectors)")
                   + "; the timing's own checks refuse tampered inputs")
    record = record_from_rows(rows, ident, time.perf_counter() - started, why_not)
    if cacheable and fetched:  # vectors that could not be fetched are tried again next time
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, json.dumps(record, indent=1, default=str) + "\n")
    return {**record, "cached": False}


def verdict(record: dict | None) -> str:
    """A record in a few words, for a table cell: "passed 412 vectors", "accepts invalid signatures (37 of
    414)", "not checked: <why>"; "not checked" where there is no record."""
    if not record:
        return f"{NOT_CHECKED}: no record"
    if record["status"] == CONFORMS:
        return f"passed {record['ran']} vectors"
    if record["status"] == NONCONFORMING:
        return "; ".join(f"{kind} ({n} of {record['ran']})" for kind, n in record["failures"].items())
    return f"{NOT_CHECKED}: {record.get('why_not') or 'no vector ran'}"


def _row(algo_name: str, backend: str, r: dict) -> dict:
    return {"algorithm": algo_name, "backend": backend, "implementation": r["implementation"],
            "build": (r.get("build") or (r.get("liboqs") or {}).get("build", "")
                      or r.get("library_version", "")),
            "status": r["status"], "ran": r["ran"], "passed": r["passed"], "failed": r["failed"],
            "failures": "; ".join(f"{k} ×{n}" for k, n in r["failures"].items()), "skipped": r["skipped"],
            "skip_reasons": "; ".join(f"{why} ×{n}" for why, n in r["skip_reasons"].items()),
            "sources": "; ".join(r["sources"]), "seconds": r["seconds"], "cached": r.get("cached", False),
            "why_not": r["why_not"]}


def table(specs=(), *, refresh: bool = False, programs=()) -> pd.DataFrame:
    """One row per implementation and algorithm: implementation, build, status, vectors run, passed, failed by
    kind, skipped with reasons, seconds, cached.  `specs`: ``NAME@backend`` as for bench, a liboqs build too
    (``ML-DSA-44@liboqs-0.12.0``: checked in a worker process that loads it, as bench measures there);
    `programs`: notebook 08's programs (:mod:`pqlab.runners.impls`), each implementation of each named
    algorithm.  Every input is checked first."""

    specs = inputs.names(list(specs), "algorithm") if specs else []
    by_build: dict = {}
    for spec in specs:
        name, asked = builds.split(spec)
        build = builds.parse(asked, given_builds()) if asked else None
        if build is not None and build.id == liboqs_info()["build"]:
            build = None  # the one this process loaded
        by_build.setdefault(build, []).append(name)
    programs = list(programs)
    if programs:
        from pqlab.runners import impls

        for name in programs:  # an unknown one refused with close matches
            inputs.choice(name, "program", impls.IMPLS_PROGRAMS)
    rows = []
    for build, names in by_build.items():
        if build is None:
            for algo in inputs.unique(resolve(names)):
                rows.append(_row(algo.name, algo.backend, check(algo, refresh=refresh)))
        else:
            rows += _elsewhere(names, build, refresh)
    if programs:
        rows += _programs([n.partition("@")[0] for n in specs] or None, programs)
    return pd.DataFrame(rows)


def liboqs_records(algorithms, build="default") -> dict[str, dict]:
    """{algorithm: record} of liboqs `build`'s implementation of each of `algorithms` (liboqs names): what a
    program that links that very library (the native C runner) inherits.  Checked here where this process
    loaded that build, else in a worker that loads it."""

    build = builds.parse(build, given_builds())
    if build.id == liboqs_info()["build"]:
        return {a: {k: v for k, v in check(get(a, "liboqs")).items() if k != "cached"} for a in algorithms}
    return {r["algorithm"]: r for r in _in_worker([f"{a}@liboqs" for a in algorithms], "--records",
                                                  build=build)}


def _elsewhere(names: list[str], build, refresh: bool) -> list[dict]:
    """:func:`table` of `names` in a worker process that loads liboqs `build`."""
    return _in_worker(names, "--json", *(["--refresh"] if refresh else []), build=build)


def _in_worker(names: list[str], *options: str, build) -> list:
    """``python -m pqlab conformance NAMES OPTIONS`` in a worker process that loads liboqs `build`: its
    JSON."""


    proc = subprocess.run([sys.executable, "-m", "pqlab", "conformance", *names, *options],
                          env=build_environment(build), capture_output=True, text=True)
    if proc.returncode != 0:
        raise LiboqsNotFound(f"the conformance check in {build.id} failed: "
                             + (proc.stderr.strip().splitlines() or ["no output"])[-1])
    return json.loads(proc.stdout)


def _programs(algorithms, programs: list[str]) -> list[dict]:
    """:func:`table` rows of notebook 08's programs: every implementation of each of `algorithms` (None: every
    algorithm a program lists) through its serve session, records made by :func:`record_from_rows` (not
    cached: a program is rebuilt whenever its sources change, and its vectors take seconds)."""
    from pqlab.checks.crosscheck import has, participants_for
    from pqlab.runners import impls

    documents = impls.available(programs)
    listed = sorted({a["algorithm"] for d in documents.values() for a in d["algorithms"]})
    versions = {i["implementation"]: i["version"] for d in documents.values() for i in d["implementations"]}
    algorithms = [a for a in (algorithms or listed) if a in listed]
    found, sessions = participants_for(algorithms, programs, python=[])
    rows = []
    try:
        for name, participant in found.items():
            for alg in algorithms:
                if not has(participant, alg):
                    continue
                started = time.perf_counter()
                vrows = vectors.run({name: participant}, [alg])
                release = impls.release_of(versions.get(name, ""), alg)
                ident = {"algorithm": alg, "backend": name, "implementation": f"{name} {release}".strip(),
                         "library_version": release, "build": release,
                         "program": participant.session.program.name}
                rows.append(_row(alg, name, {**record_from_rows(vrows, ident, time.perf_counter() - started),
                                             "cached": False}))
    finally:
        for session in sessions:
            session.close()
    return rows


def for_run(algos, allow_nonconforming: bool = False) -> dict[str, dict]:
    """The records of `algos` (:func:`check`), keyed ``NAME@backend``, for a run's metadata; a non-conforming
    one refused in one line (:class:`pqlab.core.errors.BadInput`) unless `allow_nonconforming`."""

    records: dict[str, dict] = {}
    # two adapters of one name and backend (a test's double beside the real one): the worse counts
    for a in algos:
        r, key = check(a), f"{a.name}@{a.backend}"
        if key not in records or r["status"] == NONCONFORMING:
            records[key] = r
    bad = {k: r for k, r in records.items() if r["status"] == NONCONFORMING}
    if bad and not allow_nonconforming:
        k, r = next(iter(bad.items()))
        raise BadInput(f"{k} ({r['implementation']}) fails its known-answer checks: {verdict(r)}"
                       + (f", and {len(bad) - 1} more" if len(bad) > 1 else "")
                       + "; time it anyway with allow_nonconforming=True (CLI: --allow-nonconforming), and "
                       "the run records that you asked (`python -m pqlab conformance` shows the record)")
    return {k: {x: v for x, v in r.items() if x != "cached"} for k, r in records.items()}


def build_of(record: dict) -> str:
    """The build a record belongs to: the liboqs build's id where liboqs ran, else the release."""
    return ((record.get("liboqs") or {}).get("build") or record.get("build")
            or record.get("library_version", ""))


def records_of(runs) -> dict[tuple[str, str], dict]:
    """``(NAME@backend, build)`` -> conformance record, from the runs' metadata (runs of two liboqs builds
    keep one record each; the first run that has one for a key wins)."""
    out: dict[tuple[str, str], dict] = {}
    for run in runs if isinstance(runs, (list, tuple)) else [runs]:
        for key, record in ((getattr(run, "meta", None) or {}).get("conformance") or {}).items():
            out.setdefault((key, build_of(record)), record)
    return out


def record_for(records: dict, key: str, build: str) -> dict | None:
    """The record of `key` for a row of `build` ("" where the table names none): that build's, else the only
    one."""
    mine = {b: r for (k, b), r in records.items() if k == key}
    if build and build in mine:
        return mine[build]
    return next(iter(mine.values())) if len(mine) == 1 or mine and not build else None


def with_conformance(df: pd.DataFrame, runs, flags_column: str = "flags") -> tuple[pd.DataFrame, list[str]]:
    """`df` (rows with ``algorithm`` and ``backend``, and a ``build`` column where it holds several builds)
    with a ``conformance`` column (:func:`verdict` of each row's record in `runs`: the record of the row's
    build) and, in `flags_column`, the flags ``non-conforming`` / ``conformance-not-checked`` a paper table
    turns into footnote marks; and the notes naming each failure (for the caption).  `df` unchanged where it
    has no such rows or the runs carry no records."""

    records = records_of(runs)
    if df.empty or not records or not {"algorithm", "backend"} <= set(df.columns):
        return df, []
    keys = df["algorithm"].astype(str) + "@" + df["backend"].astype(str)
    row_builds = df["build"].fillna("").astype(str) if "build" in df.columns else pd.Series([""] * len(df))
    found = [record_for(records, k, b) for k, b in zip(keys, row_builds)]
    if not any(found):
        return df, []
    out = df.copy()
    out["conformance"] = [verdict(r) if r else "" for r in found]
    cells = list(out[flags_column]) if flags_column in out else [""] * len(out)
    notes = {}
    for i, (k, r) in enumerate(zip(keys, found)):
        if r is None:
            continue
        cell = cells[i] if isinstance(cells[i], str) else ""
        if r["status"] == NONCONFORMING:
            cells[i] = flags.add(cell, "non-conforming", verdict(r))
            notes[(k, build_of(r))] = f"{k} ({_ran(r)}) fails its known-answer checks: {verdict(r)}."
        elif r["status"] == NOT_CHECKED:
            cells[i] = flags.add(cell, "conformance-not-checked", r.get("why_not", ""))
    out[flags_column] = cells
    return out, list(notes.values())


def _ran(record: dict) -> str:
    """What ran, once: the implementation, with its build where the label does not already name it."""
    build = build_of(record)
    label = record.get("implementation", "")
    return label if not build or build in label or label.endswith("build)") else f"{label}, {build}"


def caveat(runs, *, markdown: bool = True, glyph: str = "⚠ ") -> str:
    """One sentence per implementation of `runs` that failed its known-answer checks, from the records the
    runs carry (:func:`records_of`): what it fails, how often, and that its times belong to an implementation
    that skips that check; "" where every implementation that ran conforms.  A study's text shows it wherever
    it times or compares such an implementation; `markdown` escapes it for a notebook's Markdown; `glyph`
    starts each sentence ("" for LaTeX)."""

    lines = []
    for (key, _), r in records_of(runs).items():
        if r["status"] != NONCONFORMING:
            continue
        lines.append(f"{glyph}{key} ({_ran(r)}) is non-conforming: of Wycheproof's vectors it "
                     + " and ".join(f"{_verb(kind)} ({n} of {r['ran']})" for kind, n in r["failures"].items())
                     + ". Its times are those of an implementation that skips a check a conforming one "
                       "makes: not like for like.")
    text = " ".join(lines)
    return md(text) if markdown and text else text


def _verb(kind: str) -> str:
    """A failure kind as a clause: "accepts invalid signatures", "gives a wrong shared secret"."""
    return (kind if kind.split()[0] in ("accepts", "refuses")
            else f"gives a {kind}" if kind.startswith("wrong") else f"fails ({kind})")
