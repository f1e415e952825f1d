"""The package's shape: the core never imports a study, `import pqlab` is light, modules stay small."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "pqlab"
CORE = sorted(p for p in PACKAGE.rglob("*.py") if "studies" not in p.relative_to(PACKAGE).parts)
MAX_LINES = 900


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
    fake = PACKAGE / "studies" / "signature_cycles.py"
    assert "pqlab.benchmark" in imported_modules(fake) or "pqlab.runners.native" in imported_modules(fake)


def test_import_pqlab_is_light():
    code = ("import sys, pqlab; print([m for m in ('oqs', 'pandas', 'matplotlib', 'numpy') if m in sys.modules]); "
            "pqlab.load_run; pqlab.export; print('pqlab.export' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True).stdout
    assert out.split("\n")[:2] == ["[]", "True"]


def test_unknown_attribute_is_an_attribute_error():
    import pqlab

    with pytest.raises(AttributeError, match="nosuchthing"):
        pqlab.nosuchthing  # noqa: B018


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_modules_stay_small(path):
    lines = len(path.read_text().splitlines())
    assert lines <= MAX_LINES, f"{path.relative_to(PACKAGE)} has {lines} lines (limit {MAX_LINES}): split it"
