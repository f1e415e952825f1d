"""Notebooks show tables the way a reader sees them, and say where their files went.

* Every table a notebook shows goes through :func:`pqlab.core.formatting.table` (issue 29, "Display that
  behaves"): no code cell prints a frame as text (``.to_string(``, ``print(df.head(..))``), shows a bare
  frame as its last expression (``df[cols]``, ``df.round(3)``) or hands one to ``display`` raw.
* The exports cell of each numbered notebook (the last that calls ``export.save_*``) prints
  ``export.written(...)``: where the files actually went, not the checkout's root.
* :func:`pqlab.publish.export.written` and :class:`pqlab.publish.export.Written`: one folder, several, inside
  the checkout and outside, nothing; a ``Written`` shows itself as that line (repr and IPython's pretty
  printer) and stays a list.
"""
from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from pqlab.core import formatting, paths
from pqlab.publish import export

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
NUMBERED = [p for p in NOTEBOOKS if p.name[:2].isdigit()]
#: DataFrame methods whose result is a frame: printed, shown bare or displayed raw, they bypass
#: formatting.table
FRAME_METHODS = {"head", "tail", "round", "to_string", "drop", "fillna", "astype", "sort_values",
                 "reset_index", "set_index", "pivot_table", "pivot", "unstack", "describe", "query", "rename",
                 "assign", "merge"}


def code_cells(path: Path) -> list[tuple[str, str]]:
    """(cell id, source) of every code cell, IPython magics and shell lines blanked so that ast parses
    them."""
    nb = json.loads(path.read_text())
    cells = []
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] == "code":
            src = "".join(cell["source"])
            src = "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in src.splitlines())
            cells.append((cell.get("id", str(i)), src))
    return cells


def _is_raw_frame(node: ast.expr) -> bool:
    """An expression that is a frame as pandas shows it: a subscript (``df[cols]``, ``df[mask]``), a frame
    method's result (``df.head(8)``), or a new ``pd.DataFrame(...)``."""
    if isinstance(node, ast.Subscript):
        return True
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return node.func.attr in FRAME_METHODS or node.func.attr == "DataFrame"
    return False


def raw_tables(src: str) -> list[str]:
    """What in a cell shows a table without formatting.table, as readable lines."""
    problems = []
    if ".to_string(" in src:
        problems.append("calls .to_string(")
    tree = ast.parse(src)
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in ("print", "display")):
            for arg in node.args:
                if _is_raw_frame(arg):
                    problems.append(f"{node.func.id}({ast.unparse(arg)[:60]}...)")
    if tree.body and isinstance(tree.body[-1], ast.Expr) and _is_raw_frame(tree.body[-1].value):
        problems.append(f"ends with a bare frame: {ast.unparse(tree.body[-1].value)[:60]}")
    return problems


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_table_a_notebook_shows_goes_through_formatting_table(path):
    found = [f"cell {cid}: {problem}" for cid, src in code_cells(path) for problem in raw_tables(src)]
    assert not found, (f"{path.name} shows tables raw (use display(formatting.table(df, columns))):\n"
                       + "\n".join(found))


def _prints_written(src: str) -> bool:
    for node in ast.walk(ast.parse(src)):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print"
                and any(isinstance(a, ast.Call) and isinstance(a.func, ast.Attribute)
                        and a.func.attr == "written"
                        and isinstance(a.func.value, ast.Name) and a.func.value.id == "export"
                        for a in node.args)):
            return True
    return False


@pytest.mark.parametrize("path", NUMBERED, ids=lambda p: p.stem)
def test_the_exports_cell_prints_where_the_files_went(path):
    exporting = [(cid, src) for cid, src in code_cells(path) if "export.save_" in src]
    assert exporting, f"{path.name} exports nothing"
    cid, src = exporting[-1]
    assert _prints_written(src), (f"{path.name} cell {cid} (the last that calls export.save_*) does not "
                                  "print(export.written(files)): say where the files went")


def test_the_static_check_catches_each_raw_form():
    for src in ("print(df.to_string(index=False))", "print(df.head(8))", "df[['a', 'b']]",
                "df[df['x'] > 1]", "display(df.round(3))", "display(pd.DataFrame(rows).drop(columns=['i']))",
                "x = 1\ndf.round(2)"):
        assert raw_tables(src), src
    for src in ("display(formatting.table(df, ['a']))", "formatting.table(df)", "print(f'{n} rows')",
                "x = df[['a']]", "display(Markdown(study.describe(df)))", "print(export.written(paths))"):
        assert not raw_tables(src), src
    assert _prints_written("paths += export.save_numbers(n, T, runs=[])\nprint(export.written(paths))")
    assert not _prints_written('print(f"{len(paths)} files written under {export.paths.OUTPUT}")')


# ----- export.written / Written -----------------------------------------------------------------------------


def test_one_folder_lists_the_names(tmp_path):
    files = [tmp_path / "t" / n for n in ("a.csv", "a.md", "a.tex")]
    assert export.written(files) == f"3 files written in {tmp_path / 't'}/: a.csv, a.md, a.tex"
    assert export.written(files[:1]) == f"1 file written in {tmp_path / 't'}/: a.csv"


def test_many_names_in_one_folder_are_cut_short(tmp_path):
    files = [tmp_path / f"n{i:02d}.txt" for i in range(11)]
    text = export.written(files)
    assert text.startswith(f"11 files written in {tmp_path}/: n00.txt, ") and text.endswith("and 3 more")
    assert "n08.txt" not in text


def test_several_folders_count_per_folder_under_the_folder_they_share(tmp_path):
    files = [tmp_path / "figures" / "t" / "x.pdf", tmp_path / "data" / "tables" / "t" / "y.csv",
             tmp_path / "data" / "tables" / "t" / "y.md"]
    assert export.written(files) == (f"3 files written under {tmp_path}/: figures/t/ (1), data/tables/t/ (2)")


def test_paths_in_the_checkout_are_shown_from_its_root():
    folder = paths.ROOT / "build" / "interactive" / "data" / "tables" / "t"
    assert export.written([folder / "a.csv"]) == "1 file written in build/interactive/data/tables/t/: a.csv"
    files = [paths.ROOT / "build" / "quick" / "figures" / "t" / "f.pdf", folder / "a.csv"]
    assert (export.written(files) == "2 files written under build/: quick/figures/t/ (1), "
                                     "interactive/data/tables/t/ (1)")
    assert str(paths.ROOT) not in export.written(files)


def test_paths_outside_the_checkout_are_shown_absolute(tmp_path):
    assert not tmp_path.resolve().is_relative_to(paths.ROOT.resolve())
    assert export.written([tmp_path / "a.csv"]).startswith(f"1 file written in {tmp_path}/")


def test_nothing_written():
    assert export.written([]) == "no files written"
    assert repr(export.Written()) == "no files written"


def test_written_shows_itself_as_the_line_and_stays_a_list(tmp_path):
    from IPython.lib.pretty import pretty

    a, b, c = (tmp_path / n for n in ("a.csv", "b.csv", "c.csv"))
    w = export.Written([a])
    assert repr(w) == pretty(w) == export.written([a])
    w += [b]  # notebooks gather the files of several exports: paths += export.save_table(...)
    assert isinstance(w, export.Written) and list(w) == [a, b]
    assert repr(w) == pretty(w) == export.written([a, b])
    both = w + export.Written([c])
    assert (list(both) == [a, b, c]
            and export.written(both) == f"3 files written in {tmp_path}/: a.csv, b.csv, c.csv")
    assert w[0] == a and len(w) == 2 and [p.name for p in w] == ["a.csv", "b.csv"]


# ----- the study functions behind the converted tables ------------------------------------------------------


def test_the_studys_published_memory_values_are_shown_exactly_as_published():
    """Notebook 03: one column holds values in several units (ms, bytes), so none may round them."""
    from pqlab.core.references import load_reference
    from pqlab.studies import memory_footprint

    reference = load_reference(memory_footprint.REFERENCE_TABLE)
    shown = memory_footprint.published_table(reference)
    values = shown.frame["Value"].tolist()
    present = reference[reference["value"].notna()]["value"]
    assert values == [format(v, ".10g") for v in present] and len(values) == len(present)
    assert "nan" not in shown.to_string() and "None" not in shown.to_string()


def test_round2_recomputed_times_share_one_unit_and_counts_read_as_text():
    """Notebook 04: the published and the recomputed verify time in one unit, so that they compare at a
    glance."""
    from pqlab.core.references import load_reference
    from pqlab.studies import round2_study

    recomputed = round2_study.recompute_reference(load_reference(round2_study.REFERENCE_TABLE))
    for matching, rows in ((True, None), (False, 8)):
        shown = round2_study.recomputed_table(recomputed, matching=matching, rows=rows)
        times = [u for c, u in zip(shown.columns, shown.units) if c.kind == "time"]
        assert len(times) == 2 and len(set(times)) == 1
        expected = int(recomputed["verify_time_matches"].sum()) if matching else rows
        assert len(shown) == expected
    counts = round2_study.count_reference_matches(recomputed)
    text = round2_study.counts_markdown(counts)
    assert text.count("\n- ") == 4 and f": {counts['rows']}" in text
    assert "True" not in text and "False" not in text
    family = formatting.table(counts["per_family"])
    assert family.headers[0] == "Family" and len(family) == len(counts["per_family"])


def test_time_power_deviations_keep_three_significant_digits():
    """Notebook 05: deviations well under a percent must not show as 0.0 (the percent kind's one decimal)."""
    from pqlab.core.references import load_reference
    from pqlab.studies.energy_pi4 import published as pi4

    check = pi4.time_power_check(load_reference(pi4.REFERENCE_NAME))
    shown = pi4.time_power_table(check)
    cells = shown.frame["Deviation (%)"].map(float)
    assert cells.to_numpy() == pytest.approx(check["deviation_pct"].to_numpy(), rel=5e-3, abs=1e-12)
    assert set(shown.frame["Beyond rounding"]) <= {"yes", "no"}
    # published, time x power
    assert len({u for c, u in zip(shown.columns, shown.units) if c.kind == "energy"}) == 1


def test_energies_here_are_a_formatted_table_with_their_unit():
    """Notebook 05: the energies measured or modelled here, one column per basis, with the unit in each
    header, missing message lengths as a dash, no index tuples and no "nan"."""
    import pandas as pd

    from pqlab.runners.energy import NoPowerSource
    from pqlab.studies import energy_pi4

    ours = pd.DataFrame({"algorithm": ["Ed25519", "Ed25519", "ML-KEM-768", "ML-KEM-768"],
                         "operation": ["sign", "sign", "encaps", "encaps"],
                         "message_bytes": [100, 100, float("nan"), float("nan")],
                         "basis": ["measured (net)", "measured (gross)"] * 2,
                         "energy_uj": [12.5, 40.1, 3.2, 9.9]})
    shown = energy_pi4.describe_energy_here(ours, NoPowerSource("none"), []).split("\n\n")[1]
    header = shown.splitlines()[0]
    assert header.count("µJ") == 2 and "Message" in header and "B\\]" in header
    # ML-KEM-768: no message
    assert "nan" not in shown and "('" not in shown and "–" in shown.splitlines()[-1]
