"""`make lab` (``python -m pqlab lab``): JupyterLab on the checkout, safe for the notebooks git tracks.

- It opens the checkout (or LAB_DIR): ``notebooks/`` holds the study notebooks, ``my-notebooks/`` (created
  here, ignored by git) a user's own, and everything else is one click away.
- A study notebook run and saved there is written without outputs (:func:`strip_on_save`, JupyterLab's
  pre-save hook), byte for byte as committed, so ``git status`` stays clean: the notebook in the browser keeps
  its outputs.  Everywhere else (VS Code, ``jupyter lab`` started by hand), git's nbstripout filter
  (.gitattributes, set up by ``make setup``: :func:`pqlab.app.provision.notebook_filter`) keeps outputs out of
  commits and diffs.  Both strip with the same command, so they agree.  A user's own notebooks keep their
  outputs.
- The kernels find this venv first on PATH, so ``!python -m pqlab list`` in a notebook runs this pqlab.
"""
from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import time
from pathlib import Path

from pqlab.app.provision import nbstripout_command, notebook_filter
from pqlab.core import paths
from pqlab.core.errors import BadInput

#: the folder of a user's own notebooks, under the checkout and ignored by git (.gitignore)
MY_NOTEBOOKS = "my-notebooks"


def lab_dir(value: str | None) -> Path:
    """The folder `make lab` opens: LAB_DIR when given (an existing folder), else the checkout, whose
    my-notebooks/ (created here, ignored by git) is the home of a user's own notebooks."""

    if value:
        folder = Path(value).expanduser().resolve()
        if not folder.is_dir():
            raise BadInput(f"LAB_DIR={value!r} is not a folder: create it, or leave LAB_DIR unset to open "
                           f"the checkout ({paths.ROOT})")
        return folder
    (paths.ROOT / MY_NOTEBOOKS).mkdir(exist_ok=True)
    return paths.ROOT


def lab_command(ip: str, port: int, token: str, euid: int, folder: Path) -> list[str]:
    """The JupyterLab command of `make lab`: `folder`, no browser, a fixed port (an error when taken, so the
    address printed is the one), the pre-save hook that strips the tracked notebooks, and --allow-root when
    run as root (common in containers)."""
    argv = [str(Path(sys.executable).with_name("jupyter")), "lab", f"--notebook-dir={folder}", "--no-browser",
            f"--ip={ip}", f"--port={port}", "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
            f"--ContentsManager.pre_save_hook={__name__}.strip_on_save",
            "--log-level=WARN", "--LabApp.log_level=WARN"]
    return argv + (["--allow-root"] if euid == 0 else [])


def lab_environment(environ=None) -> dict:
    """The environment of `make lab` and so of its kernels: this venv's bin/ first on PATH, so that a shell
    command in a notebook (``!python -m pqlab list``) runs this pqlab, as in an activated venv."""
    env = dict(os.environ if environ is None else environ)
    venv_bin = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join([venv_bin, *[p for p in env.get("PATH", "").split(os.pathsep)
                                               if p and p != venv_bin]])
    env["VIRTUAL_ENV"] = str(Path(sys.prefix))
    return env


def tracked(os_path: Path) -> bool:
    """Whether a notebook at `os_path` is one of the study notebooks the repository tracks (notebooks/)."""

    return os_path.resolve().parent == paths.NOTEBOOKS.resolve()


def stripped(content: dict) -> dict:
    """A notebook (its JSON as a dict) as git's filter stores it: the same nbstripout command
    (:func:`pqlab.app.provision.nbstripout_command`), so that the file a save writes is the committed one."""


    done = subprocess.run([*nbstripout_command(), "-t"], input=json.dumps(content), capture_output=True,
                          text=True, check=True)
    return json.loads(done.stdout)


def strip_on_save(model: dict, path: str, contents_manager, **kwargs) -> None:
    """JupyterLab's pre-save hook (``ContentsManager.pre_save_hook``): a study notebook (notebooks/) is saved
    without outputs, execution counts or the kernel's language_info; any other file is saved as it is."""
    if model.get("type") != "notebook" or not isinstance(model.get("content"), dict):
        return
    if tracked(Path(contents_manager.root_dir) / path.lstrip("/")):
        model["content"] = stripped(model["content"])


def run(ip: str, port: int, folder_value: str | None) -> int:
    """Start JupyterLab, say where it listens once it does, and wait for it (Ctrl-C stops it)."""


    folder = lab_dir(folder_value)
    notebook_filter()
    token = secrets.token_hex(16)
    proc = subprocess.Popen(lab_command(ip, port, token, os.geteuid(), folder), env=lab_environment())
    try:
        while proc.poll() is None:
            try:
                socket.create_connection((ip, port), timeout=0.5).close()
                break
            except OSError:
                time.sleep(0.3)
        else:
            print(f"error: JupyterLab stopped (exit {proc.returncode}) before listening on {ip}:{port}; "
                  "if the port is taken, choose another: make lab LAB_PORT=8890", file=sys.stderr)
            return 1
        where = (f"{folder}: notebooks/ holds the study notebooks (run them freely: they are saved without "
                 f"outputs), {MY_NOTEBOOKS}/ is yours (ignored by git)" if folder == paths.ROOT
                 else str(folder))
        print(f"JupyterLab is listening on http://{ip}:{port}/lab?token={token} ({where}; kernel pqlab; "
              "Ctrl-C stops it)", flush=True)
        return proc.wait()
    except KeyboardInterrupt:
        proc.terminate()
        return proc.wait()
