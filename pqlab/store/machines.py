"""The results store's runs by machine: this machine's in the results folder itself, every imported machine's
under ``machines/<machine id>/`` (:mod:`pqlab.store.bundle` merges them there), and their metadata as
stored."""
from __future__ import annotations

import json
from pathlib import Path

from pqlab.core import paths
from pqlab.core.errors import warn
from pqlab.core.schema import convert_meta
from pqlab.measure import machine

#: the results store's folder of imported runs, one subfolder per machine id
MACHINES = "machines"


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
    # read in today's form, never rewritten
    return convert_meta(meta, version if isinstance(version, int) else 0)


def machine_folder(machine_id: str, folder: Path | str | None = None) -> Path:
    return Path(folder or paths.RESULTS) / MACHINES / machine.check_machine_id(machine_id, "machine id")


def stored_runs(folder: Path | str | None = None) -> list[Path]:
    """Meta files of every run in the results store: this machine's (the folder itself) and every imported
    machine's (``machines/<id>/``).  A run id names one run (a merge refuses a second); one stored twice
    anyway (copied by hand) is listed once, the folder's own, with a warning naming both places."""
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


def _of_machine(stored: list[tuple[Path, dict]], machine_id: str,
                profile: str | None) -> list[tuple[Path, dict]]:
    return [(p, m) for p, m in stored
            if m.get("machine_id") == machine_id and (profile is None or m.get("profile") == profile)]


def machine_runs(machine_id: str, profile: str | None = None, folder: Path | str | None = None) -> list[Path]:
    """Meta files of the stored runs recorded under `machine_id` (and `profile`, when given)."""
    return [p for p, _ in _of_machine(_stored_metas(folder), machine_id, profile)]
