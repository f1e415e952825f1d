"""The run recorder: the one owner of starting, checkpointing and saving a run.

Every runner (pqlab's own timings, the memory driver, the C runner, the JVM runner, energy windows)
records through it, so every run has the same id scheme, metadata and base columns::

    with RunRecorder("01_aes_rsa_sphincs", params) as rec:      # the folder checked, a first checkpoint
        rec.add(measurements=[rec.row(algo, operation="sign", **rec.summary_columns(summary))])
        rec.checkpoint()                                          # the files replaced as one set
    run = rec.run                                                 # status "complete" (or "interrupted",
                                                                  # "failed" with the error) on exit

Nothing measured is lost:

* before anything is measured, the results folder must be creatable, writable and have
  :data:`FREE_SPACE_MARGIN` bytes free (:func:`check_folder`), else :class:`~pqlab.core.errors.BadInput`
  names the folder and the fix; a `run_id` that the store holds already (in the folder, in any machine's
  folder under ``machines/``, or in an import not yet complete), or that another process is recording there
  right now, is refused (:func:`reserve_run_id`: two processes started at once with one id cannot both have
  it);
* a save that fails mid-run (disk full, folder gone) goes to a fallback folder (:func:`fallback_folders`:
  the user's cache, then the temporary folder), said in a :class:`~pqlab.core.errors.PqlabWarning` and in
  ``meta["saved_to_fallback"]``; the run's older files in the first folder are removed;
* inside ``with``, SIGINT, SIGTERM and SIGHUP raise :class:`Interrupted` (a KeyboardInterrupt) between
  writes, never inside one: a signal that arrives during a save is handled when the save is complete.
  The run is saved with status ``interrupted`` and :class:`Interrupted` is raised again with one line
  saying what was kept and where (the CLI prints it and exits 128 + the signal number);
* the metadata names the process (pid, host, start time), so a ``running`` run whose process died
  (SIGKILL, power loss) loads as ``abandoned``; a save it left cut among its renames is completed, and
  its other temporary files are removed, by the next save in that folder or load of that run
  (:func:`pqlab.store.results.finish_cut_saves`, :func:`pqlab.core.files.remove_orphans`).
"""
from __future__ import annotations

import datetime as dt
import fcntl
import json
import os
import shutil
import signal
import tempfile
import threading
import uuid
from pathlib import Path

from pqlab.core import inputs, paths
from pqlab.core.errors import BadInput, warn
from pqlab.core.files import atomic_write_set, process_identity, remove_orphans
from pqlab.core.formatting import fmt_bytes_binary
from pqlab.core.schema import SCHEMA_VERSION, typed
from pqlab.measure import machine
from pqlab.store.machines import MACHINES, held_run_ids

#: summarize() key -> column suffix, for times and for cycles.  No interval: one process's samples cannot give
#: an honest one (pqlab.runners.rounds); rows measured in rounds get theirs from
#: pqlab.measure.stats.round_interval.
TIME_STATS = ("median", "q1", "q3", "min", "mean", "cv")
CYCLE_STATS = ("median", "q1", "q3", "mean")
#: Free space a results folder needs before a run starts (a run's files are far smaller).
FREE_SPACE_MARGIN = 32 << 20
#: The signals a run survives (saved as interrupted); SIGKILL cannot be caught.
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
FOLDER_FIX = "choose another folder (CLI: --folder; API: folder=...) or set PQLAB_OUTPUT"


def new_run_id(label: str = "") -> str:
    """``<UTC timestamp>-<label>-<6 hex digits>``: sortable by time, unique, readable."""
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    return f"{stamp}-{label or 'run'}-{uuid.uuid4().hex[:6]}"


def summary_columns(summary: dict | None, prefix: str = "time_ns") -> dict:
    """The schema's columns from a :func:`pqlab.measure.stats.summarize` dict: ``time_ns_median`` ... or, with
    ``prefix="cycles"``, ``cycles_median`` ... (empty for an empty summary)."""
    if not summary or not summary.get("n"):
        return {}
    keys = TIME_STATS if prefix == "time_ns" else CYCLE_STATS
    return {f"{prefix}_{k}": summary[k] for k in keys if k in summary}


def check_folder(folder: Path | str, what: str = "results folder", margin: int = FREE_SPACE_MARGIN,
                 fix: str = FOLDER_FIX) -> Path:
    """`folder`, created if need be, once a file could be written in it and `margin` bytes are free;
    else :class:`BadInput` naming the folder, the problem and the fix (`fix`: how to choose another)."""
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise BadInput(f"the {what} {folder} is a file, not a folder: {fix}")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / f".pqlab-write-check-{os.getpid()}"
        atomic_write_set([(probe, b"pqlab\n")], fsync=False)
        probe.unlink()
        free = shutil.disk_usage(folder).free
    except OSError as exc:
        raise BadInput(f"cannot write in the {what} {folder} ({exc.strerror or exc}): {fix}") from None
    if free < margin:

        raise BadInput(f"the {what} {folder} has {fmt_bytes_binary(free)} free, less than the "
                       f"{fmt_bytes_binary(margin)} a run needs: free some space, or {fix}")
    return folder


#: The reservation of a run id while its run is recorded: ``<folder>/<run_id>.lock`` (readers of the results
#: store look at ``*.meta.json`` only, so they never see it).
LOCK_SUFFIX = ".lock"
_RUN_ID_FIX = "choose a new one (CLI: another --run-id; or leave it out: pqlab makes a unique one)"


def _run_files(folder: Path, run_id: str) -> list[Path]:
    """The files of run `run_id` in `folder` (its reservation left out)."""
    return [p for p in folder.glob(f"{run_id}.*") if p.name != f"{run_id}{LOCK_SUFFIX}"]


def _held_in(folder: Path, run_id: str) -> str:
    """Where the results store `folder` holds run `run_id` ("" when nowhere): the folder itself or a machine's
    folder with its files, or an import under way or interrupted (:func:`pqlab.store.machines.held_run_ids`:
    one id names one run across the whole store)."""
    if _run_files(folder, run_id):
        return str(folder)
    if run_id not in held_run_ids(folder):
        return ""
    metas = sorted(folder.glob(f"{MACHINES}/*/{run_id}.meta.json"))  # a run id has no glob characters
    return (str(metas[0].parent) if metas
            else f"an import not yet complete ({folder / MACHINES}/*/bundles/*.importing)")


def reserve_run_id(folder: Path | str, run_id: str) -> int | None:
    """Reserve `run_id` in `folder` for this process: an exclusive lock (flock) on ``<run_id>.lock`` that
    lasts until :func:`release_run_id` (or until the process ends: a run killed outright never blocks its id,
    its files alone say it exists).  Returns the lock's descriptor (None on a file system without locks, where
    only the run's files are checked).

    Two processes that start with one id at the same moment cannot both pass: the lock is taken first, and
    only its holder checks that the run has no files yet.  Refused with one line (:class:`BadInput`) when
    another process holds the id, or the store of `folder` holds it already (:func:`_held_in`: the folder, a
    machine's folder under it, an import not yet complete)."""
    folder = Path(folder)
    lock = folder / f"{run_id}{LOCK_SUFFIX}"
    for _ in range(100):
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o644)
        except OSError as exc:
            raise BadInput(f"cannot reserve run id {run_id!r} in {folder} ({exc.strerror or exc}): "
                           f"{FOLDER_FIX}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            os.close(fd)
            raise BadInput(f"run id {run_id!r} is being recorded right now in {folder} by another process"
                           f"{holder}: {_RUN_ID_FIX}") from None
        except OSError:  # no locks on this file system: the run's files are all there is to check
            os.close(fd)
            lock.unlink(missing_ok=True)
            if where := _held_in(folder, run_id):
                raise BadInput(f"run id {run_id!r} exists already in {where}: {_RUN_ID_FIX}") from None
            return None
        try:  # the holder before us may have removed the name (its run done): lock the file that is there now
            current = os.stat(lock, follow_symlinks=False)
        except FileNotFoundError:
            current = None
        if current is None or not os.path.samestat(os.fstat(fd), current):
            os.close(fd)
            continue
        if where := _held_in(folder, run_id):
            release_run_id(fd, folder, run_id)
            raise BadInput(f"run id {run_id!r} exists already in {where}: {_RUN_ID_FIX}")
        os.ftruncate(fd, 0)
        os.write(fd, (json.dumps({"run_id": run_id, **process_identity()}) + "\n").encode())
        return fd
    raise BadInput(f"could not reserve run id {run_id!r} in {folder}: other processes keep taking and "
                   f"releasing it; {_RUN_ID_FIX}")


def _holder(fd: int) -> str:
    """" (pid N on host H)" from a reservation's content, or "" when it does not say."""
    try:
        who = json.loads(os.pread(fd, 4096, 0) or b"{}")
        return f" (pid {who['pid']} on host {who['host']})"
    except (OSError, ValueError, KeyError, TypeError):
        return ""


def release_run_id(fd: int, folder: Path | str, run_id: str) -> None:
    """End a reservation of :func:`reserve_run_id`: its file removed while still locked, then the lock
    released."""
    try:
        Path(folder, f"{run_id}{LOCK_SUFFIX}").unlink(missing_ok=True)
    except OSError:
        pass  # a folder gone or read-only: the lock still ends with the descriptor
    os.close(fd)


def fallback_folders() -> list[Path]:
    """Where a run goes when its folder fails mid-run: the user's cache, then the temporary folder."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return [cache / "pqlab" / "results", Path(tempfile.gettempdir()) / "pqlab-results"]


class Interrupted(KeyboardInterrupt):
    """A run stopped by a signal (SIGINT, SIGTERM, SIGHUP); ``signum`` is the signal, the message says
    what was kept and where."""

    def __init__(self, signum: int, message: str = "") -> None:
        self.signum = signum
        super().__init__(message or f"{signal.Signals(signum).name}: stopped before anything was measured")

    def __str__(self) -> str:
        return self.args[0]


def _raise_interrupted(signum, frame) -> None:
    raise Interrupted(signum)


class RunRecorder:
    """One run: its id, start time, machine metadata, base row, rows, checkpoints and final save.

    `study`: the notebook (or label) stored with every row; `params`: the run's parameters (hashed
    into the metadata); `label`: part of the run id (default: the study); `folder`: the results
    folder (default ``data/results``), checked before anything else; `run_id`: must not exist in
    `folder`; `save`: False keeps the run in memory only; `liboqs`: record liboqs's version and build
    (False for runners that do not load it); `meta`: more metadata (a runner's ``plan`` ...).
    """

    def __init__(self, study: str = "", params: dict | None = None, *, label: str | None = None,
                 folder: Path | str | None = None, run_id: str | None = None, save: bool = True,
                 liboqs: bool = True, meta: dict | None = None) -> None:
        self.folder, self.save = Path(folder or paths.RESULTS), save
        study = inputs.file_label(study, "study", empty=True)
        label = inputs.file_label(label, "label", empty=True) if label is not None else None
        run_id = inputs.file_label(run_id, "run id") if run_id is not None else None
        self.run_id = run_id or new_run_id(label or study)
        self._reservation: int | None = None  # the lock on the run id while the run is recorded
        if save:
            check_folder(self.folder)
            self._reservation, self._reserved_in = reserve_run_id(self.folder, self.run_id), self.folder
        try:
            self._start(study, params, liboqs, meta)
        except BaseException:
            self._release()
            raise

    def _start(self, study: str, params: dict | None, liboqs: bool, meta: dict | None) -> None:
        self.study = study
        self.started_at = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        self.meta = machine.collect(params or {}, liboqs=liboqs)
        self.meta.update(meta or {})
        self.meta.update(study=study, run_id=self.run_id, started_at=self.started_at, status="running",
                         schema_version=SCHEMA_VERSION, process=process_identity())
        self.base = {"schema_version": SCHEMA_VERSION, "run_id": self.run_id, "started_at": self.started_at,
                     "machine_id": self.meta["machine_id"], "study": study}
        self.measurements: list[dict] = []
        self.sizes: list[dict] = []
        self._typed: dict = {}  # part -> its rows typed so far (rows are final once added: add() takes them)
        # the typed samples so far, one frame (each add() appends: a checkpoint after every operation would
        # otherwise concatenate hundreds of frames each time)
        self._samples = None
        self._sample_gz: list[bytes] | None = []  # the samples' encodings (gzip members), one per add()
        self._cleaned: set[Path] = set()
        self._signals: dict | None = None  # the handlers replaced while inside `with`
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
        import pandas as pd

        from pqlab.store.results import encode_table

        self.measurements.extend(measurements)
        self.sizes.extend(dict(r, schema_version=SCHEMA_VERSION, run_id=self.run_id) for r in sizes)
        samples = samples.to_dict("records") if hasattr(samples, "to_dict") else list(samples)
        if samples:
            frame = typed(pd.DataFrame(samples), "samples")
            first = self._samples is None
            if self._sample_gz is not None and (first or list(frame.columns) == list(self._samples.columns)):
                self._sample_gz.append(encode_table(frame, gz=True, header=first))
            else:
                self._sample_gz = None  # other columns than before: the whole table is encoded at each save
            self._samples = frame if first else pd.concat([self._samples, frame], ignore_index=True)

    def set_measurements(self, rows) -> None:
        """Replace the measurement rows (a runner that refines its rows as rounds come in:
        pqlab.benchmark)."""
        self.measurements = list(rows)
        self._typed.pop("measurements", None)

    def measured(self) -> int:
        """How many measurement rows the run holds, the harness's own no-op rows not counted."""
        return sum(r.get("kind") != "noop" for r in self.measurements)

    # ----- saving -----
    def checkpoint(self, status: str = "running"):
        """Build the :class:`~pqlab.store.results.Run` as it stands and (unless save=False) replace its files.

        A signal that arrives during the save is handled once the save is complete."""
        pending = self._write(status)
        if pending and status == "running":
            raise Interrupted(pending[0])
        return self.run

    def finish(self, status: str = "complete", **meta):
        """The last checkpoint, with `status` and any final metadata; the run id's reservation ends."""
        self.meta.update(meta)
        self.meta["finished_at"] = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        try:
            return self.checkpoint(status)
        finally:
            if status != "running":
                self._release()

    def _release(self) -> None:
        """End the reservation of the run id (once the run's last save is done, or when it never starts)."""
        if self._reservation is not None:
            fd, self._reservation = self._reservation, None
            release_run_id(fd, self._reserved_in, self.run_id)

    def __del__(self) -> None:
        if getattr(self, "_reservation", None) is not None:
            self._release()

    def _write(self, status: str, final: bool = False) -> list[int]:
        """Save with `status`; the signals that arrived meanwhile, held back until the save was complete.
        Afterwards the run's own handlers are back in place, or (`final`) those from before the run."""
        import pandas as pd

        from pqlab.store.results import Run

        pending: list[int] = []
        if self._signals is not None:
            for s in SIGNALS:
                signal.signal(s, lambda signum, frame: pending.append(signum))
        try:
            self.meta["status"] = status
            samples = self._samples if self._samples is not None else typed(pd.DataFrame(), "samples")
            self.run = Run(self.run_id, self._typed_part("measurements"), self._typed_part("sizes"), samples,
                           self.meta)
            if self.save:
                self._save()
        finally:
            if final:
                self._restore_signals()
            elif self._signals is not None:
                for s in SIGNALS:
                    signal.signal(s, _raise_interrupted)
        return pending

    def _typed_part(self, part: str):
        """The table of `part` ("measurements" or "sizes"): the rows added since the last checkpoint typed and
        appended, so that a checkpoint every operation does not type every row again (the table equals `typed`
        of all rows: tests/store/test_results.py checks it where new rows bring other columns or dtypes)."""
        import pandas as pd


        rows, done = getattr(self, part), self._typed.get(part)
        if done is None or len(done) < len(rows):
            new = typed(pd.DataFrame(rows[0 if done is None else len(done):]), part)
            self._typed[part] = (new if done is None or done.empty
                                 else pd.concat([done, new], ignore_index=True))
        return self._typed[part]

    def _save(self) -> None:
        """Save in the run's folder, else in the first fallback folder that works (and stay there)."""
        from pqlab.store.results import finish_cut_saves

        gz = b"".join(self._sample_gz) if self._sample_gz else None  # None: Run.save encodes the table
        errors = []
        for folder in [self.folder] + [f for f in fallback_folders() if f != self.folder]:
            if errors:
                self.meta.setdefault("saved_to_fallback", {"folder": str(self.folder), "error": errors[0]})
            try:
                if folder not in self._cleaned:
                    folder.mkdir(parents=True, exist_ok=True)
                    finish_cut_saves(folder)  # a dead run's save cut among its renames: completed, not lost
                    remove_orphans(folder)
                    self._cleaned.add(folder)
                self.run.save(folder, samples_gz=gz)
            except OSError as exc:
                errors.append(f"{folder} ({exc.strerror or exc})")
                continue
            if errors:
                # an older checkpoint: the run lives on in `folder`
                for old in _run_files(self.folder, self.run_id):
                    try:
                        old.unlink()
                    except OSError:
                        pass
                warn(f"could not save run {self.run_id} in {errors[0]}; it is saved in {folder} instead")
                self.folder = folder
            return
        raise OSError(f"run {self.run_id} could not be saved in " + ", ".join(errors)
                      + f": its {self.measured()} measurements are in memory only (RunRecorder.run)")

    def __enter__(self) -> RunRecorder:
        if threading.current_thread() is threading.main_thread():
            self._signals = {s: signal.signal(s, _raise_interrupted) for s in SIGNALS}
        try:
            self.checkpoint("running")
        except KeyboardInterrupt as exc:  # during the first save: saved as interrupted, said in one line
            self.__exit__(type(exc), exc, exc.__traceback__)
        except BaseException:
            self._restore_signals()
            raise
        return self

    def _restore_signals(self) -> None:
        if self._signals is not None:
            for s, handler in self._signals.items():
                signal.signal(s, handler)
            self._signals = None

    def __exit__(self, exc_type, exc, tb) -> bool:
        if exc_type is None:
            status, extra = "complete", {}
        elif issubclass(exc_type, KeyboardInterrupt):
            status, extra = "interrupted", {"interrupted_by": signal.Signals(getattr(exc, "signum",
                                                                                       signal.SIGINT)).name}
        else:
            status, extra = "failed", {"error": f"{exc_type.__name__}: {exc}"}
        if exc_type is None and self.meta.get("status") != "running":
            self._restore_signals()
            self._release()
            return False
        self.meta.update(extra)
        self.meta["finished_at"] = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        try:
            pending = self._write(status, final=True)
        finally:
            self._release()
        if status == "interrupted":
            where = f"saved in {self.run.path}" if self.save else "kept in memory (save=False)"
            raise Interrupted(getattr(exc, "signum", signal.SIGINT),
                              f"{extra['interrupted_by']}: run {self.run_id} stopped with {self.measured()} "
                              f"measurements, {where} (status interrupted)") from None
        if pending:
            signal.raise_signal(pending[0])  # held back during the final save: delivered now
        return False
