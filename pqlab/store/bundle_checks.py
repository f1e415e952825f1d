"""What a bundle must be before anything of it is written: its manifest's fields and types, every name it
carries, its sizes, and rows that agree with their own samples (:mod:`pqlab.store.bundle_read` reads,
:mod:`pqlab.store.bundle` merges and :mod:`pqlab.store.bundle_pack` makes bundles).

A bundle comes from another machine, often from someone else: it is untrusted input.  Every identifier in it
becomes part of a file name or is shown to a reader, so each is checked with the rule ``bench`` uses for its
own (:func:`pqlab.core.inputs.file_label`: letters, digits, '.', '_' and '-'; machine ids with
:func:`pqlab.measure.machine.check_machine_id`): run ids (in the manifest, in each run's metadata and in the
file names under ``runs/``), the machine id and host id, study labels, the ``TOPIC/RUN`` folders of raw traces
and the notebooks' file names.  Sizes are capped (:class:`Limits`) and checked against the manifest before a
byte is extracted.  A row whose time estimate contradicts its own samples is refused
(:func:`estimate_problem`).  Each refusal is one :class:`BundleError` line naming the bundle, the check and
the fix.
"""
from __future__ import annotations

import hashlib
import json
import math
import numbers
import re
from collections import Counter
from pathlib import PurePosixPath
from typing import NamedTuple

from pqlab.core.errors import BadInput
from pqlab.core.flags import has
from pqlab.core.inputs import file_label
from pqlab.core.schema import SCHEMA_VERSION, convert_unit, range_text
from pqlab.measure import machine
from pqlab.store.meta_schema import meta_problem

FORMAT = "pqlab-bundle"
FORMAT_VERSION = 1
TOP = "pqlab-bundle"
MANIFEST = f"{TOP}/MANIFEST.json"
RUN_PARTS = (".measurements.csv", ".sizes.csv", ".samples.csv.gz", ".meta.json")  # meta last
PROFILES = ("quick", "full")
MIB = 1 << 20
#: the relative difference between a row's stored time estimate and the one its samples give above which the
#: row is refused.  Both come from the same float64 samples by the same arithmetic and pandas writes floats to
#: CSV exactly (shortest round-tripping repr), so a faithful row differs by rounding only (about 1e-15); 1e-6
#: also passes a writer that printed seven or more significant digits, and refuses any edit a reader could
#: see.
ESTIMATE_TOLERANCE = 1e-6
_SHA256 = re.compile(r"[0-9a-f]{64}")


class BundleError(BadInput):
    """A bundle refused: one line naming the file, the check that failed and what to do."""

    def __init__(self, path, check: str, problem: str) -> None:
        super().__init__(f"{path}: {check} check failed: {problem}")


class Limits(NamedTuple):
    """Caps on what a bundle may hold, in bytes, checked before extracting and enforced while streaming: one
    member (a run's file, a raw trace, a notebook), the manifest, and all members together."""

    member: int = 256 * MIB
    manifest: int = 16 * MIB
    total: int = 2048 * MIB

    @classmethod
    def of(cls, member=None, manifest=None, total=None) -> Limits:
        """Limits from keyword values (None: the default), each a whole number of bytes > 0."""
        given = {"max_member_bytes": member, "max_manifest_bytes": manifest, "max_total_bytes": total}
        out = []
        for (name, value), default in zip(given.items(), cls()):
            if value is None:
                out.append(default)
            elif isinstance(value, bool) or not isinstance(value, numbers.Integral) or value <= 0:
                raise BadInput(f"{name} must be a whole number of bytes > 0, got {value!r}")
            else:
                out.append(int(value))
        return cls(*out)


#: what to say to raise each cap: the keyword of merge_bundles and the option of `pqlab merge`
RAISE = {"member": "max_member_bytes=... (CLI: --max-member-mib N)",
         "manifest": "max_manifest_bytes=... (CLI: --max-manifest-mib N)",
         "total": "max_total_bytes=... (CLI: --max-total-mib N)"}


def mib(n: int) -> str:
    return f"{convert_unit(n, 'bytes', 'MiB'):.4g} MiB"


_CAPPED = {"member": "one file", "manifest": "a manifest", "total": "a bundle"}


def over_cap(path, what: str, size: int, cap: str, limits: Limits) -> BundleError:
    """The refusal of `what`, `size` bytes, over the cap `cap` ("member", "manifest" or "total")."""
    return BundleError(path, "size", f"{what} is {size} bytes, over the {mib(getattr(limits, cap))} cap on "
                                     f"{_CAPPED[cap]}: a damaged or hostile bundle; if you trust it, raise "
                                     f"the cap with {RAISE[cap]}")


def bundle_id(machine_id, files: dict) -> str:
    """The bundle's content address: the same runs and files of the same machine give the same id."""
    return hashlib.sha256(json.dumps([machine_id, files], sort_keys=True).encode()).hexdigest()[:16]


# ----- names -----
def _name(path, value, what: str, *, empty: bool = False) -> str:
    try:
        return file_label(value, what, empty=empty)
    except BadInput as exc:
        raise BundleError(path, "name", f"{exc}: a bundle carrying it is refused") from None


def _machine_id(path, value, what: str) -> str:
    if not isinstance(value, str):
        raise BundleError(path, "manifest", f"its {what} must be a string, not {type(value).__name__}")
    try:
        return machine.check_machine_id(value, what)
    except BadInput as exc:
        raise BundleError(path, "name", str(exc)) from None


def member_problem(name: str, run_ids: set[str]) -> str | None:
    """Why a listed file name cannot be a member of a bundle of runs `run_ids` (None when it can):
    ``runs/RUN.PART`` of a listed run, ``raw/TOPIC/RUN/FILE...`` of a listed run,
    ``notebooks/PROFILE/NAME.ipynb``; every part a file label."""
    if not isinstance(name, str):
        return f"a file name must be a string, not {type(name).__name__}"
    parts = PurePosixPath(name).parts
    if name != PurePosixPath(name).as_posix() or parts[:1] != (TOP,) or len(parts) < 3:
        return f"{name!r} is not a path inside {TOP}/"
    bad = next((p for p in parts[1:] if not _is_label(p)), None)
    if bad is not None:
        return (f"{name!r} has the part {bad!r}, which cannot be part of a file name: a bundle uses "
                "letters, digits, '.', '_' and '-' only")
    kind = parts[1]
    if kind == "runs" and len(parts) == 3:
        if any(parts[2].endswith(part) and parts[2][: -len(part)] in run_ids for part in RUN_PARTS):
            return None
        return f"{name!r} is not one of the files ({', '.join(RUN_PARTS)}) of a run the manifest lists"
    if kind == "raw" and len(parts) >= 5:
        return None if parts[3] in run_ids else (f"{name!r} is in the raw folder of {parts[3]!r}, not of a "
                                                 "listed run")
    if kind == "notebooks" and len(parts) == 4:
        if parts[2] in PROFILES and parts[3].endswith(".ipynb"):
            return None
        return f"{name!r} is not notebooks/PROFILE/NAME.ipynb with PROFILE {' or '.join(PROFILES)}"
    return (f"{name!r} is not a run's file (runs/), a raw trace (raw/TOPIC/RUN/) or a notebook "
            "(notebooks/PROFILE/)")


def _is_label(part: str) -> bool:
    try:
        file_label(part, "part")
    except BadInput:
        return False
    return True


# ----- the manifest -----
def _kind(value) -> str:
    return "null" if value is None else type(value).__name__


def _typed(path, where: str, value, kinds: tuple, words: str, *, optional: bool = True):
    ok = (value is None and optional) or (isinstance(value, kinds)
                                          and not (isinstance(value, bool) and bool not in kinds))
    if not ok:
        raise BundleError(path, "manifest",
                          f"its {where} must be {words}, not {_kind(value)} ({value!r:.60})")
    return value


def check_manifest(path, manifest, limits: Limits | None = None) -> dict:
    """`manifest` when every field has its type, every name is a file label and the sizes are within `limits`
    (default :class:`Limits`); else a :class:`BundleError` naming the first field that is not.  Runs before
    anything is extracted."""
    limits = limits or Limits()
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise BundleError(path, "manifest", f"{MANIFEST} is not a {FORMAT} manifest (a foreign archive)")
    version = manifest.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool) or not 1 <= version <= FORMAT_VERSION:
        raise BundleError(path, "format",
                          f"bundle format {version!r}; this pqlab reads 1 to {FORMAT_VERSION}: "
                          "update pqlab to merge it")
    for key, kind, words in (("files", dict, "an object"), ("runs", list, "a list"),
                             ("machine", dict, "an object"), ("bundle_id", str, "a string")):
        if not isinstance(manifest.get(key), kind):
            raise BundleError(path, "manifest",
                              f"its {key!r} entry is missing or malformed (must be {words})")
    for key, kinds, words in (("created_at", str, "a string"), ("created_by", str, "a string"),
                              ("libraries", dict, "an object"), ("commit", dict, "an object"),
                              ("schema_versions", list, "a list")):
        _typed(path, repr(key), manifest.get(key), (kinds,), words)
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in manifest.get("schema_versions") or []):
        raise BundleError(path, "manifest", "its 'schema_versions' must be whole numbers")
    if manifest.get("profile") not in (None, *PROFILES):
        raise BundleError(path, "manifest", f"its 'profile' must be {', '.join(PROFILES)} or null, not "
                                            f"{manifest.get('profile')!r:.60}")
    _check_machine(path, manifest["machine"])
    run_ids = _check_runs_list(path, manifest["runs"])
    _check_files(path, manifest["files"], run_ids, limits)
    if manifest["bundle_id"] != bundle_id(manifest["machine"]["machine_id"], manifest["files"]):
        raise BundleError(path, "manifest", "its bundle_id does not match its machine and file list (edited)")
    return manifest


def _check_machine(path, m: dict) -> None:
    _machine_id(path, m.get("machine_id"), "machine_id")
    _machine_id(path, m.get("host_id", m.get("machine_id")), "host_id")
    override = _typed(path, "machine 'override'", m.get("override"), (dict,), "an object or null")
    if override is not None:
        for key in ("variable", "value", "host_id"):
            _typed(path, f"machine override's {key!r}", override.get(key), (str,), "a string", optional=False)
    for key in ("hostname", "arch", "hypervisor", "os", "kernel", "python"):
        _typed(path, f"machine {key!r}", m.get(key), (str,), "a string or null")
    for key in ("cpu", "counter", "frequency"):
        _typed(path, f"machine {key!r}", m.get(key), (dict,), "an object or null")
    _typed(path, "machine CPU 'model'", (m.get("cpu") or {}).get("model"), (str,), "a string or null")


def _check_runs_list(path, runs: list) -> set[str]:
    ids: set[str] = set()
    for r in runs:
        if not isinstance(r, dict) or not isinstance(r.get("run_id"), str):
            raise BundleError(path, "manifest",
                              "a 'runs' entry has no run_id (an object with a string run_id)")
        run_id = _name(path, r["run_id"], "run id")
        if run_id in ids:
            raise BundleError(path, "manifest", f"run {run_id} is listed twice in its 'runs'")
        ids.add(run_id)
        if r.get("study") is not None:
            _name(path, r["study"], f"study of run {run_id}", empty=True)
        _typed(path, f"run {run_id}'s 'schema_version'", r.get("schema_version"), (int,),
               "a whole number or null")
        for key in ("started_at", "status", "profile"):
            _typed(path, f"run {run_id}'s {key!r}", r.get(key), (str,), "a string or null")
        if r.get("profile") is not None:
            _name(path, r["profile"], f"profile of run {run_id}")
    return ids


def _check_files(path, files: dict, run_ids: set[str], limits: Limits) -> None:
    total = 0
    for name, entry in files.items():
        problem = member_problem(name, run_ids)
        if problem:
            raise BundleError(path, "name", f"{problem}; a bundle carrying it is refused")
        size = entry.get("bytes") if isinstance(entry, dict) else None
        if not (isinstance(entry, dict) and isinstance(entry.get("sha256"), str)
                and _SHA256.fullmatch(entry["sha256"])
                and isinstance(size, int) and not isinstance(size, bool) and size >= 0):
            raise BundleError(path, "manifest",
                              f"its entry of {name} must be {{'sha256': 64 hex digits, 'bytes': a "
                              f"whole number >= 0}}, not {entry!r:.80}")
        if entry["bytes"] > limits.member:
            raise over_cap(path, name, entry["bytes"], "member", limits)
        total += entry["bytes"]
    if total > limits.total:
        raise over_cap(path, f"the sum of its {len(files)} files", total, "total", limits)
    missing = sorted(r for r in run_ids if f"{TOP}/runs/{r}.meta.json" not in files)
    if missing:
        raise BundleError(path, "manifest", f"run {missing[0]} is listed without its {missing[0]}.meta.json")


# ----- a run's contents -----
def check_run(path, run_id: str, meta: dict, run) -> None:
    """A run of a bundle, as :func:`pqlab.store.results.load_run` read it: its metadata's run id is its file
    name's, its labels are file labels, every field of its metadata (`meta`, as its file holds it) has its
    type and range (:func:`pqlab.store.meta_schema.meta_problem`), every value is plausible
    (:func:`implausible_problem`), and each row agrees with its own samples (:func:`estimate_problem`).
    A run of an older schema that recorded no run id in its metadata is named by its files."""
    old = isinstance(meta.get("schema_version"), int) and meta["schema_version"] < SCHEMA_VERSION
    if meta.get("run_id") != run_id and not (old and meta.get("run_id") is None):
        raise BundleError(path, "name",
                          f"run {run_id}'s metadata names run {meta.get('run_id')!r:.60}: renamed "
                          "after it was saved; a bundle carrying it is refused")
    if meta.get("study") is not None:
        _name(path, meta["study"], f"study of run {run_id}", empty=True)
    problem = meta_problem(meta)
    if problem:
        raise BundleError(path, "metadata",
                          f"run {run_id}: {problem}: damaged or forged metadata, which readers of the store "
                          "cannot show; make the bundle again from the unedited run")
    for part, column, check in (("measurements", "run_id", "run"), ("measurements", "study", "study"),
                                ("measurements", "machine_id", "machine"), ("samples", "run_id", "run")):
        frame = getattr(run, part)
        for value in (frame[column].dropna().unique() if column in frame.columns else ()):
            if check == "machine":
                _machine_id(path, value, f"machine id in run {run_id}'s {part}")
            else:
                _name(path, value, f"{column} in run {run_id}'s {part}", empty=check == "study")
    problem = implausible_problem(run)
    if problem:
        raise BundleError(path, "values",
                          f"run {run_id}: {problem}: a damaged or forged run; make the bundle again from the "
                          "unedited run")
    problem = estimate_problem(run)
    if problem:
        raise BundleError(path, "values",
                          f"run {run_id}: {problem}: a row edited apart from its samples; make the "
                          "bundle again from the unedited run")


def implausible_problem(run) -> str | None:
    """The first value of `run` out of its plausible range (:func:`pqlab.core.schema.plausible_range`: a time
    that is negative, infinite or over a day, a size over a tebibyte ...), described with its table, row,
    column and range; None when every value is plausible.  Read from what :func:`pqlab.store.results.load_run`
    made missing (``run.implausible``), else from the tables themselves (a run built in memory)."""
    found = getattr(run, "implausible", None)
    if not found:
        from pqlab.store.results import plausible  # lazy: the results store loads pandas and the statistics

        found = plausible({part: getattr(run, part) for part in ("measurements", "sizes", "samples")})[1]
    if not found:
        return None
    (part, column), (n, row, value) = next(iter(found.items()))
    more = f" (and {n - 1} more in that column)" if n > 1 else ""
    return (f"its {part}, row {row + 1}: {column} is {value:g}, outside its plausible range "
            f"{range_text(column)}{more}")


#: columns that tell rows of one run apart beyond the results key (a TLS run's configurations)
_EXTRA_KEYS = ("chain_depth", "mutual", "resumed")
_KEY = ("algorithm", "backend", "build", "operation", "message_bytes")


def _norm(value) -> str:
    """A key cell as text, the same whether it was read as a number, a bool or a string ('' when missing)."""
    if (value is None or (isinstance(value, float) and math.isnan(value))
            or str(value) in ("<NA>", "nan", "NaT")):
        return ""
    if type(value).__name__ in ("bool", "bool_"):  # Python's or numpy's
        return str(bool(value))
    if isinstance(value, numbers.Real):
        return repr(float(value))
    return str(value)


def estimate_problem(run, tolerance: float = ESTIMATE_TOLERANCE) -> str | None:
    """The first row whose ``time_ns_median`` differs from what its own samples give by more than `tolerance`
    (relative), described; None when every row agrees.

    The estimate is derived as each runner makes it: a row flagged ``no-rounds`` (one process: pqlab's
    ``measurement_row``, the JVM and TLS runners, rows converted from schemas before rounds) is the median of
    its samples' ``time_ns``; any other is the estimate over rounds
    (:func:`pqlab.measure.stats.round_interval`: the median of the rounds' positive medians, taken on their
    logarithms), which is the samples' median where they carry no round.  A row's samples are those with its
    algorithm, backend, build, operation and message size (and a TLS configuration's depth and mode; a JVM
    row's phase, cold or warm).  A run that did not finish (:data:`pqlab.store.results.PARTIAL`) may have been
    stopped between a round's samples and the rows rewritten from them: its row may also agree with its
    samples without their last round.  Skipped: rows without a finite estimate, rows with no samples, and rows
    that these columns do not tell apart (no writer of pqlab makes those)."""
    import numpy as np
    import pandas as pd

    from pqlab.measure.stats import round_interval, with_rounds
    from pqlab.store.results import PARTIAL

    m, s = run.measurements, run.samples
    if m.empty or s.empty or "time_ns_median" not in m.columns or "time_ns" not in s.columns:
        return None
    if any(k not in m.columns or k not in s.columns for k in _KEY):
        return None
    keys = [*_KEY, *(c for c in _EXTRA_KEYS if c in m.columns and c in s.columns)]
    if "phase" in s.columns and s["phase"].notna().any():
        m = m.assign(_phase=["cold" if has(f, "jvm-cold") else "warm" for f in m.get("flags", [""] * len(m))])
        s = s.assign(_phase=s["phase"])
        keys.append("_phase")
    groups: dict[tuple, list] = {}
    for raw, g in s.groupby(keys, dropna=False, sort=False):
        groups.setdefault(tuple(_norm(v) for v in raw), []).append(g)
    rows = [tuple(_norm(v) for v in key) for key in m[keys].itertuples(index=False, name=None)]
    counts = Counter(rows)
    partial = (getattr(run, "meta", None) or {}).get("status") in PARTIAL

    def agrees(stored: float, g: pd.DataFrame, pooled: bool) -> tuple[bool, float]:
        derived = (float(np.median(g["time_ns"].to_numpy(float))) if pooled
                   else round_interval(with_rounds(g))[0])
        return not np.isfinite(derived) or abs(stored - derived) <= tolerance * abs(derived), derived

    for i, key in enumerate(rows):
        row = m.iloc[i]
        stored = float(pd.to_numeric(pd.Series([row["time_ns_median"]]), errors="coerce").iloc[0])
        if not np.isfinite(stored) or key not in groups or counts[key] > 1:
            continue
        g = pd.concat(groups[key]) if len(groups[key]) > 1 else groups[key][0]
        g = g[np.isfinite(pd.to_numeric(g["time_ns"], errors="coerce").to_numpy(float))]
        if g.empty:
            continue
        pooled = has(row.get("flags"), "no-rounds")
        ok, derived = agrees(stored, g, pooled)
        if (not ok and partial and "round" in g.columns and g["round"].notna().all()
                and g["round"].nunique() > 1):
            ok = agrees(stored, g[g["round"] != g["round"].max()], pooled)[0]  # rows one round behind
        if not ok:
            what = " ".join(str(row[c])
                            for c in ("algorithm", "backend", "build", "operation", "message_bytes")
                            if _norm(row[c]))
            return (f"the row {what!r:.120} has time_ns_median {stored:.6g} ns but its {len(g)} samples give "
                    f"{derived:.6g} ns")
    return None
