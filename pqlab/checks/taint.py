"""Secret-dependent branches and memory addresses in liboqs, as valgrind's memcheck sees them (ctgrind,
TIMECOP).

Memcheck reports a conditional jump, and a load or store address, that depends on memory marked "undefined".
Marking a secret key undefined therefore makes it report where the code's control flow or memory access
pattern depends on that key: the two kinds of timing leak a constant-time implementation must not have.
``pqlab/checks/taint_harness.c`` (compiled like pqlab's other C helpers, with ``$CC``, into
``$XDG_CACHE_HOME/pqlab``) makes a key pair untainted, marks the secret key undefined (its public parts,
copies of the public key and of its hashes, stay defined), runs one operation, and marks its outputs defined
before checking them: a KEM's decapsulation of a valid and of an altered ciphertext, a signature's signing of
one message.  Its ``control`` kind needs no liboqs: ``leaky`` branches on a secret byte and indexes a table
with it (memcheck must report both), ``clean`` selects with a mask (it must report nothing).  Its ``function``
kind needs no liboqs either: it calls ``void symbol(uint8_t *out, const uint8_t *secret, size_t n)`` of any
shared library once, with n secret bytes (0, 1, 2 ...) tainted, e.g. the same C source built at two compiler
settings (``native/leakage/toy/select.c``).

    available() -> str                                 "" or why the check cannot run here, in one line
    check("ML-KEM-768", kind="kem", build="generic")   -> dict: errors, by_kind, findings (frames), wall_s ...
    check("leaky", kind="control")                     the positive control
    check("f", kind="function", library="f.so", nbytes=32)   one function of a shared library

A finding's ``note`` labels what a flagged function is known to be (:data:`KNOWN`); labels do not suppress:
``errors`` counts everything memcheck reported.  What the check cannot see: :data:`LIMITS`.
"""
from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

from pqlab.core import builds, integrity
from pqlab.core.errors import BadInput, UnknownName, choice
from pqlab.liboqs import names as liboqs_names
from pqlab.liboqs.build import LiboqsBuildError, build_key, provide
from pqlab.liboqs.loader import load_problem
from pqlab.measure.cycles import helper_path
from pqlab.runners.memory.driver import find_valgrind

LIMITS = """\
Memcheck reports branches and memory addresses that depend on the secret key; it does not see:
- instructions whose latency depends on their operands: a division of a secret (KyberSlash) or a variable-time
  multiply is silent, and so is a conditional move (cmov; constant time on x86, rightly silent);
- other builds: another compiler, other flags, or CPU dispatch choose other code, which may branch where \
this code
  does not (valgrind hides AVX-512 from the program, so AVX-512 paths never run under it);
- paths these inputs do not take: one key, one valid and one altered ciphertext, one message; it is not
  coverage guided, so rare paths (an extra rejection round, an error branch) may never run;
- secrets other than the secret key: key generation and the random bytes (encapsulation coins, ML-DSA's rnd)
  stay untainted, and so do the parts of the key found to be copies of public values (the public key, its
  SHA3-256 or SHAKE256 hash, a seed both keys start with);
- the hardware: caches, speculation (Spectre), frequency (Hertzbleed).  A flagged index may be harmless \
(within a
  cache line), and a flagged branch may be on a value the design makes public (ML-DSA's rejection loop)."""

KINDS = ("kem", "sig", "control", "function")
CONTROLS = ("leaky", "clean")
#: valgrind's exit status when memcheck reported errors (the harness's own are 0, 2, 3, 4)
ERROR_EXIT = 99
CALLERS = 12
TIMEOUT_S = 1800
_SOURCE = Path(__file__).with_name("taint_harness.c")
#: flagged functions of liboqs 0.13.0's ML-DSA (pqcrystals ref and avx2), read from its sources and
#: disassembly
KNOWN = {
    "chknorm": "ML-DSA rejection test (norm bound on z, r0 or ct0): only whether a candidate is rejected "
               "leaks",
    "make_hint": "ML-DSA hint h, which the signature publishes",
    "poly_challenge": "ML-DSA challenge c sampled from c~, which the signature publishes",
    "pack_sig": "ML-DSA packing of the hint, which the signature publishes",
    "signature_internal": "ML-DSA signing loop: branches on the rejection tests' results and the hint's "
                          "weight, copying the hint (read from the disassembly of the liboqs release pqlab "
                          "builds)",
}


class TaintUnavailable(RuntimeError):
    """The check cannot run here (no valgrind, no compiler, no liboqs); the message names the fix."""

    def _render_traceback_(self) -> list[str]:  # IPython (notebooks): the one line, no traceback
        return [f"{type(self).__name__}: {self}"]


def _valgrind() -> tuple[str, str]:
    """valgrind's path and version (as pqlab.runners.memory finds it), or TaintUnavailable naming the fix."""

    found = find_valgrind()
    if not found["path"]:
        raise TaintUnavailable("valgrind is not installed: install it (apt-get install valgrind, or conda "
                               "install -c conda-forge valgrind) to run the taint check")
    if not found["available"]:
        raise TaintUnavailable(f"{found['reason']}: reinstall valgrind to run the taint check")
    return found["path"], found["version"]


def harness() -> Path:
    """The harness program, compiled with $CC (default cc) into pqlab's cache unless there with its recorded
    sha256 (:func:`pqlab.measure.cycles.compile_helper` does the same for shared libraries); TaintUnavailable
    says why not."""


    path = helper_path([_SOURCE], "taint_harness").with_suffix("")
    if not integrity.problem(path):
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(f".{path.name}.lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not integrity.problem(path):
            return path
        cc = os.environ.get("CC") or "cc"
        if shutil.which(cc) is None:
            raise TaintUnavailable(f"no C compiler ({cc}) to build the taint harness: install one (apt-get "
                                   "install gcc, or conda install -c conda-forge c-compiler)")
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        proc = subprocess.run([cc, "-O2", "-g", "-o", str(tmp), str(_SOURCE), "-ldl"], capture_output=True,
                              text=True, timeout=120)
        if proc.returncode != 0:
            tmp.unlink(missing_ok=True)
            if "memcheck.h" in proc.stderr:
                raise TaintUnavailable("valgrind's header valgrind/memcheck.h is missing: install valgrind "
                                       "with its headers (apt-get install valgrind, or conda install -c "
                                       "conda-forge valgrind)")
            why = " ".join(proc.stderr.split())[:300]
            raise TaintUnavailable(f"{cc} could not build the taint harness {_SOURCE}: {why}")
        os.replace(tmp, path)
        integrity.record(path)
    return path


def available(build: str | None = "generic") -> str:
    """"" when the check runs here with `build` (None: the kinds that need no liboqs, ``control`` and
    ``function``); else why not, in one line (valgrind, compiler, liboqs)."""
    try:
        _valgrind()
        harness()
        if build is None:
            return ""
        target = builds.parse(build)
        if not (target.prefix / "lib" / "liboqs.so").is_file():

            try:
                build_key(target)  # raises when a build tool is missing
            except LiboqsBuildError as exc:
                return f"{target.id} is not installed and cannot be built here: {exc}"
    except (TaintUnavailable, BadInput, KeyError) as exc:
        return str(exc)
    return ""


def _library(build) -> tuple[builds.Build, Path]:
    """pqlab's own `build`, installed first if missing (built on first need), and its checked liboqs.so."""

    target = builds.parse(build)
    try:
        prefix = provide(target, announce=lambda line: print(line, file=sys.stderr))
    except LiboqsBuildError as exc:
        raise TaintUnavailable(f"{target.id} is not installed and cannot be built here: {exc}") from exc
    library = prefix / "lib" / "liboqs.so"
    bad = load_problem(library)
    if bad:
        raise TaintUnavailable(f"{bad}: run `python -m pqlab.app.provision liboqs {target.id}` to install it "
                               "again")
    return target, library


def _check_name(algorithm: str, kind: str, release: str) -> None:
    """Refuse a name liboqs `release` does not list as a `kind`, with close matches, before anything runs."""
    if release not in liboqs_names.RELEASES:
        return  # a release pqlab has no table for: the harness says whether the name is enabled
    names = liboqs_names.names(release, kind)
    if algorithm not in names:
        other = "sig" if kind == "kem" else "kem"
        hint = (f"{algorithm} is a {'signature' if other == 'sig' else 'KEM'} in liboqs {release}: "
                f"kind={other!r}" if algorithm in liboqs_names.names(release, other) else
                f"pqlab.liboqs.names.names({release!r}, {kind!r}) lists them")
        raise UnknownName(f"liboqs {release} {'KEM' if kind == 'kem' else 'signature'}", algorithm, names,
                          hint)


def _frame(frame: ET.Element) -> str:
    name = frame.findtext("fn") or f"?? ({Path(frame.findtext('obj') or '?').name})"
    line = frame.findtext("line")
    return f"{name} ({frame.findtext('file')}:{line})" if line else name


def _note(frames: list[str]) -> str:
    for frame in frames[:2]:  # the flagged function, or its caller when that is a libc copy (memmove)
        if "ml_dsa" in frame or "dilithium" in frame:
            for key, note in KNOWN.items():
                if key in frame.split(" ")[0]:
                    return note
    return ""


def parse_xml(path: Path | str) -> list[dict]:
    """memcheck's XML output as findings, most frequent first: kind (memcheck's words), count, frames
    (innermost first, function names where the object has symbols), note (:data:`KNOWN`)."""
    root = ET.parse(path).getroot()
    tables = root.findall("errorcounts")
    counts = ({p.findtext("unique"): int(p.findtext("count") or 0) for p in tables[-1].iter("pair")}
              if tables else {})
    findings = []
    for error in root.iter("error"):
        if (error.findtext("kind") or "").startswith("Leak_"):
            continue  # listed though --errors-for-leak-kinds=none: a leak is no timing leak
        stack = error.find("stack")
        frames = [_frame(f) for f in (stack.iter("frame") if stack is not None else ())]
        findings.append({"kind": error.findtext("what") or error.findtext("kind") or "?",
                         "memcheck": error.findtext("kind") or "",
                         "count": counts.get(error.findtext("unique"), 1), "frames": frames,
                         "note": _note(frames)})
    return sorted(findings, key=lambda f: -f["count"])


def _function_args(library, nbytes, build: str) -> tuple[str, int]:
    """kind ``function``'s shared library (an existing file, its absolute path) and byte count, checked before
    anything runs; BadInput names the fix."""
    if library is None:
        raise BadInput("kind='function' needs library=: the path of the shared library that exports the "
                       "function")
    if build != "generic":
        raise BadInput(f"build={build!r} names a liboqs build, which kind='function' does not use: pass the "
                       "shared library as library=")
    path = Path(library).expanduser().resolve()
    if not path.is_file():
        raise BadInput(f"library={str(library)!r} is not a file: pass the path of a shared library (.so)")
    if isinstance(nbytes, bool) or not isinstance(nbytes, int) or not 1 <= nbytes <= 1 << 24:
        raise BadInput(f"nbytes={nbytes!r}: pass the secret's length in bytes, a whole number from 1 to "
                       f"{1 << 24}")
    return str(path), nbytes


def check(algorithm: str, kind: str = "kem", build: str = "generic", *,
          library: str | os.PathLike | None = None, nbytes: int | None = None,
          timeout_s: float = TIMEOUT_S) -> dict:
    """Run the harness under memcheck with `algorithm`'s secret key tainted (kind ``kem``: decapsulation of a
    valid and an altered ciphertext; ``sig``: signing; ``control``: `algorithm` is ``leaky`` or ``clean``, no
    liboqs; ``function``: `algorithm` is a symbol of the shared library `library`, called once on `nbytes`
    (default 32) secret bytes, no liboqs).  `library` and `nbytes` are refused for the other kinds.  Returns
    errors (memcheck's total), contexts, by_kind, branches and indices (conditional jumps, and addresses, on
    the secret), phases (errors per harness step), findings, the secret key's tainted and public bytes,
    rejection (a KEM's: implicit or explicit), wall_s (the valgrind run), build, library, liboqs_version,
    valgrind, command."""
    kind = choice(kind, "taint check kind", KINDS)
    if kind != "function" and (library is not None or nbytes is not None):
        raise BadInput(f"library= and nbytes= are for kind='function' only: kind={kind!r} runs on pqlab's "
                       "liboqs build named by build=")
    args: list[str] = []
    if kind == "function":
        library, size = _function_args(library, 32 if nbytes is None else nbytes, build)
        target, args = None, [str(size)]
    elif kind == "control":
        algorithm, target, library = choice(algorithm, "taint control", CONTROLS), None, "-"
    else:
        target = builds.parse(build)
        _check_name(algorithm, kind, target.release)
    valgrind, version = _valgrind()
    program = harness()
    if target is not None:
        target, path = _library(target)
        library = str(path)
    with tempfile.TemporaryDirectory(prefix="pqlab-taint-") as tmp:
        xml = Path(tmp) / "memcheck.xml"
        cmd = [valgrind, "--tool=memcheck", f"--error-exitcode={ERROR_EXIT}", "--track-origins=no",
               "--leak-check=no", "--errors-for-leak-kinds=none", f"--num-callers={CALLERS}", "--xml=yes",
               f"--xml-file={xml}", str(program), library, kind, algorithm, *args]
        start = time.monotonic()
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired as exc:
            raise TaintUnavailable(f"the taint check of {algorithm} did not finish within {timeout_s:g} s "
                                   "under valgrind: pass a larger timeout_s") from exc
        wall = time.monotonic() - start
        lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
        report = json.loads(lines[-1]) if lines else {}
        if not report.get("ok"):
            why = (report.get("error") or " ".join(proc.stderr.split()[-40:])
                   or f"exit status {proc.returncode}")
            where = target.id if target else library if kind == "function" else "the control"
            status = report.get("status")
            if status == 2:
                raise BadInput(f"{algorithm}: {why} ({where}); choose another "
                               f"{'symbol or library' if kind == 'function' else 'algorithm or build'}")
            if status == 3:
                raise TaintUnavailable(f"{algorithm} ({where}) failed the harness's check of its output: "
                                       f"{why}; a liboqs problem, not a taint finding, so there is no taint "
                                       "result")
            raise TaintUnavailable(f"valgrind could not run the taint harness on {algorithm} ({where}): "
                                   f"{why}; " + ("check that it is a shared library for this machine"
                                                 if kind == "function" else
                                                 "try build='generic' (plain C) or a newer valgrind"))
        findings = parse_xml(xml) if xml.exists() else []
    by_kind: Counter = Counter()
    by_code: Counter = Counter()
    for finding in findings:
        by_kind[finding["kind"]] += finding["count"]
        by_code[finding["memcheck"]] += finding["count"]
    steps = report.get("phases", {})
    names = list(steps)
    phases = {n: steps[n] - (steps[names[i - 1]] if i else 0) for i, n in enumerate(names)}
    return {"algorithm": algorithm, "kind": kind, "build": target.id if target else "", "library": library,
            "liboqs_version": report.get("liboqs_version", ""), "valgrind": version,
            "errors": sum(by_kind.values()), "contexts": len(findings), "by_kind": dict(by_kind),
            "branches": by_code["UninitCondition"], "indices": by_code["UninitValue"], "phases": phases,
            "findings": findings, "secret_bytes": report.get("secret_bytes"),
            "tainted_bytes": report.get("tainted_bytes"), "public_ranges": report.get("public_ranges"),
            "rejection": report.get("rejection", ""), "wall_s": round(wall, 2),
            "exit_status": proc.returncode, "command": " ".join(cmd)}
