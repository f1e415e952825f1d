"""Implementations timed in their own languages: the programs of ``native/impls/``, one per language, each
speaking ``native/impls/PROTOCOL.md`` (``list``, ``time``, ``serve``).

Each program measures the implementations of its language in that language's own loop (no interpreter and no
FFI from one inside the timed region) and returns raw samples; pqlab does the rounds and the statistics, as
for its own harness.  A program is built on first need (never by ``make setup``), again whenever its sources
change, and its build records the toolchain and how long the build took.  A program whose toolchain is
missing, or whose build fails, is left out with a one-line reason; the others go on.

    PROGRAMS                               the programs (rust, openssl, openssl-3.6, go, js, java)
    available() -> {name: list document}   the programs that build here; unavailable() -> {name: why not}
    catalogue() -> DataFrame               one row per (implementation, algorithm): version, options,
                                           provenance
    time_one(program, impl, alg, ops)      one process's raw samples (the protocol's ``time`` document)
    Session(program)                       a ``serve`` process: keygen / encaps / decaps / sign / verify by
                                           handle
    measure(algorithms, ...) -> Run        every implementation of each algorithm in rounds (fresh process
                                           each)
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import math
import os
import random
import re
import shutil
import subprocess
import time
import tomllib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from pqlab.core import flags, inputs
from pqlab.core.errors import UnknownName
from pqlab.core.paths import NATIVE
from pqlab.core.schema import KIND_OPERATIONS, typed
from pqlab.core.vocabulary import family_of
from pqlab.measure import cycles, noise
from pqlab.measure.stats import summarize
from pqlab.runners.base import RunnerError, call_json, failure, list_document, rows_over_rounds
from pqlab.runners.rounds import ROUNDS
from pqlab.store.recorder import RunRecorder, summary_columns

IMPLS = NATIVE / "impls"
#: The protocol version pqlab speaks (PROTOCOL.md).
PROTOCOL = 1
#: Nanoseconds one sample's batch of calls lasts at least (each program calibrates its batch to it).
SAMPLE_NS = 200_000
#: Folders a build writes, never part of a program's sources.
OUTPUTS = ("target", "build", "node_modules")
#: The file beside a program's build that records it (toolchain, seconds, source hash).
BUILD_RECORD = "pqlab-build.json"


class ImplementationError(RunnerError):
    """A program of native/impls could not be built or run, or answered something pqlab cannot read."""


@dataclass(frozen=True)
class Program:
    """One program of ``native/impls/<name>/``: the toolchain commands it needs, the command that prints the
    toolchain's version (`version`), how to build it (run in its folder), what the build makes (`artifact`,
    relative to the folder; its first part is the build's output folder) and how to start it (`run`: paths
    relative to the folder)."""

    name: str
    language: str
    tools: tuple[str, ...]
    version: tuple[str, ...]
    install: str
    build: tuple[str, ...]
    artifact: str
    run: tuple[str, ...]
    path: str = ""  #: its folder under `root` when not its name
    sources: str = ""  #: the folder its build reads (hashed for rebuilds), when wider than its own
    #: where its folder is: native/impls (IMPLS) unless given (native/leakage's programs)
    root: Path | None = None

    @property
    def folder(self) -> Path:
        return (self.root or IMPLS) / (self.path or self.name)

    @property
    def source_folder(self) -> Path:
        return (self.root or IMPLS) / self.sources if self.sources else self.folder

    def artifact_path(self) -> Path:
        return self.folder / self.artifact.format(crate=_crate_name(self.folder))

    def command(self) -> list[str]:
        return [str(self.folder / p.format(crate=_crate_name(self.folder)))
                if "/" in p or p.endswith((".mjs", ".py")) else p for p in self.run]


def _crate_name(folder: Path) -> str:
    """The binary a Cargo folder builds: its package's name ("" for a folder without Cargo.toml)."""

    manifest = folder / "Cargo.toml"
    return tomllib.loads(manifest.read_text())["package"]["name"] if manifest.exists() else ""


_CARGO = ("cargo", "build", "--release", "--locked", "--quiet")
_RUST_AND_CC = "install Rust with rustup (cargo) and a C compiler"
PROGRAMS = (
    Program("rust", "Rust", ("cargo",), ("rustc", "--version"), "install Rust with rustup (cargo)", _CARGO,
            "target/release/{crate}", ("target/release/{crate}",)),
    Program("openssl", "C", ("cargo", "cc"), ("rustc", "--version"), _RUST_AND_CC, _CARGO,
            "target/release/{crate}", ("target/release/{crate}",)),
    # OpenSSL 3.6: the same sources built against another openssl-src (one crate graph links one OpenSSL)
    Program("openssl-3.6", "C", ("cargo", "cc"), ("rustc", "--version"), _RUST_AND_CC, _CARGO,
            "target/release/{crate}", ("target/release/{crate}",), path="openssl/3.6", sources="openssl"),
    Program("go", "Go", ("go",), ("go", "version"), "install Go 1.26 or newer (golang)",
            ("go", "build", "-trimpath", "-o", "build/impls-go", "."), "build/impls-go", ("build/impls-go",)),
    Program("js", "JavaScript", ("node", "npm"), ("node", "--version"),
            "install Node.js 20 or newer with npm", ("npm", "ci", "--no-audit", "--no-fund", "--silent"),
            "node_modules/.package-lock.json", ("node", "runner.mjs")),
    Program("java", "Java", ("mvn", "java"), ("java", "-version"), "install a JDK 17 or newer and Maven",
            ("mvn", "-q", "package", "-DskipTests"), "target/impls.jar",
            ("java", "-jar", "target/impls.jar")),
)
_BY_NAME = {p.name: p for p in PROGRAMS}


def program(name: str) -> Program:
    """The program called `name` (one of PROGRAMS); an unknown one is refused with close matches."""
    if name not in _BY_NAME:
        raise UnknownName("implementations program", name, list(_BY_NAME))
    return _BY_NAME[name]


# --------------------------------------------------------------------------- building


def source_hash(folder: Path) -> str:
    """sha256 over a program's sources: every file of its folder outside any build's outputs, names
    included."""

    files = []
    for root, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d not in OUTPUTS)  # never walk a build's output
        files += [Path(root) / n for n in names]
    digest = hashlib.sha256()
    for path in sorted(files):
        digest.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def build_record(prog: Program) -> dict:
    """What the last build of `prog` recorded ({} before the first)."""
    try:
        return json.loads((prog.folder / prog.artifact.split("/")[0] / BUILD_RECORD).read_text())
    except (OSError, ValueError):
        return {}


def _toolchain(prog: Program) -> str:
    proc = subprocess.run(prog.version, capture_output=True, text=True, timeout=60)
    return (proc.stdout or proc.stderr).strip().splitlines()[0] if proc.returncode == 0 else ""


def ensure_built(prog: Program | str) -> Path:
    """Build `prog` unless its last build is of today's sources; the artifact's path.

    Raises :class:`ImplementationError` in one line when a tool is missing or the build fails (its last
    lines)."""
    prog = program(prog) if isinstance(prog, str) else prog
    missing = [t for t in prog.tools if shutil.which(t) is None]
    if missing:
        raise ImplementationError(f"no {' or '.join(missing)} here: {prog.install}")
    out = prog.folder / prog.artifact.split("/")[0]
    out.mkdir(parents=True, exist_ok=True)
    with open(out / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        sources = source_hash(prog.source_folder)
        artifact = prog.artifact_path()
        if artifact.exists() and build_record(prog).get("sources") == sources:
            return artifact
        start = time.monotonic()
        proc = subprocess.run(prog.build, cwd=prog.folder, capture_output=True, text=True, timeout=3600)
        seconds = time.monotonic() - start
        if proc.returncode != 0 or not artifact.exists():
            tail = " | ".join((proc.stderr or proc.stdout).strip().splitlines()[-3:])
            raise ImplementationError(f"building the {prog.name} program failed (`{' '.join(prog.build)}` in "
                                      f"{prog.folder}, exit {proc.returncode}): {tail}")
        record = {"sources": sources, "seconds": round(seconds, 1), "toolchain": _toolchain(prog),
                  "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        (out / BUILD_RECORD).write_text(json.dumps(record, indent=1))
    return artifact


# --------------------------------------------------------------------------- versions


def locked_versions(prog: Program) -> dict[str, str]:
    """The versions the program's lock files pin: crate, npm package, Maven artifact or PyPI package ->
    version, and "go" -> the Go toolchain's version for the Go program (whose implementation is its standard
    library)."""

    folder, found = prog.folder, {}
    if (folder / "Cargo.lock").exists():
        found.update({p["name"]: p["version"]
                      for p in tomllib.loads((folder / "Cargo.lock").read_text())["package"]})
    if (folder / "package-lock.json").exists():
        packages = json.loads((folder / "package-lock.json").read_text()).get("packages", {})
        found.update({k.removeprefix("node_modules/"): v["version"] for k, v in packages.items()
                      if k.startswith("node_modules/") and "version" in v})
    if (folder / "pom.xml").exists():
        pom = (folder / "pom.xml").read_text()
        found.update(dict(re.findall(r"<artifactId>([\w.-]+)</artifactId>\s*<version>([\w.-]+)</version>",
                                     pom)))
    if (folder / "requirements.txt").exists():  # hash-pinned: name==version --hash=...
        found.update(re.findall(r"^([\w.-]+)==([\w.+-]+)", (folder / "requirements.txt").read_text(), re.M))
    if prog.name == "go" and shutil.which("go"):
        proc = subprocess.run(["go", "env", "GOVERSION"], capture_output=True, text=True, timeout=60)
        found["go"] = proc.stdout.strip().removeprefix("go")
    return found


#: Where a provenance link names its package and version: crates.io, npm, Maven Central, the Go documentation.
_PROVENANCE = (re.compile(r"crates\.io/crates/([\w-]+)/([\w.+-]+)"),
               re.compile(r"npmjs\.com/package/(@?[\w./-]+?)/v/([\w.+-]+)"),
               re.compile(r"artifact/[\w.-]+/([\w.-]+)/([\w.+-]+)"),
               re.compile(r"pkg\.go\.dev/.*@(go)([\w.+-]+)"))


def check_versions(prog: Program, document: dict) -> None:
    """Refuse a program whose implementations are not the releases its lock files pin (a stale build, or a
    program that reads its version from somewhere else): each implementation's provenance link names its
    package and version, and the lock must pin exactly that."""
    locked = locked_versions(prog)
    for entry in document.get("implementations", []):
        link = entry.get("provenance", "")
        named = next((m.groups() for m in (p.search(link) for p in _PROVENANCE) if m), None)
        if named is None:
            raise ImplementationError(f"the {prog.name} program's {entry.get('implementation')} has no "
                                      f"provenance link naming its package and version ({link!r}): fix its "
                                      "`list`")
        package, version = named
        if locked.get(package) != version:
            raise ImplementationError(
                f"the {prog.name} program reports {entry.get('implementation')} as {package} {version}, but "
                f"{prog.folder} pins {locked.get(package, 'no such package')}: delete "
                f"{prog.folder / prog.artifact.split('/')[0]} and run again to rebuild it")


# --------------------------------------------------------------------------- listing

_LISTS: dict[str, dict] = {}
_WHY_NOT: dict[str, str] = {}


def describe(prog: Program | str) -> dict:
    """The program's ``list`` document (built first if needed), checked: protocol, versions against the
    locks."""
    prog = program(prog) if isinstance(prog, str) else prog
    if prog.name not in _LISTS:
        ensure_built(prog)
        document = list_document(prog.command(), what=f"the {prog.name} program", protocol=PROTOCOL,
                                 error=ImplementationError)
        check_versions(prog, document)
        document["build"] = build_record(prog)
        _LISTS[prog.name] = document
    return _LISTS[prog.name]


def available(names: Iterable[str] | None = None) -> dict[str, dict]:
    """{program: its list document} for every program that builds and answers here (of `names`, default all);
    the others' reasons are in :func:`unavailable`."""
    if names is not None and not isinstance(names, str):
        names = list(names)
        if not names:  # none asked for: pqlab's own backends only
            return {}
    names = list(_BY_NAME) if names is None else [program(n).name for n in inputs.names(names, "program")]
    found = {}
    for name in names:
        try:
            found[name] = describe(name)
            _WHY_NOT.pop(name, None)
        except (ImplementationError, OSError, subprocess.SubprocessError) as exc:
            _WHY_NOT[name] = str(exc).splitlines()[0]
    return found


def unavailable() -> dict[str, str]:
    """{program: why it is not measured here}, for the programs :func:`available` could not use."""
    return dict(_WHY_NOT)


def catalogue(names: Iterable[str] | None = None) -> pd.DataFrame:
    """One row per (implementation, algorithm) of the available programs: program, language, the timed loop's
    toolchain, version, options, provenance, the operations the API lets a caller seed, and the build's
    seconds."""
    rows = []
    for name, document in available(names).items():
        about = {i["implementation"]: i for i in document["implementations"]}
        for entry in document["algorithms"]:
            impl = about[entry["implementation"]]
            rows.append({"program": name, "language": program(name).language,
                         "toolchain": document["toolchain"], "implementation": entry["implementation"],
                         "version": impl["version"],
                         "package": impl.get("package", ""), "options": impl.get("options", ""),
                         "provenance": impl.get("provenance", ""), "algorithm": entry["algorithm"],
                         "kind": entry["kind"], "seeded": ",".join(entry.get("seeded", [])),
                         "build_seconds": document["build"].get("seconds")})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- timing


def time_one(prog: Program | str, implementation: str, algorithm: str, operations: Sequence[str], *,
             budget_s: float = 1.0, min_samples: int = 5, max_samples: int = 1000, warmup: int = 2,
             sample_ns: int = SAMPLE_NS, message_bytes: int = 100, timeout_s: float | None = None) -> dict:
    """One process of `prog` timing `operations` of `algorithm` in `implementation`: the protocol's ``time``
    document (``operations``: raw per-call samples, ``loops``, ``verified``; ``sizes``).  A program that exits
    with bad input, crashes or times out raises :class:`ImplementationError` naming it."""
    prog = program(prog) if isinstance(prog, str) else prog
    ensure_built(prog)
    cmd = prog.command() + ["time", "--impl", implementation, "--alg", algorithm, "--ops",
                            ",".join(operations), "--budget", repr(float(budget_s)), "--min-samples",
                            str(min_samples), "--max-samples", str(max_samples), "--warmup", str(warmup),
                            "--sample-ns", str(sample_ns), "--message-bytes", str(message_bytes)]
    timeout_s = timeout_s or 180 + len(operations) * (3 * budget_s + 60)
    proc, document = call_json(cmd, what=f"the {prog.name} program", timeout_s=timeout_s,
                               error=ImplementationError)
    if document is None or proc.returncode not in (0, 1) or "operations" not in document:
        raise ImplementationError(f"the {prog.name} program failed for {algorithm} in {implementation} "
                                  f"({failure(proc, document)})")
    return document


#: Which of an implementation's packages does an algorithm, where it lists several ("ml-kem 0.3.4, p256
#: 0.14.0"): algorithm name prefix -> a word of the package's name.
_PACKAGE_WORDS = (("ML-KEM", "ml-kem"), ("ML-DSA", "ml-dsa"), ("SLH-DSA", "slh-dsa"), ("X25519", "x25519"),
                  ("Ed25519", "ed25519"), ("ECDSA-P256", "p256"), ("ECDH-P256", "p256"))


def release_of(version: str, algorithm: str) -> str:
    """The release that ran `algorithm`: where an implementation lists several packages ("libcrux-ml-kem
    0.0.11, libcrux-ml-dsa 0.0.11"), the one whose name names it; noble's post-quantum package for the
    post-quantum algorithms and its curves package for the rest; else the whole version string."""
    parts = [p.strip() for p in str(version).split(",")]
    if len(parts) < 2:
        return str(version)
    word = next((w for prefix, w in _PACKAGE_WORDS if algorithm.startswith(prefix)), None)
    found = [p for p in parts if word and word in p.split(" ")[0]]
    if not found and all(" " in p for p in parts):  # noble: "post-quantum 0.7.1, curves 2.4.0"
        pq = algorithm.startswith(("ML-", "SLH-"))
        found = [p for p in parts if ("quantum" in p) is pq]
    return found[0] if len(found) == 1 else str(version)


def measurements_from_result(result: dict, base: dict | None = None) -> pd.DataFrame:
    """One measurement row per operation of a :func:`time_one` document (`base`: the recorder's base columns).
    The backend column is the implementation's id, the implementation column its id and release."""

    rows = []
    for op in result["operations"]:
        release = release_of(result["version"], result["algorithm"])
        row = dict(base or {}, backend=result["implementation"],
                   implementation=f"{result['implementation']} {release}",
                   library_version=release, build="", algorithm=result["algorithm"], kind=result["kind"],
                   family=family_of(result["algorithm"]), operation=op["operation"],
                   message_bytes=op.get("message_bytes"), samples=len(op["samples_ns"]),
                   loops=op.get("loops"), rounds=1, cycles_source=cycles.NONE, verified=bool(op["verified"]))
        marks = [flags.make("no-rounds", "one process of the program"),
                 flags.make("no-cycles", f"the {result['runner']} program times with its language's clock")]
        if op["samples_ns"]:
            summary = summarize(op["samples_ns"])
            marks += summary["flags"]
            row.update(summary_columns(summary))
        if not op["verified"]:
            marks.append(flags.make("failed", op.get("error") or "check failed"))
        row["flags"] = flags.join(marks)
        rows.append(row)
    return typed(pd.DataFrame(rows), "measurements")


def samples_from_result(result: dict, *, run_id: str = "", round_index: int | None = None) -> pd.DataFrame:
    """Every raw sample of a :func:`time_one` document as sample rows, in `round_index`."""
    rows = [{"run_id": run_id, "backend": result["implementation"], "build": "",
             "algorithm": result["algorithm"], "operation": op["operation"],
             "message_bytes": op.get("message_bytes"), "round": round_index,
             "sample": i, "loops": op.get("loops"), "time_ns": t, "cycles": None}
            for op in result["operations"] for i, t in enumerate(op["samples_ns"])]
    return typed(pd.DataFrame(rows), "samples")


def size_row(result: dict) -> dict:
    """The sizes a :func:`time_one` document counted from the bytes, as a sizes row."""

    s = result.get("sizes", {})
    return {"algorithm": result["algorithm"], "backend": result["implementation"],
            "family": family_of(result["algorithm"]), "public_key_bytes": s.get("public_key"),
            "secret_key_bytes": s.get("secret_key"), "signature_bytes": s.get("signature"),
            "ciphertext_bytes": s.get("ciphertext"), "shared_secret_bytes": s.get("shared_secret"),
            "key_encoding": s.get("secret_key_format", "")}


def plan(algorithms: Sequence[str], implementations: Iterable[str] | None = None,
         excluded: dict | None = None,
         programs: Iterable[str] | None = None) -> tuple[list[tuple[str, str, str, str]], dict[str, str]]:
    """What :func:`measure` would time: ``[(program, implementation, algorithm, kind)]`` for every
    implementation that has each algorithm (of `implementations`, default all), and ``{implementation or
    "impl/alg": reason}`` for what is left out (`excluded`: those a cross-check removed, with the reason;
    `programs`: the programs to use, default all).  Unknown algorithm or implementation names are refused with
    close matches, before anything runs."""
    listed = available(programs)
    entries = [(name, a["implementation"], a["algorithm"], a["kind"])
               for name, document in listed.items() for a in document["algorithms"]]
    known_algorithms = sorted({e[2] for e in entries})
    known_impls = sorted({e[1] for e in entries})
    for name in algorithms:
        if name not in known_algorithms:
            raise UnknownName("algorithm of the implementations programs", name, known_algorithms)
    wanted = None if implementations is None else list(implementations)
    for name in wanted or ():
        if name not in known_impls:
            raise UnknownName("implementation", name, known_impls,
                              f"the programs here have {', '.join(known_impls)}")
    left_out = {f"{p} program": why for p, why in unavailable().items() if p in (programs or _BY_NAME)}
    excluded = excluded or {}
    chosen = []
    for alg in algorithms:
        for entry in entries:
            if entry[2] != alg or (wanted is not None and entry[1] not in wanted):
                continue
            key = f"{entry[1]}/{alg}"
            if key in excluded:
                left_out[key] = excluded[key]
            else:
                chosen.append(entry)
    return chosen, left_out


def measure(algorithms: Sequence[str], implementations: Iterable[str] | None = None, *, budget_s: float = 1.0,
            rounds: int | None = None, min_samples: int = 5, message_bytes: int = 100,
            excluded: dict | None = None, programs: Iterable[str] | None = None, study: str = "", folder=None,
            save: bool = True, params: dict | None = None, conformance=None):
    """Time every implementation of each of `algorithms` in the programs of native/impls, in rounds.

    Each round runs every (implementation, algorithm) once, a fresh process each, in an order shuffled per
    round, with ``budget_s / rounds`` of sampling per operation; the estimate and interval are over rounds, as
    for :func:`pqlab.benchmark.bench` (:mod:`pqlab.runners.rounds`), and each round records the machine's
    noise and reference loops.  Every input is checked first.  A process that crashes or times out loses that
    round only (the run's ``lost`` metadata says which and why); a failed output check is a row with
    ``verified`` False.  `excluded`: ``{"implementation/algorithm": reason}`` to leave out (a failed
    cross-check).  Returns the :class:`~pqlab.store.results.Run`; `programs`: the programs of native/impls to
    use (default all).  Its metadata names every implementation's release, options, provenance and build, and
    what was left out and why (``not_measured``).  `conformance`: a function of the chosen
    ``[(program, implementation, algorithm, kind)]`` giving each one's conformance record keyed
    ``"ALGORITHM@implementation"`` (:func:`pqlab.studies.implementations.program_records`), kept in
    ``meta["conformance"]``: an implementation that fails its vectors is timed and its record says so."""

    budget_s = inputs.positive_number(budget_s, "budget_s")
    rounds = inputs.round_counts(ROUNDS if rounds is None else rounds,
                                 ROUNDS if rounds is None else rounds)[0]
    min_samples = inputs.sample_bounds(min_samples, 1000)[0]
    message_bytes = inputs.message_size(message_bytes)
    algorithms = inputs.unique(list(algorithms))
    programs = None if programs is None else list(programs)
    chosen, left_out = plan(algorithms, implementations, excluded, programs)

    about = {name: document for name, document in _LISTS.items() if any(c[0] == name for c in chosen)}
    meta = {"implementations_programs": {name: {
        "toolchain": d["toolchain"], "build": d["build"],
        "implementations": [i for i in d["implementations"]
                            if any(c[0] == name and c[1] == i["implementation"] for c in chosen)]}
        for name, d in about.items()},
        "not_measured": left_out, "lost": [], "rounds": [], "isolation": "process"}
    if conformance is not None:
        meta["conformance"] = conformance(chosen)
    run_params = {"algorithms": algorithms, "implementations": None if implementations is None else
                  list(implementations), "programs": programs, "budget_s": budget_s, "rounds": rounds,
                  "min_samples": min_samples, "message_bytes": message_bytes, **(params or {})}
    results: dict[tuple, list] = {c: [] for c in chosen}
    with RunRecorder(study, run_params, label=f"{study}-impls" if study else "impls", folder=folder,
                     save=save, liboqs=False, meta=meta) as rec:
        for r in range(rounds):
            before, start = noise.snapshot(), noise.reference_times()
            order = list(chosen)
            random.Random(f"impls-{r}").shuffle(order)
            for entry in order:
                name, impl, alg, kind = entry
                try:
                    result = time_one(name, impl, alg, KIND_OPERATIONS[kind], budget_s=budget_s / rounds,
                                      min_samples=math.ceil(min_samples / rounds),
                                      message_bytes=message_bytes)
                except ImplementationError as exc:
                    rec.meta["lost"].append({"round": r, "implementation": impl, "algorithm": alg,
                                             "why": str(exc).splitlines()[0]})
                    continue
                if not results[entry]:
                    rec.add(sizes=[size_row(result)])
                results[entry].append((r, result))
                rec.add(samples=samples_from_result(result, run_id=rec.run_id, round_index=r))
            rec.meta["rounds"].append(noise.round_record(r, before, start))
            rec.set_measurements([row for entry in chosen if results[entry]
                                  for row in rows_over_rounds(results[entry], rec, measurements_from_result,
                                                              samples_from_result)])
            rec.checkpoint()
    return rec.run


# --------------------------------------------------------------------------- serve


class Session:
    """A ``serve`` process of one program, for the cross-checks: each method sends one request and returns
    the answer's fields; a refused request raises :class:`ImplementationError` with the program's reason.
    Secret keys stay in the program, named by the handle :meth:`keygen` returns.  Use as a context manager."""

    def __init__(self, prog: Program | str) -> None:
        self.program = program(prog) if isinstance(prog, str) else prog
        ensure_built(self.program)
        self.process = subprocess.Popen(self.program.command() + ["serve"], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1)

    def request(self, **fields) -> dict:
        payload = {k: (v.hex() if isinstance(v, (bytes, bytearray)) else v) for k, v in fields.items()
                   if v is not None}
        try:
            self.process.stdin.write(json.dumps(payload) + "\n")
            self.process.stdin.flush()
            line = self.process.stdout.readline()
        except (BrokenPipeError, OSError) as exc:
            raise ImplementationError(f"the {self.program.name} program's serve stopped: {exc}") from exc
        if not line:
            tail = (self.process.stderr.read() or "").strip()[-500:]
            raise ImplementationError(f"the {self.program.name} program's serve ended (exit "
                                      f"{self.process.poll()}): {tail or 'no output'}")
        answer = json.loads(line)
        if not answer.get("ok"):
            raise ImplementationError(answer.get("error")
                                      or f"the {self.program.name} program refused {payload}")
        return answer

    def keygen(self, impl: str, alg: str, seed: bytes | None = None) -> tuple[str, bytes]:
        a = self.request(op="keygen", impl=impl, alg=alg, seed=seed)
        return a["handle"], bytes.fromhex(a["public_key"])

    def encaps(self, impl: str, alg: str, public_key: bytes,
               seed: bytes | None = None) -> tuple[bytes, bytes]:
        a = self.request(op="encaps", impl=impl, alg=alg, public_key=public_key, seed=seed)
        return bytes.fromhex(a["ciphertext"]), bytes.fromhex(a["shared_secret"])

    def decaps(self, impl: str, alg: str, handle: str, ciphertext: bytes) -> bytes:
        return bytes.fromhex(self.request(op="decaps", impl=impl, alg=alg, handle=handle,
                                          ciphertext=ciphertext)["shared_secret"])

    def sign(self, impl: str, alg: str, handle: str, message: bytes,
             deterministic: bool | None = None) -> bytes:
        return bytes.fromhex(self.request(op="sign", impl=impl, alg=alg, handle=handle, message=message,
                                          deterministic=deterministic)["signature"])

    def verify(self, impl: str, alg: str, public_key: bytes, message: bytes, signature: bytes) -> bool:
        return bool(self.request(op="verify", impl=impl, alg=alg, public_key=public_key, message=message,
                                 signature=signature)["valid"])

    def close(self) -> None:
        if self.process.poll() is None:
            try:
                self.process.stdin.close()
                self.process.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                self.process.kill()
                self.process.wait()
        for stream in (self.process.stdout, self.process.stderr):
            if stream:
                stream.close()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
