"""The Bouncy Castle backend of the first study (notebook 01): the Java program ``native/impls/java``
(registry name "java", native/PROTOCOL.md), built with Maven and driven through :mod:`pqlab.runners.program`.

It reproduces the platform of the first study (Java + Bouncy Castle: AES-256 CBC/PKCS5, RSA-2048 PKCS#1 v1.5
encryption, SPHINCS+-SHAKE-128f; keygen, encrypt/sign, decrypt/verify of a 100-byte message, mean of 5 runs).
Each run starts a fresh JVM for one algorithm (the program's ``time``) and reports the JVM's cold first calls
(``--cold``: the first rounds after start, in the study's order) apart from the JIT-warmed steady state (the
protocol's samples, here ``warm_ns``).

The program builds against pom.xml's Bouncy Castle (:func:`default_version`) and, on request, against
another release from Maven Central (``version=``, e.g. the first study's 1.72: ``program("java",
bc=version)``, its jar in ``target/bc-VERSION/``).  Each optional group of its sources (FIPS 203/204/205;
round-3 SPHINCS+ in ``org.bouncycastle.pqc.legacy`` or in ``org.bouncycastle.pqc.crypto``) compiles in its own
Maven step that may fail, so a release builds what its API has and ``list`` names exactly that.  When Maven
cannot provide the release, :class:`BouncyCastleUnavailable` carries Maven's own message.

    >>> result = run_bc("SPHINCS+-SHAKE-128f-simple")
    >>> bc_measurements(result)   # steady-state rows, plus rows flagged jvm-cold
    >>> bc_sizes(result)          # raw key bytes, plus Bouncy Castle's encoded (X.509 / PKCS#8) sizes
"""
from __future__ import annotations

import dataclasses
import functools
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd

from pqlab.core import flags, inputs
from pqlab.core.inputs import precision_target
from pqlab.core.paths import NATIVE
from pqlab.core.schema import convert_unit, typed
from pqlab.core.vocabulary import family_of
from pqlab.measure.stats import summarize
from pqlab.measure.timing import precision_marks
from pqlab.runners import program as programs
from pqlab.runners.base import RunnerError
from pqlab.store.recorder import RunRecorder, summary_columns
from pqlab.store.results import Run

#: The program's registry name and folder.
PROGRAM = "java"
RUNNER_DIR = NATIVE / "impls" / "java"
POM = RUNNER_DIR / "pom.xml"
BACKEND = "bouncycastle"
#: The metadata key of what a Bouncy Castle run did not run, and why ("" when everything ran).
NOT_RUN = "not_run"
#: The oldest Java the program builds with (the POM's maven.compiler.release).
MIN_JAVA = 17
NO_JDK = f"no JDK installed: install openjdk-{MIN_JAVA}-jdk-headless and maven"
#: The study's operations by kind; "encrypt"/"sign" and "decrypt"/"verify" are interchangeable in run_bc, as
#: in the study's "Encrypt/Sign" column.
OPERATIONS = {"sig": ("keygen", "sign", "verify"), "cipher": ("keygen", "encrypt", "decrypt"),
              "pke": ("keygen", "encrypt", "decrypt")}


class BouncyCastleUnavailable(RunnerError):
    """Bouncy Castle cannot run here as asked, in one line: no JDK, Maven could not provide the release
    (Maven's message), or the release has none of the algorithms."""

# Schema metadata of the study's algorithms (the program itself is the authority on which exist: list).
KIND = {"AES-256-CBC": "cipher", "RSA-2048": "pke", "SPHINCS+-SHAKE-128f-simple": "sig",
        "SPHINCS+-SHAKE-128f-robust": "sig", "SLH-DSA-SHAKE-128f": "sig"}
# NIST categories: the 128f parameter sets are category 1; category 5 is defined by AES-256 key search;
# RSA-2048 has none (no post-quantum security).
NIST_LEVEL = {"AES-256-CBC": 5, "SPHINCS+-SHAKE-128f-simple": 1, "SPHINCS+-SHAKE-128f-robust": 1,
              "SLH-DSA-SHAKE-128f": 1}

_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _version_line(cmd: list[str]) -> str:
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    text = _ANSI.sub("", out.stdout + out.stderr).strip()
    return text.splitlines()[0] if text else ""


@functools.lru_cache(maxsize=1)
def jdk_available() -> tuple[bool, str]:
    """(True, "java ...; javac ...; Apache Maven ...") when a JDK and Maven are on PATH, else (False, why)."""
    if not shutil.which("java") or not shutil.which("javac"):
        return False, NO_JDK + (" (found a java runtime but no javac)" if shutil.which("java") else "")
    if not shutil.which("mvn"):
        return False, "Maven not found: install maven (a JDK is present)"
    try:
        java, javac, mvn = (_version_line(c)
                            for c in (["java", "-version"], ["javac", "-version"], ["mvn", "-v"]))
    except (OSError, subprocess.SubprocessError) as e:
        return False, f"cannot run java/javac/mvn: {e}"
    m = re.search(r'version "(\d+)', java)
    if m and int(m.group(1)) < MIN_JAVA:
        return False, f"Java {MIN_JAVA} or newer needed, found: {java}"
    return True, f"{java}; {javac}; {mvn}"


@functools.lru_cache(maxsize=1)
def default_version() -> str:
    """The Bouncy Castle release the program builds by default (``bouncycastle.version`` in pom.xml, the
    release its lock pins)."""
    return re.search(r"<bouncycastle\.version>([^<]+)</bouncycastle\.version>", POM.read_text()).group(1)


def bc_program(version: str | None = None) -> programs.Program:
    """The Java program built against a Bouncy Castle release (default: pom.xml's)."""
    return programs.program(PROGRAM, bc=version or default_version())


def jar_path(version: str | None = None) -> Path:
    """The program's jar for a Bouncy Castle release (``target/bc-VERSION/impls.jar``)."""
    return bc_program(version).artifact_path


#: The jar of the default release.
JAR = jar_path()


def unresolved(output: str) -> str:
    """Maven's reason for not resolving the dependency, from its "Could not ..." lines (the artifact line when
    there is one); empty when everything resolved."""
    lines = [line[line.index("Could not"):].strip() for line in output.splitlines() if "Could not" in line
             and any(w in line for w in ("resolve", "find artifact", "transfer artifact"))]
    specific = [line for line in lines if "artifact" in line]
    return (specific or lines or [""])[0]


def build_bc_runner(force: bool = False, timeout_s: float = 900, version: str | None = None) -> Path:
    """Build the program's jar for a Bouncy Castle release when missing, stale or damaged
    (pqlab.runners.program: the build record's hash of the sources and the jar's sha256); returns its path.

    `version`: a Bouncy Castle release other than pom.xml's, built into target/bc-VERSION/.  Raises
    :class:`BouncyCastleUnavailable` (Maven's message) when Maven cannot provide that release, RuntimeError
    (one line, with the build log's path) when the build fails otherwise."""
    ok, why = jdk_available()
    if not ok:
        raise RuntimeError(why)
    prog = dataclasses.replace(bc_program(version), timeout_s=timeout_s)
    if force:
        prog.artifact_path.unlink(missing_ok=True)
    try:
        return programs.ensure_built(prog)
    except programs.ProgramError as e:
        try:
            log = _ANSI.sub("", (prog.output / "build.log").read_text())
        except OSError:
            log = ""
        missing = unresolved(log)
        if missing:
            raise BouncyCastleUnavailable("Maven could not provide org.bouncycastle:bcprov-jdk18on:"
                                          f"{version or default_version()}: {missing}") from e
        raise RuntimeError(f"Maven build of the Bouncy Castle runner failed: {e}") from e


def _list(version: str | None = None) -> dict:
    build_bc_runner(version=version)
    return programs.describe(bc_program(version))


def bc_algorithms(version: str | None = None) -> list[str]:
    """The algorithm names the program has with that Bouncy Castle release (its ``list``)."""
    return [a["algorithm"] for a in _list(version)["algorithms"]]


def _operations(kind: str | None, operations) -> list[str]:
    """The program's names of `operations` (the study's encrypt/sign and decrypt/verify interchangeable)."""
    names = OPERATIONS.get(kind)
    if not operations or names is None:
        return list(names or ()) if not operations else list(operations)
    alias = {"encrypt": names[1], "sign": names[1], "decrypt": names[2], "verify": names[2]}
    return list(dict.fromkeys(alias.get(o.strip().lower(), o.strip().lower()) for o in operations))


def _study_result(document: dict, message_bytes: int) -> dict:
    """The program's ``time`` document with the names this module's rows read: ``bouncycastle_version``, per
    operation ``warm_ns`` (the samples), ``cold_mean_first5_ns``, ``message_bytes`` (the study's, on every
    operation) and ``error`` (None when verified)."""
    ops = []
    for op in document["operations"]:
        cold = op.get("cold_ns") or []
        ops.append({**op, "message_bytes": message_bytes, "warm_ns": op["samples_ns"], "cold_ns": cold,
                    "cold_mean_first5_ns": float(np.mean(cold[:5])) if cold else None,
                    "error": op.get("error") or None})
    return {**document, "bouncycastle_version": document["version"], "operations": ops}


def run_bc(algorithm: str, operations=None, message_bytes: int = 100, cold: int = 5,
           warm_budget_s: float = 1.0, warmup_s: float | None = None, min_samples: int = 5,
           max_samples: int = 20000,
           java_opts: tuple[str, ...] = (), timeout_s: float | None = None, version: str | None = None,
           target_rel_ci: float | None = None) -> dict:
    """Run one algorithm in a fresh JVM (the program's ``time``) and return its document, with the names the
    study's rows read (:func:`_study_result`).

    ``operations``: e.g. ``["keygen", "sign"]`` (``encrypt``/``decrypt`` and ``sign``/``verify`` are
    interchangeable, as in the study's "Encrypt/Sign" column); default all three. ``warm_budget_s`` is the
    most sampling time per operation, ``warmup_s`` (default: ``warm_budget_s``) the JIT warm-up before it;
    `target_rel_ci`: sampling stops once the median is known to this precision (as
    :func:`pqlab.measure.timing.measure`; None: the whole budget).  `version`: the Bouncy Castle release
    (default: pom.xml's).  Every sample is one call (``--sample-ns 0``), as in the study.
    Raises ValueError for an unknown algorithm or operation (the program's one line, with close matches).
    """
    listed = _list(version)
    kind = next((a["kind"] for a in listed["algorithms"] if a["algorithm"] == algorithm), None)
    prog = bc_program(version)
    if java_opts:  # JVM options go before -jar
        prog = dataclasses.replace(prog, run=(prog.run[0], *java_opts, *prog.run[1:]))
    warmup = warm_budget_s if warmup_s is None else warmup_s
    ops = ",".join(_operations(kind, operations)) or "keygen"
    args = ["--impl", BACKEND, "--alg", algorithm, "--ops", ops, "--budget", str(warm_budget_s),
            "--min-samples", str(min_samples), "--max-samples", str(max_samples), "--warmup", "3",
            "--sample-ns", "0", "--message-bytes", str(message_bytes), "--cold", str(cold),
            "--warmup-seconds", str(warmup)]
    target = precision_target(target_rel_ci)
    if target:
        args += ["--target-rel-ci", str(target)]
    if timeout_s is None:  # generous: RSA keygen and SPHINCS+ signing take up to a few hundred ms per call
        timeout_s = 300 + 10 * cold + 3 * (warmup + 3 * warm_budget_s)
    document = programs.call(prog, "time", args, timeout_s=timeout_s, accept=(0, 1, programs.BAD_REQUEST),
                             error=RunnerError)
    if "operations" not in document:
        raise ValueError(document.get("error") or f"the {PROGRAM} program refused {algorithm}")
    release = version or default_version()
    if document.get("version") != release:
        raise RunnerError(f"the {PROGRAM} program built for Bouncy Castle {release} loaded "
                          f"{document.get('version')}: delete {prog.output} and run again to rebuild it")
    return _study_result(document, message_bytes)


def implementation(result: dict) -> str:
    """E.g. "Bouncy Castle 1.86 (FIPS 205 SLH-DSA) on OpenJDK 17.0.15"."""
    runtime = "OpenJDK" if "OpenJDK" in result.get("jvm", "") else "Java"
    return (f"Bouncy Castle {result['bouncycastle_version']} ({result['api']}) on {runtime} "
            f"{result['java_version']}")


def bc_measurements(result: dict, base: dict | None = None) -> pd.DataFrame:
    """Measurement rows (`base`: the recorder's base columns): per operation one steady-state row, and
    one cold-phase row flagged jvm-cold."""
    alg = result["algorithm"]
    ident = {**(base or {}), "backend": BACKEND, "implementation": implementation(result),
             "library_version": result["bouncycastle_version"], "build": "", "algorithm": alg,
             "kind": KIND.get(alg), "family": family_of(alg), "nist_level": NIST_LEVEL.get(alg),
             "cycles_source": "none", "overhead_ns": result.get("overhead_ns")}
    rows = []
    for op in result["operations"]:
        failed = [] if op["verified"] else [flags.make("failed", op.get("error") or "unverified")]
        for phase, ns in (("warm", op["warm_ns"]), ("cold", op["cold_ns"])):
            if phase == "cold" and not ns:
                continue
            t = summarize(ns) if len(ns) else {}
            marks = (([flags.make("jvm-cold")] if phase == "cold" else []) + [flags.make("no-cycles", "jvm")]
                     + failed)
            marks.append(flags.make("no-rounds", "one JVM process"))
            target = result.get("target_rel_ci") if phase == "warm" else None
            if phase == "warm":
                marks += t.get("flags", [])
                marks += precision_marks(t.get("rel_ci", float("nan")), target,
                                         op.get("stopped_by") or "budget")
            rows.append({**ident, "operation": op["operation"], "message_bytes": op["message_bytes"],
                         "samples": len(ns), "loops": op.get("loops", 1), "rounds": 1, **summary_columns(t),
                         "target_rel_ci": target, "verified": bool(op["verified"]),
                         "flags": flags.join(marks)})
    return typed(pd.DataFrame(rows), "measurements")


def bc_samples(result: dict, run_id: str = "") -> pd.DataFrame:
    """Every raw sample in the schema's sample columns, plus a ``phase`` column (cold | warm)."""
    rows = [{"run_id": run_id, "backend": BACKEND, "build": "", "algorithm": result["algorithm"],
             "operation": op["operation"], "message_bytes": op["message_bytes"], "sample": i,
             "loops": op.get("loops", 1), "time_ns": t, "cycles": None, "phase": phase}
            for op in result["operations"] for phase in ("cold", "warm")
            for i, t in enumerate(op[f"{phase}_ns"])]
    return typed(pd.DataFrame(rows), "samples")


def bc_sizes(result: dict) -> pd.DataFrame:
    """One size row (raw key bytes) plus public_key_encoded_bytes / secret_key_encoded_bytes
    (Bouncy Castle's getEncoded(): X.509 SubjectPublicKeyInfo / PKCS#8 PrivateKeyInfo, DER)."""
    s, alg = result["sizes"], result["algorithm"]
    sig = s.get("signature_bytes")
    row = {"algorithm": alg, "backend": BACKEND, "family": family_of(alg), "nist_level": NIST_LEVEL.get(alg),
           "public_key_bytes": s.get("public_key_raw_bytes"),
           "secret_key_bytes": s.get("secret_key_raw_bytes"),
           # SPHINCS+/SLH-DSA signatures have a fixed size
           "signature_bytes": sig, "signature_max_bytes": sig,
           "ciphertext_bytes": s.get("ciphertext_bytes"), "symmetric_key_bytes": s.get("symmetric_key_bytes"),
           "key_encoding": "raw (encoded: SubjectPublicKeyInfo / PKCS#8 DER)",
           "public_key_encoded_bytes": s.get("public_key_encoded_bytes"),
           "secret_key_encoded_bytes": s.get("secret_key_encoded_bytes")}
    return typed(pd.DataFrame([row]), "sizes")


def bc_summary(result: dict) -> pd.DataFrame:
    """The study's view next to the steady state: first call, mean of the first 5 calls, warm median (ms)."""
    return pd.DataFrame([
        {"algorithm": result["algorithm"], "operation": op["operation"],
         "cold_first_ms": convert_unit(op["cold_ns"][0], "ns", "ms") if op["cold_ns"] else None,
         "cold_mean_first5_ms": convert_unit(op["cold_mean_first5_ns"] or np.nan, "ns", "ms"),
         "warm_median_ms": convert_unit(np.median(op["warm_ns"]), "ns", "ms") if op["warm_ns"] else None,
         "warm_samples": len(op["warm_ns"]), "verified": op["verified"]}
        for op in result["operations"]])


def bc_run(algorithms, *, message_bytes: int = 100, cold: int = 5, warm_budget_s: float = 1.0,
           study: str = "", save: bool = True, version: str | None = None,
           target_rel_ci: float | None = None) -> Run:
    """Run several algorithms on one Bouncy Castle release (a fresh JVM each) and store them as one pqlab run.

    ``run.meta["not_run"]`` names the algorithms that release does not have ("" when everything ran).  Raises
    :class:`BouncyCastleUnavailable` in one line, as every runner raises, when nothing can run: no JDK, Maven
    could not provide the release (Maven's message), or the release has none of `algorithms`.
    """
    inputs.names(algorithms, "algorithm")
    message_bytes = inputs.message_size(message_bytes)
    cold, warm_budget_s = inputs.count(cold, "cold"), inputs.positive_number(warm_budget_s, "warm_budget_s")
    study, target_rel_ci = (inputs.file_label(study, "study", empty=True),
                            inputs.precision_target(target_rel_ci))
    ok, why = jdk_available()
    if not ok:
        raise BouncyCastleUnavailable(why)
    supported = bc_algorithms(version)
    release = version or default_version()
    runnable = [a for a in algorithms if a in supported]
    skipped = [a for a in algorithms if a not in supported]
    reason = f"not in Bouncy Castle {release}: {', '.join(skipped)}" if skipped else ""
    if not runnable:
        raise BouncyCastleUnavailable(reason)
    params = {"algorithms": list(algorithms), "message_bytes": message_bytes, "cold": cold,
              "warm_budget_s": warm_budget_s, "target_rel_ci": target_rel_ci, "bouncycastle_version": release}
    label = f"{study}-bouncycastle-{release}" if study else f"bouncycastle-{release}"
    with RunRecorder(study, params, label=label, save=save, liboqs=False) as rec:
        rec.meta[NOT_RUN] = reason
        for algorithm in runnable:
            result = run_bc(algorithm, message_bytes=message_bytes, cold=cold, warm_budget_s=warm_budget_s,
                            version=version, target_rel_ci=target_rel_ci)
            rec.meta.update(jvm=result.get("jvm", ""), java_version=result.get("java_version", ""),
                            bouncycastle_version=result["bouncycastle_version"])
            rec.record_implementation(algorithm, BACKEND, implementation(result))
            rec.add(measurements=bc_measurements(result, rec.base).to_dict("records"),
                    sizes=bc_sizes(result).to_dict("records"),
                    samples=bc_samples(result, rec.run_id).to_dict("records"))
            rec.checkpoint()
    return rec.run
