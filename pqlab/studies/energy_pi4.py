"""Energy analysis of notebook 05: which power source, our times and energies, efficiency rankings,
Pi/here ratios and recommendations -- all from data.  The study's own table is checked in
:mod:`pqlab.studies.energy_pi4_published`; the figures are in :mod:`pqlab.studies.energy_pi4_figures`.

The measurement API (power sources, integration, traces) is :mod:`pqlab.runners.energy`; this module
puts its results, our timings and the Pi 4 study's published table side by side, with every
energy labelled by its *basis*:

=================================  ==========================================================
basis                              meaning
=================================  ==========================================================
``published (gross)``              the study's table: whole-board energy, idle included (near, not equal to,
                                   time x power: :func:`~pqlab.studies.energy_pi4_published.time_power_check`)
``replay (gross)``                 a step trace reconstructed from its times and powers, integrated
``replay (net of assumed idle)``   the same minus an *assumed* idle power (the study gives none)
``measured (net)``                 a live source here, minus the idle baseline around the window
``measured (gross)``               the same, baseline included (comparable with the study)
``modelled (<W> W x time)``        a constant power given as a parameter x our measured time
=================================  ==========================================================

Nothing here invents power: without a source, energy stays absent and the reason is stated.
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from pqlab.backends.algorithms import get
from pqlab.benchmark import describe_harness
from pqlab.core import flags
from pqlab.core.formatting import (
    Column,
    fmt_bytes_binary,
    fmt_energy_uj,
    fmt_factor,
    fmt_factor_ci,
    fmt_percent,
    fmt_time_ms,
    markdown,
    slug,
    table,
)
from pqlab.core.paths import LIBOQS_PREFIX, RAW
from pqlab.core.vocabulary import BACKENDS, CLASSICAL_PUBLIC_KEY
from pqlab.measure.stats import CONFIDENCE, MIN_SAMPLES, ratio_to_published
from pqlab.publish.context import context_line
from pqlab.runners.energy import (
    MIN_SAMPLE_PERIODS,
    RAPL,
    ModelledPower,
    PowerSource,
    describe_source,
    energy_run,
    read_trace,
)
from pqlab.store.results import concat_values, verified_rows
from pqlab.studies import conforming
from pqlab.studies.energy_pi4_published import (
    effective_power,
    envelope_w,
    reference_long,
    setup_text,
    setup_value,
    time_power_check,
)

TOPIC = "05_energy"
KIND_LABEL = {"kem": "KEM", "sig": "signature", "cipher": "AEAD"}
#: The operations of one use: an ephemeral key exchange, a message signed and checked, a message
#: sealed and opened.  Recommendations compare algorithms by the sum over these.
USE = {"kem": ("keygen", "encaps", "decaps"), "sig": ("sign", "verify"), "cipher": ("encrypt", "decrypt")}
MEASURED_NET, MEASURED_GROSS = "measured (net)", "measured (gross)"


def modelled_basis(watts: float) -> str:
    return f"modelled ({watts:g} W x time)"


def is_modelled(basis: str) -> bool:
    return str(basis).startswith("modelled")


def power_source_markdown(live: PowerSource, model: ModelledPower | None, idle_s: float,
                          setup: pd.DataFrame) -> str:
    """What this run can say about energy, and why (generated, machine-dependent)."""
    if live.available:
        text = (f"**Live energy from {describe_source(live)}.** Each operation runs in a window of at least "
                f"{MIN_SAMPLE_PERIODS} sample periods between two idle windows of {idle_s * 1e3:g} ms (the study's "
                f"warm-up and cool-down: {setup_text(setup, 'warmup')} and {setup_text(setup, 'cooldown')} ms); energy "
                "per operation is the integral of power over the window minus the idle baseline (*net*); the *gross* "
                "value (baseline included) is what the study tabulated.")
        if isinstance(live, RAPL):
            text += (" RAPL counts the CPU package, not the whole board the study's INA219 saw: compare its "
                     "gross values with the study's only in order of magnitude.")
    else:
        text = (f"**No live energy on this machine.** {live.reason[:1].upper()}{live.reason[1:]}. Time is measured "
                "for every algorithm below; energy per operation comes from the study's published table and "
                "from a replay of a trace reconstructed from it. No measured energy is shown, because none "
                "was measured.")
    if model is not None:
        text += (f"\n\n**Modelled energy:** {model.watts:g} W (the `modelled_power_w` parameter) x our measured time. "
                 "It is a model, not a measurement, and is labelled *modelled* in every table and figure.")
    return text


# ----- our times ----------------------------------------------------------------------------

def timing_table(measurements: pd.DataFrame) -> pd.DataFrame:
    """Verified rows of runs as: algorithm, backend, kind, family, nist_level, operation,
    message_bytes, time_ms (median), q1_ms, q3_ms, rel_ci (precision reached), samples, implementation, flags."""
    df = verified_rows(measurements)
    kinds = {(a, b): get(a, b).kind for a, b in df[["algorithm", "backend"]].drop_duplicates().itertuples(index=False)}
    out = pd.DataFrame({
        "algorithm": df["algorithm"], "backend": df["backend"],
        "kind": [kinds[(a, b)] for a, b in zip(df["algorithm"], df["backend"], strict=True)],
        "family": df["family"], "nist_level": df["nist_level"].astype("Int64"), "operation": df["operation"],
        "message_bytes": df["message_bytes"].astype("Int64"), "time_ms": df["time_ns_median"] / 1e6,
        "q1_ms": df["time_ns_q1"] / 1e6, "q3_ms": df["time_ns_q3"] / 1e6, "rel_ci": df["time_ns_rel_ci"],
        "samples": df["samples"],
        "implementation": df["implementation"], "flags": df["flags"].fillna("")})
    return out.reset_index(drop=True)


def aead_table(times: pd.DataFrame) -> pd.DataFrame:
    """Our AEAD medians (ms): one row per algorithm and operation, one column per payload (bytes)."""
    return times[times["kind"] == "cipher"].pivot_table(index=["algorithm", "operation"], columns="message_bytes",
                                                         values="time_ms")


def describe_measured(times: pd.DataFrame, reference: pd.DataFrame) -> str:
    """What was measured here, through which backend, and what the study lacked (Markdown)."""
    lines = []
    for kind, g in times.drop_duplicates(["algorithm", "backend"]).groupby("kind", sort=False):
        by_backend = "; ".join(f"{', '.join(h['algorithm'])} through {b}" for b, h in g.groupby("backend", sort=False))
        lines.append(f"- **{KIND_LABEL[kind]}s** ({len(g)}): {by_backend}.")
    extra = times[~times["algorithm"].isin(reference["algorithm"]) & ~times["family"].map(_is_pq)]
    named = [a + (f" ({get(a, b).notes})" if get(a, b).notes else "")
             for a, b in extra.drop_duplicates(["algorithm", "backend"])[["algorithm", "backend"]].itertuples(index=False)]
    if named:
        lines.append(f"- Classical baselines the study did not measure: {'; '.join(named)}.")
    return "\n".join(lines)


#: The liboqs release that left HQC off by default (liboqs pull request 2122: a flaw in its IND-CCA2 security)
HQC_OFF_SINCE = (0, 13, 0)


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
        return (f"pqlab's own build (`make setup`: CMake over the sources of the `oqs-sys` crate, with that crate's "
                f"options, HQC on), loaded from {markdown(path)}")
    return (f"a liboqs that pqlab did not build (one already loadable here: system, conda or OQS_INSTALL_PATH), "
            f"loaded from {markdown(path)}, whose build switched HQC on")


def _version(text: str) -> tuple[int, ...] | None:
    m = re.match(r"(\d+)\.(\d+)\.(\d+)", str(text or ""))
    return tuple(int(x) for x in m.groups()) if m else None


def describe_hqc(runs) -> str:
    """HQC's status, when HQC ran here through liboqs: which liboqs and where it came from (the run's record),
    and that upstream switched HQC off."""
    ran = any(((r.measurements["algorithm"].str.startswith("HQC")) & (r.measurements["backend"] == "liboqs")).any()
              for r in runs)
    meta = _liboqs_meta(runs)
    if not ran or not meta:
        return ""
    info = meta["liboqs"]
    version = info.get("liboqs_version")
    text = (f"HQC ran here through liboqs {version or 'of unknown version'}, {liboqs_origin(info)}. Upstream liboqs "
            "leaves HQC off by default since a flaw in its IND-CCA2 security was announced (liboqs pull request "
            "2122)")
    v = _version(version)
    if v is not None and v <= HQC_OFF_SINCE:
        return text + ("; this release's HQC predates the fix. These are the costs of that pre-fix HQC: fine for "
                       "measuring cost, not for deployment.")
    return text + ("; whether this release's HQC has the fix is not recorded by the run: check its release notes "
                   "before deploying it.")


def describe_implementations(times: pd.DataFrame, run) -> str:
    """The implementation behind each backend, the harness's own cost beside the fastest operation, and
    the interpreter caveat of pure-Python backends (Markdown, from the run)."""
    impls = times.drop_duplicates("backend")[["backend", "implementation"]]
    text = "Implementations: " + "; ".join(f"**{b}**: {i}" for b, i in impls.itertuples(index=False)) + "."
    if "harness_overhead_ns" in run.meta:
        fastest = times.loc[times["time_ms"].idxmin()]
        text += (f" {describe_harness(run)} The do-nothing call is "
                 f"{fmt_percent(run.meta['harness_overhead_ns'] / (fastest['time_ms'] * 1e6), 1)} of the fastest "
                 f"operation here ({fastest['algorithm']} {fastest['operation']}, {fmt_time_ms(fastest['time_ms'])}).")
    for a, b in times.drop_duplicates(["algorithm", "backend"])[["algorithm", "backend"]].itertuples(index=False):
        algo = get(a, b)
        if "pure Python" in algo.implementation:
            text += (f"\n\n{a} runs in **pure Python** ({algo.implementation}; {algo.notes}): its times measure the "
                     f"interpreter as much as {a}. They show what a Python deployment pays, not what {a} costs in C "
                     "or on a microcontroller.")
    few = times[flags.has(times["flags"], "few-samples")]
    if len(few):
        text += (f"\n\n{len(few)} of {len(times)} timings rest on fewer than {MIN_SAMPLES} samples (flag "
                 "`few-samples`): their medians are rough and their intervals wide.")
    return text


def describe_comparison_caveats(setup: pd.DataFrame, runs) -> str:
    """What limits a Pi/here comparison, one sentence each (Markdown, from the study's set-up and our runs)."""
    freq = (runs[0].meta.get("frequency") if runs else None) or {}
    here = (f"governor {freq.get('scaling_governor') or 'unknown'}, boost {freq.get('boost') or 'unknown'}"
            if freq.get("available") else f"unknown: {freq.get('reason', 'not recorded')}")
    return "\n".join([
        "- The study does not say whether its times are means or medians, nor how many calls each rests on; ours "
        "are medians of per-call times (their sample counts are in the table below).",
        f"- Its clock was not pinned (governor {setup_text(setup, 'cpu_governor')}); here the frequency state is {here}.",
        "- The Pi's factor therefore mixes clock, core and build; no part of it is attributed to any one of them."])


def failures(measurements: pd.DataFrame) -> pd.DataFrame:
    """Rows that failed (an exception or a wrong output), with the reason."""
    bad = measurements[~measurements["verified"].fillna(False).astype(bool)]
    return bad[["algorithm", "backend", "operation", "message_bytes", "flags"]].reset_index(drop=True)


def algorithm_table(times: pd.DataFrame, sizes: pd.DataFrame) -> pd.DataFrame:
    """Algorithms measured, with NIST level and the sizes that do not vary between key pairs."""
    algos = times.drop_duplicates(["algorithm", "backend"])[["kind", "algorithm", "backend", "family", "nist_level"]]
    cols = ["public_key_bytes", "ciphertext_bytes", "shared_secret_bytes", "signature_max_bytes", "symmetric_key_bytes"]
    s = sizes.drop_duplicates(["algorithm", "backend"])[["algorithm", "backend", *[c for c in cols if c in sizes]]]
    out = algos.merge(s, on=["algorithm", "backend"], how="left")
    for c in cols:
        if c in out:
            out[c] = out[c].astype("Int64")
    order = {k: i for i, k in enumerate(KIND_LABEL)}
    out = out.sort_values(["kind", "algorithm"], key=lambda s: s.map(order) if s.name == "kind" else s)
    out["kind"] = out["kind"].map(KIND_LABEL)
    return out.reset_index(drop=True)


# ----- energy: live, modelled, published, replayed ------------------------------------------

def _label(row) -> str:
    size = row.get("message_bytes")
    size_text = "" if size is None or pd.isna(size) or row.get("kind") != "cipher" else f" {fmt_bytes_binary(size)}"
    return f"{row['algorithm']} {row['operation']}{size_text}"


def live_energy_runs(times: pd.DataFrame, source: PowerSource, *, repeats: int = 3, idle_s: float = 0.05,
                     trace_dir: str | Path | None = None, seed: int | None = 0, progress: bool = True,
                     study: str = TOPIC, save: bool = True) -> list:
    """Energy of every row of ``times`` from a live ``source``, measured and recorded as a run by
    :func:`pqlab.runners.energy.energy_run`: ``[run]``; ``[]`` when there is no live source (nothing is measured)."""
    if not source.available:
        return []
    return [energy_run(times, source, repeats=repeats, idle_s=idle_s, study=study, trace_dir=trace_dir, seed=seed,
                       progress=progress, save=save)]


def live_rows(runs) -> pd.DataFrame | None:
    """The energy runs' rows with the columns :func:`energy_long` reads (``run_id`` names the run); None
    without a run."""
    if not runs:
        return None
    m = pd.concat([r.measurements for r in runs], ignore_index=True)
    return pd.DataFrame({"algorithm": m["algorithm"], "backend": m["backend"], "operation": m["operation"],
                         "message_bytes": m["message_bytes"], "energy_uj": m["energy_uj"],
                         "gross_energy_uj": m["gross_energy_uj"], "power_w": m["power_w"],
                         "baseline_w": m["baseline_w"], "window_time_ms": m["window_time_ns"] / 1e6,
                         "loops": m["loops"], "power_samples": m["power_samples"], "windows": m["samples"],
                         "energy_source": m["energy_source"], "run_id": m["run_id"]})


def describe_energy_here(ours: pd.DataFrame, live: PowerSource, runs) -> str:
    """What energy this run has (Markdown): none and why, or the bases and how many operations each, with
    the energy run's context line."""
    if ours.empty:
        return (f"**No energy was measured here**: {live.reason}; and `modelled_power_w` is not set, so none is "
                "modelled either. The figures below use the study's published energies.")
    text = "Energies here, by basis: " + ", ".join(
        f"**{b}** ({n} operations)" for b, n in ours.groupby("basis", sort=False).size().items()) + "."
    text += f" Energy run: {markdown(context_line(runs))}." if runs else ""
    shown = energy_here_table(ours).reset_index()  # one energy column per basis, in µJ
    keys = ["algorithm", "operation", "message_bytes"]
    columns = keys + [Column(c, str(c), "energy") for c in shown.columns if c not in keys]
    return f"{text}\n\n{table(shown, columns).to_markdown()}"


def energy_here_table(ours: pd.DataFrame) -> pd.DataFrame:
    """Our energies, one column per basis (µJ); empty without any."""
    if ours.empty:
        return pd.DataFrame()
    return ours.pivot_table(index=["algorithm", "operation", "message_bytes"], columns="basis", values="energy_uj",
                            dropna=False).dropna(how="all")


def energy_long(times: pd.DataFrame, live: pd.DataFrame | None = None,
                model: ModelledPower | None = None) -> pd.DataFrame:
    """Our energies in long form (one row per operation and basis): measured net and gross when
    ``live`` rows exist, modelled when ``model`` is given; empty when neither (nothing invented)."""
    keys = ["algorithm", "backend", "operation", "message_bytes"]
    base = times[["kind", "family", "nist_level", *keys, "time_ms", *[c for c in ("implementation",) if c in times]]]
    parts = []
    if live is not None and len(live):
        m = base.merge(live, on=keys, how="inner")
        for col, basis in (("energy_uj", MEASURED_NET), ("gross_energy_uj", MEASURED_GROSS)):
            parts.append(m.assign(energy_uj=m[col], basis=basis, source=m["energy_source"]))
    if model is not None:
        e = [model.energy(t * 1e6).energy_uj for t in base["time_ms"]]
        parts.append(base.assign(energy_uj=e, power_w=model.watts, basis=modelled_basis(model.watts),
                                 source=model.label))
    cols = ["kind", "family", "nist_level", *keys, "time_ms", "energy_uj", "basis", "source",
            *[c for c in ("implementation",) if c in times]]
    if not parts:
        return pd.DataFrame(columns=cols)
    return pd.concat([p[cols] for p in parts], ignore_index=True)


# ----- rankings, ratios, recommendations ----------------------------------------------------

def efficiency_ranking(long: pd.DataFrame) -> pd.DataFrame:
    """Operations per joule (1e6 / energy in uJ), best first, one row per (operation, basis);
    non-positive energies (a net value lost in noise) are left out."""
    df = long[pd.to_numeric(long["energy_uj"], errors="coerce") > 0].copy()
    df["ops_per_joule"] = 1e6 / df["energy_uj"].astype(float)
    df["label"] = [_label(r) for r in df.to_dict("records")]
    df.loc[df["basis"].map(is_modelled), "label"] += " (modelled)"
    return df.sort_values("ops_per_joule", ascending=False).reset_index(drop=True)


def our_rankings(ours: pd.DataFrame) -> list[tuple[str, str, pd.DataFrame]]:
    """(file name, title, :func:`efficiency_ranking`) per basis of our energies, ranked gross as the study
    did: net values near zero carry the baseline's noise."""
    return [("efficiency_ranking_" + ("modelled" if is_modelled(b) else "measured"), f"Operations per joule here: {b}",
             efficiency_ranking(g)) for b, g in ours.groupby("basis", sort=False) if b != MEASURED_NET]


def our_time_energy(ours: pd.DataFrame) -> list[tuple[str, str, pd.DataFrame]]:
    """(file name, title, rows) per basis of our energies for the time-against-energy figure (KEMs and
    signatures: the AEAD rows span payload sizes, another axis)."""
    return [(f"time_vs_energy_{slug(b, lower=True)}", f"Time against energy here: {b}", g[g["kind"] != "cipher"])
            for b, g in ours.groupby("basis", sort=False)]


def liboqs_id(name: str) -> str:
    """liboqs's id of an algorithm in oqsconfig.h: ML-KEM-768 -> ml_kem_768,
    SPHINCS+-SHA2-128s-simple -> sphincs_sha2_128s_simple."""
    return name.replace("+", "").replace("-", "_").lower()


def _liboqs_meta(runs) -> dict:
    """The metadata of the first run that loaded liboqs (empty when none did)."""
    return next((r.meta for r in runs if r.meta.get("liboqs")), {})


def code_here(algorithm: str, backend: str, runs) -> str:
    """Which code ran here for `algorithm`, from the runs' liboqs build record: the CPU-specific
    implementations compiled in (e.g. "avx2"), "portable C", or "not recorded"."""
    specific = (_liboqs_meta(runs).get("liboqs") or {}).get("cpu_specific")
    if backend != "liboqs" or specific is None:
        return "not recorded"
    return ", ".join(specific.get(liboqs_id(algorithm), [])) or "portable C"


def _samples_ms(runs, algorithm: str, backend: str, operation: str, message_bytes):
    """Our raw per-call times (ms) of one measurement, from whichever run holds them (labelled with their rounds)."""

    size = None if pd.isna(message_bytes) else int(message_bytes)
    return concat_values([r.sample_values(algorithm, operation, backend=backend, message_bytes=size) for r in runs]) / 1e6


def cross_platform(times: pd.DataFrame, reference: pd.DataFrame, runs) -> pd.DataFrame:
    """Pi 4 published time / our median time per (algorithm, operation) both have, largest first, with a
    interval over rounds from our samples in ``runs`` only (:func:`pqlab.measure.stats.ratio_to_published`: the
    published time is one number, of an unstated statistic, with no interval); ``code_here`` names the
    code liboqs ran here (:func:`code_here`). A ratio of 10: ten times longer on the study's Pi 4."""
    ours = times[times["kind"].isin(["kem", "sig"])]
    ours = ours.sort_values("backend", key=lambda s: s.ne("liboqs")).drop_duplicates(["algorithm", "operation"])
    m = ours[["algorithm", "backend", "family", "nist_level", "operation", "message_bytes", "time_ms"]].merge(
        reference[["algorithm", "operation", "time_ms"]].rename(columns={"time_ms": "pi_time_ms"}),
        on=["algorithm", "operation"], how="inner").rename(columns={"time_ms": "here_time_ms"})
    rows = []
    for r in m.itertuples():
        samples = _samples_ms(runs, r.algorithm, r.backend, r.operation, r.message_bytes)
        ratio, low, high = ratio_to_published(r.pi_time_ms, samples, "median")
        rows.append({"here_samples": len(samples), "pi_over_here": ratio, "pi_over_here_ci_low": low,
                     "pi_over_here_ci_high": high, "code_here": code_here(r.algorithm, r.backend, runs)})
    m = pd.concat([m.reset_index(drop=True), pd.DataFrame(rows, index=range(len(m)))], axis=1)
    m["label"] = m["algorithm"] + " " + m["operation"]
    return m.sort_values("pi_over_here", ascending=False).reset_index(drop=True)


def cross_platform_caption() -> str:
    """The caption of the Pi/here table and figure: what the interval covers, and what it cannot."""
    return (f"Pi 4 published time / median time here, with a {fmt_percent(CONFIDENCE, 0)} interval over rounds from our "
            "samples only: the published time is a single number (its statistic unstated) with no interval")


def cross_platform_markdown(ratios: pd.DataFrame, n: int = 3) -> str:
    """Which operations lose most (and least) on the Pi 4, generated from the ratios."""
    if ratios.empty:
        return "No operation was measured both here and in the study."
    r = ratios.sort_values("pi_over_here", ascending=False)

    def items(df) -> str:
        return "; ".join(f"{x.algorithm} {x.operation} {fmt_factor_ci(x.pi_over_here, x.pi_over_here_ci_low, x.pi_over_here_ci_high)} "
                         f"({fmt_time_ms(x.pi_time_ms)} on the Pi, {fmt_time_ms(x.here_time_ms)} here)"
                         for x in df.itertuples())

    fam = r.groupby("family")["pi_over_here"].median().sort_values(ascending=False)
    slower = int((r["pi_over_here_ci_low"] > 1).sum())
    text = (f"Of the {len(r)} operations measured both here and on the study's Pi 4, {slower} took longer on the Pi "
            f"(the whole interval above one); the median factor is {fmt_factor(r['pi_over_here'].median())}. Intervals "
            f"({fmt_percent(CONFIDENCE, 0)}, over rounds) come from our samples only: the published times are single "
            f"numbers. **Largest losses on the Pi:** {items(r.head(n))}. **Smallest:** {items(r.tail(n).iloc[::-1])}. "
            "Median factor by family: " + ", ".join(f"{f} {fmt_factor(v)}" for f, v in fam.items()) + ".")
    rho = rank_correlation(r["pi_time_ms"], r["here_time_ms"]) if len(r) >= 3 else float("nan")
    if np.isfinite(rho):
        text += (f" The *order* of the operations by time agrees "
                 f"{'closely' if rho >= 0.9 else 'partly' if rho >= 0.5 else 'poorly'} (Spearman rank correlation "
                 f"{rho:.2f})" + (": the factors differ, the ranking does not." if rho >= 0.9 else "."))
    known = r[r["code_here"] != "not recorded"]
    portable = known["code_here"] == "portable C"
    if portable.any() and (~portable).any():
        text += (f" Median factor where liboqs ran CPU-specific code here: {fmt_factor(known.loc[~portable, 'pi_over_here'].median())} "
                 f"({int((~portable).sum())} operations); where it ran portable C: "
                 f"{fmt_factor(known.loc[portable, 'pi_over_here'].median())} ({int(portable.sum())}); the Pi's build is "
                 "unknown, so which code ran there is not known.")
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
    dispatch = ("a dist build: it picks CPU-specific code at run time where the CPU has the extensions that code "
                "needs" if config.get("OQS_DIST_BUILD") == "1" else
                f"built for target '{config.get('OQS_OPT_TARGET', 'unknown')}'")
    model, ext = cpu.get("model") or "model unknown", info.get("cpu_extensions")
    if ext is None:  # a run recorded before liboqs's own detection was: the CPU's flag
        found = f"the CPU ({model}) {'reports' if cpu.get('flags_avx2') else 'does not report'} AVX2"
    else:
        found = (f"on this CPU ({model}) liboqs detects {', '.join(ext) or 'no extension it dispatches on'}")
    text = (f"**Here:** liboqs {info.get('liboqs_version', 'of unknown version')}, {info.get('options', 'unknown')} "
            f"build ({dispatch}); {found}.")
    specific = info.get("cpu_specific")
    if specific is None:
        return f"{text} Which CPU-specific code the build compiled in was not recorded by this run. {pi}"
    algorithms = sorted({a for r in runs for a in r.measurements.loc[r.measurements["backend"] == "liboqs", "algorithm"]})
    ids = {a: liboqs_id(a) for a in algorithms}
    compiled = [f"{a} ({', '.join(specific[i])})" for a, i in ids.items() if i in specific]
    portable = [a for a, i in ids.items() if i not in specific]
    if compiled:
        text += f" CPU-specific code compiled in for {', '.join(compiled)}."
    if portable:
        text += f" Portable C only for {', '.join(portable)}."
    if "xkcp_low" in specific:
        text += (" The Keccak code under SHA-3 and SHAKE, which most of these schemes hash with, has a CPU-specific "
                 f"version ({', '.join(specific['xkcp_low'])}) too.")
    return f"{text} {pi}"


def rank_correlation(a: pd.Series, b: pd.Series) -> float:
    """Spearman's rank correlation (Pearson on average ranks); nan when either side has one value only."""
    ra, rb = pd.Series(a).rank().to_numpy(), pd.Series(b).rank().to_numpy()
    if np.ptp(ra) == 0 or np.ptp(rb) == 0:
        return float("nan")
    return float(np.corrcoef(ra, rb)[0, 1])


def use_totals(times: pd.DataFrame, value: str = "time_ms") -> pd.DataFrame:
    """Per algorithm (and message size for AEADs): the sum of ``value`` over the operations of one
    use (:data:`USE`), with the row's ``implementation`` where the table has one; algorithms missing one of
    the operations are left out."""
    rows = []
    keys = ["kind", "algorithm", "backend", "family", "nist_level", "implementation"]
    df = times.copy()
    if "implementation" not in df:
        df["implementation"] = None
    df["size"] = df["message_bytes"].where(df["kind"] == "cipher")
    for (kind, algorithm, backend, family, level, implementation), g in df.groupby(keys, dropna=False, sort=False):
        ops = USE.get(kind, ())
        per_size = g[g["operation"].isin(ops)].groupby("size", dropna=False)
        for size, h in per_size:
            if set(ops) <= set(h["operation"]):
                rows.append({"kind": kind, "algorithm": algorithm, "backend": backend, "family": family,
                             "nist_level": level, "implementation": implementation, "message_bytes": size,
                             value: h.drop_duplicates("operation")[value].sum()})
    return pd.DataFrame(rows)


#: The language of the code that does the work behind each backend (every call here is made from Python; this is
#: what runs under it), and the Python binding where the implementation's name does not say it.
LANGUAGE = {b.name: b.language for b in BACKENDS if b.module}
BINDING = {b.name: b.binding for b in BACKENDS if b.binding}
PURE_PYTHON = "pure Python"


def implementation_label(backend, implementation=None) -> str:
    """What ran for a row, for prose (Markdown): the language of the code doing the work (:data:`LANGUAGE`)
    and the implementation the run recorded, e.g. "C (liboqs 0.13.0 (default build), through liboqs-python)"."""
    impl = markdown(implementation) if isinstance(implementation, str) and implementation else markdown(backend)
    if str(backend) in BINDING:
        impl += f", through {BINDING[str(backend)]}"
    return f"{LANGUAGE.get(str(backend), 'language not recorded')} ({impl})"


def what_ran(rows) -> str:
    """" What ran: A and B in C (liboqs ...); X in C and assembly (cryptography ...)." for the rows a sentence
    compares (each with ``algorithm``, ``backend`` and, where recorded, ``implementation``), and a warning
    where pure Python stands beside compiled code."""
    groups: dict[str, list[str]] = {}
    for r in rows:
        label = implementation_label(r.backend, getattr(r, "implementation", None))
        groups.setdefault(label, [])
        if r.algorithm not in groups[label]:
            groups[label].append(r.algorithm)
    text = " What ran: " + "; ".join(f"{' and '.join(names)} in {label}" for label, names in groups.items()) + "."
    python = [r.algorithm for r in rows if LANGUAGE.get(str(r.backend)) == PURE_PYTHON]
    if python and len(python) < len(rows):
        text += (f" {' and '.join(dict.fromkeys(python))} {'runs' if len(set(python)) == 1 else 'run'} in "
                 f"{PURE_PYTHON} beside compiled code: the gap measures the interpreter as much as the algorithm.")
    return text


def _is_pq(family) -> bool:
    return family not in CLASSICAL_PUBLIC_KEY


def _ops(kind: str) -> str:
    return " + ".join(USE[kind])


def _latency(t: pd.DataFrame) -> list[str]:
    out = []
    for kind in ("kem", "sig"):
        k = t[t["kind"] == kind].sort_values("time_ms")
        pq = k[k["family"].map(_is_pq)]
        if pq.empty:
            continue
        best = pq.iloc[0]
        named = [best]
        text = f"- **{KIND_LABEL[kind]}:** {best.algorithm} ({_ops(kind)} {fmt_time_ms(best.time_ms)} here"
        if len(pq) > 1:
            text += f"; next {pq.iloc[1].algorithm} {fmt_time_ms(pq.iloc[1].time_ms)}"
            named.append(pq.iloc[1])
        classical = k[~k["family"].map(_is_pq)]
        if not classical.empty:
            c = classical.iloc[0]
            text += (f"; the fastest classical one, {c.algorithm}, not quantum-resistant, takes "
                     f"{fmt_time_ms(c.time_ms)}")
            named.append(c)
        out.append(text + ")." + what_ran(named))
    a = t[t["kind"] == "cipher"]
    if not a.empty:
        sizes = sorted(a["message_bytes"].dropna().unique())
        fastest = [a[a["message_bytes"] == size].sort_values("time_ms").iloc[0] for size in sizes]
        picks = [fastest[0]] if len(fastest) == 1 else [fastest[0], fastest[-1]]
        text = (f"- **AEAD** ({_ops('cipher')}, {fmt_bytes_binary(sizes[0])} to {fmt_bytes_binary(sizes[-1])}): fastest "
                + " and ".join(f"{r.algorithm} at {fmt_bytes_binary(r.message_bytes)} ({fmt_time_ms(r.time_ms)})"
                               for r in picks))
        named = list(picks)
        big = a[a["message_bytes"] == sizes[-1]].sort_values("time_ms")
        if len(big) > 1:
            slow = big.iloc[-1]
            text += f"; the slowest at {fmt_bytes_binary(sizes[-1])}, {slow.algorithm}, takes {fmt_time_ms(slow.time_ms)}"
            named.append(slow)
        out.append(text + "." + what_ran(named))
    return out


def _energy_lines(e: pd.DataFrame, where: str, published: bool = False) -> list[str]:
    """Lowest and highest energy per use; the factor between them only for published energies (two
    printed numbers: no interval exists to give), ours are given as values."""
    e = e[e["energy_uj"] > 0]  # a ranking by energy needs energies; non-positive net values say nothing
    out = []
    for kind in ("kem", "sig"):
        k = e[e["kind"] == kind].sort_values("energy_uj")
        if k.empty:
            continue
        best, worst = k.iloc[0], k.iloc[-1]
        text = f"- **{KIND_LABEL[kind]}**, {where}: {best.algorithm}, {fmt_energy_uj(best.energy_uj)} per {_ops(kind)}"
        if len(k) > 1:
            text += f"; avoid {worst.algorithm} for frequent use: {fmt_energy_uj(worst.energy_uj)}"
            if published:
                text += f", {fmt_factor(worst.energy_uj / best.energy_uj)} as much (published numbers, no interval)"
        out.append(text + "." + ("" if published else what_ran([best, worst] if len(k) > 1 else [best])))
    a = e[e["kind"] == "cipher"]
    if not a.empty:
        sizes = sorted(a["message_bytes"].dropna().unique())
        picks, named = [], []
        for size in ([sizes[0], sizes[-1]] if len(sizes) > 1 else sizes):
            s = a[a["message_bytes"] == size].sort_values("energy_uj")
            picks.append(f"{s.iloc[0].algorithm} at {fmt_bytes_binary(size)} ({fmt_energy_uj(s.iloc[0].energy_uj)})")
            named.append(s.iloc[0])
        out.append(f"- **AEAD**, {where}: lowest energy " + " and ".join(picks) + "." + what_ran(named))
    return out


def _max_security(t: pd.DataFrame, pub: pd.DataFrame | None) -> list[str]:
    out = []
    for kind in ("kem", "sig", "cipher"):
        k = t[(t["kind"] == kind) & t["nist_level"].notna()]
        if k.empty:
            continue
        if kind == "cipher":
            k = k[k["message_bytes"] == k["message_bytes"].max()]
        top = int(k["nist_level"].max())
        at = k[k["nist_level"] == top].sort_values("time_ms")

        def cost(r) -> str:
            text = fmt_time_ms(r.time_ms) + " here"
            if pub is not None:
                p = pub[pub["algorithm"] == r.algorithm]
                if len(p):
                    text += f", {fmt_energy_uj(p['energy_uj'].iloc[0])} on the Pi"
            return text

        listed = "; ".join(f"{r.algorithm} ({cost(r)})" for r in at.itertuples())
        size = f" at {fmt_bytes_binary(at['message_bytes'].iloc[0])}" if kind == "cipher" else ""
        text = (f"- **{KIND_LABEL[kind]}** (NIST level {top}, the highest measured; {_ops(kind)}{size}): {listed}. "
                f"Fastest here: **{at.iloc[0].algorithm}**")
        if pub is not None:
            p = pub[pub["algorithm"].isin(at["algorithm"])].sort_values("energy_uj")
            if len(p) > 1 and p.iloc[0].algorithm != at.iloc[0].algorithm:
                text += f"; least energy on the Pi: **{p.iloc[0].algorithm}**"
        other = at[at["family"] != at.iloc[0].family]
        if kind != "cipher" and not other.empty:
            text += (f"; the fastest resting on a different assumption than {at.iloc[0].family} is "
                     f"**{other.iloc[0].algorithm}** ({other.iloc[0].family}, {fmt_time_ms(other.iloc[0].time_ms)})")
        shown = list(at.itertuples()) + ([other.iloc[0]] if kind != "cipher" and not other.empty else [])
        out.append(text + "." + what_ran(shown))
    return out


def recommendations_markdown(times: pd.DataFrame, reference: pd.DataFrame | None = None,
                             ours: pd.DataFrame | None = None, setup: pd.DataFrame | None = None,
                             runs=()) -> str:
    """Recommendations per use case, generated from the data; under them, the caveat of every implementation `runs`
    timed that fails its known-answer checks (:func:`pqlab.studies.conforming.caveat`).

    ``times``: :func:`timing_table` (ours); ``reference``: the study's table (published, gross
    energy); ``ours``: :func:`energy_long` rows (measured or modelled energies), optional.
    Latency-critical: the fastest post-quantum algorithm per kind here (sum over one use).
    Energy-constrained: the lowest published energy, and ours when there is any (labelled).
    Maximum security: the highest NIST level measured, its algorithms with their cost.
    Every item comparing algorithms of ours says what ran them (:func:`what_ran`: language and
    implementation, from the rows), and where pure Python stands beside compiled code; ``setup``: the study's set-up
    table, for what ran its rows.
    """
    t = use_totals(times)
    lines = ["### Latency-critical", "", "By the time of one use here (median, summed over its operations; every call is "
             "made from Python, and each item says what code did the work):", ""]
    lines += _latency(t)
    lines += ["", "### Energy-constrained", ""]
    pub = None
    if reference is not None and len(reference):
        pub = use_totals(reference_long(reference).assign(backend="Pi 4 study"), "energy_uj")
        ran = (f"liboqs '{markdown(setup_text(setup, 'liboqs'))}' from Python {markdown(setup_text(setup, 'python'))}"
               if setup is not None else "liboqs from Python")
        lines += [f"From the study's published energies (Raspberry Pi 4, gross: whole-board energy, the board's idle draw "
                  f"included; one implementation for every row, the study's {ran}):", ""]
        lines += _energy_lines(pub, "Pi 4, published", published=True)
    if ours is not None and len(ours):
        groups = dict(list(ours.groupby("basis", sort=False)))
        for basis, g in groups.items():
            if basis == MEASURED_GROSS:
                continue
            e = use_totals(g, "energy_uj")
            if is_modelled(basis):
                lines += ["", f"Modelled here, {basis}: a constant power, so this ranks exactly as time does:", ""]
            else:
                lines += ["", f"Measured here (source {g['source'].iloc[0]}), energy net of the idle baseline:", ""]
                lost = sorted(e.loc[~(e["energy_uj"] > 0), "algorithm"].unique())
                if lost and MEASURED_GROSS in groups:
                    lines += [f"The net energy of one use is at or below zero for {len(lost)} algorithm(s) "
                              f"({', '.join(lost)}): their power stayed within the baseline's noise. Ranked by "
                              "gross energy (baseline included) instead:", ""]
                    basis, e = MEASURED_GROSS, use_totals(groups[MEASURED_GROSS], "energy_uj")
            lines += _energy_lines(e, basis)
    has_aead_energy = ours is not None and (ours["kind"] == "cipher").any()
    if (t["kind"] == "cipher").any() and not has_aead_energy:
        lines += ["", "- **AEAD:** no energy: the study published none for its AEADs and no power source "
                  "measured any here. Time is the only guide (it predicts energy only where power is constant): "
                  "see the latency-critical pick above."]
    lines += ["", "### Maximum security", ""]
    lines += _max_security(t, pub)
    classical = sorted(t.loc[~t["family"].map(_is_pq) & t["kind"].isin(["kem", "sig"]), "algorithm"].unique())
    if classical:
        lines += ["", f"The classical baselines ({', '.join(classical)}) have no NIST post-quantum level: a quantum "
                  "computer running Shor's algorithm would break them."]
    warning = conforming.caveat(runs)
    if warning:
        lines += ["", "### Conformance", "", warning]
    return "\n".join(lines)


# ----- names and order ---------------------------------------------------------------------

def scheme_of(name: str) -> str:
    """The scheme without its parameter set: ML-KEM-768 -> ML-KEM, SPHINCS+-SHA2-128s-simple ->
    SPHINCS+-SHA2-s-simple."""
    return re.sub(r"-\d+([a-z]?)(?=-|$)", lambda m: f"-{m.group(1)}" if m.group(1) else "", name)


def short_name(name: str) -> str:
    """A compact label for crowded figures: Classic-McEliece-348864 -> McEliece-348864,
    SPHINCS+-SHA2-128s-simple -> SPHINCS+-128s."""
    return name.replace("Classic-McEliece-", "McEliece-").replace("SPHINCS+-SHA2-", "SPHINCS+-").replace("-simple", "")


OPERATION_ORDER = ("keygen", "encaps", "decaps", "sign", "verify", "encrypt", "decrypt")



def _parameter(name: str) -> int:
    """The parameter-set number of a name (ML-KEM-768 -> 768; SPHINCS+-SHA2-128s -> 128), else 0."""
    numbers = re.findall(r"\d+", name.replace("SHA2", "").replace("P256", ""))
    return int(numbers[-1]) if numbers else 0


def sorted_rows(df: pd.DataFrame) -> pd.DataFrame:
    """KEMs, then signatures, then AEADs; by family, scheme, parameter set and operation order."""
    kinds = {k: i for i, k in enumerate(KIND_LABEL)}
    ops = {o: i for i, o in enumerate(OPERATION_ORDER)}
    key = {"kind": kinds.get, "operation": ops.get, "_scheme": scheme_of, "_param": _parameter}
    out = df.assign(_scheme=df["algorithm"], _param=df["algorithm"])
    out = out.sort_values(["kind", "family", "_scheme", "_param", "operation"],
                          key=lambda s: s.map(key[s.name]) if s.name in key else s)
    return out.drop(columns=["_scheme", "_param"])


def vi_samples(trace_dir: str | Path) -> pd.DataFrame | None:
    """Voltage and current samples of every trace in ``trace_dir`` (relative: under data/raw/)
    that has both (INA219 traces do), with the source label; None when there are none."""
    folder = Path(trace_dir)
    folder = folder if folder.is_absolute() else RAW / folder
    frames = []  # a folder that does not exist (no live source) has no traces
    for f in sorted(folder.glob("*.csv")):
        tr = read_trace(f)
        if tr.voltage_v is not None and tr.current_a is not None:
            frames.append(pd.DataFrame({"voltage_v": tr.voltage_v, "current_a": tr.current_a, "source": tr.source}))
    return pd.concat(frames, ignore_index=True) if frames else None


def heatmap_matrix(times: pd.DataFrame, reference: pd.DataFrame, ours: pd.DataFrame | None = None) -> pd.DataFrame:
    """All metrics per (algorithm, operation) of the KEMs and signatures: our time, the study's
    time, power and gross energy, and our energies by basis when present (ratios, which need their
    intervals, are in :func:`cross_platform`)."""
    t = times[times["kind"].isin(["kem", "sig"])]
    t = t.sort_values("backend", key=lambda s: s.ne("liboqs")).drop_duplicates(["algorithm", "operation"])
    m = t[["kind", "family", "algorithm", "operation", "time_ms"]].rename(columns={"time_ms": "time here (ms)"})
    ref = reference.rename(columns={"time_ms": "time Pi 4 (ms)", "power_w": "power Pi 4 (W)",
                                    "energy_uj": "energy Pi 4, gross (µJ)"})
    m = m.merge(ref[["algorithm", "operation", "time Pi 4 (ms)", "power Pi 4 (W)", "energy Pi 4, gross (µJ)"]],
                on=["algorithm", "operation"], how="left")
    if ours is not None and len(ours):
        for basis, g in ours[ours["kind"].isin(["kem", "sig"])].groupby("basis", sort=False):
            col = f"energy here, {basis} (µJ)"
            g = g.sort_values("backend", key=lambda s: s.ne("liboqs")).drop_duplicates(["algorithm", "operation"])
            m = m.merge(g[["algorithm", "operation", "energy_uj"]].rename(columns={"energy_uj": col}),
                        on=["algorithm", "operation"], how="left")
    m = sorted_rows(m)
    m.index = m["algorithm"] + " " + m["operation"]
    return m.drop(columns=["kind", "family", "algorithm", "operation"])




def numbers(reference: pd.DataFrame, setup: pd.DataFrame, sensitivity: pd.DataFrame, ratios: pd.DataFrame,
            run) -> dict[str, float | int | str]:
    """Every number notebook 05 quotes in its prose, by a stable name (for LaTeX macros); ``energy_mldsa_caveat``:
    the ML-DSA conformance sentence of `run` (:func:`pqlab.studies.conforming.paper_caveat`)."""
    check = time_power_check(reference)
    worst = check.loc[check["deviation_pct"].abs().idxmax()]
    power = effective_power(reference)
    period_ms = 1e3 / setup_value(setup, "power_sample_rate")
    envelope = envelope_w(setup)
    lo, hi = sensitivity.iloc[0], sensitivity.iloc[-1]
    return {
        "study_rows": len(reference), "study_rows_beyond_rounding": int(check["beyond_rounding"].sum()),
        "study_worst_deviation_pct": float(worst["deviation_pct"]),
        "study_worst_deviation_rounding_pct": float(max(-worst["rounding_low_pct"], worst["rounding_high_pct"])),
        "study_sample_rate_hz": setup_value(setup, "power_sample_rate"),
        "study_rows_shorter_than_a_sample": int((reference["time_ms"] < period_ms).sum()),
        "idle_majority_of_every_row_from_w": float(power.max() / 2),
        "idle_majority_of_no_row_below_w": float(power.min() / 2),
        "idle_assumed_low_w": float(lo["assumed_idle_w"]), "idle_majority_rows_at_low": int(lo["idle_majority_rows"]),
        "idle_assumed_high_w": float(hi["assumed_idle_w"]), "idle_majority_rows_at_high": int(hi["idle_majority_rows"]),
        "envelope_max_w": envelope, "study_rows_above_envelope": int((reference["power_w"] > envelope).sum()),
        "pi_over_here_median": float(ratios["pi_over_here"].median()),
        "pi_over_here_min": float(ratios["pi_over_here"].min()), "pi_over_here_max": float(ratios["pi_over_here"].max()),
        "operations_compared": len(ratios), "operations_slower_on_pi": int((ratios["pi_over_here_ci_low"] > 1).sum()),
        "harness_overhead_ns": float(run.meta.get("harness_overhead_ns", float("nan"))),
        "energy_mldsa_caveat": conforming.paper_caveat(run, "ML-DSA"),
    }
