"""Every path pqlab reads or writes, derived from the project root (never from the cwd).

Two environment variables move what runs write, and both are checked: ``PQLAB_OUTPUT`` must be an
absolute path (a relative one would depend on the working directory; empty counts as unset), and
``PQLAB_PROFILE`` a profile name.  A bad value never stops ``import pqlab``: the names that depend on it
(``OUTPUT``, ``RESULTS``, ``PROFILE``, ``EXPORTS``, ``TABLES``, ``FIGURES``) raise
:class:`~pqlab.core.errors.BadInput` with one line naming the variable and the fix when they are used, and the
CLI checks both before anything else (:func:`check_environment`).
"""
from __future__ import annotations

import os
import re
from pathlib import Path

from pqlab.core.errors import BadInput

#: The repository root: the folder that holds pqlab/, notebooks/, data/ and figures/.
ROOT = Path(os.environ.get("PQLAB_ROOT", Path(__file__).resolve().parents[2]))

DATA = ROOT / "data"
REFERENCE = DATA / "reference"  # published numbers transcribed from the studies
RAW = DATA / "raw"  # recorded inputs such as power traces

_PROFILE_NAME = re.compile(r"[a-z][a-z0-9-]*")


def output_problem(value: str | None) -> str:
    """Why a value of PQLAB_OUTPUT cannot be used ("" when it can: unset, empty, or an absolute path)."""
    if value and not os.path.isabs(value):
        return (f"PQLAB_OUTPUT={value!r} is a relative path, which would depend on the working directory: "
                "set it to an absolute path (e.g. PQLAB_OUTPUT=$PWD/build/out) or unset it")
    return ""


def profile_problem(value: str | None) -> str:
    """Why a value of PQLAB_PROFILE cannot be used ("" when it can: unset, empty, or a profile name)."""
    if value and not _PROFILE_NAME.fullmatch(value):
        return (f"PQLAB_PROFILE={value!r} is not a profile name: use full or quick (lower case), "
                "or leave it unset (interactive)")
    return ""


#: name -> why it is not defined (a bad PQLAB_OUTPUT or PQLAB_PROFILE); :func:`__getattr__` raises it.
_PROBLEMS: dict[str, str] = {}
_output_env, _profile_env = os.environ.get("PQLAB_OUTPUT", ""), os.environ.get("PQLAB_PROFILE", "")
if output_problem(_output_env):
    _PROBLEMS.update(dict.fromkeys(("OUTPUT", "RESULTS", "EXPORTS", "TABLES", "FIGURES"),
                                   output_problem(_output_env)))
else:
    #: Where runs write what they produce.  The repository itself, unless PQLAB_OUTPUT names another
    #: folder (an absolute path; empty counts as unset): `make test` points it into build/ so that the
    #: quick notebook runs of the tests never overwrite the figures and tables of `make reproduce`.
    OUTPUT = Path(_output_env) if _output_env else ROOT
    RESULTS = OUTPUT / "data" / "results"  # one file set per run, never edited in place
if profile_problem(_profile_env):
    _PROBLEMS.update(dict.fromkeys(("PROFILE", "EXPORTS", "TABLES", "FIGURES"),
                                   profile_problem(_profile_env)))
else:
    #: The profile whose exports this process writes: "full" (the paper-sized runs of `make reproduce`),
    #: "quick" (`make reproduce PROFILE=quick`, `make test`), or "interactive" (a notebook run by hand, whose
    #: parameters may be anything).  Set by the Makefile through PQLAB_PROFILE.
    PROFILE = _profile_env or "interactive"


def _get(name: str):
    """The module's `name` (as patched, in tests), or BadInput saying which variable is wrong."""
    if name in globals():
        return globals()[name]
    raise BadInput(_PROBLEMS[name])


def __getattr__(name: str):
    if name in _PROBLEMS:
        raise BadInput(_PROBLEMS[name])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def check_environment() -> None:
    """Raise :class:`BadInput` (one line) when PQLAB_OUTPUT or PQLAB_PROFILE of this process is unusable."""
    if _PROBLEMS:
        raise BadInput("; ".join(dict.fromkeys(_PROBLEMS.values())))


def export_root(profile: str | None = None, output: Path | None = None) -> Path:
    """Where a profile's exports go (`profile`, `output`: default :data:`PROFILE`, :data:`OUTPUT`): the full
    profile's into figures/ and data/tables/, every other profile's into build/<profile>/figures/ and
    build/<profile>/data/tables/, so that a quick or an interactive run never replaces the paper's figures."""
    profile = _get("PROFILE") if profile is None else profile
    output = _get("OUTPUT") if output is None else output
    return output if profile == "full" else output / "build" / profile


if not _PROBLEMS:
    EXPORTS = export_root()
    TABLES = EXPORTS / "data" / "tables"  # exported tables: NN_topic/NAME.{csv,md,tex}, numbers.tex and .txt
    FIGURES = EXPORTS / "figures"  # exported figures: NN_topic/NAME.{pdf,svg,png} and NAME.col.{pdf,svg,png}
PAPER = ROOT / "paper"  # the LaTeX article that `make paper` builds from the exports
NOTEBOOKS = ROOT / "notebooks"
BUILD = ROOT / "build"  # executed notebooks and other build products
NATIVE = ROOT / "native"
#: Where pqlab installs its own liboqs builds: LIBOQS_PREFIX/<build id>/lib/liboqs.so (pqlab.core.builds)
LIBOQS_PREFIX = ROOT / ".venv" / "liboqs"
