"""The sentences of notebook 08, each stating numbers from the data: the cross-checks and vectors, the
"fastest" claims with their caveats, what was timed counted by distinct code, the spread between
implementations, the post-quantum / classical ratios across libraries, the overhead of a path from Python, and
the closing note with the numbers a paper quotes (:func:`numbers`).
"""
from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from pqlab.checks import conformance, vectors
from pqlab.core.formatting import fmt_factor_ci, fmt_time_ns, markdown, not_resolved_text, resolved
from pqlab.core.quoted import Quoted
from pqlab.studies.implementations.figures import figure_contents
from pqlab.studies.implementations.measuring import Checks
from pqlab.studies.implementations.pairing import (
    RATIO_STATISTIC,
    TIME_INTERVAL,
    finite,
    fmt_time_ci,
    row_time,
    ties,
)
from pqlab.studies.implementations.tables import (
    _eligible,
    _record,
    code_bases,
    conformance_table,
    fastest_claims,
    spread,
    work_notes,
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
    """The "fastest" claim of one algorithm and operation in words (:func:`fastest_claims`), every time with
    its interval: "fastest conforming X (t [lo, hi])" where X passed its vectors and no other interval
    overlaps its own; "X and Y tie for fastest (intervals overlap: ...)" where they do; "not checked against
    known answers: why" where no vector could run for it; every faster non-conforming implementation with what
    it fails; and what the timed calls compared do differently where their options say so (a key check
    skipped, work kept from outside the timed region)."""
    best, caveat = fastest_claims(group, runs)
    if best is None:
        return f"no implementation that is not non-conforming ({caveat})"
    conforms = best["status"] == conformance.CONFORMS
    tied = ties(_eligible(group), best)
    if tied.empty:
        text = (f"fastest {'conforming ' if conforms else ''}{best['implementation']} ({row_time(best)}"
                + (f"; {caveat}" if caveat else ""))
    else:
        rows = [best] + [r for _, r in tied.iterrows()]
        unchecked = [r["implementation"] for r in rows[1:] if r["status"] == conformance.NOT_CHECKED]
        text = (f"{' and '.join(r['implementation'] for r in rows)} tie for fastest (intervals overlap: "
                + ", ".join(f"{r['implementation']} {row_time(r)}" for r in rows)
                + (f"; {caveat}" if caveat else "")
                + (f"; {', '.join(unchecked)} not checked against known answers" if unchecked else ""))
    work = work_notes(_eligible(group))
    return text + (f"; the calls compared do different work: {work}" if work else "") + ")"


def _added(r) -> str:
    """The time a path adds (a row of :func:`binding_overhead`), signed, with its interval."""
    value = r["overhead_ns"]
    if not finite(value):
        return "no difference measured"
    if finite(r["overhead_low_ns"], r["overhead_high_ns"]):
        if not resolved(r["overhead_low_ns"], r["overhead_high_ns"]):
            return f"+{fmt_time_ns(value)}: {not_resolved_text()}"
        return "+" + fmt_time_ci(value, r["overhead_low_ns"], r["overhead_high_ns"])
    sign = "+" if value > 0 else "-"
    return (f"{sign}{fmt_time_ns(abs(value))} (no interval: the difference is not above zero in every round, "
            "or the rounds are too few)")


def describe_overhead(overhead: pd.DataFrame, what: str) -> str:
    """What a path from Python adds, operation by operation (a :func:`binding_overhead` table; `what`: the two
    sides, for the reader): each operation's ratio and added time with their intervals, largest first; whether
    one fixed cost per call fits them (the added times' intervals overlap) or not; and the release and the
    build each side ran, from the runs (a wheel may bundle its own build of the library)."""
    if overhead.empty:
        return f"No operation was measured on both sides of {what} here."
    ci = ["python_over_c", "python_over_c_low", "python_over_c_high"]
    rows = overhead.sort_values("overhead_ns", ascending=False)
    per_op = "; ".join(f"{r['algorithm']} {r['operation']} {fmt_factor_ci(*r[ci])}, {_added(r)}"
                       for _, r in rows.iterrows())
    text = (f"{what}, per operation (the Python path's time over the C loop's, then the time it adds, "
            f"largest first): {per_op}.")
    known = rows[[finite(lo, hi) and resolved(lo, hi)
                  for lo, hi in zip(rows["overhead_low_ns"], rows["overhead_high_ns"])]]
    if len(known) > 1:
        big = known.loc[known["overhead_low_ns"].idxmax()]
        small = known.loc[known["overhead_high_ns"].idxmin()]
        if big["overhead_low_ns"] > small["overhead_high_ns"]:
            text += (f" The added time is not one fixed cost per call: {big['algorithm']} {big['operation']} "
                     f"adds {_added(big)}, {small['algorithm']} {small['operation']} {_added(small)}.")
        else:
            text += (" The added times whose intervals resolve them overlap: one fixed cost per call would "
                     "fit them.")
    same = ("the same release on both sides" if overhead["same_release"].all() else
            "not the same release on both sides: the ratios mix the path with the release")
    python_builds, c_builds = set(overhead["python_build"]), set(overhead["c_build"])
    if overhead["same_build"].all():
        built = f"the same build on both sides ({'; '.join(sorted(python_builds))})"
    else:
        built = (f"not the same build: the Python side runs {'; '.join(sorted(python_builds))}, the C loop "
                 f"{'; '.join(sorted(c_builds))}, so each ratio mixes the path with the build")
    return text + f" Both sides: {same}; {built}. Ratios: {RATIO_STATISTIC}."


def _shared(group: pd.DataFrame) -> str:
    """What the implementations of one code base (rows of :func:`code_bases`) share, " / "-separated."""
    return " / ".join(sorted({x for v in group["shares"] for x in v.split(", ") if x}))


def _builds(group: pd.DataFrame, table: pd.DataFrame) -> str:
    """", in different builds (X: its build; ...)" where the implementations of one code base (rows of
    :func:`code_bases`) ran different builds (the table's ``ran_build`` column), else ""."""
    if "ran_build" not in table:
        return ""
    built = {n: sorted(set(table.loc[table["implementation"] == n, "ran_build"]))
             for n in group["implementation"]}
    if len({tuple(b) for b in built.values()}) < 2:
        return ""
    return ", in different builds (" + "; ".join(f"{n}: {', '.join(b)}" for n, b in built.items()) + ")"


def describe_counts(table: pd.DataFrame) -> str:
    """How many implementations were timed, counted by distinct code: the APIs timed, the code bases they are,
    and which share a release (from :func:`code_bases`), and in which build each of those ran where the builds
    differ (the same release compiled apart: a wheel's bundled OpenSSL and pqlab's program's)."""
    if table.empty:
        return "No implementation was timed here."
    bases = code_bases(table)
    groups = [g for _, g in bases.groupby("code_base") if len(g) > 1]
    text = (f"{len(bases)} APIs were timed ({', '.join(bases['implementation'])}); they are "
            f"{bases['code_base'].nunique()} distinct code bases")
    if groups:
        text += ": " + "; ".join(f"{' and '.join(g['implementation'])} run the same {_shared(g)}"
                                 + _builds(g, table) for g in groups)
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


def _times(r, which: str) -> str:
    """The time of the fastest or slowest (`which`) of a :func:`spread` row, with its interval."""
    return fmt_time_ci(r[f"{which}_ns"], r.get(f"{which}_low_ns"), r.get(f"{which}_high_ns"))


def describe_spread(spreads: pd.DataFrame) -> str:
    """Which operation's implementations differ most, from the spread table (non-conforming implementations
    left out of it, and named with what they fail where one is faster than the fastest it names), every
    factor and time with its interval, what the timed calls compared do differently where their options say
    so, and the statistic the factors are."""
    if spreads.empty:
        return "No operation was measured in two implementations that are not non-conforming."
    ci = ["slowest_over_fastest", "slowest_over_fastest_low", "slowest_over_fastest_high"]
    known = spreads[[resolved(lo, hi) for lo, hi in zip(spreads[ci[1]], spreads[ci[2]])]]
    pool = known if not known.empty else spreads
    worst = pool.loc[pool["slowest_over_fastest"].idxmax()]
    best = pool.loc[pool["slowest_over_fastest"].idxmin()]

    def notes(r) -> str:
        return "".join(f"; {x}" for x in (r.get("different_work") and
                                          f"the calls compared do different work: {r['different_work']}",
                                          r["caveat"]) if x)

    text = (f"Leaving out non-conforming implementations, the implementations differ most in "
            f"{worst['algorithm']} {worst['operation']}: {worst['slowest']}'s time over {worst['fastest']}'s "
            f"is {fmt_factor_ci(*worst[ci])} ({_times(worst, 'slowest')} against {_times(worst, 'fastest')}"
            f"{notes(worst)}). They differ least in {best['algorithm']} {best['operation']}: "
            f"{best['slowest']}'s time over {best['fastest']}'s is {fmt_factor_ci(*best[ci])} "
            f"({best['implementations']} implementations{notes(best)}). Each factor: {RATIO_STATISTIC}.")
    vague = spreads[~spreads.index.isin(known.index)]
    if len(vague) and len(known):
        text += (f" Left out of most and least, their factor {not_resolved_text()}: "
                 f"{', '.join(vague['algorithm'] + ' ' + vague['operation'])}.")
    others = spreads[spreads["caveat"].str.contains("non-conforming")
                     & ~spreads.index.isin([worst.name, best.name])]
    for _, r in others.iterrows():
        text += (f" In {r['algorithm']} {r['operation']} the fastest implementation that is not "
                 f"non-conforming is {r['fastest']} ({_times(r, 'fastest')}); {r['caveat']}.")
    return markdown(text)


def _named(row) -> str:
    """An implementation of a ratio row with both sides' releases (``pair``: an implementation may pair
    packages of two projects), and "non-conforming" where either side's record says so."""
    sides = [side for side, column in (("its post-quantum side", "status"),
                                       ("its baseline", "baseline_status"))
             if row.get(column) == conformance.NONCONFORMING]
    pair = row.get("pair") or row["implementation"]
    return pair + (f"; non-conforming: {' and '.join(sides)}" if sides else "")


def _side(g: pd.DataFrame) -> str:
    """Where the ratios of one (algorithm, baseline, operation) lie, from their intervals (the ratio itself
    where a row has none)."""
    low = g["ratio_low"].where(g["ratio_low"].notna(), g["ratio"])
    high = g["ratio_high"].where(g["ratio_high"].notna(), g["ratio"])
    slower, faster = int((low > 1).sum()), int((high < 1).sum())
    either = len(g) - slower - faster
    rest = f", and its interval holds both answers in the other {either}" if either else ""
    if slower and faster:
        return (f"the answer depends on the library (the post-quantum operation is slower in {slower}, "
                f"faster in {faster}" + (f", either in {either}" if either else "") + f" of {len(g)})")
    if slower:
        return f"the post-quantum operation is slower in {slower} of {len(g)} implementations{rest}"
    if faster:
        return f"the post-quantum operation is faster in {faster} of {len(g)} implementations{rest}"
    return "in every implementation the interval holds both answers"


def describe_ratios(ratios: pd.DataFrame) -> str:
    """Does a headline post-quantum / classical ratio hold whichever library you ship?  The range over
    implementations of each (algorithm, baseline, operation), from the table: each end with its interval and
    both sides' releases, where the ratios lie (from their intervals), what the timed calls do differently
    where their options say so, and the statistic."""
    if ratios.empty:
        return "No implementation has both a post-quantum algorithm and its classical baseline."
    parts = []
    ci = ["ratio", "ratio_low", "ratio_high"]
    for (pq, classical, op), g in ratios.groupby(["algorithm", "baseline", "operation"], sort=False):
        if len(g) < 2:
            continue
        known = g[[resolved(a, b) for a, b in zip(g["ratio_low"], g["ratio_high"])]]
        pool = known if not known.empty else g
        lo, hi = pool.loc[pool["ratio"].idxmin()], pool.loc[pool["ratio"].idxmax()]
        vague = g[~g.index.isin(known.index)] if not known.empty else g.iloc[:0]
        work = ("; ".join(f"{r['implementation']}: {r['work']}" for _, r in g.iterrows() if r.get("work"))
                if "work" in g else "")
        parts.append(f"{pq} {op} over {classical} {op} ranges from {fmt_factor_ci(*lo[ci])} ({_named(lo)}) "
                     f"to {fmt_factor_ci(*hi[ci])} ({_named(hi)}) over {len(pool)} implementations"
                     + (f" whose interval resolves it (not resolved: {', '.join(vague['implementation'])})"
                        if len(vague) else "")
                     + f": {_side(g)}" + (f" (different work: {work})" if work else ""))
    return ("; ".join(parts) + f". Each ratio: {RATIO_STATISTIC}.") if parts else \
        "Each ratio has only one implementation here."


def numbers(table: pd.DataFrame, checks: Checks, focus: Sequence[str], runs: Sequence = ()) -> dict:
    """The numbers the closing note and a paper quote, counted from the checks and the runs' records: the
    cross-checks passed; the (implementation, algorithm) pairs timed, with vectors run, non-conforming (timed
    and marked) and with no vector; the vectors run and passed over them; the APIs timed and the distinct code
    bases they are (and which share a release, and in which builds); per focus algorithm, how many
    implementations were timed, how many are non-conforming, and the slowest over the fastest of each
    operation among the others, with its interval, statistic and caveats (a
    :class:`pqlab.core.quoted.Quoted`: the same value :func:`spread` gives the notebook; ``ratio_statistic``
    also says what it is); what the figure shows and leaves out (``figure_shown``, ``figure_left_out``, with
    why) and what its whiskers are (``time_interval``).  `runs`: the runs of `table` (without them no spread
    is given)."""
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
                                    + _builds(g, table) for g in shared) or "none",
           "ratio_statistic": RATIO_STATISTIC, "time_interval": TIME_INTERVAL}
    shown, left_out = figure_contents(table, runs, checks, focus)
    out["figure_shown"] = "; ".join(f"{alg}: {', '.join(names)}" for alg, names in shown.items()) or "nothing"
    out["figure_left_out"] = "; ".join(f"{what} ({why})" for what, why in left_out.items()) or "none"
    spreads = (spread(table, runs).set_index(["algorithm", "operation"]) if runs and not table.empty
               else pd.DataFrame())
    for alg in focus:
        mine = table[table["algorithm"] == alg] if not table.empty else table
        key = alg.replace("-", "_").lower()
        out[f"{key}_implementations"] = int(mine["implementation"].nunique()) if not mine.empty else 0
        out[f"{key}_nonconforming"] = (int(mine.loc[mine["status"] == conformance.NONCONFORMING,
                                                    "implementation"].nunique()) if not mine.empty else 0)
        for op in (mine["operation"].unique() if not mine.empty else []):
            row = spreads.loc[(alg, op)] if (alg, op) in spreads.index else None
            out[f"{key}_{op}_spread"] = None if row is None else Quoted(
                float(row["slowest_over_fastest"]), float(row["slowest_over_fastest_low"]),
                float(row["slowest_over_fastest_high"]), "×", RATIO_STATISTIC,
                tuple(str(row[c]) for c in ("caveat", "different_work")
                      if isinstance(row.get(c), str) and row[c]))
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
