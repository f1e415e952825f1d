"""How long each notebook takes, as data: papermill's recorded times in ``build/<profile>/durations.csv``.

papermill stores in every notebook it executes each cell's duration and the whole run's
(``metadata.papermill.duration``, seconds of wall time).  :func:`write_durations` collects the
run times of one build folder into ``durations.csv`` (``make reproduce`` calls it and prints the
total); :func:`update_readme` writes the time column of README.md's notebook table from the
quick and full profiles' files (``make readme-durations``).

    python -m pqlab.publish.durations build/full  # write build/full/durations.csv, print each and the total
    python -m pqlab.publish.durations --readme    # README.md's time column from build/*/durations.csv

Columns: ``notebook`` (stem), ``seconds`` (papermill's duration of the whole run), ``cells`` (how
many cells ran), ``executed_at`` (papermill's end time), ``machine`` and ``cores`` (the machine that
wrote the file, right after the run).
"""
from __future__ import annotations

import csv
import io
import json
import re
import sys
from pathlib import Path

from pqlab.core.files import atomic_write_text
from pqlab.core.paths import BUILD, ROOT
from pqlab.core.quantities import fmt_duration
from pqlab.measure.machine import cpu
from pqlab.publish.readme import ReadmeError, markers, region, replace_region

COLUMNS = ("notebook", "seconds", "cells", "executed_at", "machine", "cores")
FILENAME = "durations.csv"
PROFILES = ("quick", "full")
#: README.md's generated region: the notebook table and one line on where its times come from.
BEGIN, END = markers("durations", "make readme-durations")
TIME_HEADER = "quick / full time"


class DurationsError(ValueError):
    """A build folder or README.md that durations cannot be read from or written to; says why."""


def notebook_duration(path: Path) -> dict:
    """The row of one executed notebook, from the times papermill recorded in it."""
    meta = json.loads(Path(path).read_text())
    run = meta.get("metadata", {}).get("papermill", {})
    if run.get("duration") is None:
        raise DurationsError(f"{path} has no papermill duration: execute it with papermill (make reproduce)")
    cells = [c for c in meta.get("cells", [])
             if c.get("metadata", {}).get("papermill", {}).get("duration") is not None]
    return {"notebook": Path(path).stem, "seconds": round(float(run["duration"]), 1), "cells": len(cells),
            "executed_at": run.get("end_time") or ""}


def describe_machine() -> tuple[str, int]:
    """(CPU model, usable cores) of this machine."""

    info = cpu()
    return info["model"], int(info["usable_cores"] or info["logical_cores"] or 0)


def write_durations(folder: Path | str) -> list[dict]:
    """Write `folder`/durations.csv from the executed notebooks in `folder`; return its rows."""
    folder = Path(folder)
    notebooks = sorted(folder.glob("[0-9][0-9]_*.ipynb"))
    if not notebooks:
        raise DurationsError(f"{folder} holds no executed notebooks (NN_topic.ipynb): run make reproduce "
                             "first")
    model, cores = describe_machine()
    rows = [notebook_duration(nb) | {"machine": model, "cores": cores} for nb in notebooks]
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    atomic_write_text(folder / FILENAME, text.getvalue())
    return rows


def read_durations(folder: Path | str) -> list[dict]:
    """The rows of `folder`/durations.csv ([] when there is none)."""
    path = Path(folder) / FILENAME
    if not path.exists():
        return []
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    for row in rows:
        row["seconds"], row["cores"] = float(row["seconds"]), int(row["cores"])
    return rows


def describe_total(rows: list[dict], profile: str) -> str:
    """One line: how many notebooks, their total time, the machine."""
    total = sum(r["seconds"] for r in rows)
    first, last = rows[0]["notebook"][:2], rows[-1]["notebook"][:2]
    return (f"make reproduce ({profile}): notebooks {first}–{last} took {fmt_duration(total)} in total "
            f"({total:,.0f} s, the sum of each notebook's last run) on {rows[0]['machine']}, "
            f"{rows[0]['cores']} cores")


def _profile_line(profile: str, rows: list[dict]) -> str:
    if not rows:
        return f"{profile}: not measured yet"
    dates = sorted(r["executed_at"][:10] for r in rows if r["executed_at"])
    when = f", {dates[-1]}" if dates else ""
    return f"{profile}: {rows[0]['machine']}, {rows[0]['cores']} cores{when}"


def render_readme(text: str, durations: dict[str, list[dict]]) -> str:
    """`text` (README.md) with its notebook table's time column and the line under it rewritten."""
    try:
        lines = [line for line in region(text, BEGIN, END).strip("\n").splitlines() if line.startswith("|")]
    except ReadmeError as exc:
        raise DurationsError(f"{exc}, around the notebook table") from exc
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    column = next((i for i, c in enumerate(header) if c.startswith(TIME_HEADER)), None)
    if column is None:
        raise DurationsError(f"README.md's notebook table has no column headed {TIME_HEADER!r}")
    cores = {r["cores"] for rows in durations.values() for r in rows}
    header[column] = TIME_HEADER + (f" on {cores.pop()} cores" if len(cores) == 1 else "")
    by_profile = {p: {r["notebook"]: r["seconds"] for r in durations.get(p, [])} for p in PROFILES}
    table = ["| " + " | ".join(header) + " |", lines[1]]
    for line in lines[2:]:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        stem = re.sub(r"\.ipynb$", "", cells[0].strip("`"))
        times = [by_profile[p].get(stem) for p in PROFILES]
        cells[column] = " / ".join("—" if t is None else fmt_duration(t) for t in times)
        table.append("| " + " | ".join(cells) + " |")
    source = "; ".join(_profile_line(p, durations.get(p, [])) for p in PROFILES)
    note = (f"Times: papermill's record of each notebook's last `make reproduce` run, from "
            f"`build/<profile>/{FILENAME}` ({source}); — where not measured.")
    return replace_region(text, BEGIN, END, "\n".join(table) + f"\n\n{note}")


def update_readme(readme: Path | str = ROOT / "README.md", build: Path | str = BUILD) -> Path:
    """Rewrite README.md's generated notebook-table region from build/{quick,full}/durations.csv."""
    readme = Path(readme)
    durations = {p: read_durations(Path(build) / p) for p in PROFILES}
    return atomic_write_text(readme, render_readme(readme.read_text(), durations))


def main(argv: list[str]) -> int:
    try:
        if argv == ["--readme"]:
            print(f"rewrote the notebook table's times in {update_readme()}")
            return 0
        if len(argv) == 1:
            folder = Path(argv[0])
            rows = write_durations(folder)
            for r in rows:
                print(f"  {r['notebook']:<28} {fmt_duration(r['seconds']):>14}")
            print(describe_total(rows, folder.name))
            return 0
    except DurationsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
