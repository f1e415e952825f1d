"""Notebook 02's tables: medians per length, pure Python beside native, the study's times beside ours, what
the study's RSA columns say about themselves, and the native algorithms ranked at the study's lengths.

Every ratio of two measured quantities carries an interval in the tables: over rounds for a ratio of medians
where samples exist (:func:`~.measure.samples_of`), the delta method for ratios of fitted slopes; a ratio
against the study's single numbers takes its interval from our side only; ratios among the study's own numbers
have none (and say so).
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd

from pqlab.checks.interop import PURE_BACKEND, round3_equivalent
from pqlab.core.schema import convert_unit
from pqlab.measure.stats import ratio_to_published
from pqlab.studies.message_scaling.measure import _get, _ratio
from pqlab.studies.message_scaling.model import fit_linear_cost
from pqlab.studies.message_scaling.published import load_study, study_as_measurements, study_comparators

#: the lengths (bytes) :func:`ranking` ranks the algorithms at by default: the ends of the study's grid
STUDY_ENDS = (10_000, 100_000)


def median_table(df: pd.DataFrame) -> pd.DataFrame:
    """Medians, quartiles, the median's 95 % interval (µs) and precision (rel_ci), per algorithm, backend,
    operation, length."""
    out = df[["algorithm", "backend", "operation", "message_bytes", "samples"]].assign(
        message_bytes=df["message_bytes"].astype("Int64"), flags=df["flags"].fillna(""),
        rel_ci=df["time_ns_rel_ci"],
        **{f"time_us_{c}": convert_unit(df[f"time_ns_{c}"], "ns", "µs")
           for c in ("median", "q1", "q3", "ci_low", "ci_high")})
    return out.sort_values(["algorithm", "backend", "operation", "message_bytes"]).reset_index(drop=True)


def slowdown(df: pd.DataFrame, samples: dict | None = None, pure_backend: str = PURE_BACKEND) -> pd.DataFrame:
    """Pure-Python time over native time per algorithm, operation and length, with the interval over rounds of
    the ratio of medians when `samples` (:func:`samples_of`) are given: each pure-Python row against
    every other backend's row of the same algorithm and, for SLH-DSA, liboqs's round-3 SPHINCS+ set
    (``same_standard`` False)."""
    df = df.copy()
    df["message_bytes"] = df["message_bytes"].fillna(-1)
    pure = df[df["backend"] == pure_backend]
    rows = []
    for r in pure.itertuples():
        native = df[(df["backend"] != pure_backend) & (df["operation"] == r.operation)
                    & (df["message_bytes"] == r.message_bytes)]
        equivalent = round3_equivalent(r.algorithm)
        for n in native[native["algorithm"].isin([r.algorithm, equivalent])].itertuples():
            ratio, low, high = _ratio(samples, (r.algorithm, r.backend, r.operation, r.message_bytes),
                                      (n.algorithm, n.backend, n.operation, n.message_bytes),
                                      r.time_ns_median, n.time_ns_median)
            rows.append({"algorithm": r.algorithm, "operation": r.operation,
                         "message_bytes": None if r.message_bytes < 0 else int(r.message_bytes),
                         "pure_python": r.implementation, "pure_python_ns": r.time_ns_median,
                         "native_algorithm": n.algorithm, "native_backend": n.backend,
                         "native": n.implementation, "native_ns": n.time_ns_median,
                         "slowdown": ratio, "slowdown_ci_low": low, "slowdown_ci_high": high,
                         "same_standard": n.algorithm == r.algorithm})
    return pd.DataFrame(rows)


def slowdown_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per algorithm and operation: the slowdown against the fastest and the slowest native implementation of
    the same standard, and against the fastest native code doing the same work (SLH-DSA: also round-3
    SPHINCS+), each with its interval over rounds."""
    rows = []
    by = ["algorithm", "operation", table["message_bytes"].fillna(-1)]
    for (algo, op, n), g in table.groupby(by, sort=False):
        same = g[g["same_standard"]]
        fastest_any = g.loc[g["native_ns"].idxmin()]
        row = {"algorithm": algo, "operation": op, "message_bytes": None if n < 0 else int(n)}
        if len(same):
            f, sl = same.loc[same["native_ns"].idxmin()], same.loc[same["native_ns"].idxmax()]
            row.update(vs_fastest=f.slowdown, vs_fastest_ci_low=f.slowdown_ci_low,
                       vs_fastest_ci_high=f.slowdown_ci_high, fastest=f.native_backend,
                       vs_slowest=sl.slowdown, vs_slowest_ci_low=sl.slowdown_ci_low,
                       vs_slowest_ci_high=sl.slowdown_ci_high, slowest=sl.native_backend)
        row.update(vs_fastest_same_work=fastest_any.slowdown,
                   vs_fastest_same_work_ci_low=fastest_any.slowdown_ci_low,
                   vs_fastest_same_work_ci_high=fastest_any.slowdown_ci_high,
                   fastest_same_work=fastest_any.native_backend
                   + ("" if fastest_any.same_standard else f" ({fastest_any.native_algorithm})"))
        rows.append(row)
    return pd.DataFrame(rows)


def compare_with_study(df: pd.DataFrame, samples: dict | None = None, reference: pd.DataFrame | None = None,
                       mapping: dict[str, list[str]] | None = None) -> pd.DataFrame:
    """The study's table beside our medians at the same lengths, one row per study label, algorithm, backend,
    operation and length: ``study_over_ours`` with its interval from our side only
    (:func:`pqlab.measure.stats.ratio_to_published`).  `mapping`: study label -> our names ("NAME" or
    "NAME@backend"); default :func:`study_comparators`."""
    ref = load_study() if reference is None else reference
    mapping = mapping or study_comparators()
    ours = df[["algorithm", "backend", "operation", "message_bytes", "time_ns_median"]]
    rows = []
    for label, names in mapping.items():
        sub = ref[ref["algorithm"] == label]
        for spec in names:
            name, _, backend = spec.partition("@")
            mine = ours[(ours["algorithm"] == name) & ((ours["backend"] == backend) if backend else True)]
            for r in sub.merge(mine, on=["operation", "message_bytes"], suffixes=("_study", "")).itertuples():
                v = _get(samples, name, r.backend, r.operation, r.message_bytes)
                study_ns = convert_unit(r.time_ms, "ms", "ns")
                ratio, lo, hi = (ratio_to_published(study_ns, v) if v.size
                                 else (study_ns / r.time_ns_median, math.nan, math.nan))
                rows.append({"study_label": label, "algorithm": name, "backend": r.backend,
                             "operation": r.operation, "message_bytes": int(r.message_bytes),
                             "study_ms": r.time_ms, "ours_ms": convert_unit(r.time_ns_median, "ns", "ms"),
                             "study_over_ours": ratio, "ci_low": lo, "ci_high": hi})
    return pd.DataFrame(rows)


def study_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per study label, algorithm and operation: the smallest and largest study/ours ratio over the grid, each
    with its interval from our side only (``ratio_min_ci_low`` ...) and the length it was at."""
    if table.empty:
        return table
    keys, rows = ["study_label", "algorithm", "backend", "operation"], []
    for key, g in table.groupby(keys, sort=False):
        row = dict(zip(keys, key))
        ends = (("min", g.loc[g["study_over_ours"].idxmin()]), ("max", g.loc[g["study_over_ours"].idxmax()]))
        for end, r in ends:
            row.update({f"ratio_{end}": r.study_over_ours, f"ratio_{end}_ci_low": r.ci_low,
                        f"ratio_{end}_ci_high": r.ci_high, f"{end}_at_bytes": int(r.message_bytes)})
        rows.append({**row, "sizes": len(g)})
    return pd.DataFrame(rows)


def rsa_evidence(native: pd.DataFrame, fits: pd.DataFrame, samples: dict | None = None,
                 reference: pd.DataFrame | None = None,
                 ours: tuple[str, str] = ("RSA-2048-PKCS1v15-sig", "cryptography"),
                 modulus_bits: int = 2048) -> dict:
    """Computed from the study's own RSA columns, beside our RSA-2048 (`ours`: algorithm, backend): the
    study's per-byte cost of RSA signing (OLS over its grid, with its standard error) against ours (what
    hashing the message costs here) and the rise over the grid each implies; its sign/verify ratio at each
    size (single numbers) against ours at our shortest message (interval over rounds); the modulus that ratio
    would imply if the private/public cost ratio grew linearly with the modulus at a fixed public exponent (a
    model, not a measurement)."""
    ref = load_study() if reference is None else reference
    rsa = ref[ref["algorithm"] == "RSA"]
    study_fit = fit_linear_cost(study_as_measurements(rsa)).set_index("operation")
    span = float(rsa["message_bytes"].max() - rsa["message_bytes"].min())
    wide = rsa.pivot_table(index="message_bytes", columns="operation", values="time_ms")
    ratio_study = wide["sign"] / wide["verify"]
    mine = fits[(fits["algorithm"] == ours[0]) & (fits["backend"] == ours[1]) & (fits["operation"] == "sign")]
    m = native[(native["algorithm"] == ours[0]) & (native["backend"] == ours[1])]
    shortest = m.groupby("message_bytes")["operation"].nunique()
    shortest = shortest[shortest >= 2].index.min() if len(shortest) else None
    out = {"grid_span_bytes": span, "study_sign_per_byte_ns": float(study_fit.loc["sign", "per_byte_ns"]),
           "study_sign_per_byte_se": float(study_fit.loc["sign", "per_byte_ns_se"]),
           "study_sign_per_byte_significant": bool(study_fit.loc["sign", "per_byte_significant"]),
           "study_sign_min_ms": float(wide["sign"].min()), "study_sign_max_ms": float(wide["sign"].max()),
           "study_sign_over_verify_min": float(ratio_study.min()),
           "study_sign_over_verify_median": float(ratio_study.median()),
           "study_sign_over_verify_max": float(ratio_study.max()), "ours": f"{ours[0]} ({ours[1]})",
           "modulus_bits": modulus_bits}
    if len(mine):
        out["ours_sign_per_byte_ns"] = float(mine["per_byte_ns"].iloc[0])
        out["ours_sign_per_byte_se"] = float(mine["per_byte_ns_se"].iloc[0])
        out["hash_rise_over_grid_ms"] = convert_unit(out["ours_sign_per_byte_ns"] * span, "ns", "ms")
    if shortest is not None:
        at = m[m["message_bytes"] == shortest].set_index("operation")["time_ns_median"]
        r, lo, hi = _ratio(samples, (*ours, "sign", shortest), (*ours, "verify", shortest), at["sign"],
                           at["verify"])
        out.update(ours_message_bytes=int(shortest), ours_sign_over_verify=r, ours_sign_over_verify_ci_low=lo,
                   ours_sign_over_verify_ci_high=hi,
                   implied_modulus_bits=modulus_bits * out["study_sign_over_verify_median"] / r)
    return out


def _at(df: pd.DataFrame, fits: pd.DataFrame | None, n: int) -> pd.DataFrame:
    """Sign and verify time of every native algorithm at length n: measured where we have it, else the
    model."""
    rows = []
    native = df[df["backend"] != PURE_BACKEND]
    for (name, backend), g in native.groupby(["algorithm", "backend"], sort=False):
        row = {"algorithm": name, "backend": backend, "family": g["family"].iloc[0], "source": "measured"}
        for op in ("sign", "verify"):
            hit = g[(g["operation"] == op) & (g["message_bytes"] == n)]
            if len(hit):
                row[op] = float(hit["time_ns_median"].iloc[0])
            elif fits is not None and len(f := fits[(fits["algorithm"] == name) & (fits["backend"] == backend)
                                                    & (fits["operation"] == op)]):
                row[op] = float(f["fixed_ns"].iloc[0] + f["per_byte_ns"].iloc[0] * n)
                row["source"] = "model"
            else:
                row[op] = math.nan
        rows.append(row)
    out = pd.DataFrame(rows)
    out["sign+verify"] = out["sign"] + out["verify"]
    return out


def ranking(df: pd.DataFrame, fits: pd.DataFrame | None = None,
            message_bytes: Sequence[int] = STUDY_ENDS) -> pd.DataFrame:
    """Native algorithms ranked by sign, verify and sign+verify time at each length."""
    frames = []
    for n in message_bytes:
        t = _at(df, fits, n)
        for op in ("sign", "verify", "sign+verify"):
            sub = t.dropna(subset=[op]).sort_values(op)
            frames.append(pd.DataFrame({"message_bytes": n, "operation": op, "rank": range(1, len(sub) + 1),
                                        "algorithm": sub["algorithm"].values,
                                        "backend": sub["backend"].values, "family": sub["family"].values,
                                        "time_ns": sub[op].values, "source": sub["source"].values}))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
