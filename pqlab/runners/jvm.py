"""The Bouncy Castle backend: the Java runner of native/bc-runner/, built with Maven and driven from Python.

It reproduces the platform of the first study (Java + Bouncy Castle: AES-256 CBC/PKCS5, RSA-2048 PKCS#1 v1.5
encryption, SPHINCS+-SHAKE-128f; keygen, encrypt/sign, decrypt/verify of a 100-byte message, mean of 5 runs).
Each run starts a fresh JVM for one algorithm and reports the JVM's cold first calls (``cold_ns``, the first
``cold`` rounds after start, in the study's order) apart from the JIT-warmed steady state (``warm_ns``).

The runner builds against pom.xml's Bouncy Castle (:func:`default_version`) and, on request, against another
release from Maven Central (``version=``, e.g. the first study's 1.72) into ``target/bc-VERSION/``.  Releases
whose round-3 SPHINCS+ lives in ``org.bouncycastle.pqc.crypto.sphincsplus`` compile ``HashSigsPqcCrypto.java``
instead of ``HashSigs.java`` (found by compiling: when only HashSigs.java fails).  When Maven cannot provide
the release, :class:`BouncyCastleUnavailable` carries Maven's own message.

    >>> result = run_bc("SPHINCS+-SHAKE-128f-simple")
    >>> bc_measurements(result)   # steady-state rows, plus rows flagged jvm-cold
    >>> bc_sizes(result)          # raw key bytes, plus Bouncy Castle's encoded (X.509 / PKCS#8) sizes
"""
from __future__ import annotations

import functools
import re
import shutil
import subprocess
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd

from pqlab.core import flags, inputs, integrity
from pqlab.core.errors import warn
from pqlab.core.inputs import precision_target
from pqlab.core.paths import NATIVE
from pqlab.core.schema import convert_unit, typed
from pqlab.core.vocabulary import family_of
from pqlab.measure.stats import summarize
from pqlab.measure.timing import precision_marks
from pqlab.runners.base import RunnerError, call_json, failure
from pqlab.store.recorder import RunRecorder, summary_columns
from pqlab.store.results import Run

RUNNER_DIR = NATIVE / "bc-runner"
POM = RUNNER_DIR / "pom.xml"
JAR = RUNNER_DIR / "target" / "bc-runner.jar"
BACKEND = "bouncycastle"
#: The metadata key of what a Bouncy Castle run did not run, and why ("" when everything ran).
NOT_RUN = "not_run"
#: The oldest Java the runner builds with (the POM's maven.compiler.release).
MIN_JAVA = 17
NO_JDK = f"no JDK installed: install openjdk-{MIN_JAVA}-jdk-headless and maven"
#: the source to leave out for releases with the older hash-based API (pom.xml's bc.exclude)
OLDER_API = "-Dbc.exclude=pqlab/HashSigs.java"


class BouncyCastleUnavailable(RuntimeError):
    """Maven could not provide the requested Bouncy Castle release; the message is Maven's."""

# Schema metadata of the runner's algorithms (the runner itself is the authority on which exist: --list).
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


def _sources() -> list[Path]:
    return [POM, *sorted(p for p in (RUNNER_DIR / "src").rglob("*") if p.is_file())]


@functools.lru_cache(maxsize=1)
def default_version() -> str:
    """The Bouncy Castle release the runner builds by default (``bouncycastle.version`` in pom.xml)."""
    return re.search(r"<bouncycastle\.version>([^<]+)</bouncycastle\.version>", POM.read_text()).group(1)


def jar_path(version: str | None = None) -> Path:
    """The runner's jar for a Bouncy Castle release (the default one: target/bc-runner.jar)."""
    if version in (None, default_version()):
        return JAR
    return RUNNER_DIR / "target" / f"bc-{version}" / "bc-runner.jar"


def _maven(options: list[str], timeout_s: float) -> tuple[int, str]:
    cmd = ["mvn", "-q", "-B", "-Dstyle.color=never", "-f", str(POM), *options, "package"]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, cwd=RUNNER_DIR)
    except subprocess.TimeoutExpired as e:
        raise RuntimeError("Maven build of the Bouncy Castle runner timed out after "
                           f"{timeout_s:.0f} s") from e
    return proc.returncode, _ANSI.sub("", proc.stdout + proc.stderr).strip()


def _only_hash_sigs_failed(output: str) -> bool:
    """True when javac's errors are all in HashSigs.java: the release has the older hash-based API."""
    files = re.findall(r"\[ERROR\] \S*?([A-Za-z]+\.java):\[\d+", output)
    return bool(files) and set(files) == {"HashSigs.java"}


def unresolved(output: str) -> str:
    """Maven's reason for not resolving the dependency, from its "Could not ..." lines (the artifact line when
    there is one); empty when everything resolved."""
    lines = [line[line.index("Could not"):].strip() for line in output.splitlines() if "Could not" in line
             and any(w in line for w in ("resolve", "find artifact", "transfer artifact"))]
    specific = [line for line in lines if "artifact" in line]
    return (specific or lines or [""])[0]


def build_bc_runner(force: bool = False, timeout_s: float = 900, version: str | None = None) -> Path:
    """Build the runner's jar with Maven when missing or older than its sources; returns its path.

    `version`: a Bouncy Castle release other than pom.xml's, built into target/bc-VERSION/.  Raises
    :class:`BouncyCastleUnavailable` (Maven's message) when Maven cannot provide that release."""
    ok, why = jdk_available()
    if not ok:
        raise RuntimeError(why)
    jar = jar_path(version)
    newest = max(p.stat().st_mtime for p in _sources())
    if not force and jar.exists() and jar.stat().st_mtime >= newest:
        bad = _jar_problem(jar)
        if not bad:
            return jar

        warn(f"the Bouncy Castle runner {jar} {bad}: building it again")
    options = [] if jar == JAR else [f"-Dbouncycastle.version={version}", f"-Dbc.build.dir={jar.parent}"]
    code, output = _maven(options, timeout_s)
    if code != 0 and jar != JAR and _only_hash_sigs_failed(output):
        code, output = _maven([*options, OLDER_API], timeout_s)
    if code != 0 or not jar.exists():
        missing = unresolved(output)
        if missing:
            raise BouncyCastleUnavailable("Maven could not provide "
                                          f"org.bouncycastle:bcprov-jdk18on:{version}: {missing}")
        tail = "\n".join(output.splitlines()[-40:])
        raise RuntimeError(f"Maven build of the Bouncy Castle runner failed (exit {code}): "
                           f"mvn {' '.join(options)} package\n{tail}")
    integrity.record(jar)
    return jar


def _jar_problem(jar: Path) -> str:
    """"" when `jar` has the sha256 recorded when Maven built it; a jar built before pqlab recorded them gets
    its sha256 recorded once every member passes its CRC check.  Otherwise what is wrong with it."""
    bad = integrity.problem(jar)
    if bad and integrity.recorded(jar) is None:

        try:
            with zipfile.ZipFile(jar) as archive:
                if archive.testzip() is None:
                    integrity.record(jar)
                    return ""
        except (OSError, zipfile.BadZipFile, EOFError):
            pass
    return bad


def bc_algorithms(version: str | None = None) -> list[str]:
    """The algorithm names the runner supports with that Bouncy Castle release (``--list``)."""
    out = subprocess.run(["java", "-jar", str(build_bc_runner(version=version)), "--list"],
                         capture_output=True, text=True, timeout=120, check=True)
    return [line.split("\t")[0] for line in out.stdout.splitlines() if line.strip()]


def run_bc(algorithm: str, operations=None, message_bytes: int = 100, cold: int = 5,
           warm_budget_s: float = 1.0, warmup_s: float | None = None, min_samples: int = 5,
           max_samples: int = 20000,
           java_opts: tuple[str, ...] = (), timeout_s: float | None = None, version: str | None = None,
           target_rel_ci: float | None = None) -> dict:
    """Run one algorithm in a fresh JVM and return the runner's JSON document.

    ``operations``: e.g. ``["keygen", "sign"]`` (``encrypt``/``decrypt`` and ``sign``/``verify`` are
    interchangeable, as in the study's "Encrypt/Sign" column); default all three. ``warm_budget_s`` is the
    most sampling time per operation, ``warmup_s`` (default: ``warm_budget_s``) the JIT warm-up before it;
    `target_rel_ci`: sampling stops once the median is known to this precision (as
    :func:`pqlab.measure.timing.measure`; None: the whole budget).  `version`: the Bouncy Castle release
    (default: pom.xml's).
    Raises ValueError for an unknown algorithm or operation (the message lists the supported names).
    """
    jar = build_bc_runner(version=version)
    cmd = ["java", *java_opts, "-jar", str(jar), "--alg", algorithm, "--message-bytes", str(message_bytes),
           "--cold", str(cold), "--warm-budget", str(warm_budget_s), "--min-samples", str(min_samples),
           "--max-samples", str(max_samples), "--target-rel-ci", str(precision_target(target_rel_ci) or 0)]
    if warmup_s is not None:
        cmd += ["--warmup", str(warmup_s)]
    if operations:
        cmd += ["--ops", ",".join(operations)]
    if timeout_s is None:  # generous: RSA keygen and SPHINCS+ signing take up to a few hundred ms per call
        timeout_s = 300 + 10 * cold + 3 * ((warmup_s if warmup_s is not None else warm_budget_s)
                                           + 3 * warm_budget_s)
    proc, result = call_json(cmd, what="bc-runner", timeout_s=timeout_s)
    if proc.returncode == 2:
        raise ValueError(proc.stderr.strip().removeprefix("bc-runner: "))
    if proc.returncode != 0 or result is None:
        raise RunnerError(f"bc-runner failed ({failure(proc)}): {' '.join(cmd)}")
    return result


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


def not_run(reason: str) -> Run:
    """A run of nothing (unsaved, no rows) that says why: what :func:`bc_run` returns when no algorithm
    ran."""
    return Run.from_rows("", [], [], [], {NOT_RUN: reason})


def bc_run(algorithms, *, message_bytes: int = 100, cold: int = 5, warm_budget_s: float = 1.0,
           study: str = "", enabled: bool = True, save: bool = True, version: str | None = None,
           target_rel_ci: float | None = None) -> Run:
    """Run several algorithms on one Bouncy Castle release (a fresh JVM each) and store them as one pqlab run.

    Always returns a :class:`pqlab.store.results.Run`; ``run.meta["not_run"]`` says what did not run and why:
    the whole release (no JDK, switched off, Maven could not provide it: Maven's message; the run then has no
    rows and is not saved) or the algorithms that release does not have ("" when everything ran).
    """
    inputs.names(algorithms, "algorithm")
    message_bytes = inputs.message_size(message_bytes)
    cold, warm_budget_s = inputs.count(cold, "cold"), inputs.positive_number(warm_budget_s, "warm_budget_s")
    study, target_rel_ci = (inputs.file_label(study, "study", empty=True),
                            inputs.precision_target(target_rel_ci))
    ok, why = jdk_available()
    if not enabled:
        return not_run("the Bouncy Castle runs were switched off (parameter)")
    if not ok:
        return not_run(why)
    try:
        supported = bc_algorithms(version)
    except BouncyCastleUnavailable as e:
        return not_run(str(e))
    release = version or default_version()
    runnable = [a for a in algorithms if a in supported]
    skipped = [a for a in algorithms if a not in supported]
    reason = f"not in Bouncy Castle {release}: {', '.join(skipped)}" if skipped else ""
    if not runnable:
        return not_run(reason)
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
