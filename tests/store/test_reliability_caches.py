"""Issue #27, caches that check what they hand out: each entry (a liboqs build and its installed copy, the TSC
helper, the native and Bouncy Castle runners, a memory-cache entry) carries the sha256 recorded when it was
made and is verified on every hit; a truncated, replaced or unrecorded entry is rebuilt with one line saying
so, and a shared library is checked before it is loaded, so a truncated one never reaches dlopen (which dies
with SIGBUS).  Every cache here lives under tmp_path; the user's real entries are never touched, and no real
liboqs build runs (the builders are replaced).  `pytest -k reliability` runs these."""
from __future__ import annotations

import _ctypes
import json
import os
import platform
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from conftest import fake_liboqs_compile

from pqlab.core import integrity, paths
from pqlab.core.errors import PqlabWarning
from pqlab.liboqs import build as liboqs_build
from pqlab.liboqs import loader as liboqs_loader
from pqlab.measure import cycles
from pqlab.runners import jvm
from pqlab.runners.memory import cache

#: A real ELF shared object (not liboqs): what a fake liboqs build "links".
LIBRARY = Path(_ctypes.__file__).read_bytes()


def truncate(path: Path, keep: float = 0.5) -> None:
    """Cut `path` in place (same inode), as a full disk or an interrupted copy leaves it."""
    data = path.read_bytes()
    with open(path, "r+b") as fh:
        fh.truncate(int(len(data) * keep))


def one_warning(caught) -> str:
    texts = [str(w.message) for w in caught if issubclass(w.category, PqlabWarning)]
    assert len(texts) == 1 and "\n" not in texts[0], texts
    return texts[0]


# --------------------------------------------------------------------------- the TSC helper


def compiler_or_skip() -> None:
    if platform.machine() not in cycles._TSC_ARCH:
        pytest.skip(f"no TSC helper on {platform.machine()}")
    if shutil.which(os.environ.get("CC") or "cc") is None:
        pytest.skip("no C compiler here: the TSC helper cannot be built (test_cycles covers that branch)")


@pytest.fixture
def helper(monkeypatch, tmp_path) -> Path:
    """The TSC helper, compiled into a cache under tmp_path."""
    compiler_or_skip()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(cycles, "_opened", {})
    path = cycles.build_helper()
    assert integrity.recorded(path) == integrity.sha256_file(path)
    return path


@pytest.mark.parametrize("damage", ["truncated", "foreign", "truncated-unrecorded"])
def test_reliability_a_damaged_tsc_helper_is_compiled_again_with_one_line(helper, damage):
    if damage == "foreign":  # another shared library in its place (it lacks the helper's functions)
        helper.write_bytes(LIBRARY)
    else:
        truncate(helper)
    if damage == "truncated-unrecorded":  # compiled before pqlab recorded sha256: the ELF check still sees it
        integrity.sidecar(helper).unlink()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert cycles.build_helper() == helper
    line = one_warning(caught)
    assert line.startswith(f"the TSC helper {helper} ") and line.endswith(": compiling it again")
    assert not integrity.problem(helper) and not integrity.elf_problem(helper)
    counter = cycles.TscCounter()  # it loads and counts
    assert counter.read() > 0


def test_reliability_a_whole_helper_is_reused_and_an_unrecorded_one_compiled_again_without_a_word(helper):
    inode = helper.stat().st_ino
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cycles.build_helper() == helper and helper.stat().st_ino == inode
        integrity.sidecar(helper).unlink()  # as a helper compiled before pqlab recorded its sha256
        assert cycles.build_helper() == helper and helper.stat().st_ino != inode
    assert not integrity.problem(helper)


def test_reliability_a_library_without_the_helpers_functions_is_refused_not_a_traceback(tmp_path):
    foreign = tmp_path / "foreign.so"
    foreign.write_bytes(LIBRARY)
    with pytest.raises(OSError, match=r"the TSC helper .*foreign\.so lacks pqlab_tsc_read"):
        cycles.load_helper(foreign, ("pqlab_tsc_read",), "the TSC helper")
    truncate(foreign)
    with pytest.raises(OSError, match=r"foreign\.so is a truncated ELF file"):
        cycles.load_helper(foreign, ("pqlab_tsc_read",), "the TSC helper")


@pytest.mark.parametrize("command", [["machine"],
                                     ["bench", "Ed25519", "--operations", "sign", "--budget", "0.05",
                                      "--min-samples", "3", "--no-progress"]])
def test_reliability_the_cli_with_a_truncated_helper_rebuilds_it_and_says_so(helper, tmp_path, command):
    truncate(helper)
    if command[0] == "bench":
        command = [*command, "--folder", str(tmp_path / "results")]
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"), PQLAB_COUNTER="tsc")
    proc = subprocess.run([sys.executable, "-m", "pqlab", *command], env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])  # before: -7 (SIGBUS), no output
    lines = [line for line in proc.stderr.splitlines() if "TSC helper" in line]
    assert len(lines) == 1 and lines[0].startswith(f"warning: the TSC helper {helper} does not match the "
                                                   "sha256 recorded when it was made"), proc.stderr
    assert lines[0].endswith(": compiling it again") and "Traceback" not in proc.stderr
    assert not integrity.problem(helper)


# --------------------------------------------------------------------------- liboqs builds


@pytest.fixture
def fake_builds(monkeypatch, tmp_path):
    """The liboqs cache and install under tmp_path; the build replaced by a quick fake that "links" a real ELF
    shared object and counts its calls (no real liboqs build ever runs here)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(paths, "LIBOQS_PREFIX", tmp_path / "venv-liboqs")
    return fake_liboqs_compile(monkeypatch, lambda build: LIBRARY)


def test_reliability_a_truncated_cache_entry_is_built_again_never_installed(fake_builds):
    lines = []
    entry = liboqs_build.cached_build("default", announce=lines.append)
    record = json.loads((entry / "build.json").read_text())
    assert record["files"]["lib/liboqs.so"] == integrity.sha256_file(entry / "lib" / "liboqs.so")
    assert "include/oqs/oqsconfig.h" in record["files"] and "build.log" not in record["files"]
    truncate(entry / "lib" / "liboqs.so")
    lines.clear()
    dest = liboqs_build.provide("default", announce=lines.append)
    assert fake_builds == ["default", "default"]
    assert lines[0].startswith(f"liboqs-0.13.0: the cache entry {entry} holds lib/liboqs.so, which does not "
                               "match the sha256 recorded when it was made")
    assert lines[0].endswith("truncated or replaced: building it again") and "\n" not in lines[0]
    assert (dest / "lib" / "liboqs.so").read_bytes() == LIBRARY and not liboqs_build.entry_problem(dest)


def test_reliability_a_damaged_installed_copy_is_installed_again(fake_builds):
    dest = liboqs_build.provide("default", announce=lambda line: None)
    truncate(dest / "lib" / "liboqs.so")
    lines = []
    assert liboqs_build.provide("default", announce=lines.append) == dest
    assert len(lines) == 1 and lines[0].startswith(
        f"liboqs-0.13.0: the installed copy {dest} holds lib/liboqs.so")
    assert lines[0].endswith(": installing it again from "
                             f"{liboqs_build.cache_root() / liboqs_build.installed_key('default')}")
    assert (dest / "lib" / "liboqs.so").read_bytes() == LIBRARY and fake_builds == ["default"]


def test_reliability_an_entry_of_an_older_pqlab_is_checked_then_recorded_or_built_again(fake_builds):
    entry = liboqs_build.cached_build("default", announce=lambda line: None)
    record = json.loads((entry / "build.json").read_text())
    del record["files"]
    (entry / "build.json").write_text(json.dumps(record))
    lines = []
    assert liboqs_build.cached_build("default", announce=lines.append) == entry and fake_builds == ["default"]
    assert len(lines) == 1 and "its files' sha256 are recorded now" in lines[0]
    assert not liboqs_build.entry_problem(entry)
    (entry / "build.json").write_text(json.dumps(record))  # without sha256 records again
    (entry / "lib" / "liboqs.so").write_text("not a library")  # an old entry that does not pass: built again
    lines.clear()
    liboqs_build.cached_build("default", announce=lines.append)
    assert fake_builds == ["default", "default"] and "has no sha256 recorded" in lines[0]


def test_reliability_a_damaged_installed_build_is_repaired_before_liboqs_is_loaded(fake_builds, capsys):
    dest = liboqs_build.provide("default", announce=lambda line: None)
    library = dest / "lib" / "liboqs.so"
    truncate(library)
    assert liboqs_loader.load_problem(library).startswith(f"{library} is a truncated ELF file")
    liboqs_loader.repair_own_builds([library])
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(
        f"liboqs-0.13.0: the installed copy {dest} holds lib/liboqs.so")
    assert library.read_bytes() == LIBRARY and not liboqs_loader.load_problem(library)


CHECK = r"""
import ctypes.util, sys
ctypes.util.find_library = lambda name: None
from pqlab.liboqs.loader import check_library, library_problem
print("check:", check_library(sys.argv[1]))
print("problem:", library_problem())
"""


def test_reliability_a_truncated_liboqs_never_reaches_the_loader(tmp_path):
    """In a child process: before, dlopen of the truncated file killed it with SIGBUS (exit -7), no
    message."""
    real = Path(paths.LIBOQS_PREFIX / "default" / "lib" / "liboqs.so")
    install = tmp_path / "oqs" / "lib"
    install.mkdir(parents=True)
    library = install / "liboqs.so"
    shutil.copy(real if real.exists() else _ctypes.__file__, library)  # a copy: the real one is only read
    truncate(library, 0.6)
    env = dict(os.environ, OQS_INSTALL_PATH=str(tmp_path / "oqs"), HOME=str(tmp_path / "home"),
               XDG_CACHE_HOME=str(tmp_path / "cache"))
    proc = subprocess.run([sys.executable, "-c", CHECK, str(library)], env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-1500:])
    check, problem = proc.stdout.strip().splitlines()
    assert check.startswith(f"check: {library} is a truncated ELF file (")
    assert problem.startswith(f"problem: {library} is a truncated ELF file (")
    assert problem.endswith("reinstall that liboqs, or point OQS_INSTALL_PATH at another one")


# --------------------------------------------------------------------- the native and Bouncy Castle runners


def test_reliability_a_damaged_bouncy_castle_jar_is_built_again(monkeypatch, tmp_path):
    """The Java program's jar (native/impls/java, through pqlab.runners.program): its sha256 is recorded when
    built, an intact jar is kept, a cut one is built again and the build record says why."""
    import dataclasses

    from pqlab.runners import program as programs

    (tmp_path / "Runner.java").write_text("class Runner {}")
    build = ["sh", "-c", "mkdir -p target/bc-1.0 && head -c 4000 /dev/urandom > target/bc-1.0/impls.jar"]
    fake = dataclasses.replace(programs.program("java", bc="1.0"), folder=tmp_path, build=tuple(build),
                               sources=("Runner.java",))
    monkeypatch.setattr(jvm, "jdk_available", lambda: (True, "java; javac; mvn"))
    monkeypatch.setattr(jvm, "bc_program", lambda version=None: fake)
    jar = jvm.build_bc_runner()
    assert jar == tmp_path / "target" / "bc-1.0" / "impls.jar" and jar.stat().st_size == 4000
    first = jar.read_bytes()
    assert jvm.build_bc_runner() == jar and jar.read_bytes() == first  # intact: kept
    truncate(jar)
    jvm.build_bc_runner()
    assert jar.stat().st_size == 4000 and jar.read_bytes() != first
    assert [b["why"] for b in programs.build_record(fake)["history"]] == ["missing", "damaged"]


# --------------------------------------------------------------------------- the memory cache


@pytest.mark.parametrize("damage", ["edited", "truncated", "unrecorded"])
def test_reliability_a_damaged_memory_cache_entry_is_measured_again_with_one_line(tmp_path, damage):
    """(An entry of an older pqlab, without a sha256, is measured again without a word.)"""
    store = cache.MemoryCache(tmp_path / "memory", fresh=False)
    parts = {"algorithm": "ML-DSA-44", "operation": "sign"}
    key = cache.cache_key(parts)
    store.put(key, parts, {"peak_heap_bytes": 1234}, "r1")
    assert store.get(key)["value"] == {"peak_heap_bytes": 1234}
    path = store._path(key)
    entry = json.loads(path.read_text())
    if damage == "edited":
        entry["value"]["peak_heap_bytes"] = 12
        path.write_text(json.dumps(entry))
    elif damage == "truncated":
        truncate(path, 0.7)
    else:
        del entry["sha256"]
        path.write_text(json.dumps(entry))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert store.get(key) is None
    if damage == "unrecorded":
        assert caught == []
    else:
        line = one_warning(caught)
        assert line.startswith(f"memory cache entry {path} ") and line.endswith(": measuring it again")
    store.put(key, parts, {"peak_heap_bytes": 1234}, "r2")  # what the driver does with a miss
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert store.get(key)["run_id"] == "r2"
