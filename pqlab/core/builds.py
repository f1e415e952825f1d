"""A liboqs build as a record: which release, built how, from what, and where it lives.

A number belongs to an implementation and a release, so every liboqs pqlab loads is a :class:`Build`:

- ``liboqs-0.13.0``: pqlab's own build of liboqs 0.13.0 with liboqs's default options (``OQS_DIST_BUILD``:
  every CPU-specific implementation, chosen at run time).  ``make setup`` provides this one.
- ``liboqs-0.13.0+generic``: the same release, portable C only (``OQS_OPT_TARGET=generic``).
- ``liboqs-0.12.0``, ``liboqs-0.9.0`` (and ``+generic``): the other releases crates.io carries, each in the
  ``oqs-sys`` crate that bundles its sources (``native/liboqs/<release>/Cargo.lock`` pins it with its
  checksum), built on first need into the per-user cache (:mod:`pqlab.liboqs.build`).
- ``liboqs-0.16.0+source`` (and ``+source+generic``): a liboqs source tree the user gave
  (``make setup LIBOQS_SOURCE=DIR``, ``python -m pqlab builds --add-source DIR``), any release from 0.9 on,
  built by pqlab with the same options as its own builds and cached the same way.  Its release is read from
  the tree's CMakeLists.txt; the tree is registered per clone in ``.venv/liboqs/sources.json``
  (:func:`add_source`, :func:`source_tree`), and the build records the tree's git commit or checksum.
- ``liboqs-0.13.0+clang19``, ``liboqs-0.9.0+Os``, ``liboqs-0.9.0+clang19+Os``: any of pqlab's own builds with
  another C compiler (``+gcc``, ``+gcc12``, ``+clang``, ``+clang19``: the executables ``gcc``, ``gcc-12``,
  ``clang``, ``clang-19``) or another optimisation level (``+O0``, ``+O1``, ``+O2``, ``+Os``, ``+Oz``;
  liboqs's own is ``-O3``, which ``+O3`` names, so ``liboqs-0.9.0+O3`` *is* ``liboqs-0.9.0``).  Same
  sources, same options; built on first need and cached by the full set (:mod:`pqlab.liboqs.build`).
  Without a compiler tag a build uses ``$CC`` (default ``cc``), whose name and version its record keeps.
  A compiler that is not installed is refused in one line naming its provisioning step (``python -m
  pqlab.app.provision compiler clang19``).  Notebook 09 screens these builds for leaks a compiler introduces.
- ``liboqs-0.14.0+given``: a liboqs pqlab did not build (system, conda, ``OQS_INSTALL_PATH``), identified by
  its own ``OQS_version()`` (:func:`pqlab.liboqs.loader.given_builds`).

``default`` and ``generic`` alone name the two builds of the *chosen* build (:func:`chosen`): pqlab's
:data:`SETUP_RELEASE`, unless ``PQLAB_LIBOQS_BUILD`` names another of its builds (``make setup
LIBOQS_SOURCE=DIR`` sets it for the clone).  One process loads one liboqs,
so a build other than the loaded one is measured in a worker process
(:func:`pqlab.benchmark.bench_in_worker`).

    parse("liboqs-0.12.0") -> Build         refuses an unknown release or options in one line
    split("ML-KEM-768@liboqs-0.12.0")       -> ("ML-KEM-768@liboqs", "liboqs-0.12.0") | (name, "")
"""
from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

from pqlab.core import paths
from pqlab.core.errors import BadInput, choice, shell_command
from pqlab.core.files import atomic_write_text
from pqlab.core.paths import NATIVE

LIBRARY = "liboqs"
#: One folder per release pqlab builds: native/liboqs/<release>/Cargo.toml and Cargo.lock pin
#: its oqs-sys crate.
MANIFESTS = NATIVE / "liboqs"
#: pqlab's own build options: liboqs's default (run-time CPU dispatch) and portable C only.
OPTIONS = ("default", "generic")
#: The options word of a liboqs pqlab was given rather than built.
GIVEN = "given"
#: Where a build's sources come from: an oqs-sys crate (native/liboqs/<release>/), a source tree the user
#: gave, or nowhere pqlab knows (a given library).
ORIGINS = ("crate", "source", GIVEN)
#: The id's tag of a build from a source tree.
SOURCE = "source"
#: ``liboqs-<release>`` and its tags (``+source``, ``+generic``, ``+given``, compiler, level), in that order.
_ID = re.compile(r"liboqs-(\d+\.\d+\.\d+)((?:\+[A-Za-z0-9]+)*)")
#: A compiler tag (``clang19``) and the executable it names (``clang-19``): :func:`compiler_command`.
COMPILER = re.compile(r"(gcc|clang)(\d*)")
#: The optimisation levels a build may name; :data:`OWN_LEVEL` is liboqs's own (its CMake adds ``-O3``).
LEVELS = ("O0", "O1", "O2", "O3", "Os", "Oz")
OWN_LEVEL = "O3"
#: The environment variable that chooses the liboqs a process loads (:func:`chosen`).
CHOOSE = "PQLAB_LIBOQS_BUILD"
#: The source trees registered in this clone: {release: {"tree": path, ...}} (:func:`add_source`);
#: ``PQLAB_LIBOQS_SOURCES`` names another file (the tests' own registry, which their workers inherit).
SOURCES = paths.LIBOQS_PREFIX / "sources.json"


def sources_file() -> Path:
    """The file that registers this clone's source trees: :data:`SOURCES`, or ``PQLAB_LIBOQS_SOURCES``."""
    return Path(os.environ.get("PQLAB_LIBOQS_SOURCES") or SOURCES)


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
    """One liboqs: `release` (``OQS_version()``), `options` (:data:`OPTIONS`, or :data:`GIVEN`), where its
    sources come from (`origin`, :data:`ORIGINS`) and, for a given one, the `library` file it was found at."""

    release: str
    options: str = "default"
    library: str = ""
    origin: str = "crate"
    compiler: str = ""  #: a compiler tag (:data:`COMPILER`: ``clang19``); "" for ``$CC``
    level: str = ""  #: an optimisation level other than liboqs's own (:data:`LEVELS`); "" for ``-O3``

    def __post_init__(self):
        if self.options == GIVEN:
            object.__setattr__(self, "origin", GIVEN)
        if self.level == OWN_LEVEL:
            object.__setattr__(self, "level", "")

    @property
    def id(self) -> str:
        """``liboqs-<release>``, then ``+source`` for a source tree's build, ``+<options>`` unless they are
        the default ones, ``+<compiler>`` and ``+<level>`` where they are not the default ones."""
        return (f"{LIBRARY}-{self.release}" + (f"+{SOURCE}" if self.origin == SOURCE else "")
                + ("" if self.options == "default" else f"+{self.options}")
                + "".join(f"+{t}" for t in (self.compiler, self.level) if t))

    @property
    def own(self) -> bool:
        """Whether pqlab builds it (from a crate in native/liboqs/<release>/ or a source tree it was given),
        rather than was given the library."""
        return self.origin != GIVEN

    @property
    def tree(self) -> Path:
        """The source tree a ``+source`` build is built from (:func:`source_tree`)."""
        return source_tree(self.release)

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


def sources() -> dict[str, dict]:
    """The source trees registered in this clone, by release: {release: {"tree": ..., "registered_at": ...}}
    (:func:`sources_file`)."""
    try:
        found = json.loads(sources_file().read_text())
    except (OSError, ValueError):
        return {}
    return {r: v for r, v in found.items() if isinstance(v, dict) and isinstance(v.get("tree"), str)} if (
        isinstance(found, dict)) else {}


def source_tree(release: str) -> Path:
    """The source tree registered for liboqs `release`; refused in one line when there is none."""
    found = sources().get(release)
    if not found:
        raise BadInput(f"no liboqs {release} source tree is registered in this clone; add one with "
                       f"`make setup LIBOQS_SOURCE=DIR` or {shell_command('pqlab builds --add-source DIR')}")
    return Path(found["tree"])


def tree_release(tree: str | Path) -> str:
    """The liboqs release a source tree holds, read from its top CMakeLists.txt (``OQS_VERSION_TEXT`` of
    liboqs 0.9, or ``OQS_VERSION_MAJOR``/``MINOR``/``PATCH`` from 0.10 on).  A folder that is not a liboqs
    tree, or whose release cannot be read or is older than pqlab's oldest own release, is refused in one
    line."""
    tree = Path(tree).expanduser()
    lists = tree / "CMakeLists.txt"
    if not tree.is_dir():
        raise BadInput(f"{tree} is not a folder; give the top folder of a liboqs source tree (the one with "
                       "CMakeLists.txt and src/oqs.h)")
    text = lists.read_text(errors="replace") if lists.is_file() else ""
    if not re.search(r"project\s*\(\s*liboqs\b", text) or not (tree / "src" / "oqs.h").is_file():
        raise BadInput(f"{tree} is not a liboqs source tree (no CMakeLists.txt declaring project(liboqs) "
                       "beside src/oqs.h); give the top folder of a checkout of a liboqs release tag "
                       "(git clone --branch TAG https://github.com/open-quantum-safe/liboqs)")
    parts = {k: re.search(rf'set\(OQS_VERSION_{k} "?(\d+)"?\)', text) for k in ("MAJOR", "MINOR", "PATCH")}
    flat = re.search(r'set\(OQS_VERSION_TEXT "(\d+\.\d+\.\d+)', text)
    release = (".".join(parts[k][1] for k in ("MAJOR", "MINOR", "PATCH")) if all(parts.values())
               else flat[1] if flat else "")
    if not release:
        raise BadInput(f"{lists} states no liboqs version pqlab can read (OQS_VERSION_MAJOR/MINOR/PATCH or "
                       "OQS_VERSION_TEXT); give a tree of a liboqs release")
    oldest = own_releases()[0]
    if version_key(release) < version_key(oldest):
        raise BadInput(f"{tree} holds liboqs {release}; pqlab builds liboqs {oldest} and later (the oldest "
                       "release whose API native/liboqs_shim.c completes for liboqs-python)")
    return release


def add_source(tree: str | Path) -> Build:
    """Register the liboqs source tree `tree` in this clone (:func:`sources_file`, written atomically) and
    return its build ``liboqs-<release>+source``; a tree registered before for the same release is
    replaced."""
    tree = Path(tree).expanduser().resolve()
    release = tree_release(tree)
    found = sources() | {release: {"tree": str(tree), "registered_at": time.strftime("%Y-%m-%dT%H:%M:%S%z")}}
    sources_file().parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(sources_file(), json.dumps(found, indent=1, sort_keys=True) + "\n")
    return Build(release, origin=SOURCE)


def chosen() -> Build:
    """The build this process measures by default: the one of pqlab's own that ``PQLAB_LIBOQS_BUILD`` names
    (``make setup LIBOQS_SOURCE=DIR`` sets it for the clone), else :data:`SETUP`."""
    asked = os.environ.get(CHOOSE, "").strip()
    if asked and asked not in OPTIONS:
        build = parse(asked)
        if build.own:
            return build
    return SETUP


def parse(spec: str | Build, given: tuple[Build, ...] = ()) -> Build:
    """The build `spec` names: ``liboqs-<release>[+source][+generic|+given]``, or ``default``/``generic``
    for those options of the :func:`chosen` build.  A release pqlab cannot build is accepted when one of
    `given` (the liboqs builds found on this machine) has it, or with ``+source`` when a source tree of it is
    registered; otherwise refused in one line that names what exists."""
    if isinstance(spec, Build):
        return spec
    text = str(spec).strip()
    if text in OPTIONS:
        base = chosen()
        return Build(base.release, text, origin=base.origin)
    release, tags = _tags(text)
    own = own_releases()
    registered = sorted(sources(), key=version_key)
    ids = ([Build(r, o).id for r in own for o in OPTIONS] + [Build(r, o, origin=SOURCE).id for r in registered
                                                           for o in OPTIONS] + [b.id for b in given])
    if not release:
        choice(text, "liboqs build", ids)  # raises, with close matches
    for tag in tags:
        if not (COMPILER.fullmatch(tag) or tag in LEVELS):
            choice(tag, "liboqs build option", [*OPTIONS, GIVEN, SOURCE, "gcc", "clang19", *LEVELS])
    origin = SOURCE if SOURCE in tags else GIVEN if GIVEN in tags else "crate"
    options = next((t for t in tags if t in OPTIONS or t == GIVEN), "default")
    compiler = next((t for t in tags if COMPILER.fullmatch(t)), "")
    level = next((t for t in tags if t in LEVELS), "")
    ordered = [t for t in (SOURCE, options, compiler, level) if t in tags]
    if tags != ordered or (origin == GIVEN and len(tags) > 1):
        raise BadInput(f"{text}: a build's tags come as +source, then +generic, then a compiler (+clang19), "
                       f"then a level (+Os), or +given alone; choose one of {', '.join(ids)}")
    if origin == SOURCE:
        source_tree(release)  # refuses an unregistered release
        return Build(release, options, origin=SOURCE, compiler=compiler, level=level)
    if origin == GIVEN or release not in own:
        found = [b for b in given if b.release == release]
        if found and options in (GIVEN, "default"):
            return found[0]
        if origin != GIVEN and release in registered:  # the one build of that release there is
            return Build(release, options, origin=SOURCE, compiler=compiler, level=level)
        raise BadInput(f"liboqs {release} is not a build here: pqlab builds liboqs {', '.join(own)} from "
                       "crates.io (no registry here carries another release), no liboqs it was given "
                       f"(system, conda, OQS_INSTALL_PATH) is {release}, and no {release} source tree is "
                       f"registered (make setup LIBOQS_SOURCE=DIR); choose one of {', '.join(ids)}")
    return Build(release, options, compiler=compiler, level=level)


def prefix(spec: str | Build = "default") -> Path:
    """Where the build `spec` names is installed (:func:`parse` refuses an unknown one).  The one place that
    knows it: the loader, the build, the native runner and setup ask here."""
    return parse(spec).prefix


def own_build_at(prefix_path: Path) -> Build | None:
    """pqlab's own build installed at `prefix_path` (.venv/liboqs/<id>), or None."""
    prefix_path = Path(prefix_path)
    if prefix_path.parent.resolve() != paths.LIBOQS_PREFIX.resolve():  # the loader maps resolved paths
        return None
    release, tags = _tags(prefix_path.name)
    if not release or GIVEN in tags:
        return None
    build = Build(release, "generic" if "generic" in tags else "default",
                  origin=SOURCE if SOURCE in tags else "crate",
                  compiler=next((t for t in tags if COMPILER.fullmatch(t)), ""),
                  level=next((t for t in tags if t in LEVELS), ""))
    return build if build.id == prefix_path.name else None  # unknown or misordered tags: not one of ours


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
    release, tags = _tags(build_id)
    return next((t for t in tags if t in (*OPTIONS, GIVEN)), "default") if release else ""


def compiler_of(build_id) -> str:
    """The compiler tag of the build a results row names (``clang19``), "" for ``$CC`` or no build."""
    return next((t for t in _tags(build_id)[1] if COMPILER.fullmatch(t)), "")


def level_of(build_id) -> str:
    """The optimisation level the build a results row names was built at (``Os``); liboqs's own
    (:data:`OWN_LEVEL`) for one of pqlab's builds without a level tag, "" for no build or a given one."""
    release, tags = _tags(build_id)
    return "" if not release or GIVEN in tags else next((t for t in tags if t in LEVELS), OWN_LEVEL)


def compiler_command(tag: str) -> str:
    """The executable a compiler tag names: ``clang19`` -> ``clang-19``, ``gcc`` -> ``gcc``."""
    m = COMPILER.fullmatch(tag)
    if not m:
        raise BadInput(f"{tag!r} is not a compiler tag: write gcc, gcc12, clang or clang19")
    return m[1] + (f"-{m[2]}" if m[2] else "")


def origin_of(build_id) -> str:
    """Where the build a results row names came from (:data:`ORIGINS`), read from its id alone (it need not
    be registered here): ``source`` for ``+source``, ``given`` for ``+given``, else ``crate``; "" for no
    build."""
    release, tags = _tags(build_id)
    return (SOURCE if SOURCE in tags else GIVEN if GIVEN in tags else "crate") if release else ""


def _tags(build_id) -> tuple[str, list[str]]:
    """A build id's release and its tags (``liboqs-0.16.0+source+generic`` -> ("0.16.0", ["source",
    "generic"])); ("", []) for anything else."""
    m = _ID.fullmatch(build_id) if isinstance(build_id, str) else None
    return (m[1], [t for t in m[2].split("+") if t]) if m else ("", [])


def selected(column, wanted: str):
    """The rows of a results ``build`` `column` (a pandas Series) whose build is `wanted`
    (:func:`matches`), decided once per distinct build (a run's samples hold a few builds in 10^5 rows)."""
    return column.isin([b for b in column.dropna().unique() if matches(b, wanted)]) | (
        column.isna() & matches(None, wanted))


def matches(build_id, wanted: str) -> bool:
    """Whether the build a row names is `wanted`: its id (``liboqs-0.12.0``), or its options alone
    (``default``, ``generic``: such a build of whichever release the row ran)."""
    return wanted in (build_id, options_of(build_id)) if wanted else not options_of(build_id)
