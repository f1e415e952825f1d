"""Notebooks are stored without outputs whoever saves them (issue 29): .gitattributes names nbstripout as
git's filter for notebooks, `make setup` (python -m pqlab.app.provision notebook-filter) configures it, and
every committed notebook is exactly what the filter makes of it, so a notebook run and saved in JupyterLab
leaves `git status` clean."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from pqlab.app import provision

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def strip(path: Path) -> bytes:
    return subprocess.run([*provision.nbstripout_command(), "-t"], input=path.read_bytes(),
                          capture_output=True, check=True).stdout


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_committed_notebook_is_what_the_filter_makes_of_it(path):
    """Else a save in JupyterLab (which rewrites the JSON) would show as a change even without outputs: write
    notebooks with nbformat (sorted keys) or pass them through the filter's command."""
    assert strip(path) == path.read_bytes(), (f"{path.name} is not in nbstripout's form: run "
                                              f"{' '.join(provision.nbstripout_command())} "
                                              f"{path.relative_to(ROOT)}")


def test_gitattributes_names_the_filter_for_notebooks():
    out = subprocess.run(["git", "-C", str(ROOT), "check-attr", "filter", "diff", "--",
                          "notebooks/01_aes_rsa_sphincs.ipynb"],
                         capture_output=True, text=True, check=True).stdout
    assert "filter: nbstripout" in out and "diff: ipynb" in out


def with_outputs(nb: dict) -> dict:
    """`nb` as a kernel and JupyterLab leave it: outputs, execution counts, the kernel's language_info."""
    nb = json.loads(json.dumps(nb))
    for i, cell in enumerate(c for c in nb["cells"] if c["cell_type"] == "code"):
        cell["outputs"] = [{"output_type": "stream", "name": "stdout", "text": ["measured\n"]}]
        cell["execution_count"] = i + 1
    nb["metadata"]["language_info"] = {"name": "python", "version": "3.11.2", "mimetype": "text/x-python"}
    return nb


@pytest.mark.parametrize("path", [p for p in NOTEBOOKS if p.name.startswith(("01_", "own_"))],
                         ids=lambda p: p.stem)
def test_jupyterlab_saves_a_study_notebook_as_committed_and_a_users_own_with_its_outputs(path, tmp_path,
                                                                                         monkeypatch):
    """The pre-save hook of `make lab`, in JupyterLab's own contents manager: a study notebook run and saved
    is written byte for byte as committed (so git status stays clean); a notebook in my-notebooks/ keeps its
    outputs."""
    from jupyter_server.services.contents.filemanager import FileContentsManager

    from pqlab.app import lab
    from pqlab.core import paths

    (tmp_path / "notebooks").mkdir()
    (tmp_path / lab.MY_NOTEBOOKS).mkdir()
    monkeypatch.setattr(paths, "NOTEBOOKS", tmp_path / "notebooks")
    manager = FileContentsManager(root_dir=str(tmp_path), pre_save_hook=lab.strip_on_save)
    run = with_outputs(json.loads(path.read_text(encoding="utf-8")))
    for folder in ("notebooks", lab.MY_NOTEBOOKS):
        manager.save({"type": "notebook", "format": "json", "content": run}, f"{folder}/{path.name}")
    assert (tmp_path / "notebooks" / path.name).read_bytes() == path.read_bytes()
    own = json.loads((tmp_path / lab.MY_NOTEBOOKS / path.name).read_text(encoding="utf-8"))
    assert all(c["outputs"] for c in own["cells"] if c["cell_type"] == "code")


def test_make_lab_installs_the_hook():
    from pqlab.app import lab

    argv = lab.lab_command("127.0.0.1", 8890, "t", 1000, ROOT)
    assert "--ContentsManager.pre_save_hook=pqlab.app.lab.strip_on_save" in argv


@pytest.mark.skipif(shutil.which("git") is None, reason="no git")
def test_outside_make_lab_the_git_filter_keeps_outputs_out_of_diffs_and_commits(tmp_path):
    def git(*args):
        return subprocess.run(["git", "-C", str(tmp_path), *args], capture_output=True, text=True,
                              check=True).stdout

    git("init", "-q")
    git("config", "user.email", "t@example.org")
    git("config", "user.name", "t")
    shutil.copy(ROOT / ".gitattributes", tmp_path / ".gitattributes")
    notebook = tmp_path / "n.ipynb"
    shutil.copy(ROOT / "notebooks" / "own_comparison.ipynb", notebook)
    assert provision.notebook_filter(tmp_path)
    git("add", ".")
    git("commit", "-q", "-m", "stripped")
    nb = with_outputs(json.loads(notebook.read_text()))
    # saved by another editor: outputs, its own key order
    notebook.write_text(json.dumps(nb, indent=1) + "\n")
    assert git("diff") == ""
    git("add", "n.ipynb")
    assert git("diff", "--cached") == "" and git("status", "--porcelain") == ""  # nothing to commit
    assert "measured" in notebook.read_text()  # the user's copy keeps its outputs
    next(c for c in nb["cells"] if c["cell_type"] == "code")["source"] = ["print('changed')\n"]
    notebook.write_text(json.dumps(nb, indent=1) + "\n")
    assert git("status", "--porcelain").strip() == "M n.ipynb"  # a real change is still seen


def test_outside_a_git_checkout_there_is_nothing_to_configure(tmp_path, capsys):
    assert provision.notebook_filter(tmp_path)
    assert "not a git checkout" in capsys.readouterr().out


def test_run_metadata_reads_the_git_state_without_running_the_filter(monkeypatch):
    """Every run records the commit and whether the checkout is dirty; through the filter a `git status` ran
    nbstripout per notebook and, on a busy machine, passed its timeout (commit unknown)."""
    import subprocess as sp

    from pqlab.measure import machine

    calls = []
    real = sp.run

    def spy(argv, *args, **kwargs):
        calls.append(list(argv))
        return real(argv, *args, **kwargs)

    monkeypatch.setattr(sp, "run", spy)
    state = machine.git_state()
    status = [c for c in calls if "status" in c]
    assert state["commit"] and status and all("filter.nbstripout.clean=cat" in c for c in status)
