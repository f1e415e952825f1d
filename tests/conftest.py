"""Shared test helpers: a fake run and a temporary export tree."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from pqlab import machine, paths


def fake_run(run_id: str = "20261123T000000Z-t-abc123"):
    """A run with this machine's metadata and no rows (what exports read: run_id and meta)."""
    return SimpleNamespace(run_id=run_id, meta={**machine.collect({}, liboqs=False), "run_id": run_id})


@pytest.fixture
def export_tree(tmp_path, monkeypatch):
    """The quick profile's export tree in tmp_path/build/quick.  pqlab.paths reads PQLAB_OUTPUT and
    PQLAB_PROFILE once, at import, so its folders and profile are patched instead of the variables."""
    root = paths.export_root("quick", tmp_path)
    monkeypatch.setattr(paths, "FIGURES", root / "figures")
    monkeypatch.setattr(paths, "TABLES", root / "data" / "tables")
    monkeypatch.setattr(paths, "PROFILE", "quick")
    return root
