"""Every path pqlab reads or writes, derived from the project root (never from the cwd)."""
from __future__ import annotations

import os
import re
from pathlib import Path

#: The repository root: the folder that holds pqlab/, notebooks/, data/ and figures/.
ROOT = Path(os.environ.get("PQLAB_ROOT", Path(__file__).resolve().parent.parent))

DATA = ROOT / "data"
REFERENCE = DATA / "reference"  # published numbers transcribed from the studies
RAW = DATA / "raw"  # recorded inputs such as power traces

#: Where runs write what they produce.  The repository itself, unless PQLAB_OUTPUT names
#: another folder: `make test` points it into build/ so that the quick notebook runs of the
#: tests never overwrite the figures and tables of `make reproduce`.
OUTPUT = Path(os.environ.get("PQLAB_OUTPUT", ROOT))
RESULTS = OUTPUT / "data" / "results"  # one file set per run, never edited in place

#: The profile whose exports this process writes: "full" (the paper-sized runs of `make reproduce`),
#: "quick" (`make reproduce PROFILE=quick`, `make test`), or "interactive" (a notebook run by hand, whose
#: parameters may be anything).  Set by the Makefile through PQLAB_PROFILE.
PROFILE = os.environ.get("PQLAB_PROFILE") or "interactive"
if not re.fullmatch(r"[a-z][a-z0-9-]*", PROFILE):
    raise ValueError(f"PQLAB_PROFILE={PROFILE!r} is not a profile name: use full, quick or leave it unset")


def export_root(profile: str = PROFILE, output: Path = OUTPUT) -> Path:
    """Where a profile's exports go: the full profile's into figures/ and data/tables/, every other
    profile's into build/<profile>/figures/ and build/<profile>/data/tables/, so that a quick or an
    interactive run never replaces the paper's figures."""
    return output if profile == "full" else output / "build" / profile


EXPORTS = export_root()
TABLES = EXPORTS / "data" / "tables"  # exported tables: NN_topic/NAME.{csv,md,tex}, numbers.tex and .txt
FIGURES = EXPORTS / "figures"  # exported figures: NN_topic/NAME.{pdf,svg,png} and NAME.col.{pdf,svg,png}
PAPER = ROOT / "paper"  # the LaTeX article that `make paper` builds from the exports
NOTEBOOKS = ROOT / "notebooks"
BUILD = ROOT / "build"  # executed notebooks and other build products
NATIVE = ROOT / "native"
#: Where `make setup` installs the liboqs builds of native/: LIBOQS_PREFIX/<variant>/lib/liboqs.so
LIBOQS_PREFIX = ROOT / ".venv" / "liboqs"
