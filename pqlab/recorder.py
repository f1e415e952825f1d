"""The run recorder: the one owner of starting, checkpointing and saving a run.

Every runner (pqlab's own timings, the memory driver, the C runner, the JVM runner, energy windows)
records through it, so every run has the same id scheme, metadata and base columns::

    with RunRecorder("01_aes_rsa_sphincs", params) as rec:      # a first checkpoint: status "running"
        rec.add(measurements=[rec.row(algo, operation="sign", **rec.summary_columns(summary))])
        rec.checkpoint()                                          # the files replaced whole, atomically
    run = rec.run                                                 # status "complete" (or "interrupted",
                                                                  # "failed" with the error) on exit
"""
from __future__ import annotations

import datetime as dt
import uuid
from pathlib import Path

from . import machine
from .schema import SCHEMA_VERSION

#: summarize() key -> column suffix, for times and for cycles
TIME_STATS = ("median", "q1", "q3", "ci_low", "ci_high", "min", "mean", "cv")
CYCLE_STATS = ("median", "q1", "q3", "mean")


def new_run_id(label: str = "") -> str:
    """``<UTC timestamp>-<label>-<6 hex digits>``: sortable by time, unique, readable."""
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    return f"{stamp}-{label or 'run'}-{uuid.uuid4().hex[:6]}"


def summary_columns(summary: dict | None, prefix: str = "time_ns") -> dict:
    """The schema's columns from a :func:`pqlab.stats.summarize` dict: ``time_ns_median`` ... or, with
    ``prefix="cycles"``, ``cycles_median`` ... (empty for an empty summary)."""
    if not summary or not summary.get("n"):
        return {}
    keys = TIME_STATS if prefix == "time_ns" else CYCLE_STATS
    return {f"{prefix}_{k}": summary[k] for k in keys if k in summary}


class RunRecorder:
    """One run: its id, start time, machine metadata, base row, rows, checkpoints and final save.

    `study`: the notebook (or label) stored with every row; `params`: the run's parameters (hashed
    into the metadata); `label`: part of the run id (default: the study); `folder`: the results
    folder (default ``data/results``); `save`: False keeps the run in memory only; `liboqs`: record
    liboqs's version and build (False for runners that do not load it); `meta`: more metadata.
    """

    def __init__(self, study: str = "", params: dict | None = None, *, label: str | None = None,
                 folder: Path | str | None = None, run_id: str | None = None, save: bool = True,
                 liboqs: bool = True, meta: dict | None = None) -> None:
        self.study = study
        self.run_id = run_id or new_run_id(label or study)
        self.started_at = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        self.meta = machine.collect(params or {}, liboqs=liboqs)
        self.meta.update(meta or {})
        self.meta.update(study=study, started_at=self.started_at, status="running", schema_version=SCHEMA_VERSION)
        self.base = {"schema_version": SCHEMA_VERSION, "run_id": self.run_id, "started_at": self.started_at,
                     "machine_id": self.meta["machine_id"], "study": study}
        self.folder, self.save = folder, save
        self.measurements: list[dict] = []
        self.sizes: list[dict] = []
        self.samples: list[dict] = []
        self.run = None

    # ----- rows -----
    def record_implementation(self, algorithm: str, backend: str, implementation: str) -> None:
        """What ran, as the backend labels it after checking the installed package, in the run's
        metadata: ``meta["implementations"]["ALGORITHM@backend"]``."""
        self.meta.setdefault("implementations", {})[f"{algorithm}@{backend}"] = implementation

    def row(self, algo=None, **fields) -> dict:
        """A measurement row: the base columns, the algorithm's identity (an adapter), then `fields`;
        the adapter's implementation label goes into the metadata too."""
        row = dict(self.base)
        if algo is not None:
            row.update(algo.identity())
            self.record_implementation(algo.name, algo.backend, algo.implementation)
        row.update(fields)
        return row

    summary_columns = staticmethod(summary_columns)

    def add(self, measurements=(), sizes=(), samples=()) -> None:
        """Append rows (dicts); size rows get the run id and schema version."""
        self.measurements.extend(measurements)
        self.sizes.extend(dict(r, schema_version=SCHEMA_VERSION, run_id=self.run_id) for r in sizes)
        self.samples.extend(samples)

    # ----- saving -----
    def checkpoint(self, status: str = "running"):
        """Build the :class:`~pqlab.results.Run` as it stands and (unless save=False) replace its files."""
        from .results import Run

        self.meta["status"] = status
        self.run = Run.from_rows(self.run_id, self.measurements, self.sizes, self.samples, self.meta)
        if self.save:
            self.run.save(self.folder)
        return self.run

    def finish(self, status: str = "complete", **meta):
        """The last checkpoint, with `status` and any final metadata."""
        self.meta.update(meta)
        self.meta["finished_at"] = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        return self.checkpoint(status)

    def __enter__(self) -> RunRecorder:
        self.checkpoint("running")
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        if exc_type is None:
            if self.meta.get("status") == "running":
                self.finish("complete")
        elif issubclass(exc_type, KeyboardInterrupt):
            self.finish("interrupted")
        else:
            self.finish("failed", error=f"{exc_type.__name__}: {exc}")
        return False
