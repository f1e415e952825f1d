"""Notebook 02's cost model: signature schemes hash the message and then do work independent of its length, so
``t(n) = fixed + per_byte * n``.

:func:`fit_linear_cost` fits it per algorithm, backend and operation by weighted least squares on the medians
(weights 1/se^2, se from the median's interval over rounds, floored at 0.5% of the median; standard errors
scaled by the Birge ratio when the points scatter more than their errors), or by ordinary least squares for
tables without intervals (the study's).  The *crossover* ``fixed / per_byte`` is where hashing the message
costs as much as everything else.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from pqlab.core.schema import convert_unit
from pqlab.measure.stats import ratio_of_estimates


def _wls(x: np.ndarray, y: np.ndarray, se: np.ndarray | None) -> dict:
    X = np.column_stack([np.ones_like(x), x])
    w = np.ones_like(y) if se is None else 1.0 / se ** 2
    XtW = X.T * w
    cov = np.linalg.inv(XtW @ X)
    beta = cov @ (XtW @ y)
    resid = y - X @ beta
    dof = len(y) - 2
    chi2 = float(np.sum(w * resid ** 2))
    ybar = np.sum(w * y) / np.sum(w)
    ss_tot = float(np.sum(w * (y - ybar) ** 2))
    r2 = 1 - chi2 / ss_tot if ss_tot > 0 else math.nan
    if dof <= 0:
        return {"beta": beta, "se": np.array([math.nan, math.nan]), "r2": r2, "chi2_red": math.nan}
    chi2_red = chi2 / dof
    scale = chi2_red if se is None else max(1.0, chi2_red)  # OLS: residual variance; WLS: Birge ratio
    return {"beta": beta, "se": np.sqrt(np.diag(cov) * scale), "r2": r2, "chi2_red": chi2_red}


def fit_linear_cost(df: pd.DataFrame, by: Sequence[str] = ("algorithm", "backend", "operation"),
                    min_sizes: int = 3, se_floor: float = 0.005) -> pd.DataFrame:
    """Fit t(n) = fixed + per_byte * n per group (the module docstring says how).  One row per group:
    fixed_ns(_se), per_byte_ns(_se), crossover_bytes (fixed / per_byte; inf when per_byte <= 0),
    per_byte_significant (per_byte > 2 se), r2, chi2_red, n_sizes, min_bytes, max_bytes, method; groups with
    fewer than `min_sizes` lengths skipped."""
    by = list(by)
    rows = []
    have_ci = {"time_ns_ci_low", "time_ns_ci_high"} <= set(df.columns)
    data = df.dropna(subset=["message_bytes", "time_ns_median"])
    for key, g in data.groupby(by, sort=False):
        g = g.sort_values("message_bytes")
        if g["message_bytes"].nunique() < min_sizes:
            continue
        x = g["message_bytes"].to_numpy(float)
        y = g["time_ns_median"].to_numpy(float)
        se = None
        if have_ci and g[["time_ns_ci_low", "time_ns_ci_high"]].notna().all().all():
            width = (g["time_ns_ci_high"] - g["time_ns_ci_low"]).to_numpy(float) / 3.92
            se = np.maximum(width, se_floor * y)
            se = np.where(se > 0, se, 1.0)
        fit = _wls(x, y, se)
        a, b = fit["beta"]
        sa, sb = fit["se"]
        row = dict(zip(by, key if isinstance(key, tuple) else (key,)))
        if "family" in g:
            row["family"] = g["family"].iloc[0]
        row.update(n_sizes=int(g["message_bytes"].nunique()), min_bytes=int(x.min()), max_bytes=int(x.max()),
                   fixed_ns=float(a), fixed_ns_se=float(sa), per_byte_ns=float(b), per_byte_ns_se=float(sb),
                   crossover_bytes=float(a / b) if b > 0 else math.inf,
                   per_byte_significant=bool(b > 2 * sb) if np.isfinite(sb) else False,
                   r2=float(fit["r2"]), chi2_red=float(fit["chi2_red"]),
                   method="ols" if se is None else "wls (1/se² of the median, Birge-scaled)")
        rows.append(row)
    return pd.DataFrame(rows)


def fit_table(fits: pd.DataFrame) -> pd.DataFrame:
    """The fits in readable units: fixed cost in µs and per-byte cost in ns/B, each with its standard
    error."""
    cols = ["algorithm", "backend", "operation", "fixed_us", "fixed_us_se", "per_byte_ns", "per_byte_ns_se",
            "crossover_bytes", "r2", "sizes"]
    if fits.empty:
        return pd.DataFrame(columns=cols)
    return fits.assign(fixed_us=convert_unit(fits["fixed_ns"], "ns", "µs"),
                       fixed_us_se=convert_unit(fits["fixed_ns_se"], "ns", "µs"),
                       crossover_bytes=fits["crossover_bytes"].round(), sizes=fits["n_sizes"])[
        [c for c in cols if c in fits or c in ("fixed_us", "fixed_us_se", "sizes")]]


def hashing_passes(fits: pd.DataFrame) -> pd.DataFrame:
    """Per algorithm and backend: per-byte cost of signing over verifying with its (delta-method) interval,
    and what it says: "twice" (interval above 4/3, ratio within 1.6 to 2.5: signing reads the message twice,
    as Ed25519's nonce and challenge or SLH-DSA's PRF_msg and H_msg do), "same" (0.75 to 1.33, interval within
    2/3 to 1.5), "other"."""
    cols = ["algorithm", "backend", "sign_over_verify", "ci_low", "ci_high", "passes"]
    rows = []
    for (algo, backend), g in fits.groupby(["algorithm", "backend"], sort=False):
        ops = g.set_index("operation")
        if not {"sign", "verify"} <= set(ops.index):
            continue
        r, lo, hi = ratio_of_estimates(ops.loc["sign", "per_byte_ns"], ops.loc["sign", "per_byte_ns_se"],
                                       ops.loc["verify", "per_byte_ns"], ops.loc["verify", "per_byte_ns_se"])
        passes = ("twice" if 1.6 <= r <= 2.5 and lo > 4 / 3 else
                  "same" if 0.75 <= r <= 1.33 and lo > 2 / 3 and hi < 1.5 else "other")
        rows.append(dict(zip(cols, (algo, backend, r, lo, hi, passes))))
    return pd.DataFrame(rows, columns=cols)


def model_deviation(df: pd.DataFrame, fits: pd.DataFrame,
                    by: Sequence[str] = ("algorithm", "backend", "operation")) -> pd.DataFrame:
    """Measured median over the model's prediction at every fitted length (1.0 = on the line)."""
    by = list(by)
    m = df.merge(fits[by + ["fixed_ns", "per_byte_ns"]], on=by)
    m["measured_over_model"] = m["time_ns_median"] / (m["fixed_ns"] + m["per_byte_ns"] * m["message_bytes"])
    return m[by + ["message_bytes", "time_ns_median", "measured_over_model"]]
