"""Building liboqs once per machine and release: CMake over the crates.io sources of oqs-sys, cached per user.

liboqs-python needs the C library liboqs as a shared ``liboqs.so``.  pqlab builds each liboqs release that
crates.io carries (0.9.0, 0.12.0, 0.13.0: :mod:`pqlab.core.builds`) from the sources its ``oqs-sys`` crate
bundles, pinned with its checksum in ``native/liboqs/<release>/Cargo.lock``: cargo only downloads and unpacks
the crate (``cargo metadata`` names where), CMake builds the static library with the options oqs-sys
uses, and the C compiler links it whole, with the one function liboqs-python 0.16 adds
(``native/liboqs_shim.c``), into ``liboqs.so`` exporting every ``OQS_*`` symbol
(``native/liboqs.map``).  There is no Rust compile and no bindgen step.

Each build lands in a per-user cache, ``$XDG_CACHE_HOME/pqlab/liboqs/<key>/`` (default
``~/.cache``), keyed by everything that decides the library: the crate's checksum, the shim
and version script, the compiler and CMake versions, the CMake options and the build's options.  A
second clone on the same machine therefore copies the library instead of compiling it, and
``make clean`` never touches the cache.  Concurrent builds of one key wait on a lock, and an
entry appears by an atomic rename only when complete.  Its ``build.json`` records the sha256 of every
file in it (``files``), checked on every hit and again in the installed copy: an entry that was
truncated or replaced is built again, an installed copy that was is copied again, each with one line
saying so (:mod:`pqlab.core.integrity`).  An entry of an older pqlab (no ``files``) whose library loads in a
child process gets its sha256 recorded then.

A source tree the user gave (``liboqs-<release>+source``: :func:`pqlab.core.builds.add_source`) is built the
same way, with the same options, from that tree instead of a crate; its key and record hold the tree's
folder, its git commit where it is a git checkout, and the sha256 of what decides the library (the top
CMakeLists.txt, .CMake/ and src/: :func:`source_identity`).  Families an older pqlab does not name (SLH-DSA,
SNOVA, MQOM, NTRU in liboqs 0.16) keep the release's own default, which is on.

    build_key(build) -> (key, inputs)     what a build depends on (build: a pqlab.core.builds.Build or its id)
    cached_build(build) -> Path           the cache entry, built first if missing
    provide(build) -> Path                the build installed as .venv/liboqs/<build id>/

Options: ``default`` (``OQS_DIST_BUILD``: every CPU-specific implementation, chosen at run
time) and ``generic`` (portable C only: ``OQS_DIST_BUILD=OFF``, ``OQS_OPT_TARGET=generic``).
"""
from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

from pqlab.core.builds import SOURCE, Build, compiler_command, parse, tree_release, version_key
from pqlab.core.errors import BadInput
from pqlab.core.files import atomic_write_text
from pqlab.core.integrity import elf_problem, sha256_file, tree_digests, tree_problem
from pqlab.core.paths import NATIVE

CRATE = "oqs-sys"
SHIM = NATIVE / "liboqs_shim.c"
VERSION_SCRIPT = NATIVE / "liboqs.map"
#: The file in each cache entry and installed build that records what it was built from.
RECORD = "build.json"


class LiboqsBuildError(RuntimeError):
    """liboqs could not be built here; the message names the missing piece and the fix."""


class BuildToolMissing(LiboqsBuildError):
    """A tool the build needs (cargo, cmake, a C compiler) is not installed."""


def cache_root() -> Path:
    """``$XDG_CACHE_HOME/pqlab/liboqs`` (``~/.cache/pqlab/liboqs`` when unset or not absolute)."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    root = Path(base) if os.path.isabs(base) else Path.home() / ".cache"
    return root / "pqlab" / "liboqs"


def _tool(name: str, why: str) -> str:
    path = shutil.which(name)
    if not path:
        raise BuildToolMissing(f"building liboqs needs `{name}` ({why}), which is not installed; install it, "
                               "or use the conda route in README.md (liboqs from conda-forge, nothing built)")
    return path


def c_compiler(build: Build | None = None) -> str:
    """The C compiler of `build`: the one its compiler tag names (``+clang19``: ``clang-19``), else the one
    CMake would pick, ``$CC`` or ``cc``.  A tagged compiler that is not installed is refused in one line
    naming its provisioning step."""
    if build is None or not build.compiler:
        return _tool(os.environ.get("CC") or "cc", "the C compiler")
    command = compiler_command(build.compiler)
    found = shutil.which(command)
    if not found:
        raise BuildToolMissing(f"{build.id} is built with `{command}`, which is not installed: run "
                               f"`python -m pqlab.app.provision compiler {build.compiler}` (Debian: apt-get "
                               f"install {command}; conda: the conda-forge package of that compiler)")
    return found


def _first_line(cmd: list[str]) -> str:
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    return (out.stdout or out.stderr).strip().splitlines()[0] if out.returncode == 0 else ""


def crate_checksum(build: Build) -> tuple[str, str]:
    """(version, sha256 of the .crate archive) of oqs-sys as the build's native/liboqs/<release>/Cargo.lock
    pins it.  cargo checks the downloaded archive against this checksum, so it identifies the sources."""
    lockfile = build.manifest.with_name("Cargo.lock")
    lock = tomllib.loads(lockfile.read_text())
    for package in lock.get("package", []):
        if package["name"] == CRATE:
            return package["version"], package["checksum"]
    raise LiboqsBuildError(f"{lockfile} does not pin {CRATE}: restore it from git")


def c_flags() -> list[str]:
    """The C flags the Rust `cmake` crate passed when oqs-sys built liboqs (kept identical)."""
    flags = ["-ffunction-sections", "-fdata-sections", "-fPIC"]
    if platform.machine() in ("x86_64", "AMD64"):
        flags += ["-m64", "-march=x86-64"]
    return flags + ["-w"]


def cmake_options(options: str, level: str = "") -> dict[str, str]:
    """The liboqs CMake options of oqs-sys with features ``kems`` and ``sigs`` (HQC included: liboqs 0.13
    switches it off by default, oqs-sys switches it on), and the target of the build's `options`.  The
    families an older release lacks (ML-KEM, ML-DSA, CROSS, MAYO, UOV before 0.12/0.13) are options its CMake
    ignores.  `level` (``Os``: :data:`pqlab.core.builds.LEVELS`) replaces liboqs's own ``-O3``: its CMake adds
    that with ``add_compile_options``, after every flag a user can set, so the level goes at the end of the
    compile rule itself (``CMAKE_C_COMPILE_OBJECT``, which CMake keeps when given), where the last ``-O``
    wins; assembly sources keep theirs."""
    enabled = ["KEM_CLASSIC_MCELIECE", "KEM_FRODOKEM", "KEM_HQC", "KEM_KYBER", "KEM_ML_KEM", "KEM_NTRUPRIME",
               "SIG_CROSS", "SIG_DILITHIUM", "SIG_FALCON", "SIG_MAYO", "SIG_ML_DSA", "SIG_SPHINCS", "SIG_UOV"]
    chosen = {f"OQS_ENABLE_{name}": "Yes" for name in enabled} | {
        "CMAKE_BUILD_TYPE": "Release", "OQS_BUILD_ONLY_LIB": "Yes", "OQS_USE_OPENSSL": "No",
        # oqs-sys leaves BIKE out on 32-bit ARM, where liboqs does not support it
        "OQS_ENABLE_KEM_BIKE": "No" if platform.machine().startswith("armv") else "Yes"}
    if options == "default":
        chosen["OQS_DIST_BUILD"] = "Yes"
    else:
        chosen |= {"OQS_DIST_BUILD": "OFF", "OQS_OPT_TARGET": "generic"}
    flags = " ".join(c_flags())
    if level:
        chosen["CMAKE_C_COMPILE_OBJECT"] = (f"<CMAKE_C_COMPILER> <DEFINES> <INCLUDES> <FLAGS> -{level} "
                                            "-o <OBJECT> -c <SOURCE>")
    return chosen | {"CMAKE_C_FLAGS": flags, "CMAKE_ASM_FLAGS": flags}


def needs_shim(release: str) -> bool:
    """Whether liboqs `release` lacks what native/liboqs_shim.c adds (``OQS_SIG_supports_ctx_str`` came with
    0.14.0); a later release is linked without it."""
    return version_key(release) < (0, 14, 0)


LINK_FLAGS = ["-shared", "-pthread", "-Wl,-soname,liboqs.so", "-Wl,--gc-sections", "-Wl,-z,relro,-z,now",
              "-Wl,-z,noexecstack"]


def _own(build) -> Build:
    build = parse(build)  # refuses unknown releases and options
    if not build.own:
        raise LiboqsBuildError(f"{build.id} is a liboqs pqlab was given ({build.library}), not one it builds")
    return build


#: What in a liboqs source tree decides the library (with OQS_BUILD_ONLY_LIB): hashed into its build's key.
SOURCE_PARTS = ("CMakeLists.txt", ".CMake", "src")


def source_identity(tree: Path) -> dict:
    """Where a source tree's build comes from: its folder, its git commit (where it is a checkout; with
    ``-modified`` when tracked files differ from it) and the sha256 of :data:`SOURCE_PARTS`."""
    tree = Path(tree)
    digest = hashlib.sha256()
    for part in SOURCE_PARTS:
        path = tree / part
        files = {part: sha256_file(path)} if path.is_file() else {
            f"{part}/{name}": sha for name, sha in tree_digests(path).items()} if path.is_dir() else {}
        for name, sha in files.items():
            digest.update(f"{name}\0{sha}\n".encode())
    commit = ""
    if (tree / ".git").exists() and shutil.which("git"):
        head = subprocess.run(["git", "-C", str(tree), "rev-parse", "HEAD"], capture_output=True, text=True)
        dirty = subprocess.run(["git", "-C", str(tree), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True)
        if head.returncode == 0:
            commit = head.stdout.strip() + ("-modified" if dirty.stdout.strip() else "")
    return {"source": str(tree), "source_commit": commit, "source_sha256": digest.hexdigest()}


def _origin(build: Build) -> dict:
    """The inputs that say where `build`'s sources come from: its crate, or its source tree."""
    if build.origin != SOURCE:
        version, checksum = crate_checksum(build)
        return {"crate": f"{CRATE} {version}", "crate_sha256": checksum}
    tree = build.tree
    found = tree_release(tree)  # refuses a tree that is no longer liboqs
    if found != build.release:
        raise BadInput(f"the source tree registered for {build.id} ({tree}) now holds liboqs {found}; "
                       f"register it again: make setup LIBOQS_SOURCE={tree}")
    return source_identity(tree)


def build_key(build) -> tuple[str, dict]:
    """The cache key of `build` (a :class:`pqlab.core.builds.Build` or its id) here, and the inputs it hashes
    (stored in each entry: the build's record of where it came from)."""
    build = _own(build)
    cc = c_compiler(build)
    inputs = {
        **_origin(build),
        "shim_sha256": sha256_file(SHIM) if needs_shim(build.release) else "",
        "version_script_sha256": sha256_file(VERSION_SCRIPT),
        "compiler": f"{os.path.realpath(cc)}: {_first_line([cc, '--version'])}",
        "compiler_target": _first_line([cc, "-dumpmachine"]),
        "cmake": _first_line([_tool("cmake", "the liboqs build system"), "--version"]),
        "cmake_options": cmake_options(build.options, build.level), "link_flags": LINK_FLAGS,
        "build": build.id, "release": build.release, "options": build.options,
        # only where set: the keys of the builds made before compilers and levels were options stay theirs
        **{k: v for k, v in (("compiler_tag", build.compiler), ("level", build.level)) if v},
    }
    digest = hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()
    return f"{build.id}-{digest[:20]}", inputs


def crate_sources(build: Build) -> Path:
    """The liboqs sources inside the build's oqs-sys crate; cargo downloads and unpacks it if needed."""
    cargo = _tool("cargo",
                  "it fetches the liboqs sources from crates.io; install Rust from https://rustup.rs")
    proc = subprocess.run([cargo, "metadata", "--locked", "--format-version", "1", "--manifest-path",
                           str(build.manifest)], capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise LiboqsBuildError(f"cargo could not fetch {CRATE} from crates.io: {proc.stderr.strip()[-500:]}")
    version, _ = crate_checksum(build)
    for package in json.loads(proc.stdout)["packages"]:
        if package["name"] == CRATE and package["version"] == version:
            sources = Path(package["manifest_path"]).parent / "liboqs"
            if (sources / "CMakeLists.txt").exists():
                return sources
            raise LiboqsBuildError(f"{sources} has no CMakeLists.txt: the unpacked crate is incomplete; "
                                   f"delete {Path(package['manifest_path']).parent} and run again")
    raise LiboqsBuildError(f"cargo metadata does not list {CRATE} {version} for {build.manifest}")


@contextlib.contextmanager
def _locked(path: Path):
    """An exclusive lock held on `path` (created if missing) for the duration of the block."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _run(cmd: list[str], log: Path, step: str) -> None:
    with open(log, "a") as out:
        out.write(f"$ {' '.join(cmd)}\n")
        out.flush()
        proc = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        tail = "".join(log.read_text(errors="replace").splitlines(keepends=True)[-40:])
        raise LiboqsBuildError(f"liboqs build failed at step '{step}' (exit {proc.returncode}); "
                               f"last lines of {log}:\n{tail}")


def _compile(build: Build, inputs: dict, work: Path, log: Path) -> Path:
    """Build into `work`/out (lib/liboqs.so, include/oqs/, build.json); return that folder."""
    cmake, cc = _tool("cmake", "the liboqs build system"), c_compiler(build)
    sources = Path(inputs["source"]) if build.origin == SOURCE else crate_sources(build)
    build, staged, out = work / "build", work / "install", work / "out"
    generator = ["-G", "Ninja"] if shutil.which("ninja") else ["-G", "Unix Makefiles"]
    defines = [f"-D{k}={v}" for k, v in inputs["cmake_options"].items()]
    _run([cmake, "-S", str(sources), "-B", str(build), *generator, *defines, f"-DCMAKE_C_COMPILER={cc}",
          f"-DCMAKE_ASM_COMPILER={cc}", f"-DCMAKE_INSTALL_PREFIX={staged}"], log, "cmake configure")
    _run([cmake, "--build", str(build), "--target", "install", "--parallel", str(os.cpu_count() or 1)],
         log, "cmake build")
    static = next((p for p in (staged / "lib" / "liboqs.a", staged / "lib64" / "liboqs.a") if p.exists()),
                  None)
    if static is None:
        raise LiboqsBuildError(f"the CMake build installed no liboqs.a under {staged} (log: {log})")
    (out / "lib").mkdir(parents=True)
    shutil.copytree(staged / "include", out / "include")
    shim = [work / "liboqs_shim.o"] if inputs["shim_sha256"] else []
    for obj in shim:
        _run([cc, *c_flags(), "-O3", "-I", str(out / "include"), "-c", str(SHIM), "-o", str(obj)], log,
             "compile shim")
    _run([cc, *LINK_FLAGS, f"-Wl,--version-script={VERSION_SCRIPT}", "-o", str(out / "lib" / "liboqs.so"),
          "-Wl,--whole-archive", str(static), "-Wl,--no-whole-archive", *map(str, shim)], log,
         "link liboqs.so")
    return out


def _read_record(folder: Path) -> dict:
    try:
        record = json.loads((folder / RECORD).read_text())
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def entry_problem(entry: Path) -> str:
    """"" when the cache entry (or installed copy) `entry` holds the files its build.json recorded, each with
    its sha256; otherwise what is wrong, as a phrase that follows the folder's name."""

    record = _read_record(entry)
    if not record:
        return "is incomplete (no readable build.json)" if entry.exists() else "is missing"
    files = record.get("files")
    if isinstance(files, dict) and "lib/liboqs.so" not in files:
        return "records no sha256 of lib/liboqs.so"
    return tree_problem(entry, files)


def _adopt(entry: Path, announce) -> bool:
    """Record the sha256 of an entry an older pqlab built (its build.json has no ``files``), when its library
    is a whole ELF file that loads in a child process; whether it was adopted."""

    record = _read_record(entry)
    library = entry / "lib" / "liboqs.so"
    if not record or "files" in record or not library.is_file() or elf_problem(library):
        return False
    try:
        _check(library)
    except LiboqsBuildError:
        return False
    record["files"] = tree_digests(entry, skip=(RECORD, "build.log"))
    atomic_write_text(entry / RECORD, json.dumps(record, indent=1) + "\n")
    announce(f"liboqs: the cache entry {entry} was built by an older pqlab without sha256 records; its "
             "library loads, so its files' sha256 are recorded now")
    return True


def _check(library: Path) -> None:
    """Refuse a library liboqs-python could not use (checked in a child: this process keeps its own
    liboqs)."""
    code = "import sys; from pqlab.liboqs.loader import check_library; print(check_library(sys.argv[1]))"
    proc = subprocess.run([sys.executable, "-c", code, str(library)], capture_output=True, text=True,
                          timeout=120)
    why = proc.stdout.strip() if proc.returncode == 0 else proc.stderr.strip()[-500:]
    if why:
        raise LiboqsBuildError(f"the freshly built {library} is not usable: {why}")


def cached_build(build, *, announce=print) -> Path:
    """The cache entry of `build` (lib/liboqs.so, include/oqs/, build.json), built if missing."""
    build = _own(build)
    key, inputs = build_key(build)
    root = cache_root()
    entry = root / key
    if not entry_problem(entry):
        return entry
    with _locked(root / f"{key}.lock"):
        bad = entry_problem(entry)
        if not bad or _adopt(entry, announce):  # another process built it while we waited, or an old entry
            return entry
        if entry.exists():
            announce(f"{build.id}: the cache entry {entry} {bad}: building it again")
        announce(f"{build.id}: building from "
                 + (f"the crates.io sources of {inputs['crate']}" if "crate" in inputs
                    else f"the source tree {inputs['source']}") + f" (once per machine; cached in {entry})")
        for stale in [entry, *root.glob(f".tmp-{key}-*")]:  # left by an interrupted build (we hold the lock)
            _remove(stale)
        work = root / f".tmp-{key}-{os.getpid()}"
        work.mkdir(parents=True)
        log = root / f"{key}.log"  # kept where it is if the build fails
        log.unlink(missing_ok=True)
        try:
            start = time.monotonic()
            out = _compile(build, inputs, work, log)
            _check(out / "lib" / "liboqs.so")

            record = {"key": key, "inputs": inputs, "build_seconds": round(time.monotonic() - start, 1),
                      "built_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                      "files": tree_digests(out, skip=(RECORD, "build.log"))}
            (out / RECORD).write_text(json.dumps(record, indent=1) + "\n")
            os.replace(log, out / "build.log")
            os.rename(out, entry)  # the entry appears complete or not at all
        finally:
            _remove(work)
    return entry


def installed_key(build) -> str:
    """The cache key of the build installed as .venv/liboqs/<build id>, or "" if none (or not pqlab's)."""
    try:
        return json.loads((parse(build).prefix / RECORD).read_text())["key"]
    except (OSError, ValueError, KeyError):
        return ""


def provide(build, *, announce=print) -> Path:
    """Install `build` (from the cache, built first if missing or damaged) as .venv/liboqs/<build id>/; an
    installed copy whose files do not match the sha256 recorded for them is installed again.  A source tree's
    build whose tree is gone (or holds another release now) keeps its intact installed copy, saying so."""
    build = _own(build)
    try:
        entry = cached_build(build, announce=announce)
    except BadInput as exc:  # a source tree gone, or of another release now: an intact installed copy is it
        if build.origin != SOURCE or entry_problem(build.prefix):
            raise
        announce(f"{build.id}: {exc}; the installed copy {build.prefix} is used as it is")
        return build.prefix
    dest = build.prefix
    with _locked(dest.parent / f".{build.id}.lock"):
        if installed_key(build) == entry.name:
            bad = entry_problem(dest)
            if not bad:
                return dest
            announce(f"{build.id}: the installed copy {dest} {bad}: installing it again from {entry}")
        stage, old = dest.parent / f".{build.id}.tmp", dest.parent / f".{build.id}.old"
        for path in (stage, old):
            _remove(path)
        shutil.copytree(entry, stage, ignore=shutil.ignore_patterns("build.log"))
        if dest.exists() or dest.is_symlink():
            os.rename(dest, old)
        os.rename(stage, dest)  # an interrupted install never leaves a half-copied library behind
        _remove(old)
    return dest


def _remove(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.exists():
        shutil.rmtree(path)
