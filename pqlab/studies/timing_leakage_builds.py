"""Does the code pqlab benchmarks leak, per compiler?  Notebook 09's screens of pqlab's own liboqs builds,
each built with a named compiler and optimisation level (:mod:`pqlab.core.builds`:
``liboqs-0.13.0+clang19``, ``liboqs-0.9.0+generic+Os``), where published leaks say to look
(``data/reference/09_compiler_leaks.csv``).

Per build and KEM, three independent looks at one decapsulation:

* the **timing screen** (:mod:`pqlab.checks.leakage`, through :func:`pqlab.studies.timing_leakage.run`: the
  liboqs program's target ``KEM-decaps@BUILD``, run in a worker process that loads the build) with its
  **power** measured by injection (:func:`pqlab.studies.timing_leakage.power`);
* the **taint check** (:mod:`pqlab.checks.taint`) of the same build: branches and memory indices on the
  secret key, as valgrind's memcheck sees the instructions this compiler emitted;
* the **divisions** (:mod:`pqlab.checks.disassembly`): the ``div`` instructions reachable from the
  decapsulation's entry point in the build's liboqs.so, which the taint check cannot see (KyberSlash).

:func:`compiler_table` sets them side by side with the build's known-answer checks and the finding each
screen tests, and says from the data whether it reproduces it: a leak the published finding predicts for this
configuration is *reproduced* when the timing screen finds it and the taint check or the divisions show it in
the finding's functions, *seen in the code only* when only they show it (the screen's power then says how
large a leak it would have found), and *not reproduced* when nothing does.  A timing leak while they show
nothing in the finding's functions is *a leak, not in the finding's code*, with what they show elsewhere and
the published finding whose code that is (a clang build's ``poly_frommsg``: Clangover).

    plan(entries, scale) -> [Item]             the screens (each: build, kem, blocks, group = finding, role)
    screen_builds(items, ...) -> (runs, table) every look at every screen, as compiler_table
    divisions(items) / taints(items)           the disassembly and taint looks, one row per build and KEM
    compiler_table(items, table, divs, taint)  one row per implementation, release, compiler, level, operation
    describe_compiler_table(table), save(...)  the sentences; the exported table
"""
from __future__ import annotations

import math
import re
from collections.abc import Sequence

import pandas as pd

from pqlab.checks import conformance, disassembly, leakage
from pqlab.checks import taint as tt
from pqlab.core import builds, formatting
from pqlab.core.errors import BadInput, UnknownName
from pqlab.core.formatting import Column
from pqlab.core.formatting import markdown as m
from pqlab.core.references import load_reference
from pqlab.liboqs.build import LiboqsBuildError, build_key, provide
from pqlab.publish import export
from pqlab.runners import leakage as programs
from pqlab.studies import timing_leakage as tl

REFERENCE = "09_compiler_leaks"
_NS = [Column(c, unit="ns") for c in ("median_ns", "ci_low_ns", "ci_high_ns")]
#: The columns a reader sees of :func:`compiler_table`.
_POWER = Column("power_ns", label="Smallest injected delay found", unit="ns")
COLUMNS = ["implementation", "release", "compiler", "level", "options", "operation", "conformance", "verdict",
           *_NS, _POWER, "taint", "divisions", "finding", "outcome"]
#: The paper's: the looks as counts in the finding's code (the CSV and the notebook have them in words).
PAPER_COLUMNS = ["build", "compiler", Column("algorithm", label="Decapsulation"), "verdict", *_NS, _POWER,
                 Column("branches_there", label="Secret branches in its code"),
                 Column("divs_there", label="div in its code"), "finding", "outcome"]
#: What :func:`compiler_table` says of each screen against its published finding.
REPRODUCED, IN_CODE, NOT_REPRODUCED, AGREES, DISAGREES, OTHER, UNTESTED = (
    "reproduced", "seen in the code only", "not reproduced", "agrees: nothing found", "disagrees",
    "a leak, not in the finding's code",
    "not tested here")
_KEYS = {"build", "kem", "blocks", "group", "role", "classes", "functions"}


def plan(entries: Sequence[dict], scale: float = 1.0) -> list[tl.Item]:
    """The build screens as :func:`pqlab.studies.timing_leakage.plan` items: each entry names a `build`
    (pqlab's own, any compiler and level), a `kem`, its `blocks`, the published finding it tests (`group`, a
    ``source`` of ``data/reference/09_compiler_leaks.csv``), its `role` (``known leak`` where the finding
    says this code leaks, ``fixed`` where it says this configuration does not) and the `functions` the
    finding's code lives in once compiled (``base_mul``, and ``karatsuba`` it is inlined into): what a taint
    finding's innermost frame or a division's function is matched against.  Every build and KEM is checked
    before anything is built or timed."""
    known = set(published()["source"])
    out = []
    for i, raw in enumerate(entries):
        if not isinstance(raw, dict) or not {"build", "kem", "blocks", "group", "role", "functions"} <= set(
                raw) or (set(raw) - _KEYS):
            raise BadInput(f"build screen {i + 1} must have the keys build, kem, blocks, group, role and "
                           f"functions (and optionally classes), not "
                           f"{sorted(raw) if isinstance(raw, dict) else raw!r}")
        if raw["group"] not in known:
            raise BadInput(f"build screen {i + 1}'s group {raw['group']!r} is no finding of "
                           f"data/reference/{REFERENCE}.csv; choose one of {', '.join(sorted(known))}")
        target = f"{raw['kem']}-decaps@{raw['build']}"
        programs.build_target(target)  # refuses an unknown build, or a KEM its release lacks, in one line
        out += tl.plan([{"program": programs.LIBOQS, "target": target,
                         **{k: raw[k] for k in raw if k not in ("build", "kem")}}], scale)
    return out


def published() -> pd.DataFrame:
    """The published compiler-dependent findings (``data/reference/09_compiler_leaks.csv``, provenance in
    ``sources.yaml``); a finding's first row is its headline."""
    return load_reference(REFERENCE)


def _split(item: tl.Item) -> tuple[str, builds.Build]:
    head, _, build = item.target.rpartition("@")
    return head.removesuffix("-decaps"), builds.parse(build)


def entry_symbol(kem: str) -> str:
    """liboqs's exported decapsulation of `kem`: ``OQS_KEM_kyber_768_decaps`` for Kyber768,
    ``OQS_KEM_ml_kem_768_decaps`` for ML-KEM-768 (liboqs's method identifiers)."""
    ident = re.sub(r"([a-z])(\d)", r"\1_\2", kem.lower().replace("-", "_"))
    return f"OQS_KEM_{ident}_decaps"


def divisions(items: Sequence[tl.Item]) -> pd.DataFrame:
    """One row per (build, KEM) of `items`: the ``div`` instructions reachable from the KEM's decapsulation in
    the build's liboqs.so (:func:`pqlab.checks.disassembly.divisions`; ``found``: a list of {function,
    address, instruction}); a build that cannot be installed or read here is a row with the reason."""
    rows = []
    for kem, build in dict.fromkeys(_split(i) for i in items):
        row = {"build": build.id, "kem": kem, "found": [], "reachable": None, "reason": ""}
        try:
            library = provide(build) / "lib" / "liboqs.so"
            found = disassembly.divisions(library, [entry_symbol(kem)])
        except (LiboqsBuildError, BadInput, UnknownName, RuntimeError, OSError) as exc:
            rows.append(row | {"reason": str(exc).splitlines()[0]})
            continue
        rows.append(row | {"found": found["divisions"], "reachable": found["reachable"]})
    return pd.DataFrame(rows)


def taints(items: Sequence[tl.Item]) -> pd.DataFrame:
    """One row per (KEM, build) of `items`: :func:`pqlab.checks.taint.check` of its decapsulation (errors,
    branches, indices and ``found``: memcheck's findings, each with its count and frames), or the reason it
    cannot run here."""
    rows = []
    for kem, build in dict.fromkeys(_split(i) for i in items):
        row = {"algorithm": kem, "build": build.id, "found": [], "errors": None, "reason": ""}
        why = tt.available(build.id)
        if why:
            rows.append(row | {"reason": why})
            continue
        try:
            r = tt.check(kem, kind="kem", build=build.id)
        except (tt.TaintUnavailable, BadInput) as exc:
            rows.append(row | {"reason": str(exc).splitlines()[0]})
            continue
        rows.append(row | {"found": r["findings"], "errors": r["errors"], "branches": r["branches"],
                           "indices": r["indices"], "wall_s": r["wall_s"]})
    return pd.DataFrame(rows)


def conformance_of(items: Sequence[tl.Item]) -> pd.DataFrame:
    """One row per (KEM, build) of `items`: its known-answer and invalid-input checks
    (:func:`pqlab.checks.conformance.table`, each build in a worker that loads it), as ``conformance``: the
    status with the vectors passed, or why there are none."""
    pairs = list(dict.fromkeys(_split(i) for i in items))
    if not pairs:
        return pd.DataFrame(columns=["algorithm", "build", "conformance"])
    df = conformance.table([f"{kem}@{build.id}" for kem, build in pairs])
    text = [f"{r['status']} ({r['passed']} of {r['ran']} vectors passed)" if r["ran"] else
            f"{r['status']}: {r['why_not'] or r['skip_reasons']}" for _, r in df.iterrows()]
    return df.assign(conformance=text)[["algorithm", "build", "conformance"]]


def _compiler(build: builds.Build) -> str:
    """The compiler a build was made with, from its build record (``clang 19.1.7``, ``gcc 12.2.0``)."""
    try:
        said = build_key(build)[1]["compiler"]
    except (LiboqsBuildError, BadInput) as exc:
        return f"({str(exc).splitlines()[0]})"
    name = "clang" if "clang" in said else "gcc" if ("gcc" in said or "GCC" in said) else said.split(":")[0]
    version = re.search(r"(\d+\.\d+\.\d+)", said.split(":", 1)[-1])
    return f"{name} {version[1]}" if version else name


def _where(name: str, functions: Sequence[str]) -> bool:
    """Whether a function name (``pqcrystals_kyber768_ref_poly_tomsg``, ``karatsuba (gf2x.c:133)``) is one
    of `functions` (matched as a name or the end of a name)."""
    name = name.split(" (")[0]
    return any(name == f or name.endswith(f"_{f}") for f in functions)


def _by_place(counts: dict[str, int]) -> str:
    return ", ".join(f"{name} ({n})" for name, n in sorted(counts.items(), key=lambda kv: -kv[1]))


def looks(item: tl.Item, taint_row, div_row) -> dict:
    """What the taint check and the divisions say of `item`'s finding: the secret-dependent branches and
    indices, and the divisions, in the finding's functions (:func:`_where`) and elsewhere, each as
    ``name (count)``; None where that look could not run (its reason in ``taint_reason``/``div_reason``)."""
    out = {"taint_reason": "", "div_reason": "", "branches_there": None, "branches_elsewhere": None,
           "divs_there": None, "divs_elsewhere": None}
    if taint_row is None or taint_row.get("reason"):
        out["taint_reason"] = taint_row["reason"] if taint_row is not None else "not run"
    else:
        there, elsewhere = {}, {}
        for f in taint_row["found"]:
            top = (f["frames"] or ["?"])[0].split(" (")[0]
            side = there if _where(top, item.functions) else elsewhere
            side[top] = side.get(top, 0) + f["count"]
        out.update(branches_there=there, branches_elsewhere=elsewhere)
    if div_row is None or div_row.get("reason"):
        out["div_reason"] = div_row["reason"] if div_row is not None else "not run"
    else:
        there, elsewhere = {}, {}
        for d in div_row["found"]:
            side = there if _where(d["function"], item.functions) else elsewhere
            side[d["function"]] = side.get(d["function"], 0) + 1
        out.update(divs_there=there, divs_elsewhere=elsewhere)
    return out


def _others(seen: dict, ref: pd.DataFrame) -> str:
    """The taint findings and divisions outside the finding's code, each with the published finding whose
    ``function`` names it, where one does (``poly_frommsg``: pqclean-556)."""
    parts = []
    for key, what in (("branches_elsewhere", "secret-dependent branches"), ("divs_elsewhere", "div")):
        for name, n in sorted((seen[key] or {}).items(), key=lambda kv: -kv[1]):
            named = [r["source"] for _, r in ref.iterrows()
                     if _where(name, re.findall(r"[A-Za-z_][A-Za-z0-9_]{3,}", str(r["function"])))]
            parts.append(f"{what} in {name} ({n})" + (f", the code of {', '.join(dict.fromkeys(named))}"
                                                      if named else ""))
    return "; ".join(parts)


def _outcome(role: str, verdict: str, seen: dict, functions: Sequence[str], others: str = ""
             ) -> tuple[str, str]:
    """(outcome, why) of one screen against its finding, from the timing verdict and :func:`looks`; a leak
    the timing screen found while the looks show nothing in the finding's code (and could) is no reproduction
    of it: `others` (:func:`_others`) says what they show elsewhere."""
    where = ", ".join(functions)
    branches, divs = seen["branches_there"], seen["divs_there"]
    code = "; ".join(filter(None, [
        branches and f"memcheck found secret-dependent branches in {_by_place(branches)}",
        divs and f"div instructions reachable from decapsulation in {_by_place(divs)}"]))
    absent = "; ".join(filter(None, [
        branches == {} and f"memcheck found no secret-dependent branch in {where}",
        divs == {} and f"no div is reachable from decapsulation in {where}"]))
    looked = branches is not None and divs is not None
    elsewhere = f"; elsewhere: {others}" if others else ""
    if verdict in (leakage.NOT_SCREENED, leakage.NO_VERDICT, "", None):
        return UNTESTED, f"the timing screen gave {verdict or 'nothing'}" + (f"; {code}" if code else "")
    timing = f"the timing screen said {verdict}"
    if verdict == leakage.LEAK and looked and not code:
        return OTHER, f"{timing}, but {absent}{elsewhere}"
    if role == "known leak":
        if verdict == leakage.LEAK:
            return REPRODUCED, "; ".join(filter(None, [timing, code]))
        if code:
            return IN_CODE, f"{code}; {timing}"
        return NOT_REPRODUCED, "; ".join(filter(None, [timing, absent]))
    if verdict == leakage.LEAK or code:
        return DISAGREES, "; ".join(filter(None, [verdict == leakage.LEAK and timing, code]))
    return AGREES, "; ".join(filter(None, [timing, absent]))


def _total(counts: dict | None) -> float:
    return math.nan if counts is None else float(sum(counts.values()))


def _look_text(there, elsewhere, reason: str, what: str) -> str:
    if reason:
        return f"not checked: {reason}"
    return "; ".join([f"{what} in the finding's code: {_by_place(there) or 'none'}",
                      f"elsewhere: {_by_place(elsewhere) or 'none'}"])


def claim(rows: pd.DataFrame, build_id: str) -> str:
    """What a finding's rows say of the configuration `build_id`: the compiler and level of the row whose
    ``screen`` names that build (else the finding's first row), those that are stated; else the releases it
    says are affected and the one that fixed it."""
    if rows.empty:
        return ""
    named = rows[rows["screen"].fillna("").str.split(";").map(lambda ids: build_id in ids)]
    row = (named if len(named) else rows).iloc[0]
    stated = [str(row[c]) for c in ("compiler", "level") if not str(row[c]).startswith("not stated")]
    return ", ".join(stated) if stated else f"affected: {row['affected']}; fixed in {row['fixed']}"


def compiler_table(items: Sequence[tl.Item], table: pd.DataFrame, divs: pd.DataFrame,
                   taint_table: pd.DataFrame, checks: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per build screen: implementation, release, compiler (from the build's record), level, options,
    operation; the timing verdict with its median difference, interval and power (``power_ns``, from
    `table`: :func:`pqlab.studies.timing_leakage.with_power` of the verdicts); the taint findings and the
    divisions, in the finding's functions and elsewhere; the published finding it tests, what that says of
    this configuration, and the outcome with the reason, from these data; `checks`
    (:func:`conformance_of`): each build's known-answer checks, as ``conformance``."""
    ref = published()
    rows = []
    for item in items:
        kem, build = _split(item)
        mine = table[(table["program"] == item.program) & (table["target"] == item.target)]
        if mine.empty:
            continue
        v = mine.iloc[0]
        t = taint_table[(taint_table["algorithm"] == kem) & (taint_table["build"] == build.id)]
        d = divs[(divs["kem"] == kem) & (divs["build"] == build.id)]
        seen = looks(item, t.iloc[0].to_dict() if len(t) else None, d.iloc[0].to_dict() if len(d) else None)
        c = (checks[(checks["algorithm"] == kem) & (checks["build"] == build.id)] if checks is not None
             else pd.DataFrame())
        outcome, why = _outcome(item.role, v["verdict"], seen, item.functions, _others(seen, ref))
        rows.append({
            "implementation": "liboqs", "release": build.release, "build": build.id,
            "compiler": _compiler(build), "level": builds.level_of(build.id), "options": build.options,
            "algorithm": kem, "operation": f"{kem} decapsulation", "classes": ", ".join(item.classes or []),
            "conformance": c["conformance"].iloc[0] if len(c) else "not checked in this run",
            "checks": c["conformance"].iloc[0].split(" (")[0].split(":")[0] if len(c) else "not checked",
            "verdict": v["verdict"], "median_ns": v.get("median_ns"), "ci_low_ns": v.get("ci_low_ns"),
            "ci_high_ns": v.get("ci_high_ns"), "pair": v.get("largest"), "blocks": v.get("blocks"),
            "power_ns": v.get("power_ns", math.nan), "power": v.get("power", "not measured"),
            "branches_there": _total(seen["branches_there"]), "divs_there": _total(seen["divs_there"]),
            "taint": _look_text(seen["branches_there"], seen["branches_elsewhere"], seen["taint_reason"],
                                "secret-dependent branches and indices"),
            "divisions": _look_text(seen["divs_there"], seen["divs_elsewhere"], seen["div_reason"], "div"),
            "finding": item.group, "role": item.role, "functions": ", ".join(item.functions),
            "published": claim(ref[ref["source"] == item.group], build.id),
            "outcome": outcome, "why": why})
    return pd.DataFrame(rows)


def screen_builds(items: Sequence[tl.Item], *, ladder: Sequence[int], steps: int, runs: int,
                  alpha: float = leakage.ALPHA, warmup_blocks: int = 50, seed: int = 1, progress: bool = True
                  ) -> tuple[list, pd.DataFrame]:
    """Every look at every build screen of `items`: the timing screens (one run), their power by injection
    (another run), the divisions and the taint checks, as :func:`compiler_table`; ``(runs, table)``, both
    empty when `items` is (nothing is built or saved)."""
    if not items:
        return [], pd.DataFrame(columns=[c.name if isinstance(c, Column) else c for c in COLUMNS])
    run, screens = tl.run(items, alpha=alpha, warmup_blocks=warmup_blocks, seed=seed, progress=progress)
    power_run, rows = tl.power(items, screens, ladder, steps, runs, alpha=alpha, warmup_blocks=warmup_blocks,
                               seed=seed + 1000, progress=progress)
    table = tl.with_power(tl.verdicts(items, screens), tl.power_summary(rows))
    return [run, power_run], compiler_table(items, table, divisions(items), taints(items),
                                            conformance_of(items))


def describe_compiler_table(table: pd.DataFrame) -> str:
    """One bullet per build screen (its finding, what the finding says of this configuration, and the outcome
    with its reason), which published leaks were reproduced here and which were not, then the table
    (:data:`COLUMNS`); one sentence, and no table, when no build was screened."""
    if table.empty:
        return ("No build was screened in this run (the quick profile screens none: each build takes minutes "
                "to compile once; the full profile, `make reproduce`, screens them).")
    lines = []
    for _, r in table.iterrows():
        interval = ("" if pd.isna(r["median_ns"]) else f", median difference {r['median_ns']:.0f} ns "
                    f"\\[{r['ci_low_ns']:.0f}, {r['ci_high_ns']:.0f}\\]")
        says = "the finding says it leaks" if r["role"] == "known leak" else "the finding says it does not"
        said = f"{says}: {m(r['published'])}" if r["published"] else says
        lines.append(f"- **{m(r['build'])}** ({m(r['compiler'])}, -{m(r['level'])}), {m(r['operation'])}, "
                     f"{m(r['finding'])} ({said}): **{r['outcome']}**: {m(r['why'])}{interval}; "
                     f"{m(r['power'])}.")
    by = table.groupby("finding")["outcome"].agg(lambda s: ", ".join(dict.fromkeys(s)))
    summary = "; ".join(f"{m(f)}: {o}" for f, o in by.items())
    shown = formatting.table(table, COLUMNS).to_markdown()
    return "\n".join(lines) + f"\n\nBy finding: {summary}.\n\n{shown}"


def save(table: pd.DataFrame, runs: Sequence) -> list:
    """The table as ``compilers`` (CSV, and a landscape paper table of :data:`PAPER_COLUMNS`); nothing when no
    build was screened (the quick profile), so no empty table is exported."""
    if table.empty:
        return []
    compilers = ", ".join(dict.fromkeys(table["compiler"]))
    return export.save_table(
        table, tl.TOPIC, "compilers", runs=runs, columns=PAPER_COLUMNS, layout="landscape",
        caption=f"Timing screen, taint check and divisions of pqlab's liboqs builds ({compilers}) beside the "
                "published compiler-dependent leak each tests; the power is the smallest injected delay the "
                "screen found")
