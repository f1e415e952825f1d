"""Portable result bundles: one machine's runs packed for another machine to read, and merged there.

    python -m pqlab bundle [--profile quick|full] [--out FILE]   # this machine's runs -> one archive
    python -m pqlab merge BUNDLE... [--override] [--max-member-mib N]   # verify, then import by machine

A bundle is a gzip-compressed tar archive whose first member is its manifest::

    pqlab-bundle/MANIFEST.json                  format and version, machine (id, override, CPU, counter,
                                                frequency), libraries, commit, runs, sha256 and size per file
    pqlab-bundle/runs/RUN.meta.json ...         the runs' files as the results store holds them
    pqlab-bundle/raw/TOPIC/RUN/...              raw traces of those runs (data/raw/)
    pqlab-bundle/notebooks/PROFILE/NN.ipynb     executed notebooks of those runs (build/PROFILE/)

A bundle is untrusted input: it may come from a stranger.  Merging verifies everything before it writes anything
(:mod:`pqlab.store.bundle_checks`): the manifest is a pqlab manifest of a known format whose every field has its type;
every identifier in it (run ids, machine and host id, study labels, raw TOPIC/RUN folders, notebook names) obeys
the rule ``bench`` uses for its own (:func:`pqlab.core.inputs.file_label`); sizes are capped (by default 256 MiB a
file, 16 MiB the manifest, 2 GiB a bundle: :class:`~pqlab.store.bundle_checks.Limits`, raised with keyword arguments
or ``--max-*-mib``), checked against the manifest before a byte is extracted and enforced while the archive
streams; every member is a plain file listed with its size and sha256, nothing listed is missing, the gzip
stream reads whole (its CRC); every run reads as :func:`pqlab.store.results.load_run` reads it, its metadata names it,
and each row's time estimate agrees with the one its own samples give.  The checksums detect damage and edits
of the files; they do not authenticate the sender.

Runs go to ``data/results/machines/<machine id>/`` (written atomically, meta last), older schemas converted
(:func:`pqlab.core.schema.convert`); the manifest is kept in ``bundles/`` beside them.  A run id names one run in the
whole store (this machine's runs in the folder itself and every machine's folder): a run already there with the
same content is left as it is (importing a bundle twice changes nothing), the same run id with other content
anywhere is refused, so no run can hide another.  A machine id that another host already uses is refused, and
so is a bundle that carries this host's own machine id unless ``override=True`` (``--override``): merged, its runs
would count, and be bundled again, as this machine's.  Merges hold a lock on the results folder from planning to
the last file written, so two merges at once are one after the other.  A bundle packs an executed notebook only
when it belongs to the bundled runs (:func:`notebooks_of`).
"""
from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import gzip
import hashlib
import io
import json
import os
import shutil
import socket
import tarfile
import tempfile
import zlib
from pathlib import Path, PurePosixPath

from pqlab import __version__
from pqlab.core import paths
from pqlab.core.errors import BadInput, warn
from pqlab.core.files import atomic_write, atomic_write_text
from pqlab.core.integrity import sha256_file
from pqlab.core.schema import SCHEMA_VERSION, convert_meta
from pqlab.measure import machine
from pqlab.store.bundle_checks import (
    FORMAT,
    FORMAT_VERSION,
    MANIFEST,
    PROFILES,
    RUN_PARTS,
    TOP,
    BundleError,
    Limits,
    bundle_id,
    check_manifest,
    check_run,
    mib,
    over_cap,
)

#: the results store's folder of imported runs, one subfolder per machine id
MACHINES = "machines"
_bundle_id = bundle_id


def _meta(path: Path) -> dict:
    return json.loads(path.read_text())


def stored_meta(path: Path | str) -> dict | None:
    """A stored run's metadata; None, with a one-line warning naming the file, when it is not readable JSON (a
    truncated or damaged file), so that readers of the whole store go on with the other runs."""
    fix = "left out; restore it from a copy, or remove that run's files"
    try:
        meta = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        warn(f"{path} is not readable JSON ({' '.join(str(exc).split())}): {fix}")
        return None
    if not isinstance(meta, dict):
        warn(f"{path} holds a JSON {type(meta).__name__}, not a run's metadata: {fix}")
        return None
    version = meta.get("schema_version")
    return convert_meta(meta, version if isinstance(version, int) else 0)  # read in today's form, never rewritten


def machine_folder(machine_id: str, folder: Path | str | None = None) -> Path:
    return Path(folder or paths.RESULTS) / MACHINES / machine.check_machine_id(machine_id, "machine id")


def stored_runs(folder: Path | str | None = None) -> list[Path]:
    """Meta files of every run in the results store: this machine's (the folder itself) and every imported
    machine's (``machines/<id>/``).  A run id names one run (a merge refuses a second); one stored twice anyway
    (copied by hand) is listed once, the folder's own, with a warning naming both places."""
    folder = Path(folder or paths.RESULTS)
    seen: dict[str, Path] = {}
    for meta in [*sorted(folder.glob("*.meta.json")), *sorted(folder.glob(f"{MACHINES}/*/*.meta.json"))]:
        if meta.name in seen:
            warn(f"run {meta.name[: -len('.meta.json')]} is stored twice, in {seen[meta.name].parent} and "
                 f"{meta.parent}: the first is read; remove one of the two")
            continue
        seen[meta.name] = meta
    return list(seen.values())


def _stored_metas(folder: Path | str | None = None) -> list[tuple[Path, dict]]:
    """(meta path, metadata) of every readable run of the store (an unreadable one: a warning, left out)."""
    return [(p, m) for p in stored_runs(folder) if (m := stored_meta(p)) is not None]


def _of_machine(stored: list[tuple[Path, dict]], machine_id: str, profile: str | None) -> list[tuple[Path, dict]]:
    return [(p, m) for p, m in stored
            if m.get("machine_id") == machine_id and (profile is None or m.get("profile") == profile)]


def machine_runs(machine_id: str, profile: str | None = None, folder: Path | str | None = None) -> list[Path]:
    """Meta files of the stored runs recorded under `machine_id` (and `profile`, when given)."""
    return [p for p, _ in _of_machine(_stored_metas(folder), machine_id, profile)]


def _raw_dirs(run_id: str, machine_id: str, folder: Path) -> list[tuple[Path, str]]:
    """(folder, TOPIC/RUN) of the run's raw traces, in data/raw/ or among its machine's imported files."""
    roots = [paths.RAW, folder / MACHINES / machine_id / "raw"]
    return [(topic / run_id, f"{topic.name}/{run_id}") for root in roots if root.is_dir()
            for topic in sorted(root.iterdir()) if (topic / run_id).is_dir()]


def _files_to_pack(metas: list[Path], machine_id: str, folder: Path, notebooks: list[Path]) -> dict[str, Path]:
    files: dict[str, Path] = {}
    for meta in metas:
        run_id = meta.name[: -len(".meta.json")]
        for part in RUN_PARTS:
            p = meta.with_name(run_id + part)
            if p.exists():
                files[f"{TOP}/runs/{p.name}"] = p
        for d, rel in _raw_dirs(run_id, machine_id, folder):
            for f in sorted(p for p in d.rglob("*") if p.is_file()):
                files[f"{TOP}/raw/{rel}/{f.relative_to(d).as_posix()}"] = f
    for nb in notebooks:
        files[f"{TOP}/notebooks/{nb.parent.name}/{nb.name}"] = nb
    return files


def _timestamp(text) -> float | None:
    try:
        return dt.datetime.fromisoformat(str(text)).timestamp()
    except ValueError:
        return None


def _exported_runs(stem: str, profile: str) -> set[str]:
    """The run ids the exports of notebook `stem` recorded (their ``NAME.export.json`` under the profile's
    export tree, tables and figures)."""
    root = paths.export_root(profile, paths.OUTPUT)
    ids: set[str] = set()
    for sidecar in [*(root / "data" / "tables" / stem).glob("*.export.json"),
                    *(root / "figures" / stem).glob("*.export.json")]:
        try:
            runs = json.loads(sidecar.read_text(encoding="utf-8")).get("runs") or []
        except (OSError, UnicodeDecodeError, ValueError, AttributeError):
            continue
        ids.update(str(r) for r in runs)
    return ids


def notebooks_of(runs: dict[str, dict], profile: str | None = None) -> list[Path]:
    """The executed notebooks of ``build/<profile>/`` (both profiles when None) that belong to `runs` (run id ->
    metadata), those a bundle of them packs.  A notebook belongs when papermill finished it (its metadata has an
    end time and no exception: one still running, as in a ``make reproduce`` under way, or failed, is left out)
    and its runs are among `runs`: the run ids its exports recorded (``*.export.json`` of its topic, the
    notebook's name), every one of them; for a notebook whose exports record no run, the runs whose ``study``
    is its name (or starts with it and '-'), at least one, all started before the notebook was last written."""
    out = []
    for prof in [profile] if profile else PROFILES:
        for nb in sorted((paths.BUILD / prof).glob("[0-9][0-9]_*.ipynb")):
            try:
                record = json.loads(nb.read_text(encoding="utf-8"))["metadata"]["papermill"]
                finished = bool(record.get("end_time")) and not record.get("exception")
            except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError):
                finished = False
            if not finished:
                continue
            linked = _exported_runs(nb.stem, prof)
            if linked:
                if linked <= set(runs):
                    out.append(nb)
                continue
            studies = [str(m.get("study") or "") for m in runs.values()]
            started = [_timestamp(m.get("started_at")) for m, s in zip(runs.values(), studies)
                       if s == nb.stem or s.startswith(f"{nb.stem}-")]
            if started and None not in started and nb.stat().st_mtime > max(started):
                out.append(nb)
    return out


def create_bundle(out: Path | str | None = None, *, profile: str | None = None, notebooks: bool = True,
                  folder: Path | str | None = None, replace: bool = True) -> Path:
    """Pack this machine's runs (those recorded under :func:`pqlab.measure.machine.machine_id`; with `profile`, those
    of ``make reproduce PROFILE=profile`` only), their raw traces and, with `notebooks`, the executed notebooks
    of ``build/<profile>/`` that belong to them (:func:`notebooks_of`) into one archive; returns its path
    (default ``build/bundles/``).  A run whose metadata is not readable is left out with a warning naming it."""
    if profile is not None and profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}: choose {' or '.join(PROFILES)}")
    folder = Path(folder or paths.RESULTS)
    info = machine.collect(liboqs=False)
    mid = info["machine_id"]
    stored = _stored_metas(folder)
    found = _of_machine(stored, mid, profile)
    if not found:
        others = sorted({str(m.get("machine_id", "?")) for _, m in stored})
        raise ValueError(f"no runs of machine {mid}{f' with profile {profile}' if profile else ''} in {folder}"
                         f" (runs there are from: {', '.join(others) or 'none'}): run `make reproduce"
                         f"{f' PROFILE={profile}' if profile else ''}` first")
    metas, run_metas = [p for p, _ in found], [m for _, m in found]
    books = notebooks_of({p.name[: -len(".meta.json")]: m for p, m in found}, profile) if notebooks else []
    files = _files_to_pack(metas, mid, folder, books)
    checks = {name: {"sha256": sha256_file(p), "bytes": p.stat().st_size} for name, p in sorted(files.items())}
    bid = bundle_id(mid, checks)
    manifest = {
        "format": FORMAT, "format_version": FORMAT_VERSION, "bundle_id": bid,
        "created_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "created_by": f"pqlab {_version()}", "profile": profile,
        "machine": {"machine_id": mid, "override": info["machine_id_override"],
                    "host_id": (info["machine_id_override"] or {}).get("host_id", mid),
                    **{k: info.get(k) for k in ("hostname", "arch", "cpu", "counter", "frequency",
                                                "hypervisor", "os", "kernel", "python")}},
        "libraries": {"packages": info["packages"], "openssl": info["openssl"],
                      "liboqs": _unique_dicts(m.get("liboqs") for m in run_metas)},
        "commit": info["git"],
        "schema_versions": sorted({m.get("schema_version") for m in run_metas}),
        "runs": [{k: m.get(k) for k in ("run_id", "study", "schema_version", "started_at", "status", "profile")}
                 for m in run_metas],
        "files": checks,
    }
    out = Path(out) if out else paths.BUILD / "bundles" / f"pqlab-{mid}-{profile or 'all'}-{bid}.tar.gz"

    def write(tmp: str) -> None:
        with open(tmp, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as gz, \
                tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
            _add(tar, MANIFEST, (json.dumps(manifest, indent=2, default=str) + "\n").encode())
            for name, path in sorted(files.items()):
                _add(tar, name, path.read_bytes())

    return atomic_write(out, write, replace=replace)  # replace=False: a file that appeared meanwhile is kept


def _version() -> str:

    return __version__


def _unique_dicts(items) -> list:
    out = []
    for item in items:
        if item and item not in out:
            out.append(item)
    return out


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:

    ti = tarfile.TarInfo(name)
    ti.size, ti.mtime, ti.mode = len(data), 0, 0o644
    tar.addfile(ti, io.BytesIO(data))


# ----- reading and verifying -----
#: bytes a tar archive spends on one member beyond its data (header, extended header, padding), at most, and on
#: its end (the end-of-archive blocks and the last record's padding)
_PER_MEMBER, _TRAILER = 8192, 32768


class _Capped:
    """The decompressed archive, refused past `limit` bytes: a gzip bomb, an oversized header or anything beyond
    what the manifest declares stops here, whatever tarfile reads it for."""

    def __init__(self, raw, path, limit: int, why: str) -> None:
        self.raw, self.path, self.limit, self.why, self.used = raw, path, limit, why, 0

    def read(self, size: int = -1) -> bytes:
        room = self.limit - self.used + 1
        data = self.raw.read(room if size is None or size < 0 else min(size, room))
        self.used += len(data)
        if self.used > self.limit:
            raise BundleError(self.path, "size", f"the archive unpacks to more than {mib(self.limit)}, more than "
                                                 f"{self.why}: a damaged or hostile bundle (a header or data that "
                                                 "no listed file accounts for)")
        return data


def _safe_member(name: str) -> bool:
    p = PurePosixPath(name)
    return not p.is_absolute() and p.parts[:1] == (TOP,) and ".." not in p.parts and len(p.parts) >= 3


def _read_manifest(path, tar: tarfile.TarFile, member: tarfile.TarInfo, limits: Limits) -> dict:
    if member.name != MANIFEST or not member.isfile():
        raise BundleError(path, "manifest", f"the first member is {member.name!r:.120}, not {MANIFEST}: "
                                            "not a pqlab bundle (a foreign archive)")
    if member.size > limits.manifest:
        raise over_cap(path, MANIFEST, member.size, "manifest", limits)
    try:
        manifest = json.loads(tar.extractfile(member).read(limits.manifest))
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, bad UTF-8, numbers too long, nesting too deep
        raise BundleError(path, "manifest", f"{MANIFEST} is not JSON ({type(exc).__name__}: "
                                            f"{' '.join(str(exc).split())[:200]})") from None
    return check_manifest(path, manifest, limits)


def _extract(path, tar: tarfile.TarFile, member: tarfile.TarInfo, manifest: dict, into: Path, seen: set) -> None:
    """One member, checked (a listed plain file of its declared size, read no further than that size) and
    written under `into` with its sha256 checked."""
    name = member.name
    if not member.isfile() or not _safe_member(name):
        raise BundleError(path, "member", f"{name!r:.160} is not a plain file inside {TOP}/ (links, folders and paths "
                                          "leaving the bundle are refused)")
    if name in seen:
        raise BundleError(path, "member", f"{name} appears twice")
    expected = manifest["files"].get(name)
    if not isinstance(expected, dict):
        raise BundleError(path, "member", f"{name!r:.160} is not listed in the manifest")
    if member.size != expected["bytes"]:
        raise BundleError(path, "size", f"{name} is {member.size} bytes in the archive, its manifest says "
                                        f"{expected['bytes']}: the bundle was modified or damaged")
    target = into / PurePosixPath(name).relative_to(TOP)
    target.parent.mkdir(parents=True, exist_ok=True)
    h, left = hashlib.sha256(), expected["bytes"]
    with tar.extractfile(member) as src, open(target, "wb") as dst:
        while left > 0:
            block = src.read(min(left, 1 << 20))
            if not block:
                break
            h.update(block)
            dst.write(block)
            left -= len(block)
    if left or h.hexdigest() != expected["sha256"]:
        raise BundleError(path, "checksum", f"{name} does not match its sha256 and size in the manifest "
                                            "(the bundle was modified or damaged)")
    seen.add(name)


def read_bundle(path: Path | str, into: Path | str, *, limits: Limits | None = None) -> dict:
    """Verify the bundle at `path` while extracting it into the folder `into`; returns its manifest.

    Raises :class:`BundleError` naming the file and the failed check (archive, manifest, format, name, size,
    member, checksum, completeness, schema, run, values: each run read as :func:`pqlab.store.results.load_run` reads
    it, its own recorded checksums included).  The manifest is checked whole (:func:`check_manifest`) before
    any other member is read, and nothing is written beyond the sizes it declares (`limits`: default
    :class:`~pqlab.store.bundle_checks.Limits`)."""
    path, into, limits = Path(path), Path(into), limits or Limits()
    if not path.is_file():
        raise BundleError(path, "archive", "no such file")
    manifest, seen = None, set()
    try:
        with open(path, "rb") as raw, gzip.GzipFile(fileobj=raw, mode="rb") as gz:
            stream = _Capped(gz, path, limits.manifest + _PER_MEMBER + _TRAILER, f"the {mib(limits.manifest)} cap "
                             "on a manifest allows before it")
            with tarfile.open(fileobj=stream, mode="r|") as tar:
                for member in tar:
                    if manifest is None:
                        manifest = _read_manifest(path, tar, member, limits)
                        declared = sum(e["bytes"] for e in manifest["files"].values())
                        stream.limit = stream.used + declared + _PER_MEMBER * len(manifest["files"]) + _TRAILER
                        stream.why = f"the {declared} bytes of the {len(manifest['files'])} files its manifest lists"
                        continue
                    _extract(path, tar, member, manifest, into, seen)
            while stream.read(1 << 20):  # the rest of the gzip stream: its CRC is checked at its end
                pass
    except BundleError:
        raise
    except (tarfile.TarError, EOFError, OSError, zlib.error) as exc:
        raise BundleError(path, "archive", f"not a complete gzip-compressed tar archive ({exc}): truncated, "
                                           "damaged or not a bundle") from None
    if manifest is None:
        raise BundleError(path, "manifest", f"the archive is empty (no {MANIFEST})")
    missing = sorted(set(manifest["files"]) - seen)
    if missing:
        raise BundleError(path, "completeness", f"{len(missing)} listed file(s) missing, first {missing[0]} "
                                                "(a truncated or incomplete bundle)")
    _check_runs(path, manifest, into / "runs")
    return manifest


def _check_runs(path, manifest: dict, runs: Path) -> None:
    from pqlab.store.results import load_run

    mid = manifest["machine"]["machine_id"]
    listed = sorted(r["run_id"] for r in manifest["runs"])
    present = sorted(p.name[: -len(".meta.json")] for p in runs.glob("*.meta.json"))
    if listed != present:
        raise BundleError(path, "manifest", f"its runs ({', '.join(listed)}) are not the runs in the bundle "
                                            f"({', '.join(present)})")
    for run_id in present:
        try:
            meta = json.loads((runs / f"{run_id}.meta.json").read_text(encoding="utf-8"))
        except (ValueError, RecursionError) as exc:
            raise BundleError(path, "run", f"run {run_id}'s metadata is not JSON ({type(exc).__name__}): it was "
                                           "damaged before it was bundled") from None
        if not isinstance(meta, dict):
            raise BundleError(path, "run", f"run {run_id}'s metadata is a JSON {type(meta).__name__}, not an object")
        if meta.get("machine_id") != mid:
            raise BundleError(path, "manifest", f"run {run_id} was recorded on machine {meta.get('machine_id')!r:.60}, "
                                                f"the manifest says {mid!r}")
        version = meta.get("schema_version")
        if not isinstance(version, int) or isinstance(version, bool) or version > SCHEMA_VERSION:
            raise BundleError(path, "schema", f"run {run_id} has schema version {version!r:.40}; this pqlab reads "
                                              f"up to {SCHEMA_VERSION}: update pqlab to merge it")
        try:
            run = load_run(runs / run_id)
        except Exception as exc:  # noqa: BLE001 - any reading failure refuses the bundle, named
            raise BundleError(path, "run", f"run {run_id} cannot be read ({type(exc).__name__}: "
                                           f"{' '.join(str(exc).split())})") from None
        check_run(path, run_id, meta, run)


# ----- merging -----
def this_host() -> dict:
    """This host as a merge compares a bundle with it: the machine id runs here are recorded under
    (:func:`pqlab.measure.machine.machine_id`), the hostname and the CPU model."""
    return {"machine_id": machine.machine_id(), "hostname": socket.gethostname(),
            "cpu": machine.cpu().get("model") or ""}


@contextlib.contextmanager
def store_lock(folder: Path):
    """Hold the results store `folder` for one merge at a time: an exclusive ``fcntl.flock`` on the folder
    itself (it writes no file, and the kernel releases it when the process ends, however it ends)."""
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _records(target: Path) -> list[tuple[dict, bool]]:
    """The manifests of the bundles imported into a machine's folder: (manifest, import complete); a damaged
    one is refused, naming it (its checksums decide what is a duplicate)."""
    folder = target / "bundles"
    if not folder.is_dir():
        return []
    out = []
    for p in sorted(folder.iterdir()):
        if p.suffix not in (".json", ".importing"):
            continue
        try:
            record = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError):
            record = None
        if not (isinstance(record, dict) and isinstance(record.get("machine"), dict)
                and isinstance(record.get("files"), dict)):
            raise BadInput(f"{p} is not a readable record of an imported bundle (truncated or damaged): restore it "
                           "from a copy, or remove it (the runs it imported stay), then merge again")
        out.append((record, p.suffix == ".json"))
    return out


def _run_checksums(manifest: dict, run_id: str) -> dict:
    """file name -> sha256 of a run's files as the bundle carried them (its exact file names only)."""
    files = manifest.get("files") or {}
    return {f"{run_id}{part}": files[f"{TOP}/runs/{run_id}{part}"]["sha256"] for part in RUN_PARTS
            if isinstance(files.get(f"{TOP}/runs/{run_id}{part}"), dict)}


def _file_checksums(place: Path, run_id: str) -> dict:
    return {p.name: sha256_file(p) for p in (place / f"{run_id}{s}" for s in RUN_PARTS) if p.exists()}


class _Store:
    """Where a run id is held in the results store, and with which checksums it arrived."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        machines = folder / MACHINES
        self.places = [folder, *(sorted(p for p in machines.iterdir() if p.is_dir()) if machines.is_dir() else [])]
        self._records: dict[Path, list[dict]] = {}

    def records(self, place: Path) -> list[dict]:
        if place not in self._records:
            self._records[place] = [m for m, _ in _records(place)]
        return self._records[place]

    def held(self, run_id: str) -> list[tuple[Path, dict]]:
        """(place, checksums) of every folder holding the run: those its bundle recorded (a converted run's
        files differ from them) for an imported run, else those of its files."""
        out = []
        for place in self.places:
            if (place / f"{run_id}.meta.json").exists():
                sums = None if place == self.folder else next(
                    (s for m in self.records(place) if (s := _run_checksums(m, run_id))), None)
                out.append((place, sums or _file_checksums(place, run_id)))
        return out


def merge_bundles(bundles, folder: Path | str | None = None, *, override: bool = False,
                  max_member_bytes: int | None = None, max_manifest_bytes: int | None = None,
                  max_total_bytes: int | None = None) -> list[dict]:
    """Verify every bundle, then import their runs under ``<folder>/machines/<machine id>/`` (default folder:
    data/results); nothing is written when any bundle is refused.  `override`: merge a bundle that carries this
    host's own machine id (only one made here).  `max_member_bytes`, `max_manifest_bytes`, `max_total_bytes`:
    the caps on one file, the manifest and a bundle (:class:`~pqlab.store.bundle_checks.Limits`).  The import holds
    :func:`store_lock` from planning to the last file, so a merge running at the same time plans after it.
    Returns one report per bundle: ``{"bundle", "bundle_id", "machine_id", "override", "status", "imported",
    "present", "converted", "folder", "partial"}`` (``override``: the bundle's identity override, if any;
    ``partial``: run id -> status of each run that did not finish, :data:`pqlab.store.results.PARTIAL`)."""
    folder = Path(folder or paths.RESULTS)
    if not bundles:
        raise ValueError("no bundle given: name one or more files made by `python -m pqlab bundle`")
    limits = Limits.of(max_member_bytes, max_manifest_bytes, max_total_bytes)
    with tempfile.TemporaryDirectory(prefix="pqlab-merge-") as tmp:
        verified = []
        for i, path in enumerate(bundles):
            into = Path(tmp) / str(i)
            verified.append((Path(path), read_bundle(path, into, limits=limits), into))
        here = this_host()
        with store_lock(folder):
            store, plans, claimed = _Store(folder), [], {}
            for path, manifest, into in verified:
                plans.append(_plan(path, manifest, into, store, claimed, here, override))
            for plan in plans:
                _import(plan, folder)
        return [{k: v for k, v in plan.items() if k not in ("manifest", "into", "todo")} for plan in plans]


def _plan(path: Path, manifest: dict, into: Path, store: _Store, claimed: dict, here: dict, override: bool) -> dict:
    """What importing one verified bundle would write; refuses this host's own machine id (without `override`), a
    machine id of another host, and a run id that the store (any folder of it) or an earlier bundle of this merge
    holds with other content."""
    from pqlab.store.results import PARTIAL

    m = manifest["machine"]
    mid, host = m["machine_id"], m.get("host_id")
    if mid == here["machine_id"] and not override:
        raise BundleError(path, "machine", f"its machine id {mid!r} is this host's own, so its runs would count (and "
                                           f"be bundled again) as this machine's: the bundle says host "
                                           f"{m.get('hostname')!r:.80}, CPU {(m.get('cpu') or {}).get('model')!r:.80}; "
                                           f"this host is {here['hostname']!r}, CPU {here['cpu']!r}; merge it with "
                                           "override=True (CLI: --override) only if it was made here")
    target = machine_folder(mid, store.folder)
    records = _records(target)
    hosts = {r["machine"].get("host_id") for r, _ in records} - {host}
    if hosts:
        raise BundleError(path, "machine", f"machine id {mid!r} already holds runs of another host ({hosts.pop()}) "
                                           f"in {target}: make the bundle again with a distinct PQLAB_MACHINE_ID")
    plan = {"bundle": str(path), "bundle_id": manifest["bundle_id"], "machine_id": mid,
            "override": m.get("override"), "folder": str(target), "manifest": manifest,
            "into": into, "imported": [], "present": [], "converted": [], "todo": [],
            "partial": {r["run_id"]: "unfinished (saved as running when bundled)" if r.get("status") == "running"
                        else r.get("status") for r in manifest["runs"] if r.get("status") in PARTIAL}}
    if any(r.get("bundle_id") == manifest["bundle_id"] and done for r, done in records):
        plan.update(status="already imported", present=[r["run_id"] for r in manifest["runs"]])
        return plan
    for r in manifest["runs"]:
        run_id = r["run_id"]
        sums = _run_checksums(manifest, run_id)
        held = store.held(run_id) + ([claimed[run_id]] if run_id in claimed else [])
        clash = next((place for place, have in held if have != sums), None)
        if clash is not None:
            raise BundleError(path, "duplicate", f"run {run_id} is already in {clash} with other content (a run id "
                                                 "names one run in the whole store, every machine's folder "
                                                 "included): remove one of the two before merging")
        if held:
            plan["present"].append(run_id)
        else:
            claimed[run_id] = (f"{path}, merged together with it", sums)
            plan["todo"].append(run_id)
    plan["status"] = "imported" if plan["todo"] else "nothing new"
    return plan


def _import(plan: dict, folder: Path) -> None:
    from pqlab.store.results import load_run

    if plan["status"] == "already imported":
        return
    target, into, manifest = Path(plan["folder"]), plan["into"], plan["manifest"]
    record = target / "bundles" / f"{manifest['bundle_id']}.json"
    # recorded first as in progress: an interrupted import, merged again, recognises the runs it wrote
    atomic_write_text(record.with_suffix(".importing"), json.dumps(manifest, indent=2) + "\n")
    raw = into / "raw"
    topics = sorted(p for p in raw.iterdir() if p.is_dir()) if raw.is_dir() else []
    for run_id in plan["todo"]:
        if _meta(into / "runs" / f"{run_id}.meta.json").get("schema_version") < SCHEMA_VERSION:
            load_run(into / "runs" / run_id).save(target)  # converted on load, saved in today's schema
            plan["converted"].append(run_id)
        else:
            for part in RUN_PARTS:
                src = into / "runs" / f"{run_id}{part}"
                if src.exists():
                    atomic_write(target / src.name, lambda tmp, s=src: shutil.copyfile(s, tmp))
        plan["imported"].append(run_id)
        for d in (t / run_id for t in topics if (t / run_id).is_dir()):  # this run's folders, by exact name
            for f in sorted(p for p in d.rglob("*") if p.is_file()):
                atomic_write(target / "raw" / f.relative_to(raw), lambda tmp, s=f: shutil.copyfile(s, tmp))
    books = into / "notebooks"
    for f in sorted(books.rglob("*.ipynb")) if books.is_dir() else ():
        dest = target / "notebooks" / manifest["bundle_id"] / f.relative_to(books)
        atomic_write(dest, lambda tmp, s=f: shutil.copyfile(s, tmp))
    atomic_write_text(record, json.dumps(manifest, indent=2) + "\n")  # last: the import is complete
    record.with_suffix(".importing").unlink(missing_ok=True)
