"""Checking and timing for notebook 08: :func:`check` cross-checks every implementation against every other
before anything is timed (:mod:`pqlab.checks.crosscheck`) and runs Wycheproof's vectors through each
(:mod:`pqlab.checks.vectors`); :func:`measure` times the programs of ``native/impls/``
(:mod:`pqlab.runners.impls`) and pqlab's own backends, leaving out only an implementation that disagrees with
the others or stops answering, with the reason, and timing one that fails vectors too, its conformance
recorded in the run (:func:`program_records`).
"""
from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import pandas as pd

from pqlab import benchmark
from pqlab.backends import algorithms as registry
from pqlab.checks import conformance, crosscheck, vectors
from pqlab.core.errors import BadInput, UnknownName
from pqlab.core.vocabulary import LIBRARY_BACKENDS
from pqlab.runners import impls

TOPIC = "08_implementations"
#: pqlab's own backends that take part: every library backend of its harness (liboqs-python is liboqs through
#: its binding: its cost is one more row).
PYTHON_BACKENDS = LIBRARY_BACKENDS


@dataclass
class Checks:
    """What :func:`check` found: the cross-checks (`cross`), the known-answer tests (`kats`, empty with
    `kats_missing` saying why when the vectors could not be fetched here), and who leaves the tables."""

    cross: pd.DataFrame
    kats: pd.DataFrame
    kats_missing: str = ""
    api: pd.DataFrame | None = None  #: per implementation and algorithm, the operations a caller may seed
    kats_seconds: float = 0.0  #: how long the vectors of every implementation took together

    @property
    def crashed(self) -> dict[str, str]:
        """{"implementation/algorithm": why} for each implementation that stopped answering during its vectors
        (:func:`pqlab.checks.vectors.run`'s row without a vector)."""
        rows = self.kats
        if rows.empty:
            return {}
        bad = rows[(rows["passed"] == False) & rows["vector"].isna()]  # noqa: E712 - object column
        return {f"{r['implementation']}/{r['algorithm']}":
                f"stopped answering during its vectors: {r['detail']}" for _, r in bad.iterrows()}

    @property
    def excluded(self) -> dict[str, str]:
        """{"implementation/algorithm": why} for each implementation left out of the timing: one that failed
        cross-checks (it disagrees with the others) or stopped answering.  One that only failed vectors is
        timed and marked (:attr:`nonconforming`)."""
        return {**crosscheck.excluded(self.cross), **self.crashed}

    @property
    def nonconforming(self) -> dict[str, str]:
        """{"implementation/algorithm": what it failed} for each implementation that failed Wycheproof vectors
        but answers: it is timed, and every row and claim says so."""
        return {k: v for k, v in vectors.failures(self.kats).items() if k not in self.excluded}


def known_names(algorithms: Sequence[str], programs: Iterable[str] | None = None,
                leave_out: Iterable[str] = ()) -> list[str]:
    """Every implementation name here (the programs' and pqlab's own backends'), after refusing an algorithm
    no implementation has, or a `leave_out` item that is not "ALGORITHM@implementation" of known names, in one
    line with close matches, before anything runs."""

    listed = impls.available(programs)
    entries = [(a["algorithm"], a["implementation"]) for d in listed.values() for a in d["algorithms"]]
    entries += [(name, b) for b in registry.known_backends() for name in registry.names(backend=b)]
    for name in algorithms:
        if name not in {a for a, _ in entries}:
            raise UnknownName("algorithm of any implementation here", name, sorted({a for a, _ in entries}))
    names = sorted({i for _, i in entries})
    for item in leave_out:
        alg, _, impl = str(item).partition("@")
        if not impl:
            raise BadInput(f"leave_out item {item!r} is not ALGORITHM@implementation "
                           "(e.g. ML-DSA-44@pure-python)")
        if impl not in names:
            raise UnknownName("implementation in leave_out", impl, names)
    return names


def check(algorithms: Sequence[str], programs: Iterable[str] | None = None,
          python: Iterable[str] = PYTHON_BACKENDS, kat_limit: int | None = None) -> Checks:
    """Every implementation of each algorithm against every other
    (:func:`pqlab.checks.crosscheck.cross_check`), then Wycheproof's known answers through each that can
    express them (:func:`pqlab.checks.vectors.run`; `kat_limit`: the first vectors of each file only).
    liboqs-python is liboqs itself through another path and is not checked twice."""
    python = [b for b in python if b != "liboqs-python"]
    known_names(algorithms, programs)
    participants, sessions = crosscheck.participants_for(algorithms, programs, python)
    try:
        cross = crosscheck.cross_check(algorithms, participants)
        api = pd.DataFrame([{"implementation": p.name, "algorithm": alg,
                             "seeded": ", ".join(crosscheck.seeded(p, alg)) or "none"}
                            for alg in algorithms for p in participants.values() if crosscheck.has(p, alg)])
        started = time.perf_counter()
        try:
            rows = vectors.run(participants, algorithms, kat_limit)
            return Checks(cross, rows, api=api, kats_seconds=time.perf_counter() - started)
        except vectors.VectorsUnavailable as exc:
            return Checks(cross, pd.DataFrame(columns=["implementation", "algorithm", "file", "vector",
                                                       "expected", "passed", "detail"]), str(exc), api=api)
    finally:
        for session in sessions:
            session.close()


def program_records(chosen: Sequence[tuple[str, str, str, str]], rows: pd.DataFrame, why_missing: str = "",
                    seconds: float = 0.0) -> dict[str, dict]:
    """``{"ALGORITHM@implementation": record}`` for each (program, implementation, algorithm, kind) of
    `chosen` (what :func:`pqlab.runners.impls.measure` times, which keeps these records in its run's
    metadata): :func:`pqlab.checks.conformance.record_from_rows` over the Wycheproof rows it ran (`rows`,
    :func:`pqlab.checks.vectors.run`), under its identity (program, release, build, toolchain, options, the
    operations its API seeds, the vectors' source).  `why_missing`: why no vector could run at all (they could
    not be fetched); `seconds`: how long the whole vector run took (one run checks every implementation, so
    each record carries the total)."""
    try:
        source = vectors.provenance()
    except (OSError, KeyError, StopIteration) as exc:
        source = {"unavailable": str(exc)}
    rows = (rows if rows is not None and not rows.empty
            else pd.DataFrame(columns=["implementation", "algorithm", "passed", "detail"]))
    out = {}
    for name, impl, alg, _ in chosen:
        document = impls.describe(name)
        about = next(i for i in document["implementations"] if i["implementation"] == impl)
        seeded = list(next(a for a in document["algorithms"] if a["implementation"] == impl
                           and a["algorithm"] == alg).get("seeded", []))
        release = impls.release_of(about["version"], alg)
        mine = rows[(rows["implementation"] == impl) & (rows["algorithm"] == alg)]
        ident = {"algorithm": alg, "backend": impl, "implementation": f"{impl} {release}", "release": release,
                 "library_version": release, "program": name,
                 "build": f"the {name} program, sources {str(document['build'].get('sources', ''))[:12]}",
                 "toolchain": document.get("toolchain", ""), "options": about.get("options", ""),
                 "seeded": seeded, "vectors": source,
                 "seconds_cover": "the vector run of every implementation together"}
        why = why_missing
        if not why and mine["passed"].notna().sum() == 0:
            why = (f"Wycheproof has no vectors for {alg} (pqlab.checks.vectors.FILES)"
                   if alg not in vectors.FILES
                   else f"none of {alg}'s vectors fit its API (a caller may seed "
                        f"{', '.join(seeded) or 'no operation'}, and give no secret key)")
        out[f"{alg}@{impl}"] = conformance.record_from_rows(mine, ident, seconds, why)
    return out


def python_items(algorithms: Sequence[str], excluded: dict, leave_out: Iterable[str] = (),
                 backends: Iterable[str] = PYTHON_BACKENDS) -> list[str]:
    """The "ALG@backend" items pqlab's harness measures: each algorithm in each of `backends` that has it,
    minus the excluded (a failed cross-check or a crash, not a failed vector; liboqs-python goes with liboqs)
    and `leave_out`."""
    items = []
    for alg in algorithms:
        for backend in backends:
            base = "liboqs" if backend == "liboqs-python" else backend
            if alg in registry.names(backend=backend) and f"{base}/{alg}" not in excluded \
                    and f"{alg}@{backend}" not in leave_out:
                items.append(f"{alg}@{backend}")
    return items


def measure(algorithms: Sequence[str], checks: Checks, *, budget_s: float, rounds: int, min_samples: int,
            leave_out: Iterable[str] = (), programs_budget_s: float | None = None,
            programs: Iterable[str] | None = None, study: str = TOPIC) -> tuple:
    """Time every cross-checked implementation of `algorithms`: the programs of native/impls
    (:func:`pqlab.runners.impls.measure`) and pqlab's own backends (:func:`pqlab.bench`), each in rounds.
    Returns ``(programs_run, python_run)``.  `programs`: the programs of native/impls to use (default all).
    `leave_out`: "ALG@implementation" items not to time (a slow pure-Python set in a quick run); they are
    named in the runs' parameters.  An implementation that fails Wycheproof vectors is timed too: the
    programs' run records each one's vectors (`checks.kats`) as its conformance, and bench checks its own
    backends (``allow_nonconforming=True``), so every row says what it passed."""

    leave_out = list(leave_out)
    known_names(algorithms, programs, leave_out)
    excluded = checks.excluded
    mine = dict(excluded, **{"{1}/{0}".format(*item.split("@", 1)): "left out by the notebook's parameters"
                             for item in leave_out})
    runner_run = impls.measure(algorithms, budget_s=programs_budget_s or budget_s, rounds=rounds,
                               min_samples=min_samples, excluded=mine, programs=programs, study=study,
                               params={"leave_out": leave_out},
                               conformance=lambda chosen: program_records(chosen, checks.kats,
                                                                          checks.kats_missing,
                                                                          checks.kats_seconds))
    python_run = benchmark.bench(python_items(algorithms, excluded, leave_out), budget_s=budget_s,
                                 rounds=rounds, min_samples=min_samples, study=study,
                                 params={"leave_out": leave_out}, target_rel_ci=None, max_rounds=rounds,
                                 allow_nonconforming=True)
    return runner_run, python_run
