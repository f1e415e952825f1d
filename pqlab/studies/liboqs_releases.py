"""What upgrading liboqs changes (notebook 04's last section): the same algorithms on every liboqs build here.

The builds (:func:`present`): pqlab's own builds of each release crates.io carries (0.9.0, 0.12.0,
0.13.0), each liboqs source tree registered in this clone (``liboqs-0.16.0+source``: ``make setup
LIBOQS_SOURCE=DIR``) and each liboqs pqlab was given (``+given``: conda, ``OQS_INSTALL_PATH``).  Each runs in
its own worker process (one process loads one liboqs).

The names: each name asked for is measured on each build under that release's name for the same algorithm,
or, where the release no longer has that algorithm, for the one related algorithm of its lineage
(:func:`pqlab.liboqs.names.stand_in`: round-3 SPHINCS+ becomes FIPS 205's SLH-DSA in 0.16.0, the 2023 HQC-128
the 2025 HQC-1).  Every pair of builds says whether it compares the same algorithm; a related one is
measured and compared, and labelled as another algorithm wherever it is shown.

    present() -> [build ids]                every build here, oldest release first
    plan(names, builds) -> DataFrame        per build and name: the name measured there, its meaning, why not
    measure(plan, ...) -> {build id: Run}   one worker run per build
    timings(runs, plan) -> DataFrame        per name, operation and build: median, interval, conformance
    changes(runs, plan) -> DataFrame        each build against the one before: the factor with its interval
    notes(plan) -> DataFrame                the release notes that explain a change (data/reference/)
    describe(plan, changes) -> str          what changed, from the data; how to add today's liboqs
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from pqlab.benchmark import bench_in_worker
from pqlab.core import builds, inputs
from pqlab.core.formatting import fmt_factor_ci, markdown
from pqlab.core.quantities import not_resolved_text, resolved
from pqlab.core.references import load_reference
from pqlab.liboqs import names as liboqs_names
from pqlab.liboqs.loader import given_builds
from pqlab.measure.stats import ratio_ci, round_interval
from pqlab.store.results import MIN_FACTOR, Run

#: the reference table of release notes (``data/reference/liboqs_release_notes.csv``)
NOTES_TABLE = "liboqs_release_notes"
#: the families each family column of :data:`NOTES_TABLE` covers, by pqlab's name prefix
_NOTE_FAMILIES = {"ML-KEM": ("ML-KEM",), "Kyber": ("Kyber",), "ML-DSA": ("ML-DSA",),
                  "Dilithium": ("Dilithium",), "Falcon": ("Falcon",), "SPHINCS+": ("SPHINCS",),
                  "SLH-DSA": ("SLH_DSA", "SLH-DSA", "SPHINCS"), "HQC": ("HQC",),
                  "FrodoKEM": ("FrodoKEM", "eFrodoKEM")}


def _order(build: builds.Build) -> tuple:
    return builds.version_key(build.release), builds.ORIGINS.index(build.origin), build.options


def present() -> list[str]:
    """Every liboqs build here with liboqs's default options, oldest release first: pqlab's crate builds, the
    source trees registered in this clone, the liboqs it was given."""
    found = ([builds.Build(r) for r in builds.own_releases()]
             + [builds.Build(r, origin=builds.SOURCE) for r in builds.sources()] + list(given_builds()))
    return [b.id for b in sorted(dict.fromkeys(found), key=_order)]


def extra_builds(build_ids: Sequence[str]) -> list[str]:
    """The builds among `build_ids` that are not pqlab's crate builds (a source tree's, a given one)."""
    return [b for b in build_ids if builds.parse(b, given_builds() if "given" in b else ()).origin != "crate"]


def plan(names: Sequence[str], build_ids: Sequence[str] | str = "present") -> pd.DataFrame:
    """For each build (oldest release first; ``"present"``: :func:`present`) and name asked for: the name
    measured there (the same, or the release's name for it, or for the related algorithm that stands in for
    it), what that means, whether it is the algorithm the name means in pqlab's setup release
    (:func:`_asked_meaning`), and why a build measures nothing for it.  Unknown builds and names no listed
    release has are refused before anything is built or measured."""
    names = inputs.names(names, "algorithm")
    ids = (present() if isinstance(build_ids, str) and build_ids == "present"
           else inputs.names(build_ids, "liboqs build"))
    given = given_builds() if any("given" in b for b in ids) else ()
    chosen = sorted({builds.parse(b, given) for b in ids}, key=_order)
    for name in names:
        if not liboqs_names.history(name):
            liboqs_names.meaning(name, chosen[-1].release)  # raises: unknown, with close matches
    rows = []
    for build in chosen:
        known = build.release in liboqs_names.RELEASES  # a liboqs of another release: its worker checks
        for name in names:
            there, note = name, ""
            if known and name not in liboqs_names.names(build.release):
                there, note = liboqs_names.stand_in(name, build.release)
            rows.append({"build": build.id, "release": build.release, "algorithm": name,
                         "measured_as": there, "measured": bool(there),
                         "means": liboqs_names.meaning(there, build.release) if there and known else "",
                         "note": note,
                         "why_not": "" if there else (liboqs_names.missing_in(name, build.release)
                                                      or f"liboqs {build.release} has no {name}")})
    df = pd.DataFrame(rows)
    asked = {name: _asked_meaning(name) for name in names}
    # None where nothing is measured, or a release pqlab has no names of (a given liboqs): not known
    df["same_algorithm"] = [asked[a] == m if m else None for a, m in zip(df["algorithm"], df["means"])]
    return df


def _asked_meaning(name: str) -> str:
    """The algorithm a name asked for stands for: what it means in pqlab's setup release (the release the
    notebooks' names are written for), else in the last release that lists it."""
    if name in liboqs_names.names(builds.SETUP_RELEASE):
        return liboqs_names.meaning(name, builds.SETUP_RELEASE)
    return liboqs_names.last_meaning(name).algorithm


def measure(chosen: pd.DataFrame, **options) -> dict[str, Run]:
    """One worker run per build of `chosen` (:func:`plan`), of the names measured there, on liboqs;
    `options` go to :func:`pqlab.benchmark.bench_in_worker` (budget_s, rounds, message_bytes, study ...).  A
    release whose implementation fails its known-answer checks is timed too (``allow_nonconforming``): its
    run's record says so, and :func:`pqlab.studies.conforming.caveat` of the runs says it beside their
    times."""
    runs = {}
    for build_id, rows in chosen[chosen["measured"]].groupby("build", sort=False):
        runs[build_id] = bench_in_worker([f"{n}@liboqs" for n in dict.fromkeys(rows["measured_as"])],
                                         build=build_id, **{"allow_nonconforming": True, **options})
    return runs


def _status(run: Run, name: str) -> str:
    record = (run.meta.get("conformance") or {}).get(f"{name}@liboqs") or {}
    return str(record.get("status", "not recorded"))


def timings(runs: dict[str, Run], chosen: pd.DataFrame) -> pd.DataFrame:
    """Per name asked for, operation and build: the name measured, the median time over rounds and its
    interval, the release the run's metadata records, the rounds, and the conformance status of that
    implementation in that build (:mod:`pqlab.checks.conformance`)."""
    parts = []
    for build_id, run in runs.items():
        m = run.verified()
        m = m[m["backend"] == "liboqs"]
        asked = chosen[(chosen["build"] == build_id) & chosen["measured"]]
        release = (run.meta.get("liboqs") or {}).get("liboqs_version", "")
        for r in asked.itertuples():
            rows = m[m["algorithm"] == r.measured_as]
            parts.append(pd.DataFrame({"algorithm": r.algorithm, "measured_as": r.measured_as,
                                       "same_algorithm": r.same_algorithm, "operation": rows["operation"],
                                       "build": build_id, "release": release,
                                       "time_ns_median": rows["time_ns_median"],
                                       "time_ns_ci_low": rows["time_ns_ci_low"],
                                       "time_ns_ci_high": rows["time_ns_ci_high"], "rounds": rows["rounds"],
                                       "conformance": _status(run, r.measured_as), "flags": rows["flags"]}))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def _verdict(factor: float, low: float, high: float) -> str:
    if not np.isfinite(low):
        return "no interval: not called"
    if not resolved(low, high):
        return f"{not_resolved_text()}: not called"
    if low <= 1 <= high:
        return "no change called"
    if max(factor, 1 / factor) < MIN_FACTOR:
        return f"differs by less than {MIN_FACTOR:g}×"
    return f"{'slower' if factor > 1 else 'faster'} by {max(factor, 1 / factor):.2f}×"


def changes(runs: dict[str, Run], chosen: pd.DataFrame) -> pd.DataFrame:
    """Each build against the one before it (in :func:`plan`'s order): per name asked for and operation
    measured on both, newer over older (medians over rounds, the interval of their ratio over the runs'
    independent rounds: :func:`pqlab.measure.stats.ratio_ci`), the names measured on each side and whether
    they are the same algorithm.  A change is called where the interval resolves the factor
    (:func:`pqlab.core.quantities.resolved`), excludes 1, and the factor is at least
    :data:`pqlab.store.results.MIN_FACTOR` either way."""
    ids = [b for b in dict.fromkeys(chosen["build"]) if b in runs]
    rows = []
    for older, newer in zip(ids, ids[1:]):
        a = chosen[(chosen["build"] == older) & chosen["measured"]].set_index("algorithm")
        b = chosen[(chosen["build"] == newer) & chosen["measured"]].set_index("algorithm")
        for name in [n for n in a.index if n in b.index]:
            ra, rb = a.loc[name], b.loc[name]
            same = bool(ra["means"]) and ra["means"] == rb["means"]
            ops_a = set(runs[older].verified().query("algorithm == @ra.measured_as")["operation"])
            ops_b = set(runs[newer].verified().query("algorithm == @rb.measured_as")["operation"])
            for op in [o for o in ("keygen", "sign", "verify", "encaps", "decaps") if o in ops_a & ops_b]:
                xa = runs[older].sample_values(ra["measured_as"], op, backend="liboqs")
                xb = runs[newer].sample_values(rb["measured_as"], op, backend="liboqs")
                factor, low, high = ratio_ci(xb, xa)
                verdict = _verdict(factor, low, high)
                if not same:
                    verdict += (f"; ⚠ different algorithms: {ra['means'] or ra['measured_as']} → "
                                f"{rb['means'] or rb['measured_as']}")
                rows.append({"algorithm": name, "operation": op, "from": older, "to": newer,
                             "older_name": ra["measured_as"], "newer_name": rb["measured_as"],
                             "same_algorithm": same, "older_ns": round_interval(xa)[0],
                             "newer_ns": round_interval(xb)[0], "factor": factor, "factor_ci_low": low,
                             "factor_ci_high": high, "older_means": ra["means"], "newer_means": rb["means"],
                             "called": verdict.startswith(("slower", "faster")),
                             "verdict": verdict})
    return pd.DataFrame(rows)


def for_paper(moved: pd.DataFrame) -> pd.DataFrame:
    """:func:`changes` as the paper sets it: the builds without the "liboqs-" every row repeats, and the newer
    name only where it differs from the one asked ("same" otherwise), so that a registered source build
    (liboqs-0.16.0+source) and a newer release's names (SLH_DSA_PURE_SHA2_128F) fit the page."""
    out = moved.copy()
    for column in ("from", "to"):
        out[column] = out[column].astype(str).str.removeprefix("liboqs-")
    out["newer_name"] = ["same" if n == a else n for n, a in zip(out["newer_name"], out["algorithm"])]
    return out


def notes(chosen: pd.DataFrame) -> pd.DataFrame:
    """The release notes (:data:`NOTES_TABLE`, transcribed from liboqs's RELEASE.md with provenance) of the
    releases after the oldest build's up to the newest one's, for the families of the names measured."""
    table = load_reference(NOTES_TABLE).fillna("")
    releases = sorted(set(chosen["release"]), key=builds.version_key)
    low, high = builds.version_key(releases[0]), builds.version_key(releases[-1])
    measured = set(chosen.loc[chosen["measured"], "measured_as"]) | set(chosen["algorithm"])
    wanted = {family for family, prefixes in _NOTE_FAMILIES.items()
              if any(str(n).startswith(prefixes) for n in measured)}
    keep = [low < builds.version_key(r) <= high and (f in wanted or f in ("SHA-3", "AES", "common"))
            for r, f in zip(table["release"], table["family"])]
    return table[keep].reset_index(drop=True)


def how_to_add() -> str:
    """The sentence that says how to add today's liboqs to this comparison."""
    return (f"Only pqlab's own builds are here, and the newest liboqs on a registry here is "
            f"{builds.SETUP_RELEASE}. To see what upgrading changes, add a newer liboqs: "
            "`python -m pqlab builds --add-source DIR` with DIR a liboqs checkout (e.g. `git clone "
            f"--branch {liboqs_names.RELEASES[-1]} https://github.com/open-quantum-safe/liboqs`), or a "
            "liboqs installed by conda or in `OQS_INSTALL_PATH`, then run this section again.")


def _pair(row) -> str:
    """What the two sides of a :func:`changes` row measured: "HQC-2023-128 → HQC-2025-1"."""
    return f"{markdown(row.older_means or row.older_name)} → {markdown(row.newer_means or row.newer_name)}"


def describe(chosen: pd.DataFrame, moved: pd.DataFrame) -> str:
    """What the releases changed (Markdown), from `chosen` (:func:`plan`) and `moved` (:func:`changes`)."""
    lines = []
    for name, rows in chosen.groupby("algorithm", sort=False):
        meanings = sorted(markdown(m) for m in set(rows.loc[rows["measured"], "means"]) if m)
        absent = rows[~rows["measured"]]
        if len(meanings) == 1:
            text = f"**{markdown(name)}** means {meanings[0]} on every build measured here"
        else:
            text = (f"**{markdown(name)}** stands for different algorithms across these builds "
                    f"({'; '.join(meanings)})")
        stood = rows[rows["note"] != ""]
        if len(stood):
            text += ": " + "; ".join(markdown(n) for n in dict.fromkeys(stood["note"]))
        if len(absent):
            text += "; not measured on " + "; ".join(f"{markdown(r.build)} ({markdown(r.why_not)})"
                                                  for r in absent.itertuples())
        lines.append(f"- {text}.")
    if not extra_builds(list(dict.fromkeys(chosen["build"]))):
        lines += ["", how_to_add()]
    if moved.empty:
        return "\n".join(lines + ["", "No two builds measured an operation in common here."])
    for (older, newer), pair in moved.groupby(["from", "to"], sort=False):
        called = pair[pair["called"]]
        head = (f"From {markdown(older)} to {markdown(newer)}: {len(called)} of {len(pair)} operations "
                "changed (a resolved interval that excludes 1 and a factor of at least "
                f"{MIN_FACTOR:g}× either way)")
        if len(called):
            head += ": " + ", ".join(
                f"{markdown(r.algorithm)} {r.operation} "
                f"{fmt_factor_ci(r.factor, r.factor_ci_low, r.factor_ci_high)}"
                + ("" if r.same_algorithm else f" (⚠ {_pair(r)}, another algorithm)")
                for r in called.sort_values("factor").itertuples())
        lines += ["", head + " (newer over older: above 1 is slower). One run of each build: a change is "
                  "confirmed by measuring again (`python -m pqlab bench NAME@BUILD`, then "
                  "`python -m pqlab compare`)."]
    return "\n".join(lines)
