"""Shared fixtures and helpers: liboqs builds on first need, a fake run and a temporary export tree."""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import pytest

from pqlab.core import builds, paths
from pqlab.liboqs import build as liboqs_build
from pqlab.measure import machine

# tests/ mirrors pqlab/ (tests/store/ tests pqlab/store/ ...); a test module that reuses another's helpers
# imports it by its name (``from test_results import make_run``), wherever the two sit
sys.path[:0] = [str(d) for d in sorted(Path(__file__).resolve().parent.iterdir())
                if d.is_dir() and not d.name.startswith((".", "_")) and any(d.glob("test_*.py"))]

# The tests measure pqlab's setup build whatever liboqs this clone chose (make setup LIBOQS_SOURCE=DIR, pqlab
# builds --use), and see none of the source trees it registered: their own registry, empty, which their worker
# processes inherit (a test that registers a tree points it elsewhere).
os.environ[builds.CHOOSE] = ""  # empty, not unset: the venv's .pth sets an unset one to the clone's choice
if os.environ.get("OQS_INSTALL_PATH", "").startswith(str(paths.LIBOQS_PREFIX)):
    os.environ["OQS_INSTALL_PATH"] = str(builds.SETUP.prefix)
os.environ["PQLAB_LIBOQS_SOURCES"] = str(Path(tempfile.mkdtemp(prefix="pqlab-tests-")) / "sources.json")

#: set by .ci/run, which installs LaTeX and poppler: their absence then fails the tests that need them
REQUIRE_LATEX = os.environ.get("PQLAB_REQUIRE_LATEX") == "1"


def provide_or_skip(options: str):
    """The `options` liboqs build, built on first need (cached per user); a skip only where a build
    tool is missing, any other build failure fails the test."""
    try:
        return liboqs_build.provide(options)
    except liboqs_build.BuildToolMissing as exc:
        pytest.skip(f"the {options} liboqs build is not installed and cannot be built here: {exc}")


@pytest.fixture(scope="session")
def provide_liboqs():
    """provide_or_skip, for tests that take the options as a parameter."""
    return provide_or_skip


@pytest.fixture(scope="session")
def generic_liboqs():
    """The portable (generic) liboqs build, installed in .venv/liboqs/generic."""
    return provide_or_skip("generic")


def require_tools(*tools: str) -> None:
    """Skip the test when a tool (pdflatex, pdffonts ...) is missing; fail instead under
    PQLAB_REQUIRE_LATEX=1."""
    from pqlab.publish.paper import TEX_PACKAGES

    missing = [t for t in tools if not shutil.which(t)]
    if missing:
        why = f"{', '.join(missing)} not installed (Debian: {' '.join(TEX_PACKAGES)})"
        if REQUIRE_LATEX:
            pytest.fail(f"{why}, although PQLAB_REQUIRE_LATEX=1")
        pytest.skip(why)


def fake_run(run_id: str = "20261123T000000Z-t-abc123"):
    """A run with this machine's metadata and no rows (what exports read: run_id and meta)."""
    return SimpleNamespace(run_id=run_id, meta={**machine.collect({}, liboqs=False), "run_id": run_id})


@pytest.fixture
def export_tree(tmp_path, monkeypatch):
    """The quick profile's export tree in tmp_path/build/quick.  pqlab.core.paths reads PQLAB_OUTPUT and
    PQLAB_PROFILE once, at import, so its folders and profile are patched instead of the variables."""
    root = paths.export_root("quick", tmp_path)
    monkeypatch.setattr(paths, "FIGURES", root / "figures")
    monkeypatch.setattr(paths, "TABLES", root / "data" / "tables")
    monkeypatch.setattr(paths, "PROFILE", "quick")
    return root


def in_rounds(values, run_id: str = "r", rounds: int = 6):
    """Synthetic per-call values labelled with a run and `rounds` rounds (in turn), as Run.sample_values gives
    the samples of a run measured in rounds: the input of pqlab.measure.stats's intervals."""
    import numpy as np
    import pandas as pd

    values = np.asarray(values, float)
    index = pd.MultiIndex.from_arrays([[run_id] * values.size, np.arange(values.size) % rounds],
                                      names=["run_id", "round"])
    return pd.Series(values, index=index)


def fake_liboqs_compile(monkeypatch, library: Callable[[str], bytes], delay_s: float = 0.0) -> list:
    """Replace liboqs_build's compile (and its check of the result) by a quick fake that writes
    `library(options)` as liboqs.so and a 0.13.0 header, after `delay_s`; returns the list of build options it
    was called for."""
    calls = []

    def compile_(build, inputs, work, log):
        options = build.options
        calls.append(options)
        time.sleep(delay_s)
        log.write_text("fake build\n")
        out = work / "out"
        (out / "lib").mkdir(parents=True)
        (out / "include" / "oqs").mkdir(parents=True)
        (out / "lib" / "liboqs.so").write_bytes(library(options))
        (out / "include" / "oqs" / "oqsconfig.h").write_text("#define OQS_VERSION_TEXT \"0.13.0\"\n")
        return out

    monkeypatch.setattr(liboqs_build, "_compile", compile_)
    monkeypatch.setattr(liboqs_build, "_check", lambda library: None)
    return calls


def require_browser() -> None:
    """Skip a browser test when chromium or Playwright is missing; fail it instead under
    PQLAB_REQUIRE_BROWSER=1 (CI), naming the command that installs the browser."""
    from pqlab.publish import report

    problem = report.browser_problem()
    if problem:
        why = f"{problem}: run python -m pqlab.app.provision browser"
        if os.environ.get("PQLAB_REQUIRE_BROWSER") == "1":
            pytest.fail(f"{why} (PQLAB_REQUIRE_BROWSER=1)", pytrace=False)
        pytest.skip(why)
