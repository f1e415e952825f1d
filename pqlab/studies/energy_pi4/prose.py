"""The generated sentences of notebook 05: which power source this run has and why, what was measured and
by which implementation, HQC's status, the limits of a Pi/here comparison, the energies here, the Pi/here
ratios and the liboqs build that ran (Markdown, all from data).  The recommendations are in
:mod:`pqlab.studies.energy_pi4.recommendations`."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from pqlab.backends.algorithms import get
from pqlab.benchmark import describe_harness
from pqlab.core import flags
from pqlab.core.formatting import Column, fmt_factor, fmt_factor_ci, fmt_percent, fmt_time_ms, markdown, table
from pqlab.core.paths import LIBOQS_PREFIX
from pqlab.core.schema import convert_unit
from pqlab.measure.stats import CONFIDENCE, MIN_SAMPLES
from pqlab.publish.context import context_line
from pqlab.runners.energy import MIN_SAMPLE_PERIODS, RAPL, ModelledPower, PowerSource, describe_source
from pqlab.studies.energy_pi4.names import KIND_LABEL, _is_pq
from pqlab.studies.energy_pi4.published import setup_text
from pqlab.studies.energy_pi4.tables import (
    MEDIAN_FACTOR,
    _liboqs_meta,
    energy_here_table,
    liboqs_id,
    median_factor,
    rank_correlation,
)

#: The liboqs release that left HQC off by default (liboqs pull request 2122: a flaw in its IND-CCA2 security)
HQC_OFF_SINCE = (0, 13, 0)


def power_source_markdown(live: PowerSource, model: ModelledPower | None, idle_s: float,
                          setup: pd.DataFrame) -> str:
    """What this run can say about energy, and why (generated, machine-dependent)."""
    if live.available:
        text = (f"**Live energy from {describe_source(live)}.** Each operation runs in a window of at "
                f"least {MIN_SAMPLE_PERIODS} sample periods between two idle windows of "
                f"{convert_unit(idle_s, 's', 'ms'):g} ms (the study's warm-up and cool-down: "
                f"{setup_text(setup, 'warmup')} and {setup_text(setup, 'cooldown')} ms); energy per "
                "operation is the integral of power over the window minus the idle baseline (*net*); the "
                "*gross* value (baseline included) is what the study tabulated.")
        if isinstance(live, RAPL):
            text += (" RAPL counts the CPU package, not the whole board the study's INA219 saw: compare its "
                     "gross values with the study's only in order of magnitude.")
    else:
        text = (f"**No live energy on this machine.** {live.reason[:1].upper()}{live.reason[1:]}. Time is "
                "measured for every algorithm below; energy per operation comes from the study's published "
                "table and from a replay of a trace reconstructed from it. No measured energy is shown, "
                "because none was measured.")
    if model is not None:
        text += (f"\n\n**Modelled energy:** {model.watts:g} W (the `modelled_power_w` parameter) x our "
                 "measured time. It is a model, not a measurement, and is labelled *modelled* in every table "
                 "and figure.")
    return text


def describe_measured(times: pd.DataFrame, reference: pd.DataFrame) -> str:
    """What was measured here, through which backend, and what the study lacked (Markdown)."""
    lines = []
    for kind, g in times.drop_duplicates(["algorithm", "backend"]).groupby("kind", sort=False):
        by_backend = "; ".join(f"{', '.join(h['algorithm'])} through {b}"
                               for b, h in g.groupby("backend", sort=False))
        lines.append(f"- **{KIND_LABEL[kind]}s** ({len(g)}): {by_backend}.")
    extra = times[~times["algorithm"].isin(reference["algorithm"]) & ~times["family"].map(_is_pq)]
    pairs = extra.drop_duplicates(["algorithm", "backend"])[["algorithm", "backend"]]
    named = [a + (f" ({get(a, b).notes})" if get(a, b).notes else "")
             for a, b in pairs.itertuples(index=False)]
    if named:
        lines.append(f"- Classical baselines the study did not measure: {'; '.join(named)}.")
    return "\n".join(lines)


def liboqs_origin(info: dict) -> str:
    """Where the liboqs a run loaded came from, from the path it recorded (``meta["liboqs"]["liboqs_path"]``):
    pqlab's own build (installed by ``make setup`` under ``.venv/liboqs/<build id>/``, CMake over the sources
    of the ``oqs-sys`` crate) or a liboqs pqlab found already loadable (system, conda, OQS_INSTALL_PATH)."""

    path = str(info.get("liboqs_path") or "")
    if not path:
        return "a liboqs whose file the run did not record"
    parts = Path(path).parts
    own = Path(path).is_relative_to(LIBOQS_PREFIX) or (len(parts) >= 5 and parts[-5:-3] == (".venv", "liboqs")
                                                       and parts[-2] == "lib")  # another clone's own build
    if own:
        return (f"pqlab's own build (`make setup`: CMake over the sources of the `oqs-sys` crate, with that "
                f"crate's options, HQC on), loaded from {markdown(path)}")
    return (f"a liboqs that pqlab did not build (one already loadable here: system, conda or "
            f"OQS_INSTALL_PATH), loaded from {markdown(path)}, whose build switched HQC on")


def _version(text: str) -> tuple[int, ...] | None:
    m = re.match(r"(\d+)\.(\d+)\.(\d+)", str(text or ""))
    return tuple(int(x) for x in m.groups()) if m else None


def describe_hqc(runs) -> str:
    """HQC's status, when HQC ran here through liboqs: which liboqs and where it came from (the run's record),
    and that upstream switched HQC off."""
    ran = any(((r.measurements["algorithm"].str.startswith("HQC"))
               & (r.measurements["backend"] == "liboqs")).any() for r in runs)
    meta = _liboqs_meta(runs)
    if not ran or not meta:
        return ""
    info = meta["liboqs"]
    version = info.get("liboqs_version")
    text = (f"HQC ran here through liboqs {version or 'of unknown version'}, {liboqs_origin(info)}. "
            "Upstream liboqs leaves HQC off by default since a flaw in its IND-CCA2 security was announced "
            "(liboqs pull request 2122)")
    v = _version(version)
    if v is not None and v <= HQC_OFF_SINCE:
        return text + ("; this release's HQC predates the fix. These are the costs of that pre-fix HQC: fine "
                       "for measuring cost, not for deployment.")
    return text + ("; whether this release's HQC has the fix is not recorded by the run: check its release "
                   "notes before deploying it.")


def describe_implementations(times: pd.DataFrame, run) -> str:
    """The implementation behind each backend, the harness's own cost beside the fastest operation, and
    the interpreter caveat of pure-Python backends (Markdown, from the run)."""
    impls = times.drop_duplicates("backend")[["backend", "implementation"]]
    text = "Implementations: " + "; ".join(f"**{b}**: {i}" for b, i in impls.itertuples(index=False)) + "."
    if "harness_overhead_ns" in run.meta:
        fastest = times.loc[times["time_ms"].idxmin()]
        share = run.meta["harness_overhead_ns"] / convert_unit(fastest["time_ms"], "ms", "ns")
        text += (f" {describe_harness(run)} The do-nothing call is {fmt_percent(share, 1)} of the fastest "
                 f"operation here ({fastest['algorithm']} {fastest['operation']}, "
                 f"{fmt_time_ms(fastest['time_ms'])}).")
    pairs = times.drop_duplicates(["algorithm", "backend"])[["algorithm", "backend"]]
    for a, b in pairs.itertuples(index=False):
        algo = get(a, b)
        if "pure Python" in algo.implementation:
            text += (f"\n\n{a} runs in **pure Python** ({algo.implementation}; {algo.notes}): its times "
                     f"measure the interpreter as much as {a}. They show what a Python deployment pays, not "
                     f"what {a} costs in C or on a microcontroller.")
    few = times[flags.has(times["flags"], "few-samples")]
    if len(few):
        text += (f"\n\n{len(few)} of {len(times)} timings rest on fewer than {MIN_SAMPLES} samples (flag "
                 "`few-samples`): their medians are rough and their intervals wide.")
    return text


def describe_comparison_caveats(setup: pd.DataFrame, runs) -> str:
    """What limits a Pi/here comparison, one sentence each (Markdown, from the study's set-up and our
    runs)."""
    freq = (runs[0].meta.get("frequency") if runs else None) or {}
    here = (f"governor {freq.get('scaling_governor') or 'unknown'}, boost {freq.get('boost') or 'unknown'}"
            if freq.get("available") else f"unknown: {freq.get('reason', 'not recorded')}")
    return "\n".join([
        "- The study does not say whether its times are means or medians, nor how many calls each rests "
        "on; ours are medians of per-call times (their sample counts are in the table below).",
        f"- Its clock was not pinned (governor {setup_text(setup, 'cpu_governor')}); here the frequency "
        f"state is {here}.",
        "- The Pi's factor therefore mixes clock, core and build; no part of it is attributed to any one of "
        "them."])


def describe_energy_here(ours: pd.DataFrame, live: PowerSource, runs) -> str:
    """What energy this run has (Markdown): none and why, or the bases and how many operations each, with
    the energy run's context line."""
    if ours.empty:
        return (f"**No energy was measured here**: {live.reason}; and `modelled_power_w` is not set, so none "
                "is modelled either. The figures below use the study's published energies.")
    text = "Energies here, by basis: " + ", ".join(
        f"**{b}** ({n} operations)" for b, n in ours.groupby("basis", sort=False).size().items()) + "."
    text += f" Energy run: {markdown(context_line(runs))}." if runs else ""
    shown = energy_here_table(ours).reset_index()  # one energy column per basis, in µJ
    keys = ["algorithm", "operation", "message_bytes"]
    columns = keys + [Column(c, str(c), "energy") for c in shown.columns if c not in keys]
    return f"{text}\n\n{table(shown, columns).to_markdown()}"


def cross_platform_caption() -> str:
    """The caption of the Pi/here table and figure: what the interval covers, and what it cannot."""
    return (f"Pi 4 published time / median time here, with a {fmt_percent(CONFIDENCE, 0)} interval over "
            "rounds from our samples only: the published time is a single number (its statistic unstated) "
            "with no interval")


def cross_platform_markdown(ratios: pd.DataFrame, n: int = 3, setup: pd.DataFrame | None = None,
                            runs=()) -> str:
    """Which operations lose most (and least) on the Pi 4, generated from the ratios; with `setup` (the
    study's set-up table) and `runs` (ours), first what each side of the ratio is: implementation, release
    and statistic."""
    if ratios.empty:
        return "No operation was measured both here and in the study."
    meta = _liboqs_meta(runs) if runs else None
    info = meta["liboqs"] if meta else {}
    here = (f"liboqs {info.get('liboqs_version', 'of unknown version')} ({info.get('options', 'unknown')} "
            "build)" if meta else "the implementations named above")
    pi = f"liboqs '{setup_text(setup, 'liboqs')}'" if setup is not None else "the study's liboqs"
    sides = (f"Each factor is the study's published Pi 4 time ({pi}; a single value whose statistic the "
             f"study does not state) over our median time here ({here}; the median over rounds). ")
    r = ratios.sort_values("pi_over_here", ascending=False)

    def items(df) -> str:
        return "; ".join(f"{x.algorithm} {x.operation} "
                         f"{fmt_factor_ci(x.pi_over_here, x.pi_over_here_ci_low, x.pi_over_here_ci_high)} "
                         f"({fmt_time_ms(x.pi_time_ms)} on the Pi, {fmt_time_ms(x.here_time_ms)} here)"
                         for x in df.itertuples())

    fam = r.groupby("family")["pi_over_here"].median().sort_values(ascending=False)
    slower = int((r["pi_over_here_ci_low"] > 1).sum())
    text = (f"{sides}Of the {len(r)} operations measured both here and on the study's Pi 4, {slower} took "
            f"longer on the Pi (the whole interval above one); the median factor is "
            f"{fmt_factor_ci(*median_factor(r))} ({MEDIAN_FACTOR}). Intervals "
            f"({fmt_percent(CONFIDENCE, 0)}, over rounds) come from our samples only: the published times "
            f"are single numbers whose statistic the study does not state. **Largest losses on the Pi:** "
            f"{items(r.head(n))}. **Smallest:** {items(r.tail(n).iloc[::-1])}. Median factor by family "
            "(medians over its operations, no interval of their own): "
            + ", ".join(f"{f} {fmt_factor(v)}" for f, v in fam.items()) + ".")
    rho = rank_correlation(r["pi_time_ms"], r["here_time_ms"]) if len(r) >= 3 else float("nan")
    if np.isfinite(rho):
        agrees = "closely" if rho >= 0.9 else "partly" if rho >= 0.5 else "poorly"
        text += (f" The *order* of the operations by time agrees {agrees} (Spearman rank correlation "
                 f"{rho:.2f})" + (": the factors differ, the ranking does not." if rho >= 0.9 else "."))
    known = r[r["code_here"] != "not recorded"]
    portable = known["code_here"] == "portable C"
    if portable.any() and (~portable).any():
        text += (" Median factor (no interval of its own) where liboqs ran CPU-specific code here: "
                 f"{fmt_factor(known.loc[~portable, 'pi_over_here'].median())} ({int((~portable).sum())} "
                 f"operations); where it ran portable C: "
                 f"{fmt_factor(known.loc[portable, 'pi_over_here'].median())} ({int(portable.sum())}); the "
                 "Pi's build is unknown, so which code ran there is not known.")
    return text


def describe_build_here(runs, setup: pd.DataFrame) -> str:
    """Which liboqs build and code paths ran here, from the runs' metadata, beside what the study
    states of its own (Markdown)."""
    pi = (f"On the Pi, the study gives its liboqs version as '{setup_text(setup, 'liboqs')}' and its CPU as "
          f"'{setup_text(setup, 'cpu')}'.")
    meta = _liboqs_meta(runs)
    if not meta:
        return f"No run here loaded liboqs. {pi}"
    info, cpu = meta["liboqs"], meta.get("cpu") or {}
    config = info.get("build_config") or {}
    dispatch = ("a dist build: it picks CPU-specific code at run time where the CPU has the extensions that "
                "code needs" if config.get("OQS_DIST_BUILD") == "1" else
                f"built for target '{config.get('OQS_OPT_TARGET', 'unknown')}'")
    model, ext = cpu.get("model") or "model unknown", info.get("cpu_extensions")
    if ext is None:  # a run recorded before liboqs's own detection was: the CPU's flag
        found = f"the CPU ({model}) {'reports' if cpu.get('flags_avx2') else 'does not report'} AVX2"
    else:
        found = (f"on this CPU ({model}) liboqs detects {', '.join(ext) or 'no extension it dispatches on'}")
    text = (f"**Here:** liboqs {info.get('liboqs_version', 'of unknown version')}, "
            f"{info.get('options', 'unknown')} build ({dispatch}); {found}.")
    specific = info.get("cpu_specific")
    if specific is None:
        return f"{text} Which CPU-specific code the build compiled in was not recorded by this run. {pi}"
    algorithms = sorted({a for r in runs
                         for a in r.measurements.loc[r.measurements["backend"] == "liboqs", "algorithm"]})
    ids = {a: liboqs_id(a) for a in algorithms}
    compiled = [f"{a} ({', '.join(specific[i])})" for a, i in ids.items() if i in specific]
    portable = [a for a, i in ids.items() if i not in specific]
    if compiled:
        text += f" CPU-specific code compiled in for {', '.join(compiled)}."
    if portable:
        text += f" Portable C only for {', '.join(portable)}."
    if "xkcp_low" in specific:
        text += (" The Keccak code under SHA-3 and SHAKE, which most of these schemes hash with, has a "
                 f"CPU-specific version ({', '.join(specific['xkcp_low'])}) too.")
    return f"{text} {pi}"
