"""The timing screen's programs: one operation timed on several input classes, in the order pqlab draws
(``native/PROTOCOL.md``, protocol 2: ``list`` and ``screen``); :mod:`pqlab.checks.leakage` does the
statistics.

    python-leaky    native/leakage/python/screen.py in its own hash-pinned environment of known-leaky releases
                    (python-rsa 4.9, ecdsa 0.19.1, cryptography 3.2.1): built on first need, never importable
                    from pqlab's .venv; it reads the request in the protocol's line form
    bc-1.83         Bouncy Castle 1.83 (CVE-2026-5598: FrodoKEM decapsulation) and bc-1.84 (the fix): one Java
    bc-1.84         source (native/leakage/java/src) built twice
    python          the same screen.py under pqlab's own interpreter (cryptography, hmac): nothing to build,
                    so not a registered program; started as ``sys.executable screen.py``, its answers checked
                    as a registered program's are (protocol, commands, exit codes), its request in JSON
    liboqs          liboqs's KEM decapsulation through pqlab's lean path, in this process (a C loop times each
                    call); its documents have the protocol's shape.  Its power check (a request's
                    ``delays_ns``) puts native/leakage/liboqs/inject.c's wrapper in place of OQS_KEM_decaps:
                    the wrapper calls it, then busy-waits a call's delay inside the loop's timed interval.
                    ``KEM-decaps@BUILD`` (``HQC-128-decaps@liboqs-0.13.0+clang19``) screens any KEM of any
                    of pqlab's liboqs builds, in a worker process that loads it (``python -m
                    pqlab.runners.leakage``, the same code); there Kyber-768's parameter set gets two more
                    classes (:data:`CRAFTED`)

The registered programs go through :mod:`pqlab.runners.program` (built on first need, their ``list`` checked
for the protocol and their commands, every library version they report checked against their lock).

    names()                          the programs
    describe(name) -> list document  built first where needed, with ``build`` (the build record)
    target(name, target) -> entry    one target of a program's ``list``
    run(name, request) -> document   the screen document (raises ClassCheckFailed when a class fails its
                                     check)
"""
from __future__ import annotations

import ctypes
import dataclasses
import json
import subprocess
import sys
import time
from functools import cache
from pathlib import Path

from pqlab.backends import liboqs as liboqs_adapter  # by module: a test replaces its decaps_each
from pqlab.backends.base import VerificationError
from pqlab.core import builds
from pqlab.core.errors import UnknownName
from pqlab.liboqs import names as liboqs_names
from pqlab.liboqs.loader import build_environment, import_oqs
from pqlab.measure.cycles import compile_helper, load_helper
from pqlab.runners import program
from pqlab.runners.base import RunnerError

PROTOCOL = program.PROTOCOL
#: The registered screen programs (pqlab.runners.program.REGISTRY names).
PROGRAMS = ("python-leaky", "bc-1.83", "bc-1.84")
MAIN, LIBOQS = "python", "liboqs"
#: The package that pins each implementation in its program's lock (checked against the version it loaded).
PACKAGES = {"python-rsa": "rsa", "python-ecdsa": "ecdsa", "cryptography": "cryptography",
            "bouncy-castle": "bcprov-jdk18on"}
#: liboqs's KEMs the in-process program screens (decapsulation of a valid and of two invalid ciphertexts).
LIBOQS_KEMS = ("ML-KEM-768", "FrodoKEM-640-SHAKE")
LIBOQS_CLASSES = ("valid", "invalid-first", "invalid-last")
LIBOQS_COUNTER = "clock_gettime(CLOCK_MONOTONIC) in C"
#: Ciphertexts of Kyber-768's parameter set (Kyber768, ML-KEM-768: k = 3, d_u = 10, d_v = 4, 1088 bytes)
#: crafted so that decryption gives a known message, whatever the key: u = 0, so the decrypted polynomial is
#: v's decompressed coefficients.  ``zero-message``: v = 0, every coefficient 0, poly_tomsg divides 1664 by q
#: (quotient 0); ``ones-message``: every 4-bit v coefficient 8, decompressed to 1665, poly_tomsg divides 4994
#: (quotient 1).  Both are invalid (implicit rejection); the re-encryption that follows compresses the two
#: messages' ciphertexts (KyberSlash's second division).  The classes differ exactly in the message bits
#: poly_tomsg divides.
KYBER768 = ("Kyber768", "ML-KEM-768")
CRAFTED = {"zero-message": bytes(960) + bytes(128), "ones-message": bytes(960) + b"\x88" * 128}
#: The liboqs power check's wrapper of OQS_KEM_decaps (busy-waits a call's delay inside the timed interval).
INJECT_SOURCE = Path(__file__).resolve().parents[2] / "native" / "leakage" / "liboqs" / "inject.c"


class LeakageRunError(RunnerError):
    """A screen program could not be built or run, or answered something pqlab cannot read."""


class ClassCheckFailed(LeakageRunError):
    """A class failed its correctness check (a valid input gave the wrong answer, or an input that must be
    refused gave the valid one): the target is not screened."""


def names() -> list[str]:
    return [MAIN, LIBOQS, *PROGRAMS]


def _program(name: str) -> program.Program:
    """The program `name` speaks through: a registered one, or (``python``) screen.py under pqlab's own
    interpreter, python-leaky's record started with ``sys.executable``, sent JSON and never built."""
    if name != MAIN:
        return program.program(name)
    leaky = program.program("python-leaky")
    return dataclasses.replace(leaky, name=MAIN, run=(sys.executable, "./screen.py"), build=(), tools=(),
                               artifact="./screen.py", request="json")


def _call(name: str, command: str, *, stdin: str | None = None, timeout_s: float = 600) -> dict:
    """`command`'s document from program `name`, exit 0 or (``screen``) 3; every other ending raises
    :class:`LeakageRunError` in one line (:func:`pqlab.runners.program.call`)."""
    accept = (0, program.CLASS_FAILED) if command == "screen" else (0,)
    try:
        return program.call(_program(name), command, stdin=stdin, timeout_s=timeout_s, accept=accept,
                            error=LeakageRunError)
    except program.ProgramError as exc:  # a missing toolchain, a failed build: the studies' one error type
        raise LeakageRunError(str(exc)) from exc


def _list(name: str) -> dict:
    """The ``list`` document, checked for the protocol and the commands, with ``build``
    (:func:`pqlab.runners.program.describe`)."""
    try:
        return program.describe(_program(name))
    except program.ProgramError as exc:  # a missing toolchain, a failed build: the studies' one error type
        raise LeakageRunError(str(exc)) from exc


def check_versions(name: str, document: dict) -> None:
    """Refuse a program whose ``list`` reports another release than its lock pins (a stale build), and one
    that calls itself by another name."""
    if document.get("program") != name:
        raise LeakageRunError(f"the {name} screen program calls itself {document.get('program')!r}: it is "
                              f"not the build of {name}; delete its build output and run again to rebuild it")
    if name == MAIN:
        return
    loaded = [(f"target {t.get('name')}", PACKAGES[t.get("implementation")], t.get("version"))
              for t in document.get("targets", []) if t.get("implementation") in PACKAGES]
    try:
        program.check_locked(program.program(name), loaded)
    except program.ProgramError as exc:
        raise LeakageRunError(str(exc)) from exc


@cache
def describe(name: str) -> dict:
    """The program's ``list`` document (built first where needed), checked: protocol, commands, name and
    versions."""
    if name not in names():
        raise UnknownName("screen program", name, names())
    if name == LIBOQS:
        return _liboqs_list()
    document = _list(name)
    check_versions(name, document)
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
    """The program's entry for `target_name` (close matches when it has none); the liboqs program's
    ``KEM-decaps@BUILD`` names any KEM of any of pqlab's builds (:func:`build_target`)."""
    if name == LIBOQS and "@" in target_name:
        return build_target(target_name)
    targets = {t["name"]: t for t in describe(name)["targets"]}
    if target_name not in targets:
        raise UnknownName(f"target of the {name} screen program", target_name, list(targets))
    return targets[target_name]


def run(name: str, request: dict, timeout_s: float = 3600) -> dict:
    """One ``screen`` of `request` (native/PROTOCOL.md) by program `name`: its document, checked for
    shape."""
    if name == LIBOQS:
        entry = target(LIBOQS, request["target"])
        if entry.get("build") and entry["build"] != liboqs_adapter._info()[2]:
            return _in_worker(entry["build"], request, timeout_s)
        return _liboqs_screen(request)
    document = _call(name, "screen", stdin=program.request_text(_program(name), request), timeout_s=timeout_s)
    if "times_ns" not in document and "class" in document:  # exit 3
        raise ClassCheckFailed(f"class {document.get('class')!r} failed its check: {document.get('error')}")
    if "times_ns" not in document or document.get("protocol") != PROTOCOL:
        raise LeakageRunError(f"the {name} screen program's screen document has no times_ns or another "
                              f"protocol than {PROTOCOL}: {str(document)[:200]}")
    if len(document["times_ns"]) != len(request["order"]):
        raise LeakageRunError(f"the {name} screen program returned {len(document['times_ns'])} blocks for "
                              f"{len(request['order'])}")
    return document


# --------------------------------------------------------------------------- liboqs, in this process


def _entry(kem: str, version: str, name: str = "", build: str = "") -> dict:
    """The liboqs program's target of `kem`'s decapsulation (on `build`, where it names one: such a target of
    Kyber-768's parameter set has the :data:`CRAFTED` classes too; the loaded build's keeps its three)."""
    crafted = kem in KYBER768 and bool(build)
    return {"name": name or f"{kem}-decaps", "implementation": "liboqs", "version": version,
            "operation": f"{kem} decapsulation", "counter": LIBOQS_COUNTER,
            "classes": [*LIBOQS_CLASSES, *(CRAFTED if crafted else ())],
            **({"build": build} if build else {}),
            "notes": "invalid ciphertexts: the first or the last byte flipped (implicit rejection: a "
                     "pseudo-random shared secret)" + ("; zero-message and ones-message: u = 0 and v crafted "
                                                       "so that poly_tomsg divides 1664 or 4994 by q"
                                                       if crafted else "")}


def _liboqs_list() -> dict:

    version, options, build = liboqs_adapter._info()
    runtime = f"liboqs {version} ({options} build), pqlab's lean path"
    return {"protocol": PROTOCOL, "program": LIBOQS, "language": "C", "toolchain": runtime,
            "runtime": runtime, "commands": ["screen"], "build": {}, "targets": [
                _entry(kem, version) for kem in LIBOQS_KEMS]}


def build_target(name: str) -> dict:
    """The liboqs program's target ``KEM-decaps@BUILD``: `KEM`'s decapsulation on pqlab's build `BUILD`
    (:func:`pqlab.core.builds.parse`; any compiler and level), screened in a worker process that loads it.
    An unknown build, or a KEM that release does not have, is refused in one line with close matches."""
    head, _, build_id = name.rpartition("@")
    if not head.endswith("-decaps"):
        guess = head.rpartition("-")[0] or head  # the KEM, when an operation other than decaps was asked
        raise UnknownName("target of the liboqs screen program", name,
                          [f"{k}-decaps@{build_id}" for k in (guess, *LIBOQS_KEMS)])
    build = builds.parse(build_id)
    kem = head.removesuffix("-decaps")
    known = liboqs_names.names(build.release, "kem") if build.release in liboqs_names.RELEASES else [kem]
    if kem not in known:
        raise UnknownName(f"KEM of liboqs {build.release}", kem, known)
    return _entry(kem, build.release, name, build.id)


def _in_worker(build: str, request: dict, timeout_s: float) -> dict:
    """:func:`_liboqs_screen` of `request` in a fresh process that loads liboqs `build` (installed first on
    first need); a class that fails its check there raises :class:`ClassCheckFailed` here."""
    env = build_environment(build)
    proc = subprocess.run([sys.executable, "-m", "pqlab.runners.leakage"], input=json.dumps(request),
                          capture_output=True, text=True, env=env, timeout=timeout_s)
    lines = proc.stdout.strip().splitlines()
    try:
        document = json.loads(lines[-1]) if lines else {}
    except ValueError:
        document = {}
    if proc.returncode == program.CLASS_FAILED and "class_failed" in document:
        raise ClassCheckFailed(document["class_failed"])
    if proc.returncode != 0 or "times_ns" not in document:
        why = " ".join(proc.stderr.split()[-60:]) or f"exit status {proc.returncode}"
        raise LeakageRunError(f"the liboqs screen worker of {build} failed: {why}")
    return document


def _liboqs_screen(request: dict) -> dict:

    entry = target(LIBOQS, request["target"])
    kem = entry["operation"].removesuffix(" decapsulation")
    classes = request.get("classes") or entry["classes"]
    with import_oqs().KeyEncapsulation(kem) as k:
        pk = k.generate_keypair()
        sk = k.export_secret_key()
        ct, ss = k.encap_secret(pk)
    inputs = {"valid": ct, "invalid-first": bytes([ct[0] ^ 1]) + ct[1:],
              "invalid-last": ct[:-1] + bytes([ct[-1] ^ 1]), **(CRAFTED if kem in KYBER768 else {})}
    cts = [inputs[c] for c in classes]
    # each class once, untimed: the class checks (and whether the KEM rejects it with an error status)
    expected, rejected = zip(*(_decaps_once(kem, sk, ct) for ct in cts))
    for name, got, refused in zip(classes, expected, rejected):
        if (got == ss and not refused) != (name == "valid"):
            raise ClassCheckFailed(f"class {name!r} failed its check: decapsulation "
                                   f"{'did not give' if name == 'valid' else 'gave'} the encapsulated secret")
    n, order, warm = len(ss), request["order"], request.get("warmup_blocks", 0)
    k = len(classes)
    if warm:
        warm_calls = [c for b in range(warm) for c in order[b % len(order)]]
        liboqs_adapter.decaps_each(kem, sk, cts, warm_calls, failures=sum(rejected[c] for c in warm_calls))
    calls = [c for block in order for c in block]
    failures = sum(rejected[c] for c in calls)
    delays = request.get("delays_ns") or [0] * k
    start = time.monotonic()
    if any(delays):
        secrets, ns, spun = _injected(kem, sk, cts, calls, [int(delays[c]) for c in calls], failures)
    else:
        secrets, ns, spun = (*liboqs_adapter.decaps_each(kem, sk, cts, calls, failures=failures), None)
    wall = time.monotonic() - start
    bad = next((i for i, c in enumerate(calls) if secrets[i * n:(i + 1) * n] != expected[c]), None)
    if bad is not None:
        raise ClassCheckFailed(f"class {classes[calls[bad]]!r} failed its check in block {bad // k}: another "
                               "shared secret than before")
    times = [[0] * k for _ in order]
    for i, c in enumerate(calls):
        times[i // k][c] = ns[i]
    return {"protocol": PROTOCOL, "program": LIBOQS, "target": entry["name"], "implementation": "liboqs",
            "version": entry["version"], "build": liboqs_adapter._info()[2], "operation": entry["operation"],
            "classes": list(classes),
            "counter": LIBOQS_COUNTER,
            "times_ns": times, "checked": len(calls), "wall_s": wall,
            **({"injected_ns": [_median([w for w, c in zip(spun, calls) if c == i]) for i in range(k)]}
               if spun is not None else {})}


def _decaps_once(kem: str, sk: bytes, ct: bytes) -> tuple[bytes, bool]:
    """One untimed decapsulation of `ct` through the screen's own loop: (its shared secret, whether it
    returned an error status: liboqs 0.13's HQC rejects an invalid ciphertext so, after writing its
    implicit-rejection secret)."""
    try:
        return liboqs_adapter.decaps_each(kem, sk, [ct], [0])[0], False
    except VerificationError:
        return liboqs_adapter.decaps_each(kem, sk, [ct], [0], failures=1)[0], True


def _median(values: list[int]) -> int:
    return sorted(values)[len(values) // 2] if values else 0


@cache
def _inject_library() -> ctypes.CDLL:
    """native/leakage/liboqs/inject.c, compiled on first need into pqlab's cache (as the lean loops are)."""
    what = "the timing screen's delay injection"
    lib = load_helper(compile_helper([INJECT_SOURCE], "leakage_inject", what),
                      ("pqlab_inject_setup", "pqlab_inject_decaps"), what)
    lib.pqlab_inject_setup.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    lib.pqlab_inject_setup.restype = None
    return lib


def _injected(kem: str, sk: bytes, cts: list[bytes], calls: list[int], delays: list[int],
              failures: int = 0):
    """:func:`pqlab.backends.liboqs.decaps_each` with the power check's wrapper in place of OQS_KEM_decaps:
    call i busy-waits ``delays[i]`` ns inside its timed interval.  (secrets, ns, what each wait added)."""
    lib = _inject_library()
    n = len(calls)
    wanted, spun = (ctypes.c_uint64 * n)(*delays), (ctypes.c_uint64 * n)()
    original = liboqs_adapter._c
    api, loops = original()
    lib.pqlab_inject_setup(api["OQS_KEM_decaps"][1], ctypes.addressof(wanted), ctypes.addressof(spun))
    wrapper = ctypes.cast(lib.pqlab_inject_decaps, ctypes.c_void_p).value
    # decaps_each reads OQS_KEM_decaps's address from _c(): the wrapper's, for this one loop
    liboqs_adapter._c = lambda: ({**api, "OQS_KEM_decaps": (api["OQS_KEM_decaps"][0], wrapper)}, loops)
    try:
        secrets, ns = liboqs_adapter.decaps_each(kem, sk, cts, calls, failures=failures)
    finally:
        liboqs_adapter._c = original
    return secrets, ns, list(spun)


def main() -> int:
    """The worker of :func:`_in_worker`: one request (JSON on stdin) screened with the liboqs this process
    loads; its document on stdout (exit 0), or the class that failed its check (exit 3)."""
    request = json.loads(sys.stdin.read())
    try:
        print(json.dumps(_liboqs_screen(request)))
    except ClassCheckFailed as exc:
        print(json.dumps({"class_failed": str(exc)}))
        return program.CLASS_FAILED
    return 0


if __name__ == "__main__":
    sys.exit(main())
