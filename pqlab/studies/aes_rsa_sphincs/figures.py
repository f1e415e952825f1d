"""Notebook 01's figures: time per operation grouped by the study's three columns, the within-system ratios,
and key and signature sizes.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from pqlab.core.formatting import fmt_percent
from pqlab.measure.stats import CONFIDENCE
from pqlab.publish import plotting
from pqlab.studies.aes_rsa_sphincs.measure import _runs
from pqlab.studies.aes_rsa_sphincs.tables import _sizes, key_sizes, role_times


@plotting.styled
def plot_operation_times(runs, title: str, width: float = plotting.FULL_WIDTH):
    """Median and quartiles per operation of `runs` (log axis: points with quartile whiskers, as a bar would
    need a zero), grouped by the study's three columns."""
    measurements = pd.concat([r.measurements for r in _runs(runs)], ignore_index=True)
    return plotting.grouped_bars(role_times(measurements), category="label", group="role",
                                 value="median_ms", low="q1_ms", high="q3_ms", horizontal=True, dots=True,
                                 ylabel="time per operation (ms, log)",
                                 title=title, width=width)


@plotting.styled
def plot_ratios(ratios: pd.DataFrame, width: float = plotting.FULL_WIDTH):
    """Each within-system ratio of means (the study's statistic) per system, a point with its interval over
    rounds as whiskers (none for the study's single numbers or a one-process run) on a log axis."""
    df = ratios[ratios["statistic"] == "mean"]
    df = df.assign(label=df["study_row"] + np.where(df["construction"] != "", " " + df["construction"], "")
                   + "\n" + df["ratio"])
    return plotting.grouped_bars(df, category="label", group="system", value="value", low="value_ci_low",
                                 high="value_ci_high", ylabel="ratio of means within a system (log)",
                                 height=3.0, width=width, horizontal=True, dots=True,
                                 title="Ratios of means between operations (whiskers: "
                                       f"{fmt_percent(CONFIDENCE, 0)} intervals over rounds; none for the "
                                       "study's single numbers or one JVM)")


@plotting.styled
def plot_key_sizes(runs, width: float = plotting.FULL_WIDTH):
    return plotting.grouped_bars(key_sizes(runs), category="algorithm", group="key", value="bytes",
                                 ylabel="bytes (log)", title="Key sizes (raw keys; RSA as DER)", width=width)


@plotting.styled
def plot_signature_sizes(runs, width: float = plotting.FULL_WIDTH):
    sig = _sizes(runs).dropna(subset=["signature_bytes"]).assign(kind="signature")
    return plotting.grouped_bars(sig, category="algorithm", group="kind", value="signature_bytes",
                                 ylabel="bytes (log)", title="Signature sizes", width=width)
