"""The results store's runs by machine: this machine's in the results folder itself, every imported machine's
under ``machines/<machine id>/`` (:mod:`pqlab.store.bundle` merges them there), and their metadata as
stored."""
from __future__ import annotations

import json
from pathlib import Path

from pqlab.core import paths
from pqlab.core.errors import BadInput, warn
from pqlab.core.schema import convert_meta
from pqlab.measure import machine
from pqlab.store.meta_schema import meta_problem

#: the results store's folder of imported runs, one subfolder per machine id
MACHINES = "machines"


def stored_meta(path: Path | str) -> dict | None:
    """A stored run's metadata; None, with a one-line warning naming the file, when it is not readable JSON (a
    truncated or damaged file) or breaks the metadata schema (:func:`pqlab.store.meta_schema.meta_problem`:
    a field of the wrong type or out of its bounds), so that readers of the whole store (atlas, context,
    report) go on with the other runs and never meet a field they cannot read."""
    fix = "left out; restore it from a copy, or remove that run's files"
    try:
        meta = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        warn(f"{path} is not readable JSON ({' '.join(str(exc).split())}): {fix}")
        return None
    if not isinstance(meta, dict):
        warn(f"{path} holds a JSON {type(meta).__name__}, not a run's metadata: {fix}")
        return None
    problem = meta_problem(meta)
    if problem:
        warn(f"{path}: {problem}: {fix}")
        return None
    version = meta.get("schema_version")
    # read in today's form, never rewritten
    return convert_meta(meta, version if isinstance(version, int) else 0)


def machine_folder(machine_id: str, folder: Path | str | None = None) -> Path:
    return Path(folder or paths.RESULTS) / MACHINES / machine.check_machine_id(machine_id, "machine id")


def import_records(place: Path, *, strict: bool = False) -> list[tuple[dict, bool]]:
    """(record, complete) of every import record in a machine's folder (``bundles/<id>.json``, or
    ``.importing`` while or after an interrupted import: :mod:`pqlab.store.bundle`).  A record that is not
    readable (truncated, damaged) is skipped by readers, or with `strict` (a merge into that folder, whose
    checksums decide what is a duplicate) refused, naming it."""
    out = []
    for p in sorted(place.glob("bundles/*")):
        if p.suffix not in (".json", ".importing"):
            continue
        try:
            record = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError, RecursionError):
            record = None
        if not isinstance(record, dict):
            record = None
        if strict and not (record and isinstance(record.get("machine"), dict)
                           and isinstance(record.get("files"), dict)):
            raise BadInput(f"{p} is not a readable record of an imported bundle (truncated or damaged): "
                           "restore it from a copy, or remove it (the runs it imported stay), then merge "
                           "again")
        if record is not None:
            out.append((record, p.suffix == ".json"))
    return out


def hidden_runs(place: Path) -> set[str]:
    """The run ids of a machine's folder that an import has not completed (listed as ``importing`` by a
    ``.importing`` record whose bundle has no complete record): not shown until a merge completes them."""
    records = import_records(place)
    done = {r.get("bundle_id") for r, complete in records if complete}
    return {str(i) for r, complete in records if not complete and r.get("bundle_id") not in done
            for i in (r.get("importing") if isinstance(r.get("importing"), list) else [])}


def stored_runs(folder: Path | str | None = None) -> list[Path]:
    """Meta files of every run in the results store: this machine's (the folder itself) and every imported
    machine's (``machines/<id>/``), except runs of an import not completed (:func:`hidden_runs`).  A run id
    names one run (a merge refuses a second); one stored twice anyway (copied by hand) is listed once, the
    folder's own, with a warning naming both places."""
    folder = Path(folder or paths.RESULTS)
    seen: dict[str, Path] = {}
    hidden = {place: hidden_runs(place) for place in folder.glob(f"{MACHINES}/*") if place.is_dir()}
    for meta in [*sorted(folder.glob("*.meta.json")), *sorted(folder.glob(f"{MACHINES}/*/*.meta.json"))]:
        if meta.name[: -len(".meta.json")] in hidden.get(meta.parent, ()):
            continue
        if meta.name in seen:
            warn(f"run {meta.name[: -len('.meta.json')]} is stored twice, in {seen[meta.name].parent} and "
                 f"{meta.parent}: the first is read; remove one of the two")
            continue
        seen[meta.name] = meta
    return list(seen.values())


def run_hosts(folder: Path | str | None = None) -> dict[Path, str | None]:
    """meta file -> None or a machine id, for every stored run: whose run it is, decided from where pqlab
    stored it, never from its metadata alone.  None: the host its metadata records (:func:`recorded_host`)
    is proven, for a run of the folder itself (recorded here) and for a merged run whose bundle named this
    host with a host proof that verified on merge (:mod:`pqlab.store.identity`).  A machine id: any other
    merged run is its machine folder's, whatever it claims (a bundle cannot make its runs count as another
    host's, this one's least of all)."""
    folder = Path(folder or paths.RESULTS)
    out: dict[Path, str | None] = {}
    proven: dict[Path, set] = {}
    for meta_path in stored_runs(folder):
        place = meta_path.parent
        if place != folder and place not in proven:
            proven[place] = {str(r.get("run_id")) for rec, complete in import_records(place)
                             if complete and (rec.get("merge") or {}).get("host_verified") is True
                             for r in rec.get("runs") or [] if isinstance(r, dict)}
        run_id = meta_path.name[: -len(".meta.json")]
        out[meta_path] = None if place == folder or run_id in proven[place] else place.name
    return out


def recorded_host(meta: dict) -> str:
    """The host a run's metadata records: its identity override's host, else its machine id (evidence only
    where :func:`run_hosts` says so)."""
    return str((meta.get("machine_id_override") or {}).get("host_id") or meta.get("machine_id"))


def held_run_ids(folder: Path | str | None = None) -> set[str]:
    """Every run id the results store holds or is importing, visible or not: the runs of the folder itself,
    of every machine's folder, of an import in progress or interrupted (its record ``bundles/*.importing``
    lists them; merged again, it completes them).  A new run id is unique only outside this set."""
    folder = Path(folder or paths.RESULTS)
    ids = {p.name[: -len(".meta.json")]
           for p in [*folder.glob("*.meta.json"), *folder.glob(f"{MACHINES}/*/*.meta.json")]}
    for place in folder.glob(f"{MACHINES}/*"):
        ids |= {r["run_id"] for record, complete in import_records(place) if not complete
                for r in record.get("runs") or [] if isinstance(r, dict) and isinstance(r.get("run_id"), str)}
    return ids


def _stored_metas(folder: Path | str | None = None) -> list[tuple[Path, dict]]:
    """(meta path, metadata) of every readable run of the store (an unreadable one: a warning, left out)."""
    return [(p, m) for p in stored_runs(folder) if (m := stored_meta(p)) is not None]


def _of_machine(stored: list[tuple[Path, dict]], machine_id: str,
                profile: str | None) -> list[tuple[Path, dict]]:
    return [(p, m) for p, m in stored
            if m.get("machine_id") == machine_id and (profile is None or m.get("profile") == profile)]


def machine_runs(machine_id: str, profile: str | None = None, folder: Path | str | None = None) -> list[Path]:
    """Meta files of the stored runs recorded under `machine_id` (and `profile`, when given)."""
    return [p for p, _ in _of_machine(_stored_metas(folder), machine_id, profile)]
