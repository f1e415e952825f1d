"""The results store: one set of files per run, written atomically, never edited in place.

A run ``RUN`` lives in ``data/results/`` as ``RUN.measurements.csv``, ``RUN.sizes.csv``,
``RUN.samples.csv.gz`` and ``RUN.meta.json`` (written last: a run without its meta file is
incomplete).  Each file is written to a temporary name in the same folder and renamed over
the old one, so a crash leaves either the previous complete file or the new one.  A long run
saves itself after every algorithm (a checkpoint replaces the files whole, with
``meta["status"]`` = "running"), so an interrupted run keeps everything it measured.
"""
from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from . import paths
from .schema import MEASUREMENT_COLUMNS, SAMPLE_COLUMNS, SCHEMA_VERSION, SIZE_COLUMNS
from .stats import mann_whitney

PARTS = ("measurements", "sizes", "samples")


def atomic_write(path: Path | str, write) -> Path:
    """Call write(fileobj_path) on a temp file beside `path`, then rename it into place."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; results are ordinary files
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def atomic_write_text(path: Path | str, text: str) -> Path:
    return atomic_write(path, lambda tmp: Path(tmp).write_text(text))


def _frame(rows, columns) -> pd.DataFrame:
    df = pd.DataFrame(rows)
    for col in columns:
        if col not in df.columns:
            df[col] = pd.NA
    extra = [c for c in df.columns if c not in columns]
    return df[list(columns) + extra]


@dataclass
class Run:
    """A run's tidy tables and metadata."""

    run_id: str
    measurements: pd.DataFrame
    sizes: pd.DataFrame
    samples: pd.DataFrame
    meta: dict = field(default_factory=dict)
    path: Path | None = None

    @classmethod
    def from_rows(cls, run_id, measurements, sizes, samples, meta) -> Run:
        return cls(run_id, _frame(measurements, MEASUREMENT_COLUMNS), _frame(sizes, SIZE_COLUMNS),
                   _frame(samples, SAMPLE_COLUMNS), meta)

    def save(self, folder: Path | str | None = None) -> Path:
        """Write every part atomically (meta last); returns the meta file's path."""
        folder = Path(folder or paths.RESULTS)
        base = folder / self.run_id
        atomic_write(f"{base}.samples.csv.gz", lambda t: self.samples.to_csv(t, index=False, compression="gzip"))
        atomic_write(f"{base}.sizes.csv", lambda t: self.sizes.to_csv(t, index=False))
        atomic_write(f"{base}.measurements.csv", lambda t: self.measurements.to_csv(t, index=False))
        meta = dict(self.meta, schema_version=SCHEMA_VERSION, run_id=self.run_id)
        self.path = atomic_write_text(f"{base}.meta.json", json.dumps(meta, indent=2, default=str) + "\n")
        return self.path

    def summary(self) -> pd.DataFrame:
        """The measurements a reader looks at first: one row per algorithm, backend, operation, size."""
        cols = ["algorithm", "backend", "variant", "operation", "message_bytes", "samples", "time_ns_median",
                "time_ns_q1", "time_ns_q3", "cycles_median", "verified", "flags"]
        return self.measurements[[c for c in cols if c in self.measurements]]


def _base(ref: Path | str) -> Path:
    p = Path(ref)
    if not p.parent.parts or str(p.parent) == ".":
        p = paths.RESULTS / p
    name = p.name
    for suffix in (".meta.json", ".measurements.csv", ".sizes.csv", ".samples.csv.gz"):
        if name.endswith(suffix):
            return p.with_name(name[: -len(suffix)])
    return p


def load_run(ref: Path | str) -> Run:
    """A run by id (looked up in data/results/) or by the path of any of its files."""
    base = _base(ref)
    meta_path = Path(f"{base}.meta.json")
    if not meta_path.exists():
        known = sorted(p.name[: -len(".meta.json")] for p in base.parent.glob("*.meta.json"))
        raise FileNotFoundError(f"no run {base.name!r} in {base.parent} (no {meta_path.name}); "
                                f"runs there: {', '.join(known[-10:]) or 'none'}")
    meta = json.loads(meta_path.read_text())
    if meta.get("schema_version") != SCHEMA_VERSION:
        raise ValueError(f"{meta_path} has schema version {meta.get('schema_version')}, pqlab reads "
                         f"{SCHEMA_VERSION}: re-run it or convert it")
    samples_path = Path(f"{base}.samples.csv.gz")
    text = {"variant": object, "flags": object, "implementation": object}
    samples = pd.read_csv(samples_path, dtype={"variant": object}) if samples_path.exists() else _frame([], SAMPLE_COLUMNS)
    return Run(base.name, pd.read_csv(f"{base}.measurements.csv", dtype=text),
               pd.read_csv(f"{base}.sizes.csv"), samples, meta, meta_path)


def load_runs(refs=None, folder: Path | str | None = None) -> pd.DataFrame:
    """Measurements of several runs (default: every run in data/results), merged, with hostname."""
    folder = Path(folder or paths.RESULTS)
    if refs is None:
        refs = sorted(p for p in folder.glob("*.meta.json"))
    frames = []
    for ref in refs:
        run = load_run(ref)
        df = run.measurements.copy()
        df["hostname"] = run.meta.get("hostname", "")
        frames.append(df)
    return pd.concat(frames, ignore_index=True) if frames else _frame([], MEASUREMENT_COLUMNS)


KEY = ["algorithm", "backend", "variant", "operation", "message_bytes"]


def _keyed(df: pd.DataFrame) -> pd.DataFrame:
    """Key columns without missing values (a run without liboqs rows has an all-empty variant column)."""
    return df.assign(variant=df["variant"].astype(object).fillna(""),
                     message_bytes=df["message_bytes"].astype(float).fillna(-1))


def compare_runs(a: Run | str | Path, b: Run | str | Path, alpha: float = 0.01) -> pd.DataFrame:
    """Each measurement present in both runs: factor b/a of the medians and a Mann-Whitney test.

    `significant` is true when p < alpha (on the raw samples) and the bootstrap confidence
    intervals of the two medians do not overlap.
    """
    ra = a if isinstance(a, Run) else load_run(a)
    rb = b if isinstance(b, Run) else load_run(b)
    ma, mb = (_keyed(r.measurements) for r in (ra, rb))
    merged = ma.merge(mb, on=KEY, suffixes=("_a", "_b"))
    sa, sb = (_keyed(r.samples) for r in (ra, rb))
    groups_a = {k: g["time_ns"].to_numpy() for k, g in sa.groupby(KEY, dropna=False)}
    groups_b = {k: g["time_ns"].to_numpy() for k, g in sb.groupby(KEY, dropna=False)}
    rows = []
    for _, r in merged.iterrows():
        key = tuple(r[k] for k in KEY)
        xa, xb = groups_a.get(key, np.array([])), groups_b.get(key, np.array([]))
        _, p = mann_whitney(xa, xb)
        overlap = not (r["time_ns_ci_high_a"] < r["time_ns_ci_low_b"] or r["time_ns_ci_high_b"] < r["time_ns_ci_low_a"])
        factor = r["time_ns_median_b"] / r["time_ns_median_a"]
        rows.append({**{k: r[k] for k in KEY}, "median_a_ns": r["time_ns_median_a"], "median_b_ns": r["time_ns_median_b"],
                     "factor_b_over_a": factor, "p_value": p, "significant": bool(p < alpha and not overlap),
                     "verdict": ("no significant difference" if not (p < alpha and not overlap)
                                 else f"{'slower' if factor > 1 else 'faster'} by {max(factor, 1 / factor):.2f}x")})
    out = pd.DataFrame(rows)
    if not out.empty:
        out["message_bytes"] = out["message_bytes"].replace(-1, pd.NA)
    return out
