"""Notebook durations: read from papermill's metadata, written to durations.csv, shown in README.md."""
from __future__ import annotations

import json
import re

import pytest

from pqlab.core.paths import ROOT
from pqlab.publish import durations


def executed(folder, stem, seconds, cells=(1.5, 2.0), end="2026-11-22T23:45:53+00:00"):
    """A notebook as papermill leaves it: the run's duration and one per cell."""
    nb = {"metadata": {"papermill": {"duration": seconds, "end_time": end}},
          "cells": [{"cell_type": "code", "metadata": {"papermill": {"duration": c}}} for c in cells]
          + [{"cell_type": "markdown", "metadata": {}}]}
    path = folder / f"{stem}.ipynb"
    path.write_text(json.dumps(nb))
    return path


@pytest.fixture
def machine(monkeypatch):
    monkeypatch.setattr(durations, "describe_machine", lambda: ("Test CPU 3000", 2))


def test_write_and_read_durations(tmp_path, machine):
    executed(tmp_path, "01_first", 52.546727)
    executed(tmp_path, "02_second", 961.04, cells=(900.0,))
    (tmp_path / "nbval_scratch.ipynb").write_text("{}")  # not a numbered notebook: ignored
    rows = durations.write_durations(tmp_path)
    assert [r["notebook"] for r in rows] == ["01_first", "02_second"]
    text = (tmp_path / "durations.csv").read_text().splitlines()
    assert text[0] == "notebook,seconds,cells,executed_at,machine,cores"
    assert text[1] == "01_first,52.5,2,2026-11-22T23:45:53+00:00,Test CPU 3000,2"
    back = durations.read_durations(tmp_path)
    assert back[1]["seconds"] == 961.0 and back[1]["cores"] == 2 and back[1]["cells"] == "1"
    assert durations.describe_total(back, "full") == (
        "make reproduce (full): notebooks 01–02 took 16 min 54 s in total (1,014 s, the sum of each "
        "notebook's last run) on Test CPU 3000, 2 cores")


def test_a_notebook_papermill_did_not_run_is_refused(tmp_path):
    (tmp_path / "01_plain.ipynb").write_text(json.dumps({"metadata": {}, "cells": []}))
    with pytest.raises(durations.DurationsError, match="no papermill duration"):
        durations.notebook_duration(tmp_path / "01_plain.ipynb")


def test_the_command_says_what_is_missing_in_one_line(tmp_path, capsys):
    assert durations.main([str(tmp_path)]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "no executed notebooks" in err and "make reproduce" in err
    assert durations.read_durations(tmp_path) == []


def test_the_command_writes_the_file_and_prints_the_total(tmp_path, capsys, machine):
    executed(tmp_path, "01_first", 142.0)
    assert durations.main([str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "01_first" in out and "2 min 22 s" in out and out.strip().endswith("Test CPU 3000, 2 cores")


README = f"""# title

{durations.BEGIN}
| notebook | question | quick / full time |
|---|---|---|
| `01_first.ipynb` | Why? | old |
| `02_second.ipynb` | How? | old |

old note
{durations.END}

## next
"""


def rows(cores=2, **seconds):
    return [{"notebook": k, "seconds": v, "executed_at": "2026-11-23T00:10:00+00:00", "machine": "Test CPU",
             "cores": cores} for k, v in seconds.items()]


def test_render_readme_fills_the_time_column_from_both_profiles():
    text = durations.render_readme(README, {"quick": rows(**{"01_first": 50.0, "02_second": 70.0}),
                                            "full": rows(**{"01_first": 142.0})})
    assert "| notebook | question | quick / full time on 2 cores |" in text
    assert "| `01_first.ipynb` | Why? | 50 s / 2 min 22 s |" in text
    assert "| `02_second.ipynb` | How? | 1 min 10 s / — |" in text
    assert "quick: Test CPU, 2 cores, 2026-11-23; full: Test CPU, 2 cores, 2026-11-23" in text
    assert "old note" not in text and text.startswith("# title\n") and text.endswith("\n## next\n")
    assert durations.render_readme(text, {"quick": rows(**{"01_first": 50.0, "02_second": 70.0}),
                                          "full": rows(**{"01_first": 142.0})}) == text  # stable


def test_render_readme_without_data_or_with_mixed_machines():
    text = durations.render_readme(README, {"quick": [], "full": []})
    assert "| quick / full time |" in text and "| `01_first.ipynb` | Why? | — / — |" in text
    assert "quick: not measured yet; full: not measured yet" in text
    mixed = durations.render_readme(README, {"quick": rows(cores=2, **{"01_first": 5.0}),
                                             "full": rows(cores=4, **{"01_first": 9.0})})
    assert "| quick / full time |" in mixed  # no single core count to name


def test_render_readme_refuses_a_readme_without_markers_or_column():
    with pytest.raises(durations.DurationsError, match="marker lines"):
        durations.render_readme("# no table\n", {})
    with pytest.raises(durations.DurationsError, match="no column headed"):
        durations.render_readme(README.replace("quick / full time", "time"), {})


def test_the_repository_readme_table_lists_every_notebook_with_a_time_cell():
    text = durations.render_readme((ROOT / "README.md").read_text(), {"quick": [], "full": []})
    region = text.split(durations.BEGIN)[1].split(durations.END)[0]
    listed = set(re.findall(r"^\| `(\d\d_\w+)\.ipynb` \|.*\| — / — \|$", region, re.M))
    assert listed == {p.stem for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")}
