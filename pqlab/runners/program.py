"""Every external program pqlab runs, as one record: where it lives, how it is built, how it is started, and
what it says about itself (``native/PROTOCOL.md``).

A program is a folder under ``native/`` with a ``program.toml`` (every path in it relative to that folder)
and one line in :data:`REGISTRY`.  pqlab builds it on first need, again whenever its sources change, one build
at a time (a lock beside the artifact), and writes a build record beside the artifact: the hash of the sources
it was built from, the toolchain, how long the build took, the artifact's sha256 (an artifact that no longer
matches it is built again) and the last builds' history.  Its ``list`` is checked for the protocol version
pqlab speaks and for the commands its ``program.toml`` promises, and every library version it reports is
checked against the program's own lock files.

    REGISTRY                              program name -> its folder under native/
    program(name, **variables) -> Program the record (variables fill ``{placeholders}``: a liboqs build,
                                          a Bouncy Castle release)
    ensure_built(prog) -> Path            the artifact, built first when needed
    describe(prog) -> dict                its ``list`` document, checked, with ``build`` (the build record)
    call(prog, command, args, stdin=...)  one command's document; errors in one line (protocol's exit codes)
    Session(prog)                         a ``serve`` process: one request per line
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import time
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from pqlab.core.errors import UnknownName, warn
from pqlab.core.files import atomic_write_text
from pqlab.core.integrity import sha256_file
from pqlab.core.paths import NATIVE
from pqlab.runners.base import RunnerError, call_json

#: The protocol version pqlab speaks (native/PROTOCOL.md).
PROTOCOL = 2
#: The file in a program's folder that describes it.
MANIFEST = "program.toml"
#: The file beside a program's artifact that records its build.
BUILD_RECORD = "pqlab-build.json"
#: Folders a build writes, never part of a program's sources.
OUTPUTS = ("target", "build", "node_modules", "__pycache__")
#: Exit statuses of the protocol: a check failed (the document says which), bad request, a class failed its
#: check before timing (screens).
CHECK_FAILED, BAD_REQUEST, CLASS_FAILED = 1, 2, 3

#: Every external program: its name -> its folder under native/.  A new program is its folder (with its
#: program.toml) and one line here.
REGISTRY = {
    "pqbench": "bench",
    "tls-runner": "tls-runner",
    "rust": "impls/rust",
    "openssl": "impls/openssl",
    "openssl-3.6": "impls/openssl/3.6",
    "go": "impls/go",
    "js": "impls/js",
    "java": "impls/java",
    "python-leaky": "leakage/python",
    "bc-1.83": "leakage/java/1.83",
    "bc-1.84": "leakage/java/1.84",
}


class ProgramError(RunnerError):
    """An external program could not be built or run, or answered something pqlab cannot read."""


@dataclass(frozen=True)
class Program:
    """One external program, as its ``program.toml`` describes it.  Paths are relative to `folder`; an
    argument of `run` that starts with ``./`` is a path there, anything else is a command on PATH.
    ``{name}`` placeholders in `build`, `artifact`, `run` and `sources` are filled from `variables`."""

    name: str
    folder: Path
    language: str
    tools: tuple[str, ...]  #: commands that must be on PATH to build and run it
    toolchain: tuple[str, ...]  #: the command that prints the toolchain's version (first line kept)
    install: str  #: what to install when a tool is missing (one line)
    build: tuple[str, ...]  #: run in `folder`
    artifact: str  #: what the build makes; its folder holds the build record and the lock
    run: tuple[str, ...]  #: how to start it (the protocol's command follows)
    commands: tuple[str, ...]  #: the protocol commands it answers besides ``list``
    sources: tuple[str, ...] = (".",)  #: what its build reads, hashed for rebuilds
    request: str = "json"  #: how it reads a request on stdin: ``json`` or ``lines`` (native/PROTOCOL.md)
    timeout_s: float = 3600  #: a build's limit
    variables: dict = field(default_factory=dict)

    def _fill(self, text: str) -> str:
        return text.format(**self.variables) if self.variables else text

    def path(self, relative: str) -> Path:
        """`relative` in the folder, placeholders filled, as an absolute path; symbolic links are not
        followed (a venv's interpreter is a link: the build record belongs beside the link)."""
        return Path(os.path.normpath(self.folder.absolute() / self._fill(relative)))

    @property
    def artifact_path(self) -> Path:
        return self.path(self.artifact)

    @property
    def output(self) -> Path:
        """The folder of its artifact: the build record, the lock and the build log live there."""
        return self.artifact_path.parent

    def command(self) -> list[str]:
        return [str(self.path(a)) if a.startswith("./") else self._fill(a) for a in self.run]

    def build_command(self) -> list[str]:
        return [self._fill(a) for a in self.build]


def _manifest(folder: Path) -> dict:
    try:
        return tomllib.loads((folder / MANIFEST).read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ProgramError(f"{folder / MANIFEST} cannot be read ({exc}): every program under native/ "
                           "describes itself there (native/PROTOCOL.md)") from exc


def load(name: str, folder: Path, **variables) -> Program:
    """The program in `folder` (its program.toml) under `name`."""
    m = _manifest(folder)
    keys = ("language", "tools", "toolchain", "install", "build", "artifact", "run", "commands")
    missing = [k for k in keys if k not in m]
    if missing:
        raise ProgramError(f"{folder / MANIFEST} lacks {', '.join(missing)}: native/PROTOCOL.md lists the "
                           "keys")
    return Program(name=name, folder=folder, language=m["language"], tools=tuple(m["tools"]),
                   toolchain=tuple(m["toolchain"]), install=m["install"], build=tuple(m["build"]),
                   artifact=m["artifact"], run=tuple(m["run"]), commands=tuple(m["commands"]),
                   sources=tuple(m.get("sources", (".",))), request=m.get("request", "json"),
                   timeout_s=float(m.get("build_timeout_s", 3600)),
                   variables={**m.get("variables", {}), **variables})


def program(name: str | Program, **variables) -> Program:
    """The registered program `name` (close matches for an unknown one), its placeholders filled from
    `variables` over its program.toml's defaults."""
    if isinstance(name, Program):
        return replace(name, variables={**name.variables, **variables}) if variables else name
    if name not in REGISTRY:
        raise UnknownName("program", name, list(REGISTRY))
    return load(name, NATIVE / REGISTRY[name], **variables)


def registered(command: str | None = None) -> list[str]:
    """The registered programs (that answer `command`, when given)."""
    return [n for n in REGISTRY if command is None or command in program(n).commands]


# --------------------------------------------------------------------------- building


def source_files(prog: Program) -> list[tuple[Path, str]]:
    """What the program's build reads: every file of its `sources` (folders walked, build outputs left out),
    as (path, name) sorted by name."""
    files = []
    for source in prog.sources:
        path = prog.path(source)
        if path.is_file():
            files.append((path, path.name))
            continue
        for root, dirs, names in os.walk(path):
            dirs[:] = sorted(d for d in dirs if d not in OUTPUTS)  # never walk a build's output
            files += [(Path(root) / n, str((Path(root) / n).relative_to(path))) for n in names]
    return sorted(files, key=lambda f: f[1])


def source_hash(prog: Program) -> str:
    """sha256 over :func:`source_files`, names included, and the values of the program's placeholders."""
    digest = hashlib.sha256(json.dumps(prog.variables, sort_keys=True).encode())
    for path, name in source_files(prog):
        digest.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def build_record(prog: Program) -> dict:
    """What the last build of `prog` recorded ({} before the first)."""
    try:
        record = json.loads((prog.output / BUILD_RECORD).read_text())
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def toolchain(prog: Program) -> str:
    """The first line the program's toolchain command prints ("" when it fails)."""
    try:
        proc = subprocess.run(prog.toolchain, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return ""
    lines = (proc.stdout or proc.stderr).strip().splitlines()
    return re.sub(r"\x1b\[[0-9;]*m", "", lines[0]) if proc.returncode == 0 and lines else ""


def _current(prog: Program, sources: str) -> str:
    """Why the artifact must be built ("" when it is the build of these sources, intact)."""
    artifact, record = prog.artifact_path, build_record(prog)
    if not artifact.exists():
        return "missing"
    if record.get("sources") != sources:
        return "stale"
    if record.get("sha256") and artifact.is_file() and sha256_file(artifact) != record["sha256"]:
        return "damaged"
    return ""


def ensure_built(prog: Program | str) -> Path:
    """Build `prog` unless its artifact is the intact build of today's sources; the artifact's path.  A
    program with no build command (a script run by an interpreter pqlab already has) is never built.

    Raises :class:`ProgramError` in one line when a tool is missing or the build fails (its log's last lines
    and where the whole log is)."""
    prog = program(prog)
    missing = [t for t in prog.tools if shutil.which(t) is None]
    if missing:
        raise ProgramError(f"no {' or '.join(missing)} here for the {prog.name} program: {prog.install}")
    if not prog.build:
        if not prog.artifact_path.exists():
            raise ProgramError(f"the {prog.name} program's {prog.artifact_path} is missing: it is a source "
                               "file of this checkout (git checkout it again)")
        return prog.artifact_path
    prog.output.mkdir(parents=True, exist_ok=True)
    with open(prog.output / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one build at a time (parallel tests, make -j)
        sources = source_hash(prog)
        why = _current(prog, sources)
        if not why:
            return prog.artifact_path
        if why == "damaged":  # make and cargo go by dates and fingerprints: a file damaged in place (and
            # cargo's hard link of it in deps/) looks fresh, so the artifact goes and the sources are touched
            warn(f"the {prog.name} program's {prog.artifact_path} does not match the sha256 recorded when it "
                 "was built: building it again")
            prog.artifact_path.unlink()
            for path, _ in source_files(prog):
                os.utime(path)
        cmd, log = prog.build_command(), prog.output / "build.log"
        load_before, start = os.getloadavg()[0], time.monotonic()
        try:
            proc = subprocess.run(cmd, cwd=prog.folder, capture_output=True, text=True,
                                  timeout=prog.timeout_s)
        except subprocess.TimeoutExpired as exc:
            raise ProgramError(f"building the {prog.name} program timed out after {prog.timeout_s:.0f} s "
                               f"(`{' '.join(cmd)}` in {prog.folder})") from exc
        seconds = time.monotonic() - start
        atomic_write_text(log, f"$ {' '.join(cmd)}\n{proc.stdout}{proc.stderr}")
        if proc.returncode != 0 or not prog.artifact_path.exists():
            tail = " | ".join((proc.stderr or proc.stdout).strip().splitlines()[-3:])
            raise ProgramError(f"building the {prog.name} program failed (`{' '.join(cmd)}` in "
                               f"{prog.folder}, exit {proc.returncode}; log {log}): {tail}")
        artifact = prog.artifact_path
        build = {"seconds": round(seconds, 1), "cold": why == "missing", "why": why,
                 "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                 "load_before": round(load_before, 2), "cores": os.cpu_count(), "command": " ".join(cmd)}
        record = {"program": prog.name, "protocol": PROTOCOL, "sources": sources,
                  "toolchain": toolchain(prog), "sha256": sha256_file(artifact) if artifact.is_file() else "",
                  **build,
                  "history": (build_record(prog).get("history", []) + [build])[-20:]}
        atomic_write_text(prog.output / BUILD_RECORD, json.dumps(record, indent=1) + "\n")
    return artifact


# --------------------------------------------------------------------------- locks


def locked_versions(prog: Program) -> dict[str, str]:
    """The versions the program's lock files pin: crate, npm package, Maven artifact or PyPI package ->
    version."""
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
        properties = dict(re.findall(r"<([\w.-]+)>([^<$]+)</\1>", pom))
        for artifact_id, version in re.findall(
                r"<artifactId>([\w.-]+)</artifactId>\s*<version>([^<]+)</version>", pom):
            prop = re.fullmatch(r"\$\{([\w.-]+)\}", version)
            found[artifact_id] = properties.get(prop.group(1), version) if prop else version
    if (folder / "requirements.txt").exists():  # hash-pinned: name==version --hash=...
        found.update(re.findall(r"^([\w.-]+)==([\w.+-]+)", (folder / "requirements.txt").read_text(), re.M))
    return found


def check_locked(prog: Program, loaded: Sequence[tuple[str, str, str]]) -> None:
    """Refuse a program that loaded other releases than its lock pins (a stale build, or a version read from
    somewhere else): `loaded` is ``[(what, package, version)]`` as its ``list`` reported them."""
    locked = locked_versions(prog)
    for what, package, version in loaded:
        if locked.get(package) != version:
            raise ProgramError(f"the {prog.name} program reports {what} as {package} {version}, but its lock "
                               f"pins {locked.get(package, 'no such package')}: delete {prog.output} and run "
                               "again to rebuild it")


# --------------------------------------------------------------------------- speaking


def call(prog: Program | str, command: str, args: Sequence[str] = (), *, stdin: str | None = None,
         timeout_s: float = 600, accept: Sequence[int] = (0,),
         error: type[Exception] = ProgramError) -> dict:
    """Run `command` of `prog` (built first when needed) and return the JSON document it printed.

    An exit status outside `accept` raises `error` in one line: bad request (status 2) with the program's own
    message, anything else as a crash with its status or signal and what it last said."""
    prog = program(prog)
    if command != "list" and command not in prog.commands:
        raise error(f"the {prog.name} program does not answer `{command}` (it answers "
                    f"{', '.join(('list', *prog.commands))})")
    ensure_built(prog)
    proc, document = call_json([*prog.command(), command, *args], what=f"the {prog.name} program",
                               timeout_s=timeout_s, error=error, stdin=stdin)
    if proc.returncode in accept and document is not None:
        return document
    if proc.returncode == BAD_REQUEST and document and document.get("error"):
        raise error(f"the {prog.name} program refused `{command}`: {_line(document['error'])}")
    status = f"signal {-proc.returncode}" if proc.returncode < 0 else f"exit {proc.returncode}"
    lines = (proc.stderr or proc.stdout or "").splitlines()
    said = (document or {}).get("error") or next((x for x in reversed(lines) if x.strip()), "no output")
    raise error(f"the {prog.name} program's `{command}` failed ({status}: {_line(said)})")


def _line(text: str, limit: int = 500) -> str:
    """`text` as one line of at most `limit` characters (a program's message in pqlab's one-line error)."""
    one = " | ".join(part.strip() for part in str(text).splitlines() if part.strip())
    return one if len(one) <= limit else one[: limit - 1] + "…"


_LISTS: dict[tuple, dict] = {}


def describe(prog: Program | str) -> dict:
    """The program's ``list`` document (built first when needed), checked for the protocol pqlab speaks and
    the commands its program.toml promises, with ``build``: its build record."""
    prog = program(prog)
    key = (prog.name, json.dumps(prog.variables, sort_keys=True))
    if key not in _LISTS:
        document = call(prog, "list")
        if document.get("protocol") != PROTOCOL:
            said = document.get("protocol")
            raise ProgramError(f"the {prog.name} program speaks protocol {said}, pqlab speaks {PROTOCOL}: "
                               f"delete {prog.output} and run again to rebuild it from this checkout")
        said = set(document.get("commands", ()))
        if said != set(prog.commands):
            raise ProgramError(f"the {prog.name} program answers {sorted(said)} but its {MANIFEST} promises "
                               f"{sorted(prog.commands)}: make them agree")
        _LISTS[key] = dict(document, build=build_record(prog))
    return _LISTS[key]


def lines_request(request: dict) -> str:
    """A request in the protocol's line form: one ``key value ...`` line per field, a list of lists as one
    line per inner list (``order 1 0``), for programs without a JSON reader."""
    out = []
    for key, value in request.items():
        rows = value if isinstance(value, list) and value and isinstance(value[0], list) else [value]
        for row in rows:
            words = row if isinstance(row, list) else [row]
            out.append(" ".join([key, *(str(w).lower() if isinstance(w, bool) else str(w) for w in words)]))
    return "\n".join(out) + "\n"


def request_text(prog: Program, request: dict) -> str:
    """`request` in the form the program reads (its program.toml's ``request``)."""
    return lines_request(request) if prog.request == "lines" else json.dumps(request)


class Session:
    """A ``serve`` process of one program: each :meth:`request` sends one JSON line and returns the answer;
    a refused request raises :class:`ProgramError` with the program's reason.  Use as a context manager."""

    def __init__(self, prog: Program | str, error: type[Exception] = ProgramError) -> None:
        self.program, self.error = program(prog), error
        if "serve" not in self.program.commands:
            raise error(f"the {self.program.name} program does not answer `serve`")
        ensure_built(self.program)
        self.process = subprocess.Popen(self.program.command() + ["serve"], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1)

    def request(self, **fields) -> dict:
        payload = {k: (v.hex() if isinstance(v, (bytes, bytearray)) else v) for k, v in fields.items()
                   if v is not None}
        name = self.program.name
        try:
            self.process.stdin.write(json.dumps(payload) + "\n")
            self.process.stdin.flush()
            line = self.process.stdout.readline()
        except (BrokenPipeError, OSError) as exc:
            raise self.error(f"the {name} program's serve stopped: {exc}") from exc
        if not line:
            tail = (self.process.stderr.read() or "").strip()[-500:]
            raise self.error(f"the {name} program's serve ended (exit {self.process.poll()}): "
                             f"{tail or 'no output'}")
        try:
            answer = json.loads(line)
        except json.JSONDecodeError as exc:
            raise self.error(f"the {name} program's serve answered something that is not JSON: "
                             f"{line.strip()[:200]}") from exc
        if not answer.get("ok"):
            raise self.error(answer.get("error") or f"the {name} program refused {payload}")
        return answer

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
