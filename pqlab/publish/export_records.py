"""What every export records and returns: the files it wrote (:class:`Written`, shown as where they went), the
profile and runs it shows (:func:`provenance`, in a sidecar NAME.export.json) and the safe names it writes."""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

from pqlab.core import paths
from pqlab.core.errors import BadInput
from pqlab.core.files import atomic_write_text
from pqlab.publish.context import as_runs, run_context
from pqlab.publish.rerun import sidecar_command

#: a topic or file name an export writes: letters, digits, "_", "-" or "." (no path, no leading dot, no line
#: break: matched whole, with fullmatch)
SAFE_NAME = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9_.-]*\Z")
#: the longest topic or name an export writes: with its longest suffix (".export.json") and the name of the
#: temporary file it is first written to (pqlab.core.files: the host name, process id ...), a file name
#: within the 255 bytes a file system allows
MAX_NAME = 120


class Written(list):
    """The paths an export wrote (a list); a notebook shows it as :func:`written` says, not as a list of
    paths."""

    def __repr__(self) -> str:  # IPython's pretty printer uses it too: a subclass's own __repr__ comes first
        return written(self)


def _shown(path: Path) -> str:
    """`path` relative to the checkout (as a user finds it), else as it is."""
    try:
        return str(Path(path).resolve().relative_to(paths.ROOT.resolve()))
    except ValueError:
        return str(path)


def written(files) -> str:
    """Where files went, in one line: "3 files written in build/interactive/data/tables/x/: a.csv, a.md,
    a.tex", or, over several folders, their count per folder under the folder they share."""
    files = [Path(f) for f in files]
    if not files:
        return "no files written"
    folders = list(dict.fromkeys(f.parent for f in files))
    noun = "file" if len(files) == 1 else "files"
    if len(folders) == 1:
        names = [f.name for f in files]
        shown = ", ".join(names[:8]) + (f" and {len(names) - 8} more" if len(names) > 8 else "")
        return f"{len(files)} {noun} written in {_shown(folders[0])}/: {shown}"
    common = Path(os.path.commonpath([str(f) for f in folders]))
    counts = {d: sum(f.parent == d for f in files) for d in folders}
    if common == Path(common.anchor):  # nothing shared but the root: each folder as a user finds it
        return f"{len(files)} {noun} written: " + ", ".join(f"{_shown(d)}/ ({n})" for d, n in counts.items())
    parts = ", ".join(f"{d.relative_to(common)}/ ({n})" for d, n in counts.items())
    return f"{len(files)} {noun} written under {_shown(common)}/: {parts}"


def check_name(topic: str, name: str) -> None:
    """Refuse, before anything is written, a topic or name that is no safe file name (:data:`SAFE_NAME`) or
    is longer than :data:`MAX_NAME` characters (one line, :class:`pqlab.core.errors.BadInput`)."""
    for label, value in (("topic", topic), ("name", name)):
        if not isinstance(value, str) or not SAFE_NAME.fullmatch(value):
            raise BadInput(f"{label} {value!r} is not a safe file name: use letters, digits, '_', '-' or '.' "
                           "(for example '01_aes_rsa_sphincs')")
        if len(value) > MAX_NAME:
            raise BadInput(f"{label} {value[:40]!r}… is {len(value)} characters, too long for a file name: "
                           f"shorten it to {MAX_NAME} at most (pqlab.core.escaping.data_key bounds a key "
                           "made of data)")


def provenance(runs) -> dict:
    """What every export records: the profile, the run ids and the run context (pqlab.publish.context)."""

    runs = as_runs(runs)
    return {"profile": paths.PROFILE, "runs": list(dict.fromkeys(r.run_id for r in runs)),
            "context": [list(p) for p in run_context(runs)]}


def export_stamp(prov: dict) -> str:
    """One line: profile and runs."""
    return f"pqlab export; profile {prov['profile']}; runs {', '.join(prov['runs']) or 'none'}"


def write_sidecar(base: Path, what: str, topic: str, name: str, prov: dict, files: list[Path],
                  **extra) -> Path:
    """Write BASE.export.json: what was exported (`what`, `topic`, `name`), its provenance (`prov`), the files
    written, the command that re-runs it ("command": ``python -m pqlab rerun TOPIC --profile P``, None for
    an interactive run or a topic that is no notebook of the checkout; pqlab.publish.rerun) and `extra`
    fields."""
    data = {"export": what, "topic": topic, "name": name, **prov, "files": [p.name for p in files],
            "command": sidecar_command(topic), **extra}
    return atomic_write_text(f"{base}.export.json", json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def read_sidecars(root: Path) -> list[dict]:
    """Every export sidecar under `root` (an export tree's figures/ or data/tables/), with its path."""
    return [dict(json.loads(p.read_text(encoding="utf-8")), path=str(p))
            for p in sorted(Path(root).rglob("*.export.json"))]

