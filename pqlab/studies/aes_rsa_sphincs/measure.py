"""What notebook 01 measures: the study's platform run again (Bouncy Castle, the current release and the
study's own), and the times of every *system* -- one source of times:

* the study: its published means ("averaged over" its runs, printed with "≈"; the study says nothing more
  about those runs), so its ratios carry no interval and are shown to the digits it printed;
* each Python backend here: medians and means of many calls (:func:`pqlab.bench`);
* each Bouncy Castle release run here (the current one, and the study's own release when Maven provides it):
  its *cold* first calls after JVM start (mean of as many first calls as the study had runs: one reading of
  the study's runs), and its JIT-warmed *steady state* (median and mean).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from pqlab.core.references import load_reference
from pqlab.core.schema import convert_unit
from pqlab.measure.stats import MIN_SAMPLES, round_records, with_rounds
from pqlab.runners import jvm
from pqlab.store.results import Run, verified_rows
from pqlab.studies.aes_rsa_sphincs.published import (
    COLD,
    PYTHON,
    STEADY,
    STUDY,
    STUDY_ROW,
    TOPIC,
    construction_of,
    constructions,
    digits,
    study_label,
    study_platform,
)

#: the labels of :func:`run_bouncycastle`'s runs: the runner's Bouncy Castle release, and the study's
CURRENT, STUDYS = "current release", "the study's release"


def _values(run, algorithm: str, backend: str, operation: str, phase: str | None = None):
    """One operation's per-call times: labelled with their rounds where the run measured in rounds (ratios
    are then paired by round), else a plain array (no interval)."""
    s = run.samples
    sel = (s["algorithm"] == algorithm) & (s["backend"] == backend) & (s["operation"] == operation)
    if phase is not None:
        sel &= s["phase"] == phase
    return with_rounds(s.loc[sel].dropna(subset=["time_ns"]), "time_ns", round_records(run))


def _ms(ns) -> float:
    """A time in ns (a number) in ms."""
    return convert_unit(ns, "ns", "ms")


def bc_release(run) -> str:
    """The Bouncy Castle release a run measured (its metadata, as the JVM reported it)."""
    return str(run.meta.get("bouncycastle_version") or run.measurements["library_version"].iloc[0])


def system_values(study_run=None, bc_runs=(), reference: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per system, algorithm and operation: the value the system reports (ms), its statistic, the
    mean (``mean_ms``: the study's statistic) and its raw samples (ns; empty for the study).  Columns: system,
    implementation (what ran it, with its release), kind, statistic, study_row, construction, algorithm,
    operation, value_ms, mean_ms, n, values; for the study also ``published`` (the cell as printed, "≈"
    included) and ``digits`` (its significant digits)."""
    ref = load_reference(TOPIC) if reference is None else reference
    rows = []
    label = study_label(ref)
    for r in ref.itertuples():
        row = STUDY_ROW[r.algorithm]
        for construction in constructions(row):
            rows.append({"system": label, "kind": STUDY, "statistic": "mean", "study_row": row,
                         "implementation": f"Bouncy Castle {study_platform()['bouncycastle']}, the study's",
                         "construction": construction, "algorithm": r.study_label, "operation": r.operation,
                         "value_ms": float(r.time_ms), "mean_ms": float(r.time_ms), "n": int(r.runs),
                         "values": np.array([]), "published": r.published_text,
                         "digits": digits(r.published_text)})
    if study_run is not None:
        for r in verified_rows(study_run.measurements).itertuples():
            v = _values(study_run, r.algorithm, r.backend, r.operation)
            impl = getattr(r, "implementation", None)
            rows.append({"system": r.backend, "kind": PYTHON, "statistic": "median",
                         "implementation": impl if isinstance(impl, str) and impl else r.backend,
                         "study_row": STUDY_ROW.get(r.algorithm, r.algorithm),
                         "construction": construction_of(r.algorithm), "algorithm": r.algorithm,
                         "operation": r.operation, "value_ms": _ms(float(np.median(v))) if v.size else np.nan,
                         "mean_ms": _ms(float(np.mean(v))) if v.size else np.nan, "n": v.size, "values": v})
    for run in (r for r in bc_runs if r is not None):
        release, first = bc_release(run), int(run.meta.get("params", {}).get("cold", MIN_SAMPLES))
        ok = verified_rows(run.measurements).drop_duplicates(["algorithm", "operation"])
        for r in ok.itertuples():
            cold = _values(run, r.algorithm, r.backend, r.operation, "cold")[:first]
            warm = _values(run, r.algorithm, r.backend, r.operation, "warm")
            base = {"study_row": STUDY_ROW.get(r.algorithm, r.algorithm),
                    "implementation": f"Bouncy Castle {release} on Java {run.meta.get('java_version', '?')}",
                    "construction": construction_of(r.algorithm), "algorithm": r.algorithm,
                    "operation": r.operation}
            rows.append({"system": f"BC {release} cold (mean of first {cold.size})", "kind": COLD,
                         "statistic": "mean", **base, "value_ms": _ms(cold.mean()) if cold.size else np.nan,
                         "mean_ms": _ms(cold.mean()) if cold.size else np.nan, "n": cold.size,
                         "values": cold})
            rows.append({"system": f"BC {release} steady state", "kind": STEADY, "statistic": "median",
                         **base, "value_ms": _ms(float(np.median(warm))) if warm.size else np.nan,
                         "mean_ms": _ms(float(np.mean(warm))) if warm.size else np.nan, "n": warm.size,
                         "values": warm})
    return pd.DataFrame(rows)


def not_run(reason: str) -> Run:
    """A run of nothing (unsaved, no rows) that says why a release did not run (``meta["not_run"]``)."""
    return Run.from_rows("", [], [], [], {jvm.NOT_RUN: reason})


def run_bouncycastle(algorithms, *, study_release: bool = True, enabled: bool = True, **kwargs) -> dict:
    """The study's platform again: `algorithms` on the Java program's Bouncy Castle release and, with
    `study_release`, on the release the study used (read from the reference data).  Returns
    ``{label: run}``; each run's ``meta["not_run"]`` is what did not run and why, as recorded: the runner's
    one-line reason when a release cannot run (no JDK, Maven's message when the registry does not provide the
    release), or `enabled` False (the notebook's switch).  `kwargs` go to :func:`pqlab.runners.jvm.bc_run`."""

    def one(version=None) -> Run:
        if not enabled:
            return not_run("the Bouncy Castle runs were switched off (parameter)")
        try:
            return jvm.bc_run(algorithms, version=version, **kwargs)
        except jvm.BouncyCastleUnavailable as exc:
            return not_run(str(exc))

    out = {CURRENT: one()}
    if study_release:
        release = study_platform()["bouncycastle"]
        out[STUDYS] = (one(release) if release != jvm.default_version()
                       else not_run(f"the Java program's release is the study's ({release})"))
    return out


def measured(releases: dict) -> list:
    """The runs of :func:`run_bouncycastle` that measured something."""
    return [run for run in releases.values() if not run.measurements.empty]


def _runs(runs) -> list:
    return [runs] if hasattr(runs, "measurements") else [r for r in runs if r is not None]
