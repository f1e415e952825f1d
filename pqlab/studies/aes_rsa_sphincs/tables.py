"""Notebook 01's tables: times per system, the columns and captions of the ratio and study-over-ours tables,
sizes beside the study's, and the rows of the operation-time and key-size charts and of the results table.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from pqlab.core import flags
from pqlab.core.formatting import Column, fmt_bytes
from pqlab.core.references import load_reference
from pqlab.core.schema import convert_unit
from pqlab.measure.stats import MIN_ROUNDS
from pqlab.publish.context import interval_method
from pqlab.store.results import verified_rows
from pqlab.studies.aes_rsa_sphincs.measure import _runs, bc_release
from pqlab.studies.aes_rsa_sphincs.published import (
    COLD,
    OPERATION_ROLE,
    STEADY,
    STUDY,
    STUDY_ROW,
    TOPIC,
    construction_of,
    constructions,
    study_runs,
)


def times_by_system(values: pd.DataFrame) -> pd.DataFrame:
    """Wide table of times (ms): one row per study row, construction and operation, one column per system and
    statistic, named by both: the study's means as printed ("≈" included), each of our systems' median and
    mean (its cold calls: their mean, the study's statistic, over as many calls as the study had runs)."""
    keys = ["study_row", "construction", "operation"]
    out = values[keys].drop_duplicates().reset_index(drop=True)
    index = pd.MultiIndex.from_frame(out)
    for system, g in values.groupby("system", sort=False):
        g = g.drop_duplicates(keys).set_index(keys)
        if g["kind"].iloc[0] == STUDY:
            out[f"{system}: as printed"] = g["published"].reindex(index).to_numpy()
        elif g["kind"].iloc[0] == COLD:
            out[system] = g["value_ms"].reindex(index).to_numpy()
        else:
            out[f"{system}: median"] = g["value_ms"].reindex(index).to_numpy()
            out[f"{system}: mean"] = g["mean_ms"].reindex(index).to_numpy()
    return out


def time_columns(table: pd.DataFrame) -> list:
    """The display columns of :func:`times_by_system`: the study's cells as printed, every time of ours in
    ms."""
    keys = ["study_row", "construction", "operation"]
    return keys + [Column(c, c, "text") if c.endswith(": as printed")
                   else Column(c, c, "time", "ms", stored="ms") for c in table.columns if c not in keys]


def ratio_columns(pairs: pd.DataFrame | None = None, reference: pd.DataFrame | None = None,
                  medians: bool = True) -> list:
    """The columns a reader sees of :func:`ratio_pairs`, each header naming its statistic (`medians`: also our
    ratios of medians; a paper page has room for the like-for-like ratios of means only)."""
    return ["study_row", "construction", "ratio",
            Column("study_ratio", f"Study, of ≈ means of {study_runs(reference)} runs", "text"), "system",
            Column("ours_mean", "Ours, of means", "ratio"),
            *([Column("ours_median", "Ours, of medians", "ratio")] if medians else [])]


def _interval_reasons(ratios: pd.DataFrame) -> str:
    """Which of our systems' ratios carry an interval over rounds and why the others carry none."""
    ours = ratios[ratios["kind"] != STUDY]
    with_ci = list(dict.fromkeys(ours.loc[ours["value_ci_low"].notna(), "system"]))
    jvm = [s for s in dict.fromkeys(ours.loc[ours["kind"].isin([COLD, STEADY]), "system"])
           if s not in with_ci]
    few = [s for s in dict.fromkeys(ours["system"]) if s not in with_ci and s not in jvm]
    rounds = ours.loc[ours["value_ci_low"].notna(), "rounds"] if "rounds" in ours else []
    parts = [f"{interval_method(rounds)}, paired by round, for {', '.join(with_ci)}"] if with_ci else []
    parts += [f"none for {', '.join(jvm)} (one JVM process each: no rounds)"] if jvm else []
    parts += [f"none for {', '.join(few)} (fewer than {MIN_ROUNDS} rounds in common)"] if few else []
    return "; ".join(parts) or "no ratio of ours"


def ratio_caption(ratios: pd.DataFrame) -> str:
    """The caption of the exported ratio table, from the data: which ratios carry an interval, and why
    not."""
    return ("Ratios between operations within each system, the study's beside ours, as ratios of means (its "
            "statistic; our ratios of medians are in the CSV and the notebook). "
            f"Ours: {_interval_reasons(ratios)}. The study's: ratios of its printed means, shown to "
            "the significant digits of the less precise of the two, without interval (single published "
            "numbers).")


def study_over_columns(table: pd.DataFrame | None = None, reference: pd.DataFrame | None = None) -> list:
    """The columns a reader sees of :func:`study_over_ours`, each naming what it holds."""
    return ["study_row", "construction", "operation", "system",
            Column("study_published", f"Study, ≈ mean of {study_runs(reference)} runs (ms)", "text"),
            Column("ours_ms", "Ours, mean", "time", "ms", stored="ms"),
            Column("study_over_ours_shown", "Study over ours", "text")]


def _study_over_interval(table: pd.DataFrame) -> str:
    if table["study_over_ours_ci_low"].notna().any():
        return "each with its interval from our side only (the study's numbers are single values)"
    return ("with no interval: our first calls come from one JVM process per release, and the study's "
            "numbers are single values")


def study_over_caption(table: pd.DataFrame) -> str:
    """The caption of the exported study-over-ours table, from the data (whether any factor has an
    interval)."""
    return ("The study's printed means over the means of our first calls in a fresh JVM on each Bouncy "
            "Castle release (the same statistic; what the study's runs were it does not say), to the study's "
            f"printed digits, {_study_over_interval(table)}.")


def _rows_for(frame: pd.DataFrame, study_row: str, construction: str) -> pd.DataFrame:
    return frame[(frame["algorithm"].map(STUDY_ROW) == study_row)
                 & (frame["algorithm"].map(construction_of) == construction)]


def size_columns(table: pd.DataFrame) -> list:
    """The paper table's columns of :func:`size_table`: every size in bytes with its unit in the header, each
    Bouncy Castle release's column included; the encodings stay in the CSV (the text says them)."""

    releases = [c for c in table.columns if c.startswith("BC ")]
    return ["study_row", "construction", "key", Column("published", "Published", "size"),
            Column("ours", "Ours", "size"), Column("ours_note", "Ours, varying", "text"),
            *[Column(c, c, "size") for c in releases]]


def size_table(ours: pd.DataFrame, bc_runs=(), reference: pd.DataFrame | None = None) -> pd.DataFrame:
    """Sizes beside the study's: one row per study row, construction and key; the published size, ours (raw
    keys; RSA in DER) and each Bouncy Castle release's (encoded keys: X.509 SubjectPublicKeyInfo / PKCS#8
    DER)."""
    ref = load_reference(f"{TOPIC}_sizes") if reference is None else reference
    ref = ref.rename(columns={"private_key_bytes": "secret_key_bytes"})
    keys = {"public_key_bytes": "public key", "secret_key_bytes": "secret key",
            "symmetric_key_bytes": "symmetric key", "signature_bytes": "signature"}
    encoded = {"public_key_bytes": "public_key_encoded_bytes", "secret_key_bytes": "secret_key_encoded_bytes"}

    def one(frame: pd.DataFrame, col: str):
        vals = sorted(frame[col].dropna().astype(int).unique()) if col in frame else []
        return int(vals[0]) if len(vals) == 1 else None

    def spread(frame: pd.DataFrame, col: str) -> str:
        vals = sorted(frame[col].dropna().astype(int).unique()) if col in frame else []
        # short: a table cell
        return f"{fmt_bytes(vals[0])}–{fmt_bytes(vals[-1])} (by key)" if len(vals) > 1 else ""

    rows = []
    for r in ref.itertuples():
        study_row = STUDY_ROW[r.algorithm]
        for construction in constructions(study_row):
            mine = _rows_for(ours, study_row, construction)
            for col, key in keys.items():
                if pd.isna(getattr(r, col)):
                    continue
                row = {"study_row": study_row, "construction": construction, "key": key,
                       "published": int(getattr(r, col)), "ours": one(mine, col),
                       "ours_note": spread(mine, col),
                       "ours_encoding": mine["key_encoding"].iloc[0] if len(mine) else None}
                for run in (x for x in bc_runs if x is not None):
                    row[f"BC {bc_release(run)}"] = one(_rows_for(run.sizes, study_row, construction),
                                                       encoded.get(col, col))
                rows.append(row)
    return pd.DataFrame(rows)


def role_times(measurements: pd.DataFrame) -> pd.DataFrame:
    """Rows for an operation-time chart: label "algorithm (backend)", role, median and quartiles in ms (a
    Bouncy Castle release is named in the label; its cold phase is left out)."""
    df = verified_rows(measurements)
    df = df[df["operation"].isin(OPERATION_ROLE) & ~flags.has(df["flags"], "jvm-cold")]
    backend = np.where(df["backend"] == "bouncycastle", "BC " + df["library_version"].astype(str),
                       df["backend"])
    return pd.DataFrame({"label": df["algorithm"] + "\n(" + backend + ")",
                         "role": df["operation"].map(OPERATION_ROLE),
                         "median_ms": convert_unit(df["time_ns_median"], "ns", "ms"),
                         "q1_ms": convert_unit(df["time_ns_q1"], "ns", "ms"),
                         "q3_ms": convert_unit(df["time_ns_q3"], "ns", "ms")})


def _sizes(runs) -> pd.DataFrame:
    return pd.concat([r.sizes for r in _runs(runs)], ignore_index=True).drop_duplicates("algorithm")


def key_sizes(runs) -> pd.DataFrame:
    """Key sizes of `runs` in long form for a bar chart (raw keys; RSA as DER), one row per algorithm and
    key."""
    long = _sizes(runs).melt(id_vars="algorithm", var_name="key", value_name="bytes",
                             value_vars=["public_key_bytes", "secret_key_bytes",
                                         "symmetric_key_bytes"]).dropna()
    return long.assign(key=long["key"].str.replace("_bytes", "").str.replace("_", " "))


def results_table(runs) -> pd.DataFrame:
    """Every measurement of `runs` in µs: median, quartiles and the interval over rounds of the median."""
    df = pd.concat([r.raw_summary().assign(time_ns_ci_low=r.measurements["time_ns_ci_low"],
                                           time_ns_ci_high=r.measurements["time_ns_ci_high"],
                                           library_version=r.measurements["library_version"])
                    for r in _runs(runs)], ignore_index=True)
    out = df[["algorithm", "backend", "library_version", "operation", "samples", "flags"]].copy()
    for stat in ("median", "q1", "q3", "ci_low", "ci_high"):
        out[f"time_us_{stat}"] = convert_unit(df[f"time_ns_{stat}"], "ns", "µs")
    return out
