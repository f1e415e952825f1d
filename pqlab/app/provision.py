"""`python -m pqlab.app.provision ...`: the steps of `make setup` that need Python.

    python -m pqlab.app.provision liboqs default   # liboqs for liboqs-python (a loadable one, else pqlab's
                                                   # build)
    python -m pqlab.app.provision liboqs generic   # the portable build (notebook 04 and the tests, on first
                                                   # need)
    python -m pqlab.app.provision liboqs liboqs-0.12.0   # another release (pqlab.core.builds; also built on
                                                         # first need)
    python -m pqlab.app.provision liboqs releases  # every release in native/liboqs/ but setup's (notebook 04,
                                                   # the tests)
    python -m pqlab.app.provision liboqs-source DIR  # a liboqs source tree: registered, built, made this
                                                     # clone's default (make setup LIBOQS_SOURCE=DIR)
    python -m pqlab.app.provision compiler clang19  # a C compiler a build's tag names (liboqs-0.13.0+clang19:
                                                    # clang-19), from Debian's packages (exit 1: not there)
    python -m pqlab.app.provision latex            # pdflatex for `make paper` (exit 1: not there)
    python -m pqlab.app.provision browser          # chromium for the report's browser test (exit 1: not
                                                   # there)
    python -m pqlab.app.provision notebook-filter  # git keeps notebooks without outputs (nbstripout as a git
                                                   # filter)
    python -m pqlab.app.provision verify           # what each stamp of make setup stands for, provided
                                                   # again where missing (make setup runs it every time)
    python -m pqlab.app.provision runners          # the measuring helpers outside Python:

- the TSC helper (pqlab/measure/tsc.c, reference cycles from Python) into the per-user cache;
- the native cycle runner (native/bench) against each installed liboqs build;
- the Java program (native/impls/java: Bouncy Castle) when a JDK and Maven are there;
- valgrind (notebook 03) from Debian's packages when it is missing and apt-get can install it.

Each prints what it did or why it skipped; only a failure of something that should have
worked stops setup.

A stamp of ``make setup`` says a step ran, not that what it made is still there: another clone's setup against
a shared venv can remove the venv's ``pqlab_liboqs.pth``, a kernel can be removed, a cache cleared.  So ``make
setup`` ends with :func:`verify`, which checks what each stamp stands for (liboqs loads from the venv, the
Jupyter kernel "pqlab" and git's notebook filter exist, the runners are built) and provides again what is
missing, one line per repair; on a complete checkout it is quick and says nothing.
"""
from __future__ import annotations

import json
import os
import platform
import shlex
import shutil
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

from pqlab.core.builds import (
    CHOOSE,
    OPTIONS,
    SETUP,
    SETUP_RELEASE,
    Build,
    add_source,
    chosen,
    compiler_command,
    own_releases,
    parse,
)
from pqlab.core.errors import BadInput, UnknownName
from pqlab.core.paths import LIBOQS_PREFIX, ROOT
from pqlab.liboqs.build import LiboqsBuildError, entry_problem, provide
from pqlab.liboqs.loader import find_usable_liboqs, write_pth
from pqlab.measure.cycles import _TSC_ARCH, build_helper, helper_path
from pqlab.measure.noise import _SOURCES, _library
from pqlab.publish.report import CHROMIUM_PACKAGE, browser_problem, browser_version, find_chromium

#: The file in the venv's site-packages that makes its interpreter find pqlab's liboqs
#: (:func:`pqlab.liboqs.loader.write_pth`), and the Jupyter kernel setup registers.
PTH, KERNEL = "pqlab_liboqs.pth", "pqlab"


def site_packages() -> Path:
    """This venv's site-packages, where :data:`PTH` goes."""
    return Path(sysconfig.get_paths()["purelib"])


def liboqs(spec: str, site: Path | None = None) -> None:
    """Provide the build `spec` names (pqlab.core.builds: ``default``, ``generic``, ``liboqs-0.12.0``...).
    For the default one, a liboqs that is already loadable (system, conda, OQS_INSTALL_PATH) wins; otherwise
    pqlab's build, found by the venv through a .pth file (in `site`, default :func:`site_packages`)."""
    build = parse(spec)
    site = Path(site or site_packages())
    if build == SETUP and (existing := find_usable_liboqs()):
        (site / PTH).unlink(missing_ok=True)
        print(f"liboqs: using the one already installed at {existing}")
        return
    start = time.monotonic()
    where = provide(build)
    if build == SETUP:  # the .pth keeps a build this clone chose (make setup LIBOQS_SOURCE=DIR, builds --use)
        write_pth(site, chosen())
    print(f"{build.id}: {where} ready in {time.monotonic() - start:.1f} s")


def use(spec: str) -> None:
    """Make the build `spec` names (one of pqlab's own) the one this clone's interpreter loads by default: the
    .pth file names it (``PQLAB_LIBOQS_BUILD``), installed first when missing.  ``liboqs-<SETUP_RELEASE>``
    (or ``default`` before any other was chosen) goes back to setup's build."""
    build = parse(spec)
    if not build.own:
        raise BadInput(f"{build.id} is a liboqs pqlab was given: it is loaded where OQS_INSTALL_PATH or the "
                       "loader's path finds it, not chosen here; choose one of pqlab's builds "
                       "(python -m pqlab builds)")
    provide(build)
    write_pth(site_packages(), build)
    os.environ[CHOOSE] = build.id  # the native runners below link this build
    print(f"{build.id}: this clone's interpreter, Jupyter kernel and notebooks load it by default now"
          + ("" if build == SETUP else f" ({CHOOSE}={build.id}; `python -m pqlab builds --use "
                                       f"{SETUP.id}` goes back)"))


def register(tree: str) -> Build:
    """Register the liboqs source tree `tree` and build it (cached per user, like pqlab's own builds)
    (``python -m pqlab builds --add-source DIR``)."""
    build = add_source(tree)
    print(f"{build.id}: liboqs {build.release} source tree {build.tree} registered")
    print(f"{build.id}: {provide(build)} ready")
    return build


def liboqs_source(tree: str) -> None:
    """``make setup LIBOQS_SOURCE=DIR``: :func:`register` the liboqs source tree `tree`, make it this clone's
    default and build the native runner against it."""
    use(register(tree).id)
    native_runners()


def native_runners() -> None:
    from pqlab.runners.native import build_native_runner

    for options in OPTIONS:
        if not (parse(options).prefix / "lib" / "liboqs.so").exists():
            why = ("the portable liboqs is built on first need (notebook 04, the tests), and its runner with "
                   "it" if options == "generic"
                   else "pqlab's liboqs build is not installed (a system or conda liboqs is in use)")
            print(f"native runner ({parse(options).id}): not built now: {why}")
            continue
        print(f"native runner ({parse(options).id}): {build_native_runner(options)}")


def tsc_helper() -> None:

    try:
        print(f"TSC helper: {build_helper()}")
    except OSError as exc:
        print(f"TSC helper: skipped ({exc.strerror or exc}); pqlab counts core cycles where a PMU works, "
              "else no cycles")


def reference_loops() -> None:

    try:
        _library()
        print(f"reference loops (pqlab.measure.noise): {helper_path(_SOURCES, 'reference')}")
    except OSError as exc:
        print(f"reference loops: skipped ({exc.strerror or exc}); rounds record no reference and no machine "
              "drift")


def bc_runner() -> None:
    from pqlab.runners.jvm import build_bc_runner, jdk_available

    ok, why = jdk_available()
    if not ok:
        print(f"Bouncy Castle runner: skipped ({why}); notebook 01 will say so and show the rest")
        return
    print(f"Bouncy Castle runner: {build_bc_runner()}")


def apt_install(packages, why: str) -> bool:
    """Install Debian `packages` with apt-get when this process can (root, apt-get present); says what it
    does."""
    apt = shutil.which("apt-get")
    if not apt or os.geteuid() != 0:
        return False
    print(f"{why}: installing {' '.join(packages)} with apt-get")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    subprocess.run([apt, "update", "-qq"], env=env, check=False)
    return subprocess.run([apt, "install", "-y", "-qq", "--no-install-recommends", *packages], env=env,
                          check=False).returncode == 0


def compiler(tag: str) -> bool:
    """The C compiler a build's compiler tag names (``clang19``: Debian's ``clang-19``), installed with
    apt-get where this process can; says where it is, or in one line how to install it."""
    command = compiler_command(tag)
    if not shutil.which(command):
        apt_install([command], f"{command}: missing (the builds tagged +{tag} compile liboqs with it)")
    found = shutil.which(command)
    if found:
        version = subprocess.run([found, "--version"], capture_output=True, text=True).stdout.split("\n")[0]
        print(f"{command}: {found} ({version})")
        return True
    print(f"error: {command} is not installed and could not be installed here (needs root and apt-get): "
          f"sudo apt-get install {command}, or conda install -c conda-forge the compiler, then run again",
          file=sys.stderr)
    return False


def valgrind() -> None:
    if shutil.which("valgrind"):
        print(f"valgrind: {shutil.which('valgrind')}")
        return
    if apt_install(["valgrind"], "valgrind: missing (notebook 03 measures memory with it)"):
        return
    print("valgrind: not installed and could not be installed here (needs root and apt-get); notebook 03 "
          "will measure Python-level memory and max RSS only. Install it with your package manager "
          "(e.g. sudo apt-get install valgrind) and re-run notebook 03.")


def latex() -> bool:
    """pdflatex and the packages paper/ uses (Debian's texlive), installed where apt-get can."""
    from pqlab.publish.paper import TEX_PACKAGES

    if shutil.which("pdflatex") and shutil.which("pdffonts"):
        return True
    if apt_install(TEX_PACKAGES, "LaTeX for make paper") and shutil.which("pdflatex"):
        return True
    print("error: pdflatex is missing and could not be installed here (needs root and apt-get): install "
          f"{' '.join(TEX_PACKAGES)} (Debian, Ubuntu: sudo apt-get install ...) and run make paper again",
          file=sys.stderr)
    return False


def browser() -> bool:
    """Debian's chromium, which tests/publish/test_report.py drives through Playwright
    (pqlab.publish.report.check_pages), installed where apt-get can.  Playwright itself comes from
    requirements.lock (make setup) and never downloads a browser (`playwright install` is never run)."""

    os.environ.setdefault("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
    if find_chromium() is None and not os.environ.get("PQLAB_CHROMIUM"):
        apt_install([CHROMIUM_PACKAGE], "chromium for the report's browser test")
    problem = browser_problem()
    if problem and os.environ.get("PQLAB_CHROMIUM"):
        print(f"error: {problem}: name a Chromium binary there, or unset it to use Debian's "
              f"{CHROMIUM_PACKAGE}", file=sys.stderr)
        return False
    if problem and find_chromium() is None:
        print(f"error: {problem} and could not be installed here (needs root and apt-get): install Debian's "
              f"{CHROMIUM_PACKAGE} (sudo apt-get install {CHROMIUM_PACKAGE}) or set PQLAB_CHROMIUM to a "
              "Chromium binary, and run the tests again", file=sys.stderr)
        return False
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return False
    try:
        print(f"chromium: {find_chromium()}, version {browser_version()}, driven by Playwright")
    except Exception as exc:  # Playwright's own errors: the pair does not work together
        print(f"error: Playwright cannot launch {find_chromium()}: {str(exc).splitlines()[0]}",
              file=sys.stderr)
        return False
    return True


#: nbstripout's command as the git filter of .gitattributes: cell ids kept (tests/nbval_expected is keyed by
#: them), and the kernel's language_info (the Python version of whoever saved) dropped with the outputs
NBSTRIPOUT_ARGS = ("--keep-id", "--extra-keys", "metadata.language_info")


def nbstripout_command() -> list[str]:
    """The one command that strips a notebook (add ``-t`` to filter standard input to standard output): git's
    filter runs it, and so does `make lab`'s pre-save hook (:func:`pqlab.app.lab.stripped`), so they agree
    byte for byte."""
    return [sys.executable, "-m", "nbstripout", *NBSTRIPOUT_ARGS]


def notebook_filter(root: Path | None = None) -> bool:
    """Configure this checkout's git so that a notebook run and saved in JupyterLab (or anywhere) is stored
    without outputs: .gitattributes (committed) names the filter ``nbstripout`` for ``*.ipynb``; this sets its
    command in .git/config, with this venv's Python (nbstripout comes from requirements.lock).  The working
    file keeps its outputs for its user; ``git status`` and ``git diff`` see the stripped notebook.
    Idempotent; a folder that is not a git checkout needs nothing (returns True)."""

    root = root or ROOT
    if shutil.which("git") is None or subprocess.run(["git", "-C", str(root), "rev-parse", "--git-dir"],
                                                     capture_output=True).returncode:
        print("notebook filter: not a git checkout (or no git): nothing to configure")
        return True
    strip = shlex.join(nbstripout_command())
    for key, value in (("filter.nbstripout.clean", strip), ("filter.nbstripout.smudge", "cat"),
                       ("filter.nbstripout.required", "true"), ("diff.ipynb.textconv", f"{strip} -t")):
        subprocess.run(["git", "-C", str(root), "config", key, value], check=True)
    # git's stat cache, refreshed once now through the filter: else the first status after a clone runs it per
    # notebook
    subprocess.run(["git", "-C", str(root), "update-index", "-q", "--refresh"], capture_output=True)
    print("notebook filter: git stores notebooks without outputs (nbstripout, .gitattributes)")
    return True


def runners() -> None:
    """``.stamp-runners``: the measuring helpers outside Python (this module's docstring)."""
    tsc_helper()
    reference_loops()
    native_runners()
    bc_runner()
    valgrind()


def liboqs_problem(site: Path) -> str:
    """"" when the venv finds its liboqs with nothing exported, as ``.stamp-liboqs`` promises: one already
    loadable (:func:`find_usable_liboqs`), else `site`'s :data:`PTH` naming this checkout's builds and the
    build it loads by default installed and intact; otherwise what is missing, as a phrase."""
    if find_usable_liboqs():
        return ""
    try:
        text = (Path(site) / PTH).read_text(encoding="utf-8")
    except FileNotFoundError:
        return f"{PTH} missing from the venv"
    except (OSError, UnicodeDecodeError) as exc:
        return f"{PTH} of the venv cannot be read ({exc})"
    if str(LIBOQS_PREFIX) not in text:  # another clone's setup against this venv wrote it
        return f"{PTH} of the venv names another checkout's liboqs"
    build = chosen()
    why = entry_problem(build.prefix)
    return f"{build.id} in {build.prefix} {why}" if why else ""


def kernel_problem(prefix: Path) -> str:
    """"" when the Jupyter kernel :data:`KERNEL` of the environment `prefix` exists and starts an interpreter
    that exists (``.stamp-kernel``); otherwise what is wrong."""
    spec = Path(prefix) / "share" / "jupyter" / "kernels" / KERNEL / "kernel.json"
    try:
        argv = json.loads(spec.read_text(encoding="utf-8")).get("argv")
    except FileNotFoundError:
        return f"the Jupyter kernel {KERNEL!r} is missing ({spec})"
    except (OSError, ValueError, AttributeError) as exc:
        return f"the Jupyter kernel {KERNEL!r} is damaged ({spec}: {exc})"
    if not (isinstance(argv, list) and argv and isinstance(argv[0], str) and Path(argv[0]).exists()):
        return f"the Jupyter kernel {KERNEL!r} starts no interpreter that exists ({spec})"
    return ""


def kernel(prefix: Path) -> None:
    """Register the Jupyter kernel :data:`KERNEL` in the environment `prefix` (as ``make setup`` does)."""
    subprocess.run([sys.executable, "-m", "ipykernel", "install", "--prefix", str(prefix), "--name", KERNEL,
                    "--display-name", "Python (pqlab)"], check=True, stdout=subprocess.DEVNULL)


def filter_problem(root: Path | None = None) -> str:
    """"" when git's nbstripout filter of :func:`notebook_filter` is this checkout's (or it is no git
    checkout), else what is wrong."""
    root = root or ROOT
    if shutil.which("git") is None:
        return ""
    got = subprocess.run(["git", "-C", str(root), "config", "--get", "filter.nbstripout.clean"],
                         capture_output=True, text=True)
    if got.returncode and subprocess.run(["git", "-C", str(root), "rev-parse", "--git-dir"],
                                         capture_output=True).returncode:
        return ""  # not a git checkout
    return "" if got.stdout.strip() == shlex.join(nbstripout_command()) else "git's notebook filter is unset"


def runners_problem() -> str:
    """"" when the helpers ``.stamp-runners`` built are there (the native runner of each of pqlab's liboqs
    builds installed; the TSC helper and the reference loops where a C compiler is), else which are
    missing."""
    from pqlab.runners.native import runner_path  # it loads pandas, which setup's other steps do not need

    missing = [f"native runner ({parse(o).id})" for o in OPTIONS
               if (parse(o).prefix / "lib" / "liboqs.so").exists() and not runner_path(o).exists()]
    if shutil.which((os.environ.get("CC") or "cc").split()[0]):
        if platform.machine() in _TSC_ARCH and not helper_path().exists():
            missing.append("TSC helper")
        if not helper_path(_SOURCES, "reference").exists():
            missing.append("reference loops")
    return f"{', '.join(missing)} missing" if missing else ""


def verify(site: Path | None = None, prefix: Path | None = None, root: Path | None = None) -> list[str]:
    """Check what each stamp of ``make setup`` stands for and provision again what is missing (`site`: the
    venv's site-packages, `prefix`: its prefix, `root`: the checkout; default this venv's and checkout's).
    Returns the repairs, each also printed as one line ("liboqs: pqlab_liboqs.pth missing from the venv:
    provisioned again"); an empty list on a complete checkout.  RuntimeError when a repair does not take."""
    site, prefix = Path(site or site_packages()), Path(prefix or sys.prefix)
    steps = (("liboqs", lambda: liboqs_problem(site), lambda: liboqs("default", site)),
             ("kernel", lambda: kernel_problem(prefix), lambda: kernel(prefix)),
             ("notebook filter", lambda: filter_problem(root), lambda: notebook_filter(root)),
             ("runners", runners_problem, runners))
    repairs = []
    for what, problem, repair in steps:
        why = problem()
        if not why:
            continue
        repair()
        if still := problem():
            raise RuntimeError(f"{what}: {why}; provisioned again, and still {still}: see the lines above")
        repairs.append(f"{what}: {why}: provisioned again")
        print(repairs[-1])
    return repairs


def main(argv: list[str]) -> int:
    if argv == ["runners"]:
        runners()
        return 0
    if argv == ["verify"]:
        try:
            verify()
        except (RuntimeError, OSError, BadInput, UnknownName, subprocess.CalledProcessError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        return 0
    if argv == ["latex"]:
        return 0 if latex() else 1
    if argv == ["browser"]:
        return 0 if browser() else 1
    if len(argv) == 2 and argv[0] == "compiler":
        try:
            return 0 if compiler(argv[1]) else 1
        except BadInput as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
    if argv == ["notebook-filter"]:
        return 0 if notebook_filter() else 1
    if len(argv) == 2 and argv[0] in ("liboqs", "liboqs-source"):
        try:
            if argv[0] == "liboqs-source":
                liboqs_source(argv[1])
                return 0
            others = [f"liboqs-{release}" for release in own_releases() if release != SETUP_RELEASE]
            for spec in others if argv[1] == "releases" else [argv[1]]:
                liboqs(spec)
        except (LiboqsBuildError, BadInput, UnknownName) as exc:
            # an unknown build: one line naming those there are
            print(f"error: {exc}", file=sys.stderr)
            return 1
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
