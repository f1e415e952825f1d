"""pqlab's modules import each other in one direction (issue 30): no circle, imports inside functions included
(a lazy import keeps `import pqlab` light, it does not make a loop acceptable).  A conversion of an old run reads
what the run stored, never the live registry."""
from __future__ import annotations

import ast
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "pqlab"


def module_of(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_of(p): p for p in PACKAGE.rglob("*.py")}


def imports(path: Path, known: dict[str, Path]) -> set[str]:
    """The pqlab modules `path` imports, anywhere in it (top level or inside a function)."""
    here = module_of(path)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.split(".")[0] == "pqlab"}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "pqlab":
                continue
            out.add(target)
            out |= {f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in known}
    return {m for m in out if m in known and m != here}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_pqlab_has_no_import_circle():
    known = modules()
    graph = {m: imports(p, known) for m, p in known.items()}
    assert sum(len(v) for v in graph.values()) > 100  # the graph was read
    assert circles(graph) == []


def test_the_circle_finder_finds_one():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_converting_an_old_run_reads_its_own_sizes_not_the_registry():
    from pqlab.schema import convert

    m = pd.DataFrame({"algorithm": ["Not-Registered-Sig", "Not-Registered-Other"], "operation": ["keygen", "keygen"],
                      "family": ["lattice", "lattice"], "cycles_source": [None, None], "flags": ["", ""],
                      "time_ns_median": [1.0, 1.0], "schema_version": [1, 1]})
    sizes = pd.DataFrame({"algorithm": ["Not-Registered-Sig"], "signature_bytes": [2420], "schema_version": [1]})
    converted, _, _ = convert(m, sizes, pd.DataFrame(), 1)
    assert list(converted["kind"]) == ["sig", ""]
