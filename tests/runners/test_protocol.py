"""One test suite for every program pqlab runs (native/PROTOCOL.md): it lists itself, its build is recorded,
it measures one round, it refuses a malformed request in one line, and pqlab reports it crashing in one line.

Every program in ``pqlab.runners.program.REGISTRY`` is run through :func:`check_program`; a toy program
written for this test (a folder and one registration line) goes through the same suite, so a new program
needs nothing else.  A program whose toolchain is missing here is skipped with the reason
(``PQLAB_REQUIRE_PROGRAMS=1`` makes that a failure)."""
from __future__ import annotations

import dataclasses
import json
import os
import shutil
import sys
import textwrap

import pytest

from pqlab.runners import program as programs

#: Arguments of one short round of `time` (native/PROTOCOL.md's line, every option given).
SHORT = ["--budget", "0.05", "--min-samples", "2", "--max-samples", "20", "--warmup", "1",
         "--sample-ns", "20000", "--message-bytes", "16"]


def _ready(name: str) -> programs.Program:
    prog = programs.program(name)
    try:
        programs.ensure_built(prog)
    except programs.ProgramError as exc:
        missing_tool = str(exc).startswith("no ") and " here for the " in str(exc)
        if os.environ.get("PQLAB_REQUIRE_PROGRAMS") == "1" or not missing_tool:
            raise
        pytest.skip(str(exc))
    return prog


def _time_args(document: dict) -> list[str]:
    """A short `time` of one cheap operation the program lists (a KEM's encapsulation where it has one)."""
    entries = document["algorithms"]
    entry = next((a for a in entries if a["algorithm"] == "ML-KEM-768"),
                 next((a for a in entries if a["kind"] == "kem"), entries[0]))
    op = {"kem": "encaps", "sig": "verify", "cipher": "encrypt", "pke": "encrypt"}[entry["kind"]]
    return ["--impl", entry["implementation"], "--alg", entry["algorithm"], "--ops", op, *SHORT]


def _screen_request(document: dict, blocks: int = 4) -> dict:
    target = document["targets"][0]
    classes = target["classes"][:2]
    return {"target": target["name"], "classes": classes,
            "order": [[0, 1] if b % 2 else [1, 0] for b in range(blocks)], "warmup_blocks": 1, "seed": 1}


def one_round(prog: programs.Program, document: dict) -> None:
    """Each command the program answers, once, with a short request: a checked document."""
    if "time" in prog.commands:
        result = programs.call(prog, "time", _time_args(document), timeout_s=300)
        assert result["protocol"] == programs.PROTOCOL and result["operations"], result
        for op in result["operations"]:
            assert op["verified"] and op["samples_ns"] and op["loops"] >= 1, op
    if "screen" in prog.commands:
        request = _screen_request(document)
        result = programs.call(prog, "screen", stdin=programs.request_text(prog, request), timeout_s=300)
        assert result["protocol"] == programs.PROTOCOL and len(result["times_ns"]) == len(request["order"])
        assert result["checked"] >= 2 * len(request["order"]), result
    if "serve" in prog.commands:
        entry = document["algorithms"][0]
        with programs.Session(prog) as session:
            answer = session.request(op="keygen", impl=entry["implementation"], alg=entry["algorithm"])
            assert answer["handle"] and bytes.fromhex(answer["public_key"])
            with pytest.raises(programs.ProgramError):
                session.request(op="no-such-operation", impl=entry["implementation"], alg=entry["algorithm"])
    if "handshake" in prog.commands:
        from pqlab.runners import tls

        out = tls.run_handshakes(tls.Config("X25519", "Ed25519"), handshakes=2, warmup=0, pin=None)
        assert out["protocol"] == programs.PROTOCOL and all(h["ok"] for h in out["handshakes"]), out


def malformed(prog: programs.Program, document: dict) -> None:
    """An unknown command, an unknown option and a malformed request: exit 2 and one line saying why."""
    requests = [("no-such-command", [], None)]
    if "time" in prog.commands:
        requests += [("time", [*_time_args(document), "--no-such-option", "1"], None),
                     ("time", ["--impl", "x", "--alg", "NO-SUCH-ALGORITHM", "--ops", "keygen", *SHORT], None)]
    if "screen" in prog.commands:
        requests += [("screen", [], "{not a request" if prog.request == "json" else "order x y\n"),
                     ("screen", [], programs.request_text(prog, {**_screen_request(document),
                                                                 "target": "no-such"}))]
    if "handshake" in prog.commands:
        requests.append(("handshake", ["--group", "NO-SUCH-GROUP"], None))
    for command, args, stdin in requests:
        proc = _raw(prog, [command, *args], stdin)
        assert proc.returncode == programs.BAD_REQUEST, (command, args, proc.returncode, proc.stdout[-300:])
        lines = proc.stdout.strip().splitlines()
        assert len(lines) == 1 and json.loads(lines[0])["error"].strip(), (command, proc.stdout[-300:])
        assert "\n" not in json.loads(lines[0])["error"]


def _raw(prog: programs.Program, args: list[str], stdin: str | None):
    import subprocess

    return subprocess.run([*prog.command(), *args], input=stdin, capture_output=True, text=True, timeout=300)


def crash(prog: programs.Program, document: dict) -> None:
    """The program killed mid-measurement (one CPU-second allowed, a long request): pqlab raises one line that
    names the program and how it ended."""
    if shutil.which("prlimit") is None:
        pytest.skip("no prlimit here (util-linux)")
    killed = dataclasses.replace(prog, run=("prlimit", "--cpu=1", "--", *prog.command()))
    if "time" in prog.commands:
        args = [*_time_args(document)]
        args[args.index("--budget") + 1], args[args.index("--max-samples") + 1] = "60", "100000000"
        command, stdin = ("time", args), None
    elif "screen" in prog.commands:
        command, stdin = ("screen", []), programs.request_text(prog, _screen_request(document, 1_000_000))
    else:  # the TLS runner: a long run of handshakes
        from pqlab.runners import tls

        chain = tls.build_chain("Ed25519")
        command, stdin = ("handshake", ["--group", "x25519", "--chain", str(chain), "--handshakes", "100000",
                                        "--warmup", "0"]), None
    with pytest.raises(programs.ProgramError) as caught:
        programs.call(killed, command[0], command[1], stdin=stdin, timeout_s=300)
    message = str(caught.value)
    assert "\n" not in message and prog.name in message, message
    assert "signal" in message or "exit" in message, message


def check_program(name: str) -> None:
    prog = _ready(name)
    document = programs.describe(prog)
    assert document["protocol"] == programs.PROTOCOL and document.get("program") == name, document
    assert set(document["commands"]) == set(prog.commands)
    for command, key in (("time", "algorithms"), ("serve", "algorithms"), ("screen", "targets")):
        if command in prog.commands:
            assert document.get(key), f"{name}'s list names no {key}"
    record = programs.build_record(prog)
    assert record["sources"] == programs.source_hash(prog) and record["toolchain"] and record["history"]
    assert record["protocol"] == programs.PROTOCOL and record["program"] == name
    one_round(prog, document)
    malformed(prog, document)
    crash(prog, document)


@pytest.mark.parametrize("name", list(programs.REGISTRY))
def test_program_speaks_the_protocol(name):
    check_program(name)


TOY = '''\
import json, sys, time

def out(doc, status=0):
    print(json.dumps(doc)); sys.exit(status)

args = sys.argv[1:]
if not args:
    out({"error": "no command: toy list | toy time ..."}, 2)
if args[0] == "list":
    out({"protocol": 2, "program": "toy", "language": "Python", "toolchain": sys.version.split()[0],
         "commands": ["time"], "implementations": [{"implementation": "toy", "version": "1", "package": "toy",
         "provenance": "", "options": ""}], "algorithms": [{"implementation": "toy", "algorithm": "XOR-KEM",
         "kind": "kem", "seeded": []}]})
if args[0] != "time":
    out({"error": f"unknown command {args[0]!r}: list, time"}, 2)
names = args[1::2]
known = {"--impl", "--alg", "--ops", "--budget", "--min-samples", "--max-samples", "--warmup", "--sample-ns",
         "--message-bytes"}
if set(names) - known or len(args[1:]) % 2:
    out({"error": f"unknown option {sorted(set(names) - known)}: the options are {sorted(known)}"}, 2)
o = dict(zip(names, args[2::2]))
if o.get("--alg") != "XOR-KEM":
    out({"error": f"unknown algorithm {o.get('--alg')!r}: XOR-KEM"}, 2)
ops, samples, start = [], [], time.monotonic()
while len(samples) < int(o["--max-samples"]) and (len(samples) < int(o["--min-samples"])
                                                  or time.monotonic() - start < float(o["--budget"])):
    t = time.perf_counter_ns()
    k = bytes(a ^ 0x5a for a in range(32))
    samples.append(time.perf_counter_ns() - t)
for op in o["--ops"].split(","):
    ops.append({"operation": op, "message_bytes": None, "loops": 1, "samples_ns": samples,
                "stopped_by": "budget", "verified": k == bytes(a ^ 0x5a for a in range(32)), "error": ""})
out({"protocol": 2, "program": "toy", "implementation": "toy", "version": "1", "algorithm": "XOR-KEM",
     "kind": "kem", "clock": "time.perf_counter_ns", "sizes": {}, "operations": ops})
'''


def test_a_new_program_is_its_folder_and_one_registration_line(tmp_path, monkeypatch):
    """A toy program: its source, its program.toml, and the one line in REGISTRY; the whole suite passes."""
    folder = tmp_path / "toy"
    folder.mkdir()
    (folder / "toy.py").write_text(TOY)
    (folder / "program.toml").write_text(textwrap.dedent("""\
        language = "Python"
        tools = ["python3"]
        toolchain = ["python3", "--version"]
        install = "install Python 3"
        build = ["sh", "-c", "mkdir -p build && cp toy.py build/toy.py"]
        artifact = "build/toy.py"
        run = ["python3", "./build/toy.py"]
        commands = ["time"]
        """))
    monkeypatch.setitem(programs.REGISTRY, "toy", str(folder))  # the registration line
    check_program("toy")
    # its sources changed: built again, and the record's history says so
    (folder / "toy.py").write_text(TOY + "\n# changed\n")
    programs.ensure_built("toy")
    record = programs.build_record(programs.program("toy"))
    assert [b["why"] for b in record["history"]] == ["missing", "stale"]


def test_a_program_without_a_build_runs_its_source_and_is_never_built(tmp_path, monkeypatch):
    """A script run by an interpreter pqlab has (notebook 09's screen.py under pqlab's own Python): an empty
    build command; it speaks the protocol with no lock, log or build record written, and its missing source
    is one line."""
    folder = tmp_path / "script"
    folder.mkdir()
    (folder / "toy.py").write_text(TOY)
    (folder / "program.toml").write_text(textwrap.dedent(f"""\
        language = "Python"
        tools = []
        toolchain = ["{sys.executable}", "--version"]
        install = "pqlab's own interpreter"
        build = []
        artifact = "toy.py"
        run = ["{sys.executable}", "./toy.py"]
        commands = ["time"]
        """))
    monkeypatch.setitem(programs.REGISTRY, "script", str(folder))
    assert programs.describe("script")["program"] == "toy"  # what the toy calls itself
    assert sorted(p.name for p in folder.iterdir()) == ["program.toml", "toy.py"]
    (folder / "toy.py").unlink()
    with pytest.raises(programs.ProgramError, match=r"^the script program's .*toy.py is missing: it is a"):
        programs.ensure_built("script")


def test_a_program_that_is_not_described_is_refused_in_one_line(tmp_path, monkeypatch):
    (tmp_path / "program.toml").write_text('language = "C"\n')
    monkeypatch.setitem(programs.REGISTRY, "half", str(tmp_path))
    with pytest.raises(programs.ProgramError, match=r"lacks tools, toolchain, install, build") as caught:
        programs.program("half")
    assert "\n" not in str(caught.value)
    with pytest.raises(Exception, match="close matches|Did you mean|toy|rust"):
        programs.program("rusty")


def test_a_failed_build_and_a_missing_tool_are_one_line(tmp_path, monkeypatch):
    folder = tmp_path / "broken"
    folder.mkdir()
    (folder / "program.toml").write_text(textwrap.dedent("""\
        language = "C"
        tools = ["sh"]
        toolchain = ["sh", "-c", "echo sh 1"]
        install = "install sh"
        build = ["sh", "-c", "echo compiling; echo 'error: no such thing' >&2; exit 3"]
        artifact = "build/broken"
        run = ["./build/broken"]
        commands = ["time"]
        """))
    monkeypatch.setitem(programs.REGISTRY, "broken", str(folder))
    failed = r"building the broken program failed .*exit 3.*no such thing"
    with pytest.raises(programs.ProgramError, match=failed):
        programs.ensure_built("broken")
    assert "error: no such thing" in (folder / "build" / "build.log").read_text()
    missing = dataclasses.replace(programs.program("broken"), tools=("no-such-tool-xyz",))
    missing_tool = r"^no no-such-tool-xyz here for the broken program: install sh$"
    with pytest.raises(programs.ProgramError, match=missing_tool):
        programs.ensure_built(missing)


def test_the_line_form_of_a_request():
    request = {"target": "t", "classes": ["a", "b"], "order": [[1, 0], [0, 1]], "warmup_blocks": 5, "seed": 1,
               "flag": True}
    assert programs.lines_request(request) == ("target t\nclasses a b\norder 1 0\norder 0 1\n"
                                               "warmup_blocks 5\nseed 1\nflag true\n")


def test_there_is_one_protocol_document():
    from pqlab.core.paths import NATIVE

    found = sorted(str(p.relative_to(NATIVE)) for p in NATIVE.rglob("PROTOCOL*.md")
                   if "node_modules" not in p.parts)
    assert found == ["PROTOCOL.md"]
    text = (NATIVE / "PROTOCOL.md").read_text()
    assert f"(version {programs.PROTOCOL})" in text
    for name, folder in programs.REGISTRY.items():
        assert (NATIVE / folder / programs.MANIFEST).exists(), f"{name}: no {folder}/{programs.MANIFEST}"
