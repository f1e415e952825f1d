"""README's "Your own comparison in 15 lines" is notebooks/own_comparison.ipynb, cell for cell; `make test`
runs the notebook under nbval (its own output folder, PQLAB_RECIPE_FROM) and this file compiles what it
exported in a two-column LaTeX document a user would write (no pqlab preamble: graphicx and pqlabtables
only)."""
from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from conftest import require_tools

from pqlab.core import paths

ROOT = Path(__file__).resolve().parents[2]
RECIPE = ROOT / "notebooks" / "own_comparison.ipynb"
SECTION = "## Your own comparison in 15 lines"
TOPIC = "my_question"


def readme_blocks() -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert SECTION in readme, f"README.md lacks the section {SECTION!r}"
    section = readme.split(SECTION, 1)[1].split("\n## ", 1)[0]
    return [b.strip() for b in re.findall(r"```python\n(.*?)```", section, re.S)]


def notebook_cells() -> list[str]:
    nb = json.loads(RECIPE.read_text(encoding="utf-8"))
    return ["".join(c["source"]).strip() for c in nb["cells"] if c["cell_type"] == "code"]


def test_the_readme_recipe_is_the_notebook_cell_for_cell():
    assert readme_blocks() == notebook_cells()


def test_the_recipe_is_fifteen_lines_of_code_at_most():
    lines = [line for block in readme_blocks() for line in block.splitlines() if line.strip()]
    assert 0 < len(lines) <= 15, f"{len(lines)} lines of code"


def test_the_recipe_names_every_backend_and_runs_in_make_test():
    code = "\n".join(notebook_cells())
    names = re.findall(r'"([A-Z][\w+-]*(?:@[\w-]+)?)"', code.split("operations=")[0])
    assert names and all("@" in n for n in names), names  # a number belongs to an implementation
    makefile = (ROOT / "Makefile").read_text()
    assert "own_comparison.ipynb" in makefile and "PQLAB_RECIPE_FROM" in makefile


#: an IEEE conference paper's text block (two columns of 3.5 in), in plain article: no class beyond
#: texlive's base
DOCUMENT = (r"""\documentclass[10pt,twocolumn]{article}
\usepackage[letterpaper,textwidth=7.16in,columnsep=0.17in,textheight=9.5in]{geometry}
\usepackage[T1]{fontenc}
\usepackage{graphicx}
\usepackage{pqlabtables}
\begin{document}
\input{my_question/numbers}
ML-DSA-65 signs in \pqlabMldsaOverEcdsaSign{} the time ECDSA-P384 takes (\pqlabMldsaOverEcdsaSignNote{}).
\begin{figure}\centering\includegraphics{FIGURES/my_question/times.col.pdf}"""
            r"""\caption{Sign and verify}\end{figure}
\input{my_question/times}
\end{document}
""")


def test_the_recipe_quick_exports_compile_in_a_two_column_document(tmp_path):
    """make test-paper sets PQLAB_RECIPE_FROM to the folder the recipe notebook wrote under nbval."""
    source = os.environ.get("PQLAB_RECIPE_FROM")
    if not source:
        pytest.skip("compiles the recipe notebook's exports: make test runs it after nbval "
                    "(PQLAB_RECIPE_FROM)")
    require_tools("pdflatex", "pdftotext")
    root = paths.export_root("quick", Path(source))
    tables, figures = root / "data" / "tables", root / "figures"
    for f in (figures / TOPIC / "times.col.pdf", tables / TOPIC / "times.tex",
              tables / TOPIC / "numbers.tex"):
        assert f.exists(), f"the recipe wrote no {f}"
    (tmp_path / "doc.tex").write_text(DOCUMENT.replace("FIGURES", str(figures)), encoding="utf-8")
    env = dict(os.environ, TEXINPUTS=os.pathsep.join([str(tables), ""]))
    for _ in range(2):
        done = subprocess.run(["pdflatex", "-no-shell-escape", "-interaction=nonstopmode", "-halt-on-error",
                               "doc.tex"], cwd=tmp_path, env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stdout[-3000:]
    log = (tmp_path / "doc.log").read_text(errors="replace")
    assert "Overfull \\hbox" not in log and "Missing character" not in log
    text = " ".join(subprocess.run(["pdftotext", str(tmp_path / "doc.pdf"), "-"], capture_output=True,
                                   text=True, check=True).stdout.split())
    quoted = (tables / TOPIC / "mldsa_over_ecdsa_sign.txt").read_text(encoding="utf-8")
    value = quoted.split("×")[0].strip()  # pdftotext moves the × and the interval's brackets around
    assert f"ML-DSA-65 signs in {value}" in text and "Sign and verify times" in text
