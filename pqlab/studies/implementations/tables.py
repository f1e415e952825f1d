"""The tables of notebook 08, from the runs: :func:`comparison` is the tidy table (one row per algorithm,
operation and implementation, with its interval and conformance), :func:`spread` the fastest over the slowest,
:func:`pq_over_classical` the post-quantum / classical ratio per implementation, :func:`binding_overhead` what
a path from Python costs, :func:`sizes` the bytes, :func:`implementations_table` who ran in which release and
build, :func:`conformance_table` what the vectors checked for each timed row, :func:`code_bases` which rows
run the same code (one release reached through two paths).  No "fastest" claim names a non-conforming
implementation without saying what it fails (:func:`fastest_claims`).
"""
from __future__ import annotations

import re
from collections.abc import Sequence

import pandas as pd

from pqlab.checks import conformance
from pqlab.core.schema import KIND_OPERATIONS
from pqlab.core.vocabulary import find
from pqlab.measure.stats import ratio_ci
from pqlab.runners import impls
from pqlab.studies.implementations.measuring import Checks
from pqlab.studies.implementations.pairing import (
    RATIO_STATISTIC,
    build_of,
    difference_ci,
    different_work,
    options_of,
    pair_label,
    row_time,
    sure,
    ties,
)

#: Each post-quantum algorithm's classical baseline in :func:`pq_over_classical`, operation by operation.
BASELINES = {"ML-KEM-768": "X25519", "ML-DSA-44": "Ed25519", "ML-DSA-65": "ECDSA-P256",
             "SLH-DSA-SHA2-128f": "Ed25519"}


def language_of(implementation: str) -> tuple[str, str]:
    """(the language doing the work, the language of the timed loop) of an implementation
    (pqlab.core.vocabulary)."""
    record = find(implementation)
    return (record.language, record.caller) if record else ("", "")


def _record(runs: Sequence, run_id: str, algorithm: str, backend: str) -> dict | None:
    """The conformance record the run `run_id` carries for ``algorithm@backend`` (None: the run has none)."""
    run = next((r for r in runs if r.run_id == run_id), None)
    return (conformance.record_for(conformance.records_of([run]), f"{algorithm}@{backend}", "") if run
            else None)


def comparison(runs: Sequence) -> pd.DataFrame:
    """One row per (algorithm, operation, implementation) of `runs`' verified measurements: the release, the
    language and the timed loop's language, the median per call with its interval over rounds, each row's rank
    (1: fastest) among the implementations of that algorithm and operation, and its conformance from the run's
    records (:mod:`pqlab.checks.conformance`): ``status`` (conforms, non-conforming, not checked),
    ``conformance`` (the verdict: vectors passed, or the failures by kind, or why none ran), ``failures`` (the
    failure kinds) and the ``flags`` a table turns into marks; ``ran_build``: the build it ran
    (:func:`~pqlab.studies.implementations.pairing.build_of`), ``work``: what its timed call does that the
    same call elsewhere does not, or skips (from its options: the table of implementations shows them
    whole).  A non-conforming implementation keeps its rows."""
    rows = []
    for run in runs:
        options = options_of([run])
        for _, m in run.verified().iterrows():
            language, loop = language_of(m["backend"])
            record = _record([run], run.run_id, m["algorithm"], m["backend"])
            rows.append({"algorithm": m["algorithm"], "operation": m["operation"],
                         "implementation": m["backend"], "backend": m["backend"],
                         "release": m["library_version"], "label": m["implementation"],
                         "language": language, "timed_in": loop,
                         "median_ns": m["time_ns_median"], "ci_low_ns": m["time_ns_ci_low"],
                         "ci_high_ns": m["time_ns_ci_high"], "rounds": m["rounds"], "run_id": run.run_id,
                         "status": record["status"] if record else conformance.NOT_CHECKED,
                         "failures": "; ".join((record or {}).get("failures", {})),
                         "vectors_run": (record or {}).get("ran", 0),
                         "ran_build": build_of(run, m["backend"], m["library_version"], m.get("build", "")),
                         "work": different_work(options.get(m["backend"], ""), m["algorithm"],
                                                m["operation"])})
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
    """The fastest row of one algorithm and operation (`group`: rows of :func:`comparison`) that a claim may
    name (not non-conforming), and the caveat that goes with it: that its conformance was not checked (and
    why), each non-conforming implementation that is faster, with its time and what it fails, and each row
    whose interval does not resolve its time and reaches below the fastest's median (it cannot be ranked; the
    fastest is picked among the rows whose interval resolves them, where there are any).  (None, caveat) when
    every row is non-conforming: then the caveat names them all."""
    ok = _eligible(group)
    known = ok[sure(ok)] if not ok.empty else ok
    pool = known if not known.empty else ok
    best = pool.loc[pool["median_ns"].idxmin()] if not pool.empty else None
    notes = []
    if best is not None and best["status"] == conformance.NOT_CHECKED:
        notes.append("not checked against known answers: "
                     f"{_verdict(runs, best).removeprefix('not checked: ')}")
    faster = group[group["status"] == conformance.NONCONFORMING]
    if best is not None:
        faster = faster[faster["median_ns"] < best["median_ns"]]
    for _, r in faster.sort_values("median_ns").iterrows():
        notes.append(f"{r['implementation']} {'is faster' if best is not None else 'was timed'} "
                     f"({row_time(r)}) but is non-conforming: it {_verdict(runs, r)} "
                     "of Wycheproof's vectors")
    if best is not None and known.empty:
        notes.append("no implementation's interval resolves its time: none can be ranked")
    elif best is not None:
        vague = ok[~ok.index.isin(known.index) & (ok["ci_low_ns"] < best["median_ns"])]
        notes += [f"{r['implementation']} is not ranked: its interval does not resolve its time "
                  f"({row_time(r)})" for _, r in vague.sort_values("median_ns").iterrows()]
    return best, "; ".join(notes)


def work_notes(group: pd.DataFrame) -> str:
    """What the timed calls of `group` (rows of :func:`comparison`, one algorithm and operation) do
    differently, "implementation: what" per row whose ``work`` says so, "; " joined ("" where all do the same
    work as far as their options say)."""
    if "work" not in group:
        return ""
    return "; ".join(f"{r['implementation']}: {r['work']}" for _, r in group.iterrows() if r["work"])


def tied_with(group: pd.DataFrame, best) -> list[str]:
    """The implementations (not non-conforming) whose interval overlaps that of `best`, the fastest of
    `group`."""
    return list(ties(_eligible(group), best)["implementation"])


def _values(runs: Sequence, run_id: str, algorithm: str, operation: str, implementation: str):
    run = next(r for r in runs if r.run_id == run_id)
    return run.sample_values(algorithm, operation, backend=implementation)


def spread(table: pd.DataFrame, runs: Sequence) -> pd.DataFrame:
    """Per algorithm and operation: the fastest and the slowest implementation that is not non-conforming,
    with each one's time, interval and conformance, those tied with the fastest (intervals overlapping),
    slowest / fastest with its interval and the statistic it is (:data:`RATIO_STATISTIC`), what the timed
    calls compared do differently (``different_work``), and the non-conforming implementations faster than
    that fastest (``caveat``: each with its time and what it fails; they are timed, but no claim of "fastest"
    names them)."""
    rows = []
    for (alg, op), whole in table.groupby(["algorithm", "operation"], sort=False):
        group = _eligible(whole)
        if len(group) < 2:
            continue
        fast, caveat = fastest_claims(whole, runs)  # the fastest a claim names (its interval resolves it)
        slow = group.loc[group["median_ns"].idxmax()]
        value, low, high = ratio_ci(_values(runs, slow["run_id"], alg, op, slow["implementation"]),
                                    _values(runs, fast["run_id"], alg, op, fast["implementation"]))
        rows.append({"algorithm": alg, "operation": op, "implementations": len(group),
                     "nonconforming_left_out": len(whole) - len(group),
                     "fastest": fast["implementation"], "fastest_ns": fast["median_ns"],
                     "fastest_low_ns": fast["ci_low_ns"], "fastest_high_ns": fast["ci_high_ns"],
                     "fastest_conformance": fast["conformance"],
                     "tied_with_fastest": ", ".join(tied_with(whole, fast)),
                     "slowest": slow["implementation"], "slowest_ns": slow["median_ns"],
                     "slowest_low_ns": slow["ci_low_ns"], "slowest_high_ns": slow["ci_high_ns"],
                     "slowest_conformance": slow["conformance"],
                     "slowest_over_fastest": value, "slowest_over_fastest_low": low,
                     "slowest_over_fastest_high": high, "statistic": RATIO_STATISTIC,
                     "different_work": work_notes(group), "caveat": caveat})
    return pd.DataFrame(rows)


def pq_over_classical(table: pd.DataFrame, runs: Sequence, baselines: dict | None = None) -> pd.DataFrame:
    """Per implementation that has both: each post-quantum algorithm's operation over its classical baseline's
    same operation (:data:`BASELINES`), with its interval over rounds (paired: both in the same run), each
    side's release (``release``, ``baseline_release``: an implementation may pair packages of two projects,
    RustCrypto's ml-kem with dalek's x25519-dalek) and both in one label (``pair``)."""
    rows = []
    for pq, classical in (baselines or BASELINES).items():
        for impl in sorted(set(table.loc[table["algorithm"] == pq, "implementation"])):
            for op in KIND_OPERATIONS["kem" if pq.startswith("ML-KEM") else "sig"]:
                a = table[(table["algorithm"] == pq) & (table["implementation"] == impl)
                          & (table["operation"] == op)]
                b = table[(table["algorithm"] == classical) & (table["implementation"] == impl)
                          & (table["operation"] == op)]
                if a.empty or b.empty:
                    continue
                a, b = a.iloc[0], b.iloc[0]
                value, low, high = ratio_ci(_values(runs, a["run_id"], pq, op, impl),
                                            _values(runs, b["run_id"], classical, op, impl))
                rows.append({"implementation": impl, "backend": impl, "release": a["release"],
                             "baseline_release": b["release"],
                             "pair": pair_label(a.get("label", impl), b.get("label", impl)),
                             "algorithm": pq, "baseline": classical, "operation": op, "ratio": value,
                             "ratio_low": low, "ratio_high": high, "statistic": RATIO_STATISTIC,
                             "work": "; ".join(x for x in (a.get("work", ""), b.get("work", "")) if x),
                             "status": a["status"],
                             "conformance": a["conformance"],
                             "baseline_status": b["status"], "baseline_conformance": b["conformance"]})
    return pd.DataFrame(rows)


def binding_overhead(table: pd.DataFrame, runs: Sequence, python: str = "cryptography",
                     native: str = "openssl") -> pd.DataFrame:
    """What a path from Python costs, row by row: each operation that both `python` (``cryptography``, timed
    by pqlab's harness) and `native` (OpenSSL's EVP API timed in a C loop) measured, the first over the second
    with its interval, the time it adds (``overhead_ns``: the difference of the two, with its interval),
    whether both ran the same release (the native side's release named in the Python side's label) and the
    build each side ran (``python_build``, ``c_build``, ``same_build``: a wheel may bundle its own build of
    the library). ``python="liboqs-python", native="liboqs"`` gives liboqs through its binding over pqlab's
    lean C loop."""
    rows = []
    mine = table[table["implementation"] == python]
    for _, a in mine.iterrows():
        b = table[(table["implementation"] == native) & (table["algorithm"] == a["algorithm"])
                  & (table["operation"] == a["operation"])]
        if b.empty:
            continue
        b = b.iloc[0]
        mine_values = _values(runs, a["run_id"], a["algorithm"], a["operation"], python)
        c_values = _values(runs, b["run_id"], a["algorithm"], a["operation"], native)
        value, low, high = ratio_ci(mine_values, c_values)
        added, added_low, added_high = difference_ci(mine_values, c_values)
        rows.append({"algorithm": a["algorithm"], "operation": a["operation"], "python_ns": a["median_ns"],
                     "python_low_ns": a["ci_low_ns"], "python_high_ns": a["ci_high_ns"],
                     "c_loop_ns": b["median_ns"], "c_low_ns": b["ci_low_ns"], "c_high_ns": b["ci_high_ns"],
                     "python_over_c": value, "python_over_c_low": low,
                     "python_over_c_high": high, "overhead_ns": added, "overhead_low_ns": added_low,
                     "overhead_high_ns": added_high,
                     "same_release": str(b["release"]) in str(a["label"]),
                     "python_build": a.get("ran_build", ""), "c_build": b.get("ran_build", ""),
                     "same_build": a.get("ran_build", "") == b.get("ran_build", ""),
                     "python_side": a["label"], "c_side": b["label"],
                     "python_conformance": a["conformance"], "c_conformance": b["conformance"]})
    return pd.DataFrame(rows)


def sizes(runs: Sequence) -> pd.DataFrame:
    """Key, ciphertext and signature bytes per algorithm and implementation, as each counted them from the
    bytes its API gives (a secret key's size depends on its format: a seed or the expanded key)."""
    frames = [r.sizes for r in runs if r.sizes is not None and not r.sizes.empty]
    if not frames:
        return pd.DataFrame()
    df = pd.concat(frames, ignore_index=True)
    keep = ["algorithm", "backend", "public_key_bytes", "secret_key_bytes", "ciphertext_bytes",
            "signature_bytes", "key_encoding"]
    return (df[[c for c in keep if c in df]].rename(columns={"backend": "implementation"})
            .drop_duplicates(["algorithm", "implementation"]).sort_values(["algorithm", "implementation"],
                                                                          ignore_index=True))


def standard_sizes(table: pd.DataFrame) -> pd.DataFrame:
    """Per post-quantum algorithm: the public key, ciphertext and signature bytes that FIPS 203/204/205 fix,
    and whether every implementation measured here gave exactly those (one value each across
    implementations)."""
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
    """What each implementation's API lets a caller do, read from the programs and adapters: which operations
    take the caller's randomness (what known-answer tests and reproducible keys need), and the secret key it
    hands out (a seed or the expanded key), per algorithm."""
    if checks.api is None or checks.api.empty:
        return pd.DataFrame()
    held = sizes(runs)
    formats = {} if held.empty else {(r["implementation"], r["algorithm"]):
                                     (r["secret_key_bytes"], r["key_encoding"]) for _, r in held.iterrows()}
    rows = [dict(r, secret_key_bytes=formats.get((r["implementation"], r["algorithm"]), (None, ""))[0],
                 secret_key_format=formats.get((r["implementation"], r["algorithm"]), (None, ""))[1])
            for r in checks.api.to_dict("records")]
    return pd.DataFrame(rows).sort_values(["algorithm", "implementation"], ignore_index=True)


def implementations_table(runs: Sequence) -> pd.DataFrame:
    """Who ran: one row per implementation of `runs`, with its language, the timed loop's language, its
    release, build options, the toolchain, provenance and (for a program of native/impls) how long its build
    took."""
    rows = []
    for run in runs:
        for name, about in run.meta.get("implementations_programs", {}).items():
            for i in about["implementations"]:
                language, loop = language_of(i["implementation"])
                rows.append({"implementation": i["implementation"],
                             "language": language or impls.program(name).language,
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
    """What is not in the tables and why: programs that could not build or run here, implementations a
    cross-check removed or that stopped answering, items left out by the parameters, and rounds lost to a
    crash.  (An implementation that only failed vectors is timed: its rows say so.)"""
    rows = [{"what": what, "why": why} for run in runs
            for what, why in run.meta.get("not_measured", {}).items()]
    rows += [{"what": k, "why": v} for k, v in checks.excluded.items()
             if not any(r["what"] == k for r in rows)]
    rows += [{"what": f"{x['implementation']}/{x['algorithm']} round {x['round']}", "why": x["why"]}
             for run in runs for x in run.meta.get("lost", [])]
    return pd.DataFrame(rows, columns=["what", "why"])


def conformance_table(table: pd.DataFrame, runs: Sequence) -> pd.DataFrame:
    """What the known-answer vectors checked for each timed (implementation, algorithm) of :func:`comparison`,
    from the record its run carries: status, vectors run, passed, failed by kind, skipped with the reasons,
    why none ran, the vectors' source."""
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
    "cryptography ... (OpenSSL 4.0.3 ...)") runs that code.  One row per implementation: its code base (the
    first implementation of its group, by name) and what it shares (the release as its label names it)."""
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
