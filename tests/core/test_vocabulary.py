"""One vocabulary (issue 30): pqlab.core.vocabulary owns the backends, the families and the topic ids; no
other module spells its own list of them, and each word it lists is the one the code and the notebooks use."""
from __future__ import annotations

import ast
import importlib
import json
import re
from pathlib import Path

import pytest

from pqlab.backends import algorithms
from pqlab.backends.algorithms import MODULES
from pqlab.core import vocabulary
from pqlab.core.errors import UnknownName
from pqlab.core.paths import ROOT

PACKAGE = ROOT / "pqlab"
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
#: Modules allowed a literal of three or more of the vocabulary's words, and why: not a list of backends or
#: families but a map from them to something else.
_MAPS = {"plotting.py": "FAMILY_COLORS: a colour per family (checked below)",
         "context.py": "SHOWN_PACKAGES: PyPI distributions, some of which share a backend's name"}


def _literals(path: Path):
    """(line, strings) of every tuple, list, set and dict literal in `path` (a dict: its keys)."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set, ast.Dict)):
            elts = node.keys if isinstance(node, ast.Dict) else node.elts
            yield node.lineno, {e.value for e in elts
                                if isinstance(e, ast.Constant) and isinstance(e.value, str)}


def test_no_module_spells_its_own_list_of_backends_or_families():
    backends = {b.name for b in vocabulary.BACKENDS}
    families = set(vocabulary.FAMILIES)
    found = [f"{p.relative_to(ROOT)}:{line}" for p in PACKAGE.rglob("*.py")
             if p.name != "vocabulary.py" and p.name not in _MAPS
             for line, words in _literals(p) if len(words & backends) >= 3 or len(words & families) >= 3]
    assert found == []


def test_every_family_has_its_colour_and_every_colour_a_family():
    from pqlab.publish.plotting import FAMILY_COLORS

    assert set(FAMILY_COLORS) <= set(vocabulary.FAMILIES)
    assert set(vocabulary.FAMILIES) - set(FAMILY_COLORS) <= {"isogeny"}  # no isogeny algorithm is measured


def test_every_registered_algorithm_has_the_family_its_name_says():
    algorithms.names()
    wrong = {}
    for (name, backend), factory in algorithms._REGISTRY.items():
        algo = factory()
        if algo.family != vocabulary.family_of(name):
            wrong[f"{name}@{backend}"] = (algo.family, vocabulary.family_of(name))
    assert wrong == {}
    assert (vocabulary.family_of("SPHINCS") == "hash-based"
            and vocabulary.family_of("ECDSA") == "elliptic-curve")
    assert (vocabulary.family_of("HQC-1") == "code-based"
            and vocabulary.family_of("eFrodoKEM-640-AES") == "lattice")
    assert (vocabulary.family_of("SNOVA_24_5_4") == "multivariate"
            and vocabulary.family_of("Frobnicate") == "other")


def test_the_backends_are_those_that_register_and_those_the_runners_write():
    for module in MODULES:
        assert (PACKAGE / "backends" / f"{module}.py").is_file()
    algorithms.names()
    assert {b for _, b in algorithms._REGISTRY} <= set(vocabulary.LIBRARY_BACKENDS)
    from pqlab.runners import jvm, tls

    runner_backends = {b.name for b in vocabulary.BACKENDS if not b.module}
    assert {"native", jvm.BACKEND, tls.BACKEND} <= runner_backends
    # the rest are the implementations the programs of native/impls name (pqlab.runners.impls)
    sources = "".join(p.read_text(errors="replace") for p in (ROOT / "native" / "impls").rglob("*")
                      if p.is_file() and p.suffix in (".rs", ".go", ".mjs", ".java", ".c")
                      and not {"target", "node_modules", "build"} & set(p.parts))
    unnamed = [b for b in runner_backends - {"native", tls.BACKEND}
               if f'"{b}"' not in sources and f"'{b}'" not in sources]
    assert unnamed == [], f"backends no runner writes: {unnamed}"
    assert (algorithms.BACKEND_PREFERENCE[0] == "liboqs"
            and vocabulary.backend("bouncycastle").caller == "Java")
    with pytest.raises(UnknownName, match="close matches: liboqs"):
        vocabulary.backend("libqos")


def test_each_numbered_notebook_is_a_topic_and_takes_its_id_from_its_study_module():
    assert [nb.stem for nb in NOTEBOOKS] == list(vocabulary.TOPICS)
    topics = {}
    for path in (PACKAGE / "studies").iterdir():  # a study is a module or a package
        if not (path.suffix == ".py" or (path / "__init__.py").exists()) or path.stem == "__init__":
            continue
        module = importlib.import_module(f"pqlab.studies.{path.stem}")
        if isinstance(getattr(module, "TOPIC", None), str):
            topics[path.stem] = module.TOPIC
    assert set(topics.values()) == set(vocabulary.TOPICS), topics
    for nb in NOTEBOOKS:
        code = "\n".join("".join(c["source"]) for c in json.loads(nb.read_text())["cells"]
                         if c["cell_type"] == "code")
        assigned = re.findall(r"^TOPIC = (.+)$", code, re.M)
        assert len(assigned) == 1 and re.fullmatch(r"\w+\.TOPIC", assigned[0]), (nb.name, assigned)
        typed = set(re.findall(r"[\"'](0\d_[a-z0-9_]+)[\"']", code)) & set(vocabulary.TOPICS)
        assert typed == set(), (nb.name, typed)
