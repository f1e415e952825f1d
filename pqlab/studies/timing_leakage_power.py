"""The power of notebook 09's screens, measured by injection: for each screen that ran, the same screen (its
program, target, baseline class and blocks) of the baseline class labelled several times, with a known delay
busy-waited inside the timed interval of one copy only (:func:`pqlab.checks.leakage.injected`), repeated
`runs` times with fresh block orders.  A screen's power is the smallest injected delay it found in every run
(what the wait really added, read on the program's own counter, not the delay asked for).  The delays are
steps of a ladder chosen around the screen's own interval (:func:`steps`); a zero-delay copy beside them is
the duplicate-class run.  :mod:`pqlab.studies.timing_leakage` re-exports every name here.

    power(items, screens, ladder, steps, runs) -> (run, rows)   the injection screens, saved as one run
    power_summary(rows) -> one row per screen                    its power, the delays tried, the duplicates
    describe_power(summary) / describe_controls(table, summary)  the sentences
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from pqlab.checks import leakage
from pqlab.core.errors import BadInput
from pqlab.core.formatting import markdown as m
from pqlab.runners import leakage as programs
from pqlab.store.recorder import RunRecorder

TOPIC = "09_timing_leakage"
#: The share of runs an injected delay must be found in to count as within the screen's power.
POWER_SHARE = 0.9
POWER_COLUMNS = ["group", "role", "release", "target", "blocks", "runs", "tried", "power", "duplicates"]


def steps(ladder: Sequence[int], halfwidth: float, n: int) -> list[int]:
    """`n` consecutive delays of `ladder` (ns, ascending) starting at the first one of at least a quarter of
    the screen's interval half-width (`halfwidth`, ns): the steps around what the screen resolves; the
    ladder's last `n` where none is that large."""
    ladder = sorted(int(d) for d in ladder)
    if not ladder or n < 1 or any(d <= 0 for d in ladder):
        raise BadInput(f"the power ladder must be positive delays in ns and the steps at least one: "
                       f"{list(ladder)}, {n}")
    start = next((k for k, d in enumerate(ladder) if d >= halfwidth / 4), max(0, len(ladder) - n))
    return ladder[start:start + n] if start + n <= len(ladder) else ladder[-n:]


def halfwidth(screen: leakage.Screen) -> float:
    """Half the widest bootstrap interval of the screen's median differences (ns)."""
    if screen.differences.empty:
        return 0.0
    d = screen.differences
    return float(((d["ci_high_ns"] - d["ci_low_ns"]) / 2).max())


def power(items: Sequence, screens: Sequence[leakage.Screen], ladder: Sequence[int], n_steps: int, runs: int,
          *, alpha: float = leakage.ALPHA, warmup_blocks: int = 50, seed: int = 1000, folder=None,
          save: bool = True, progress: bool = True):
    """The injection screens of every screen that ran (not the false-positive experiment's): `runs` runs of
    `n_steps` delays of `ladder` (:func:`steps`) and a zero-delay copy, at the screen's own blocks and
    per-test threshold, saved as one run: ``(run, rows)``, one row per screen, run and delay."""
    from tqdm.auto import tqdm

    if not isinstance(runs, int) or runs < 1:
        raise BadInput(f"the power runs must be a positive integer, not {runs!r}")
    todo = [(i, s) for i, s in zip(items, screens)
            if s.times is not None and s.verdict != leakage.NO_VERDICT and i.role in ("known leak", "fixed",
                                                                                      "clean control")]
    plan = [(i, s, steps(ladder, halfwidth(s), n_steps)) for i, s in todo]
    params = {"ladder": [int(d) for d in ladder], "steps": n_steps, "runs": runs, "alpha": alpha,
              "warmup_blocks": warmup_blocks, "seed": seed,
              "screens": [{"program": i.program, "target": i.target, "blocks": s.blocks, "delays": d}
                          for i, s, d in plan]}
    out = []
    with RunRecorder(TOPIC, params, label="leakage-power", folder=folder, save=save) as rec:
        bar = tqdm(total=len(plan) * runs, desc="power", disable=not progress)
        for n, (item, s, delays) in enumerate(plan):
            for r in range(runs):
                try:
                    rows = leakage.injected(item.program, item.target, s.classes[0], s.blocks, delays,
                                            tests=len(s.tests) or leakage.tests_of(len(s.classes)),
                                            alpha=alpha, warmup_blocks=warmup_blocks, seed=seed + 100 * n + r,
                                            processes=s.processes or None)
                except (programs.LeakageRunError, OSError) as exc:
                    rows = pd.DataFrame([{"delay_ns": d, "found": None, "verdict": leakage.NOT_SCREENED,
                                          "reason": str(exc).splitlines()[0]} for d in [0, *delays]])
                rows = rows.assign(group=item.group, role=item.role, program=item.program,
                                   target=item.target, release=f"{s.implementation} {s.version}",
                                   baseline=s.classes[0], run=r + 1)
                out.append(rows)
                common = {"backend": item.program, "implementation": s.implementation,
                          "library_version": s.version, "algorithm": item.target, "kind": "leak-power",
                          "operation": s.operation}
                rec.add(measurements=[rec.row(**common, **{k: _plain(v) for k, v in row.items()})
                                      for row in rows.to_dict("records")])
                rec.checkpoint()
                bar.update()
        bar.close()
    return rec.run, (pd.concat(out, ignore_index=True) if out else pd.DataFrame())


def _plain(v):
    return None if isinstance(v, float) and math.isnan(v) else v


def power_summary(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per screen of :func:`power`'s rows: the delays tried (what each wait added, median over runs)
    with how many runs found each, its power (the smallest delay found in at least :data:`POWER_SHARE` of the
    runs with a verdict; ``power_ns`` nan where none was), and how often the zero-delay copy (the
    duplicate-class run) raised an alarm, with its median differences."""
    if rows.empty:
        return pd.DataFrame(columns=POWER_COLUMNS)
    out = []
    for (group, role, program, target), r in rows.groupby(["group", "role", "program", "target"], sort=False):
        judged = r[r["found"].notna()]
        runs = int(judged["run"].nunique()) if len(judged) else 0
        tried, power_ns = [], math.nan
        for asked, g in judged[judged["delay_ns"] > 0].groupby("delay_ns"):
            found = int(g["found"].astype(bool).sum())
            added = float(np.median(g["injected_ns"]))
            tried.append(f"{added:.0f} ns (asked {asked:.0f}): found in {found} of {len(g)}")
            if math.isnan(power_ns) and found >= POWER_SHARE * len(g):
                power_ns = added
        dup = judged[judged["delay_ns"] == 0]
        largest = max(d for d in r["delay_ns"]) if len(r) else 0
        largest_added = (float(np.median(judged.loc[judged["delay_ns"] == largest, "injected_ns"]))
                         if len(judged) else math.nan)
        out.append({"group": group, "role": role, "program": program, "target": target,
                    "release": r["release"].iloc[0], "blocks": int(r["blocks"].max()) if "blocks" in r and
                    r["blocks"].notna().any() else None, "runs": runs, "tried": "; ".join(tried),
                    "power_ns": power_ns, "largest_ns": largest_added,
                    "duplicate_alarms": int(dup["alarm"].astype(bool).sum()) if len(dup) else 0,
                    "duplicate_runs": len(dup),
                    "duplicate_medians": ", ".join(f"{v:.0f}" for v in dup.get("median_ns", pd.Series([]))),
                    "duplicate_means": ", ".join(f"{v:.1f}" for v in dup.get("mean_ns", pd.Series([]))),
                    "reason": "" if runs else str(r["reason"].iloc[0])})
    df = pd.DataFrame(out)
    df["power"] = [power_text(x) for _, x in df.iterrows()]
    df["duplicates"] = [f"{x['duplicate_alarms']} of {x['duplicate_runs']}" for _, x in df.iterrows()]
    return df


def power_text(r) -> str:
    """A screen's power in words: "smallest injected delay found: 61 ns (1 run)", "none of the injected delays
    found, up to 2040 ns (1 run)", or why not measured."""
    if not r["runs"]:
        return f"not measured: {r['reason']}"
    runs = f"{r['runs']} run" + ("s" if r["runs"] > 1 else "")
    if math.isnan(r["power_ns"]):
        return f"none of the injected delays found, up to {r['largest_ns']:.0f} ns ({runs})"
    return f"smallest injected delay found: {r['power_ns']:.0f} ns ({runs})"


def with_power(table: pd.DataFrame, summary_table: pd.DataFrame) -> pd.DataFrame:
    """The verdicts with each screen's power (``power_ns``, ``power``) and duplicate-class alarms."""
    if summary_table.empty:
        return table.assign(power_ns=math.nan, power="not measured", duplicates="")
    keep = summary_table[["program", "target", "power_ns", "power", "duplicates", "duplicate_medians",
                          "duplicate_means"]]
    return table.merge(keep, on=["program", "target"], how="left").fillna({"power": "not measured"})


def describe_power(summary_table: pd.DataFrame, runs: int, ladder: Sequence[int], n_steps: int) -> str:
    """The method and one bullet per screen: the delays tried, how many runs found each, its power, the
    duplicate-class run; and what the injection cannot show."""
    again = "once" if runs == 1 else f"{runs} times"
    head = (f"Each screen below was run again {again} at its own blocks, on its baseline class labelled "
            f"{n_steps + 2} times: one copy is the baseline, one gets no delay (the duplicate-class run) and "
            f"{n_steps} get a busy-wait inside their timed interval, {n_steps} consecutive steps of the "
            f"ladder {', '.join(str(d) for d in ladder)} ns chosen around the screen's own interval. The "
            "delays below are what the waits really added, read on the program's own counter. A delay "
            "counts as found when the screen, at its own per-test threshold, says leak in at least "
            f"{POWER_SHARE:.0%} of the runs; the power is the smallest such delay.")
    lines = []
    for _, r in summary_table.iterrows():
        dup = (f"; the duplicate-class copy raised an alarm in {r['duplicates']} runs (median differences "
               f"{r['duplicate_medians']} ns, means {r['duplicate_means']} ns)" if r["runs"] else "")
        lines.append(f"- **{m(r['release'])}** ({m(r['target'])}, {r['role']}, {r['blocks']} blocks): "
                     f"{m(r['power'])}" + (f"; tried {m(r['tried'])}" if r["tried"] else "") + dup + ".")
    tail = ("What an injected delay cannot show: it moves every call of its class alike, so it measures "
            "a shift of the whole distribution; a leak in the slow tail alone leaves the median difference "
            "where it is and comes out, at best, as an unresolved difference. A delay smaller than the "
            "counter's step is invisible, and a power measured on this machine under this load says nothing "
            "of another.")
    return "\n\n".join([head, "\n".join(lines), tail])


def describe_controls(table: pd.DataFrame) -> str:
    """The counterparts and controls whose median difference's interval excludes zero, each set beside its
    verdict, its power and its duplicate-class run ('' when there is none)."""
    rows = table[(table["role"] != "known leak") & table["ci_low_ns"].notna()]
    rows = rows[(rows["ci_low_ns"] > 0) | (rows["ci_high_ns"] < 0)]
    parts = []
    for _, r in rows.iterrows():
        power_ns = r.get("power_ns", math.nan)
        size = ("" if pd.isna(power_ns) else
                f"; below the smallest injected delay it found ({power_ns:.0f} ns), so the injection says "
                "nothing of a difference this small" if abs(r["median_ns"]) < power_ns else
                f"; as large as injected delays it finds ({power_ns:.0f} ns)")
        dup = (f"; its duplicate-class copies raised an alarm in {r['duplicates']} runs"
               if isinstance(r.get("duplicates"), str) and r["duplicates"] else "")
        parts.append(f"**{m(r['release'])}** ({m(r['target'])}, {r['role']}): median difference "
                     f"{r['median_ns']:.0f} ns \\[{r['ci_low_ns']:.0f}, {r['ci_high_ns']:.0f}\\] "
                     f"({m(r['largest'])}), an interval that excludes zero; verdict "
                     f"{r['verdict']}{size}{dup}")
    if not parts:
        return ""
    return ("A control or counterpart whose interval excludes zero is either a finding or what the "
            "screen's false positives look like; the verdict needs a significant test as well, and the "
            "duplicate-class copies show how often identical classes move this far: "
            + "; ".join(parts) + ".")
