"""A liboqs source tree a user gives is a build (issue #44): refused in one line where it is not liboqs,
named by the release its CMakeLists.txt states, built with pqlab's own options and cached by what decides it,
and measured like any other build."""
from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from pqlab import benchmark
from pqlab.core import builds, paths
from pqlab.core.errors import BadInput
from pqlab.liboqs import build as liboqs_build
from pqlab.liboqs import loader as liboqs_loader

FAST = {"budget_s": 0.02, "min_samples": 3, "progress": False, "rounds": 3, "max_rounds": 3}


@pytest.fixture
def registry(tmp_path, monkeypatch):
    """This test's own registry of source trees (its workers inherit the variable)."""
    path = tmp_path / "sources.json"
    monkeypatch.setenv("PQLAB_LIBOQS_SOURCES", str(path))
    return path


def _tree(root, version=("0", "16", "0"), project="liboqs"):
    root.mkdir(parents=True)
    (root / "src").mkdir()
    (root / "src" / "oqs.h").write_text("/* oqs */\n")
    major, minor, patch = version
    (root / "CMakeLists.txt").write_text(
        f"cmake_minimum_required (VERSION 3.15)\nproject({project} C ASM)\n"
        f"set(OQS_VERSION_MAJOR {major})\nset(OQS_VERSION_MINOR {minor})\nset(OQS_VERSION_PATCH {patch})\n")
    return root


def test_a_folder_that_is_not_a_liboqs_tree_is_refused_in_one_line_and_nothing_registered(tmp_path, registry):
    (tmp_path / "file").write_text("x")
    (tmp_path / "empty").mkdir()
    no_version = _tree(tmp_path / "no-version")
    (no_version / "CMakeLists.txt").write_text("project(liboqs C ASM)\n")
    cases = {tmp_path / "file": "is not a folder", tmp_path / "empty": "is not a liboqs source tree",
             _tree(tmp_path / "other", project="openssl"): "is not a liboqs source tree",
             no_version: "states no liboqs version",
             _tree(tmp_path / "old", ("0", "8", "0")): "0.9.0 and later"}
    for tree, why in cases.items():
        with pytest.raises(BadInput, match=why) as refused:
            builds.add_source(tree)
        assert "\n" not in str(refused.value)
    assert not registry.exists()
    proc = subprocess.run([sys.executable, "-m", "pqlab", "builds", "--add-source", str(tmp_path / "empty")],
                          capture_output=True, text=True, cwd=paths.ROOT)
    assert proc.returncode != 0 and "is not a liboqs source tree" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and not registry.exists()


def test_a_registered_tree_is_a_build_named_by_its_release_and_its_key_follows_its_sources(tmp_path, registry,
                                                                                           monkeypatch):
    with pytest.raises(BadInput, match="no liboqs 0.16.0 source tree is registered"):
        builds.parse("liboqs-0.16.0+source")
    tree = _tree(tmp_path / "liboqs")
    build = builds.add_source(tree)
    assert build.id == "liboqs-0.16.0+source" and build.tree == tree.resolve() and build.own
    assert builds.parse("liboqs-0.16.0") == build  # the one 0.16.0 build here
    generic = builds.parse("liboqs-0.16.0+source+generic")
    assert generic.options == "generic" and builds.options_of(generic.id) == "generic"
    assert builds.own_build_at(paths.LIBOQS_PREFIX / generic.id) == generic
    with pytest.raises(BadInput, match="tags come as"):
        builds.parse("liboqs-0.16.0+generic+source")
    # chosen for the process: default and generic then name its two builds
    monkeypatch.setenv(builds.CHOOSE, build.id)
    assert builds.chosen() == build and builds.parse("generic") == generic
    # the key holds the tree's sha256, not a crate's; an edit of its sources is another build
    key, inputs = liboqs_build.build_key(build)
    assert key.startswith("liboqs-0.16.0+source-") and "crate" not in inputs
    assert inputs["source"] == str(tree.resolve()) and len(inputs["source_sha256"]) == 64
    assert inputs["shim_sha256"] == ""  # 0.14 and later have what the shim adds
    (tree / "src" / "oqs.h").write_text("/* changed */\n")
    assert liboqs_build.build_key(build)[0] != key
    # a tree that now holds another release is refused until registered again
    lists = tree / "CMakeLists.txt"
    lists.write_text(lists.read_text().replace("MINOR 16", "MINOR 15"))
    with pytest.raises(BadInput, match="now holds liboqs 0.15.0"):
        liboqs_build.build_key(build)


def test_the_pth_file_loads_the_build_the_environment_or_setup_chose(tmp_path, registry):
    default = liboqs_loader.write_pth(tmp_path, builds.SETUP).read_text()
    assert builds.CHOOSE + "', 'liboqs" not in default  # setup's build sets nothing
    code = "import os, site, sys; site.addsitedir(sys.argv[1]); print(os.environ['OQS_INSTALL_PATH'])"
    env = {"PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-S", "-c", code, str(tmp_path)], capture_output=True, text=True,
                         env=env).stdout.strip()
    assert out == str(builds.SETUP.prefix)
    out = subprocess.run([sys.executable, "-S", "-c", code, str(tmp_path)], capture_output=True, text=True,
                         env=env | {builds.CHOOSE: "liboqs-0.12.0"}).stdout.strip()
    assert out == str(paths.LIBOQS_PREFIX / "liboqs-0.12.0")


def test_the_crate_sources_given_as_a_tree_are_built_and_measure_a_kem_that_records_its_tree(registry):
    tree = liboqs_build.crate_sources(builds.Build("0.13.0"))
    build = builds.add_source(tree)
    assert build.id == "liboqs-0.13.0+source"
    run = benchmark.bench([f"ML-KEM-768@{build.id}+generic"], save=False, **FAST)
    info = run.meta["liboqs"]
    assert info["build"] == "liboqs-0.13.0+source+generic" and info["liboqs_version"] == "0.13.0"
    assert info["built_from"]["source"] == str(tree) and len(info["built_from"]["source_sha256"]) == 64
    assert "crate" not in info["built_from"] and info["built_from"]["compiler"]
    assert info["options"] == "generic" and not info["cpu_specific"]
    record = run.meta["conformance"]["ML-KEM-768@liboqs"]
    assert record["liboqs"]["build"] == "liboqs-0.13.0+source+generic" and record["status"]
    rows = run.verified()
    assert sorted(rows["operation"]) == ["decaps", "encaps", "keygen"] and (rows["rounds"] == 3).all()
    assert (rows["library_version"] == "0.13.0").all()
    listed = {r["build"]: r for r in liboqs_loader.catalogue()}
    assert listed["liboqs-0.13.0+source+generic"]["state"] == "installed"
    assert listed["liboqs-0.13.0+source"]["source"].startswith(f"source tree {tree}")


def test_a_source_build_whose_tree_is_gone_keeps_its_intact_installed_copy(tmp_path, registry, monkeypatch):
    """A tree in /tmp does not outlive a reboot: the build installed from it stays usable, and says so."""
    tree = _tree(tmp_path / "liboqs")
    build = builds.add_source(tree)
    installed = tmp_path / "venv-liboqs"
    monkeypatch.setattr(paths, "LIBOQS_PREFIX", installed)
    intact = installed / build.id
    monkeypatch.setattr(liboqs_build, "entry_problem", lambda entry: "" if entry == intact else "missing")
    shutil.rmtree(tree)
    said = []
    assert liboqs_build.provide(build, announce=said.append) == build.prefix == installed / build.id
    assert "is not a folder" in said[0] and "is used as it is" in said[0]
    monkeypatch.setattr(liboqs_build, "entry_problem", lambda entry: "is missing")
    with pytest.raises(BadInput, match="is not a folder"):
        liboqs_build.provide(build)


def test_a_git_checkout_records_its_commit_and_says_when_it_was_modified(tmp_path):
    tree = _tree(tmp_path / "liboqs")
    git = ["git", "-C", str(tree), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "release"], check=True)
    head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    clean = liboqs_build.source_identity(tree)
    assert clean["source_commit"] == head and len(clean["source_sha256"]) == 64
    (tree / "src" / "oqs.h").write_text("/* patched */\n")
    patched = liboqs_build.source_identity(tree)
    assert patched["source_commit"] == f"{head}-modified"
    assert patched["source_sha256"] != clean["source_sha256"]
