"""One liboqs name across liboqs releases (notebook 04's last section): what changed between releases.

Each release is its own build (:mod:`pqlab.core.builds`), built on first need from the crates.io crate
that carries its sources, and measured in its own worker process (one process loads one liboqs).  A name is
measured on a release only where that release lists it (:mod:`pqlab.liboqs.names`), and two releases are
compared on a name only where it means the same algorithm in both: ``Kyber768`` (round 3) and ``ML-KEM-768``
(FIPS 203) are two algorithms, each compared with itself.

    plan(names, builds) -> DataFrame        per build and name: measured or why not, and what it means
    measure(plan, ...) -> {build id: Run}   one worker run per build
    timings(runs) -> DataFrame              per algorithm, operation and build: the median and its interval
    changes(runs) -> DataFrame              each release against the one before: the factor with its interval
    describe(plan, changes) -> str          what changed, from the data
"""
from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from pqlab.benchmark import bench_in_worker
from pqlab.core import builds, inputs
from pqlab.core.formatting import fmt_factor_ci, markdown
from pqlab.liboqs import names as liboqs_names
from pqlab.store.results import ALPHA, MIN_FACTOR, Run, compare_runs


def plan(names: Sequence[str], build_ids: Sequence[str]) -> pd.DataFrame:
    """For each build (oldest release first) and liboqs name: whether that release lists the name, the
    algorithm it means there, and why it is not measured where it is not.  Unknown builds and names no listed
    release has are refused before anything is built or measured."""
    names = inputs.names(names, "algorithm")
    chosen = sorted({builds.parse(b) for b in inputs.names(build_ids, "liboqs build")},
                    key=lambda b: (builds.version_key(b.release), b.options))
    for name in names:
        if not liboqs_names.history(name):
            liboqs_names.meaning(name, chosen[-1].release)  # raises: unknown, with close matches
    rows = []
    for build in chosen:
        known = build.release in liboqs_names.RELEASES  # a given liboqs of another release: its worker checks
        listed = set(liboqs_names.names(build.release)) if known else set(names)
        for name in names:
            present = name in listed
            rows.append({"build": build.id, "release": build.release, "algorithm": name, "measured": present,
                         "means": liboqs_names.meaning(name, build.release) if present and known else "",
                         "why_not": "" if present else (liboqs_names.missing_in(name, build.release)
                                                        or f"liboqs {build.release} has no {name}")})
    return pd.DataFrame(rows)


def measure(chosen: pd.DataFrame, **options) -> dict[str, Run]:
    """One worker run per build of `chosen` (:func:`plan`), of the names measured there, on liboqs;
    `options` go to :func:`pqlab.benchmark.bench_in_worker` (budget_s, rounds, message_bytes, study ...).  A
    release whose implementation fails its known-answer checks is timed too (``allow_nonconforming``): its
    run's record says so, and :func:`pqlab.studies.conforming.caveat` of the runs says it beside their
    times."""
    runs = {}
    for build_id, rows in chosen[chosen["measured"]].groupby("build", sort=False):
        runs[build_id] = bench_in_worker([f"{n}@liboqs" for n in rows["algorithm"]], build=build_id,
                                         **{"allow_nonconforming": True, **options})
    return runs


def timings(runs: dict[str, Run]) -> pd.DataFrame:
    """Per algorithm, operation and build: the median time over rounds and its interval, the release the run's
    metadata records, and the rounds."""
    parts = []
    for build_id, run in runs.items():
        m = run.verified()
        m = m[m["backend"] == "liboqs"]
        release = (run.meta.get("liboqs") or {}).get("liboqs_version", "")
        parts.append(pd.DataFrame({"algorithm": m["algorithm"], "operation": m["operation"],
                                   "build": build_id, "release": release,
                                   "time_ns_median": m["time_ns_median"],
                                   "time_ns_ci_low": m["time_ns_ci_low"],
                                   "time_ns_ci_high": m["time_ns_ci_high"], "rounds": m["rounds"],
                                   "flags": m["flags"]}))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def changes(runs: dict[str, Run]) -> pd.DataFrame:
    """Each build against the one before it (runs in release order): per algorithm and operation both
    measured, newer over older with its interval over rounds and the verdict of
    :func:`pqlab.store.results.compare_runs` (the runs differ in their liboqs build by design; names whose
    meaning changed are refused there)."""
    ids = list(runs)
    parts = []
    for older, newer in zip(ids, ids[1:]):
        df = compare_runs(runs[older], runs[newer], allow_different=True)
        df = df[df["backend"] == "liboqs"]
        parts.append(pd.DataFrame({"algorithm": df["algorithm"], "operation": df["operation"], "from": older,
                                   "to": newer, "older_ns": df["a_ns"], "newer_ns": df["b_ns"],
                                   "factor": df["factor_b_over_a"], "factor_ci_low": df["factor_ci_low"],
                                   "factor_ci_high": df["factor_ci_high"], "significant": df["significant"],
                                   "verdict": df["verdict"]}))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def describe(chosen: pd.DataFrame, moved: pd.DataFrame) -> str:
    """What the releases changed (Markdown), from `chosen` (:func:`plan`) and `moved` (:func:`changes`)."""
    lines = []
    for name, rows in chosen.groupby("algorithm", sort=False):
        name, meanings = markdown(name), sorted(markdown(m) for m in set(rows.loc[rows["measured"], "means"]))
        absent = rows[~rows["measured"]]
        if len(meanings) == 1:
            text = f"**{name}** means {meanings[0]} in every release measured here"
        else:
            text = f"**{name}** means different algorithms across these releases ({'; '.join(meanings)})"
        if len(absent):
            text += "; not measured on " + "; ".join(f"liboqs {markdown(r.release)} ({markdown(r.why_not)})"
                                                  for r in absent.itertuples())
        lines.append(f"- {text}.")
    if moved.empty:
        return "\n".join(lines + ["", "No two releases measured an operation in common here."])
    for (older, newer), pair in moved.groupby(["from", "to"], sort=False):
        called = pair[pair["significant"]]
        head = (f"From {markdown(older)} to {markdown(newer)}: {len(called)} of {len(pair)} operations "
                f"changed (by at least {MIN_FACTOR:g}× either way, p < {ALPHA:g} and an interval that "
                "excludes 1)")
        if len(called):
            head += ": " + ", ".join(
                f"{markdown(r.algorithm)} {r.operation} "
                f"{fmt_factor_ci(r.factor, r.factor_ci_low, r.factor_ci_high)}"
                for r in called.sort_values("factor").itertuples())
        lines += ["", head + " (newer over older: above 1 is slower). One run of each release: a change is "
                  "confirmed by measuring again (`python -m pqlab bench NAME@BUILD`, then "
                  "`python -m pqlab compare`)."]
    return "\n".join(lines)
