"""The screen programs' runner (pqlab.runners.leakage): protocol 2 (native/PROTOCOL.md) from screen.py under
pqlab's interpreter and in its locked environment, both forms of the request, the exit codes, the in-process
liboqs program.  The Java programs and the statistics: tests/checks/test_leakage.py, test_protocol.py."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from pqlab.core.paths import NATIVE
from pqlab.runners import leakage as programs
from pqlab.runners import program

SCREEN = NATIVE / "leakage" / "python" / "screen.py"
REQUEST = {"target": "hmac-compare-digest", "classes": ["equal", "differ-first", "differ-last"],
           "order": [[2, 0, 1], [0, 1, 2], [1, 2, 0]], "warmup_blocks": 2, "seed": 3}


def _screen_py(stdin: str, *args: str) -> tuple[int, dict]:
    proc = subprocess.run([sys.executable, str(SCREEN), *args], input=stdin, capture_output=True, text=True,
                          timeout=120)
    return proc.returncode, json.loads(proc.stdout)


def test_the_main_interpreters_program_speaks_protocol_2():
    doc = programs.describe(programs.MAIN)
    assert doc["protocol"] == program.PROTOCOL == 2 and doc["program"] == "python"
    assert doc["commands"] == ["screen"] == list(program.program("python-leaky").commands)
    assert doc["language"] == "Python" and doc["toolchain"].startswith("CPython 3.")
    assert "hmac-compare-digest" in {t["name"] for t in doc["targets"]}


@pytest.mark.parametrize("form", ["json", "lines"])
def test_screen_py_reads_both_forms_of_the_request(form):
    text = program.lines_request(REQUEST) if form == "lines" else json.dumps(REQUEST)
    status, doc = _screen_py(text, "screen")
    assert status == 0, doc
    assert doc["protocol"] == 2 and doc["program"] == "python" and doc["classes"] == REQUEST["classes"]
    assert len(doc["times_ns"]) == 3 and all(len(row) == 3 and min(row) > 0 for row in doc["times_ns"])
    assert doc["checked"] == 9


@pytest.mark.parametrize("stdin, args, words", [
    ("", ["time"], "unknown command 'time'"),
    ("{not json", ["screen"], "not JSON"),
    ("", ["screen"], "names no target"),
    ("target hmac-compare-digest\norder 1 0 x\n", ["screen"], "takes whole numbers"),
    ("target hmac-compare-digest\nsede 1\norder 0 1 2\n", ["screen"], "close matches: seed"),
    ("target hmac-compare-digest\nseed 1\nseed 2\norder 0 1 2\n", ["screen"], "seed is given twice"),
    ('{"target": "hmac-compare-digest", "order": [[0, 1, 1]]}', ["screen"], "not a permutation"),
    ('{"target": "hmac-compare-digets", "order": [[0, 1, 2]]}', ["screen"], "close matches: hmac-compare"),
])
def test_a_bad_request_exits_2_with_one_line(stdin, args, words):
    status, doc = _screen_py(stdin, *args)
    assert status == 2 and list(doc) == ["error"] and words in doc["error"] and "\n" not in doc["error"]


def test_the_runner_names_a_refused_request():
    with pytest.raises(programs.LeakageRunError, match="refused `screen`: unknown class"):
        programs.run(programs.MAIN, dict(REQUEST, classes=["equal", "differ-frist"]))


def test_a_class_that_fails_its_check_raises_class_check_failed(monkeypatch):
    monkeypatch.setattr(programs, "_call", lambda *a, **k: {"error": "the output is not the class's answer",
                                                            "class": "differ-first"})
    with pytest.raises(programs.ClassCheckFailed, match="'differ-first' failed its check: the output"):
        programs.run(programs.MAIN, REQUEST)


def test_a_document_of_another_shape_is_refused(monkeypatch):
    monkeypatch.setattr(programs, "_call", lambda *a, **k: {"protocol": 2, "times_ns": [[1, 2, 3]]})
    with pytest.raises(programs.LeakageRunError, match="returned 1 blocks for 3"):
        programs.run(programs.MAIN, REQUEST)


def test_the_runner_screens_through_the_main_interpreter():
    doc = programs.run(programs.MAIN, REQUEST)
    assert doc["program"] == "python" and len(doc["times_ns"]) == 3


def test_the_leaky_program_reads_the_line_form_in_its_own_environment():
    if programs.why_not("python-leaky"):
        pytest.skip(programs.why_not("python-leaky"))
    prog = program.program("python-leaky")
    assert prog.request == "lines" and program.ensure_built(prog).is_relative_to(prog.folder)
    doc = programs.describe("python-leaky")
    assert doc["program"] == "python-leaky" and doc["build"]["program"] == "python-leaky"
    versions = {t["implementation"]: t["version"] for t in doc["targets"]}
    assert versions["python-rsa"] == "4.9" and versions["python-ecdsa"] == "0.19.1"
    assert programs.run("python-leaky", REQUEST)["program"] == "python-leaky"


def test_liboqs_in_process_documents_have_the_protocols_shape():
    doc = programs.describe(programs.LIBOQS)
    assert doc["protocol"] == 2 and doc["program"] == "liboqs" and doc["commands"] == ["screen"]
    entry = doc["targets"][0]
    screen = programs.run(programs.LIBOQS, {"target": entry["name"], "order": [[0, 1, 2], [2, 1, 0]],
                                            "warmup_blocks": 1, "seed": 1})
    assert screen["protocol"] == 2 and screen["program"] == "liboqs" and len(screen["times_ns"]) == 2
