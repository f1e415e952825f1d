"""The package's shape: the core never imports a study, `import pqlab` is light, modules stay small (600
lines), and a function imports only what pyproject.toml's [tool.pqlab] lists as optional or heavy (issue
43)."""
from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "pqlab"
CORE = sorted(p for p in PACKAGE.rglob("*.py") if "studies" not in p.relative_to(PACKAGE).parts)
MAX_LINES = 600


def imported_modules(path: Path) -> set[str]:
    """Absolute names of every module `path` imports (relative imports resolved)."""
    package = ".".join(("pqlab", *path.relative_to(PACKAGE).parent.parts))
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            mod = ".".join(p for p in (base, node.module or "") if p) if node.level else node.module
            out.add(mod)
            out |= {f"{mod}.{a.name}" for a in node.names}
    return out


@pytest.mark.parametrize("path", CORE, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_core_never_imports_a_study(path):
    studies = sorted(m for m in imported_modules(path) if m.startswith("pqlab.studies"))
    assert not studies, f"{path.relative_to(PACKAGE)} imports {studies}"


def test_the_import_check_sees_study_imports(tmp_path):
    fake = PACKAGE / "studies" / "signature_cycles" / "measure.py"
    assert "pqlab.benchmark" in imported_modules(fake) or "pqlab.runners.native" in imported_modules(fake)


def test_import_pqlab_is_light():
    code = ("import sys, pqlab; "
            "print([m for m in ('oqs', 'pandas', 'matplotlib', 'numpy') if m in sys.modules]); "
            "pqlab.load_run; pqlab.export; print('pqlab.publish.export' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         check=True).stdout
    assert out.split("\n")[:2] == ["[]", "True"]


def test_unknown_attribute_is_an_attribute_error():
    import pqlab

    with pytest.raises(AttributeError, match="nosuchthing"):
        pqlab.nosuchthing  # noqa: B018


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_modules_stay_small(path):
    lines = len(path.read_text().splitlines())
    assert lines <= MAX_LINES, f"{path.relative_to(PACKAGE)} has {lines} lines (limit {MAX_LINES}): split it"


ROOT = PACKAGE.parent
CONFIG = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["pqlab"]
LAZY, LAZY_MODULES = set(CONFIG["lazy-imports"]), set(CONFIG["lazy-modules"])
MODULES = {".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"): p
           for p in PACKAGE.rglob("*.py")}


def loads(node) -> set[str]:
    """What an import statement loads: pqlab modules (with their packages) and other libraries' top names."""
    if isinstance(node, ast.Import):
        names = {a.name for a in node.names}
    else:
        names = {node.module or ""} | {f"{node.module}.{a.name}" for a in node.names}
    out = set()
    for name in names:
        if name.split(".")[0] != "pqlab":
            out.add(name.split(".")[0])
            continue
        parts = name.split(".")
        out |= {".".join(parts[:i]) for i in range(1, len(parts) + 1) if ".".join(parts[:i]) in MODULES}
    return out


def top_level(module: str) -> set[str]:
    """What `module` loads when it is imported (its module-level imports, those under ``if``/``try``
    included)."""
    out = set()
    for node in ast.parse(MODULES[module].read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            out |= loads(node)
        elif isinstance(node, ast.If | ast.Try) and not (
                isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)):
            out |= {m for n in ast.walk(node) if isinstance(n, ast.Import | ast.ImportFrom) for m in loads(n)}
    return out


def heavy(module: str, seen=None) -> set[str]:
    """The listed libraries importing `module` loads, through every pqlab module it imports."""
    seen = set() if seen is None else seen
    if module in seen:
        return set()
    seen.add(module)
    found = set()
    for m in top_level(module):
        found |= (heavy(m, seen) | listed_pqlab(m)) if m in MODULES else ({m} & LAZY)
    return found


def listed_pqlab(module: str) -> set[str]:
    """The listed pqlab package `module` belongs to (``pqlab.liboqs``), as a set."""
    return {x for x in LAZY if module == x or module.startswith(x + ".")}


def unjustified_lazy_imports(module: str) -> list[str]:
    """Imports inside `module`'s functions that load nothing listed that the module does not load already."""
    if module in LAZY_MODULES:
        return []
    mine = heavy(module)
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    out = []
    for fn in ast.walk(tree):
        if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(fn):
            if isinstance(node, ast.Import | ast.ImportFrom):
                needs = set()
                for m in loads(node):
                    if m in MODULES:
                        needs |= (heavy(m) | listed_pqlab(m)) - mine
                    elif m in LAZY or m not in sys.stdlib_module_names:
                        needs.add(m)
                if not needs:
                    out.append(f"{node.lineno}: {ast.unparse(node)}")
    return out


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_inside_functions_are_only_for_heavy_or_optional_libraries(module):
    assert unjustified_lazy_imports(module) == [], "move them to the top of the module"


def test_the_lazy_import_check_finds_a_light_one(tmp_path, monkeypatch):
    light = tmp_path / "pqlab" / "light.py"
    light.parent.mkdir()
    light.write_text("import json\n\ndef f():\n    import math\n    import pandas\n    return math\n")
    monkeypatch.setitem(MODULES, "pqlab.light", light)
    assert unjustified_lazy_imports("pqlab.light") == ["4: import math"]
