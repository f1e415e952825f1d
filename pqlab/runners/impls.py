"""Implementations timed in their own languages: notebook 08's programs (``native/impls/``), one per language,
each speaking ``native/PROTOCOL.md`` (``list``, ``time``, ``serve``) through
:mod:`pqlab.runners.program`, which builds, describes and runs them.

Each program measures the implementations of its language in that language's own loop (no interpreter and no
FFI from one inside the timed region) and returns raw samples; pqlab does the rounds
(:func:`pqlab.runners.base.in_rounds`) and the statistics, as for its own harness.  A program whose toolchain
is missing, or whose build fails, is left out with a one-line reason; the others go on.  Every library version
a program reports is checked against its lock (Go's standard library: against the Go toolchain here).

    IMPLS_PROGRAMS                         the programs (rust, openssl, openssl-3.6, go, js, java)
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

import math
import re
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from contextlib import contextmanager

import pandas as pd

from pqlab.core import flags, inputs
from pqlab.core.errors import UnknownName
from pqlab.core.paths import NATIVE
from pqlab.core.schema import KIND_OPERATIONS, typed
from pqlab.core.vocabulary import family_of
from pqlab.measure import cycles
from pqlab.measure.stats import summarize
from pqlab.runners import program as _program
from pqlab.runners.base import in_rounds
from pqlab.runners.program import Program, ProgramError
from pqlab.runners.rounds import ROUNDS
from pqlab.store.recorder import RunRecorder, summary_columns

IMPLS = NATIVE / "impls"
#: Notebook 08's programs: names in :data:`pqlab.runners.program.REGISTRY`.
IMPLS_PROGRAMS = ("rust", "openssl", "openssl-3.6", "go", "js", "java")
#: The protocol version pqlab speaks (native/PROTOCOL.md).
PROTOCOL = _program.PROTOCOL
#: Nanoseconds one sample's batch of calls lasts at least (each program calibrates its batch to it).
SAMPLE_NS = 200_000


class ImplementationError(ProgramError):
    """A program of native/impls could not be built or run, or answered something pqlab cannot read."""


@contextmanager
def _ours():
    """Any :class:`ProgramError` of :mod:`pqlab.runners.program` (a build, a list) as an ImplementationError,
    its one line kept."""
    try:
        yield
    except ImplementationError:
        raise
    except ProgramError as exc:
        raise ImplementationError(str(exc)) from exc


def _known(name: str) -> str:
    if name not in IMPLS_PROGRAMS:
        raise UnknownName("implementations program", name, list(IMPLS_PROGRAMS))
    return name


def program(name: str | Program) -> Program:
    """The program called `name` (one of :data:`IMPLS_PROGRAMS`; an unknown one is refused with close
    matches): its :class:`pqlab.runners.program.Program` record, from its program.toml."""
    if isinstance(name, Program):
        return name
    with _ours():
        return _program.program(_known(name))


# --------------------------------------------------------------------------- versions

#: Where a provenance link names its package and version: crates.io, npm, Maven Central, the Go documentation.
_PROVENANCE = (re.compile(r"crates\.io/crates/([\w-]+)/([\w.+-]+)"),
               re.compile(r"npmjs\.com/package/(@?[\w./-]+?)/v/([\w.+-]+)"),
               re.compile(r"artifact/[\w.-]+/([\w.-]+)/([\w.+-]+)"),
               re.compile(r"pkg\.go\.dev/.*@(go)([\w.+-]+)"))


def _go_version() -> str:
    """The Go toolchain's version here ("1.26.8"; "" without one): the Go program's implementation is the
    standard library of the toolchain that builds it, which no lock file pins."""
    if shutil.which("go") is None:
        return ""
    proc = subprocess.run(["go", "env", "GOVERSION"], capture_output=True, text=True, timeout=60)
    return proc.stdout.strip().removeprefix("go")


def check_versions(prog: Program, document: dict) -> None:
    """Refuse a program whose implementations are not the releases its lock files pin (a stale build, or a
    program that reads its version from somewhere else): each implementation's provenance link names its
    package and version, and the lock must pin exactly that (:func:`pqlab.runners.program.check_locked`; the
    Go program's standard library: the Go toolchain here)."""
    loaded = []
    for entry in document.get("implementations", []):
        link, what = entry.get("provenance", ""), entry.get("implementation")
        named = next((m.groups() for m in (p.search(link) for p in _PROVENANCE) if m), None)
        if named is None:
            raise ImplementationError(f"the {prog.name} program's {what} has no provenance link naming its "
                                      f"package and version ({link!r}): fix its `list`")
        package, version = named
        if prog.name == "go" and package == "go":
            toolchain = _go_version()
            if toolchain != version:
                raise ImplementationError(f"the {prog.name} program reports {what} as Go {version}, but the "
                                          f"Go toolchain here is {toolchain or 'missing'}: delete "
                                          f"{prog.output} and run again to rebuild it")
            continue
        loaded.append((what, package, version))
    with _ours():
        _program.check_locked(prog, loaded)


# --------------------------------------------------------------------------- listing

_LISTS: dict[str, dict] = {}
_WHY_NOT: dict[str, str] = {}


def describe(prog: Program | str) -> dict:
    """The program's ``list`` document (built first if needed), checked: the protocol, its name, the commands
    its program.toml promises, the versions against its locks; with ``build``, its build record."""
    prog = program(prog)
    if prog.name not in _LISTS:
        with _ours():
            document = _program.describe(prog)
        if document.get("program") != prog.name:
            raise ImplementationError(f"the {prog.name} program's list names it {document.get('program')!r}: "
                                      f"delete {prog.output} and run again to rebuild it from this checkout")
        check_versions(prog, document)
        _LISTS[prog.name] = document
    return _LISTS[prog.name]


def available(names: Iterable[str] | None = None) -> dict[str, dict]:
    """{program: its list document} for every program that builds and answers here (of `names`, default all);
    the others' reasons are in :func:`unavailable`."""
    if names is not None and not isinstance(names, str):
        names = list(names)
        if not names:  # none asked for: pqlab's own backends only
            return {}
    names = list(IMPLS_PROGRAMS) if names is None else [_known(n) for n in inputs.names(names, "program")]
    found = {}
    for name in names:
        try:
            found[name] = describe(name)
            _WHY_NOT.pop(name, None)
        except (ProgramError, OSError, subprocess.SubprocessError) as exc:
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
    document (``operations``: raw per-call samples, ``loops``, ``verified``; ``sizes``).  A program that
    refuses the request, crashes or times out raises :class:`ImplementationError` in one line naming it; a
    failed output check (exit 1) is a document whose operation says ``verified: false``."""
    prog = program(prog)
    args = ["--impl", implementation, "--alg", algorithm, "--ops", ",".join(operations),
            "--budget", repr(float(budget_s)), "--min-samples", str(min_samples),
            "--max-samples", str(max_samples), "--warmup", str(warmup), "--sample-ns", str(sample_ns),
            "--message-bytes", str(message_bytes)]
    timeout_s = timeout_s or 180 + len(operations) * (3 * budget_s + 60)
    try:
        with _ours():
            document = _program.call(prog, "time", args, timeout_s=timeout_s,
                                     accept=(0, _program.CHECK_FAILED), error=ImplementationError)
    except ImplementationError as exc:
        raise ImplementationError(f"{algorithm} in {implementation}: {exc}") from exc
    if "operations" not in document:
        raise ImplementationError(f"{algorithm} in {implementation}: the {prog.name} program's `time` "
                                  "printed no operations: rebuild it from this checkout")
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
                 flags.make("no-cycles", f"the {result.get('program', '')} program times with its "
                            "language's clock")]
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
    left_out = {f"{p} program": why for p, why in unavailable().items() if p in (programs or IMPLS_PROGRAMS)}
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
        "not_measured": left_out, "lost": [], "isolation": "process"}
    if conformance is not None:
        meta["conformance"] = conformance(chosen)
    run_params = {"algorithms": algorithms, "implementations": None if implementations is None else
                  list(implementations), "programs": programs, "budget_s": budget_s, "rounds": rounds,
                  "min_samples": min_samples, "message_bytes": message_bytes, **(params or {})}

    def run_one(entry: tuple, r: int) -> dict:
        name, impl, alg, kind = entry
        return time_one(name, impl, alg, KIND_OPERATIONS[kind], budget_s=budget_s / rounds,
                        min_samples=math.ceil(min_samples / rounds), message_bytes=message_bytes)

    with RunRecorder(study, run_params, label=f"{study}-impls" if study else "impls", folder=folder,
                     save=save, liboqs=False, meta=meta) as rec:
        in_rounds(rec, chosen, rounds, run_one, measurements_from_result, samples_from_result, label="impls",
                  lost=(ImplementationError,), describe=lambda e: {"implementation": e[1], "algorithm": e[2]},
                  first=lambda entry, result: rec.add(sizes=[size_row(result)]))
    return rec.run


# --------------------------------------------------------------------------- serve


class Session(_program.Session):
    """A ``serve`` process of one program, for the cross-checks: each method sends one request and returns
    the answer's fields; a refused request raises :class:`ImplementationError` with the program's reason.
    Secret keys stay in the program, named by the handle :meth:`keygen` returns.  Use as a context manager."""

    def __init__(self, prog: Program | str) -> None:
        with _ours():
            super().__init__(program(prog), error=ImplementationError)

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
