"""Real TLS 1.3 handshakes: the Rust runner (OpenSSL 3.6), certificate chains, and handshake runs.

``native/tls-runner`` (a Cargo project; the ``openssl`` crate with ``vendored`` builds OpenSSL 3.6.3
from crates.io) runs client and server as two threads of one process over loopback TCP, each
pinned to its own core where there are two.  Per handshake it reports wall time, each side's
thread CPU time (``CLOCK_THREAD_CPUTIME_ID``) and every record each side wrote, attributed to the
handshake message it carried; it checks the negotiated group and signature scheme, the chain,
resumption, and that application data round-trips.  It is the program ``tls-runner`` of pqlab's one
protocol (``native/PROTOCOL.md``: ``list``, ``handshake``, ``mkchain``), built and called through
:mod:`pqlab.runners.program`: ``make setup`` does not build it, :func:`build_tls_runner` does on first use
(incrementally, one build at a time, again when its sources change or its binary no longer has the
recorded sha256), and the build record beside the binary (``target/release/pqlab-build.json``) says how
long each build took (:func:`build_records`).

The runner's numbers have bounds (:data:`MAX_HANDSHAKES`, :data:`MAX_WARMUP`, :data:`MAX_PAYLOAD`; the runner
has the same ones) and ``pin`` names two CPUs this process may run on: :func:`check_run_options` refuses
anything else in one line (:class:`~pqlab.core.errors.BadInput`) before anything runs.  A run reports the
pinning the kernel granted (``pinned_cpus``, and ``affinity`` per thread), read back after pinning.

    build_tls_runner() -> Path                      capabilities() -> {"groups": [...], "signatures": [...]}
    resolve_group("ML-KEM-768") -> "MLKEM768"       check_names(groups, signatures)   (before anything runs)
    build_chain("ML-DSA-44") -> Path                certificate_sizes(signatures) -> DataFrame (DER bytes)
    run_handshakes(group, signature, ...) -> dict   measure_handshakes(configs, ...) -> Run (data/results)

``handshake``'s document (one per configuration): ``protocol``, ``program``, ``openssl_version``, ``group``,
``sigalg``, ``depth``, ``mutual``, ``resume``, ``payload_bytes``, ``pinned_cpus``, ``affinity``, ``verified``
and ``error`` (the refusal or the failed handshake's reasons; the runner exits 1 then), ``setup_error`` when
the stack refused the configuration, and ``handshakes``: per handshake ``index``, ``warmup``, ``resumed``,
``ok``, ``errors``, ``wall_ns``, ``client_cpu_ns``, ``server_cpu_ns``, ``server_wall_ns``,
``group_negotiated``, ``server_sigalg`` (``client_sigalg`` when mutual), ``cipher``, ``ticket_bytes``
(``offered_ticket_bytes`` when resuming), ``client_bytes``/``server_bytes`` (counted on each socket) and
``client_messages``/``server_messages`` ([content type, handshake type, length, wire bytes, extensions]).

Certificates: root -> intermediate -> leaf, made with ``cryptography`` (keys derived from fixed
seeds where it can, so DER sizes are reproducible: :mod:`pqlab.runners.tls_certificates`) or, for key types
it cannot sign with (SLH-DSA), by the runner's OpenSSL (``mkchain``).  Sizes are read from the files, never
computed.  The records each side wrote are sorted into flights by :mod:`pqlab.runners.tls_messages`.
"""
from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import pandas as pd

from pqlab.core import flags, paths
from pqlab.core.errors import BadInput, UnknownName
from pqlab.core.inputs import count
from pqlab.core.schema import SAMPLE_COLUMNS, TLS_MEASUREMENT_COLUMNS, TLS_SAMPLE_COLUMNS
from pqlab.measure import noise
from pqlab.runners import program as programs
from pqlab.runners.base import RunnerError
from pqlab.runners.tls_certificates import (
    CHAIN_FILES,
    HOST,  # noqa: F401 - tls.HOST before the split
    _write_chain_with_cryptography,
)
from pqlab.runners.tls_messages import (  # noqa: F401 - CONTENT_TYPES, HANDSHAKE_TYPES, flight_of: tls's
    CONTENT_TYPES,
    FLIGHTS,
    HANDSHAKE_TYPES,
    cv_signature_bytes,
    flight_bytes,
    flight_of,
    message_rows,
)
from pqlab.store.recorder import RunRecorder, summary_columns

#: The runner's name in pqlab.runners.program.REGISTRY.
NAME = "tls-runner"
RUNNER_DIR = paths.NATIVE / "tls-runner"
#: The backend column of a handshake run's rows (pqlab.core.vocabulary).
BACKEND = "openssl-tls"
TARGET_DIR = RUNNER_DIR / "target"
#: The binary its program.toml's `artifact` names (its build record and build log beside it).
BINARY = TARGET_DIR / "release" / "tls-runner"
#: Where builds were recorded before the runner spoke protocol 2, beside release/ (read for the history only).
LEGACY_BUILD_RECORD = "build-record.json"
CHAINS = paths.BUILD / "tls-chains"

#: pqlab's KEM names -> OpenSSL's TLS group names (any group the stack lists is accepted too).
GROUPS = {"X25519": "x25519", "ML-KEM-512": "MLKEM512", "ML-KEM-768": "MLKEM768", "ML-KEM-1024": "MLKEM1024",
          "X25519MLKEM768": "X25519MLKEM768", "SecP256r1MLKEM768": "SecP256r1MLKEM768",
          "SecP384r1MLKEM1024": "SecP384r1MLKEM1024", "P-256": "secp256r1", "P-384": "secp384r1",
          "ECDH-P256": "secp256r1"}

#: Certificate chains pqlab builds: algorithm -> (TLS 1.3 signature scheme in OpenSSL or None, builder).
#: OpenSSL 3.6 defines no TLS 1.3 signature scheme for SLH-DSA; its chains are still built (by
#: OpenSSL itself) so that the handshake shows the stack's own refusal.
SIGNATURES = {
    "RSA-2048": ("rsa_pss_rsae_sha256", "cryptography"),
    "ECDSA-P256": ("ecdsa_secp256r1_sha256", "cryptography"),
    "Ed25519": ("ed25519", "cryptography"),
    "ML-DSA-44": ("mldsa44", "cryptography"),
    "ML-DSA-65": ("mldsa65", "cryptography"),
    "ML-DSA-87": ("mldsa87", "cryptography"),
    "SLH-DSA-SHA2-128s": (None, "openssl"),
    "SLH-DSA-SHA2-128f": (None, "openssl"),
}

#: Bounds of a run's numbers, the runner's own (native/tls-runner/src/main.rs): checked here first.
MAX_HANDSHAKES = 100_000
MAX_WARMUP = 10_000
MAX_PAYLOAD = 16 << 20


class TlsError(RunnerError):
    """The TLS runner could not be built or run."""


class TlsRunnerBuildError(TlsError):
    """A step of the runner's build failed; the message names the step and the log."""


# --------------------------------------------------------------------------- build


def runner() -> programs.Program:
    """The runner as pqlab's program record (native/tls-runner/program.toml)."""
    return programs.program(NAME)


def build_tls_runner(*, cargo: str | None = None, timeout_s: float = 3600) -> Path:
    """Build the runner unless it is the intact build of today's sources; its path.

    Raises :class:`TlsRunnerBuildError` in one line (the failed command, its exit status, its log's last lines
    and where the log is; or, without cargo, what to install).  `cargo` builds with that cargo instead of the
    one on PATH (tests use a failing one)."""
    prog = runner()
    if cargo is not None:
        prog = replace(prog, tools=(cargo,), build=(cargo, *prog.build[1:]))
    prog = replace(prog, timeout_s=timeout_s)
    try:
        return programs.ensure_built(prog)
    except programs.ProgramError as exc:
        raise TlsRunnerBuildError(str(exc)) from exc


def _legacy_builds(prog: programs.Program) -> list[dict]:
    """Builds recorded before the runner spoke protocol 2, in today's fields."""
    try:
        builds = json.loads((prog.output.parent / LEGACY_BUILD_RECORD).read_text()).get("builds", [])
    except (OSError, ValueError, AttributeError):
        return []
    return [dict(b, built_at=b.get("finished_at"), why="before protocol 2")
            for b in builds if isinstance(b, dict)]


def build_records() -> list[dict]:
    """Every recorded build, oldest first (the last 20 of the build record's ``history``, after those recorded
    before protocol 2): seconds, whether it started from nothing (``cold``), when (``built_at``), the load
    average before it, the cores, the command, and the OpenSSL version it links (the runner's ``list``)."""
    prog = runner()
    history = programs.build_record(prog).get("history", [])
    version = ""
    if history:
        try:
            version = capabilities()["openssl_version"]
        except RunnerError:
            version = ""
    return _legacy_builds(prog) + [dict(b, openssl_version=version) for b in history]


def build_record(cold: bool | None = None) -> dict | None:
    """The last recorded build (the last cold one with ``cold=True``), or None."""
    builds = [b for b in build_records() if cold is None or b.get("cold") == cold]
    return builds[-1] if builds else None


def _call(command: str, args: Sequence[str] = (), timeout_s: float = 600,
          accept: Sequence[int] = (0,)) -> dict:
    """One command of the runner (built first when needed): its document, or :class:`TlsError` in one line."""
    build_tls_runner()
    return programs.call(runner(), command, [str(a) for a in args], timeout_s=timeout_s, accept=accept,
                         error=TlsError)


def capabilities() -> dict:
    """The runner's ``list``: the stack's OpenSSL version (``openssl_version``), TLS groups (``groups``) and
    TLS 1.3 signature schemes (``signatures``), the toolchain, and ``build`` (its build
    record).  Builds the runner on first use."""
    build_tls_runner()
    try:
        document = programs.describe(runner())
    except programs.ProgramError as exc:
        raise TlsError(str(exc)) from exc
    return document


# --------------------------------------------------------------------------- names


def resolve_group(name: str, groups: Iterable[str] | None = None) -> str:
    """OpenSSL's group name for a pqlab or OpenSSL name; :class:`pqlab.core.errors.UnknownName` (one line)
    otherwise."""
    groups = list(groups if groups is not None else capabilities()["groups"])
    by_lower = {g.lower(): g for g in groups}
    candidate = GROUPS.get(name, name)
    if candidate.lower() in by_lower:
        return by_lower[candidate.lower()]
    raise UnknownName("TLS group", name, list(GROUPS) + groups, f"The stack supports {', '.join(groups)}")


def display_group(name: str) -> str:
    """pqlab's name of a group given by either name (ML-KEM-768 for MLKEM768); other names unchanged."""
    for pqlab_name, openssl_name in GROUPS.items():
        if name.lower() in (pqlab_name.lower(), openssl_name.lower()):
            return pqlab_name
    return name


def check_signature(name: str, sigalgs: Iterable[str] | None = None) -> str:
    """`name` if pqlab builds chains for it; :class:`pqlab.core.errors.UnknownName` (one line) otherwise."""
    if name in SIGNATURES:
        return name
    schemes = sigalgs if sigalgs is not None else capabilities()["signatures"]
    raise UnknownName("signature", name, SIGNATURES, f"Chains are built for {', '.join(SIGNATURES)} (the "
                      f"stack's TLS 1.3 signature schemes: {', '.join(schemes)})")


def check_names(groups: Iterable[str], signatures: Iterable[str]) -> tuple[list[str], list[str]]:
    """Every group and signature checked before anything is measured: (OpenSSL groups, signatures)."""
    caps = capabilities()
    return ([resolve_group(g, caps["groups"]) for g in groups],
            [check_signature(s, caps["signatures"]) for s in signatures])


# --------------------------------------------------------------------------- certificates


def build_chain(algorithm: str, folder: Path | None = None) -> Path:
    """The chain folder of `algorithm` (built once; reused while every file is there)."""
    check_signature(algorithm, sigalgs=())
    folder = Path(folder or CHAINS) / algorithm
    if all((folder / f).exists() for f in CHAIN_FILES):
        return folder
    tmp = folder.with_name(folder.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    if SIGNATURES[algorithm][1] == "cryptography":
        _write_chain_with_cryptography(algorithm, tmp)
    else:
        _call("mkchain", ["--alg", algorithm, "--out", str(tmp)])
    shutil.rmtree(folder, ignore_errors=True)
    tmp.rename(folder)
    return folder


def certificate_sizes(signatures: Iterable[str], folder: Path | None = None) -> pd.DataFrame:
    """DER bytes of every certificate of each chain, read from the files, and who built it."""
    rows = []
    for sig in signatures:
        chain = build_chain(sig, folder)
        size = {f: (chain / f).stat().st_size for f in CHAIN_FILES}
        rows.append({"signature": sig, "built_with": SIGNATURES[sig][1], "root": size["root.der"],
                     "intermediate": size["intermediate.der"], "leaf_from_root": size["server-1.der"],
                     "leaf_from_intermediate": size["server-2.der"],
                     "client_leaf_from_root": size["client-1.der"],
                     "client_leaf_from_intermediate": size["client-2.der"],
                     "depth1_sent": size["server-1.der"],
                     "depth2_sent": size["server-2.der"] + size["intermediate.der"]})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- handshakes


@dataclass(frozen=True)
class Config:
    """One handshake configuration of the matrix."""

    group: str  # pqlab or OpenSSL name
    signature: str
    depth: int = 1
    mutual: bool = False
    resume: bool = False

    @property
    def mode(self) -> str:
        return "resumed" if self.resume else ("mutual" if self.mutual else "server-auth")

    @property
    def pair(self) -> str:
        return f"{display_group(self.group)} + {self.signature}"


def default_pin() -> str | None:
    """Client and server threads on CPUs 0 and 1 when the process may use both; else unpinned."""
    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    return f"{cpus[0]},{cpus[1]}" if len(cpus) >= 2 else None


def check_pin(pin: str | None) -> str | None:
    """`pin` ("CLIENT,SERVER", two CPUs this process may run on), or None (unpinned); BadInput otherwise."""
    if pin is None:
        return None
    parts = str(pin).split(",")
    if len(parts) != 2 or not all(p.strip().isdigit() for p in parts):
        raise BadInput(f"pin takes two CPU numbers, CLIENT,SERVER (e.g. 0,1), got {pin!r}")
    allowed = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    for cpu in (int(p) for p in parts):
        if allowed and cpu not in allowed:
            raise BadInput(f"pin {pin}: CPU {cpu} is not one this process may run on (it may use "
                           f"{', '.join(map(str, allowed))}): choose two of those, or leave pin out")
    return ",".join(p.strip() for p in parts)


def check_run_options(handshakes, warmup, payload=64,
                      pin: str | None = None) -> tuple[int, int, int, str | None]:
    """(handshakes, warmup, payload, pin) within the runner's bounds, checked before anything runs."""

    return (count(handshakes, "handshakes", 1, MAX_HANDSHAKES), count(warmup, "warmup", 0, MAX_WARMUP),
            count(payload, "payload", 1, MAX_PAYLOAD), check_pin(default_pin() if pin == "auto" else pin))


def run_handshakes(config: Config, handshakes: int = 10, *, warmup: int = 1, pin: str | None = "auto",
                   payload: int = 64, chains: Path | None = None, timeout_s: float = 600) -> dict:
    """Run `handshakes` checked handshakes of `config` (plus warm-up); the runner's JSON.

    A configuration the stack refuses comes back with ``setup_error``; a failed handshake as the
    last row with ``ok`` false and OpenSSL's reasons in ``errors`` (either way ``verified`` is false and
    ``error`` says why).  Numbers outside the runner's bounds
    and a `pin` on CPUs this process may not use are refused first (:func:`check_run_options`).
    """
    handshakes, warmup, payload, pin = check_run_options(handshakes, warmup, payload, pin)
    group = resolve_group(config.group)
    check_signature(config.signature)
    chain = build_chain(config.signature, chains)
    sigalg = SIGNATURES[config.signature][0]
    args = ["--group", group, "--chain", str(chain), "--depth", str(config.depth),
            "--handshakes", str(handshakes), "--warmup", str(warmup), "--payload", str(payload)]
    if sigalg:
        args += ["--sigalg", sigalg]
    if config.mutual:
        args.append("--mutual")
    if config.resume:
        args.append("--resume")
    if pin:
        args += ["--pin", pin]
    # exit 1: the stack refused the configuration or a handshake failed its checks (the document says which)
    out = _call("handshake", args, timeout_s=timeout_s, accept=(0, programs.CHECK_FAILED))
    out["config"] = config
    return out


def failure_reason(result: dict) -> str:
    """OpenSSL's reason a configuration failed, or '' if every handshake passed its checks."""
    if result.get("setup_error"):
        return result["setup_error"]
    bad = [h for h in result["handshakes"] if not h["ok"]]
    return "; ".join(bad[0]["errors"]) if bad else ""


def _window() -> dict:
    """The start of one configuration's measurement window (:func:`window_noise`)."""

    return noise.snapshot()


def window_noise(start: dict) -> dict:
    """What the machine did while one configuration ran (:func:`pqlab.measure.noise.round_noise`: the runner,
    a finished child of this process, counts as this process's own CPU, not another's), and whether that was
    busy (:func:`pqlab.measure.noise.busy_reason`): a runner without rounds can still say when the machine was
    not quiet."""

    record = noise.round_noise(start, noise.snapshot())
    record["busy"] = noise.busy_reason(record)
    return record


def measure_handshakes(configs: Sequence[Config], handshakes: int = 20, *, warmup: int = 2, study: str = "",
                       pin: str | None = "auto", save: bool = True, folder: Path | None = None,
                       progress: bool = True):
    """Run every configuration (names checked first) and store the run in the results store.

    One measurement row per configuration: wall time (``time_ns_*``), client and server CPU time
    with medians (no interval: one client and one server process, no rounds), wire bytes per flight; a refused
    or failed configuration gives a row with ``verified`` False and OpenSSL's reason in a ``failed`` flag, and
    the matrix goes on.  Samples hold every handshake; ``meta["tls"]["messages"]`` the message
    breakdown of each configuration's first measured handshake; ``meta["tls"]["noise"]`` what the machine did
    while each configuration ran (:func:`window_noise`), and a busy one's row carries the flag ``busy``.
    """
    from pqlab.measure.stats import summarize

    check_run_options(handshakes, warmup, pin=pin)
    check_names({c.group for c in configs}, {c.signature for c in configs})
    caps = capabilities()
    version = caps["openssl_version"]
    params = {"configs": [vars(c) for c in configs], "handshakes": handshakes, "warmup": warmup,
              "pin": default_pin() if pin == "auto" else pin}
    meta = {"tls": {"openssl_version": version, "runner_builds": build_records(), "messages": {},
                    "noise": {}, "runner": {k: caps.get(k) for k in ("program", "protocol", "toolchain")}}}
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(configs), desc=study or "handshakes", unit="config", leave=True,
                   dynamic_ncols=True)
    with RunRecorder(study, params, label=study or "tls", folder=folder, save=save, liboqs=False,
                     meta=meta) as rec:
        for config in configs:
            if bar is not None:
                bar.set_postfix_str(f"{config.pair} {config.mode} d{config.depth}")
            window = _window()
            result = run_handshakes(config, handshakes, warmup=warmup, pin=pin)
            machine = window_noise(window)
            measured = [h for h in result["handshakes"] if not h["warmup"] and h["ok"]]
            reason = failure_reason(result)
            row = rec.row(backend=BACKEND, implementation=f"{version} (pqlab tls-runner)",
                          library_version=version.split()[1] if " " in version else "", algorithm=config.pair,
                          kind="tls", operation=f"handshake:{config.mode}", samples=len(measured), loops=1,
                          cycles_source="none",
                          tls_group=resolve_group(config.group, caps["groups"]),
                          tls_signature=config.signature,
                          chain_depth=config.depth, mutual=config.mutual, resumed=config.resume,
                          verified=not reason, flags=flags.make("failed", reason) if reason else "")
            key = f"{config.pair} | {config.mode} | depth {config.depth}"
            rec.meta["tls"]["noise"][key] = machine
            samples = []
            if measured:
                wall = summarize([h["wall_ns"] for h in measured])
                row.update(summary_columns(wall))
                for side in ("client", "server"):
                    s = summarize([h[f"{side}_cpu_ns"] for h in measured])
                    # no interval: one client and one server process (no rounds)
                    row.update({f"{side}_cpu_ns_median": s["median"], f"{side}_cpu_ns_ci_low": float("nan"),
                                f"{side}_cpu_ns_ci_high": float("nan")})
                first = measured[0]
                row.update({f"bytes_{f.lower()}": b for f, b in flight_bytes(first).items()})
                row["flags"] = flags.join([row["flags"], *wall["flags"], flags.make(
                    "no-cycles", "thread CPU time (CLOCK_THREAD_CPUTIME_ID) per side instead"),
                    flags.make("no-rounds", "one client and server process"),
                    flags.make("busy", f"while it ran: {machine['busy']}") if machine["busy"] else ""])
                row["rounds"] = 1
                rec.meta["tls"]["messages"][key] = message_rows(result, first)
                for i, h in enumerate(measured):
                    fb = flight_bytes(h)
                    samples.append({"run_id": rec.run_id, "backend": BACKEND, "algorithm": config.pair,
                                    "operation": row["operation"], "sample": i, "loops": 1,
                                    "time_ns": h["wall_ns"],
                                    "client_cpu_ns": h["client_cpu_ns"], "server_cpu_ns": h["server_cpu_ns"],
                                    **{f"bytes_{f.lower()}": fb[f] for f in FLIGHTS},
                                    "cv_signature_bytes": cv_signature_bytes(h),
                                    "client_cv_signature_bytes": cv_signature_bytes(h, "client"),
                                    "ticket_bytes": h.get("offered_ticket_bytes"), "cipher": h.get("cipher"),
                                    "chain_depth": config.depth, "mutual": config.mutual,
                                    "resumed": config.resume})
            elif result["handshakes"]:
                rec.meta["tls"]["messages"][key] = message_rows(result, result["handshakes"][-1])
            rec.add(measurements=[{**dict.fromkeys(TLS_MEASUREMENT_COLUMNS), **row}],
                    samples=[{**dict.fromkeys(SAMPLE_COLUMNS + TLS_SAMPLE_COLUMNS), **s} for s in samples])
            rec.checkpoint()
            if bar is not None:
                bar.update(1)
    if bar is not None:
        bar.close()
    return rec.run


if __name__ == "__main__":  # `python -m pqlab.runners.tls build`: what the Makefile's runner target calls
    import sys

    if sys.argv[1:] != ["build"]:
        sys.exit("usage: python -m pqlab.runners.tls build")
    try:
        path = build_tls_runner()
        version = capabilities()["openssl_version"]
    except TlsError as exc:
        sys.exit(f"error: {exc}")
    record = build_record() or {}
    print(f"TLS runner: {path} ({version}; last build {record.get('seconds', '?')} s)")
