"""Finding and loading liboqs, the C library under liboqs-python, quietly and reproducibly.

Order of preference (the setup issue): a liboqs that is already loadable (``OQS_INSTALL_PATH``,
a conda environment, the system's loader path) is used as it is; otherwise the build of
``native/`` installed by ``make setup`` under ``.venv/liboqs/<variant>/``.  ``make setup``
writes a ``.pth`` file into the virtual environment that points ``OQS_INSTALL_PATH`` at the
default build, so the shell, Jupyter kernels, papermill and pytest all find it with nothing
exported.  A worker process picks another build variant through :func:`variant_environment`.

liboqs-python prints a line to stdout when imported and warns when liboqs and liboqs-python
versions differ; :func:`import_oqs` keeps both out of notebook outputs and pqlab records
both versions in every run's metadata instead (:func:`liboqs_info`).
"""
from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import re
import sys
import warnings
from pathlib import Path

from .files import atomic_write_text
from .paths import LIBOQS_PREFIX

VARIANTS = ("default", "generic")
#: liboqs-python 0.16 needs this symbol; liboqs 0.13 gets it from native/'s shim.
REQUIRED_SYMBOLS = ("OQS_SIG_new", "OQS_KEM_new", "OQS_SIG_supports_ctx_str")


class LiboqsNotFound(RuntimeError):
    """No usable liboqs: names where it looked and how to get one."""


def _candidates() -> list[Path]:
    """Where liboqs-python looks, in its order: the loader's path first, then OQS_INSTALL_PATH."""
    found: list[Path] = []
    for name in ("oqs", "liboqs"):
        lib = ctypes.util.find_library(name)
        if lib:
            found.append(Path(lib))
    install = os.environ.get("OQS_INSTALL_PATH")
    if install:
        found += [Path(install) / "lib" / "liboqs.so", Path(install) / "lib64" / "liboqs.so"]
    conda = os.environ.get("CONDA_PREFIX")
    if conda:
        found.append(Path(conda) / "lib" / "liboqs.so")
    return found


def check_library(path: Path | str) -> str:
    """Return "" when the library at `path` loads and has every symbol liboqs-python needs, else why not."""
    try:
        lib = ctypes.CDLL(str(path))
    except OSError as exc:
        return f"cannot load {path}: {exc}"
    missing = [s for s in REQUIRED_SYMBOLS if not hasattr(lib, s)]
    return f"{path} lacks {', '.join(missing)}" if missing else ""


def find_usable_liboqs() -> Path | None:
    """A liboqs already loadable without pqlab's build (system, conda, OQS_INSTALL_PATH), if any."""
    for path in _candidates():
        if LIBOQS_PREFIX in path.parents:
            continue  # pqlab's own build: not "already there"
        if (path.exists() or "/" not in str(path)) and not check_library(path):
            return path
    return None


def variant_prefix(variant: str = "default") -> Path:
    if variant not in VARIANTS:
        raise ValueError(f"unknown liboqs variant {variant!r}: choose one of {', '.join(VARIANTS)}")
    return LIBOQS_PREFIX / variant


def variant_environment(variant: str, base: dict | None = None) -> dict:
    """Environment for a worker process that must load the `variant` build of native/."""
    lib = variant_prefix(variant) / "lib" / "liboqs.so"
    if not lib.exists():
        raise LiboqsNotFound(f"the {variant} build of liboqs is not installed ({lib} is missing): run `make setup`")
    env = dict(os.environ if base is None else base)
    env["OQS_INSTALL_PATH"] = str(variant_prefix(variant))
    env["PQLAB_LIBOQS_VARIANT"] = variant
    return env


def import_oqs():
    """Import liboqs-python without its stdout banner and version warning; a clear error if no liboqs."""
    if "oqs" in sys.modules:
        return sys.modules["oqs"]
    if not any(p.exists() or "/" not in str(p) for p in _candidates()):
        raise LiboqsNotFound(
            "liboqs was not found (looked at the system loader path, OQS_INSTALL_PATH and CONDA_PREFIX); "
            "liboqs-python would now try to git-clone and build it, which cannot work offline. "
            "Run `make setup` (builds it from native/), or use the conda route in README.md."
        )
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
    """The liboqs shared object this process has mapped (from /proc/self/maps), or ""."""
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


def variant_of(config: dict) -> str:
    """Name the build variant from its build-info: generic = no CPU-specific code at all."""
    if not config:
        return "unknown"
    if config.get("OQS_DIST_BUILD") == "1":
        return "default"
    return "generic" if config.get("OQS_OPT_TARGET") == "generic" else f"native-{config.get('OQS_OPT_TARGET')}"


def liboqs_info() -> dict:
    """Versions and build options of the liboqs this process uses (imports oqs)."""
    oqs = import_oqs()
    path = loaded_library_path()
    config = read_build_config(path) if path else {}
    info = {
        "liboqs_version": oqs.oqs_version(),
        "liboqs_python_version": oqs.oqs_python_version(),
        "liboqs_path": path,
        "variant": variant_of(config),
        "build_config": {k: v for k, v in config.items() if k in (
            "OQS_VERSION_TEXT", "OQS_COMPILE_BUILD_TARGET", "OQS_DIST_BUILD", "OQS_OPT_TARGET",
            "OQS_USE_OPENSSL", "OQS_USE_AVX2_INSTRUCTIONS")},
    }
    requested = os.environ.get("PQLAB_LIBOQS_VARIANT")
    if requested and info["variant"] != requested:
        raise LiboqsNotFound(
            f"asked for the {requested} build of liboqs but loaded {path} ({info['variant']}); "
            "a liboqs on the system loader path takes precedence in liboqs-python: remove it from "
            "the loader path to compare build variants")
    return info


def write_pth(site_packages: Path, variant: str = "default") -> Path:
    """Write the .pth that makes the venv's interpreter find native/'s liboqs with nothing exported."""
    pth = Path(site_packages) / "pqlab_liboqs.pth"
    line = f"import os; os.environ.setdefault('OQS_INSTALL_PATH', {str(variant_prefix(variant))!r})\n"
    return atomic_write_text(pth, line)
