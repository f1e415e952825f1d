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
from pqlab.core.formatting import fmt_time_ns
from pqlab.core.schema import KIND_OPERATIONS
from pqlab.core.vocabulary import find
from pqlab.measure.stats import ratio_ci
from pqlab.runners import impls
from pqlab.studies.implementations.measuring import Checks

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
    failure kinds) and the ``flags`` a table turns into marks.  A non-conforming implementation keeps its
    rows."""
    rows = []
    for run in runs:
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
    """The fastest row of one algorithm and operation (`group`: rows of :func:`comparison`) that a claim may
    name (not non-conforming), and the caveat that goes with it: that its conformance was not checked (and
    why), and each non-conforming implementation that is faster, with its time and what it fails.  (None,
    caveat) when every row is non-conforming: then the caveat names them all."""
    ok = _eligible(group)
    best = ok.loc[ok["median_ns"].idxmin()] if not ok.empty else None
    notes = []
    if best is not None and best["status"] == conformance.NOT_CHECKED:
        notes.append("not checked against known answers: "
                     f"{_verdict(runs, best).removeprefix('not checked: ')}")
    faster = group[group["status"] == conformance.NONCONFORMING]
    if best is not None:
        faster = faster[faster["median_ns"] < best["median_ns"]]
    for _, r in faster.sort_values("median_ns").iterrows():
        notes.append(f"{r['implementation']} {'is faster' if best is not None else 'was timed'} "
                     f"({fmt_time_ns(r['median_ns'])}) but is non-conforming: it {_verdict(runs, r)} "
                     "of Wycheproof's vectors")
    return best, "; ".join(notes)


def _values(runs: Sequence, run_id: str, algorithm: str, operation: str, implementation: str):
    run = next(r for r in runs if r.run_id == run_id)
    return run.sample_values(algorithm, operation, backend=implementation)


def spread(table: pd.DataFrame, runs: Sequence) -> pd.DataFrame:
    """Per algorithm and operation: the fastest and the slowest implementation that is not non-conforming,
    with each one's conformance, slowest / fastest with its interval (paired by round where both ran in one
    run, else each side's rounds combined), and the non-conforming implementations faster than that fastest
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
    """Per implementation that has both: each post-quantum algorithm's operation over its classical baseline's
    same operation (:data:`BASELINES`), with its interval over rounds (paired: both in the same run)."""
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
                             "algorithm": pq, "baseline": classical, "operation": op, "ratio": value,
                             "ratio_low": low, "ratio_high": high, "status": a["status"],
                             "conformance": a["conformance"],
                             "baseline_status": b["status"], "baseline_conformance": b["conformance"]})
    return pd.DataFrame(rows)


def binding_overhead(table: pd.DataFrame, runs: Sequence, python: str = "cryptography",
                     native: str = "openssl") -> pd.DataFrame:
    """What a path from Python costs, row by row: each operation that both `python` (``cryptography``, timed
    by pqlab's harness) and `native` (OpenSSL's EVP API timed in a C loop) measured, the first over the second
    with its interval, and whether both ran the same release (the native side's release named in the Python
    side's label). ``python="liboqs-python", native="liboqs"`` gives liboqs through its binding over pqlab's
    lean C loop."""
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
