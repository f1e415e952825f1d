"""Issue #46 (D15): `make setup` checks what its stamps stand for and provisions again what is missing, so its
advice ("liboqs not found … run `make setup`") works.  Every test works on a copy of the venv's state (a
site-packages folder, a prefix, a folder that is no git checkout of its own), never on the real .venv."""
from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from pqlab.app import provision
from pqlab.core import builds
from pqlab.core.paths import LIBOQS_PREFIX, ROOT

MISSING_PTH = "liboqs: pqlab_liboqs.pth missing from the venv: provisioned again"


def kernel_json(prefix):
    return prefix / "share" / "jupyter" / "kernels" / "pqlab" / "kernel.json"


@pytest.fixture
def venv(tmp_path, monkeypatch):
    """A site-packages folder without the .pth, a prefix with a working kernel "pqlab", a folder that is no
    git checkout; the setup build counts as installed (nothing of the real one is rebuilt or copied) and no
    other liboqs is loadable."""
    site, prefix, root = tmp_path / "site-packages", tmp_path / "prefix", tmp_path / "checkout"
    for folder in (site, root):
        folder.mkdir()
    spec = kernel_json(prefix)
    spec.parent.mkdir(parents=True)
    spec.write_text(json.dumps({"argv": [sys.executable, "-m", "ipykernel_launcher", "-f",
                                         "{connection_file}"],
                                "display_name": "Python (pqlab)", "language": "python"}))
    provided = []
    monkeypatch.setattr(provision, "find_usable_liboqs", lambda: None)
    monkeypatch.setattr(provision, "provide", lambda build: provided.append(build) or build.prefix)
    monkeypatch.setattr(provision, "entry_problem", lambda entry: "")
    monkeypatch.setattr(provision, "runners_problem", lambda: "")
    return {"site": site, "prefix": prefix, "root": root, "provided": provided}


def verify(venv):
    return provision.verify(site=venv["site"], prefix=venv["prefix"], root=venv["root"])


def test_a_missing_pth_is_said_in_one_line_and_written_again(venv, capsys):
    assert verify(venv) == [MISSING_PTH]
    assert MISSING_PTH in capsys.readouterr().out.splitlines()
    assert venv["provided"] == [builds.SETUP]
    pth = (venv["site"] / provision.PTH).read_text()
    assert str(LIBOQS_PREFIX) in pth and str(builds.SETUP.prefix) in pth
    assert verify(venv) == [] and capsys.readouterr().out == ""  # complete: nothing to say


def test_the_written_pth_makes_a_fresh_interpreter_find_liboqs(venv, tmp_path):
    verify(venv)
    code = ("import os, site, sys; site.addsitedir(sys.argv[1]); "
            "from pqlab.liboqs.loader import library_problem; print(os.environ['OQS_INSTALL_PATH']); "
            "print(repr(library_problem()))")
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(tmp_path), "LANG": "C.UTF-8"}
    proc = subprocess.run([sys.executable, "-c", code, str(venv["site"])], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [str(builds.SETUP.prefix), "''"]


def test_a_pth_another_checkout_wrote_is_replaced(venv):
    (venv["site"] / provision.PTH).write_text("import os; os.environ.setdefault('OQS_INSTALL_PATH', "
                                              "'/elsewhere/.venv/liboqs/liboqs-0.13.0')\n")
    assert verify(venv) == ["liboqs: pqlab_liboqs.pth of the venv names another checkout's liboqs: "
                            "provisioned again"]
    assert str(LIBOQS_PREFIX) in (venv["site"] / provision.PTH).read_text()


def test_a_damaged_build_is_provided_again(venv, monkeypatch):
    provision.write_pth(venv["site"], builds.SETUP)
    damaged = {"yes": "is missing"}
    monkeypatch.setattr(provision, "entry_problem", lambda entry: damaged.pop("yes", ""))
    assert verify(venv) == [f"liboqs: {builds.SETUP.id} in {builds.SETUP.prefix} is missing: "
                            "provisioned again"]
    assert venv["provided"] == [builds.SETUP]


def test_a_missing_kernel_is_registered_again(venv):
    provision.write_pth(venv["site"], builds.SETUP)
    kernel_json(venv["prefix"]).unlink()
    (line,) = verify(venv)
    assert line == (f"kernel: the Jupyter kernel 'pqlab' is missing ({kernel_json(venv['prefix'])}): "
                    "provisioned again")
    spec = json.loads(kernel_json(venv["prefix"]).read_text())
    assert spec["argv"][0] == sys.executable and spec["display_name"] == "Python (pqlab)"


def test_missing_runners_are_built_again(venv, monkeypatch):
    provision.write_pth(venv["site"], builds.SETUP)
    missing = {"yes": "native runner (liboqs-0.13.0) missing"}
    built = []
    monkeypatch.setattr(provision, "runners_problem", lambda: missing.pop("yes", ""))
    monkeypatch.setattr(provision, "runners", lambda: built.append(True))
    assert verify(venv) == ["runners: native runner (liboqs-0.13.0) missing: provisioned again"]
    assert built == [True]


def test_a_repair_that_does_not_take_stops_setup_in_one_line(venv, monkeypatch):
    monkeypatch.setattr(provision, "write_pth", lambda site, build: None)  # the .pth never appears
    with pytest.raises(RuntimeError, match="^liboqs: pqlab_liboqs.pth missing from the venv; provisioned "
                                           "again, and still pqlab_liboqs.pth missing from the venv"):
        verify(venv)


def test_make_setup_runs_the_check_every_time():
    """The setup target's own recipe runs it (not a stamp's: a stamp that says done would skip it)."""
    text = (ROOT / "Makefile").read_text()
    rule = re.search(r"^setup: \$\(SETUP\).*\n((?:\t.*\n)+)", text, re.MULTILINE)
    assert rule, "the Makefile has no `setup: $(SETUP)` rule with a recipe"
    assert "\t@$(PY) -m pqlab.app.provision verify\n" in rule.group(1)
