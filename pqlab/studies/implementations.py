"""Which implementation?  One algorithm, every implementation that ships: the analysis of notebook 08
(``08_implementations``).

"What does ML-KEM cost?" depends on whose ML-KEM.  This module puts the implementations that real software ships
side by side with one method:

* the programs of ``native/impls/`` (:mod:`pqlab.runners.impls`) time Rust (aws-lc-rs, libcrux, RustCrypto), C
  (OpenSSL's EVP API), Go (the standard library), Java (Bouncy Castle) and JavaScript (noble), each in a loop of its
  own language; pqlab's own harness times the Python-reachable ones (liboqs through pqlab's lean C loop and through
  liboqs-python, OpenSSL inside ``cryptography``, the Rust crates inside ``pqcrypto``, pure Python);
* :func:`check` cross-checks every implementation against every other before anything is timed
  (:mod:`pqlab.checks.crosscheck`) and runs Wycheproof's vectors through each (:mod:`pqlab.checks.vectors`); :func:`measure` leaves
  out only an implementation that disagrees with the others or stops answering, with the reason, and times one
  that fails vectors too: every run records each (implementation, algorithm)'s conformance
  (``meta["conformance"]``, :mod:`pqlab.checks.conformance`), every row shows it, and no "fastest" claim names a
  non-conforming implementation without saying what it fails (:func:`fastest_claims`);
* :func:`comparison` is the tidy table (one row per algorithm, operation and implementation, with its interval),
  :func:`spread` the fastest over the slowest, :func:`pq_over_classical` the post-quantum / classical ratio per
  implementation, :func:`sizes` the bytes, :func:`implementations_table` who ran in which release and build,
  :func:`conformance_table` what the vectors checked for each timed row, :func:`code_bases` which rows run the
  same code (one release reached through two paths);
* ``describe_*`` write the sentences that state numbers, ``plot_*`` the figures.
"""
from __future__ import annotations

import math
import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import pandas as pd

from pqlab.backends import algorithms as registry
from pqlab.benchmark import bench
from pqlab.checks import conformance, crosscheck, vectors
from pqlab.core.errors import BadInput, UnknownName
from pqlab.core.formatting import fmt_factor, fmt_factor_ci, fmt_time_ns, markdown
from pqlab.core.schema import KIND_OPERATIONS
from pqlab.core.vocabulary import LIBRARY_BACKENDS, find
from pqlab.measure.stats import ratio_ci
from pqlab.publish import plotting
from pqlab.runners import impls

TOPIC = "08_implementations"
#: pqlab's own backends that take part: every library backend of its harness (liboqs-python is liboqs through its
#: binding: its cost is one more row).
PYTHON_BACKENDS = LIBRARY_BACKENDS
#: Each post-quantum algorithm's classical baseline in :func:`pq_over_classical`, operation by operation.
BASELINES = {"ML-KEM-768": "X25519", "ML-DSA-44": "Ed25519", "ML-DSA-65": "ECDSA-P256",
             "SLH-DSA-SHA2-128f": "Ed25519"}


def language_of(implementation: str) -> tuple[str, str]:
    """(the language doing the work, the language of the timed loop) of an implementation (pqlab.core.vocabulary)."""
    record = find(implementation)
    return (record.language, record.caller) if record else ("", "")


# --------------------------------------------------------------------------- checking and measuring


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
        return {f"{r['implementation']}/{r['algorithm']}": f"stopped answering during its vectors: {r['detail']}"
                for _, r in bad.iterrows()}

    @property
    def excluded(self) -> dict[str, str]:
        """{"implementation/algorithm": why} for each implementation left out of the timing: one that failed
        cross-checks (it disagrees with the others) or stopped answering.  One that only failed vectors is timed
        and marked (:attr:`nonconforming`)."""
        return {**crosscheck.excluded(self.cross), **self.crashed}

    @property
    def nonconforming(self) -> dict[str, str]:
        """{"implementation/algorithm": what it failed} for each implementation that failed Wycheproof vectors
        but answers: it is timed, and every row and claim says so."""
        return {k: v for k, v in vectors.failures(self.kats).items() if k not in self.excluded}


def known_names(algorithms: Sequence[str], programs: Iterable[str] | None = None,
                leave_out: Iterable[str] = ()) -> list[str]:
    """Every implementation name here (the programs' and pqlab's own backends'), after refusing an algorithm no
    implementation has, or a `leave_out` item that is not "ALGORITHM@implementation" of known names, in one line
    with close matches, before anything runs."""

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
            raise BadInput(f"leave_out item {item!r} is not ALGORITHM@implementation (e.g. ML-DSA-44@pure-python)")
        if impl not in names:
            raise UnknownName("implementation in leave_out", impl, names)
    return names


def check(algorithms: Sequence[str], programs: Iterable[str] | None = None,
          python: Iterable[str] = PYTHON_BACKENDS, kat_limit: int | None = None) -> Checks:
    """Every implementation of each algorithm against every other (:func:`pqlab.checks.crosscheck.cross_check`), then
    Wycheproof's known answers through each that can express them (:func:`pqlab.checks.vectors.run`; `kat_limit`: the first
    vectors of each file only).  liboqs-python is liboqs itself through another path and is not checked twice."""
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
            return Checks(cross, pd.DataFrame(columns=["implementation", "algorithm", "file", "vector", "expected",
                                                       "passed", "detail"]), str(exc), api=api)
    finally:
        for session in sessions:
            session.close()


def program_records(chosen: Sequence[tuple[str, str, str, str]], rows: pd.DataFrame, why_missing: str = "",
                    seconds: float = 0.0) -> dict[str, dict]:
    """``{"ALGORITHM@implementation": record}`` for each (program, implementation, algorithm, kind) of `chosen`
    (what :func:`pqlab.runners.impls.measure` times, which keeps these records in its run's metadata):
    :func:`pqlab.checks.conformance.record_from_rows` over the Wycheproof rows it ran (`rows`, :func:`pqlab.checks.vectors.run`),
    under its identity (program, release, build, toolchain, options, the operations its API seeds, the vectors'
    source).  `why_missing`: why no vector could run at all (they could not be fetched); `seconds`: how long the
    whole vector run took (one run checks every implementation, so each record carries the total)."""
    try:
        source = vectors.provenance()
    except (OSError, KeyError, StopIteration) as exc:
        source = {"unavailable": str(exc)}
    rows = rows if rows is not None and not rows.empty else pd.DataFrame(columns=["implementation", "algorithm",
                                                                                     "passed", "detail"])
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
                 "toolchain": document.get("toolchain", ""), "options": about.get("options", ""), "seeded": seeded,
                 "vectors": source, "seconds_cover": "the vector run of every implementation together"}
        why = why_missing
        if not why and mine["passed"].notna().sum() == 0:
            why = (f"Wycheproof has no vectors for {alg} (pqlab.checks.vectors.FILES)" if alg not in vectors.FILES
                   else f"none of {alg}'s vectors fit its API (a caller may seed "
                        f"{', '.join(seeded) or 'no operation'}, and give no secret key)")
        out[f"{alg}@{impl}"] = conformance.record_from_rows(mine, ident, seconds, why)
    return out


def python_items(algorithms: Sequence[str], excluded: dict, leave_out: Iterable[str] = (),
                 backends: Iterable[str] = PYTHON_BACKENDS) -> list[str]:
    """The "ALG@backend" items pqlab's harness measures: each algorithm in each of `backends` that has it, minus the
    excluded (a failed cross-check or a crash, not a failed vector; liboqs-python goes with liboqs) and
    `leave_out`."""
    items = []
    for alg in algorithms:
        for backend in backends:
            base = "liboqs" if backend == "liboqs-python" else backend
            if alg in registry.names(backend=backend) and f"{base}/{alg}" not in excluded \
                    and f"{alg}@{backend}" not in leave_out:
                items.append(f"{alg}@{backend}")
    return items


def measure(algorithms: Sequence[str], checks: Checks, *, budget_s: float, rounds: int, min_samples: int,
            leave_out: Iterable[str] = (), programs_budget_s: float | None = None, programs: Iterable[str] | None = None,
            study: str = TOPIC) -> tuple:
    """Time every cross-checked implementation of `algorithms`: the programs of native/impls
    (:func:`pqlab.runners.impls.measure`) and pqlab's own backends (:func:`pqlab.bench`), each in rounds.  Returns
    ``(programs_run, python_run)``.  `programs`: the programs of native/impls to use (default all).  `leave_out`:
    "ALG@implementation" items not to time (a slow pure-Python set in a quick run); they are named in the runs'
    parameters.  An implementation that fails Wycheproof vectors is timed too: the programs' run records each
    one's vectors (`checks.kats`) as its conformance, and bench checks its own backends
    (``allow_nonconforming=True``), so every row says what it passed."""

    leave_out = list(leave_out)
    known_names(algorithms, programs, leave_out)
    excluded = checks.excluded
    mine = dict(excluded, **{"{1}/{0}".format(*item.split("@", 1)): "left out by the notebook's parameters"
                             for item in leave_out})
    runner_run = impls.measure(algorithms, budget_s=programs_budget_s or budget_s, rounds=rounds,
                               min_samples=min_samples, excluded=mine, programs=programs, study=study,
                               params={"leave_out": leave_out},
                               conformance=lambda chosen: program_records(chosen, checks.kats, checks.kats_missing,
                                                                          checks.kats_seconds))
    python_run = bench(python_items(algorithms, excluded, leave_out), budget_s=budget_s, rounds=rounds,
                       min_samples=min_samples, study=study, params={"leave_out": leave_out},
                       target_rel_ci=None, max_rounds=rounds, allow_nonconforming=True)
    return runner_run, python_run


# --------------------------------------------------------------------------- tables


def _record(runs: Sequence, run_id: str, algorithm: str, backend: str) -> dict | None:
    """The conformance record the run `run_id` carries for ``algorithm@backend`` (None: the run has none)."""
    run = next((r for r in runs if r.run_id == run_id), None)
    return conformance.record_for(conformance.records_of([run]), f"{algorithm}@{backend}", "") if run else None


def comparison(runs: Sequence) -> pd.DataFrame:
    """One row per (algorithm, operation, implementation) of `runs`' verified measurements: the release, the
    language and the timed loop's language, the median per call with its interval over rounds, each row's rank
    (1: fastest) among the implementations of that algorithm and operation, and its conformance from the run's
    records (:mod:`pqlab.checks.conformance`): ``status`` (conforms, non-conforming, not checked), ``conformance`` (the
    verdict: vectors passed, or the failures by kind, or why none ran), ``failures`` (the failure kinds) and the
    ``flags`` a table turns into marks.  A non-conforming implementation keeps its rows."""
    rows = []
    for run in runs:
        for _, m in run.verified().iterrows():
            language, loop = language_of(m["backend"])
            record = _record([run], run.run_id, m["algorithm"], m["backend"])
            rows.append({"algorithm": m["algorithm"], "operation": m["operation"], "implementation": m["backend"],
                         "backend": m["backend"], "release": m["library_version"], "label": m["implementation"],
                         "language": language, "timed_in": loop,
                         "median_ns": m["time_ns_median"], "ci_low_ns": m["time_ns_ci_low"],
                         "ci_high_ns": m["time_ns_ci_high"], "rounds": m["rounds"], "run_id": run.run_id,
                         "status": record["status"] if record else conformance.NOT_CHECKED,
                         "failures": "; ".join((record or {}).get("failures", {})),
                         "vectors_run": (record or {}).get("ran", 0)})
    df = pd.DataFrame(rows)
    if df.empty:
        return df
    df["rank"] = df.groupby(["algorithm", "operation"])["median_ns"].rank(method="min").astype(int)
    df, _ = conformance.with_conformance(df, list(runs))
    if "conformance" not in df:  # no run carries records (runs made before pqlab checked conformance)
        df["conformance"] = ""
    df.loc[df["conformance"] == "", "conformance"] = conformance.verdict(None)
    return df.sort_values(["algorithm", "operation", "median_ns"], ignore_index=True)


def _eligible(group: pd.DataFrame) -> pd.DataFrame:
    """The rows a "fastest" or "slowest" claim may name: every row but a non-conforming implementation's."""
    return group[group["status"] != conformance.NONCONFORMING] if "status" in group else group


def _verdict(runs: Sequence, row) -> str:
    return conformance.verdict(_record(runs, row["run_id"], row["algorithm"], row["implementation"]))


def fastest_claims(group: pd.DataFrame, runs: Sequence) -> tuple[pd.Series | None, str]:
    """The fastest row of one algorithm and operation (`group`: rows of :func:`comparison`) that a claim may name
    (not non-conforming), and the caveat that goes with it: that its conformance was not checked (and why), and
    each non-conforming implementation that is faster, with its time and what it fails.  (None, caveat) when every
    row is non-conforming: then the caveat names them all."""
    ok = _eligible(group)
    best = ok.loc[ok["median_ns"].idxmin()] if not ok.empty else None
    notes = []
    if best is not None and best["status"] == conformance.NOT_CHECKED:
        notes.append(f"not checked against known answers: {_verdict(runs, best).removeprefix('not checked: ')}")
    faster = group[group["status"] == conformance.NONCONFORMING]
    if best is not None:
        faster = faster[faster["median_ns"] < best["median_ns"]]
    for _, r in faster.sort_values("median_ns").iterrows():
        notes.append(f"{r['implementation']} {'is faster' if best is not None else 'was timed'} "
                     f"({fmt_time_ns(r['median_ns'])}) but is non-conforming: it {_verdict(runs, r)} "
                     "of Wycheproof's vectors")
    return best, "; ".join(notes)


def fastest_text(group: pd.DataFrame, runs: Sequence) -> str:
    """The "fastest" claim of one algorithm and operation in words (:func:`fastest_claims`): "fastest conforming
    X (t)" where X passed its vectors, "fastest X (t; not checked against known answers: why)" where none could
    run, and every faster non-conforming implementation with what it fails."""
    best, caveat = fastest_claims(group, runs)
    if best is None:
        return f"no implementation that is not non-conforming ({caveat})"
    conforms = best["status"] == conformance.CONFORMS
    return (f"fastest {'conforming ' if conforms else ''}{best['implementation']} ({fmt_time_ns(best['median_ns'])}"
            + (f"; {caveat}" if caveat else "") + ")")


def _values(runs: Sequence, run_id: str, algorithm: str, operation: str, implementation: str):
    run = next(r for r in runs if r.run_id == run_id)
    return run.sample_values(algorithm, operation, backend=implementation)


def spread(table: pd.DataFrame, runs: Sequence) -> pd.DataFrame:
    """Per algorithm and operation: the fastest and the slowest implementation that is not non-conforming, with
    each one's conformance, slowest / fastest with its interval (paired by round where both ran in one run, else
    each side's rounds combined), and the non-conforming implementations faster than that fastest
    (``faster_nonconforming``: each with its time and what it fails; they are timed, but no claim of "fastest"
    names them)."""
    rows = []
    for (alg, op), whole in table.groupby(["algorithm", "operation"], sort=False):
        group = _eligible(whole)
        if len(group) < 2:
            continue
        fast, slow = group.loc[group["median_ns"].idxmin()], group.loc[group["median_ns"].idxmax()]
        _, caveat = fastest_claims(whole, runs)
        value, low, high = ratio_ci(_values(runs, slow["run_id"], alg, op, slow["implementation"]),
                                    _values(runs, fast["run_id"], alg, op, fast["implementation"]))
        rows.append({"algorithm": alg, "operation": op, "implementations": len(group),
                     "nonconforming_left_out": len(whole) - len(group),
                     "fastest": fast["implementation"], "fastest_ns": fast["median_ns"],
                     "fastest_conformance": fast["conformance"],
                     "slowest": slow["implementation"], "slowest_ns": slow["median_ns"],
                     "slowest_conformance": slow["conformance"],
                     "slowest_over_fastest": value, "slowest_over_fastest_low": low,
                     "slowest_over_fastest_high": high, "caveat": caveat})
    return pd.DataFrame(rows)


def pq_over_classical(table: pd.DataFrame, runs: Sequence, baselines: dict | None = None) -> pd.DataFrame:
    """Per implementation that has both: each post-quantum algorithm's operation over its classical baseline's same
    operation (:data:`BASELINES`), with its interval over rounds (paired: both in the same run)."""
    rows = []
    for pq, classical in (baselines or BASELINES).items():
        for impl in sorted(set(table.loc[table["algorithm"] == pq, "implementation"])):
            for op in KIND_OPERATIONS["kem" if pq.startswith("ML-KEM") else "sig"]:
                a = table[(table["algorithm"] == pq) & (table["implementation"] == impl) & (table["operation"] == op)]
                b = table[(table["algorithm"] == classical) & (table["implementation"] == impl)
                          & (table["operation"] == op)]
                if a.empty or b.empty:
                    continue
                a, b = a.iloc[0], b.iloc[0]
                value, low, high = ratio_ci(_values(runs, a["run_id"], pq, op, impl),
                                            _values(runs, b["run_id"], classical, op, impl))
                rows.append({"implementation": impl, "backend": impl, "release": a["release"], "algorithm": pq,
                             "baseline": classical, "operation": op, "ratio": value, "ratio_low": low,
                             "ratio_high": high, "status": a["status"], "conformance": a["conformance"],
                             "baseline_status": b["status"], "baseline_conformance": b["conformance"]})
    return pd.DataFrame(rows)


def binding_overhead(table: pd.DataFrame, runs: Sequence, python: str = "cryptography",
                     native: str = "openssl") -> pd.DataFrame:
    """What a path from Python costs, row by row: each operation that both `python` (``cryptography``, timed by
    pqlab's harness) and `native` (OpenSSL's EVP API timed in a C loop) measured, the first over the second with its
    interval, and whether both ran the same release (the native side's release named in the Python side's label).
    ``python="liboqs-python", native="liboqs"`` gives liboqs through its binding over pqlab's lean C loop."""
    rows = []
    mine = table[table["implementation"] == python]
    for _, a in mine.iterrows():
        b = table[(table["implementation"] == native) & (table["algorithm"] == a["algorithm"])
                  & (table["operation"] == a["operation"])]
        if b.empty:
            continue
        b = b.iloc[0]
        value, low, high = ratio_ci(_values(runs, a["run_id"], a["algorithm"], a["operation"], python),
                                    _values(runs, b["run_id"], a["algorithm"], a["operation"], native))
        rows.append({"algorithm": a["algorithm"], "operation": a["operation"], "python_ns": a["median_ns"],
                     "c_loop_ns": b["median_ns"], "python_over_c": value, "python_over_c_low": low,
                     "python_over_c_high": high, "overhead_ns": a["median_ns"] - b["median_ns"],
                     "same_release": str(b["release"]) in str(a["label"]),
                     "python_side": a["label"], "c_side": b["label"],
                     "python_conformance": a["conformance"], "c_conformance": b["conformance"]})
    return pd.DataFrame(rows)


def describe_overhead(overhead: pd.DataFrame, what: str) -> str:
    """The range of a :func:`binding_overhead` table's ratios, in one sentence (`what`: the two sides, for the
    reader)."""
    if overhead.empty:
        return f"No operation was measured on both sides of {what} here."
    lo, hi = overhead.loc[overhead["python_over_c"].idxmin()], overhead.loc[overhead["python_over_c"].idxmax()]
    same = "the same release on both sides" if overhead["same_release"].all() else \
        "not the same release on both sides: the ratios mix the path with the release"
    return (f"{what}: from {fmt_factor_ci(*lo[['python_over_c', 'python_over_c_low', 'python_over_c_high']])} "
            f"({lo['algorithm']} {lo['operation']}) to "
            f"{fmt_factor_ci(*hi[['python_over_c', 'python_over_c_low', 'python_over_c_high']])} "
            f"({hi['algorithm']} {hi['operation']}) over {len(overhead)} operations, {same}; the shortest "
            f"operations pay most, as a fixed cost per call of about {fmt_time_ns(overhead['overhead_ns'].median())} "
            "(the median difference) would make them.")


def sizes(runs: Sequence) -> pd.DataFrame:
    """Key, ciphertext and signature bytes per algorithm and implementation, as each counted them from the bytes
    its API gives (a secret key's size depends on its format: a seed or the expanded key)."""
    frames = [r.sizes for r in runs if r.sizes is not None and not r.sizes.empty]
    if not frames:
        return pd.DataFrame()
    df = pd.concat(frames, ignore_index=True)
    keep = ["algorithm", "backend", "public_key_bytes", "secret_key_bytes", "ciphertext_bytes", "signature_bytes",
            "key_encoding"]
    return (df[[c for c in keep if c in df]].rename(columns={"backend": "implementation"})
            .drop_duplicates(["algorithm", "implementation"]).sort_values(["algorithm", "implementation"],
                                                                          ignore_index=True))


def standard_sizes(table: pd.DataFrame) -> pd.DataFrame:
    """Per post-quantum algorithm: the public key, ciphertext and signature bytes that FIPS 203/204/205 fix, and
    whether every implementation measured here gave exactly those (one value each across implementations)."""
    rows = []
    for alg, g in table.groupby("algorithm"):
        if not str(alg).startswith(("ML-", "SLH-")):
            continue
        row = {"algorithm": alg}
        for column in ("public_key_bytes", "ciphertext_bytes", "signature_bytes"):
            values = set(g[column].dropna().astype(int)) if column in g else set()
            row[column] = values.pop() if len(values) == 1 else None
            row[f"{column.removesuffix('_bytes')}_agrees"] = len(set(g[column].dropna())) <= 1
        row["all_agree"] = all(row.pop(f"{c}_agrees") for c in ("public_key", "ciphertext", "signature"))
        rows.append(row)
    return pd.DataFrame(rows)


def api_table(checks: Checks, runs: Sequence) -> pd.DataFrame:
    """What each implementation's API lets a caller do, read from the programs and adapters: which operations take
    the caller's randomness (what known-answer tests and reproducible keys need), and the secret key it hands out
    (a seed or the expanded key), per algorithm."""
    if checks.api is None or checks.api.empty:
        return pd.DataFrame()
    held = sizes(runs)
    formats = {} if held.empty else {(r["implementation"], r["algorithm"]): (r["secret_key_bytes"], r["key_encoding"])
                                     for _, r in held.iterrows()}
    rows = [dict(r, secret_key_bytes=formats.get((r["implementation"], r["algorithm"]), (None, ""))[0],
                 secret_key_format=formats.get((r["implementation"], r["algorithm"]), (None, ""))[1])
            for r in checks.api.to_dict("records")]
    return pd.DataFrame(rows).sort_values(["algorithm", "implementation"], ignore_index=True)


def implementations_table(runs: Sequence) -> pd.DataFrame:
    """Who ran: one row per implementation of `runs`, with its language, the timed loop's language, its release,
    build options, the toolchain, provenance and (for a program of native/impls) how long its build took."""
    rows = []
    for run in runs:
        for name, about in run.meta.get("implementations_programs", {}).items():
            for i in about["implementations"]:
                language, loop = language_of(i["implementation"])
                rows.append({"implementation": i["implementation"], "language": language or impls.program(name).language,
                             "timed_in": loop or impls.program(name).language, "release": i["version"],
                             "options": i.get("options", ""), "toolchain": about["toolchain"],
                             "provenance": i.get("provenance", ""),
                             "build_seconds": about["build"].get("seconds")})
        measured = run.measurements
        if "implementations_programs" in run.meta or measured.empty:
            continue
        for backend, group in measured.groupby("backend"):
            record = find(backend)
            rows.append({"implementation": backend, "language": record.language if record else "",
                         "timed_in": record.caller if record else "Python",
                         "release": group["implementation"].iloc[0], "options": group["build"].iloc[0] or "",
                         "toolchain": "CPython " + run.meta.get("python", {}).get("version", "")
                         if isinstance(run.meta.get("python"), dict) else "",
                         "provenance": "https://pypi.org/project/" + (record.packages[0] if record and
                                                                      record.packages else backend),
                         "build_seconds": None})
    return pd.DataFrame(rows)


def not_measured(runs: Sequence, checks: Checks) -> pd.DataFrame:
    """What is not in the tables and why: programs that could not build or run here, implementations a cross-check
    removed or that stopped answering, items left out by the parameters, and rounds lost to a crash.  (An
    implementation that only failed vectors is timed: its rows say so.)"""
    rows = [{"what": what, "why": why} for run in runs for what, why in run.meta.get("not_measured", {}).items()]
    rows += [{"what": k, "why": v} for k, v in checks.excluded.items()
             if not any(r["what"] == k for r in rows)]
    rows += [{"what": f"{x['implementation']}/{x['algorithm']} round {x['round']}", "why": x["why"]}
             for run in runs for x in run.meta.get("lost", [])]
    return pd.DataFrame(rows, columns=["what", "why"])


# --------------------------------------------------------------------------- prose


def describe_checks(checks: Checks) -> str:
    """The cross-checks in one paragraph, from the rows, and who the checks left out of the timing (a
    disagreement or a crash) or marked (failed vectors: timed anyway).  What the vectors covered is counted per
    timed row after the timing (:func:`describe_conformance`), from the runs' records."""
    cross = checks.cross
    if cross.empty:
        return "No cross-check ran: no algorithm has an implementation here."
    apis = sorted(set(cross["owner"]) | set(cross["peer"]))
    text = (f"{int(cross['passed'].sum())} of {len(cross)} cross-checks passed, over {cross['algorithm'].nunique()} "
            f"algorithms among {len(apis)} APIs (a program's implementation or a pqlab backend; APIs that run "
            "the same code are counted once after the timing).")
    if checks.kats_missing:
        text += f" No known-answer vector ran: {markdown(checks.kats_missing)}."
    else:
        algorithms = list(dict.fromkeys(cross["algorithm"]))
        covered = [a for a in algorithms if a in vectors.FILES]
        text += (f" Wycheproof has known-answer vectors for {', '.join(covered) or 'none of them'}"
                 + (f" and none for {', '.join(a for a in algorithms if a not in covered)}"
                    if len(covered) < len(algorithms) else "") + " (pqlab.checks.vectors.FILES).")
    dropped = checks.excluded
    text += (" Left out of the timing (disagrees with the others, or stopped answering): "
             + "; ".join(f"{markdown(k)} ({markdown(v)})" for k, v in dropped.items()) + "."
             if dropped else " No implementation disagreed with the others or stopped answering: none is left out.")
    bad = checks.nonconforming
    if bad:
        text += (" Failed Wycheproof vectors, and timed anyway with every row marked: "
                 + "; ".join(f"{markdown(k)} ({markdown(v)})" for k, v in bad.items()) + ".")
    return text


def conformance_table(table: pd.DataFrame, runs: Sequence) -> pd.DataFrame:
    """What the known-answer vectors checked for each timed (implementation, algorithm) of :func:`comparison`,
    from the record its run carries: status, vectors run, passed, failed by kind, skipped with the reasons, why
    none ran, the vectors' source."""
    rows = []
    if table.empty:
        return pd.DataFrame(rows)
    for (alg, impl, run_id), _ in table.groupby(["algorithm", "implementation", "run_id"], sort=False):
        r = _record(runs, run_id, alg, impl) or {}
        rows.append({"algorithm": alg, "implementation": impl, "backend": impl,
                     "status": r.get("status", conformance.NOT_CHECKED), "vectors_run": r.get("ran", 0),
                     "passed": r.get("passed", 0), "failed": r.get("failed", 0),
                     "failures": "; ".join(f"{k} ×{n}" for k, n in r.get("failures", {}).items()),
                     "skipped": r.get("skipped", 0),
                     "skip_reasons": "; ".join(f"{k} ×{n}" for k, n in r.get("skip_reasons", {}).items()),
                     "why_none": r.get("why_not", "no record in its run") if not r.get("ran") else "",
                     "verdict": conformance.verdict(r or None),
                     "files": ", ".join(r.get("files", []))})
    return pd.DataFrame(rows).sort_values(["algorithm", "implementation"], ignore_index=True)


def code_bases(table: pd.DataFrame) -> pd.DataFrame:
    """Which timed implementations run the same code, from the releases the runs recorded: an implementation
    whose label names another's id and release ("liboqs 0.13.0 (default build) through liboqs-python ...",
    "cryptography ... (OpenSSL 4.0.3 ...)") runs that code.  One row per implementation: its code base (the first
    implementation of its group, by name) and what it shares (the release as its label names it)."""
    if table.empty:
        return pd.DataFrame(columns=["implementation", "code_base", "shares"])
    labels = table.drop_duplicates(["implementation", "release", "label"])
    names = sorted(set(table["implementation"]))
    parent = {n: n for n in names}

    def root(n):
        while parent[n] != n:
            n = parent[n]
        return n

    shares: dict[str, set] = {n: set() for n in names}
    for _, other in labels.iterrows():
        needle = re.compile(rf"(?<![\w.-]){re.escape(str(other['implementation']))} "
                            rf"{re.escape(str(other['release']))}(?![\w.])", re.IGNORECASE)
        for _, row in labels.iterrows():
            if row["implementation"] == other["implementation"]:
                continue
            found = needle.search(str(row["label"]))
            if found:
                a, b = sorted((root(row["implementation"]), root(other["implementation"])))
                parent[b] = a
                shares[row["implementation"]].add(found.group(0))
                shares[other["implementation"]].add(found.group(0))
    return pd.DataFrame([{"implementation": n, "code_base": root(n), "shares": ", ".join(sorted(shares[n]))}
                         for n in names])


def describe_counts(table: pd.DataFrame) -> str:
    """How many implementations were timed, counted by distinct code: the APIs timed, the code bases they are,
    and which share a release (from :func:`code_bases`)."""
    if table.empty:
        return "No implementation was timed here."
    bases = code_bases(table)
    groups = [g for _, g in bases.groupby("code_base") if len(g) > 1]
    text = (f"{len(bases)} APIs were timed ({', '.join(bases['implementation'])}); they are "
            f"{bases['code_base'].nunique()} distinct code bases")
    if groups:
        text += ": " + "; ".join(f"{' and '.join(g['implementation'])} run the same "
                                 f"{' / '.join(sorted({x for v in g['shares'] for x in v.split(', ') if x}))}"
                                 for g in groups)
    return markdown(text + ".")


def describe_conformance(table: pd.DataFrame, runs: Sequence) -> str:
    """What the known-answer vectors checked, counted from the records of the timed rows: for how many
    (implementation, algorithm) pairs vectors ran, how many passed and failed (by kind) and were skipped; which
    pairs are non-conforming (timed and marked); and for which no vector ran, grouped by the reason."""
    conf = conformance_table(table, runs)
    if conf.empty:
        return "No implementation was timed here."
    ran = conf[conf["vectors_run"] > 0]
    text = f"Wycheproof's vectors ran for {len(ran)} of the {len(conf)} (implementation, algorithm) pairs timed"
    if not ran.empty:
        text += (f": {int(ran['passed'].sum()):,} of {int(ran['vectors_run'].sum()):,} vectors passed, "
                 f"{int(ran['failed'].sum()):,} failed and {int(conf['skipped'].sum()):,} were skipped")
        reasons: dict[str, int] = {}
        for record in (_record(runs, rid, a, i) or {} for a, i, rid in table[["algorithm", "implementation", "run_id"]]
                       .drop_duplicates().itertuples(index=False)):
            for why, n in record.get("skip_reasons", {}).items():
                reasons[why] = reasons.get(why, 0) + n
        if reasons:
            text += " (" + "; ".join(f"{why}: {n:,}" for why, n in reasons.items()) + ")"
    text += "."
    bad = conf[conf["status"] == conformance.NONCONFORMING]
    if not bad.empty:
        text += (" Non-conforming, timed and marked in every table: "
                 + "; ".join(f"{r['implementation']} {r['algorithm']} ({r['verdict']})" for _, r in bad.iterrows())
                 + ".")
    none = conf[conf["vectors_run"] == 0]
    for why, g in none.groupby("why_none", sort=False):
        text += (f" No vector ran for {', '.join(g['implementation'] + ' ' + g['algorithm'])}: {why}.")
    return markdown(text)


def describe_spread(spreads: pd.DataFrame) -> str:
    """Which operation's implementations differ most, from the spread table (non-conforming implementations left
    out of it, and named with what they fail where one is faster than the fastest it names)."""
    if spreads.empty:
        return "No operation was measured in two implementations that are not non-conforming."
    worst = spreads.loc[spreads["slowest_over_fastest"].idxmax()]
    best = spreads.loc[spreads["slowest_over_fastest"].idxmin()]
    ci = ["slowest_over_fastest", "slowest_over_fastest_low", "slowest_over_fastest_high"]
    text = (f"Leaving out non-conforming implementations, the implementations differ most in {worst['algorithm']} "
            f"{worst['operation']}: {worst['slowest']} takes {fmt_factor_ci(*worst[ci])} the time of "
            f"{worst['fastest']} ({fmt_time_ns(worst['slowest_ns'])} against {fmt_time_ns(worst['fastest_ns'])}"
            f"{'; ' + worst['caveat'] if worst['caveat'] else ''}). They differ least in {best['algorithm']} "
            f"{best['operation']} ({fmt_factor_ci(*best[ci])}, {best['implementations']} implementations"
            f"{'; ' + best['caveat'] if best['caveat'] else ''}).")
    others = spreads[spreads["caveat"].str.contains("non-conforming") & ~spreads.index.isin([worst.name, best.name])]
    for _, r in others.iterrows():
        text += (f" In {r['algorithm']} {r['operation']} the fastest implementation that is not non-conforming is "
                 f"{r['fastest']} ({fmt_time_ns(r['fastest_ns'])}); {r['caveat']}.")
    return markdown(text)


def _named(row) -> str:
    """An implementation of a ratio row, with "non-conforming" where either side's record says so."""
    sides = [side for side, column in (("its post-quantum side", "status"), ("its baseline", "baseline_status"))
             if row.get(column) == conformance.NONCONFORMING]
    return row["implementation"] + (f"; non-conforming: {' and '.join(sides)}" if sides else "")


def describe_ratios(ratios: pd.DataFrame) -> str:
    """Does a headline post-quantum / classical ratio hold whichever library you ship?  The range over
    implementations of each (algorithm, baseline, operation), from the table."""
    if ratios.empty:
        return "No implementation has both a post-quantum algorithm and its classical baseline."
    parts = []
    for (pq, classical, op), g in ratios.groupby(["algorithm", "baseline", "operation"], sort=False):
        if len(g) < 2:
            continue
        lo, hi = g.loc[g["ratio"].idxmin()], g.loc[g["ratio"].idxmax()]
        side = ("faster" if hi["ratio"] < 1 else "slower" if lo["ratio"] > 1 else "on either side")
        parts.append(f"{pq} {op} over {classical} {op} ranges from {fmt_factor(lo['ratio'])} ({_named(lo)}) "
                     f"to {fmt_factor(hi['ratio'])} ({_named(hi)}) over {len(g)} implementations: "
                     f"{'the post-quantum operation is ' + side if side != 'on either side' else 'the answer depends on the library'}")
    return ("; ".join(parts) + ".") if parts else "Each ratio has only one implementation here."


# --------------------------------------------------------------------------- figures


@plotting.styled
def plot_dots(table: pd.DataFrame, algorithms: Sequence[str], width: float = plotting.COLUMN_WIDTH):
    """One panel per algorithm, one line per implementation (fastest first, by the algorithm's first operation):
    each operation's median as a dot with its interval (log time)."""
    import matplotlib.pyplot as plt

    algorithms = [a for a in algorithms if (table["algorithm"] == a).any()]
    operations = list(dict.fromkeys(op for ops in KIND_OPERATIONS.values() for op in ops
                                    if (table["operation"] == op).any()))
    styles = plotting.marker_map(operations)
    heights = [0.13 * table.loc[table["algorithm"] == a, "implementation"].nunique() + 0.45 for a in algorithms]
    fig, axes = plt.subplots(len(algorithms), 1, figsize=(width, sum(heights) + 0.5), squeeze=False,
                             gridspec_kw={"height_ratios": heights})
    for ax, alg in zip(axes[:, 0], algorithms):
        mine = table[table["algorithm"] == alg]
        first = mine[mine["operation"] == mine["operation"].iloc[0]].sort_values("median_ns")
        names = list(dict.fromkeys(list(first["implementation"]) + sorted(mine["implementation"].unique())))
        bad = set(mine.loc[mine["status"] == conformance.NONCONFORMING, "implementation"]) if "status" in mine \
            else set()
        for _, r in mine.iterrows():
            x, y = r["median_ns"] / 1e3, names.index(r["implementation"])
            err = None
            if math.isfinite(r["ci_low_ns"]) and math.isfinite(r["ci_high_ns"]):
                err = [[x - r["ci_low_ns"] / 1e3], [r["ci_high_ns"] / 1e3 - x]]
            color, marker = styles[r["operation"]]
            ax.errorbar([x], [y], xerr=err, fmt=marker, ms=3, lw=0.8, color=color)
        ax.set_yticks(range(len(names)), [f"{n} (non-conforming)" if n in bad else n for n in names])
        ax.set_ylim(len(names) - 0.5, -0.5)
        ax.set_xscale("log")
        ax.set_title(alg)
    axes[-1, 0].set_xlabel("time per call (µs, log scale)")
    handles = [plt.Line2D([], [], marker=styles[op][1], ls="", color=styles[op][0]) for op in operations]
    plotting.figure_legend(fig, (handles, operations), max_cols=3)
    return fig


# --------------------------------------------------------------------------- the closing note


def numbers(table: pd.DataFrame, checks: Checks, focus: Sequence[str], runs: Sequence = ()) -> dict:
    """The numbers the closing note and a paper quote, counted from the checks and the runs' records: the
    cross-checks passed; the (implementation, algorithm) pairs timed, with vectors run, non-conforming (timed and
    marked) and with no vector; the vectors run and passed over them; the APIs timed and the distinct code bases
    they are (and which share a release); per focus algorithm, how many implementations were timed, how many are
    non-conforming, and the slowest over the fastest median of each operation among the others."""
    conf = conformance_table(table, runs)
    ran = conf[conf["vectors_run"] > 0] if not conf.empty else conf
    bases = code_bases(table)
    shared = [g for _, g in bases.groupby("code_base") if len(g) > 1]
    out = {"cross_checks_passed": int(checks.cross["passed"].sum()), "cross_checks": len(checks.cross),
           "implementations_left_out": len(checks.excluded), "pairs_timed": len(conf),
           "pairs_with_vectors": len(ran), "pairs_without_vectors": len(conf) - len(ran),
           "pairs_nonconforming": int((conf["status"] == conformance.NONCONFORMING).sum()) if not conf.empty else 0,
           "vectors_run": int(ran["vectors_run"].sum()) if not ran.empty else 0,
           "vectors_passed": int(ran["passed"].sum()) if not ran.empty else 0,
           "apis_timed": len(bases), "code_bases_timed": int(bases["code_base"].nunique()),
           "shared_code": "; ".join(f"{' and '.join(g['implementation'])} run "
                                    f"{' / '.join(sorted({x for v in g['shares'] for x in v.split(', ') if x}))}"
                                    for g in shared) or "none"}
    for alg in focus:
        mine = table[table["algorithm"] == alg] if not table.empty else table
        key = alg.replace("-", "_").lower()
        out[f"{key}_implementations"] = int(mine["implementation"].nunique()) if not mine.empty else 0
        out[f"{key}_nonconforming"] = (int(mine.loc[mine["status"] == conformance.NONCONFORMING, "implementation"]
                                           .nunique()) if not mine.empty else 0)
        for op, g in (mine.groupby("operation") if not mine.empty else []):
            g = _eligible(g)
            out[f"{key}_{op}_spread"] = float(g["median_ns"].max() / g["median_ns"].min()) if len(g) > 1 else None
    return out


def closing_note(table: pd.DataFrame, checks: Checks, ratios: pd.DataFrame, focus: Sequence[str],
                 runs: Sequence = ()) -> str:
    """What this run found, from the data: who was timed for each focus algorithm (and which of them is
    non-conforming), the fastest per operation that is not non-conforming, with every caveat (a faster
    non-conforming implementation and what it fails; a fastest whose conformance was not checked), what the
    vectors covered, the code bases, who was left out and why, and how far the post-quantum / classical ratios move
    with the library."""
    lines = []
    for alg in focus:
        mine = table[table["algorithm"] == alg] if not table.empty else table
        if mine.empty:
            lines.append(f"* **{alg}**: no implementation was timed here.")
            continue
        names = sorted(mine["implementation"].unique())
        bad = sorted(mine.loc[mine["status"] == conformance.NONCONFORMING, "implementation"].unique())
        claims = [f"{op}: {fastest_text(g, runs)}" for op, g in mine.groupby("operation", sort=False)]
        lines.append(f"* **{alg}**: " + markdown(f"{len(names)} implementations timed ({', '.join(names)})"
                                                  + (f", of which non-conforming (timed and marked): {', '.join(bad)}"
                                                     if bad else "") + "; " + "; ".join(claims) + "."))
    lines.append(f"* **What the vectors checked**: {describe_conformance(table, runs)}")
    lines.append(f"* **What was timed**: {describe_counts(table)}")
    dropped = checks.excluded
    lines.append("* **Left out by the checks** (disagreed with the others, or stopped answering): "
                 + ("; ".join(f"{markdown(k)}: {markdown(v)}" for k, v in dropped.items()) if dropped else "none")
                 + ".")
    lines.append(f"* **The post-quantum / classical ratio and the library**: {describe_ratios(ratios)}")
    return "\n".join(lines)
