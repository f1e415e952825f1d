"""Published numbers from the five seed studies, transcribed into ``data/reference/``.

Each study table is one CSV (``<stem>.csv``); ``sources.yaml`` holds one provenance entry per
stem: seed file and hash, section, machine, method, units, transcription notes and anomalies.
What our runs say beside a published within-machine ratio is :mod:`pqlab.checks.published`.

    >>> df = load_reference("04_round2_signatures")
    >>> df.attrs["source"]["clock_hz"]
    1895000000
"""
from __future__ import annotations

import copy
from functools import cache

import pandas as pd
import yaml

from pqlab.core.errors import UnknownName
from pqlab.core.paths import REFERENCE

SOURCES_FILE = REFERENCE / "sources.yaml"

__all__ = ["list_references", "load_reference", "reference_source"]


@cache
def _sources() -> dict[str, dict]:
    with open(SOURCES_FILE, encoding="utf-8") as f:
        return yaml.safe_load(f)


def list_references() -> list[str]:
    """The stems of every reference CSV, sorted (e.g. ``"01_aes_rsa_sphincs"``)."""
    return sorted(p.stem for p in REFERENCE.glob("*.csv"))


def _check(name: str) -> None:
    names = list_references()
    if name not in names:
        raise UnknownName("reference table", name, names, f"available: {', '.join(names)}")


def reference_source(name: str) -> dict:
    """The provenance entry of ``name`` from ``sources.yaml`` (a copy)."""
    _check(name)
    return copy.deepcopy(_sources()[name])


def load_reference(name: str) -> pd.DataFrame:
    """The table ``name`` as published, with its provenance in ``df.attrs["source"]``."""
    _check(name)
    df = pd.read_csv(REFERENCE / f"{name}.csv", encoding="utf-8")
    df.attrs["source"] = reference_source(name)
    return df
