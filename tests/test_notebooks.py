"""The notebook inventory: outputs stripped, a literal-only parameters cell, full parameters,
and every notebook in `make reproduce`, in the nbval run of `make test`, and in the README."""
import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import nbval_prepare  # noqa: E402


def load(path):
    return json.loads(path.read_text())


def test_there_are_notebooks():
    assert NOTEBOOKS, "no notebooks/NN_topic.ipynb found"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_committed_notebook_has_no_outputs(path):
    dirty = [c.get("id") for c in load(path)["cells"]
             if c["cell_type"] == "code" and (c.get("outputs") or c.get("execution_count"))]
    assert not dirty, (f"{path.name}: cells {dirty} carry outputs or execution counts; strip them before "
                       "committing")


def parameters_cell(nb):
    cells = [c for c in nb["cells"] if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(cells) == 1, f"expected exactly one cell tagged 'parameters', found {len(cells)}"
    return cells[0]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_parameters_cell_holds_literal_values_only(path):
    source = "".join(parameters_cell(load(path))["source"])
    names = []
    for node in ast.parse(source).body:
        assert (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)), \
            f"{path.name}: the parameters cell may only assign names: {ast.unparse(node)}"
        ast.literal_eval(node.value)  # raises for anything that is not a literal
        names.append(node.targets[0].id)
    assert names, f"{path.name}: empty parameters cell"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_papermill_reads_every_parameter(path):
    """papermill parses each line of the parameters cell itself: a comment holding " = " made it skip the line
    (07's local_builds and reference_platform), warn "Passed unknown parameter" when the full run set it, and
    leave it out of `papermill --help-notebook`."""
    import papermill

    source = "".join(parameters_cell(load(path))["source"])
    names = {n.targets[0].id for n in ast.parse(source).body}
    missing = names - set(papermill.inspect_notebook(str(path)))
    assert not missing, (f"{path.name}: papermill cannot read the parameters {sorted(missing)}: reword their "
                         "comments")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_full_parameters_exist_and_name_known_parameters(path):
    params = ROOT / "notebooks" / "params" / f"{path.stem}.yaml"
    assert params.exists(), f"{params} is missing: `make reproduce` (PROFILE=full) needs it"
    full = yaml.safe_load(params.read_text()) or {}
    source = "".join(parameters_cell(load(path))["source"])
    known = {n.targets[0].id for n in ast.parse(source).body}
    assert set(full) <= known, f"{params.name} sets unknown parameters {sorted(set(full) - known)}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_uses_the_project_kernel(path):
    assert load(path)["metadata"]["kernelspec"]["name"] == "pqlab"


def test_every_notebook_is_in_make_reproduce():
    for profile in ("quick", "full"):
        out = subprocess.run(["make", "-n", "-B", "reproduce", f"PROFILE={profile}"], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout
        for path in NOTEBOOKS:
            assert f"notebooks/{path.name}" in out and f"build/{profile}/{path.name}" in out, \
                f"{path.name} is not executed by `make reproduce PROFILE={profile}`"
        if profile == "full":
            for path in NOTEBOOKS:
                assert f"notebooks/params/{path.stem}.yaml" in out


def test_every_notebook_is_prepared_for_nbval(tmp_path):
    prepared = {p.name for p in nbval_prepare.prepare(tmp_path)}
    assert prepared == {p.name for p in NOTEBOOKS}
    for path in NOTEBOOKS:
        nb = load(tmp_path / path.name)
        checked = nbval_prepare.checked_cells(nb)
        assert checked, f"{path.name} has no cell tagged {nbval_prepare.TAG}: nbval would check nothing in it"
        assert all(c["outputs"] for c in checked), f"{path.name}: a checked cell has an empty expected output"


def test_make_test_runs_nbval_on_the_prepared_notebooks():
    makefile = (ROOT / "Makefile").read_text()
    assert ("nbval_prepare.py build/nbval" in makefile and "--nbval-lax" in makefile
            and "build/nbval" in makefile)


def test_readme_indexes_every_notebook():
    readme = (ROOT / "README.md").read_text()
    missing = [p.name for p in NOTEBOOKS if p.name not in readme]
    assert not missing, f"README.md's notebook index lacks {missing}"
