"""Every path pqlab reads or writes, derived from the project root (never from the cwd)."""
from __future__ import annotations

import os
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
TABLES = OUTPUT / "data" / "tables"  # exported tables: NN_topic/NAME.{csv,md,tex} and numbers as .txt
FIGURES = OUTPUT / "figures"  # exported figures: NN_topic/NAME.{png,svg,pdf}
NOTEBOOKS = ROOT / "notebooks"
BUILD = ROOT / "build"  # executed notebooks and other build products
NATIVE = ROOT / "native"
#: Where `make setup` installs the liboqs builds of native/: LIBOQS_PREFIX/<variant>/lib/liboqs.so
LIBOQS_PREFIX = ROOT / ".venv" / "liboqs"
