"""Notebook 01's ratios: between operations within each system, set beside the study's, and the study's times
over ours.

Every ratio of ours is a ratio of means (the study's statistic) and, for systems that report medians, also a
ratio of medians, with an interval over rounds paired by round where both operations were measured in rounds
(:func:`pqlab.measure.stats.ratio_ci`; a Bouncy Castle run is one JVM process: no interval); a study value
divided by ours uses :func:`pqlab.measure.stats.ratio_to_published` (interval from our side only).  The study
did not say whether its SPHINCS+ was the simple or the robust construction, so its SPHINCS+ row is compared
with both.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from pqlab.core.schema import convert_unit
from pqlab.measure.stats import ratio_ci, ratio_to_published, round_values
from pqlab.studies.aes_rsa_sphincs.published import COLD, PAIRS, STUDY, approx, round_sig


def ratio_table(values: pd.DataFrame, pairs=PAIRS) -> pd.DataFrame:
    """Within-system ratios, long form: one row per (study row, construction, ratio, system, statistic).

    The study's is the ratio of its printed means, rounded to the significant digits of the less precise of
    the two (``digits``; ``published``: both cells as printed), without interval.  Each of ours is a ratio of
    means (the study's statistic: like for like) and, for a system that reports medians, also a ratio of
    medians (``own``: the system's own statistic), with its interval over rounds, paired by round
    (``value_ci_low`` / ``value_ci_high``, over the ``rounds`` both operations ran in; none for a system
    measured in one process)."""
    rows = []
    for (row, construction, system), g in values.groupby(["study_row", "construction", "system"], sort=False):
        by_op = g.set_index("operation")
        for study_row, num, den in pairs:
            if study_row != row or num not in by_op.index or den not in by_op.index:
                continue
            a, b = by_op.loc[num], by_op.loc[den]
            base = {"study_row": row, "construction": construction, "algorithm": a.algorithm,
                    "ratio": f"{num} / {den}", "system": system, "kind": a.kind, "samples": f"{a.n} / {b.n}",
                    "implementation": a.get("implementation", system)}
            if a.kind == STUDY:
                n = min(int(a.digits), int(b.digits))
                rows.append({**base, "statistic": "mean", "own": True,
                             "value": round_sig(a.value_ms / b.value_ms, n), "value_ci_low": np.nan,
                             "value_ci_high": np.nan, "digits": n,
                             "published": f"{a.published} / {b.published}"})
                continue
            for stat in dict.fromkeys([a.statistic, "mean"]):
                ratio, low, high = ratio_ci(a["values"], b["values"], stat)
                ra, rb = round_values(a["values"], stat), round_values(b["values"], stat)
                rounds = np.nan if ra is None or rb is None else len(ra.index.intersection(rb.index))
                rows.append({**base, "statistic": stat, "own": stat == a.statistic, "value": ratio,
                             "value_ci_low": low, "value_ci_high": high, "rounds": rounds})
    return pd.DataFrame(rows)


def _study_ratios(ratios: pd.DataFrame) -> pd.DataFrame:
    return ratios[ratios["kind"] == STUDY].set_index(["study_row", "construction", "ratio"])


def ratio_pairs(ratios: pd.DataFrame) -> pd.DataFrame:
    """The ratios as a reader compares them: one row per ratio and system of ours, the study's beside it
    (``study_ratio``: to the digits it printed, "≈3×"), ours as a ratio of means (``ours_mean``: the study's
    statistic) and, where the system reports medians, of medians (``ours_median``), each with its interval
    where it has one."""
    study, ours = _study_ratios(ratios), ratios[ratios["kind"] != STUDY]
    order = {k: i for i, k in enumerate(dict.fromkeys(zip(ratios["study_row"], ratios["construction"],
                                                          ratios["ratio"])))}
    keys = ["study_row", "construction", "ratio", "system"]
    rows = []
    for key, g in ours.groupby(keys, sort=False):
        s = study.loc[key[:3]] if key[:3] in study.index else None
        row = {**dict(zip(keys, key)),
               "study_ratio": approx(s.value, int(s.digits)) if s is not None else None,
               "study_published": s.published if s is not None else None}
        for stat in ("mean", "median"):
            r = g[g["statistic"] == stat]
            for suffix in ("", "_ci_low", "_ci_high"):
                row[f"ours_{stat}{suffix}"] = (float(r[f"value{suffix}"].iloc[0]) if len(r)
                                               else np.nan)
        rows.append(row)
    out = pd.DataFrame(rows, columns=[*keys, "study_ratio", "study_published", "ours_mean",
                                      "ours_mean_ci_low", "ours_mean_ci_high", "ours_median",
                                      "ours_median_ci_low", "ours_median_ci_high"])
    rank = [order[k] for k in zip(out["study_row"], out["construction"], out["ratio"])]
    return out.iloc[np.argsort(rank, kind="stable")].reset_index(drop=True)


def _agrees(value: float, low: float, high: float, ref: float, factor: float) -> bool:
    """Within `factor` of `ref`: the interval (or the value, without one) meets [ref / factor, ref *
    factor]."""
    lo, hi = (low, high) if np.isfinite(low) and np.isfinite(high) else (value, value)
    return hi >= ref / factor and lo <= ref * factor


def agreement(ratios: pd.DataFrame, factor: float = 2.0) -> pd.DataFrame:
    """Each of our ratios of means (the study's statistic: like for like) against the study's: ``study`` (its
    ratio, to the digits it printed), ``agrees`` (our interval, or our value without one, meets the band
    ``study / factor .. study * factor``)."""
    ref = _study_ratios(ratios)["value"]
    ours = ratios[(ratios["kind"] != STUDY) & (ratios["statistic"] == "mean")].copy()
    ours["study"] = [ref.get((r.study_row, r.construction, r.ratio), np.nan) for r in ours.itertuples()]
    ours = ours[np.isfinite(ours["study"])]
    ours["agrees"] = [_agrees(r.value, r.value_ci_low, r.value_ci_high, r.study, factor)
                      for r in ours.itertuples()]
    ours.attrs["factor"] = factor
    return ours


STUDY_OVER_COLUMNS = ["study_row", "construction", "operation", "system", "study_published", "study_ms",
                      "ours_ms", "study_over_ours", "study_over_ours_ci_low", "study_over_ours_ci_high",
                      "study_over_ours_shown", "digits", "ours_calls"]


def study_over_ours(values: pd.DataFrame) -> pd.DataFrame:
    """The study's time over ours, like for like only: its printed means over each of our Bouncy Castle cold
    means (the same statistic), interval from our side (:func:`pqlab.measure.stats.ratio_to_published`; none
    where our side was one process), shown to the study's printed digits, at most three
    (``study_over_ours_shown``)."""
    study = values[values["kind"] == STUDY].set_index(["study_row", "construction", "operation"])
    rows = []
    for r in values[values["kind"] == COLD].itertuples():
        key = (r.study_row, r.construction, r.operation)
        if key not in study.index or r.n == 0:
            continue
        s = study.loc[key]
        ratio, low, high = ratio_to_published(convert_unit(s.value_ms, "ms", "ns"), r.values, "mean")
        n = min(int(s.digits), 3)  # the study's printed digits, at most the three we show of ours
        rows.append({"study_row": r.study_row, "construction": r.construction, "operation": r.operation,
                     "system": r.system, "study_published": s.published, "study_ms": s.value_ms,
                     "ours_ms": r.value_ms, "study_over_ours": round_sig(ratio, n),
                     "study_over_ours_ci_low": low, "study_over_ours_ci_high": high,
                     "study_over_ours_shown": approx(ratio, n, low, high), "digits": n, "ours_calls": r.n})
    return pd.DataFrame(rows, columns=STUDY_OVER_COLUMNS)
