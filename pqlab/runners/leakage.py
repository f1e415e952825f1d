"""The timing screen's programs: one operation timed on several input classes, in the order pqlab draws
(``native/leakage/PROTOCOL.md``: ``list`` and ``screen``).  :mod:`pqlab.checks.leakage` does the statistics.

    python          native/leakage/python/screen.py under pqlab's own interpreter (cryptography, hmac)
    python-leaky    the same program in its own hash-pinned environment of known-leaky releases
                    (python-rsa 4.9, ecdsa 0.19.1, cryptography 3.2.1): built on first need, never importable
                    from pqlab's .venv
    bc-1.83         Bouncy Castle 1.83 (CVE-2026-5598: FrodoKEM decapsulation) and bc-1.84 (the fix), one Java
    bc-1.84         source built twice
    liboqs          liboqs's KEM decapsulation through pqlab's lean path, in this process (a C loop times
                    each call)

    names()                          the programs
    describe(name) -> list document  built first where needed; targets() -> one row per (program, target)
    run(name, request) -> document   the screen document (raises ClassCheckFailed when a class fails its
                                     check)
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
from functools import cache

from pqlab.backends import liboqs as liboqs_adapter  # by module: a test replaces its decaps_each
from pqlab.core.errors import UnknownName
from pqlab.core.paths import NATIVE
from pqlab.liboqs.loader import import_oqs
from pqlab.runners.base import RunnerError, call_json, failure, list_document
from pqlab.runners.impls import Program, build_record, ensure_built, locked_versions

LEAKAGE = NATIVE / "leakage"
PROTOCOL = 1
#: The package that pins each implementation in its program's lock (checked against the version it loaded).
PACKAGES = {"python-rsa": "rsa", "python-ecdsa": "ecdsa", "cryptography": "cryptography",
            "bouncy-castle": "bcprov-jdk18on"}
_JAVA = dict(language="Java", tools=("mvn", "java"), version=("java", "-version"),
             install="install a JDK 17 or newer and Maven", build=("mvn", "-q", "package", "-DskipTests"),
             artifact="target/leak.jar", run=("java", "-jar", "target/leak.jar"), sources="java",
             root=LEAKAGE)
PROGRAMS = (
    Program("python-leaky", "Python", ("python3",), ("python3", "--version"),
            "install Python 3 with its venv module (apt-get install python3-venv)", ("sh", "build.sh"),
            "build/venv/bin/python", ("build/venv/bin/python", "screen.py"), path="python", root=LEAKAGE),
    Program("bc-1.83", path="java/1.83", **_JAVA),
    Program("bc-1.84", path="java/1.84", **_JAVA),
)
MAIN, LIBOQS = "python", "liboqs"
_BY_NAME = {p.name: p for p in PROGRAMS}
#: liboqs's KEMs the in-process program screens (decapsulation of a valid and of two invalid ciphertexts).
LIBOQS_KEMS = ("ML-KEM-768", "FrodoKEM-640-SHAKE")
LIBOQS_CLASSES = ("valid", "invalid-first", "invalid-last")
LIBOQS_COUNTER = "clock_gettime(CLOCK_MONOTONIC) in C"


class LeakageRunError(RunnerError):
    """A screen program could not be built or run, or answered something pqlab cannot read."""


class ClassCheckFailed(LeakageRunError):
    """A class failed its correctness check (a valid input gave the wrong answer, or an input that must be
    refused gave the valid one): the target is not screened."""


def names() -> list[str]:
    return [MAIN, LIBOQS, *_BY_NAME]


def _command(name: str) -> list[str]:
    if name == MAIN:
        return [sys.executable, str(LEAKAGE / "python" / "screen.py")]
    prog = _BY_NAME[name]
    ensure_built(prog)
    return prog.command()


def _check_versions(name: str, document: dict) -> None:
    """Refuse a program that loaded another release than its lock pins (a stale build)."""
    if name not in _BY_NAME:
        return
    locked = locked_versions(_BY_NAME[name])
    for target in document.get("targets", []):
        package = PACKAGES.get(target.get("implementation"), "")
        if package and locked.get(package) != target.get("version"):
            raise LeakageRunError(f"the {name} program loaded {package} {target.get('version')}, but its "
                                  f"lock pins {locked.get(package, 'nothing')}: delete "
                                  f"{_BY_NAME[name].folder}/build or target and run again to rebuild it")


@cache
def describe(name: str) -> dict:
    """The program's ``list`` document (built first where needed), checked: protocol and versions."""
    if name not in names():
        raise UnknownName("screen program", name, names())
    if name == LIBOQS:
        return _liboqs_list()
    document = list_document(_command(name), what=f"the {name} screen program", protocol=PROTOCOL,
                             error=LeakageRunError)
    _check_versions(name, document)
    document["build"] = build_record(_BY_NAME[name]) if name in _BY_NAME else {}
    return document


_WHY_NOT: dict[str, str] = {}


def why_not(name: str) -> str:
    """'' when the program answers here, else the one-line reason it cannot (a missing toolchain, a failed
    build), found once per session: a build that failed is not tried again at every call."""
    if name not in _WHY_NOT:
        try:
            describe(name)
            _WHY_NOT[name] = ""
        except (RunnerError, OSError, subprocess.SubprocessError, ImportError) as exc:
            _WHY_NOT[name] = str(exc).splitlines()[0]
    return _WHY_NOT[name]


def target(name: str, target_name: str) -> dict:
    """The program's entry for `target_name` (close matches when it has none)."""
    targets = {t["name"]: t for t in describe(name)["targets"]}
    if target_name not in targets:
        raise UnknownName(f"target of the {name} screen program", target_name, list(targets))
    return targets[target_name]


def run(name: str, request: dict, timeout_s: float = 3600) -> dict:
    """One ``screen`` of `request` (PROTOCOL.md) by program `name`: its document, checked for shape."""
    if name == LIBOQS:
        return _liboqs_screen(request)

    proc, document = call_json(_command(name) + ["screen"], what=f"the {name} screen program",
                               timeout_s=timeout_s, error=LeakageRunError, stdin=json.dumps(request))
    if proc.returncode == 3 and document:
        raise ClassCheckFailed(f"class {document.get('class')!r} failed its check: {document.get('error')}")
    if proc.returncode != 0 or document is None or "times_ns" not in document:
        last = (proc.stderr or proc.stdout or "no output").strip().splitlines()[-1]  # a traceback's last line
        why = failure(proc, document) if document else f"exit {proc.returncode}: {last}"
        raise LeakageRunError(f"the {name} screen program failed ({why})")
    if len(document["times_ns"]) != len(request["order"]):
        raise LeakageRunError(f"the {name} screen program returned {len(document['times_ns'])} blocks for "
                              f"{len(request['order'])}")
    return document


# --------------------------------------------------------------------------- liboqs, in this process


def _liboqs_list() -> dict:

    version, options, _ = liboqs_adapter._info()
    return {"protocol": PROTOCOL, "language": "C",
            "runtime": f"liboqs {version} ({options} build), pqlab's lean path", "build": {}, "targets": [
                {"name": f"{kem}-decaps", "implementation": "liboqs", "version": version,
                 "operation": f"{kem} decapsulation", "classes": list(LIBOQS_CLASSES),
                 "counter": LIBOQS_COUNTER,
                 "notes": "invalid ciphertexts: the first or the last byte flipped (implicit rejection: a "
                          "pseudo-random shared secret)"} for kem in LIBOQS_KEMS]}


def _liboqs_screen(request: dict) -> dict:

    entry = target(LIBOQS, request["target"])
    kem = entry["operation"].removesuffix(" decapsulation")
    classes = request.get("classes") or entry["classes"]
    with import_oqs().KeyEncapsulation(kem) as k:
        pk = k.generate_keypair()
        sk = k.export_secret_key()
        ct, ss = k.encap_secret(pk)
    inputs = {"valid": ct, "invalid-first": bytes([ct[0] ^ 1]) + ct[1:],
              "invalid-last": ct[:-1] + bytes([ct[-1] ^ 1])}
    cts = [inputs[c] for c in classes]
    # each class once, untimed: the class checks
    expected, _ = liboqs_adapter.decaps_each(kem, sk, cts, range(len(cts)))
    n = len(ss)
    expected = [expected[i * n:(i + 1) * n] for i in range(len(cts))]
    for name, got in zip(classes, expected):
        if (got == ss) != (name == "valid"):
            raise ClassCheckFailed(f"class {name!r} failed its check: decapsulation "
                                   f"{'did not give' if name == 'valid' else 'gave'} the encapsulated secret")
    order, warm = request["order"], request.get("warmup_blocks", 0)
    k = len(classes)
    if warm:
        liboqs_adapter.decaps_each(kem, sk, cts, [c for b in range(warm) for c in order[b % len(order)]])
    calls = [c for block in order for c in block]
    start = time.monotonic()
    secrets, ns = liboqs_adapter.decaps_each(kem, sk, cts, calls)
    wall = time.monotonic() - start
    bad = next((i for i, c in enumerate(calls) if secrets[i * n:(i + 1) * n] != expected[c]), None)
    if bad is not None:
        raise ClassCheckFailed(f"class {classes[calls[bad]]!r} failed its check in block {bad // k}: another "
                               "shared secret than before")
    times = [[0] * k for _ in order]
    for i, c in enumerate(calls):
        times[i // k][c] = ns[i]
    return {"protocol": PROTOCOL, "target": entry["name"], "implementation": "liboqs",
            "version": entry["version"], "operation": entry["operation"], "classes": list(classes),
            "counter": LIBOQS_COUNTER,
            "times_ns": times, "checked": len(calls), "wall_s": wall}
