"""What the report reads: a profile's executed notebooks (their papermill metadata, outputs and widgets) and
the export sidecars each notebook's exports wrote, with the files they list (:mod:`pqlab.publish.report`
renders them).
"""
from __future__ import annotations

import html as _html
import json
import re
import shutil
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from pqlab.publish.report_context import clean_output, executed_parameters

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
IMAGE_TYPES = ("image/png", "image/jpeg", "image/svg+xml", "image/gif")
#: a file name a sidecar may list (copied into the report): no path, no leading dot, no line break (matched
#: whole, with fullmatch)
_SAFE_NAME = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9_.+-]*\Z")


class ReportError(ValueError):
    """A folder the report cannot be made from or checked in; says why in one line."""


@dataclass
class Notebook:
    """What the index says about one executed notebook (read from its papermill metadata and its exports)."""

    stem: str
    title: str
    ended: str
    started: str
    seconds: float | None
    cells: int
    parameters: dict  #: name -> its value as executed (repr), the stored ones and those papermill injected
    errors: int
    images: int
    exports: list[dict] = field(default_factory=list)
    injected: set = field(default_factory=set)  #: the parameters papermill injected


def executed_notebooks(folder: Path) -> list[Path]:
    return sorted(Path(folder).glob("[0-9][0-9]_*.ipynb"))


def _title(nb) -> str:
    """The first line of the first markdown cell, without its heading marks."""
    for cell in nb.cells:
        if cell.cell_type == "markdown" and cell.source.strip():
            return cell.source.strip().splitlines()[0].lstrip("#").strip()
    return ""


def _outputs(nb):
    for cell in nb.cells:
        yield from cell.get("outputs", [])


def count_errors(nb) -> int:
    """Error outputs in `nb`, plus one when papermill recorded an exception without one."""
    errors = sum(o.get("output_type") == "error" for o in _outputs(nb))
    return errors or int(bool(nb.metadata.get("papermill", {}).get("exception")))


def count_images(nb) -> int:
    return sum(any(t in o.get("data", {}) for t in IMAGE_TYPES) for o in _outputs(nb))


def widget_text(model_id: str, state: dict) -> str | None:
    """The text a widget showed when the notebook was saved (tqdm's bar: description, bar, count and rate),
    from the widget state papermill stored; None when its model was not stored."""
    model = state.get(model_id)
    if not isinstance(model, dict):
        return None
    own = model.get("state") or {}
    parts = [own] if "children" not in own else [
        (state.get(str(c).removeprefix("IPY_MODEL_")) or {}).get("state") or {} for c in own["children"]]
    texts = []
    for part in parts:
        value, top = part.get("value"), part.get("max")
        if isinstance(value, int | float) and isinstance(top, int | float) and top > 0:
            filled = max(0, min(10, round(10 * value / top)))
            texts.append("|" + "█" * filled + " " * (10 - filled) + "|")
        elif isinstance(value, str):
            texts.append(_html.unescape(re.sub(r"<[^>]*>", "", value)))
    return "".join(texts).replace("\u2007", " ").strip() or None


def prepare(nb):
    """`nb` as the report shows it: each widget view replaced by the text of its final state (a static page
    has no widget manager), the widget state dropped (the template would load a manager from a CDN for it),
    every output without local paths and warnings without their source line
    (:func:`pqlab.publish.report_context.clean_output`)."""
    state = (nb.metadata.pop("widgets", None) or {}).get(WIDGET_STATE, {}).get("state", {})
    for output in _outputs(nb):
        clean_output(output)
        data = output.get("data", {})
        if WIDGET_VIEW in data:
            view = data.pop(WIDGET_VIEW)
            text = widget_text(str(view.get("model_id", "")), state)
            if text is None:
                shown = data.get("text/plain", "")
                shown = "".join(shown) if isinstance(shown, list) else shown
                text = f"{shown} (a widget; its final state was not saved)"
            data["text/plain"] = text
    return nb


def read_notebook(path: Path):
    """The executed notebook at `path`; one that cannot be read is refused in one line."""
    import nbformat

    try:
        return nbformat.read(path, as_version=4)
    except (OSError, ValueError) as exc:
        raise ReportError(f"{path} cannot be read as a notebook ({exc}): execute it again (make "
                          "reproduce)") from None


def notebook_facts(path: Path, nb) -> Notebook:
    """What the index says about `nb` (read from `path`), its exports not yet collected."""
    run = nb.metadata.get("papermill", {})
    cells = sum(c.get("metadata", {}).get("papermill", {}).get("duration") is not None for c in nb.cells)
    parameters, injected = executed_parameters(nb)
    return Notebook(stem=path.stem, title=_title(nb), ended=run.get("end_time") or "",
                    started=run.get("start_time") or "", seconds=run.get("duration"), cells=cells,
                    parameters=parameters, errors=count_errors(nb), images=count_images(nb),
                    injected=injected)


# ----- exports --------------------------------------------------------------------------------------------

def _timestamp(iso: str) -> float | None:
    try:
        return datetime.fromisoformat(iso).timestamp()
    except (TypeError, ValueError):
        return None


def collect_exports(exports: Path, book: Notebook, out: Path) -> tuple[list[dict], int, list[str]]:
    """The export sidecars of `book` under `exports` (figures/STEM/, data/tables/STEM/), each with the files
    it lists copied to `out`/exports/{figures,tables}/STEM/; (sidecars, files copied, notes)."""
    copied, notes, found = 0, [], []
    started = _timestamp(book.started)
    for kind, folder in (("figures", exports / "figures" / book.stem),
                         ("tables", exports / "data" / "tables" / book.stem)):
        for sidecar in sorted(folder.glob("*.export.json")) if folder.is_dir() else []:
            try:
                data = json.loads(sidecar.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                notes.append(f"{sidecar} is not readable ({exc}): left out")
                continue
            if not isinstance(data, dict):
                notes.append(f"{sidecar} is not an export record: left out")
                continue
            target = out / "exports" / kind / book.stem
            target.mkdir(parents=True, exist_ok=True)
            links, absent = [], []
            listed = data.get("files") if isinstance(data.get("files"), list) else []
            for name in [sidecar.name, *listed]:
                src = folder / str(name)
                if not _SAFE_NAME.fullmatch(str(name)) or src.is_symlink() or not src.is_file():
                    absent.append(str(name))
                    continue
                shutil.copyfile(src, target / src.name)
                copied += 1
                links.append(f"exports/{kind}/{book.stem}/{src.name}")
            mtime = sidecar.stat().st_mtime
            found.append({**data, "kind": kind, "sidecar": links[0] if links else "", "links": links[1:],
                          "absent": absent, "stale": started is not None and mtime < started,
                          "folder": str(folder)})
    return found, copied, notes
