"""Portable result bundles: one machine's runs packed for another machine to read, and merged there.

    python -m pqlab bundle [--profile quick|full] [--out FILE]   # this machine's runs -> one archive
    python -m pqlab merge BUNDLE... [--override] [--max-member-mib N]   # verify, then import by machine

A bundle is a gzip-compressed tar archive whose first member is its manifest::

    pqlab-bundle/MANIFEST.json                  format and version, machine (id, override, CPU, counter,
                                                frequency), libraries, commit, runs, sha256 and size per file
    pqlab-bundle/runs/RUN.meta.json ...         the runs' files as the results store holds them
    pqlab-bundle/raw/TOPIC/RUN/...              raw traces of those runs (data/raw/)
    pqlab-bundle/notebooks/PROFILE/NN.ipynb     executed notebooks of those runs (build/PROFILE/)

A bundle is untrusted input: it may come from a stranger.  Merging verifies everything before it writes
anything (:mod:`pqlab.store.bundle_checks`): the manifest is a pqlab manifest of a known format whose every
field has its type; every identifier in it (run ids, machine and host id, study labels, raw TOPIC/RUN folders,
notebook names) obeys the rule ``bench`` uses for its own (:func:`pqlab.core.inputs.file_label`); sizes are
capped (by default 256 MiB a file, 16 MiB the manifest, 2 GiB a bundle:
:class:`~pqlab.store.bundle_checks.Limits`, raised with keyword arguments or ``--max-*-mib``), checked against
the manifest before a byte is extracted and enforced while the archive streams; every member is a plain file
listed with its size and sha256, nothing listed is missing, the gzip stream reads whole (its CRC); every run
reads as :func:`pqlab.store.results.load_run` reads it, its metadata names it, and each row's time estimate
agrees with the one its own samples give.  The checksums detect damage and edits of the files; they do not
authenticate the sender (a host proof does, for a bundle made on this host).

Runs go to ``data/results/machines/<machine id>/``, older schemas converted
(:func:`pqlab.core.schema.convert`); the manifest is kept in ``bundles/`` beside them. An import is atomic per
bundle (:func:`_import`): staged, then moved into place, shown only when complete; interrupted, it shows
nothing, and merged again it completes, every file compared by checksum. A run id names one run in the whole
store (this machine's runs in the folder itself and every machine's folder): a run already there with the same
content is left as it is (importing a bundle twice changes nothing), the same run id with other content
anywhere is refused, so no run can hide another. A machine id that another host already uses is refused, and
so is a bundle that names this host by any field, in any spelling (:func:`pqlab.store.identity.claims`),
unless ``override=True`` (``--override``); its runs count as this host's only when its host proof verifies (it
was packed here), else they stay the bundle's machine (:func:`pqlab.store.machines.run_hosts`). Merges hold a
lock on the results folder from planning to the last file written, so two merges at once are one after the
other. A bundle packs an executed notebook only when it belongs to the bundled runs (:func:`notebooks_of`).
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import socket
import tempfile
from pathlib import Path

from pqlab.core import paths
from pqlab.core.files import atomic_write_text
from pqlab.core.integrity import sha256_file
from pqlab.core.schema import SCHEMA_VERSION
from pqlab.measure import machine
from pqlab.store import identity
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
from pqlab.store.bundle_pack import create_bundle, notebooks_of
from pqlab.store.bundle_read import read_bundle
from pqlab.store.machines import (
    MACHINES,
    import_records,
    machine_folder,
    machine_runs,
    stored_meta,
    stored_runs,
)

#: what ``from pqlab.store.bundle import ...`` reaches: merging (here), making
#: (:mod:`pqlab.store.bundle_pack`) and reading (:mod:`pqlab.store.bundle_read`) a bundle, its checks
#: (:mod:`pqlab.store.bundle_checks`) and the store's runs by machine (:mod:`pqlab.store.machines`)
__all__ = ["FORMAT", "FORMAT_VERSION", "MACHINES", "MANIFEST", "PROFILES", "RUN_PARTS", "TOP", "BundleError",
           "Limits", "bundle_id", "check_manifest", "check_run", "create_bundle", "machine_folder",
           "machine_runs", "merge_bundles", "mib", "notebooks_of", "over_cap", "read_bundle", "store_lock",
           "stored_meta", "stored_runs", "this_host"]

_bundle_id = bundle_id


def _meta(path: Path) -> dict:
    return json.loads(path.read_text())



# ----- merging -----
def this_host() -> dict:
    """This host as a merge compares a bundle with it (:func:`pqlab.store.identity.claims`): the machine id
    runs here are recorded under (:func:`pqlab.measure.machine.machine_id`), its own host id, the hostname and
    the CPU model."""
    return {"machine_id": machine.machine_id(), "host_id": machine.host_id(),
            "hostname": socket.gethostname(), "cpu": machine.cpu().get("model") or ""}


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
        self.places = [folder,
                       *(sorted(p for p in machines.iterdir() if p.is_dir()) if machines.is_dir() else [])]
        self._records: dict[Path, list[dict]] = {}

    def records(self, place: Path) -> list[dict]:
        if place not in self._records:
            self._records[place] = [m for m, _ in import_records(place, strict=True)]
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
    data/results); nothing is written when any bundle is refused.  `override`: merge a bundle that names this
    host (:func:`pqlab.store.identity.claims`); it counts as this host's only when its host proof verifies.
    `max_member_bytes`, `max_manifest_bytes`, `max_total_bytes`: the caps on one file, the manifest and a
    bundle (:class:`~pqlab.store.bundle_checks.Limits`).  The import holds :func:`store_lock` from planning to
    the last file, so a merge running at the same time plans after it, and is atomic per bundle
    (:func:`_import`).  Returns one report per bundle: ``{"bundle", "bundle_id", "machine_id", "override",
    "host", "status", "imported", "present", "converted", "folder", "partial"}`` (``override``: the bundle's
    identity override, if any; ``host``: whose runs they count as; ``partial``: run id -> status of each run
    that did not finish, :data:`pqlab.store.results.PARTIAL`)."""
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
                _import(plan)
        return [{k: v for k, v in plan.items() if k not in ("manifest", "into", "todo", "record")}
                for plan in plans]


def _host(path: Path, manifest: dict, into: Path, here: dict, override: bool) -> dict:
    """Whose runs a bundle's are (the ``merge`` entry of its import record): refused when it names this host
    (:func:`pqlab.store.identity.claims`) without `override`, the evidence shown; a bundle that names it
    counts as this host's only when its host proof verifies."""
    metas = {r["run_id"]: _meta(into / "runs" / f"{r['run_id']}.meta.json") for r in manifest["runs"]}
    said = identity.claims(manifest, metas, here)
    proven = bool(said) and identity.verifies(manifest)
    if said and not override:
        evidence = "; ".join(said[:4]) + (f" and {len(said) - 4} more" if len(said) > 4 else "")
        proof = ("its host proof verifies: it was packed on this host by pqlab; merge it with override=True "
                 "(CLI: --override) to count its runs as this host's" if proven else
                 "it carries no host proof that verifies here, so nothing shows it was made on this host "
                 "(a bundle posing as this host, or made with another key); merge it with override=True "
                 "(CLI: --override) only if you trust it: its runs then stay machine "
                 f"{manifest['machine']['machine_id']!r}, never this host")
        raise BundleError(path, "machine",
                          f"it names this host ({here['machine_id']}, host {here.get('host_id') or '?'}, "
                          f"{here['hostname']!r:.80}, CPU {here['cpu']!r:.80}) by {evidence}; {proof}")
    return {"claims": said, "host_verified": proven, "override": bool(override and said)}


def _plan(path: Path, manifest: dict, into: Path, store: _Store, claimed: dict, here: dict,
          override: bool) -> dict:
    """What importing one verified bundle would write; refuses a bundle that names this host (without
    `override`, :func:`_host`), a machine id of another host, and a run id that the store (any folder of it)
    or an earlier bundle of this merge holds with other content.  A run the store holds in the bundle's own
    folder with a file missing or different (an import interrupted) is imported again."""
    from pqlab.store.results import PARTIAL

    m = manifest["machine"]
    mid, host = m["machine_id"], m.get("host_id")
    merge = _host(path, manifest, into, here, override)
    target = machine_folder(mid, store.folder)
    records = import_records(target, strict=True)
    hosts = {r["machine"].get("host_id") for r, _ in records} - {host}
    if hosts:
        raise BundleError(path, "machine",
                          f"machine id {mid!r} already holds runs of another host ({hosts.pop()}) "
                          f"in {target}: make the bundle again with a distinct PQLAB_MACHINE_ID")
    plan = {"bundle": str(path), "bundle_id": manifest["bundle_id"], "machine_id": mid,
            "override": m.get("override"), "folder": str(target), "manifest": manifest,
            "host": "this host (its host proof verifies)" if merge["host_verified"] else f"machine {mid}",
            "record": {**manifest, "merge": merge},
            "into": into, "imported": [], "present": [], "converted": [], "todo": [],
            "partial": {r["run_id"]: "unfinished (saved as running when bundled)"
                        if r.get("status") == "running" else r.get("status")
                        for r in manifest["runs"] if r.get("status") in PARTIAL}}
    if any(r.get("bundle_id") == manifest["bundle_id"] and done for r, done in records):
        plan.update(status="already imported", present=[r["run_id"] for r in manifest["runs"]])
        return plan
    for r in manifest["runs"]:
        run_id = r["run_id"]
        sums = _run_checksums(manifest, run_id)
        held = store.held(run_id) + ([claimed[run_id]] if run_id in claimed else [])
        clash = next((place for place, have in held if have != sums), None)
        if clash is not None:
            raise BundleError(path, "duplicate",
                              f"run {run_id} is already in {clash} with other content (a run id "
                              "names one run in the whole store, every machine's folder "
                              "included): remove one of the two before merging")
        if held and not (held[0][0] == target and _missing(target, manifest, run_id)):
            plan["present"].append(run_id)
        else:
            claimed[run_id] = (f"{path}, merged together with it", sums)
            plan["todo"].append(run_id)
    plan["status"] = "imported" if plan["todo"] else "nothing new"
    return plan


def _raw_files(manifest: dict, run_id: str) -> dict[str, str]:
    """``raw/TOPIC/RUN/...`` (relative to a machine's folder) -> sha256 of a run's raw traces in a bundle."""
    out = {}
    for name, entry in manifest["files"].items():
        parts = name.split("/")
        if parts[1] == "raw" and parts[3] == run_id:
            out["/".join(parts[1:])] = entry["sha256"]
    return out


def _missing(target: Path, manifest: dict, run_id: str) -> bool:
    """True when a file of the run (its run files where it was stored as bundled, its raw traces) is missing
    from the machine folder `target` or differs from the bundle's: "present" means every file, by checksum."""
    have = _file_checksums(target, run_id)
    sums = _run_checksums(manifest, run_id)
    converted = any(r.get("run_id") == run_id and (r.get("schema_version") or SCHEMA_VERSION) < SCHEMA_VERSION
                    for r in manifest["runs"])
    if not converted and have != sums:
        return True
    if converted and f"{run_id}.meta.json" not in have:
        return True
    return any(not (target / rel).is_file() or sha256_file(target / rel) != sha
               for rel, sha in _raw_files(manifest, run_id).items())


#: where an import stages its files, inside the machine's folder (one file system: moved into place by
#: ``os.replace``); readers of the store never look there
STAGING = ".staging"


def _import(plan: dict) -> None:
    """Import one planned bundle atomically: its record ``bundles/<id>.importing`` is written first (it lists
    the runs being imported, which readers of the store do not show until the import completes:
    :func:`pqlab.store.machines.stored_runs`), every file is staged in ``.staging/<id>/`` and moved into
    place (each run's metadata last), then the record becomes ``<id>.json``.  An import interrupted at any
    point shows nothing, and merged again it completes: a file already in place with the bundle's checksum
    is kept, anything else staged again."""
    from pqlab.store.results import load_run

    target, into, manifest = Path(plan["folder"]), plan["into"], plan["manifest"]
    bid = manifest["bundle_id"]
    record = target / "bundles" / f"{bid}.json"
    journal, staging = record.with_suffix(".importing"), target / STAGING / bid
    if plan["status"] == "already imported":  # a complete import: what an interruption after it left
        journal.unlink(missing_ok=True)
        shutil.rmtree(staging, ignore_errors=True)
        return
    atomic_write_text(journal, json.dumps({**plan["record"], "importing": plan["todo"]}, indent=2) + "\n")
    shutil.rmtree(staging, ignore_errors=True)
    moves: list[str] = []  # paths relative to target, in the order they are moved into place
    for run_id in plan["todo"]:
        for rel, sha in _raw_files(manifest, run_id).items():
            if not ((target / rel).is_file() and sha256_file(target / rel) == sha):
                _stage(into / rel, staging / rel)
                moves.append(rel)
        if _meta(into / "runs" / f"{run_id}.meta.json").get("schema_version") < SCHEMA_VERSION:
            load_run(into / "runs" / run_id).save(staging / "runs")  # converted on load, in today's schema
            plan["converted"].append(run_id)
        else:
            for part in RUN_PARTS:
                if (into / "runs" / f"{run_id}{part}").exists():
                    _stage(into / "runs" / f"{run_id}{part}", staging / "runs" / f"{run_id}{part}")
        moves += [f"runs/{run_id}{part}" for part in RUN_PARTS
                  if (staging / "runs" / f"{run_id}{part}").exists()]
        plan["imported"].append(run_id)
    books = into / "notebooks"
    for f in sorted(books.rglob("*.ipynb")) if books.is_dir() else ():
        rel = f"notebooks/{bid}/{f.relative_to(books).as_posix()}"
        _stage(f, staging / rel)
        moves.append(rel)
    for rel in moves:
        dest = target / (rel.removeprefix("runs/") if rel.startswith("runs/") else rel)
        dest.parent.mkdir(parents=True, exist_ok=True)
        os.replace(staging / rel, dest)
    atomic_write_text(record, json.dumps(plan["record"], indent=2) + "\n")  # the import is complete
    journal.unlink()
    shutil.rmtree(staging, ignore_errors=True)
    with contextlib.suppress(OSError):
        (target / STAGING).rmdir()  # empty unless another import of this machine was interrupted


def _stage(src: Path, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dest)
