"""Notebook 04's runs as one tidy frame: a row per algorithm, build and operation (pqlab's runs and the native
run) with sizes, the table family, the counter its cycles come from and the clock each row implies (cycles /
time); the operations that failed; and, for core cycles only, whether each row's time follows from its cycles
and its run's clock."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from pqlab.core.schema import convert_unit
from pqlab.core.vocabulary import family_of
from pqlab.measure import cycles
from pqlab.store.results import verified_rows
from pqlab.studies.signature_cycles.measure import SignatureStudy, build_label, table_family

#: Largest relative distance of a row's implied clock from its run's clock that still counts as consistent.
CLOCK_TOLERANCE = 0.15


# --------------------------------------------------------------------------- tidy rows


def _key(df: pd.DataFrame) -> pd.DataFrame:
    df = df.copy()
    df["build"] = df["build"].fillna("").astype(str)
    return df


def sample_stats(samples: pd.DataFrame) -> pd.DataFrame:
    """Per algorithm, backend, build and operation, from the raw samples: the median of the
    per-sample clocks (`sample_ghz`, cycles / time) and the mean cycles and time per call.

    A pqlab sample is the mean of `loops` back-to-back calls (loops calibrated per operation) and
    a native sample is one call, so their medians are different statistics wherever the cost
    varies from call to call (ML-DSA's rejection loop, Falcon and RSA key generation); the mean
    per call is the same statistic whatever the loop count, so ratios between builds or harnesses
    use it.
    """
    keys = ["algorithm", "backend", "build", "operation"]
    if samples is None or samples.empty:
        return pd.DataFrame({**{k: pd.Series(dtype=object) for k in keys},
                             **{c: pd.Series(dtype=float)
                                for c in ("sample_ghz", "cycles_mean", "time_ns_mean")}})
    s = _key(samples)  # cycles may be missing (no counter, or a failed read): their statistics are NaN
    s["cycles"] = s["cycles"].astype(float)
    s["time_ns"] = s["time_ns"].astype(float)
    s["ghz"] = s["cycles"] / s["time_ns"]
    return s.groupby(keys, as_index=False).agg(sample_ghz=("ghz", "median"), cycles_mean=("cycles", "mean"),
                                               time_ns_mean=("time_ns", "mean"))


def _with_sample_stats(run) -> pd.DataFrame:
    """A run's measurements with the per-sample clock, and means from the samples where the row has none
    (runs of schema 1 stored no means)."""
    m = _key(run.measurements).merge(sample_stats(run.samples),
                                     on=["algorithm", "backend", "build", "operation"], how="left",
                                     suffixes=("", "_from_samples"))
    for col in ("cycles_mean", "time_ns_mean"):
        m[col] = m[col].fillna(m.pop(f"{col}_from_samples"))
    return m


def collect_rows(study: SignatureStudy | None = None, *, runs: Sequence = (), native=None) -> pd.DataFrame:
    """One row per measured algorithm, build and operation (pqlab runs and the native run).

    Adds `build` ("liboqs optimised", "liboqs portable", "OpenSSL", "native optimised"),
    `counter` (what its cycles are, from its run's metadata), `table_family`, sizes (from the default
    run's size table, else the run's own), the implied clock of the medians (`implied_ghz` =
    cycles_median / time_ns_median) and, where raw samples exist, the median of the per-sample clocks
    (`sample_ghz`).  The do-nothing call (`noop`) and failed operations are left out (see
    :func:`failed_rows`).
    """
    if study is not None:
        runs = list(study.runs.values())
        native = study.native
    frames, sizes = [], []
    for run in runs:
        m = _with_sample_stats(run)
        m["harness_noop_ns"] = run.meta.get("harness_overhead_ns")
        frames.append(m)
        sizes.append(run.sizes)
    if native is not None:
        frames.append(_with_sample_stats(native))
    for frame, run in zip(frames, [*runs, *([native] if native is not None else [])], strict=True):
        used = run.meta.get("counter") or {}
        frame["counter"] = cycles.describe(used.get("label"), used.get("hz"))
    rows = pd.concat(frames, ignore_index=True)
    rows = verified_rows(rows).copy()
    if sizes:
        sz = pd.concat(sizes, ignore_index=True)
        sz = sz[sz["backend"] != "native"].drop_duplicates(["algorithm", "backend"])
        cols = ["public_key_bytes", "secret_key_bytes", "signature_bytes", "signature_max_bytes"]
        sz = sz[["algorithm", "backend", *cols]]
        by_backend = rows.merge(sz, on=["algorithm", "backend"], how="left")
        # native rows take the sizes liboqs declares through pqlab's liboqs adapter
        liboqs_sz = sz[sz["backend"] == "liboqs"].drop(columns="backend")
        native_rows = rows["backend"] == "native"
        filled = rows[native_rows].merge(liboqs_sz, on="algorithm", how="left")
        by_backend.loc[native_rows.to_numpy(), cols] = filled[cols].to_numpy()
        rows = by_backend
    if "family" in rows:
        missing = rows["family"].isna()
        rows.loc[missing, "family"] = rows.loc[missing, "algorithm"].map(family_of)
    rows["table_family"] = rows["family"].map(table_family)
    rows["build_id"] = rows["build"]
    rows["build"] = [build_label(b, v) for b, v in zip(rows["backend"], rows["build_id"], strict=True)]
    rows["implied_ghz"] = rows["cycles_median"].astype(float) / rows["time_ns_median"].astype(float)
    for col in ("sample_ghz", "cycles_mean", "time_ns_mean"):
        if col not in rows:
            rows[col] = np.nan
    return rows.reset_index(drop=True)


def failed_rows(study: SignatureStudy) -> pd.DataFrame:
    """Operations that failed (an exception or a wrong output), with the reason in `flags`."""
    frames = [r.measurements for r in study.runs.values()]
    if study.native is not None:
        frames.append(study.native.measurements)
    m = pd.concat(frames, ignore_index=True)
    bad = m[(m["operation"] != "noop") & ~m["verified"].fillna(False).astype(bool)]
    return bad[["algorithm", "backend", "build", "operation", "flags"]].reset_index(drop=True)


# --------------------------------------------------------------------------- cycles and time


def check_clock(rows: pd.DataFrame, counter: dict,
                tolerance: float = CLOCK_TOLERANCE) -> pd.DataFrame | None:
    """Does each row's time follow from its cycles?  One row per measurement, with the verdict; None
    unless the cycles are core cycles (TSC reference cycles are time at a fixed rate: cycles / time
    is that rate by construction, and the check would be circular).

    A row's implied clock is cycles_median / time_ns_median (GHz).  The run's clock is the
    median of its rows' implied clocks (the counter counts user-space core cycles of the
    thread; on a virtual machine this is the effective clock of the vCPU).  A row is
    consistent when its implied clock lies within `tolerance` of its run's clock.  Below the
    band, time ran on without cycles: the process was descheduled or in the kernel (page
    faults, system calls), which wall time includes and user cycles do not.  Above it, the core
    ran faster than it did for most of the run: its boost clock follows the load on the other
    cores (and, on a virtual machine, on the host).
    """
    if counter.get("label") != cycles.CORE_CYCLES:
        return None
    cols = ["table_family", "algorithm", "build", "operation", "run_id", "samples", "cycles_median",
            "time_ns_median", "implied_ghz", "sample_ghz", "cycles_source", "flags"]
    out = rows[[c for c in cols if c in rows]].copy()
    out["implied_ghz"] = out["cycles_median"].astype(float) / out["time_ns_median"].astype(float)
    out["run_clock_ghz"] = out.groupby("run_id")["implied_ghz"].transform("median")
    out["deviation"] = out["implied_ghz"] / out["run_clock_ghz"] - 1
    out["consistent"] = out["deviation"].abs() <= tolerance
    out["verdict"] = np.where(out["consistent"], "consistent",
                              np.where(out["deviation"] < 0,
                                       "below: time without cycles (descheduled or in the kernel)",
                                       "above: a higher boost clock than for most of the run"))
    out.loc[out["implied_ghz"].isna(), ["consistent", "verdict"]] = [False, "no cycles"]
    return out.reset_index(drop=True)


def summarize_clock(consistency: pd.DataFrame | None, nominal_mhz: float | None = None) -> dict | None:
    """Numbers for the text: the clock, its spread, rows outside the band, the nominal clock (None
    where the check did not run)."""
    if consistency is None:
        return None
    ghz = consistency["implied_ghz"].dropna()
    # a clock in MHz is Mcycles per second
    nominal = convert_unit(nominal_mhz, "MHz", "GHz") if nominal_mhz else None
    return {"rows": int(len(consistency)), "consistent": int(consistency["consistent"].sum()),
            "clock_ghz": float(ghz.median()), "clock_q1": float(ghz.quantile(0.25)),
            "clock_q3": float(ghz.quantile(0.75)), "nominal_ghz": nominal,

            "outside": consistency.loc[~consistency["consistent"], ["algorithm", "build", "operation",
                                                                     "implied_ghz", "verdict"]]}

