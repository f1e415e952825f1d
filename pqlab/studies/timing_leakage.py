"""Does it leak?  The timing-leakage screen of notebook 09 (``09_timing_leakage``), proven on implementations
known to leak.

The screen is :mod:`pqlab.checks.leakage`; the programs that time each implementation in its own runtime are
:mod:`pqlab.runners.leakage`.  This module runs a plan of screens into one run of the results store (a screen
per item, saved as it finishes: an interrupted run keeps the screens done), and turns them into the notebook's
tables, figure and sentences:

* :func:`run` the plan (each item: program, target, blocks, and the group and role it plays);
* :func:`verdicts` one row per screen, :func:`published` the published effect sizes beside ours
  (``data/reference/09_leakage_published.csv``, each row saying what differs), :func:`false_positives` the
  screen's own error rate, :func:`power` each screen's power measured by injection
  (:mod:`pqlab.studies.timing_leakage_power`);
* :func:`plot_quantiles` the class distributions as quantile differences with bootstrap bands
  (:mod:`pqlab.studies.timing_leakage_compare`); :func:`describe_counts` how many screens said what (a screen
  with no verdict counted as such, never as a clean one); :func:`closing_note` what this screen can and
  cannot detect on this machine, from the data;
* :func:`under_load` the evidence for :data:`pqlab.checks.leakage.FREE_CORES`: the false-positive experiment
  and two known leaks under a standard background load (:mod:`pqlab.measure.load`), stated by
  :func:`describe_load_check`.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from pqlab.checks import leakage
from pqlab.checks import taint as tt
from pqlab.core.errors import BadInput, UnknownName, choice
from pqlab.core.formatting import Column
from pqlab.core.formatting import markdown as m
from pqlab.measure import load as loads
from pqlab.runners import leakage as programs
from pqlab.store.recorder import RunRecorder
from pqlab.studies.timing_leakage_compare import (  # noqa: F401 - re-exported: the notebook's names
    EXPECTED_FACTOR,
    QUANTILES,
    beyond_expectation,
    describe_published,
    describe_shapes,
    differences,
    plot_quantiles,
    published,
    quantile_bands,
    ratio_interval,
    shape,
)
from pqlab.studies.timing_leakage_power import (  # noqa: F401 - re-exported: the notebook's names
    POWER_COLUMNS,
    POWER_SHARE,
    describe_controls,
    describe_power,
    halfwidth,
    power,
    power_summary,
    power_text,
    steps,
    with_power,
)

TOPIC = "09_timing_leakage"
ROLES = ("known leak", "fixed", "clean control")
#: The role of the false-positive experiment's screens (one class labelled twice), kept out of the verdicts.
IDENTICAL = "identical classes"
#: Verdicts of a screen that judged; those that say the classes differ (a false alarm on identical classes).
JUDGED = (leakage.LEAK, leakage.UNRESOLVED, leakage.NO_LEAK)
ALARMS = (leakage.LEAK, leakage.UNRESOLVED)
#: Confidence of the false-positive rate's exact interval.
FP_CONFIDENCE = 0.95
_KEYS = {"program", "target", "blocks", "group", "role", "classes", "functions"}
#: one unit across a row's numbers
_NS = [Column(c, unit="ns") for c in ("median_ns", "ci_low_ns", "ci_high_ns")]
#: The columns a reader sees of :func:`verdicts` and of :func:`published`.
#: ``power_ns``: the smallest injected delay the screen found (:mod:`pqlab.studies.timing_leakage_power`).
_POWER = Column("power_ns", label="Smallest injected delay found", unit="ns")
VERDICT_COLUMNS = ["group", "role", "implementation", "version", "target", "verdict", *_NS, _POWER, "blocks",
                   "processes", "wall_s", "others_cores"]
#: The paper table's columns (the page's width): group and release name each screen; the rest is in the
#: notebook and CSV.
PAPER_COLUMNS = ["group", "role", "release", "verdict", *_NS, _POWER, "blocks"]
PUBLISHED_COLUMNS = ["source", "published_release", Column("published_ns", unit="ns"),
                     "published_repetitions", "ours", "verdict", *_NS, "blocks", "ours_over_published",
                     Column("ratio_low", label="Ratio CI low"), Column("ratio_high", label="Ratio CI high"),
                     "differs"]


@dataclass(frozen=True)
class Item:
    """One screen of the plan: which program's target, over how many blocks, in which group (the leak it is
    about) and in which role (a release known to leak, its fixed or constant-time counterpart, or a clean
    control); `functions`: where the leak it is about lives in the code (names a taint finding or a division
    is matched against: :mod:`pqlab.studies.timing_leakage_builds`)."""

    program: str
    target: str
    blocks: int
    group: str
    role: str
    classes: tuple[str, ...] | None = None
    functions: tuple[str, ...] = ()


def plan(items: Sequence[dict], scale: float = 1.0) -> list[Item]:
    """The plan's items, each checked (keys, role, blocks) before anything runs; `scale` multiplies the
    blocks."""
    out = []
    for i, raw in enumerate(items):
        if not isinstance(raw, dict) or not {"program", "target", "blocks", "group", "role"} <= set(raw):
            raise BadInput(f"screen {i + 1} of the plan must name program, target, blocks, group and role: "
                           f"got {raw!r}")
        extra = set(raw) - _KEYS
        if extra:
            raise BadInput(f"screen {i + 1} of the plan has unknown keys {sorted(extra)}: the keys are "
                           f"{sorted(_KEYS)}")
        if raw["role"] not in ROLES:
            raise BadInput(f"screen {i + 1}'s role {raw['role']!r} is not one of {', '.join(ROLES)}")
        blocks = raw["blocks"]
        if not isinstance(blocks, int) or blocks < leakage.MIN_BLOCKS:
            raise BadInput(f"screen {i + 1}'s blocks must be an integer of at least {leakage.MIN_BLOCKS}, "
                           f"not {blocks!r}")
        if raw["program"] not in programs.names():

            raise UnknownName("screen program", raw["program"], programs.names())
        out.append(Item(raw["program"], raw["target"], max(leakage.MIN_BLOCKS, round(blocks * scale)),
                        raw["group"], raw["role"], tuple(raw["classes"]) if raw.get("classes") else None,
                        tuple(raw.get("functions") or ())))
    return out


def plan_table(items: Sequence[Item]) -> pd.DataFrame:
    """The plan as a reader checks it: one row per screen (the false-positive runs as one row with their
    count)."""
    rows = {}
    for i in items:
        key = (i.group, i.role, i.program, i.target, ", ".join(i.classes) if i.classes else "all", i.blocks)
        rows[key] = rows.get(key, 0) + 1
    return pd.DataFrame([dict(zip(("group", "role", "program", "target", "classes", "blocks"), k), screens=n)
                         for k, n in rows.items()])


def identical(program: str, target: str, klass: str, runs: int, blocks: int) -> list[Item]:
    """The false-positive experiment: `runs` screens of `klass` labelled twice (nothing can differ), each with
    its own block order."""
    if not isinstance(runs, int) or runs < 1:
        raise BadInput(f"the false-positive runs must be a positive integer, not {runs!r}")
    item = plan([{"program": program, "target": target, "blocks": blocks, "group": "false positives",
                  "role": "clean control", "classes": [klass, klass]}])[0]
    return [Item(item.program, item.target, item.blocks, item.group, IDENTICAL, item.classes)] * runs


def describe_programs(names: Sequence[str]) -> str:
    """One bullet per screen program: what it runs (implementation and release per target), or why not
    here."""
    lines = []
    for name in names:
        why = programs.why_not(name)
        if why:
            lines.append(f"- **{m(name)}**: not available here: {m(why)}")
            continue
        doc = programs.describe(name)
        found = dict.fromkeys(f"{t['implementation']} {t['version']}" for t in doc["targets"])
        build = doc.get("build", {}).get("seconds")
        lines.append(f"- **{m(name)}** ({m(doc['runtime'])}): {m(', '.join(found))}"
                     + (f"; built in {build:.0f} s" if build is not None else ""))
    return "\n".join(lines)


def _rows(rec: RunRecorder, item: Item, s: leakage.Screen) -> tuple[list[dict], list[dict]]:
    """The screen's measurement rows (one per class against the baseline) and samples (one per timed call)."""
    common = {"backend": item.program, "implementation": s.implementation, "library_version": s.version,
              "algorithm": item.target, "kind": "leak", "operation": s.operation}
    measurements = []
    for _, d in s.differences.iterrows():
        tests = s.tests[s.tests["pair"].isin([d["pair"], "all classes"])]
        measurements.append(rec.row(**common, group=item.group, role=item.role, pair=d["pair"],
                                    verdict=s.verdict, reason=s.reason, median_diff_ns=d["median_ns"],
                                    ci_low_ns=d["ci_low_ns"],
                                    ci_high_ns=d["ci_high_ns"], min_p=float(tests["p"].min()),
                                    bound_ns=s.bound_ns, blocks=s.blocks, rounds=s.processes,
                                    wall_s=s.wall_s, counter=s.counter, alpha=s.alpha, load=s.load,
                                    others_cores=s.others_cores, quiet_s=s.quiet_s, verified=True))
    if s.times is None:
        measurements.append(rec.row(**common, group=item.group, role=item.role, verdict=s.verdict,
                                    reason=s.reason, verified=False))
        return measurements, []
    k = s.times.shape[1]
    samples = pd.DataFrame({"run_id": rec.run_id, "backend": item.program, "algorithm": item.target,
                            "operation": np.tile(s.classes, s.blocks),
                            "sample": np.repeat(np.arange(s.blocks), k), "loops": 1,
                            "time_ns": s.times.reshape(-1)})
    return measurements, samples.to_dict("records")


def run(items: Sequence[Item], *, alpha: float = leakage.ALPHA, warmup_blocks: int = 50, seed: int = 1,
        folder=None, save: bool = True, progress: bool = True, load: str = "none"):
    """Screen every item (in the plan's order), each saved to one run as it finishes: ``(run, screens)``.
    `load`: a standard background load (:mod:`pqlab.measure.load`) that runs during the screens, recorded in
    the run's parameters and label; "none" runs nothing.

    An item whose program cannot run here, or whose class fails its check, is a screen with verdict "not
    screened" and the reason; the others go on."""
    from tqdm.auto import tqdm


    choice(load, "load", tuple(loads.LOADS))  # refused before anything is built or timed
    unavailable = {}
    for item in items:  # every name and class checked before anything is timed
        try:
            leakage.validate(item.program, item.target, item.classes, item.blocks, warmup_blocks, alpha)
        except programs.LeakageRunError as exc:
            unavailable[item] = f"not screened: {str(exc).splitlines()[0]}"
    screens = []
    params = {"plan": [vars(i) for i in items], "alpha": alpha, "warmup_blocks": warmup_blocks, "seed": seed,
              "load": load}
    label = "leakage" if load == "none" else f"leakage-{load}"
    with loads.running(load), RunRecorder(TOPIC, params, label=label, folder=folder, save=save) as rec:
        for n, item in enumerate(tqdm(items, desc="screens", disable=not progress)):
            try:
                if item in unavailable:
                    raise programs.LeakageRunError(unavailable[item])
                s = leakage.screen(item.program, item.target, classes=item.classes, blocks=item.blocks,
                                   warmup_blocks=warmup_blocks, alpha=alpha, seed=seed + n)
            except (programs.LeakageRunError, OSError) as exc:  # a run that fails: the others go on
                s = leakage.Screen(item.program, item.target, list(item.classes or []), leakage.NOT_SCREENED,
                                   reason=str(exc).splitlines()[0])
            screens.append(s)
            measurements, samples = _rows(rec, item, s)
            rec.add(measurements=measurements, samples=samples)
            rec.checkpoint()
    return rec.run, screens


# --------------------------------------------------------------------------- tables


def _notes(program: str, target: str) -> str:
    """The program's notes on `target` (its build, e.g. the OpenSSL it links), '' where it cannot say."""
    if programs.why_not(program):
        return ""
    try:
        return str(programs.target(program, target).get("notes", ""))
    except (programs.LeakageRunError, UnknownName):
        return ""


def counterparts(df: pd.DataFrame) -> list[str]:
    """Per row of a verdicts table: what a fixed release or control is set against, from the group's known
    leaks: "the same library, another release (3.2.1)" or "another library than the known leak (...)"."""
    out = []
    for _, r in df.iterrows():
        leaks = df[(df["group"] == r["group"]) & (df["role"] == "known leak")]
        if r["role"] == "known leak" or leaks.empty:
            out.append("")
        elif (leaks["implementation"] == r["implementation"]).any():
            others = leaks.loc[leaks["implementation"] == r["implementation"], "version"].astype(str)
            out.append(f"the same library as the known leak, another release ({', '.join(others)})")
        else:
            out.append(f"another library than the known leak ({', '.join(leaks['release'].unique())})")
    return out


def verdicts(items: Sequence[Item], screens: Sequence[leakage.Screen]) -> pd.DataFrame:
    """One row per screen: group, role, implementation and release, the verdict, the largest median difference
    with its interval, the widest bound of those intervals (``bound_ns``, not a detectable effect), the
    blocks, processes and seconds it took, the program's notes on the target (its build) and what a
    counterpart is set against (:func:`counterparts`)."""
    df = pd.DataFrame([{"group": item.group, "role": item.role, **s.summary(),
                        "notes": _notes(item.program, item.target)}
                       for item, s in zip(items, screens) if item.role != IDENTICAL])
    df = df.reindex(columns=list(dict.fromkeys([*df.columns, "largest", "median_ns", "ci_low_ns",
                                                   "ci_high_ns", "min_p"])))  # empty where no screen ran
    df["release"] = (df["implementation"].fillna("") + " " + df["version"].fillna("").astype(str)).str.strip()
    df["counterpart"] = counterparts(df)
    return df


def describe_processes(table: pd.DataFrame) -> str:
    """How many processes each screen's blocks ran in, from the table: "Every one of the 11 screens ran its
    blocks in 4 fresh processes of its program", or the counts where they differ."""
    ran = table[table["blocks"] > 0]
    if ran.empty:
        return "No screen ran."
    counts = ran["processes"].value_counts().sort_index()
    if len(counts) == 1:
        n = int(counts.index[0])
        return (f"Every one of the {len(ran)} screens that ran split its blocks over {n} fresh "
                f"process{'es' if n > 1 else ''} of its program, each with the same inputs and its own "
                "warm-up.")
    return ("The screens split their blocks over fresh processes of their program, each with the same inputs "
            "and its own warm-up: " + "; ".join(
                f"{int(c)} screen{'s' if c > 1 else ''} over {int(n)} process{'es' if n > 1 else ''}"
                for n, c in counts.items()) + ".")


def tests_table(items: Sequence[Item], screens: Sequence[leakage.Screen]) -> pd.DataFrame:
    """Every test of every screen (the false-positive experiment's too): p-value, threshold, significant."""
    parts = [s.tests.assign(program=i.program, target=i.target, role=i.role, screen=n + 1)
             for n, (i, s) in enumerate(zip(items, screens)) if not s.tests.empty]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def false_positives(items: Sequence[Item], screens: Sequence[leakage.Screen],
                    alpha: float) -> tuple[pd.DataFrame, dict]:
    """The false-positive experiment's screens (one row each: verdict, smallest p, median difference, the
    load) and its summary: how many runs gave a verdict, how many of those said "leak", the rate with its
    exact (Clopper-Pearson) interval, whether alpha lies within that interval, and how many of the judged runs
    ran under load (:func:`loaded`)."""
    from scipy.stats import binomtest

    runs = [(i, s) for i, s in zip(items, screens) if i.role == IDENTICAL]
    df = pd.DataFrame([{"run": n + 1, "verdict": s.verdict, "min_p": float(s.tests["p"].min()) if len(s.tests)
                        else math.nan, "median_ns": s.differences["median_ns"].iloc[0] if len(s.differences)
                        else math.nan, "blocks": s.blocks, "wall_s": s.wall_s, "others_cores": s.others_cores,
                        "load": s.load, "reason": s.reason}
                       for n, (_, s) in enumerate(runs)])
    judged = df[df["verdict"].isin(JUDGED)] if len(df) else df
    leaks = int(judged["verdict"].isin(ALARMS).sum()) if len(judged) else 0
    first = runs[0][0] if runs else None
    summary = {"program": first and first.program, "target": first and first.target,
               "class": first and first.classes[0], "runs": len(runs), "judged": len(judged), "leaks": leaks,
               "alpha": alpha, "blocks": first and first.blocks, "loaded": loaded(judged)}
    if summary["loaded"]:
        summary["others_cores"] = span(judged.loc[judged["load"] != "", "others_cores"])
    if len(judged):
        ci = binomtest(leaks, len(judged), alpha).proportion_ci(FP_CONFIDENCE, method="exact")
        summary.update(rate=leaks / len(judged), ci_low=ci.low, ci_high=ci.high, within=ci.low <= alpha,
                       p_above_alpha=binomtest(leaks, len(judged), alpha, alternative="greater").pvalue)
    return df, summary


def describe_false_positives(summary: dict) -> str:
    """One paragraph on the false-positive experiment, from its summary: the runs with a verdict are the ones
    counted, and those without are said to be so."""
    what = f"{m(summary['class'])} of {m(summary['target'])} labelled twice"
    if not summary["judged"]:
        return (f"The false-positive experiment ({what}) gave no verdict in any of its {summary['runs']} "
                "runs (each run's reason says why: no free core, or the clock moved), so the rate is not "
                "known here.")
    none = summary["runs"] - summary["judged"]
    text = (f"Screening {what} ({summary['blocks']} blocks each) found a difference (a leak or an unresolved "
            f"difference) in {summary['leaks']} of the {summary['judged']} runs with a verdict"
            + (f" ({none} of {summary['runs']} runs gave none)" if none else "")
            + f": a rate of {summary['rate']:.1%} ({FP_CONFIDENCE:.0%} interval {summary['ci_low']:.1%} to "
            f"{summary['ci_high']:.1%}) against the stated alpha of {summary['alpha']:g}. ")
    if summary["loaded"]:
        text += (f"{summary['loaded']} of the runs with a verdict ran on a loaded machine (other processes "
                 f"used {summary['others_cores']} cores). ")
    text += ("The rate is consistent with alpha: its interval reaches alpha." if summary["within"] else
             f"The rate is above alpha (one-sided p = {summary['p_above_alpha']:.3g}): the screen's tests do "
             "not hold their level here.")
    return text


# --------------------------------------------------------------------------- the screen under load

#: The screens :func:`under_load` runs beside the false-positive experiment: two releases known to leak, with
#: the classes and blocks of notebook 09's quick plan.
LOAD_CHECK = ({"program": "python-leaky", "target": "rsa-512-pkcs1v15-decrypt", "blocks": 10000,
               "classes": ["valid", "bad-header"], "group": "Marvin", "role": "known leak"},
              {"program": "bc-1.83", "target": "frodokem640shake-decaps", "blocks": 3000, "group": "FrodoKEM",
               "role": "known leak"})


def under_load(load: str = "spin", *, fp_program: str = programs.LIBOQS, fp_target: str = "ML-KEM-768-decaps",
               fp_class: str = "valid", fp_runs: int = 20, fp_blocks: int = 2000, scale: float = 1.0,
               alpha: float = leakage.ALPHA, warmup_blocks: int = 50, seed: int = 1, folder=None,
               save: bool = True, progress: bool = True):
    """The evidence for :data:`pqlab.checks.leakage.FREE_CORES`: the known leaks of :data:`LOAD_CHECK` (their
    blocks times `scale`) and the false-positive experiment (`fp_class` of `fp_target` labelled twice,
    `fp_runs` runs of `fp_blocks` blocks), all under the standard background load `load`
    (:mod:`pqlab.measure.load`; "none" for the quiet baseline) and saved as one run: ``(run, items,
    screens)``, which :func:`describe_load_check` states."""
    items = plan(LOAD_CHECK, scale) + identical(fp_program, fp_target, fp_class, fp_runs, fp_blocks)
    done, screens = run(items, alpha=alpha, warmup_blocks=warmup_blocks, seed=seed, folder=folder, save=save,
                        progress=progress, load=load)
    return done, items, screens


def describe_load_check(items: Sequence[Item], screens: Sequence[leakage.Screen], alpha: float = leakage.ALPHA
                        ) -> str:
    """What :func:`under_load` found, from its screens: the known leaks' verdicts with their differences and
    the load each ran under, and the false-positive rate counted over the runs with a verdict."""
    table = verdicts(items, screens)
    _, fp = false_positives(items, screens, alpha)
    return "\n\n".join([describe_counts(table), describe_screen(table), describe_false_positives(fp)])


# --------------------------------------------------------------------------- valgrind's taint check


def taint(checks: Sequence[Sequence[str]]) -> pd.DataFrame:
    """One row per (algorithm, kind, build) of :func:`pqlab.checks.taint.check`: the branches and memory
    indices memcheck found depending on the secret key, the flagged functions with what they are known to be,
    and the seconds; a check that cannot run here is a row with the reason."""
    rows = []
    for algorithm, kind, build in checks:
        why = tt.available(build or "generic")
        if why:
            rows.append({"algorithm": algorithm, "kind": kind, "build": build, "errors": None, "reason": why})
            continue
        r = tt.check(algorithm, kind=kind, **({"build": build} if build else {}))
        top = dict.fromkeys(f"{f['frames'][0].split(' (')[0]}{' (' + f['note'] + ')' if f['note'] else ''}"
                            for f in r["findings"])
        rows.append({"algorithm": algorithm, "kind": kind, "build": r["build"] or "–",
                     "liboqs_version": r["liboqs_version"], "tainted_bytes": r["tainted_bytes"],
                     "errors": r["errors"], "branches": r["branches"], "indices": r["indices"],
                     "contexts": r["contexts"], "flagged": "; ".join(top), "wall_s": r["wall_s"],
                     "reason": ""})
    return pd.DataFrame(rows)


def describe_taint(table: pd.DataFrame) -> str:
    """One bullet per taint check, from its row."""
    lines = []
    for _, r in table.iterrows():
        build = ", " + m(r["build"]) if r["build"] not in ("", "–") else ""
        what = f"**{m(r['algorithm'])}** ({m(r['kind'])}{build})"
        if r["reason"]:
            lines.append(f"- {what}: not checked here: {m(r['reason'])}")
        elif not r["errors"]:
            lines.append(f"- {what}: memcheck reported nothing depending on the {r['tainted_bytes']} secret "
                         f"bytes ({r['wall_s']:.1f} s).")
        else:
            lines.append(f"- {what}: {r['branches']} branches and {r['indices']} memory indices depending on "
                         f"the secret, in {r['contexts']} places: {m(r['flagged'])}.")
    return "\n".join(lines)


# --------------------------------------------------------------------------- sentences


def describe_screen(table: pd.DataFrame) -> str:
    """One bullet per screen: its verdict with the difference, interval, blocks and seconds, or why there is
    none."""
    lines = []
    for _, r in table.iterrows():
        against = f"; {m(r['counterpart'])}" if r.get("counterpart") else ""
        who = (f"**{m(r['implementation'] or r['program'])} {m(r['version'] or '')}** "
               f"({m(r['target'])}, {r['role']}{against})")
        if r["verdict"] == leakage.NOT_SCREENED:
            lines.append(f"- {who}: not screened: {m(r['reason'])}")
            continue
        diff = (f"largest median difference {r['median_ns']:.0f} ns "
                f"\\[{r['ci_low_ns']:.0f}, {r['ci_high_ns']:.0f}\\] ({m(r['largest'])})")
        found = f"; power: {m(r['power'])}" if isinstance(r.get("power"), str) else ""
        lines.append(f"- {who}: **{r['verdict']}**; {diff}; {r['blocks']} blocks in {r['processes']} "
                     f"processes, {r['wall_s']:.1f} s; "
                     f"{m(r['reason'])}{found}")
    return "\n".join(lines)


def span(values) -> str:
    """A range of others_cores as text: "0.95 to 1.27", or one value where both ends read alike."""
    lo, hi = f"{min(values):.2f}", f"{max(values):.2f}"
    return lo if lo == hi else f"{lo} to {hi}"


def loaded(table: pd.DataFrame) -> int:
    """How many screens of a :func:`verdicts` (or :func:`false_positives`) table ran on a loaded machine."""
    return int((table["load"].fillna("") != "").sum()) if "load" in table else 0


def counts(table: pd.DataFrame) -> dict:
    """How many screens of a :func:`verdicts` table said what: each verdict's count (a screen with no verdict
    counted as such, never as a clean one), the screens that gave a verdict on a loaded machine, and of those
    with no verdict, how many had no free core and how many a clock that moved, with the seconds a quiet rerun
    of them takes."""
    verdict = table["verdict"]
    none = table[verdict == leakage.NO_VERDICT]
    return {"screens": len(table), "leaks": int((verdict == leakage.LEAK).sum()),
            "no_leaks": int((verdict == leakage.NO_LEAK).sum()),
            "unresolved": int((verdict == leakage.UNRESOLVED).sum()),
            "no_verdicts": len(none), "not_screened": int((verdict == leakage.NOT_SCREENED).sum()),
            "loaded": loaded(table[verdict.isin(JUDGED)]), "no_free_core": int(none["no_free_core"].sum()),
            "clock_moved": int((none["clock_moved"].fillna("") != "").sum()),
            "quiet_rerun_s": float(none["quiet_s"].sum())}


def describe_counts(table: pd.DataFrame) -> str:
    """The sentence that counts the screens of a :func:`verdicts` table, e.g. "Of 11 screens, 4 said leak, 6
    found no leak, 1 gave no verdict (...)", and how many of those with a verdict ran on a loaded machine."""
    c = counts(table)
    said = [f"{c['leaks']} said leak", f"{c['no_leaks']} found no leak"]
    if c["unresolved"]:
        said.append(f"{c['unresolved']} showed an unresolved difference")
    said.append(f"{c['no_verdicts']} gave no verdict")
    if c["no_verdicts"]:
        why = [f"{c['no_free_core']} with no free core" if c["no_free_core"] else "",
               f"{c['clock_moved']} whose clock moved" if c["clock_moved"] else ""]
        said[-1] += (f" ({', '.join(filter(None, why))}; a quiet rerun of them takes about "
                     f"{c['quiet_rerun_s']:.0f} s)")
    if c["not_screened"]:
        said.append(f"{c['not_screened']} could not run here")
    text = f"Of {c['screens']} screens, {', '.join(said[:-1])} and {said[-1]}."
    if c["loaded"]:
        judged = table[table["verdict"].isin(JUDGED) & (table["load"].fillna("") != "")]
        text += (f" {c['loaded']} of the screens with a verdict ran on a loaded machine (other processes "
                 f"used {span(judged['others_cores'])} cores), a load the paired blocks cancel while it is "
                 "steady.")
    return text


def numbers(table: pd.DataFrame, fp: dict, alpha: float) -> dict:
    """The figures the paper's text quotes (export.save_numbers): every verdict's count, so that no screen
    without a verdict is read as a clean one, and the false-positive runs with and without a verdict."""
    c = counts(table)
    return {"screens": c["screens"], "leaks": c["leaks"], "noLeaks": c["no_leaks"],
            "unresolved": c["unresolved"], "noVerdicts": c["no_verdicts"], "notScreened": c["not_screened"],
            "loaded": c["loaded"], "alpha": alpha, "fpAll": fp["runs"], "fpRuns": fp["judged"],
            "fpNoVerdicts": fp["runs"] - fp["judged"], "fpLeaks": fp["leaks"]}


def closing_note(table: pd.DataFrame, fp: dict, alpha: float) -> str:
    """What the screen found and what it can and cannot detect on this machine, from the data."""
    found = table[table["verdict"] == leakage.LEAK]
    clean = table[table["verdict"] == leakage.NO_LEAK]
    none = table[table["verdict"].isin([leakage.NO_VERDICT, leakage.NOT_SCREENED, leakage.UNRESOLVED])]
    parts = [describe_counts(table),
             f"At a family-wise alpha of {alpha:g} per screen, the screen said \"leak\" for "
             + (", ".join(f"{m(r['implementation'])} {m(r['version'])} ({m(r['target'])}, "
                          f"{r['median_ns']:.0f} ns \\[{r['ci_low_ns']:.0f}, {r['ci_high_ns']:.0f}\\])"
                          for _, r in found.iterrows()) or "nothing") + "."]
    known = table[table["role"] == "known leak"]
    missed = known[known["verdict"] != leakage.LEAK]
    if not missed.empty:
        parts.append("It did not flag these releases known to leak: "
                     + "; ".join(f"{m(r['implementation'])} {m(r['version'])} ({m(r['target'])}): "
                                 f"{m(r['reason'])}" for _, r in missed.iterrows()) + ".")
    elif not known.empty:
        parts.append(f"It flagged every release known to leak that it screened ({len(known)}).")
    if not clean.empty:
        parts.append("Where it found no leak, what it would have found is measured by injection, not read "
                     "from an interval: "
                     + "; ".join(f"{m(r['implementation'])} {m(r['version'])} {m(r['target'])} "
                                 f"({r['blocks']} blocks): {m(r.get('power') or 'not measured')}"
                                 for _, r in clean.iterrows())
                     + ". Smaller leaks, and leaks in the slow tail alone, may exist; none of this says "
                       "\"constant time\".")
    controls = describe_controls(table) if "ci_low_ns" in table else ""
    if controls:
        parts.append(controls)
    if not none.empty:
        parts.append("No verdict, or a difference that is neither a leak nor clean, for: "
                     + "; ".join(f"{m(r['target'])} ({m(r['reason'])})" for _, r in none.iterrows()) + ".")
    if fp.get("runs"):
        parts.append(f"On two identical classes the screen found a difference in {fp['leaks']} of the "
                     f"{fp['judged']} runs with a verdict at alpha {alpha:g}"
                     + (f" ({fp['runs'] - fp['judged']} of {fp['runs']} runs gave none)."
                        if fp["runs"] > fp["judged"] else "."))
    parts.append("What it cannot see: a leak through inputs outside the classes screened (a screen compares "
                 "the classes it is given, not every secret), a shift smaller than the injected delays it "
                 "finds, a leak in the slow tail alone (the median difference does not move: at best an "
                 "unresolved difference), a difference below the counter's step, leaks through caches or "
                 "power rather than time, and behaviour on other CPUs, compilers or builds.")
    return " ".join(parts)
