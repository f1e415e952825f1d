"""No typed numbers: prose that states a measured quantity, a count or a version is generated from data.

Scanned: every notebook's markdown cells and the string literals of its code cells (the literal-only
``parameters`` cell excepted), the string literals of every study module, and the string literals of
every core module (every module of ``pqlab/`` outside ``pqlab/studies/``): ``describe_*`` text, error
and warning messages, printed lines, table headers, flag legends, CLI help, row labels.  Docstrings are
excepted (they document code, a reader of a notebook never sees them), except a core module's own
docstring where the module hands ``__doc__`` to the user (printed as usage, or argparse's description:
``python -m pqlab --help``, ``python -m pqlab.publish.durations``, ``python -m pqlab.app.provision``).

A hit is a digit next to a unit ("41,000-byte", "under 2 minutes", "fewer than 3 rounds"), a spelled-out
count next to one ("nine KEMs", "under two minutes"), a version after a product name ("liboqs 0.13",
"BC 1.86", "Java 17"), a three-part version, a typed default or threshold ("(default 100)", "at least 2"),
or a number typed into an f-string (``{20}``).  Names that carry digits (``SHA2-128f``, ``ML-DSA-44``,
``FIPS 205``, ``PKCS#1 v1.5``, ``X.509`` ...) are allowed by :data:`NAMES` before scanning.  In the core,
a hit is fixed by formatting the constant the code uses (``f"at least {MIN_ROUNDS}"``); the few literals
that are not a statement of a measured, configured or versioned quantity are listed, each with its reason,
in :data:`CORE_ALLOWED` (an entry that no longer matches a hit fails, so the list cannot rot).

Files still waiting for their owner's fix are listed in :data:`PENDING` / :data:`CORE_PENDING` and must still
fail (``xfail(strict=True)``): a file that becomes clean fails the run until it leaves the list.
"""
from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
STUDIES = sorted(p for p in (ROOT / "pqlab" / "studies").rglob("*.py") if p.name != "__init__.py")
PACKAGE = ROOT / "pqlab"
#: The core: every module of pqlab that is not a study (pqlab.studies is scanned above).
CORE = sorted(p for p in PACKAGE.rglob("*.py") if "studies" not in p.relative_to(PACKAGE).parts)

#: Names with digits in them, removed before scanning (each a regex; keep the list short and explicit).
NAMES = [
    # SHA2-128f, ML-DSA-44, AES-256-CBC, RSA-2048, P-256, SPHINCS+-...
    r"\b(?:[A-Za-z][\w+#]*-)+\d+[A-Za-z]*(?:-[\w+]+)*",
    r"\b(?:Ed|X)(?:25519|448)\b",                          # Ed25519, X25519
    r"\b(?:FIPS|SP|NIST SP)\s?\d[\d-]*\b",                 # FIPS 205, SP 800-232
    r"\bRFC\s?\d+(?:\s+(?:section\s+)?\d+(?:\.\d+)*)?",    # RFC 8446, RFC 8446 4.2.8
    r"\b(?:TLS|DTLS)\s?1\.[0-3]\b",                         # TLS 1.3
    r"\bPKCS\s?#\s?\d+(?:\s?v\d+(?:\.\d+)*)?",             # PKCS#1 v1.5, PKCS#8
    r"\bX\.509\b",
    r"\b(?:round|Round|study|Study|notebook|Notebook|Table|table|level|category|issue|#)[\s-]?\d+\b",
    r"\b(?:SHA|SHA2|SHA3|SHAKE|BLAKE|ChaCha|Keccak|Haraka)\d*(?:-\d+)*\b",
    r"\b\d{3}_[0-9a-f]{6,}\b",                             # seed file stems (000_d15d62ef...)
    r"\bv?\d+\s?[-/]\s?bit\s+(?:modulus|security)\b",    # "2048-bit modulus" belongs to RSA-2048's name
]
_NAME = re.compile("|".join(f"(?:{p})" for p in NAMES))
UNITS = (r"ms|µs|us|ns|s|sec|seconds?|minutes?|min|hours?|B|bytes?|byte|KB|kB|KiB|MB|MiB|GB|GiB|bits?|"
         r"GHz|MHz|kHz|Hz|W|mW|mV|mA|J|mJ|µJ|%|×|cycles?|kcycles|Mcycles|samples?|runs?|rounds?|calls?|times|"
         r"KEMs?|signatures?|AEADs?|cores?|sizes?|lengths?|algorithms?|pt|letters|"
         r"characters")
SPELLED = r"two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|hundred|thousand"
PATTERNS = {
    "number next to a unit": re.compile(rf"(?<![\w.])\d[\d,.]*(?:\s|-)?(?:{UNITS})(?![\w])"),
    "spelled-out count next to a unit": re.compile(rf"\b(?:{SPELLED})(?:\s|-)(?:{UNITS})\b", re.IGNORECASE),
    "version after a product name": re.compile(
        r"\b(?:liboqs|OpenSSL|Bouncy Castle|BC|bcprov|Python|Java|OpenJDK|JDK|pqcrypto|cryptography|"
        r"pycryptodome|numpy|pandas|valgrind|gcc|clang|Maven|dilithium-py|slh-dsa|SUPERCOP)"
        r"\s+v?\d+(?:\.\d+)+"),
    "major version after a product name": re.compile(
        r"\b(?:liboqs|OpenSSL|Python|Java|OpenJDK|JDK)\s+v?\d+\b(?![.\d])"),
    "three-part version": re.compile(r"(?<![\w.])\d+\.\d+\.\d+(?![\w.])"),
    "multiplier": re.compile(r"(?<![\w.])\d[\d,.]*\s?×"),
    "typed default": re.compile(r"\bdefault:?\s+[-+]?\d"),
    "typed threshold": re.compile(r"\b(?:at least|at most|fewer than|more than|less than|"
                                  r"no more than)\s+[-+]?\d"),
}


def findings(text: str) -> list[str]:
    """Every typed number in `text` (after the allowed names are removed), as 'kind: match'."""
    clean = _NAME.sub(" ", text)
    return [f"{kind}: {m.group(0)!r}" for kind, rx in PATTERNS.items() for m in rx.finditer(clean)]


#: a factor printed with its interval: "10.55× [0.05, 2,366.83]"
_FACTOR_CI = re.compile(r"(?<![\w.])\d[\d,.]*×\s?\[([-\d,.]+),\s?([-\d,.]+)\]")


def unresolved_factors(text: str) -> list[str]:
    """Every factor `text` prints as a number with an interval that does not resolve it (wider than
    :data:`pqlab.core.formatting.RESOLVED_FACTOR`, or reaching zero): generated text must say "not resolved"
    instead."""
    from pqlab.core.formatting import resolved

    return [m.group(0) for m in _FACTOR_CI.finditer(text)
            if not resolved(float(m.group(1).replace(",", "")), float(m.group(2).replace(",", "")))]


def _docstring_nodes(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                    and isinstance(first.value.value, str)):
                out.add(id(first.value))
    return out


def string_literals(source: str) -> list[tuple[int, str]]:
    """(line, text) of every string literal that is not a docstring; a number typed into an f-string
    (``f"{20}"``) is returned as its digits so that it is scanned like prose."""
    tree = ast.parse(source)
    skip = _docstring_nodes(tree)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            parts = []
            for v in node.values:
                if isinstance(v, ast.Constant):
                    parts.append(str(v.value))
                elif isinstance(v, ast.FormattedValue) and isinstance(v.value, ast.Constant) \
                        and isinstance(v.value.value, (int, float)):
                    parts.append(f"{v.value.value}×")  # a typed number in braces: always a finding
                else:
                    parts.append(" ")
            out.append((node.lineno, "".join(parts)))
            skip |= {id(v) for v in node.values}
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            out.append((node.lineno, node.value))
    return out


def notebook_texts(path: Path) -> list[tuple[str, str]]:
    nb = json.loads(path.read_text())
    out = []
    for i, cell in enumerate(nb["cells"]):
        source = "".join(cell["source"])
        if cell["cell_type"] == "markdown":
            out.append((f"cell {i} (markdown)", source))
        elif cell["cell_type"] == "code" and "parameters" not in cell.get("metadata", {}).get("tags", []):
            out += [(f"cell {i} line {line}", text) for line, text in string_literals(source)]
    return out


def module_texts(path: Path) -> list[tuple[str, str]]:
    return [(f"line {line}", text) for line, text in string_literals(path.read_text())]


def report(texts: list[tuple[str, str]]) -> list[str]:
    return [f"{where}: {hit}" for where, text in texts for hit in findings(text)]


def hands_out_its_docstring(tree: ast.AST) -> bool:
    """Whether a module reads its own ``__doc__`` (to print it as usage, or as argparse's description)."""
    return any(isinstance(node, ast.Name) and node.id == "__doc__" for node in ast.walk(tree))


def core_texts(path: Path) -> list[tuple[str, str]]:
    """The string literals of a core module, and its docstring where the module hands it to the user."""
    source = path.read_text()
    tree = ast.parse(source)
    doc = ast.get_docstring(tree, clean=False) if hands_out_its_docstring(tree) else None
    return ([("docstring (printed)", doc)] if doc else []) + [(f"line {line}", text)
                                                           for line, text in string_literals(source)]


def _core_name(path: Path) -> str:
    return path.relative_to(PACKAGE).as_posix()


#: Core literals that are hits of the scanner but state no measured, configured or versioned quantity:
#: (module, hit as :func:`findings` names it) -> why it stays.  Keep it short; every entry must still match.
CORE_ALLOWED: dict[tuple[str, str], str] = {
    ("__init__.py", "three-part version: '0.1.0'"):
        "the package's version string itself (`__version__`): the datum other text is generated from",
    ("core/inputs.py", "number next to a unit: '5 %'"):
        "a worked example of the unit in factor()'s error ('1.05 = 5 %'): an arithmetic identity, no fact",
    ("core/inputs.py", "number next to a unit: '1 %'"):
        "a worked example of the unit in precision_target()'s error ('0.01 = ±1 %'): an arithmetic identity",
    ("publish/report.py", "number next to a unit: '90%'"):
        "CSS of the HTML report's index page (code { font-size: 90% }): a style, not a statement",
    ("publish/report.py", "number next to a unit: '100%'"):
        "CSS of the HTML report's index page (table { width: 100% }): a style, not a statement",
}

#: Core modules whose owner is editing them now (issue #28): each must still have hits.  The hits and
#: their fixes are listed in the closing note of issue #28; remove a file here when its fix lands.
CORE_PENDING: dict[str, str] = {
}


def core_report(path: Path) -> list[str]:
    name = _core_name(path)
    return [f"{where}: {hit}" for where, text in core_texts(path) for hit in findings(text)
            if (name, hit) not in CORE_ALLOWED]


#: Files whose owner has not yet removed their typed numbers (issue #14): each must still have hits.
PENDING: set[str] = set()


def _param(path: Path):
    marks = [pytest.mark.xfail(strict=True,
                               reason="typed numbers not yet removed (issue #14, other notebooks)")] \
        if path.name in PENDING else []
    return pytest.param(path, marks=marks, id=str(path.relative_to(PACKAGE / "studies"))
                        if path.is_relative_to(PACKAGE / "studies") else path.name)


@pytest.mark.parametrize("path", [_param(p) for p in NOTEBOOKS])
def test_notebook_prose_types_no_numbers(path):
    hits = report(notebook_texts(path))
    assert not hits, f"{path.name}: typed numbers (generate them from data):\n" + "\n".join(hits)


@pytest.mark.parametrize("path", [_param(p) for p in STUDIES])
def test_study_strings_type_no_numbers(path):
    hits = report(module_texts(path))
    assert not hits, (f"{path.name}: typed numbers in string literals (generate them from data):\n"
                      + "\n".join(hits))


def _core_param(path: Path):
    name = _core_name(path)
    marks = [pytest.mark.xfail(strict=True,
                               reason=f"{name}: typed numbers not yet removed ({CORE_PENDING[name]})")] \
        if name in CORE_PENDING else []
    return pytest.param(path, marks=marks, id=name)


@pytest.mark.parametrize("path", [_core_param(p) for p in CORE])
def test_core_strings_type_no_numbers(path):
    hits = core_report(path)
    assert not hits, (f"pqlab/{_core_name(path)}: typed numbers in user-visible strings (format the constant "
                      "the code uses, or add a reasoned CORE_ALLOWED entry if it is no statement):\n"
                      + "\n".join(hits))


def test_core_allow_list_and_pending_list_name_real_things():
    names = {_core_name(p): p for p in CORE}
    assert set(CORE_PENDING) <= set(names), sorted(set(CORE_PENDING) - set(names))
    stale = [(name, hit) for name, hit in CORE_ALLOWED
             if name not in names or hit not in {h for _, t in core_texts(names[name]) for h in findings(t)}]
    assert not stale, f"CORE_ALLOWED entries that match no hit any more (remove them): {stale}"


def test_core_covers_the_printed_usage_texts():
    names = {_core_name(p) for p in CORE}
    assert {"app/cli.py", "publish/durations.py", "core/flags.py", "backends/ascon.py",
            "runners/memory/driver.py"} <= names
    # python -m ... prints these docstrings
    for module in ("app/cli.py", "publish/durations.py", "app/provision.py"):
        assert core_texts(PACKAGE / module)[0][0] == "docstring (printed)", module
    assert not any(where.startswith("docstring") for where, _ in core_texts(PACKAGE / "measure" / "stats.py"))


# ----- the scanner itself -----
@pytest.mark.parametrize("text", [
    "a 41,000-byte signature", "under two minutes", "nine KEMs, eight signatures", "liboqs 0.13 ships",
    "Bouncy Castle 1.86 on Java", "SPHINCS+ keys are 32 B", "about 5 % slower", "it ran 100 times",
    "version 3.0.19", "a 1.5× speed-up", "sign takes 200 ms",
    "no interval (fewer than 3 rounds)", "calibration needs at least 2 runs", "Java 17 or newer needed",
    "message size in bytes (default 100)", "exceeds the 320 mV shunt range", "use 1 to 100 letters",
    "seconds of sampling (default 1)", "more than 20 below", "no Overfull hbox over 1 pt", "OpenSSL 3 only",
])
def test_scanner_finds_typed_numbers(text):
    assert findings(text), text


@pytest.mark.parametrize("text", [
    "SPHINCS+-SHA2-128f-simple and ML-DSA-44 signatures", "FIPS 205 SLH-DSA", "PKCS#1 v1.5 padding",
    "X.509 SubjectPublicKeyInfo", "AES-256-GCM, Ed25519 and X25519", "round 3 and round-3 sets",
    "Table 1 of study 001", "SHA-256 and SHAKE256", "SP 800-232", "the {n} signatures", "RSA-2048 keys",
    "TLS 1.3 signature schemes", "RFC 8446 4.2.8",
    "rounds the samples come from; 1: one process, no interval", "exit 128 + the signal number",
    "1 (leaf) or 2 (leaf + intermediate)", "default: every run", "the first 3 of them",
])
def test_scanner_allows_names(text):
    assert not findings(text), findings(text)


def test_scanner_finds_factors_printed_with_an_unresolved_interval():
    assert unresolved_factors("SLH-DSA keygen 10.55× [0.05, 2,366.83] and 15.1× [0.1, 2,596]") == [
        "10.55× [0.05, 2,366.83]", "15.1× [0.1, 2,596]"]
    assert (unresolved_factors("0.50× [0.00, 0.90]")
            and not unresolved_factors("1.23× [1.20, 1.26], 1,143× [980, 1,377]"))


def test_scanner_reads_fstrings_and_skips_docstrings():
    source = 'def f(n):\n    """Takes 20 ms."""\n    return f"{20} runs" + f"{n} runs" + "5 KEMs"\n'
    texts = [t for _, t in string_literals(source)]
    assert not any("Takes" in t for t in texts)
    hits = report([("x", t) for t in texts])
    assert any("20" in h for h in hits) and any("5 KEMs" in h for h in hits)
    assert not any("{n}" in t for t in texts)  # a formatted value is not scanned as text


def test_readme_text_the_code_writes_types_no_numbers():
    """README's notebook table is rewritten by ``make readme-durations``
    (pqlab.publish.durations.render_readme): what the code writes there (the time column's header, the times,
    the line under the table) types no number; with data, the cores, dates and times come from
    build/<profile>/durations.csv."""
    from pqlab.publish.durations import BEGIN, END, TIME_HEADER, render_readme

    region = render_readme((ROOT / "README.md").read_text(), {}).split(BEGIN)[1].split(END)[0]
    lines = region.strip().splitlines()
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    column = next(i for i, c in enumerate(header) if c.startswith(TIME_HEADER))
    written = ([header[column]] + [[c.strip() for c in row.strip("|").split("|")][column] for row in lines[2:]
                                    if row.startswith("|")]
               + [row for row in lines if row and not row.startswith("|")])
    assert len(written) > 2 and not [h for w in written for h in findings(w)], written


def test_core_docstrings_count_only_where_the_module_prints_them(tmp_path):
    quiet = tmp_path / "quiet.py"
    quiet.write_text('"""Takes 20 ms."""\ndef f():\n    """At least 3 rounds."""\n    return "ok"\n')
    printed = tmp_path / "printed.py"
    printed.write_text('"""usage: run it (default 3 rounds)."""\nimport sys\n'
                       'print(__doc__, file=sys.stderr)\n')
    assert not [h for _, t in core_texts(quiet) for h in findings(t)]
    assert [h for _, t in core_texts(printed) for h in findings(t)]


# ----- numbers without intervals in generated sentences (issue #45) -----
# tests/nbval_prose.py runs bare_factors over every Markdown output of every notebook in the nbval run of
# `make test` (the quick profile measures in rounds, so every ratio it prints has an interval to show).
@pytest.mark.parametrize("text", [
    # the sentences the referee of issue #45 found, as the studies generated them
    "The ratios range from 0.31× (openssl) to 1.06× (rustcrypto).",
    "The slowest takes 39.6× the time of the fastest.",
    "no gain for Falcon-512 verify (0.93×)",
    "SLH-DSA-SHA2-128f sign: 13.28×; ML-KEM-768 keygen 2.1×.",
    "SPHINCS+-SHA2-128f-simple sign / verify (ours 11.28×, theirs 13.17×).",
])
def test_bare_factors_finds_factors_without_interval(text):
    from pqlab.core.quoted import bare_factors

    assert bare_factors(text), text


@pytest.mark.parametrize("text", [
    "ML-DSA-65 sign over ECDSA-P384 sign: 0.96× [0.73, 1.26] (medians of 6 rounds).",
    "Falcon-512 verify: not resolved (interval wider than 2×).",
    "The study's published ratio is 22.8×; ours 20.1× [19.5, 20.9].",
    "| ML-KEM-768 | 1.23× | [1.20, 1.26] |",
    "A round at least 1.3× its side's fastest counts as slow.",
    "one round only, so no interval: 1.4×",
    "study ≈40×; ours: pycryptodome 7.34× \\[7.16, 7.53\\] ✗",
    "(k, l) 4×3 → 4×4, η 6 → 2",
])
def test_bare_factors_allows_intervals_published_values_and_tables(text):
    from pqlab.core.quoted import bare_factors

    assert not bare_factors(text), bare_factors(text)


def test_the_nbval_plugin_reads_markdown_outputs_and_fails_a_bare_factor():
    import sys

    sys.path.insert(0, str(ROOT / "tests"))
    import nbval_prose

    outputs = [{"output_type": "display_data", "data": {"text/markdown": "A 2.5× gap.", "text/plain": "x"}},
               {"output_type": "stream", "text": "2.5× in a log line"},
               {"output_type": "display_data", "data": {"text/markdown": ["A 2.5× [2.4, 2.6] gap."]}}]
    assert nbval_prose.problems(outputs) == ["2.5× in: A 2.5× gap."]
    assert not nbval_prose.problems(outputs[1:])


def test_the_nbval_plugin_fails_the_cell_that_prints_a_bare_factor(tmp_path):
    """The hook as make test-notebooks loads it (-p nbval_prose, tests/ on PYTHONPATH), on one cell."""
    import os
    import subprocess
    import sys

    cell = {"cell_type": "code", "execution_count": None, "id": "c0", "metadata": {}, "outputs": [],
            "source": ["from IPython.display import Markdown, display\n",
                       "display(Markdown('The slowest takes 2.5× the time of the fastest.'))"]}
    kernel = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb = {"cells": [cell], "metadata": {"kernelspec": kernel}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "bare.ipynb").write_text(json.dumps(nb))
    env = dict(os.environ, PYTHONPATH=str(ROOT / "tests"))
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "--nbval-lax", "--nbval-current-env",
                          "-p", "no:cacheprovider", "-p", "nbval_prose", str(tmp_path / "bare.ipynb")],
                         capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert out.returncode == 1 and "2.5× in: The slowest takes 2.5×" in out.stdout, out.stdout[-2000:]
