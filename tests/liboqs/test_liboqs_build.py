"""The liboqs build: its cache key, the per-user cache (hit, miss, concurrency, failure), the
install into the venv, and the library it produced (symbols, build options, HQC, each build)."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from conftest import fake_liboqs_compile

from pqlab.core import builds, paths
from pqlab.core.errors import UnknownName
from pqlab.liboqs import build as liboqs_build
from pqlab.liboqs import loader as liboqs_loader
from pqlab.liboqs.build import BuildToolMissing, LiboqsBuildError

# --------------------------------------------------------------------------- key and options


def test_cache_root_honours_xdg_cache_home(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert liboqs_build.cache_root() == tmp_path / "pqlab" / "liboqs"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/path")  # the XDG spec: relative paths are ignored
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert liboqs_build.cache_root() == tmp_path / "home" / ".cache" / "pqlab" / "liboqs"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert liboqs_build.cache_root() == tmp_path / "home" / ".cache" / "pqlab" / "liboqs"


def test_options_are_those_of_oqs_sys_per_build(monkeypatch):
    default, generic = liboqs_build.cmake_options("default"), liboqs_build.cmake_options("generic")
    assert default["OQS_DIST_BUILD"] == "Yes" and "OQS_OPT_TARGET" not in default
    assert generic["OQS_DIST_BUILD"] == "OFF" and generic["OQS_OPT_TARGET"] == "generic"
    for options in (default, generic):
        assert options["OQS_ENABLE_KEM_HQC"] == "Yes"  # off by default in liboqs 0.13, on in oqs-sys
        assert options["OQS_BUILD_ONLY_LIB"] == "Yes" and options["OQS_USE_OPENSSL"] == "No"
        assert options["CMAKE_BUILD_TYPE"] == "Release"
    monkeypatch.setattr(liboqs_build.platform, "machine", lambda: "x86_64")
    assert liboqs_build.c_flags() == ["-ffunction-sections", "-fdata-sections", "-fPIC", "-m64",
                                      "-march=x86-64", "-w"]
    assert liboqs_build.cmake_options("default")["OQS_ENABLE_KEM_BIKE"] == "Yes"
    monkeypatch.setattr(liboqs_build.platform, "machine", lambda: "aarch64")
    assert liboqs_build.c_flags() == ["-ffunction-sections", "-fdata-sections", "-fPIC", "-w"]
    assert liboqs_build.cmake_options("default")["OQS_ENABLE_KEM_BIKE"] == "Yes"
    monkeypatch.setattr(liboqs_build.platform, "machine", lambda: "armv7l")
    assert liboqs_build.cmake_options("default")["OQS_ENABLE_KEM_BIKE"] == "No"


def test_the_key_covers_source_compiler_options_and_build(monkeypatch):
    key, inputs = liboqs_build.build_key("default")
    assert key.startswith("liboqs-0.13.0-") and liboqs_build.build_key("liboqs-0.13.0")[0] == key
    assert inputs["crate"] == "oqs-sys 0.11.0+liboqs-0.13.0" and len(inputs["crate_sha256"]) == 64
    assert inputs["compiler"] and inputs["cmake"].startswith("cmake version")
    assert liboqs_build.build_key("generic")[0].startswith("liboqs-0.13.0+generic-")
    assert liboqs_build.build_key("generic")[0][-20:] != key[-20:]
    real = liboqs_build._first_line
    monkeypatch.setattr(liboqs_build, "_first_line", lambda cmd: "cc (Other) 99.1" if "--version" in cmd
                        and "cmake" not in cmd[0] else real(cmd))
    assert liboqs_build.build_key("default")[0] != key  # another compiler version, another entry
    monkeypatch.setattr(liboqs_build, "_first_line", real)
    monkeypatch.setattr(liboqs_build, "LINK_FLAGS", [*liboqs_build.LINK_FLAGS, "-Wl,-O1"])
    assert liboqs_build.build_key("default")[0] != key  # another option, another entry
    monkeypatch.setattr(liboqs_build, "crate_checksum", lambda build: ("0.11.0+liboqs-0.13.0", "0" * 64))
    monkeypatch.setattr(liboqs_build, "LINK_FLAGS", liboqs_build.LINK_FLAGS[:-1])
    assert liboqs_build.build_key("default")[0] != key  # other sources, another entry


def test_unknown_build_is_refused_with_the_choices():
    with pytest.raises(UnknownName,
                       match="unknown liboqs build 'turbo'.*one of liboqs-0.9.0, .*liboqs-0.13.0"):
        liboqs_build.build_key("turbo")


def test_missing_tools_name_the_tool_and_the_way_out(monkeypatch):
    real = shutil.which
    for tool in ("cargo", "cmake", "cc"):
        monkeypatch.setattr(liboqs_build.shutil, "which",
                            lambda name, tool=tool: None if name == tool else real(name))
        monkeypatch.delenv("CC", raising=False)
        with pytest.raises(BuildToolMissing, match=rf"needs `{tool}`.*conda route"):
            liboqs_build.build_key("default") if tool != "cargo" else liboqs_build.crate_sources(builds.SETUP)


@pytest.mark.parametrize("release, crate", [("0.9.0", "0.9.1"), ("0.12.0", "0.10.1"), ("0.13.0", "0.11.0")])
def test_crate_sources_come_from_cargo_and_hold_that_liboqs_release(release, crate):
    sources = liboqs_build.crate_sources(builds.Build(release))
    assert sources.name == "liboqs" and f"oqs-sys-{crate}+liboqs-{release}" in str(sources)
    assert (sources / "src" / "kem" / "hqc").is_dir()


# --------------------------------------------------------------------------- the cache, with a fake compile


@pytest.fixture
def fake_compile(monkeypatch, tmp_path):
    """Point the cache at tmp_path and replace the compile by a quick fake that counts its calls."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    # long enough for a concurrent caller to queue on the lock
    return fake_liboqs_compile(monkeypatch, lambda options: f"fake {options}".encode(), delay_s=0.2)


def test_a_miss_builds_once_and_a_hit_reuses(fake_compile):
    entry = liboqs_build.cached_build("default", announce=lambda line: None)
    assert fake_compile == ["default"]
    record = json.loads((entry / "build.json").read_text())
    assert record["key"] == entry.name and record["inputs"]["build"] == "liboqs-0.13.0"
    assert record["inputs"]["release"] == "0.13.0" and record["inputs"]["options"] == "default"
    assert (entry / "build.log").read_text() == "fake build\n"
    assert liboqs_build.cached_build("default") == entry and fake_compile == ["default"]
    assert not list(entry.parent.glob(".tmp-*"))


def test_concurrent_builds_of_one_key_compile_once(fake_compile):
    results = []
    threads = [threading.Thread(target=lambda: results.append(
                   liboqs_build.cached_build("default", announce=lambda line: None)))
               for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert fake_compile == ["default"] and len(set(results)) == 1


def test_a_failed_build_leaves_no_entry_and_keeps_its_log(fake_compile, monkeypatch):
    def failing(options, inputs, work, log):
        log.write_text("cc: error: something\n")
        (work / "out").mkdir()
        raise LiboqsBuildError("liboqs build failed at step 'cmake build'")

    monkeypatch.setattr(liboqs_build, "_compile", failing)
    with pytest.raises(LiboqsBuildError, match="cmake build"):
        liboqs_build.cached_build("generic", announce=lambda line: None)
    key, _ = liboqs_build.build_key("generic")
    root = liboqs_build.cache_root()
    assert not (root / key).exists() and not list(root.glob(".tmp-*"))
    assert (root / f"{key}.log").read_text() == "cc: error: something\n"


def test_an_incomplete_entry_is_rebuilt(fake_compile):
    key, _ = liboqs_build.build_key("default")
    (liboqs_build.cache_root() / key / "lib").mkdir(parents=True)  # e.g. left by hand, no build.json
    liboqs_build.cached_build("default", announce=lambda line: None)
    assert fake_compile == ["default"]


def test_provide_installs_a_copy_and_replaces_a_symlink_without_touching_its_target(fake_compile, monkeypatch,
                                                                                   tmp_path):
    prefix = tmp_path / "venv-liboqs"
    elsewhere = tmp_path / "other-clone" / "generic"
    (elsewhere / "lib").mkdir(parents=True)
    (elsewhere / "lib" / "liboqs.so").write_text("another build")
    prefix.mkdir()
    (prefix / "liboqs-0.13.0+generic").symlink_to(elsewhere)
    monkeypatch.setattr(paths, "LIBOQS_PREFIX", prefix)
    dest = liboqs_build.provide("generic", announce=lambda line: None)
    assert dest == prefix / "liboqs-0.13.0+generic" and not dest.is_symlink()
    assert (dest / "lib" / "liboqs.so").read_text() == "fake generic"
    assert (elsewhere / "lib" / "liboqs.so").read_text() == "another build"
    assert liboqs_build.installed_key("generic") == liboqs_build.build_key("generic")[0]
    assert not (dest / "build.log").exists() and sorted(p.name for p in prefix.iterdir()) == [
        ".liboqs-0.13.0+generic.lock", "liboqs-0.13.0+generic"]
    copies = []
    monkeypatch.setattr(liboqs_build.shutil, "copytree", lambda *a, **k: copies.append(a))
    liboqs_build.provide("generic")
    assert copies == []  # already installed: nothing copied


# --------------------------------------------------------------------------- the real library


def exported(library: Path) -> set[str]:
    nm = shutil.which("nm")
    if nm is None:
        pytest.skip("nm (binutils) is not installed: cannot list the exported symbols")
    out = subprocess.run([nm, "-D", "--defined-only", str(library)], capture_output=True, text=True,
                         check=True)
    return {line.split()[-1] for line in out.stdout.splitlines() if line.strip()}


@pytest.mark.parametrize("options", ["default", "generic"])
def test_the_cached_library_exports_the_oqs_api_only(options, provide_liboqs):
    provide_liboqs(options)
    entry = liboqs_build.cached_build(options)
    symbols = exported(entry / "lib" / "liboqs.so")
    assert {"OQS_SIG_new", "OQS_KEM_new", "OQS_SIG_supports_ctx_str", "OQS_KEM_hqc_128_keypair"} <= symbols
    assert all(s.startswith("OQS_") for s in symbols), sorted(s for s in symbols if not s.startswith("OQS_"))
    config = liboqs_loader.read_build_config(entry / "lib" / "liboqs.so")
    assert liboqs_loader.options_of(config) == options and config["OQS_VERSION_TEXT"] == "0.13.0"
    assert config.get("OQS_ENABLE_KEM_HQC") == "1"


def test_the_shim_answers_like_liboqs_0_14(provide_liboqs):
    """OQS_SIG_supports_ctx_str: ML-DSA and SLH-DSA take contexts, Falcon does
    not, unknown names are false."""
    provide_liboqs("default")
    library = liboqs_build.cached_build("default") / "lib" / "liboqs.so"
    code = ("import ctypes, sys; lib = ctypes.CDLL(sys.argv[1]); f = lib.OQS_SIG_supports_ctx_str; "
            "f.restype = ctypes.c_bool; f.argtypes = [ctypes.c_char_p]; "
            "print([f(n) for n in (b'ML-DSA-44', b'Falcon-512', b'no-such-scheme', None)])")
    proc = subprocess.run([sys.executable, "-c", code, str(library)], capture_output=True, text=True,
                          timeout=60)
    assert proc.stdout.strip() == "[True, False, False, False]", proc.stderr


# --------------------------------------------------------------------------- the setup step


def test_setup_prefers_a_liboqs_already_installed_and_otherwise_builds(monkeypatch, tmp_path, capsys):
    from pqlab.app import provision

    site = tmp_path / "site-packages"
    site.mkdir()
    (site / "pqlab_liboqs.pth").write_text("stale")
    monkeypatch.setattr(provision.sysconfig, "get_paths", lambda: {"purelib": str(site)})
    monkeypatch.setattr(provision, "find_usable_liboqs", lambda: Path("/opt/conda/lib/liboqs.so"))
    monkeypatch.setattr(provision, "provide", lambda options: pytest.fail("built although one is installed"))
    provision.liboqs("default")
    assert not (site / "pqlab_liboqs.pth").exists() and "/opt/conda/lib/liboqs.so" in capsys.readouterr().out

    built = []
    monkeypatch.setattr(provision, "find_usable_liboqs", lambda: None)
    monkeypatch.setattr(provision, "provide", lambda build: built.append(build.options) or build.prefix)
    provision.liboqs("default")
    assert built == ["default"] and "OQS_INSTALL_PATH" in (site / "pqlab_liboqs.pth").read_text()
    (site / "pqlab_liboqs.pth").unlink()
    monkeypatch.setattr(provision, "find_usable_liboqs", lambda: Path("/opt/conda/lib/liboqs.so"))
    provision.liboqs("generic")  # the portable build is always pqlab's own, and needs no .pth
    assert built == ["default", "generic"] and not (site / "pqlab_liboqs.pth").exists()


def test_setup_step_reports_a_missing_tool_in_one_line(monkeypatch, capsys):
    from pqlab.app import provision

    def missing(options):
        raise BuildToolMissing("building liboqs needs `cmake` (the liboqs build system), "
                               "which is not installed")

    monkeypatch.setattr(provision, "liboqs", missing)
    assert provision.main(["liboqs", "generic"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: building liboqs needs `cmake`") and err.count("\n") == 1
    assert provision.main(["liboqs", "turbo"]) == 1  # not a build: one line naming those there are


def test_a_worker_environment_builds_a_missing_build_on_first_need(monkeypatch, tmp_path):
    monkeypatch.setattr(paths, "LIBOQS_PREFIX", tmp_path)
    asked = []

    def fake_provide(build, announce):
        asked.append(build.id)
        (build.prefix / "lib").mkdir(parents=True, exist_ok=True)
        (build.prefix / "lib" / "liboqs.so").write_text("built")
        return build.prefix

    monkeypatch.setattr(liboqs_build, "provide", fake_provide)
    env = liboqs_loader.build_environment("generic", base={})
    assert (asked == ["liboqs-0.13.0+generic"]
            and env["OQS_INSTALL_PATH"] == str(tmp_path / "liboqs-0.13.0+generic"))
    # provide() itself finds it installed, from today's inputs
    liboqs_loader.build_environment("generic", base={})
    assert asked == ["liboqs-0.13.0+generic"] * 2

    def no_cmake(build, announce):
        raise BuildToolMissing("building liboqs needs `cmake`")

    monkeypatch.setattr(liboqs_build, "provide", no_cmake)
    with pytest.raises(liboqs_loader.LiboqsNotFound, match="cannot be built: building liboqs needs `cmake`"):
        liboqs_loader.build_environment("liboqs-0.9.0", base={})
    # an installed, whole copy is still used where the tools to check it against today's inputs are gone
    monkeypatch.setattr(liboqs_build, "entry_problem", lambda prefix: "")
    assert liboqs_loader.build_environment("liboqs-0.9.0", base={})["PQLAB_LIBOQS_BUILD"] == "liboqs-0.9.0"
