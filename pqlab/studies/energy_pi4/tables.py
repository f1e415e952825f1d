"""The tables of notebook 05: our times, the algorithms measured, failures, our energies by basis,
efficiency rankings, use totals, the Pi/here time ratios with their intervals, the all-metrics matrix and
every number the prose quotes."""
from __future__ import annotations

import numpy as np
import pandas as pd

from pqlab.backends.algorithms import get
from pqlab.core.formatting import fmt_bytes_binary, fmt_factor_ci, fmt_percent, slug
from pqlab.core.schema import convert_unit
from pqlab.measure.stats import CONFIDENCE, ratio_to_published
from pqlab.store.results import concat_values, verified_rows
from pqlab.studies import conforming
from pqlab.studies.energy_pi4.names import KIND_LABEL, MEASURED_NET, USE, is_modelled, sorted_rows
from pqlab.studies.energy_pi4.published import (
    effective_power,
    envelope_w,
    sample_period_ms,
    setup_value,
    time_power_check,
)

# ----- our times ----------------------------------------------------------------------------


def timing_table(measurements: pd.DataFrame) -> pd.DataFrame:
    """Verified rows of runs as: algorithm, backend, kind, family, nist_level, operation, message_bytes,
    time_ms (median), q1_ms, q3_ms, rel_ci (precision reached), samples, implementation, flags."""
    df = verified_rows(measurements)
    pairs = df[["algorithm", "backend"]].drop_duplicates()
    kinds = {(a, b): get(a, b).kind for a, b in pairs.itertuples(index=False)}
    out = pd.DataFrame({
        "algorithm": df["algorithm"], "backend": df["backend"],
        "kind": [kinds[(a, b)] for a, b in zip(df["algorithm"], df["backend"], strict=True)],
        "family": df["family"], "nist_level": df["nist_level"].astype("Int64"), "operation": df["operation"],
        "message_bytes": df["message_bytes"].astype("Int64"),
        "time_ms": convert_unit(df["time_ns_median"], "ns", "ms"),
        "q1_ms": convert_unit(df["time_ns_q1"], "ns", "ms"),
        "q3_ms": convert_unit(df["time_ns_q3"], "ns", "ms"),
        "rel_ci": df["time_ns_rel_ci"], "samples": df["samples"],
        "implementation": df["implementation"], "flags": df["flags"].fillna("")})
    return out.reset_index(drop=True)


def aead_table(times: pd.DataFrame) -> pd.DataFrame:
    """Our AEAD medians (ms): one row per algorithm and operation, one column per payload (bytes)."""
    return times[times["kind"] == "cipher"].pivot_table(index=["algorithm", "operation"],
                                                         columns="message_bytes", values="time_ms")


def failures(measurements: pd.DataFrame) -> pd.DataFrame:
    """Rows that failed (an exception or a wrong output), with the reason."""
    bad = measurements[~measurements["verified"].fillna(False).astype(bool)]
    return bad[["algorithm", "backend", "operation", "message_bytes", "flags"]].reset_index(drop=True)


def algorithm_table(times: pd.DataFrame, sizes: pd.DataFrame) -> pd.DataFrame:
    """Algorithms measured, with NIST level and the sizes that do not vary between key pairs."""
    algos = times.drop_duplicates(["algorithm", "backend"])
    algos = algos[["kind", "algorithm", "backend", "family", "nist_level"]]
    cols = ["public_key_bytes", "ciphertext_bytes", "shared_secret_bytes", "signature_max_bytes",
            "symmetric_key_bytes"]
    s = sizes.drop_duplicates(["algorithm", "backend"])
    s = s[["algorithm", "backend", *[c for c in cols if c in sizes]]]
    out = algos.merge(s, on=["algorithm", "backend"], how="left")
    for c in cols:
        if c in out:
            out[c] = out[c].astype("Int64")
    order = {k: i for i, k in enumerate(KIND_LABEL)}
    out = out.sort_values(["kind", "algorithm"], key=lambda s: s.map(order) if s.name == "kind" else s)
    out["kind"] = out["kind"].map(KIND_LABEL)
    return out.reset_index(drop=True)


def use_totals(times: pd.DataFrame, value: str = "time_ms") -> pd.DataFrame:
    """Per algorithm (and message size for AEADs): the sum of ``value`` over the operations of one
    use (:data:`~.names.USE`), with the row's ``implementation`` where the table has one; algorithms missing
    one of the operations are left out."""
    rows = []
    keys = ["kind", "algorithm", "backend", "family", "nist_level", "implementation"]
    df = times.copy()
    if "implementation" not in df:
        df["implementation"] = None
    df["size"] = df["message_bytes"].where(df["kind"] == "cipher")
    groups = df.groupby(keys, dropna=False, sort=False)
    for (kind, algorithm, backend, family, level, implementation), g in groups:
        ops = USE.get(kind, ())
        per_size = g[g["operation"].isin(ops)].groupby("size", dropna=False)
        for size, h in per_size:
            if set(ops) <= set(h["operation"]):
                rows.append({"kind": kind, "algorithm": algorithm, "backend": backend, "family": family,
                             "nist_level": level, "implementation": implementation, "message_bytes": size,
                             value: h.drop_duplicates("operation")[value].sum()})
    return pd.DataFrame(rows)


# ----- our energies, rankings ---------------------------------------------------------------

def energy_here_table(ours: pd.DataFrame) -> pd.DataFrame:
    """Our energies, one column per basis (µJ); empty without any."""
    if ours.empty:
        return pd.DataFrame()
    return ours.pivot_table(index=["algorithm", "operation", "message_bytes"], columns="basis",
                            values="energy_uj", dropna=False).dropna(how="all")


def _label(row) -> str:
    size = row.get("message_bytes")
    plain = size is None or pd.isna(size) or row.get("kind") != "cipher"
    size_text = "" if plain else f" {fmt_bytes_binary(size)}"
    return f"{row['algorithm']} {row['operation']}{size_text}"


def efficiency_ranking(long: pd.DataFrame) -> pd.DataFrame:
    """Operations per joule (1e6 / energy in uJ), best first, one row per (operation, basis);
    non-positive energies (a net value lost in noise) are left out."""
    df = long[pd.to_numeric(long["energy_uj"], errors="coerce") > 0].copy()
    df["ops_per_joule"] = convert_unit(1.0, "J", "µJ") / df["energy_uj"].astype(float)  # µJ in a joule / µJ
    df["label"] = [_label(r) for r in df.to_dict("records")]
    df.loc[df["basis"].map(is_modelled), "label"] += " (modelled)"
    return df.sort_values("ops_per_joule", ascending=False).reset_index(drop=True)


def our_rankings(ours: pd.DataFrame) -> list[tuple[str, str, pd.DataFrame]]:
    """(file name, title, :func:`efficiency_ranking`) per basis of our energies, ranked gross as the study
    did: net values near zero carry the baseline's noise."""
    return [("efficiency_ranking_" + ("modelled" if is_modelled(b) else "measured"),
             f"Operations per joule here: {b}", efficiency_ranking(g))
            for b, g in ours.groupby("basis", sort=False) if b != MEASURED_NET]


def our_time_energy(ours: pd.DataFrame) -> list[tuple[str, str, pd.DataFrame]]:
    """(file name, title, rows) per basis of our energies for the time-against-energy figure (KEMs and
    signatures: the AEAD rows span payload sizes, another axis)."""
    return [(f"time_vs_energy_{slug(b, lower=True)}", f"Time against energy here: {b}",
             g[g["kind"] != "cipher"]) for b, g in ours.groupby("basis", sort=False)]


# ----- Pi / here ----------------------------------------------------------------------------

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
    """Our raw per-call times (ms) of one measurement, from whichever run holds them (labelled with their
    rounds)."""

    size = None if pd.isna(message_bytes) else int(message_bytes)
    samples = concat_values([r.sample_values(algorithm, operation, backend=backend, message_bytes=size)
                             for r in runs])
    return convert_unit(samples, "ns", "ms")


def cross_platform(times: pd.DataFrame, reference: pd.DataFrame, runs) -> pd.DataFrame:
    """Pi 4 published time / our median time per (algorithm, operation) both have, largest first, with a
    interval over rounds from our samples in ``runs`` only (:func:`pqlab.measure.stats.ratio_to_published`:
    the published time is one number, of an unstated statistic, with no interval); ``code_here`` names the
    code liboqs ran here (:func:`code_here`). A ratio of 10: ten times longer on the study's Pi 4."""
    ours = _liboqs_first(times[times["kind"].isin(["kem", "sig"])])
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


def rank_correlation(a: pd.Series, b: pd.Series) -> float:
    """Spearman's rank correlation (Pearson on average ranks); nan when either side has one value only."""
    ra, rb = pd.Series(a).rank().to_numpy(), pd.Series(b).rank().to_numpy()
    if np.ptp(ra) == 0 or np.ptp(rb) == 0:
        return float("nan")
    return float(np.corrcoef(ra, rb)[0, 1])


def _liboqs_first(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per (algorithm, operation): liboqs's where it has one, else the first backend's."""
    first = rows.sort_values("backend", key=lambda s: s.ne("liboqs"))
    return first.drop_duplicates(["algorithm", "operation"])


def heatmap_matrix(times: pd.DataFrame, reference: pd.DataFrame,
                   ours: pd.DataFrame | None = None) -> pd.DataFrame:
    """All metrics per (algorithm, operation) of the KEMs and signatures: our time, the study's
    time, power and gross energy, and our energies by basis when present (ratios, which need their
    intervals, are in :func:`cross_platform`)."""
    t = _liboqs_first(times[times["kind"].isin(["kem", "sig"])])
    m = t[["kind", "family", "algorithm", "operation", "time_ms"]]
    m = m.rename(columns={"time_ms": "time here (ms)"})
    ref = reference.rename(columns={"time_ms": "time Pi 4 (ms)", "power_w": "power Pi 4 (W)",
                                    "energy_uj": "energy Pi 4, gross (µJ)"})
    m = m.merge(ref[["algorithm", "operation", "time Pi 4 (ms)", "power Pi 4 (W)",
                     "energy Pi 4, gross (µJ)"]], on=["algorithm", "operation"], how="left")
    if ours is not None and len(ours):
        for basis, g in ours[ours["kind"].isin(["kem", "sig"])].groupby("basis", sort=False):
            col = f"energy here, {basis} (µJ)"
            g = _liboqs_first(g)
            m = m.merge(g[["algorithm", "operation", "energy_uj"]].rename(columns={"energy_uj": col}),
                        on=["algorithm", "operation"], how="left")
    m = sorted_rows(m)
    m.index = m["algorithm"] + " " + m["operation"]
    return m.drop(columns=["kind", "family", "algorithm", "operation"])


#: how :func:`median_factor`'s interval is made (prose beside it says so)
MEDIAN_FACTOR = ("the median over operations; its interval is the medians of the operations' interval ends, "
                 "from our side only")


def median_factor(ratios: pd.DataFrame) -> tuple[float, float, float]:
    """The median over operations of the published Pi time over ours, with an interval: the medians of the
    operations' interval ends (a median is monotone in each value, so where every operation's interval holds
    its value, these hold the median); (nan, nan) bounds where no operation has an interval."""
    low, high = ratios["pi_over_here_ci_low"], ratios["pi_over_here_ci_high"]
    both = low.notna() & high.notna()
    if not both.all():
        return float(ratios["pi_over_here"].median()), float("nan"), float("nan")
    return (float(ratios["pi_over_here"].median()), float(low.median()), float(high.median()))


def pi_over_here_median(ratios: pd.DataFrame) -> dict:
    """The median over operations of the Pi 4's published time over our median time, with its interval
    (:func:`median_factor`) and, for the paper, as text: the factor, its interval, what the interval is and
    that the study does not state its published times' statistic."""
    value, low, high = median_factor(ratios)
    shown = fmt_factor_ci(value, low, high)
    why = (f"{MEDIAN_FACTOR}, each a {fmt_percent(CONFIDENCE, 0)} interval over rounds" if np.isfinite(low)
           else "no interval: an operation of ours was measured without rounds")
    text = (f"{shown} ({why}; the Pi's times are published single values whose statistic the study does not "
            "state)")
    return {"pi_over_here_median": value, "pi_over_here_median_ci_low": low,
            "pi_over_here_median_ci_high": high, "pi_over_here_median_with_caveat": text}


def numbers(reference: pd.DataFrame, setup: pd.DataFrame, sensitivity: pd.DataFrame, ratios: pd.DataFrame,
            run) -> dict[str, float | int | str]:
    """Every number notebook 05 quotes in its prose, by a stable name (for LaTeX macros);
    ``energy_mldsa_caveat``: the ML-DSA conformance sentence of `run`
    (:func:`pqlab.studies.conforming.paper_caveat`)."""
    check = time_power_check(reference)
    worst = check.loc[check["deviation_pct"].abs().idxmax()]
    power = effective_power(reference)
    period_ms = sample_period_ms(setup)
    envelope = envelope_w(setup)
    lo, hi = sensitivity.iloc[0], sensitivity.iloc[-1]
    return {
        "study_rows": len(reference), "study_rows_beyond_rounding": int(check["beyond_rounding"].sum()),
        "study_worst_deviation_pct": float(worst["deviation_pct"]),
        "study_worst_deviation_rounding_pct": float(max(-worst["rounding_low_pct"],
                                                        worst["rounding_high_pct"])),
        "study_sample_rate_hz": setup_value(setup, "power_sample_rate"),
        "study_rows_shorter_than_a_sample": int((reference["time_ms"] < period_ms).sum()),
        "idle_majority_of_every_row_from_w": float(power.max() / 2),
        "idle_majority_of_no_row_below_w": float(power.min() / 2),
        "idle_assumed_low_w": float(lo["assumed_idle_w"]),
        "idle_majority_rows_at_low": int(lo["idle_majority_rows"]),
        "idle_assumed_high_w": float(hi["assumed_idle_w"]),
        "idle_majority_rows_at_high": int(hi["idle_majority_rows"]),
        "envelope_max_w": envelope, "study_rows_above_envelope": int((reference["power_w"] > envelope).sum()),
        **pi_over_here_median(ratios),
        "pi_over_here_min": float(ratios["pi_over_here"].min()),
        "pi_over_here_max": float(ratios["pi_over_here"].max()),
        "operations_compared": len(ratios),
        "operations_slower_on_pi": int((ratios["pi_over_here_ci_low"] > 1).sum()),
        "harness_overhead_ns": float(run.meta.get("harness_overhead_ns", float("nan"))),
        "energy_mldsa_caveat": conforming.paper_caveat(run, "ML-DSA"),
    }
