"""A liboqs build as a record: which release, built how, from what, and where it lives.

A number belongs to an implementation and a release, so every liboqs pqlab loads is a :class:`Build`:

- ``liboqs-0.13.0``: pqlab's own build of liboqs 0.13.0 with liboqs's default options (``OQS_DIST_BUILD``:
  every CPU-specific implementation, chosen at run time).  ``make setup`` provides this one.
- ``liboqs-0.13.0+generic``: the same release, portable C only (``OQS_OPT_TARGET=generic``).
- ``liboqs-0.12.0``, ``liboqs-0.9.0`` (and ``+generic``): the other releases crates.io carries, each in the
  ``oqs-sys`` crate that bundles its sources (``native/liboqs/<release>/Cargo.lock`` pins it with its
  checksum), built on first need into the per-user cache (:mod:`pqlab.liboqs.build`).
- ``liboqs-0.14.0+given``: a liboqs pqlab did not build (system, conda, ``OQS_INSTALL_PATH``), identified by
  its own ``OQS_version()`` (:func:`pqlab.liboqs.loader.given_builds`).

``default`` and ``generic`` alone name the two builds of :data:`SETUP_RELEASE`.  One process loads one liboqs,
so a build other than the loaded one is measured in a worker process
(:func:`pqlab.benchmark.bench_in_worker`).

    parse("liboqs-0.12.0") -> Build         refuses an unknown release or options in one line
    split("ML-KEM-768@liboqs-0.12.0")       -> ("ML-KEM-768@liboqs", "liboqs-0.12.0") | (name, "")
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from pqlab.core import paths
from pqlab.core.errors import BadInput, choice
from pqlab.core.paths import NATIVE

LIBRARY = "liboqs"
#: One folder per release pqlab builds: native/liboqs/<release>/Cargo.toml and Cargo.lock pin
#: its oqs-sys crate.
MANIFESTS = NATIVE / "liboqs"
#: pqlab's own build options: liboqs's default (run-time CPU dispatch) and portable C only.
OPTIONS = ("default", "generic")
#: The options word of a liboqs pqlab was given rather than built.
GIVEN = "given"
_ID = re.compile(r"liboqs-(\d+\.\d+\.\d+)(?:\+(\w+))?")


def version_key(release: str) -> tuple[int, ...]:
    """A release ("0.12.0") as numbers, for sorting releases oldest first (0.9.0 before 0.12.0)."""
    return tuple(int(part) for part in release.split("."))


def own_releases() -> tuple[str, ...]:
    """The liboqs releases pqlab can build here, oldest first (one folder each under native/liboqs/)."""
    found = ([p.name for p in MANIFESTS.iterdir() if (p / "Cargo.lock").is_file()] if MANIFESTS.is_dir()
             else [])
    return tuple(sorted(found, key=version_key))


#: The release ``make setup`` provides (and ``default``/``generic`` name): the newest pqlab builds.
SETUP_RELEASE = own_releases()[-1]


@dataclass(frozen=True)
class Build:
    """One liboqs: `release` (``OQS_version()``), `options` (:data:`OPTIONS`, or :data:`GIVEN`) and, for a
    given one, the `library` file it was found at."""

    release: str
    options: str = "default"
    library: str = ""

    @property
    def id(self) -> str:
        """``liboqs-<release>``, with ``+<options>`` unless they are the default ones."""
        return f"{LIBRARY}-{self.release}" + ("" if self.options == "default" else f"+{self.options}")

    @property
    def own(self) -> bool:
        """Whether pqlab builds it (from native/liboqs/<release>/), rather than was given it."""
        return self.options != GIVEN

    @property
    def prefix(self) -> Path:
        """Where it is installed: .venv/liboqs/<id>/ for pqlab's own builds, the folder above lib/ for a given
        one."""
        return paths.LIBOQS_PREFIX / self.id if self.own else Path(self.library).parent.parent

    @property
    def manifest(self) -> Path:
        """The Cargo.toml that pins the oqs-sys crate carrying this release's sources (own builds)."""
        return MANIFESTS / self.release / "Cargo.toml"

    def __str__(self) -> str:
        return self.id


SETUP = Build(SETUP_RELEASE)


def parse(spec: str | Build, given: tuple[Build, ...] = ()) -> Build:
    """The build `spec` names: ``liboqs-<release>[+generic|+given]``, or ``default``/``generic`` for the
    :data:`SETUP_RELEASE` build.  A release pqlab cannot build is accepted when one of `given` (the liboqs
    builds found on this machine) has it; otherwise refused in one line that names what exists."""
    if isinstance(spec, Build):
        return spec
    text = str(spec).strip()
    if text in OPTIONS:
        return Build(SETUP_RELEASE, text)
    m = _ID.fullmatch(text)
    own = own_releases()
    ids = [Build(r, o).id for r in own for o in OPTIONS] + [b.id for b in given]
    if not m:
        choice(text, "liboqs build", ids)  # raises, with close matches
    release, options = m[1], m[2] or "default"
    if options == GIVEN or release not in own:
        found = [b for b in given if b.release == release]
        if found and options in (GIVEN, "default"):
            return found[0]
        raise BadInput(f"liboqs {release} is not a build here: pqlab builds liboqs {', '.join(own)} from "
                       "crates.io (no registry here carries another release), and no liboqs it was given "
                       f"(system, conda, OQS_INSTALL_PATH) is {release}; choose one of {', '.join(ids)}")
    return Build(release, choice(options, "liboqs build option", OPTIONS))


def prefix(spec: str | Build = "default") -> Path:
    """Where the build `spec` names is installed (:func:`parse` refuses an unknown one).  The one place that
    knows it: the loader, the build, the native runner and setup ask here."""
    return parse(spec).prefix


def own_build_at(prefix_path: Path) -> Build | None:
    """pqlab's own build installed at `prefix_path` (.venv/liboqs/<id>), or None."""
    prefix_path = Path(prefix_path)
    if prefix_path.parent.resolve() != paths.LIBOQS_PREFIX.resolve():  # the loader maps resolved paths
        return None
    m = _ID.fullmatch(prefix_path.name)
    return Build(m[1], m[2] or "default") if m and (m[2] or "default") in OPTIONS else None


def split(name: str) -> tuple[str, str]:
    """``NAME@liboqs-0.12.0`` -> (``NAME@liboqs``, ``liboqs-0.12.0``): the name as the registry knows it, and
    the build it asks for (:func:`parse` checks it); a name that names no build -> (name, "")."""
    head, at, tail = name.rpartition("@")
    if at and re.match(rf"{LIBRARY}-\d", tail.strip()):  # a release, not the backend liboqs-python
        return f"{head}@{LIBRARY}", tail.strip()
    return name, ""


def options_of(build_id) -> str:
    """The options of the build a results row names (its ``build`` column, or ``default``/``generic`` alone):
    ``default``, ``generic``, ``given``; "" for a row without a build (a library pqlab does not build)."""
    if not isinstance(build_id, str) or not build_id:
        return ""
    if build_id in OPTIONS:
        return build_id
    m = _ID.fullmatch(build_id)
    return (m[2] or "default") if m else ""


def selected(column, wanted: str):
    """The rows of a results ``build`` `column` (a pandas Series) whose build is `wanted`
    (:func:`matches`), decided once per distinct build (a run's samples hold a few builds in 10^5 rows)."""
    return column.isin([b for b in column.dropna().unique() if matches(b, wanted)]) | (
        column.isna() & matches(None, wanted))


def matches(build_id, wanted: str) -> bool:
    """Whether the build a row names is `wanted`: its id (``liboqs-0.12.0``), or its options alone
    (``default``, ``generic``: such a build of whichever release the row ran)."""
    return wanted in (build_id, options_of(build_id)) if wanted else not options_of(build_id)
