"""Portable result bundles: one machine's runs packed for another machine to read, and merged there.

    python -m pqlab bundle [--profile quick|full] [--out FILE]   # this machine's runs -> one archive
    python -m pqlab merge BUNDLE...                              # verify, then import by machine

A bundle is a gzip-compressed tar archive whose first member is its manifest::

    pqlab-bundle/MANIFEST.json                  format and version, machine (id, override, CPU, counter,
                                                frequency), libraries, commit, runs, sha256 and size per file
    pqlab-bundle/runs/RUN.meta.json ...         the runs' files as the results store holds them
    pqlab-bundle/raw/TOPIC/RUN/...              raw traces of those runs (data/raw/)
    pqlab-bundle/notebooks/PROFILE/NN.ipynb     executed notebooks (build/PROFILE/)

Merging verifies everything before it writes anything: the archive reads whole (a truncated or damaged
gzip stream fails its CRC), the manifest is a pqlab manifest of a known format, every member is a plain
file listed in the manifest with its size and sha256, nothing listed is missing, and every run's schema
is readable.  The checksums detect damage and edits of the files; they do not authenticate the sender.
Runs go to ``data/results/machines/<machine id>/`` (written atomically, meta last), older schemas
converted (:func:`pqlab.schema.convert`); the manifest is kept in ``bundles/`` beside them.  A run that
is already there with the same content is left as it is (importing a bundle twice changes nothing);
the same run id with other content is refused, as is a machine id that another host already uses.
"""
from __future__ import annotations

import datetime as dt
import gzip
import hashlib
import json
import shutil
import tarfile
import tempfile
import zlib
from pathlib import Path, PurePosixPath

from . import machine, paths
from .errors import BadInput
from .files import atomic_write, atomic_write_text
from .schema import SCHEMA_VERSION

FORMAT = "pqlab-bundle"
FORMAT_VERSION = 1
TOP = "pqlab-bundle"
MANIFEST = f"{TOP}/MANIFEST.json"
#: the results store's folder of imported runs, one subfolder per machine id
MACHINES = "machines"
RUN_PARTS = (".measurements.csv", ".sizes.csv", ".samples.csv.gz", ".meta.json")  # meta last
PROFILES = ("quick", "full")


class BundleError(BadInput):
    """A bundle refused: one line naming the file, the check that failed and what to do."""

    def __init__(self, path, check: str, problem: str) -> None:
        super().__init__(f"{path}: {check} check failed: {problem}")


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _meta(path: Path) -> dict:
    return json.loads(path.read_text())


def machine_folder(machine_id: str, folder: Path | str | None = None) -> Path:
    return Path(folder or paths.RESULTS) / MACHINES / machine.check_machine_id(machine_id, "machine id")


def stored_runs(folder: Path | str | None = None) -> list[Path]:
    """Meta files of every run in the results store: this machine's (the folder itself) and every imported
    machine's (``machines/<id>/``); a run id present in both places is listed once (the folder's own)."""
    folder = Path(folder or paths.RESULTS)
    seen, out = set(), []
    for meta in [*sorted(folder.glob("*.meta.json")), *sorted(folder.glob(f"{MACHINES}/*/*.meta.json"))]:
        if meta.name not in seen:
            seen.add(meta.name)
            out.append(meta)
    return out


def machine_runs(machine_id: str, profile: str | None = None, folder: Path | str | None = None) -> list[Path]:
    """Meta files of the stored runs recorded under `machine_id` (and `profile`, when given)."""
    out = []
    for meta_path in stored_runs(folder):
        meta = _meta(meta_path)
        if meta.get("machine_id") == machine_id and (profile is None or meta.get("profile") == profile):
            out.append(meta_path)
    return out


def _raw_dirs(run_id: str, machine_id: str, folder: Path) -> list[tuple[Path, str]]:
    """(folder, TOPIC/RUN) of the run's raw traces, in data/raw/ or among its machine's imported files."""
    roots = [paths.RAW, folder / MACHINES / machine_id / "raw"]
    return [(d, f"{d.parent.name}/{run_id}") for root in roots if root.is_dir() for d in root.glob(f"*/{run_id}")
            if d.is_dir()]


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


def create_bundle(out: Path | str | None = None, *, profile: str | None = None, notebooks: bool = True,
                  folder: Path | str | None = None) -> Path:
    """Pack this machine's runs (those recorded under :func:`pqlab.machine.machine_id`; with `profile`, those
    of ``make reproduce PROFILE=profile`` only), their raw traces and, with `notebooks`, the executed notebooks
    of ``build/<profile>/`` into one archive; returns its path (default ``build/bundles/``)."""
    if profile is not None and profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r}: choose {' or '.join(PROFILES)}")
    folder = Path(folder or paths.RESULTS)
    info = machine.collect(liboqs=False)
    mid = info["machine_id"]
    metas = machine_runs(mid, profile, folder)
    if not metas:
        others = sorted({_meta(p).get("machine_id", "?") for p in stored_runs(folder)})
        raise ValueError(f"no runs of machine {mid}{f' with profile {profile}' if profile else ''} in {folder}"
                         f" (runs there are from: {', '.join(others) or 'none'}): run `make reproduce"
                         f"{f' PROFILE={profile}' if profile else ''}` first")
    books = sorted(p for prof in ([profile] if profile else PROFILES)
                   for p in (paths.BUILD / prof).glob("[0-9][0-9]_*.ipynb")) if notebooks else []
    files = _files_to_pack(metas, mid, folder, books)
    checks = {name: {"sha256": sha256_file(p), "bytes": p.stat().st_size} for name, p in sorted(files.items())}
    run_metas = [_meta(p) for p in metas]
    bundle_id = _bundle_id(mid, checks)
    manifest = {
        "format": FORMAT, "format_version": FORMAT_VERSION, "bundle_id": bundle_id,
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
    out = Path(out) if out else paths.BUILD / "bundles" / f"pqlab-{mid}-{profile or 'all'}-{bundle_id}.tar.gz"

    def write(tmp: str) -> None:
        with open(tmp, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as gz, \
                tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
            _add(tar, MANIFEST, (json.dumps(manifest, indent=2, default=str) + "\n").encode())
            for name, path in sorted(files.items()):
                _add(tar, name, path.read_bytes())

    return atomic_write(out, write)


def _bundle_id(machine_id: str, files: dict) -> str:
    """The bundle's content address: the same runs and files of the same machine give the same id."""
    return hashlib.sha256(json.dumps([machine_id, files], sort_keys=True).encode()).hexdigest()[:16]


def _version() -> str:
    from . import __version__

    return __version__


def _unique_dicts(items) -> list:
    out = []
    for item in items:
        if item and item not in out:
            out.append(item)
    return out


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    import io

    ti = tarfile.TarInfo(name)
    ti.size, ti.mtime, ti.mode = len(data), 0, 0o644
    tar.addfile(ti, io.BytesIO(data))


# ----- reading and verifying -----
def _safe_member(name: str) -> bool:
    p = PurePosixPath(name)
    return not p.is_absolute() and p.parts[:1] == (TOP,) and ".." not in p.parts and len(p.parts) >= 3


def _check_manifest(path, manifest) -> dict:
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise BundleError(path, "manifest", f"{MANIFEST} is not a {FORMAT} manifest (a foreign archive)")
    version = manifest.get("format_version")
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise BundleError(path, "format", f"bundle format {version!r}; this pqlab reads up to {FORMAT_VERSION}: "
                                          "update pqlab to merge it")
    for key, kind in (("files", dict), ("runs", list), ("machine", dict), ("bundle_id", str)):
        if not isinstance(manifest.get(key), kind):
            raise BundleError(path, "manifest", f"its {key!r} entry is missing or malformed")
    if not all(isinstance(r, dict) and isinstance(r.get("run_id"), str) for r in manifest["runs"]):
        raise BundleError(path, "manifest", "a 'runs' entry has no run_id")
    try:
        machine.check_machine_id(manifest["machine"].get("machine_id"), "machine_id")
    except ValueError as exc:
        raise BundleError(path, "manifest", str(exc)) from None
    if manifest["bundle_id"] != _bundle_id(manifest["machine"]["machine_id"], manifest["files"]):
        raise BundleError(path, "manifest", "its bundle_id does not match its machine and file list (edited)")
    return manifest


def read_bundle(path: Path | str, into: Path | str) -> dict:
    """Verify the bundle at `path` while extracting it into the folder `into`; returns its manifest.

    Raises :class:`BundleError` naming the file and the failed check (archive, manifest, format, member,
    checksum, completeness, schema, run: each run read as :func:`pqlab.results.load_run` reads it, its own
    recorded checksums included)."""
    path, into = Path(path), Path(into)
    if not path.is_file():
        raise BundleError(path, "archive", "no such file")
    manifest, seen = None, set()
    try:
        with tarfile.open(path, mode="r:gz") as tar:
            for member in tar:
                if manifest is None:
                    if member.name != MANIFEST or not member.isfile():
                        raise BundleError(path, "manifest", f"the first member is {member.name!r}, not {MANIFEST}: "
                                                            "not a pqlab bundle (a foreign archive)")
                    try:
                        manifest = _check_manifest(path, json.loads(tar.extractfile(member).read()))
                    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                        raise BundleError(path, "manifest", f"{MANIFEST} is not JSON ({exc})") from None
                    continue
                name = member.name
                if not member.isfile() or not _safe_member(name):
                    raise BundleError(path, "member", f"{name!r} is not a plain file inside {TOP}/ (links, folders "
                                                      "and paths leaving the bundle are refused)")
                if name in seen:
                    raise BundleError(path, "member", f"{name} appears twice")
                expected = manifest["files"].get(name)
                if not isinstance(expected, dict):
                    raise BundleError(path, "member", f"{name} is not listed in the manifest")
                target = into / PurePosixPath(name).relative_to(TOP)
                target.parent.mkdir(parents=True, exist_ok=True)
                h, size = hashlib.sha256(), 0
                with tar.extractfile(member) as src, open(target, "wb") as dst:
                    for block in iter(lambda: src.read(1 << 20), b""):
                        h.update(block)
                        size += len(block)
                        dst.write(block)
                if h.hexdigest() != expected.get("sha256") or size != expected.get("bytes"):
                    raise BundleError(path, "checksum", f"{name} does not match its sha256 and size in the manifest "
                                                        "(the bundle was modified or damaged)")
                seen.add(name)
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
    from .results import load_run

    mid = manifest["machine"]["machine_id"]
    listed = [r.get("run_id") for r in manifest["runs"] if isinstance(r, dict)]
    present = sorted(p.name[: -len(".meta.json")] for p in runs.glob("*.meta.json"))
    if sorted(listed) != present:
        raise BundleError(path, "manifest", f"its runs ({', '.join(sorted(map(str, listed)))}) are not the runs "
                                            f"in the bundle ({', '.join(present)})")
    for run_id in present:
        meta = _meta(runs / f"{run_id}.meta.json")
        if meta.get("machine_id") != mid:
            raise BundleError(path, "manifest", f"run {run_id} was recorded on machine {meta.get('machine_id')!r}, "
                                                f"the manifest says {mid!r}")
        version = meta.get("schema_version")
        if not isinstance(version, int) or version > SCHEMA_VERSION:
            raise BundleError(path, "schema", f"run {run_id} has schema version {version!r}; this pqlab reads "
                                              f"up to {SCHEMA_VERSION}: update pqlab to merge it")
        try:
            load_run(runs / run_id)
        except Exception as exc:  # noqa: BLE001 - any reading failure refuses the bundle, named
            raise BundleError(path, "run", f"run {run_id} cannot be read ({type(exc).__name__}: {exc})") from None


# ----- merging -----
def _records(target: Path) -> list[tuple[dict, bool]]:
    """The manifests of the bundles imported into a machine's folder: (manifest, import complete)."""
    folder = target / "bundles"
    if not folder.is_dir():
        return []
    return [(_meta(p), p.suffix == ".json") for p in sorted(folder.iterdir()) if p.suffix in (".json", ".importing")]


def _run_checksums(manifest: dict, run_id: str) -> dict:
    """file name -> sha256 of a run's files as the bundle carried them."""
    return {k.rsplit("/", 1)[1]: v["sha256"] for k, v in manifest["files"].items()
            if k.startswith(f"{TOP}/runs/{run_id}.")}


def _file_checksums(place: Path, run_id: str) -> dict:
    return {p.name: sha256_file(p) for p in (place / f"{run_id}{s}" for s in RUN_PARTS) if p.exists()}


def _existing_checksums(run_id: str, target: Path, folder: Path, records: list[dict]) -> dict | None:
    """The checksums a stored run had when it arrived (None when the store does not hold it): those its bundle
    recorded (a converted run's files differ from them), else those of its files."""
    if (target / f"{run_id}.meta.json").exists():
        return next((s for m in records if (s := _run_checksums(m, run_id))), None) or _file_checksums(target, run_id)
    if (folder / f"{run_id}.meta.json").exists():  # one of this machine's own runs
        return _file_checksums(folder, run_id)
    return None


def merge_bundles(bundles, folder: Path | str | None = None) -> list[dict]:
    """Verify every bundle, then import their runs under ``<folder>/machines/<machine id>/`` (default folder:
    data/results); nothing is written when any bundle is refused.  Returns one report per bundle:
    ``{"bundle", "bundle_id", "machine_id", "override", "status", "imported", "present", "converted", "folder",
    "partial"}`` (``partial``: run id -> status of each run that did not finish, :data:`pqlab.results.PARTIAL`)."""
    folder = Path(folder or paths.RESULTS)
    if not bundles:
        raise ValueError("no bundle given: name one or more files made by `python -m pqlab bundle`")
    with tempfile.TemporaryDirectory(prefix="pqlab-merge-") as tmp:
        plans, claimed = [], {}
        for i, path in enumerate(bundles):
            into = Path(tmp) / str(i)
            manifest = read_bundle(path, into)
            plans.append(_plan(Path(path), manifest, into, folder, claimed))
        for plan in plans:
            _import(plan, folder)
        return [{k: v for k, v in plan.items() if k not in ("manifest", "into", "todo")} for plan in plans]


def _plan(path: Path, manifest: dict, into: Path, folder: Path, claimed: dict) -> dict:
    """What importing one verified bundle would write; refuses a machine id of another host and a run id
    that the store (or an earlier bundle of this merge) holds with other content."""
    from .results import PARTIAL

    mid, host = manifest["machine"]["machine_id"], manifest["machine"].get("host_id")
    target = machine_folder(mid, folder)
    records = _records(target)
    hosts = {m["machine"].get("host_id") for m, _ in records} - {host}
    if hosts:
        raise BundleError(path, "machine", f"machine id {mid!r} already holds runs of another host ({hosts.pop()}) "
                                           f"in {target}: make the bundle again with a distinct PQLAB_MACHINE_ID")
    plan = {"bundle": str(path), "bundle_id": manifest["bundle_id"], "machine_id": mid,
            "override": manifest["machine"].get("override"), "folder": str(target), "manifest": manifest,
            "into": into, "imported": [], "present": [], "converted": [], "todo": [],
            "partial": {r["run_id"]: "unfinished (saved as running when bundled)" if r.get("status") == "running"
                        else r.get("status") for r in manifest["runs"] if r.get("status") in PARTIAL}}
    if any(m.get("bundle_id") == manifest["bundle_id"] and done for m, done in records):
        plan.update(status="already imported", present=[r["run_id"] for r in manifest["runs"]])
        return plan
    for r in manifest["runs"]:
        run_id = r["run_id"]
        sums = _run_checksums(manifest, run_id)
        have = claimed.get(run_id) or _existing_checksums(run_id, target, folder, [m for m, _ in records])
        if have is None:
            claimed[run_id] = sums
            plan["todo"].append(run_id)
        elif have == sums:
            plan["present"].append(run_id)
        else:
            raise BundleError(path, "duplicate", f"run {run_id} is already in {folder} with other content: "
                                                 "remove one of the two before merging")
    plan["status"] = "imported" if plan["todo"] else "nothing new"
    return plan


def _import(plan: dict, folder: Path) -> None:
    from .results import load_run

    if plan["status"] == "already imported":
        return
    target, into, manifest = Path(plan["folder"]), plan["into"], plan["manifest"]
    record = target / "bundles" / f"{manifest['bundle_id']}.json"
    # recorded first as in progress: an interrupted import, merged again, recognises the runs it wrote
    atomic_write_text(record.with_suffix(".importing"), json.dumps(manifest, indent=2) + "\n")
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
        raw = into / "raw"
        for f in (p for p in raw.glob(f"*/{run_id}/**/*") if p.is_file()) if raw.is_dir() else ():
            atomic_write(target / "raw" / f.relative_to(raw), lambda tmp, s=f: shutil.copyfile(s, tmp))
    books = into / "notebooks"
    for f in (p for p in books.rglob("*.ipynb")) if books.is_dir() else ():
        dest = target / "notebooks" / manifest["bundle_id"] / f.relative_to(books)
        atomic_write(dest, lambda tmp, s=f: shutil.copyfile(s, tmp))
    atomic_write_text(record, json.dumps(manifest, indent=2) + "\n")  # last: the import is complete
    record.with_suffix(".importing").unlink(missing_ok=True)
