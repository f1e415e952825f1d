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
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from . import paths
from .files import atomic_write, atomic_write_text
from .schema import SCHEMA_VERSION, convert, typed
from .stats import mann_whitney, ratio_ci, welch_p


def verified_rows(measurements: pd.DataFrame, operations: bool = True) -> pd.DataFrame:
    """The rows whose every checked output was right; without the harness no-op row when `operations`."""
    ok = measurements["verified"].fillna(False).astype(bool)
    if operations:
        ok &= measurements["operation"] != "noop"
    return measurements[ok]


@dataclass
class Run:
    """A run's tidy tables (typed as :mod:`pqlab.schema` says) and metadata."""

    run_id: str
    measurements: pd.DataFrame
    sizes: pd.DataFrame
    samples: pd.DataFrame
    meta: dict = field(default_factory=dict)
    path: Path | None = None

    @classmethod
    def from_rows(cls, run_id, measurements, sizes, samples, meta) -> Run:
        return cls(run_id, typed(pd.DataFrame(list(measurements)), "measurements"),
                   typed(pd.DataFrame(list(sizes)), "sizes"), typed(pd.DataFrame(list(samples)), "samples"), meta)

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

    def verified(self, operations: bool = True) -> pd.DataFrame:
        """The measurements whose every checked output was right (:func:`verified_rows`)."""
        return verified_rows(self.measurements, operations)

    #: the columns of :meth:`raw_summary`, in order
    SUMMARY_COLUMNS = ("algorithm", "backend", "variant", "operation", "message_bytes", "samples", "time_ns_median",
                       "time_ns_q1", "time_ns_q3", "cycles_median", "cycles_source", "verified", "flags")

    def raw_summary(self) -> pd.DataFrame:
        """The measurements a reader looks at first, raw (ns, cycles, flags cells): one row per algorithm,
        backend, operation and size, the columns of SUMMARY_COLUMNS present in this run."""
        return self.measurements[[c for c in self.SUMMARY_COLUMNS if c in self.measurements]]

    def summary(self):
        """:meth:`raw_summary` as a reader sees it (:func:`pqlab.formatting.table`, the rules of the paper
        tables): units in the headers, sensible digits, flags as short marks with a legend.  Shown as a table
        in a notebook; ``.frame`` is its DataFrame of strings; the raw numbers are :meth:`raw_summary`."""
        from .formatting import table

        raw = self.raw_summary()
        shown = [c for c in raw.columns if c != "flags" and not (c in ("variant", "message_bytes", "cycles_median",
                                                                       "cycles_source") and raw[c].isna().all())]
        return table(raw, shown)

    def sample_values(self, algorithm: str, operation: str, *, backend: str | None = None,
                      variant: str | None = None, message_bytes=None, column: str = "time_ns") -> np.ndarray:
        """The raw per-call values of one measurement (for intervals of ratios)."""
        s = self.samples
        sel = (s["algorithm"] == algorithm) & (s["operation"] == operation)
        if backend is not None:
            sel &= s["backend"] == backend
        if variant is not None:
            sel &= s["variant"].fillna("") == variant
        if message_bytes is not None:
            sel &= s["message_bytes"] == message_bytes
        return s.loc[sel, column].dropna().to_numpy(dtype=float)


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
    """A run by id (looked up in data/results/) or by the path of any of its files; typed frames.

    A run written by an older schema version is converted (:func:`pqlab.schema.convert`)."""
    base = _base(ref)
    meta_path = Path(f"{base}.meta.json")
    if not meta_path.exists():
        known = sorted(p.name[: -len(".meta.json")] for p in base.parent.glob("*.meta.json"))
        raise FileNotFoundError(f"no run {base.name!r} in {base.parent} (no {meta_path.name}); "
                                f"runs there: {', '.join(known[-10:]) or 'none'}")
    meta = json.loads(meta_path.read_text())
    version = meta.get("schema_version")
    if not isinstance(version, int) or version > SCHEMA_VERSION:
        raise ValueError(f"{meta_path} has schema version {version!r}; this pqlab reads versions up to "
                         f"{SCHEMA_VERSION}: update pqlab to read it")
    samples_path = Path(f"{base}.samples.csv.gz")
    measurements, sizes = (_read_csv(f"{base}.{part}.csv") for part in ("measurements", "sizes"))
    samples = _read_csv(samples_path) if samples_path.exists() else pd.DataFrame()
    if version < SCHEMA_VERSION:
        measurements, sizes, samples = convert(measurements, sizes, samples, version)
        meta = dict(meta, converted_from_schema=version, schema_version=SCHEMA_VERSION)
    return Run(base.name, typed(measurements, "measurements"), typed(sizes, "sizes"), typed(samples, "samples"),
               meta, meta_path)


def _read_csv(path) -> pd.DataFrame:
    """A results table as written: only empty cells are missing (a flag text "NA" stays text); the schema's
    columns are typed afterwards, other columns keep pandas' inference."""
    return pd.read_csv(path, keep_default_na=False, na_values=[""], low_memory=False)


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
    return pd.concat(frames, ignore_index=True) if frames else typed(pd.DataFrame(), "measurements")


KEY = ["algorithm", "backend", "variant", "operation", "message_bytes"]
#: what must be equal for two runs to be compared without being told to (label -> meta reader)
SAME = {
    "machine": lambda m: m.get("machine_id"),
    "parameters": lambda m: m.get("params_hash"),
    "liboqs build": lambda m: (lambda i: (i.get("liboqs_version"), i.get("variant"))
                               if i else None)(m.get("liboqs") or {}),
}


def run_differences(a: Run, b: Run) -> list[str]:
    """What differs between two runs' machine, parameters and liboqs build, in words."""
    return [f"{label} ({get(a.meta)} vs {get(b.meta)})" for label, get in SAME.items() if get(a.meta) != get(b.meta)]


def _keyed(df: pd.DataFrame) -> pd.DataFrame:
    """Key columns without missing values (a run without liboqs rows has an all-empty variant column)."""
    return df.assign(variant=df["variant"].astype(object).fillna(""),
                     message_bytes=df["message_bytes"].astype(float).fillna(-1))


def compare_runs(a: Run | str | Path, b: Run | str | Path, alpha: float = 0.01, min_factor: float = 1.05,
                 allow_different: bool = False) -> pd.DataFrame:
    """Each measurement present in both runs: the factor b/a with its bootstrap interval and a test.

    Like statistics: the ratio of medians with a Mann-Whitney test where both samples are means of the
    same number of loops, else the ratio of means (a sample's value is a mean of its loops) with Welch's
    test.  A difference is called only when p < `alpha`, the interval excludes 1 and the factor is at
    least `min_factor` either way (asv's factor, pyperf's --min-speed).  Runs from different machines,
    parameters or liboqs builds are refused unless `allow_different`; ``attrs["differences"]`` names them.
    The harness's no-op row is not a measurement in common.
    """
    ra = a if isinstance(a, Run) else load_run(a)
    rb = b if isinstance(b, Run) else load_run(b)
    differences = run_differences(ra, rb)
    if differences and not allow_different:
        raise ValueError(f"runs {ra.run_id} and {rb.run_id} differ in " + "; ".join(differences)
                         + ": compare them anyway with allow_different=True (CLI: --allow-different)")
    ma, mb = (_keyed(r.verified()) for r in (ra, rb))
    merged = ma.merge(mb, on=KEY, suffixes=("_a", "_b"))
    sa, sb = (_keyed(r.samples) for r in (ra, rb))
    groups_a = {k: g["time_ns"].to_numpy(float) for k, g in sa.groupby(KEY, dropna=False)}
    groups_b = {k: g["time_ns"].to_numpy(float) for k, g in sb.groupby(KEY, dropna=False)}
    rows = []
    for _, r in merged.iterrows():
        key = tuple(r[k] for k in KEY)
        xa, xb = groups_a.get(key, np.array([])), groups_b.get(key, np.array([]))
        same_loops = r["loops_a"] == r["loops_b"]
        stat = "median" if same_loops else "mean"
        factor, low, high = ratio_ci(xb, xa, stat)
        p = mann_whitney(xa, xb)[1] if same_loops else welch_p(xa, xb)
        excludes_one = not (low <= 1 <= high)
        large = max(factor, 1 / factor) >= min_factor
        significant = bool(p < alpha and excludes_one and large)
        if significant:
            verdict = f"{'slower' if factor > 1 else 'faster'} by {max(factor, 1 / factor):.2f}x"
        elif p < alpha and excludes_one:
            verdict = f"differs by less than {min_factor:g}x"
        else:
            verdict = "no significant difference"
        center = np.median if same_loops else np.mean
        rows.append({**{k: r[k] for k in KEY}, "statistic": stat,
                     "a_ns": float(center(xa)) if xa.size else np.nan, "b_ns": float(center(xb)) if xb.size else np.nan,
                     "factor_b_over_a": factor, "factor_ci_low": low, "factor_ci_high": high, "p_value": p,
                     "significant": significant, "verdict": verdict})
    out = pd.DataFrame(rows)
    if not out.empty:
        out["message_bytes"] = out["message_bytes"].replace(-1, pd.NA)
    out.attrs["differences"] = differences
    return out
