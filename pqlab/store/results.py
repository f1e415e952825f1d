"""The results store: one set of files per run, written atomically, never edited in place.

A run ``RUN`` lives in ``data/results/`` as ``RUN.measurements.csv``, ``RUN.sizes.csv``,
``RUN.samples.csv.gz`` and ``RUN.meta.json`` (strict JSON: a value that is not a finite number is
stored as null).  A save writes all four to temporary names, then renames them into place, the meta
file last (:func:`pqlab.core.files.atomic_write_set`, fsync'd): a crash leaves the previous complete set
or the new one (a save cut among its renames is completed from the staged files by the next load or
save: :func:`finish_cut_saves`).  The meta file records each file's row count and SHA-256 (``files``), and
:func:`load_run` refuses a file that does not match them, naming it.  A long run saves itself after
every operation (a checkpoint, ``meta["status"]`` = "running"; :class:`pqlab.store.recorder.RunRecorder`),
so an interrupted run keeps everything it measured; a ``running`` run whose process no longer exists
loads as ``abandoned``.
"""
from __future__ import annotations

import gzip
import hashlib
import io
import json
import math
import os
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from pqlab.core import inputs, paths
from pqlab.core.builds import options_of, selected
from pqlab.core.errors import warn as _warn
from pqlab.core.files import atomic_write_set, process_alive, temp_target, temp_writer
from pqlab.core.formatting import html, table
from pqlab.core.schema import PARTS, SCHEMA_VERSION, convert, convert_meta, implausible, range_text, typed
from pqlab.measure.noise import compare_references
from pqlab.measure.ratio import run_ratio
from pqlab.measure.stats import MIN_ROUNDS, mann_whitney, ratio_ci, round_interval, welch_p, with_rounds


def verified_rows(measurements: pd.DataFrame, operations: bool = True) -> pd.DataFrame:
    """The rows whose every checked output was right; without the harness no-op row when `operations`."""
    ok = measurements["verified"].fillna(False).astype(bool)
    if operations:
        ok &= measurements["operation"] != "noop"
    return measurements[ok]


@dataclass
class Run:
    """A run's tidy tables (typed as :mod:`pqlab.core.schema` says) and metadata."""

    run_id: str
    measurements: pd.DataFrame
    sizes: pd.DataFrame
    samples: pd.DataFrame
    meta: dict = field(default_factory=dict)
    path: Path | None = None
    #: what :func:`load_run` made missing, being out of its plausible range
    #: (:func:`pqlab.core.schema.plausible_range`): (part, column) -> (how many, the first's row, its value)
    implausible: dict = field(default_factory=dict, repr=False, compare=False)
    #: (the samples table it indexes, (algorithm, operation) -> row positions): :meth:`_samples_of`
    _index: tuple = field(default=(None, {}), init=False, repr=False, compare=False)

    @classmethod
    def from_rows(cls, run_id, measurements, sizes, samples, meta) -> Run:
        return cls(run_id, typed(pd.DataFrame(list(measurements)), "measurements"),
                   typed(pd.DataFrame(list(sizes)), "sizes"), typed(pd.DataFrame(list(samples)), "samples"),
                   meta)

    def save(self, folder: Path | str | None = None, *, samples_gz: bytes | None = None,
             fsync: bool = True) -> Path:
        """Write the run's files as one set, the meta file last (with each file's rows and SHA-256);
        returns the meta file's path.  `samples_gz`: the samples file's bytes when the caller has them
        encoded already (the recorder compresses each operation's samples once)."""
        folder = Path(folder or paths.RESULTS)
        data = {"samples.csv.gz": encode_table(self.samples, gz=True) if samples_gz is None else samples_gz,
                "sizes.csv": encode_table(self.sizes), "measurements.csv": encode_table(self.measurements)}
        files = {suffix: {"rows": len(getattr(self, PART_FILES[suffix])),
                          "sha256": hashlib.sha256(b).hexdigest()}
                 for suffix, b in data.items()}
        meta = dict(self.meta, schema_version=SCHEMA_VERSION, run_id=self.run_id, files=files)
        written = atomic_write_set([(folder / f"{self.run_id}.{suffix}", b) for suffix, b in data.items()]
                                   + [(folder / f"{self.run_id}.meta.json", strict_json(meta).encode())],
                                   fsync=fsync)
        self.path = written[-1]
        return self.path

    def verified(self, operations: bool = True) -> pd.DataFrame:
        """The measurements whose every checked output was right (:func:`verified_rows`)."""
        return verified_rows(self.measurements, operations)

    #: the columns of :meth:`raw_summary`, in order
    SUMMARY_COLUMNS = ("algorithm", "backend", "library_version", "build", "operation", "message_bytes",
                       "samples", "time_ns_median", "time_ns_q1", "time_ns_q3", "time_ns_rel_ci",
                       "cycles_median", "cycles_source", "verified", "flags")

    def raw_summary(self) -> pd.DataFrame:
        """The measurements a reader looks at first, raw (ns, cycles, flags cells): one row per algorithm,
        backend, operation and size, the columns of SUMMARY_COLUMNS present in this run."""
        return self.measurements[[c for c in self.SUMMARY_COLUMNS if c in self.measurements]]

    def summary(self):
        """:meth:`raw_summary` as a reader sees it (:func:`pqlab.core.formatting.table`, the rules of the
        paper tables): units in the headers, sensible digits, flags as short marks with a legend.  Shown as a
        table in a notebook; ``.frame`` is its DataFrame of strings; the raw numbers are
        :meth:`raw_summary`."""

        raw = self.raw_summary()
        optional = ("library_version", "build", "message_bytes", "time_ns_rel_ci", "cycles_median",
                    "cycles_source")
        shown = [c for c in raw.columns if c != "flags" and not (c in optional and raw[c].isna().all())]
        return table(raw, shown)

    def ratio(self, numerator: str, denominator: str, operation: str, *,
              denominator_operation: str | None = None,
              build: str | None = None, message_bytes=None, statistic: str = "median"):
        """`numerator`'s `operation` over `denominator`'s (each "NAME" or "NAME@backend"), with its interval
        over rounds, paired by round, and what the two sides ran in: a :class:`pqlab.measure.ratio.Ratio`
        (shown as one sentence; ``.value``, ``.low``, ``.high``, ``.flags``, ``.text``).  Sides from different
        implementations or releases are flagged and said; where a side did not name its backend, also warned.
        `denominator_operation`: another operation for the denominator (e.g. sign over verify).  `build`
        (its id, or ``default``/``generic``), `message_bytes`: required where the run measured several.
        `statistic`: of each round, "median" (the table's, the default) or "mean" (to compare with a published
        mean; the ratio says which)."""

        return run_ratio(self, numerator, denominator, operation, denominator_operation=denominator_operation,
                         build=build, message_bytes=message_bytes, statistic=statistic)

    def __repr__(self) -> str:  # IPython's text display too (a class's own __repr__)
        return f"{self.headline()}\n{self.summary().to_string()}"

    def _repr_html_(self) -> str:

        return f"<p>{html(self.headline())}</p>{self.summary()._repr_html_()}"

    def headline(self) -> str:
        """One line: the run's id, status, how many measurements of how many algorithms, and where it is
        saved."""
        rows = self.verified()
        where = f"saved in {self.path.parent}" if self.path else "not saved"
        pairs = len(rows[["algorithm", "backend"]].drop_duplicates())
        return (f"Run {self.run_id} ({self.meta.get('status', 'in memory')}): {len(rows)} verified "
                f"measurements of {pairs} algorithm/backend pairs; {where}. .summary() is the table below, "
                ".raw_summary() its numbers, .ratio(a, b, operation=...) a ratio with its interval")

    def sample_values(self, algorithm: str, operation: str, *, backend: str | None = None,
                      build: str | None = None, message_bytes=None, column: str = "time_ns"):
        """The raw per-call values of one measurement, for intervals of ratios (:mod:`pqlab.measure.stats`): a
        Series indexed by (run_id, round) where the run measured in rounds, so that ratios are paired by
        round; a plain array where it did not (a runner without rounds: no interval).  `build`: its id, or
        ``default``/``generic`` (:func:`pqlab.core.builds.matches`)."""
        s = self._samples_of(algorithm, operation)
        sel = pd.Series(True, index=s.index)
        if backend is not None:
            sel &= s["backend"] == backend
        if build is not None:
            sel &= selected(s["build"], build)
        if message_bytes is not None:
            sel &= s["message_bytes"] == message_bytes
        return with_rounds(s.loc[sel].dropna(subset=[column]), column,
                           {self.run_id: self.meta.get("round_noise") or []})

    def _samples_of(self, algorithm: str, operation: str) -> pd.DataFrame:
        """The samples of one algorithm's operation, through an index of the samples built once per samples
        table (a study asks for hundreds of them from 10^5 rows)."""
        s = self.samples
        if self._index[0] is not s:
            self._index = (s, s.groupby(["algorithm", "operation"], sort=False).indices if len(s) else {})
        return s.iloc[self._index[1].get((algorithm, operation), [])]


def concat_values(parts: list):
    """Per-call values of several runs as one: round-labelled Series stay labelled (their round records
    merged), anything else becomes a plain array."""
    parts = [p for p in parts if len(p)]
    if parts and all(type(p).__name__ == "Series" for p in parts):
        out = pd.concat(parts)
        out.attrs["round_noise"] = {k: v for p in parts for k, v in p.attrs.get("round_noise", {}).items()}
        return out
    return np.concatenate([np.asarray(p, float) for p in parts]) if parts else np.array([])


def _base(ref: Path | str) -> Path:
    p = Path(ref)
    if not p.parent.parts or str(p.parent) == ".":
        p = paths.RESULTS / p
    name = p.name
    for suffix in (".meta.json", ".measurements.csv", ".sizes.csv", ".samples.csv.gz"):
        if name.endswith(suffix):
            return p.with_name(name[: -len(suffix)])
    return p


def load_run(ref: Path | str, *, verify: bool = True, warn: bool = True) -> Run:
    """A run by id (looked up in data/results/) or by the path of any of its files; typed frames.

    Each file is checked against the row count and SHA-256 its meta file records (`verify`); a file that
    does not match, cannot be read or is missing raises :class:`CorruptRun` naming it.  A value out of its
    plausible range (:func:`pqlab.core.schema.plausible_range`: a negative, infinite or astronomical time, a
    size beyond a tebibyte ...) is made missing, recorded in :attr:`Run.implausible` and said in one warning
    per run (`warn` False: not said; a merge refuses such a run instead:
    :func:`pqlab.store.bundle_checks.check_run`).  A ``running`` run whose process no longer exists comes
    back with status ``abandoned``.  A run written by an older schema version is converted
    (:func:`pqlab.core.schema.convert`).  A save cut (by a kill) after its first rename is completed first
    (:func:`finish_cut_saves`), so a reader never sees files of two saves."""
    base = _base(ref)
    try:
        run = _load(base, verify)
    except (CorruptRun, FileNotFoundError):
        if not finish_cut_saves(base.parent, base.name):
            raise
        run = _load(base, verify)
    if run.implausible and warn:
        said = "; ".join(f"{n} in {column} of its {part} (row {row + 1}: {value:g}, outside "
                         f"{range_text(column)})" for (part, column), (n, row, value) in
                         run.implausible.items())
        _warn(f"run {run.run_id}: values out of their plausible range made missing: {said}; its files were "
              "damaged or edited: restore them from a copy or re-run the measurement")
    return run


def plausible(frames: dict) -> tuple[dict, dict]:
    """A copy of `frames` (part -> table) with every value out of its plausible range made missing, and what
    was (:attr:`Run.implausible`: the measurements first, a row a reader sees, then sizes and samples)."""
    out, found = dict(frames), {}
    for part in sorted(frames, key=list(PARTS).index):
        for column, bad in implausible(out[part]).items():
            values = pd.to_numeric(out[part][column], errors="coerce")
            row = int(bad.argmax())
            found[(part, column)] = (int(bad.sum()), row, float(values.iloc[row]))
            out[part] = out[part].assign(**{column: values.where(~bad)})
    return out, found


def _load(base: Path, verify: bool) -> Run:
    meta_path = Path(f"{base}.meta.json")
    if not meta_path.exists():
        known = sorted(p.name[: -len(".meta.json")] for p in base.parent.glob("*.meta.json"))
        raise FileNotFoundError(f"no run {base.name!r} in {base.parent} (no {meta_path.name}); "
                                f"runs there: {', '.join(known[-10:]) or 'none'}")
    meta = _read_meta(meta_path)
    version = meta.get("schema_version")
    if not isinstance(version, int) or version > SCHEMA_VERSION:
        raise ValueError(f"{meta_path} has schema version {version!r}; this pqlab reads versions up to "
                         f"{SCHEMA_VERSION}: update pqlab to read it")
    recorded = _recorded(meta, meta_path) if verify and version == SCHEMA_VERSION else meta.get("files")
    recorded = recorded if isinstance(recorded, dict) else {}
    frames = {}
    for suffix, part in PART_FILES.items():
        path = Path(f"{base}.{suffix}")
        if part == "samples" and suffix not in recorded and not path.exists():
            frames[part] = pd.DataFrame()  # runs saved before checksums could lack their samples
            continue
        frames[part] = _read_part(path, recorded.get(suffix) if verify else None, meta_path)
    frames, found = plausible(frames)
    measurements, sizes, samples = frames["measurements"], frames["sizes"], frames["samples"]
    if version < SCHEMA_VERSION:
        measurements, sizes, samples = convert(measurements, sizes, samples, version, meta)
        meta = dict(convert_meta(meta, version), converted_from_schema=version, schema_version=SCHEMA_VERSION)
    if meta.get("status") == "running" and process_alive(meta.get("process")) is False:
        process = meta["process"]
        meta = dict(meta, status="abandoned", abandoned=f"saved as running by process {process['pid']} on "
                    f"{process['host']}, which no longer exists")
    return Run(base.name, typed(measurements, "measurements"), typed(sizes, "sizes"),
               typed(samples, "samples"), meta, meta_path, found)


class CorruptRun(ValueError):
    """A file of a run that is missing, unreadable or not what its meta file recorded; the message names
    it."""


#: a run's data files, in the order they are written: file suffix -> table part
PART_FILES = {"samples.csv.gz": "samples", "sizes.csv": "sizes", "measurements.csv": "measurements"}
#: statuses of a run that did not finish: its tables hold part of its plan
PARTIAL = ("running", "interrupted", "failed", "abandoned")


def encode_table(df: pd.DataFrame, *, gz: bool = False, header: bool = True) -> bytes:
    """A table as its results file holds it: CSV (gzip-compressed, reproducibly, when `gz`).  Gzip members
    concatenate: the encodings of consecutive chunks of a table, the first with its header, are the
    encoding of the whole table."""
    data = df.to_csv(index=False, header=header).encode()
    return gzip.compress(data, compresslevel=6, mtime=0) if gz else data


def _jsonable(x):
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple, set)):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.generic):
        x = x.item()
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if x is None or isinstance(x, (str, int, bool)):
        return x
    return None if x is pd.NA else str(x)


def strict_json(obj) -> str:
    """`obj` as strict JSON (no NaN or Infinity: a value that is not a finite number becomes null)."""
    return json.dumps(_jsonable(obj), indent=2, allow_nan=False) + "\n"


def _read_meta(path: Path) -> dict:
    fix = "restore it from a copy, or re-run the measurement"
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CorruptRun(f"{path} is not readable JSON ({exc}): {fix}") from None
    if not isinstance(meta, dict):
        raise CorruptRun(f"{path} holds a JSON {type(meta).__name__}, not a run's metadata (an object): "
                         f"{fix}")
    return meta


def _recorded(meta: dict, meta_path: Path) -> dict:
    """The rows and SHA-256 of each data file a current-schema meta file records; refused when missing."""
    files = meta.get("files")
    if not (isinstance(files, dict)
            and all(isinstance(files.get(s), dict) and isinstance(files[s].get("sha256"), str)
                    for s in PART_FILES)):
        raise CorruptRun(f"{meta_path} does not record its files' checksums ('files' missing or damaged), so "
                         "they cannot be checked: restore it from a copy or re-run, or read the run "
                         "unchecked with load_run(..., verify=False)")
    return files


def finish_cut_saves(folder: Path | str, run_id: str | None = None) -> list[str]:
    """Complete the saves in `folder` (of `run_id`, or of every run) that a dead writer cut among their
    renames.

    A save stages every file first, its meta file last (:meth:`Run.save`), so a writer's staged meta file
    that parses means all its files were written; when each of the run's files is either in place or
    staged by that writer with the checksum that meta file records, the remaining renames are done (the
    meta file last) and the run is the complete new save.  Anything else is left as it is (and its
    temporary files go as orphans).  Returns the run ids completed."""

    folder, done = Path(folder), []
    for staged_meta in sorted(folder.glob(f".{run_id or '*'}.meta.json.*.tmp")):
        writer, target = temp_writer(staged_meta, dead=True), temp_target(staged_meta)
        if writer is None or not target or not target.endswith(".meta.json"):
            continue
        rid = target[: -len(".meta.json")]
        try:
            recorded = json.loads(staged_meta.read_text(encoding="utf-8"))["files"]
            moves = []
            for suffix in PART_FILES:
                want, final = recorded[suffix]["sha256"], folder / f"{rid}.{suffix}"
                staged = [p for p in folder.glob(f".{rid}.{suffix}.*.tmp") if temp_writer(p) == writer]
                source = next(p for p in [*staged, final] if p.exists()
                              and hashlib.sha256(p.read_bytes()).hexdigest() == want)
                moves += [(source, final)] if source != final else []
            for source, final in [*moves, (staged_meta, folder / target)]:
                os.replace(source, final)
        except (OSError, ValueError, KeyError, TypeError, StopIteration):
            continue
        done.append(rid)
    return done


def _read_part(path: Path, record: dict | None, meta_path: Path) -> pd.DataFrame:
    """One results table as written, checked against its `record` (rows, sha256) when given.  Only empty
    cells are missing (a flag text "NA" stays text); the schema's columns are typed afterwards."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise CorruptRun(f"{path} cannot be read ({exc.strerror}): the run was not saved completely; "
                         "restore the file or re-run the measurement") from None
    if record is not None and hashlib.sha256(data).hexdigest() != record.get("sha256"):
        raise CorruptRun(f"{path} does not match the checksum in {meta_path.name} (it was saved with "
                         f"{record.get('rows')} rows): it was cut or changed after the run was saved; "
                         "restore it from a copy or re-run, or read it as it is with load_run(..., "
                         "verify=False)")
    try:
        return pd.read_csv(io.BytesIO(data), compression="gzip" if path.suffix == ".gz" else None,
                           keep_default_na=False, na_values=[""], low_memory=False)
    except (EOFError, OSError, zlib.error, UnicodeDecodeError, ValueError, pd.errors.ParserError) as exc:
        raise CorruptRun(f"{path} cannot be read ({type(exc).__name__}: {exc}): the file is damaged; restore "
                         "it from a copy or re-run the measurement") from None


def load_runs(refs=None, folder: Path | str | None = None) -> pd.DataFrame:
    """Measurements of several runs (default: every run in data/results), merged, with hostname and
    ``run_status`` (a run that did not finish, see :data:`PARTIAL`, holds part of its plan)."""
    folder = Path(folder or paths.RESULTS)
    if refs is None:
        refs = sorted(p for p in folder.glob("*.meta.json"))
    frames = []
    for ref in refs:
        run = load_run(ref)
        df = run.measurements.copy()
        df["hostname"] = run.meta.get("hostname", "")
        df["run_status"] = run.meta.get("status", "")
        frames.append(df)
    return pd.concat(frames, ignore_index=True) if frames else typed(pd.DataFrame(), "measurements")


#: what a measurement is, across runs: its build by options, since the release may differ (compare_runs' rows
#: name each side's build)
KEY = ["algorithm", "backend", "build_options", "operation", "message_bytes"]
#: what must be equal for two runs to be compared without being told to (label -> meta reader)
SAME = {
    "machine": lambda m: m.get("machine_id"),
    "parameters": lambda m: m.get("params_hash"),
    "liboqs build": lambda m: (m.get("liboqs") or {}).get("build"),
}


def run_differences(a: Run, b: Run) -> list[str]:
    """What differs between two runs' machine, parameters and liboqs build, in words."""
    return [f"{label} ({get(a.meta)} vs {get(b.meta)})"
            for label, get in SAME.items() if get(a.meta) != get(b.meta)]


def _keyed(df: pd.DataFrame) -> pd.DataFrame:
    """The :data:`KEY` columns, without missing values (a run without liboqs rows has an all-empty build
    column)."""
    build = df["build"].astype(object).where(df["build"].notna(), "")
    return df.assign(build=build, build_options=build.map(options_of),
                     message_bytes=df["message_bytes"].astype(float).fillna(-1))


#: compare_runs' defaults: the significance level, and the smallest factor either way called a change.
ALPHA, MIN_FACTOR = 0.01, 1.05


def compare_runs(a: Run | str | Path, b: Run | str | Path, alpha: float = ALPHA,
                 min_factor: float = MIN_FACTOR, allow_different: bool = False, allow_partial: bool = False,
                 allow_changed_meaning: bool = False) -> pd.DataFrame:
    """Each measurement present in both runs: the factor b/a with its interval over rounds and a test.

    One statistic: the ratio of the rows' own estimates (medians over rounds, as their tables show) with its
    interval over rounds (:func:`pqlab.measure.stats.ratio_ci`: the runs' rounds are independent), and a
    Mann-Whitney test of the pooled samples where both sides' samples are means of the same number of calls,
    else Welch's (``equal_loops`` says which).  Where the runs' reference loops moved
    (:func:`pqlab.measure.noise.compare_references`) each verdict says so, with the size of the move
    (``attrs["reference_moved"]``).  A difference is called only when p < `alpha`, the interval excludes 1 and
    the factor is at least `min_factor` either way (asv's factor, pyperf's --min-speed).  Runs from different
    machines, parameters or liboqs builds are refused unless `allow_different`; ``attrs["differences"]`` names
    them.  A run that did not finish (interrupted, failed, abandoned, still running) is refused unless
    `allow_partial`; ``attrs["partial"]`` names such runs.  The harness's no-op row is not a measurement in
    common.  Runs of two liboqs releases compare a liboqs name only where it means the same algorithm in both
    (:func:`pqlab.liboqs.names.changed_between`: ``HQC-128`` or ``FrodoKEM-640-AES`` do not); such names are
    refused unless `allow_changed_meaning`, and then their verdicts say what each side measured
    (``attrs["changed_meaning"]``).
    """
    alpha, min_factor = inputs.fraction(alpha, "alpha"), inputs.factor(min_factor, "min_factor")
    ra = a if isinstance(a, Run) else load_run(a)
    rb = b if isinstance(b, Run) else load_run(b)
    partial = [f"{r.run_id} is {r.meta.get('status')}" for r in (ra, rb) if r.meta.get("status") in PARTIAL]
    if partial and not allow_partial:
        raise ValueError("; ".join(partial) + ": it holds part of its plan only; compare anyway with "
                         "allow_partial=True (CLI: --allow-partial)")
    differences = run_differences(ra, rb)
    if differences and not allow_different:
        raise ValueError(f"runs {ra.run_id} and {rb.run_id} differ in " + "; ".join(differences)
                         + ": compare them anyway with allow_different=True (CLI: --allow-different)")
    ma, mb = (_keyed(r.verified()) for r in (ra, rb))
    merged = ma.merge(mb, on=KEY, suffixes=("_a", "_b"))
    changed = _changed_meaning(ra, rb, merged)
    if changed and not allow_changed_meaning:
        raise ValueError(f"runs {ra.run_id} and {rb.run_id} load different liboqs releases, and there "
                         + "; ".join(changed.values())
                         + ": compare them anyway with allow_changed_meaning=True "
                         "(CLI: --allow-changed-meaning), and each such row says so")
    sa, sb = (_keyed(r.samples) for r in (ra, rb))
    groups_a = {k: with_rounds(g, noise={ra.run_id: ra.meta.get("round_noise") or []})
                for k, g in sa.groupby(KEY, dropna=False)}
    groups_b = {k: with_rounds(g, noise={rb.run_id: rb.meta.get("round_noise") or []})
                for k, g in sb.groupby(KEY, dropna=False)}
    moved = compare_references(ra.meta, rb.meta)
    rows = []
    for _, r in merged.iterrows():
        key = tuple(r[k] for k in KEY)
        xa, xb = groups_a.get(key, np.array([])), groups_b.get(key, np.array([]))
        same_loops = r["loops_a"] == r["loops_b"]
        # medians, as the rows beside it (pqlab.measure.stats.combined_ci)
        factor, low, high = ratio_ci(xb, xa)
        va, vb = np.asarray(xa, float), np.asarray(xb, float)
        p = mann_whitney(va, vb)[1] if same_loops else welch_p(va, vb)
        excludes_one = not (low <= 1 <= high)  # False without an interval (nan): no difference is called
        large = max(factor, 1 / factor) >= min_factor
        significant = bool(p < alpha and excludes_one and large)
        if significant:
            verdict = f"{'slower' if factor > 1 else 'faster'} by {max(factor, 1 / factor):.2f}x"
        elif p < alpha and excludes_one:
            verdict = f"differs by less than {min_factor:g}x"
        elif not np.isfinite(low):
            verdict = f"no interval (fewer than {MIN_ROUNDS} rounds on a side): not called"
        else:
            verdict = "no significant difference"
        if moved:
            verdict += f"; the reference loops moved between the runs ({moved})"
        if r["algorithm"] in changed and r["backend"] == "liboqs":
            verdict += f"; ⚠ different algorithms: {changed[r['algorithm']]}"
        rows.append({**{k: r[k] for k in KEY if k != "build_options"}, "build_a": r["build_a"],
                     "build_b": r["build_b"], "statistic": "median", "equal_loops": bool(same_loops),
                     "a_ns": round_interval(xa)[0] if va.size else np.nan,
                     "b_ns": round_interval(xb)[0] if vb.size else np.nan,
                     "factor_b_over_a": factor, "factor_ci_low": low, "factor_ci_high": high, "p_value": p,
                     "significant": significant, "verdict": verdict})
    out = pd.DataFrame(rows)
    if not out.empty:
        out["message_bytes"] = out["message_bytes"].replace(-1, pd.NA)
    out.attrs["differences"] = differences
    out.attrs["partial"] = partial
    out.attrs["reference_moved"] = moved
    out.attrs["changed_meaning"] = changed
    return out


def _changed_meaning(ra: Run, rb: Run, merged: pd.DataFrame) -> dict[str, str]:
    """The liboqs names in common that mean different algorithms in the two runs' liboqs releases: name ->
    what each means ("HQC-128 is HQC-2023-128 in liboqs 0.13.0 and HQC-2025-1 in 0.16.0"); {} for one
    release."""
    from pqlab.liboqs.names import RELEASES, meaning

    a, b = ((r.meta.get("liboqs") or {}).get("liboqs_version") for r in (ra, rb))
    if not a or not b or a == b or a not in RELEASES or b not in RELEASES:
        return {}
    out = {}
    for name in sorted(set(merged.loc[merged["backend"] == "liboqs", "algorithm"])):
        try:
            ma, mb = meaning(name, a), meaning(name, b)
        except (KeyError, ValueError):  # a name one release does not list: not comparable by meaning
            continue
        if ma != mb:
            out[name] = f"{name} is {ma} in liboqs {a} and {mb} in {b}"
    return out
