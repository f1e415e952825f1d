"""The sentences of notebook 08, each stating numbers from the data: the cross-checks and vectors, the
"fastest" claims with their caveats, what was timed counted by distinct code, the spread between
implementations, the post-quantum / classical ratios across libraries, the overhead of a path from Python, and
the closing note with the numbers a paper quotes (:func:`numbers`).
"""
from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from pqlab.checks import conformance, vectors
from pqlab.core.formatting import fmt_factor, fmt_factor_ci, fmt_time_ns, markdown
from pqlab.studies.implementations.measuring import Checks
from pqlab.studies.implementations.tables import (
    _eligible,
    _record,
    code_bases,
    conformance_table,
    fastest_claims,
)


def describe_checks(checks: Checks) -> str:
    """The cross-checks in one paragraph, from the rows, and who the checks left out of the timing (a
    disagreement or a crash) or marked (failed vectors: timed anyway).  What the vectors covered is counted
    per timed row after the timing (:func:`describe_conformance`), from the runs' records."""
    cross = checks.cross
    if cross.empty:
        return "No cross-check ran: no algorithm has an implementation here."
    apis = sorted(set(cross["owner"]) | set(cross["peer"]))
    text = (f"{int(cross['passed'].sum())} of {len(cross)} cross-checks passed, over "
            f"{cross['algorithm'].nunique()} algorithms among {len(apis)} APIs (a program's implementation "
            "or a pqlab backend; APIs that run the same code are counted once after the timing).")
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
             if dropped else
             " No implementation disagreed with the others or stopped answering: none is left out.")
    bad = checks.nonconforming
    if bad:
        text += (" Failed Wycheproof vectors, and timed anyway with every row marked: "
                 + "; ".join(f"{markdown(k)} ({markdown(v)})" for k, v in bad.items()) + ".")
    return text


def fastest_text(group: pd.DataFrame, runs: Sequence) -> str:
    """The "fastest" claim of one algorithm and operation in words (:func:`fastest_claims`): "fastest
    conforming X (t)" where X passed its vectors, "fastest X (t; not checked against known answers: why)"
    where none could run, and every faster non-conforming implementation with what it fails."""
    best, caveat = fastest_claims(group, runs)
    if best is None:
        return f"no implementation that is not non-conforming ({caveat})"
    conforms = best["status"] == conformance.CONFORMS
    return (f"fastest {'conforming ' if conforms else ''}{best['implementation']} "
            f"({fmt_time_ns(best['median_ns'])}" + (f"; {caveat}" if caveat else "") + ")")


def describe_overhead(overhead: pd.DataFrame, what: str) -> str:
    """The range of a :func:`binding_overhead` table's ratios, in one sentence (`what`: the two sides, for the
    reader)."""
    if overhead.empty:
        return f"No operation was measured on both sides of {what} here."
    lo = overhead.loc[overhead["python_over_c"].idxmin()]
    hi = overhead.loc[overhead["python_over_c"].idxmax()]
    same = "the same release on both sides" if overhead["same_release"].all() else \
        "not the same release on both sides: the ratios mix the path with the release"
    ci = ["python_over_c", "python_over_c_low", "python_over_c_high"]
    return (f"{what}: from {fmt_factor_ci(*lo[ci])} ({lo['algorithm']} {lo['operation']}) to "
            f"{fmt_factor_ci(*hi[ci])} ({hi['algorithm']} {hi['operation']}) over {len(overhead)} "
            f"operations, {same}; the shortest operations pay most, as a fixed cost per call of about "
            f"{fmt_time_ns(overhead['overhead_ns'].median())} (the median difference) would make them.")


def _shared(group: pd.DataFrame) -> str:
    """What the implementations of one code base (rows of :func:`code_bases`) share, " / "-separated."""
    return " / ".join(sorted({x for v in group["shares"] for x in v.split(", ") if x}))


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
        text += ": " + "; ".join(f"{' and '.join(g['implementation'])} run the same {_shared(g)}"
                                 for g in groups)
    return markdown(text + ".")


def describe_conformance(table: pd.DataFrame, runs: Sequence) -> str:
    """What the known-answer vectors checked, counted from the records of the timed rows: for how many
    (implementation, algorithm) pairs vectors ran, how many passed and failed (by kind) and were skipped;
    which pairs are non-conforming (timed and marked); and for which no vector ran, grouped by the reason."""
    conf = conformance_table(table, runs)
    if conf.empty:
        return "No implementation was timed here."
    ran = conf[conf["vectors_run"] > 0]
    text = (f"Wycheproof's vectors ran for {len(ran)} of the {len(conf)} (implementation, algorithm) pairs "
            "timed")
    if not ran.empty:
        text += (f": {int(ran['passed'].sum()):,} of {int(ran['vectors_run'].sum()):,} vectors passed, "
                 f"{int(ran['failed'].sum()):,} failed and {int(conf['skipped'].sum()):,} were skipped")
        reasons: dict[str, int] = {}
        timed = table[["algorithm", "implementation", "run_id"]].drop_duplicates().itertuples(index=False)
        for record in (_record(runs, rid, a, i) or {} for a, i, rid in timed):
            for why, n in record.get("skip_reasons", {}).items():
                reasons[why] = reasons.get(why, 0) + n
        if reasons:
            text += " (" + "; ".join(f"{why}: {n:,}" for why, n in reasons.items()) + ")"
    text += "."
    bad = conf[conf["status"] == conformance.NONCONFORMING]
    if not bad.empty:
        text += (" Non-conforming, timed and marked in every table: "
                 + "; ".join(f"{r['implementation']} {r['algorithm']} ({r['verdict']})"
                             for _, r in bad.iterrows()) + ".")
    none = conf[conf["vectors_run"] == 0]
    for why, g in none.groupby("why_none", sort=False):
        text += (f" No vector ran for {', '.join(g['implementation'] + ' ' + g['algorithm'])}: {why}.")
    return markdown(text)


def describe_spread(spreads: pd.DataFrame) -> str:
    """Which operation's implementations differ most, from the spread table (non-conforming implementations
    left out of it, and named with what they fail where one is faster than the fastest it names)."""
    if spreads.empty:
        return "No operation was measured in two implementations that are not non-conforming."
    worst = spreads.loc[spreads["slowest_over_fastest"].idxmax()]
    best = spreads.loc[spreads["slowest_over_fastest"].idxmin()]
    ci = ["slowest_over_fastest", "slowest_over_fastest_low", "slowest_over_fastest_high"]
    text = (f"Leaving out non-conforming implementations, the implementations differ most in "
            f"{worst['algorithm']} {worst['operation']}: {worst['slowest']} takes "
            f"{fmt_factor_ci(*worst[ci])} the time of {worst['fastest']} "
            f"({fmt_time_ns(worst['slowest_ns'])} against {fmt_time_ns(worst['fastest_ns'])}"
            f"{'; ' + worst['caveat'] if worst['caveat'] else ''}). They differ least in {best['algorithm']} "
            f"{best['operation']} ({fmt_factor_ci(*best[ci])}, {best['implementations']} implementations"
            f"{'; ' + best['caveat'] if best['caveat'] else ''}).")
    others = spreads[spreads["caveat"].str.contains("non-conforming")
                     & ~spreads.index.isin([worst.name, best.name])]
    for _, r in others.iterrows():
        text += (f" In {r['algorithm']} {r['operation']} the fastest implementation that is not "
                 f"non-conforming is {r['fastest']} ({fmt_time_ns(r['fastest_ns'])}); {r['caveat']}.")
    return markdown(text)


def _named(row) -> str:
    """An implementation of a ratio row, with "non-conforming" where either side's record says so."""
    sides = [side for side, column in (("its post-quantum side", "status"),
                                       ("its baseline", "baseline_status"))
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
                     + ("the post-quantum operation is " + side if side != "on either side"
                        else "the answer depends on the library"))
    return ("; ".join(parts) + ".") if parts else "Each ratio has only one implementation here."


def numbers(table: pd.DataFrame, checks: Checks, focus: Sequence[str], runs: Sequence = ()) -> dict:
    """The numbers the closing note and a paper quote, counted from the checks and the runs' records: the
    cross-checks passed; the (implementation, algorithm) pairs timed, with vectors run, non-conforming (timed
    and marked) and with no vector; the vectors run and passed over them; the APIs timed and the distinct code
    bases they are (and which share a release); per focus algorithm, how many implementations were timed, how
    many are non-conforming, and the slowest over the fastest median of each operation among the others."""
    conf = conformance_table(table, runs)
    ran = conf[conf["vectors_run"] > 0] if not conf.empty else conf
    bases = code_bases(table)
    shared = [g for _, g in bases.groupby("code_base") if len(g) > 1]
    out = {"cross_checks_passed": int(checks.cross["passed"].sum()), "cross_checks": len(checks.cross),
           "implementations_left_out": len(checks.excluded), "pairs_timed": len(conf),
           "pairs_with_vectors": len(ran), "pairs_without_vectors": len(conf) - len(ran),
           "pairs_nonconforming": (int((conf["status"] == conformance.NONCONFORMING).sum()) if not conf.empty
                                   else 0),
           "vectors_run": int(ran["vectors_run"].sum()) if not ran.empty else 0,
           "vectors_passed": int(ran["passed"].sum()) if not ran.empty else 0,
           "apis_timed": len(bases), "code_bases_timed": int(bases["code_base"].nunique()),
           "shared_code": "; ".join(f"{' and '.join(g['implementation'])} run {_shared(g)}"
                                    for g in shared) or "none"}
    for alg in focus:
        mine = table[table["algorithm"] == alg] if not table.empty else table
        key = alg.replace("-", "_").lower()
        out[f"{key}_implementations"] = int(mine["implementation"].nunique()) if not mine.empty else 0
        out[f"{key}_nonconforming"] = (int(mine.loc[mine["status"] == conformance.NONCONFORMING,
                                                    "implementation"].nunique()) if not mine.empty else 0)
        for op, g in (mine.groupby("operation") if not mine.empty else []):
            g = _eligible(g)
            out[f"{key}_{op}_spread"] = (float(g["median_ns"].max() / g["median_ns"].min()) if len(g) > 1
                                         else None)
    return out


def closing_note(table: pd.DataFrame, checks: Checks, ratios: pd.DataFrame, focus: Sequence[str],
                 runs: Sequence = ()) -> str:
    """What this run found, from the data: who was timed for each focus algorithm (and which of them is
    non-conforming), the fastest per operation that is not non-conforming, with every caveat (a faster
    non-conforming implementation and what it fails; a fastest whose conformance was not checked), what the
    vectors covered, the code bases, who was left out and why, and how far the post-quantum / classical ratios
    move with the library."""
    lines = []
    for alg in focus:
        mine = table[table["algorithm"] == alg] if not table.empty else table
        if mine.empty:
            lines.append(f"* **{alg}**: no implementation was timed here.")
            continue
        names = sorted(mine["implementation"].unique())
        bad = sorted(mine.loc[mine["status"] == conformance.NONCONFORMING, "implementation"].unique())
        claims = [f"{op}: {fastest_text(g, runs)}" for op, g in mine.groupby("operation", sort=False)]
        lines.append(f"* **{alg}**: " + markdown(
            f"{len(names)} implementations timed ({', '.join(names)})"
            + (f", of which non-conforming (timed and marked): {', '.join(bad)}" if bad else "") + "; "
            + "; ".join(claims) + "."))
    lines.append(f"* **What the vectors checked**: {describe_conformance(table, runs)}")
    lines.append(f"* **What was timed**: {describe_counts(table)}")
    dropped = checks.excluded
    lines.append("* **Left out by the checks** (disagreed with the others, or stopped answering): "
                 + ("; ".join(f"{markdown(k)}: {markdown(v)}" for k, v in dropped.items()) if dropped
                    else "none") + ".")
    lines.append(f"* **The post-quantum / classical ratio and the library**: {describe_ratios(ratios)}")
    return "\n".join(lines)
