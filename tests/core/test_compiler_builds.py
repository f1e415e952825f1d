"""The compiler and the optimisation level as a build dimension (issue #47): ids, the one-line refusals, the
cache key that keeps older builds' keys, the level's place in the compile rule, a missing compiler named with
its provisioning step, and `python -m pqlab builds` listing the tagged builds it has."""
from __future__ import annotations

import json

import pytest

from pqlab.app import provision
from pqlab.core import builds, paths
from pqlab.core.errors import BadInput, UnknownName
from pqlab.liboqs import build as liboqs_build
from pqlab.liboqs import loader as liboqs_loader


def test_compiler_and_level_tags_name_a_build_in_one_order_and_o3_is_liboqs_own():
    b = builds.parse("liboqs-0.9.0+generic+clang19+Os")
    assert (b.release, b.options, b.compiler, b.level) == ("0.9.0", "generic", "clang19", "Os")
    assert b.id == "liboqs-0.9.0+generic+clang19+Os" and b.prefix == paths.LIBOQS_PREFIX / b.id
    assert builds.parse("liboqs-0.9.0+O3") == builds.parse("liboqs-0.9.0")  # liboqs's own level
    assert builds.parse("liboqs-0.13.0+gcc").id == "liboqs-0.13.0+gcc"
    assert (builds.compiler_of("liboqs-0.13.0+clang19"), builds.level_of("liboqs-0.13.0+clang19")) == (
        "clang19", "O3")
    assert (builds.compiler_of("liboqs-0.9.0+Os"), builds.level_of("liboqs-0.9.0+Os")) == ("", "Os")
    assert builds.options_of("liboqs-0.9.0+generic+clang19+Os") == "generic"
    assert builds.compiler_command("clang19") == "clang-19" and builds.compiler_command("gcc") == "gcc"
    assert builds.own_build_at(paths.LIBOQS_PREFIX / "liboqs-0.9.0+generic+clang19+Os") == b
    assert builds.own_build_at(paths.LIBOQS_PREFIX / "liboqs-0.9.0+Os+clang19") is None  # not one of ours


@pytest.mark.parametrize("spec, words", [
    ("liboqs-0.9.0+Os+clang19", "come as +source, then +generic, then a compiler"),
    ("liboqs-0.9.0+os", "close matches: Os"),
    ("liboqs-0.9.0+icc", "unknown liboqs build option 'icc'"),
])
def test_a_misspelt_or_misordered_tag_is_refused_in_one_line(spec, words):
    with pytest.raises((BadInput, UnknownName)) as refused:
        builds.parse(spec)
    assert words in str(refused.value) and "\n" not in str(refused.value)


def test_a_missing_compiler_is_refused_in_one_line_naming_its_provisioning_step(monkeypatch, capsys):
    with pytest.raises(liboqs_build.BuildToolMissing) as refused:
        liboqs_build.build_key("liboqs-0.13.0+clang99")
    message = str(refused.value)
    assert "\n" not in message and "`clang-99`" in message
    assert "python -m pqlab.app.provision compiler clang99" in message
    monkeypatch.setattr(provision, "apt_install", lambda *a, **k: False)  # no root here: nothing installed
    assert provision.main(["compiler", "clang99"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "clang-99 is not installed" in err and "apt-get install clang-99" in err
    assert provision.main(["compiler", "icc"]) == 1 and "not a compiler tag" in capsys.readouterr().err


def test_the_level_goes_last_in_the_compile_rule_and_older_builds_keep_their_cache_keys():
    assert "CMAKE_C_COMPILE_OBJECT" not in liboqs_build.cmake_options("default")
    rule = liboqs_build.cmake_options("generic", "Os")["CMAKE_C_COMPILE_OBJECT"]
    assert rule.index("<FLAGS>") < rule.index("-Os") < rule.index("-c <SOURCE>")  # after liboqs's -O3
    key, inputs = liboqs_build.build_key("liboqs-0.9.0")
    assert "level" not in inputs and "compiler_tag" not in inputs  # the key of a build made before #47
    tagged_key, tagged = liboqs_build.build_key("liboqs-0.9.0+Os")
    assert tagged["level"] == "Os" and tagged_key != key and tagged_key.startswith("liboqs-0.9.0+Os-")


def test_builds_lists_the_tagged_builds_it_has(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    (cache / "liboqs-0.9.0+generic+Os-0123456789abcdef0123").mkdir(parents=True)
    (cache / "liboqs-0.9.0+bogus-0123456789abcdef0123").mkdir()
    monkeypatch.setattr(liboqs_build, "cache_root", lambda: cache)
    found = [b.id for b in liboqs_loader.compiled_builds()]
    assert "liboqs-0.9.0+generic+Os" in found and not any("bogus" in b for b in found)
    rows = {r["build"]: r for r in liboqs_loader.catalogue()}
    row = rows["liboqs-0.9.0+generic+Os"]
    assert (row["compiler"], row["level"], row["options"]) == ("cc", "Os", "generic")
    assert rows["liboqs-0.9.0"]["level"] == "O3"


def test_a_runs_record_of_its_liboqs_names_the_compiler_tag_and_the_level(tmp_path):
    (tmp_path / "lib").mkdir()
    inputs = {"crate": "oqs-sys 0.9.1+liboqs-0.9.0", "compiler": "/usr/bin/clang-19: clang version 19",
              "compiler_tag": "clang19", "level": "Os", "cmake_options": {}}
    (tmp_path / liboqs_build.RECORD).write_text(json.dumps({"inputs": inputs}))
    said = liboqs_loader.built_from(tmp_path / "lib" / "liboqs.so")
    assert (said["compiler_tag"], said["level"]) == ("clang19", "Os") and "cmake_options" not in said
