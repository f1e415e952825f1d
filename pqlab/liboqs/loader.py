"""Finding and loading liboqs, the C library under liboqs-python, quietly and reproducibly.

Order of preference (the setup issue): a liboqs that is already loadable (``OQS_INSTALL_PATH``,
a conda environment, the system's loader path) is used as it is; otherwise the build of
``native/`` installed by ``make setup`` under ``.venv/liboqs/liboqs-0.13.0/`` (:mod:`pqlab.core.builds`).
``make setup`` writes a ``.pth`` file into the virtual environment that points ``OQS_INSTALL_PATH`` at that
build, so the shell, Jupyter kernels, papermill and pytest all find it with nothing exported.  A worker
process loads another build (another release, the portable options, a liboqs pqlab was given) through
:func:`build_environment`; :func:`liboqs_info` then refuses to measure if it loaded any other.

liboqs-python prints a line to stdout when imported and warns when liboqs and liboqs-python
versions differ; :func:`import_oqs` keeps both out of notebook outputs and pqlab records
both versions in every run's metadata instead (:func:`liboqs_info`).

When liboqs-python finds no liboqs that loads, it downloads (``git clone``) and builds one; a
library that loads but is not liboqs makes it fail with an AttributeError.  :func:`import_oqs`
therefore first does what liboqs-python's loader will do (:func:`search_order`, the first library
that loads) and checks that library's symbols (:func:`library_problem`); only then is liboqs-python
imported, so its download can never be reached.  Without a usable liboqs every other backend works
(:mod:`pqlab.backends` records why liboqs is missing).

No library is loaded before it is checked (:func:`load_problem`): it must be a whole ELF file (a truncated one
kills the process with SIGBUS inside ``dlopen``) and, for pqlab's own builds, have the sha256 their
``build.json`` recorded.  A damaged installed build of pqlab is installed again from the per-user cache (built
again if that is damaged too) with one line on stderr, before liboqs-python is imported.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import json
import logging
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

from pqlab.core import builds, integrity, paths
from pqlab.core.errors import (  # raised here, defined there: catching it loads nothing
    BadInput,
    LiboqsNotFound,
    UnknownName,
    shell_command,
)
from pqlab.core.files import atomic_write_text
from pqlab.liboqs import build as liboqs_build
from pqlab.liboqs.build import BuildToolMissing, LiboqsBuildError

#: liboqs-python 0.16 looks these up when imported; liboqs 0.9-0.13 get OQS_SIG_supports_ctx_str from
#: native/'s shim, and liboqs 0.9 (no stateful signatures) the OQS_SIG_STFL_* ones too.  A liboqs lacking one
#: is refused, never loaded.
REQUIRED_SYMBOLS = ("OQS_init", "OQS_version", "OQS_SIG_new", "OQS_KEM_new", "OQS_SIG_supports_ctx_str",
                    "OQS_SIG_STFL_alg_count", "OQS_SIG_STFL_alg_identifier", "OQS_SIG_STFL_new",
                    "OQS_SIG_STFL_SECRET_KEY_new", "OQS_SIG_STFL_SECRET_KEY_serialize",
                    "OQS_SIG_STFL_SECRET_KEY_deserialize", "OQS_SIG_STFL_SECRET_KEY_SET_store_cb",
                    "OQS_SIG_STFL_keypair", "OQS_SIG_STFL_sign", "OQS_SIG_STFL_verify",
                    "OQS_SIG_STFL_sigs_remaining", "OQS_SIG_STFL_sigs_total")
HOW_TO_GET = "run `make setup` (it builds liboqs from native/), or use the conda route in README.md"


def search_order() -> list[Path]:
    """The libraries liboqs-python 0.16 tries, in its order (``oqs._load_liboqs``): the loader's path
    (``liboqs``, then ``oqs``), then ``lib`` and ``lib64`` of OQS_INSTALL_PATH (default ``~/_oqs``)."""
    found: list[Path] = []
    for name in ("liboqs", "oqs"):
        lib = ctypes.util.find_library(name)
        if lib:
            found.append(Path(lib))
    install = (Path(os.environ["OQS_INSTALL_PATH"]) if "OQS_INSTALL_PATH" in os.environ
               else Path.home() / "_oqs")
    return found + [install / "lib" / "liboqs.so", install / "lib64" / "liboqs.so"]


def _candidates() -> list[Path]:
    """Every place a liboqs may already be: liboqs-python's search order, then a conda environment."""
    conda = os.environ.get("CONDA_PREFIX")
    return search_order() + ([Path(conda) / "lib" / "liboqs.so"] if conda else [])


def recorded_sha256(library: Path | str) -> str | None:
    """The sha256 that the build.json of pqlab's build beside `library` (``<prefix>/lib/liboqs.so``) recorded
    for it, or None (not pqlab's build, or built before pqlab recorded them)."""
    library = Path(library)
    try:
        files = json.loads((library.parent.parent / "build.json").read_text()).get("files") or {}
        return files.get(f"{library.parent.name}/{library.name}")
    except (OSError, ValueError, AttributeError):
        return None


def load_problem(path: Path | str) -> str:
    """"" when the library file at `path` may be handed to dlopen (a whole ELF file; for pqlab's builds, the
    sha256 recorded when it was built); else why not, in one sentence naming it.  A name without a folder
    (the loader's search) and a file that is not there are left to the loader (which fails safely)."""
    if "/" not in str(path) or not Path(path).exists():
        return ""
    why = integrity.library_problem(path, recorded_sha256(path))
    return f"{path} {why}" if why else ""


def check_library(path: Path | str) -> str:
    """Return "" when the library at `path` loads and has every symbol liboqs-python needs, else why not."""
    why = load_problem(path)
    if why:
        return why
    try:
        lib = ctypes.CDLL(str(path))
    except OSError as exc:
        return f"cannot load {path}: {exc}"
    missing = [s for s in REQUIRED_SYMBOLS if not hasattr(lib, s)]
    return f"{path} lacks {', '.join(missing)}" if missing else ""


def library_problem() -> str:
    """"" when the library liboqs-python will load (the first of :func:`search_order` that loads) has
    every symbol it needs; else why not, in one sentence."""
    tried = []
    for path in search_order():
        why = load_problem(path) if path.exists() else ""
        if why:  # liboqs-python would load it, and die: not a step further
            return f"{why}; {_fix_for(path)}"
        try:
            ctypes.CDLL(str(path))
        except OSError as exc:
            tried.append(str(exc).splitlines()[0] if path.exists() or "/" not in str(path)
                         else f"{path}: absent")
            continue
        return check_library(path)
    return "no liboqs loads (" + "; ".join(tried) + ")"


def _fix_for(library: Path) -> str:
    """How to replace a damaged `library`: pqlab's own build is installed again, any other one by whoever made
    it."""
    own = builds.own_build_at(library.parent.parent)
    if own is not None:
        return f"reinstall it: {shell_command(f'pqlab.app.provision liboqs {own.id}')}"
    return "reinstall that liboqs, or point OQS_INSTALL_PATH at another one"


def repair_own_builds(paths: list[Path] | None = None) -> None:
    """Install again, from the per-user cache, each of pqlab's own builds among `paths` (default: the
    libraries liboqs-python would try) whose library is not a whole ELF file with its recorded sha256; one
    line on stderr each."""
    for path in search_order() if paths is None else paths:
        own = builds.own_build_at(path.parent.parent)
        if own is not None and path.exists() and load_problem(path):

            try:
                liboqs_build.provide(own, announce=lambda line: print(line, file=sys.stderr))
            except LiboqsBuildError as exc:
                print(f"{own.id}: the damaged build could not be replaced: {exc}", file=sys.stderr)


def find_usable_liboqs() -> Path | None:
    """A liboqs already loadable without pqlab's build (system, conda, OQS_INSTALL_PATH), if any."""
    for path in _candidates():
        if paths.LIBOQS_PREFIX in path.parents:
            continue  # pqlab's own build: not "already there"
        if (path.exists() or "/" not in str(path)) and not check_library(path):
            return path
    return None


def given_builds() -> tuple[builds.Build, ...]:
    """The liboqs pqlab was given rather than built (system, conda, OQS_INSTALL_PATH) and could use, as a
    build named by its own ``OQS_version()``.  Each is checked and read in a child process: a liboqs loaded
    here, even to look at it, would be the one a later ``import oqs`` binds to (the loader matches the bare
    name liboqs.so against the libraries already loaded)."""
    code = ("import sys; from pqlab.liboqs.loader import check_library; why = check_library(sys.argv[1]); "
            "import ctypes; lib = None if why else ctypes.CDLL(sys.argv[1]); "
            "lib is None or setattr(lib.OQS_version, 'restype', ctypes.c_char_p); "
            "print(why or 'version ' + lib.OQS_version().decode())")
    found = []
    for path in _candidates():
        if (paths.LIBOQS_PREFIX in path.parents or not (path.exists() or "/" not in str(path))
                or load_problem(path)):
            continue
        proc = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True,
                              timeout=60)
        release = proc.stdout.strip().removeprefix("version ")
        if proc.returncode == 0 and re.fullmatch(r"\d+\.\d+\.\d+", release):
            found.append(builds.Build(release, builds.GIVEN, str(path)))
    return tuple(dict.fromkeys(found))


def catalogue() -> list[dict]:
    """Every liboqs build pqlab knows here (``python -m pqlab builds``): its own builds of each release in
    native/liboqs/ and each option (installed, in the per-user cache, or built on first use), those with a
    compiler or level tag that are here (:func:`compiled_builds`), then the liboqs it was given.  Each a dict:
    build, release, options, compiler, level, source, state, prefix, loaded (this process's liboqs)."""

    try:
        loaded = liboqs_info()["build"]
    except LiboqsNotFound:
        loaded = ""
    own = [builds.Build(r, o, origin=origin) for r, origin in
           [(r, "crate") for r in builds.own_releases()] + [(r, builds.SOURCE) for r in builds.sources()]
           for o in builds.OPTIONS]
    rows = [_catalogue_row(build) for build in own + compiled_builds()]
    for build in given_builds():
        rows.append({"build": build.id, "release": build.release, "options": build.options,
                     "compiler": "", "level": "", "source": build.library,
                     "state": "given (system, conda or OQS_INSTALL_PATH)",
                     "prefix": str(build.prefix)})
    return [r | {"loaded": r["build"] == loaded} for r in rows]


def compiled_builds() -> list[builds.Build]:
    """pqlab's own builds with a compiler or a level tag (``liboqs-0.9.0+clang19+Os``) that are installed or
    in the per-user cache: the ones someone asked for (any other is built on first use)."""
    names = [p.name for p in builds.paths.LIBOQS_PREFIX.glob("liboqs-*") if p.is_dir()] + [
        p.name.rsplit("-", 1)[0] for p in liboqs_build.cache_root().glob("liboqs-*") if p.is_dir()]
    found = {}
    for name in names:
        try:
            build = builds.parse(name)
        except (BadInput, UnknownName):  # not one of pqlab's ids (a folder someone else left)
            continue
        if build.compiler or build.level:
            found[build.id] = build
    return sorted(found.values(), key=lambda b: (builds.version_key(b.release), b.id))


def _catalogue_row(build: builds.Build) -> dict:
    """One row of :func:`catalogue`: where `build` stands here (installed, cached, built on first use, or why
    it cannot be built) and what it is built from."""
    row = {"build": build.id, "release": build.release, "options": build.options,
           "compiler": build.compiler or "cc", "level": builds.level_of(build.id),
           "prefix": str(build.prefix)}
    try:
        key, inputs = liboqs_build.build_key(build)
    except (LiboqsBuildError, BadInput) as exc:
        return row | {"source": "", "state": f"cannot be built here: {exc}"}
    if liboqs_build.installed_key(build) == key and not liboqs_build.entry_problem(build.prefix):
        state = "installed"
    elif not liboqs_build.entry_problem(liboqs_build.cache_root() / key):
        state = "in the per-user cache (installed on first use)"
    else:
        state = "built on first use"
    return row | {"state": state, "source": (
        f"crates.io {inputs['crate']} (sha256 {inputs['crate_sha256'][:16]}...)" if "crate" in inputs else
        f"source tree {inputs['source']} (" + (f"git {inputs['source_commit'][:12]}, "
                                               if inputs["source_commit"] else "")
        + f"sha256 {inputs['source_sha256'][:16]}...)")}


def build_environment(build, base: dict | None = None) -> dict:
    """Environment for a worker process that must load `build` (a :class:`pqlab.core.builds.Build` or its id):
    pqlab's own builds are installed first when missing, damaged or built from other inputs than today's
    (built on first need: the per-user cache makes that a copy), a given liboqs is used where it is."""
    build = builds.parse(build, given_builds() if isinstance(build, str) and "given" in build else ())
    if build.own:

        try:
            liboqs_build.provide(build, announce=lambda line: print(line, file=sys.stderr))
        except BuildToolMissing as exc:  # no compiler here now: a whole installed copy is still that build
            if liboqs_build.entry_problem(build.prefix):
                raise LiboqsNotFound(f"{build.id} is not installed and cannot be built: {exc}") from exc
        except LiboqsBuildError as exc:
            raise LiboqsNotFound(f"{build.id} is not installed and cannot be built: {exc}") from exc
    env = dict(os.environ if base is None else base)
    env["OQS_INSTALL_PATH"] = str(build.prefix)
    env["PQLAB_LIBOQS_BUILD"] = build.id
    return env


def import_oqs():
    """Import liboqs-python without its stdout banner and version warning; a clear error if no liboqs."""
    if "oqs" in sys.modules:
        return sys.modules["oqs"]
    provide_chosen()
    repair_own_builds()
    problem = library_problem()
    if problem:
        raise LiboqsNotFound(f"liboqs not found: {problem}; {HOW_TO_GET}")
    logger = logging.getLogger("oqs.oqs")
    was_disabled = logger.disabled
    logger.disabled = True  # the import-time "faulthandler is disabled" line goes to stdout
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=r"liboqs version .* differs from liboqs-python version")
            import oqs
    finally:
        logger.disabled = was_disabled
    return oqs


def loaded_library_path() -> str:
    """The liboqs shared object liboqs-python loaded in this process (the path it opened, resolved), else the
    first one this process has mapped (/proc/self/maps), or ""."""
    module = sys.modules.get("oqs.oqs")
    opened = getattr(module.native(), "_name", "") if module is not None and hasattr(module, "native") else ""
    if opened and os.path.isabs(opened):
        return os.path.realpath(opened)
    try:
        with open("/proc/self/maps") as fh:
            for line in fh:
                if "liboqs" in line and ".so" in line:
                    return line.split()[-1]
    except OSError:
        pass
    return ""


def read_build_config(library: str | Path) -> dict:
    """The #defines of oqsconfig.h installed beside `library` (liboqs's own build record), if present."""
    lib = Path(library)
    for header in (lib.parent.parent / "include" / "oqs" / "oqsconfig.h",):
        if header.exists():
            config = {}
            for m in re.finditer(r"^#define (OQS_\w+)(?: (.*))?$", header.read_text(), re.M):
                config[m.group(1)] = (m.group(2) or "1").strip().strip('"')
            return config
    return {}


def cpu_extensions(library: str | Path) -> list[str] | None:
    """The CPU extensions the liboqs at `library` detects (``OQS_CPU_has_extension``): what its runtime
    dispatch may use on this CPU; empty for a build without CPU-specific code.  Names and their order come
    from the ``OQS_CPU_EXT`` enum in the build's own common.h; None where that header or the symbol is
    missing."""
    header = Path(library).parent.parent / "include" / "oqs" / "common.h"
    names = re.findall(r"^\s*OQS_CPU_EXT_(\w+),", header.read_text(), re.M) if header.exists() else []
    try:
        has = ctypes.CDLL(str(library)).OQS_CPU_has_extension
    except (OSError, AttributeError):
        return None
    if not names or names[0] != "INIT":
        return None
    return [n for i, n in enumerate(names) if n not in ("INIT", "COUNT") and has(i)]


#: suffixes of CPU-specific implementations in oqsconfig.h (``OQS_ENABLE_KEM_ml_kem_768_x86_64``)
CPU_SPECIFIC = ("avx2", "avx512", "x86_64", "aarch64", "aesni", "neon")
_CPU_SPECIFIC = re.compile(rf"OQS_ENABLE_(?:KEM|SIG|SIG_STFL|SHA3)_(\w+?)_({'|'.join(CPU_SPECIFIC)})")


def cpu_specific_code(config: dict) -> dict[str, list[str]]:
    """``{liboqs id: [CPU-specific implementations compiled in]}`` from a build's oqsconfig.h defines, e.g.
    ``{"ml_kem_768": ["x86_64"], "falcon_512": ["avx2"], "xkcp_low": ["avx2"]}`` (ids as in oqsconfig.h;
    ``xkcp_low`` is the Keccak code under SHA-3 and SHAKE).  An algorithm that is absent has portable C only.
    A dist build picks such code at run time where the CPU has the extensions it needs; a generic build
    has none."""
    out: dict[str, list[str]] = {}
    for key in config:
        m = _CPU_SPECIFIC.fullmatch(key)
        if m:
            out.setdefault(m[1], []).append(m[2])
    return out


def options_of(config: dict) -> str:
    """A loaded build's options from its build-info: ``default`` (a dist build), ``generic`` (no CPU-specific
    code at all), ``native-<target>``, or ``unknown``."""
    if not config:
        return "unknown"
    if config.get("OQS_DIST_BUILD") == "1":
        return "default"
    return ("generic" if config.get("OQS_OPT_TARGET") == "generic"
            else f"native-{config.get('OQS_OPT_TARGET')}")


def liboqs_info() -> dict:
    """Versions and build options of the liboqs this process uses (imports oqs)."""
    oqs = import_oqs()
    path = loaded_library_path()
    config = read_build_config(path) if path else {}
    info = {
        "liboqs_version": oqs.oqs_version(),
        "liboqs_python_version": oqs.oqs_python_version(),
        "liboqs_path": path,
        "options": options_of(config),
        "build": _build_id(oqs.oqs_version(), path, options_of(config)),
        "build_config": {k: v for k, v in config.items() if k in (
            "OQS_VERSION_TEXT", "OQS_COMPILE_BUILD_TARGET", "OQS_DIST_BUILD", "OQS_OPT_TARGET",
            "OQS_USE_OPENSSL")
            or re.fullmatch(r"OQS_USE_\w+_INSTRUCTIONS", k)},
        "built_from": built_from(path) if path else {},
        "cpu_extensions": cpu_extensions(path) if path else None,
        "cpu_specific": cpu_specific_code(config),
    }
    requested = os.environ.get("PQLAB_LIBOQS_BUILD")
    if requested and info["build"] != requested:
        raise LiboqsNotFound(
            f"asked for {requested} but loaded {path} ({info['build']}); a liboqs on the system loader path "
            "takes precedence in liboqs-python: remove it from the loader path to compare builds")
    return info


#: What a run records of where its liboqs came from (pqlab's own builds: the build.json beside the library).
BUILT_FROM = ("crate", "crate_sha256", "source", "source_commit", "source_sha256", "compiler", "compiler_tag",
              "level", "cmake")


def built_from(library: str | Path) -> dict:
    """Where pqlab's build at `library` came from, from its build.json: the crate and its sha256, or the
    source tree with its git commit and sha256; the compiler (and its tag, and the optimisation level, for
    a build that names them: ``liboqs-0.9.0+clang19+Os``) and CMake.  Empty for a liboqs pqlab was given."""
    record = Path(library).parent.parent / liboqs_build.RECORD
    try:
        inputs = json.loads(record.read_text()).get("inputs") or {}
    except (OSError, ValueError, AttributeError):
        return {}
    return {k: inputs[k] for k in BUILT_FROM if k in inputs} if isinstance(inputs, dict) else {}


def _build_id(release: str, path: str, options: str) -> str:
    """The id of the build loaded from `path` (:class:`pqlab.core.builds.Build`): pqlab's own under
    .venv/liboqs, else a given one."""
    own = builds.own_build_at(Path(path).parent.parent) if path else None
    if own is not None:
        return builds.Build(release, options, origin=own.origin, compiler=own.compiler, level=own.level).id
    return builds.Build(release, builds.GIVEN, path).id


def write_pth(site_packages: Path, build="default") -> Path:
    """Write the .pth that makes the venv's interpreter find pqlab's liboqs with nothing exported: the build
    ``PQLAB_LIBOQS_BUILD`` names (one of pqlab's own, under .venv/liboqs/), which the .pth sets to `build`
    where `build` is not :data:`pqlab.core.builds.SETUP` (a source tree's build chosen by ``make setup
    LIBOQS_SOURCE=DIR``) and the environment does not set it; setup's build where it is unset or empty."""
    build = builds.parse(build)
    pth = Path(site_packages) / "pqlab_liboqs.pth"
    root, default = str(paths.LIBOQS_PREFIX), str(builds.SETUP.prefix)
    chosen = "" if build == builds.SETUP else f"os.environ.setdefault({builds.CHOOSE!r}, {build.id!r}); "
    line = (f"import os; {chosen}b = os.environ.get({builds.CHOOSE!r}, ''); "
            f"os.environ.setdefault('OQS_INSTALL_PATH', os.path.join({root!r}, b) "
            f"if b.startswith('liboqs-') and '+given' not in b and '/' not in b else {default!r})\n")
    return atomic_write_text(pth, line)


def provide_chosen() -> None:
    """Install the build ``PQLAB_LIBOQS_BUILD`` names, when it is one of pqlab's own and is not installed
    (built on first need: the per-user cache makes that a copy), before liboqs-python looks for it."""
    asked = os.environ.get(builds.CHOOSE, "").strip()
    if not asked or builds.options_of(asked) == builds.GIVEN:  # a given liboqs is found where it is
        return
    try:
        build = builds.parse(asked)
    except BadInput as exc:
        raise LiboqsNotFound(f"{builds.CHOOSE}={asked}: {exc}") from exc
    if build.own and liboqs_build.entry_problem(build.prefix):
        try:
            liboqs_build.provide(build, announce=lambda line: print(line, file=sys.stderr))
        except LiboqsBuildError as exc:
            raise LiboqsNotFound(f"{build.id} is not installed and cannot be built: {exc}") from exc
