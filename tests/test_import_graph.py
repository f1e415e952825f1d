"""pqlab's modules import each other in one direction (issue 30): no circle, imports inside functions included
(a lazy import keeps `import pqlab` light, it does not make a loop acceptable).  Its folders are its layers
(issue 43): each imports only its own layer and those below, at most 10 floors, no folder over a quarter of
the lines.  A conversion of an old run reads what the run stored, never the live registry."""
from __future__ import annotations

import ast
import subprocess
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
    from pqlab.core.schema import convert

    m = pd.DataFrame({"algorithm": ["Not-Registered-Sig", "Not-Registered-Other"],
                      "operation": ["keygen", "keygen"],
                      "family": ["lattice", "lattice"], "cycles_source": [None, None], "flags": ["", ""],
                      "time_ns_median": [1.0, 1.0], "schema_version": [1, 1]})
    sizes = pd.DataFrame({"algorithm": ["Not-Registered-Sig"], "signature_bytes": [2420],
                          "schema_version": [1]})
    converted, _, _ = convert(m, sizes, pd.DataFrame(), 1)
    assert list(converted["kind"]) == ["sig", ""]


#: pqlab's layers, bottom first: a module imports only from its own layer and those below
#: (``pqlab/__init__.py`` and ``CONTRIBUTING.md`` say what each holds)
LAYERS = ("core", "liboqs", "measure", "backends", "store", "runners", "checks", "publish", "benchmark",
          "calibration", "studies", "app", "__main__")
MAX_FLOORS = 10
MAX_FOLDER_SHARE = 0.25


def layer_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "pqlab"


def room_graph() -> dict[str, set[str]]:
    """Imports between pqlab's rooms (its folders and its top-level modules), the package root left out: it
    imports nothing of its own until a name is asked for."""
    known = modules()
    graph: dict[str, set[str]] = {}
    for m, p in known.items():
        if m == "pqlab":
            continue
        graph.setdefault(layer_of(m), set()).update(layer_of(t) for t in imports(p, known) if t != "pqlab")
    return {room: targets - {room} for room, targets in graph.items()}


def floors(graph: dict[str, set[str]]) -> dict[str, int]:
    depth: dict[str, int] = {}

    def floor(room):
        if room not in depth:
            depth[room] = 1 + max((floor(t) for t in graph.get(room, ())), default=0)
        return depth[room]

    for room in graph:
        floor(room)
    return depth


def test_every_module_sits_in_a_layer():
    assert {layer_of(m) for m in modules()} - {"pqlab"} == set(LAYERS)


def test_no_import_goes_up_a_layer():
    """The loop through importlib included: backend modules are loaded by name from pqlab.backends.algorithms,
    which sits above the adapters they import (pqlab.backends.base)."""
    known = modules()
    up = sorted(f"{m} -> {t}" for m, p in known.items() if m != "pqlab" for t in imports(p, known)
                if t != "pqlab" and LAYERS.index(layer_of(t)) > LAYERS.index(layer_of(m)))
    assert up == []
    source = (PACKAGE / "backends" / "base.py").read_text(encoding="utf-8")
    assert ("import_module" not in source
            and "pqlab.backends.algorithms" not in imports(PACKAGE / "backends" / "base.py", known))


def test_at_most_ten_floors():
    depth = floors(room_graph())
    assert max(depth.values()) <= MAX_FLOORS, sorted(depth.items(), key=lambda kv: kv[1])


def test_the_floor_counter_counts():
    assert floors({"a": {"b"}, "b": {"c"}, "c": set()}) == {"a": 3, "b": 2, "c": 1}


#: the source files of native/'s programs (their build outputs, locks and vendored trees are not code
#: pqlab wrote)
NATIVE_CODE = (".c", ".h", ".rs", ".go", ".java", ".mjs", ".js", ".py", ".s", ".sh")


def rooms_lines() -> dict[str, int]:
    """Lines of code per room of the repository's code: each folder of pqlab/ (``pqlab/studies``) and each
    program of native/ (``native/impls``); a top-level module or file is a room of its own."""
    files = [p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts]
    native = ROOT / "native"
    tracked = subprocess.run(["git", "ls-files", "native"], cwd=ROOT, capture_output=True,
                             text=True).stdout.split()
    files += [ROOT / f for f in tracked if f.endswith(NATIVE_CODE) and (ROOT / f).is_file()]
    rooms: dict[str, int] = {}
    for p in files:
        top = PACKAGE if p.is_relative_to(PACKAGE) else native
        rel = p.relative_to(top).parts
        room = f"{top.name}/{rel[0]}"
        rooms[room] = rooms.get(room, 0) + len(p.read_text(encoding="utf-8", errors="replace").splitlines())
    return rooms


def test_no_folder_holds_more_than_a_quarter_of_the_lines():
    rooms = rooms_lines()
    total = sum(rooms.values())
    assert any(r.startswith("native/") for r in rooms) and total > 20000  # both trees were read
    share = {room: round(n / total, 3) for room, n in rooms.items()}
    assert max(share.values()) <= MAX_FOLDER_SHARE, sorted(share.items(), key=lambda kv: -kv[1])[:4]
