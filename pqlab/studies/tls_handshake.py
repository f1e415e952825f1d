"""Notebook 06: what post-quantum costs a real TLS 1.3 handshake.

The measurement is :mod:`pqlab.runners.tls` (OpenSSL 3.6 in a Rust runner, real certificate chains); this
module plans the matrix, measures the primitives with :func:`pqlab.bench.bench`, and holds the
**budget model**: from measured sizes (key shares, ciphertexts, DER certificates, signatures) and the
TLS 1.3 framing of RFC 8446 it predicts every handshake message and record, hence the bytes per
flight; then whether the server's first flight fits a TCP initial window of 10 x 1460 bytes, the QUIC
anti-amplification allowance (3 x what the client sent, its Initials padded to 1,200 bytes), the
extra round trips each costs, the hard limits of the stack, and each side's CPU per handshake as the
sum of the measured operations.  The notebook shows the prediction beside the real handshake.

Framing the model knows about the stack (OpenSSL 3.6 as configured by the runner): TLS 1.3 only, one
group and one signature scheme offered, SNI, middlebox compatibility (a 32-byte session id and a
ChangeCipherSpec record per side), the extensions OpenSSL sends (``CLIENT_EXTENSIONS``), records of at
most 16,384 bytes, AEAD records adding 5 + 1 + 16 bytes.  Tickets (NewSessionTicket) are the server's
own encoding of its state: their size is read from the handshake (it is an input of the resumed
ClientHello's prediction), not predicted.
"""
from __future__ import annotations

import ast
import json
import math
import re
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

from pqlab.benchmark import bench
from pqlab.core import formatting, paths
from pqlab.core.errors import UnknownName
from pqlab.core.formatting import fmt_bytes, fmt_count, fmt_factor, fmt_factor_ci, fmt_span, slug
from pqlab.measure.stats import CONFIDENCE, combined_ci, ratio_ci
from pqlab.publish import plotting
from pqlab.runners import tls
from pqlab.runners.rounds import ROUNDS

TOPIC = "06_tls_handshake"
REFERENCE = "06_tls_published"

# --------------------------------------------------------------------------- what is measured where

#: Each TLS group as the KEMs it is made of (a hybrid's cost is the sum of its parts).
GROUP_PARTS = {"X25519": ["X25519"], "ML-KEM-512": ["ML-KEM-512"], "ML-KEM-768": ["ML-KEM-768"],
               "ML-KEM-1024": ["ML-KEM-1024"], "X25519MLKEM768": ["ML-KEM-768", "X25519"],
               "SecP256r1MLKEM768": ["ECDH-P256", "ML-KEM-768"]}
#: Where pqlab measures each KEM part: OpenSSL (through cryptography) where it has it, else liboqs.
KEM_BACKENDS = {"X25519": "cryptography", "ECDH-P256": "cryptography", "ML-KEM-512": "liboqs",
                "ML-KEM-768": "cryptography", "ML-KEM-1024": "cryptography"}
#: Each chain's algorithm as (CertificateVerify operation, certificate-signature operation).
SIGNATURE_OPS = {"RSA-2048": ("RSA-2048-PSS@cryptography", "RSA-2048-PKCS1v15-sig@cryptography"),
                 "ECDSA-P256": ("ECDSA-P256@cryptography",) * 2, "Ed25519": ("Ed25519@cryptography",) * 2,
                 "ML-DSA-44": ("ML-DSA-44@cryptography",) * 2, "ML-DSA-65": ("ML-DSA-65@cryptography",) * 2,
                 "ML-DSA-87": ("ML-DSA-87@cryptography",) * 2,
                 "SLH-DSA-SHA2-128s": ("SLH-DSA-SHA2-128s@pqcrypto",) * 2,
                 "SLH-DSA-SHA2-128f": ("SLH-DSA-SHA2-128f@pqcrypto",) * 2}
BASELINE = ("X25519", "ECDSA-P256")

# --------------------------------------------------------------------------- framing and limits

RECORD_HEADER = 5
AEAD_OVERHEAD = 1 + 16  # inner content type + AES-GCM tag
MAX_FRAGMENT = 16384
HANDSHAKE_HEADER = 4
SESSION_ID = 32  # middlebox compatibility mode (OpenSSL's default)
#: OpenSSL's default TLS 1.3 cipher suites, in its order; the first is negotiated.
CLIENT_SUITES = ("TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256", "TLS_AES_128_GCM_SHA256")
HASH_BYTES = {"TLS_AES_256_GCM_SHA384": 48, "TLS_CHACHA20_POLY1305_SHA256": 32, "TLS_AES_128_GCM_SHA256": 32}
#: Groups for which OpenSSL also sends ec_point_formats (classical ECDHE; not the ML-KEM hybrids).
EC_GROUPS = {"x25519", "x448", "secp256r1", "secp384r1", "secp521r1"}
TCP_SEGMENT = 1460
TCP_INITCWND = 10
QUIC_INITIAL = 1200
QUIC_AMPLIFICATION = 3
#: Limits on what a peer accepts (the runner's OpenSSL source, 3.6.3 as vendored by openssl-src 300.6.1, and
#: RFC 8446); the runner's OpenSSL version is shown with them where they are quoted.
#: (message, limit in bytes of the message body, where it comes from)
LIMITS = [
    ("key_share entry", 65535, "RFC 8446 4.2.8: opaque key_exchange<1..2^16-1>"),
    ("client_hello", 131396, "OpenSSL ssl/statem/statem_srvr.c CLIENT_HELLO_MAX_LENGTH"),
    ("server_hello", 65607, "OpenSSL ssl/statem/statem_local.h SERVER_HELLO_MAX_LENGTH"),
    ("certificate", 102400, "OpenSSL SSL_MAX_CERT_LIST_DEFAULT (max_cert_list)"),
    ("certificate_verify", 65539, "OpenSSL ssl/statem/statem_local.h CERTIFICATE_VERIFY_MAX_LENGTH"),
]
#: The CertificateVerify limit older OpenSSL applied (open-quantum-safe/oqs-provider#121, 2023).
OLD_CV_LIMIT = 16384


def client_extensions(group: str, share: int, host: str = tls.HOST, ticket: int | None = None,
                      hash_bytes: int = 48) -> list[tuple[str, int]]:
    """The ClientHello extensions OpenSSL 3.6 sends with the runner's configuration, with their sizes."""
    ext = [("server_name", 4 + 2 + 1 + 2 + len(host))]
    if group.lower() in EC_GROUPS:
        ext.append(("ec_point_formats", 4 + 1 + 1))
    ext += [("supported_groups", 4 + 2 + 2), ("session_ticket", 4), ("encrypt_then_mac", 4),
            ("extended_master_secret", 4), ("signature_algorithms", 4 + 2 + 2), ("supported_versions", 4 + 1 + 2),
            ("psk_key_exchange_modes", 4 + 1 + 1), ("key_share", 4 + 2 + 2 + 2 + share)]
    if ticket is not None:  # one identity (ticket + obfuscated age) and one binder
        ext.append(("pre_shared_key", 4 + 2 + 2 + ticket + 4 + 2 + 1 + hash_bytes))
    return ext


def wire_bytes(length: int, encrypted: bool) -> int:
    """Bytes on the wire of one handshake message: its records' headers (and AEAD overhead) added."""
    records = max(1, math.ceil(length / MAX_FRAGMENT))
    return length + records * (RECORD_HEADER + (AEAD_OVERHEAD if encrypted else 0))


def certificate_message(ders: Sequence[int]) -> int:
    """Certificate: header, empty request context, list length, per entry 3-byte length + DER + no extensions."""
    return HANDSHAKE_HEADER + 1 + 3 + sum(3 + d + 2 for d in ders)


def predict_messages(config: tls.Config, client_share: int, server_share: int, server_chain: Sequence[int],
                     client_chain: Sequence[int], signature_bytes: int, client_signature_bytes: int | None = None,
                     *, cipher: str = CLIENT_SUITES[0], ticket_bytes: int | None = None) -> pd.DataFrame:
    """Every message of one handshake, predicted: from, flight, message, message_bytes, wire_bytes."""
    group = tls.GROUPS.get(tls.display_group(config.group), config.group)
    hash_bytes = HASH_BYTES[cipher]
    if config.resume and ticket_bytes is None:
        raise ValueError("a resumed handshake's ClientHello carries the ticket: give ticket_bytes")
    ticket = ticket_bytes if config.resume else None
    ch = HANDSHAKE_HEADER + 2 + 32 + 1 + SESSION_ID + 2 + 2 * len(CLIENT_SUITES) + 1 + 1 + 2 + sum(
        n for _, n in client_extensions(group, client_share, ticket=ticket, hash_bytes=hash_bytes))
    sh = HANDSHAKE_HEADER + 2 + 32 + 1 + SESSION_ID + 2 + 1 + 2 + (4 + 2) + (4 + 2 + 2 + server_share) + (
        4 + 2 if config.resume else 0)
    finished = HANDSHAKE_HEADER + hash_bytes
    rows = [("client", "C1", "client_hello", ch, False), ("server", "S1", "server_hello", sh, False),
            ("server", "S1", "change_cipher_spec", 1, None), ("server", "S1", "encrypted_extensions", 6, True)]
    if not config.resume:
        if config.mutual:
            rows.append(("server", "S1", "certificate_request", HANDSHAKE_HEADER + 1 + 2 + 8, True))
        rows += [("server", "S1", "certificate", certificate_message(server_chain), True),
                 ("server", "S1", "certificate_verify", HANDSHAKE_HEADER + 4 + signature_bytes, True)]
    rows += [("server", "S1", "finished", finished, True), ("client", "C2", "change_cipher_spec", 1, None)]
    if config.mutual and not config.resume:
        client_sig = client_signature_bytes if client_signature_bytes is not None else signature_bytes
        rows += [("client", "C2", "certificate", certificate_message(client_chain), True),
                 ("client", "C2", "certificate_verify", HANDSHAKE_HEADER + 4 + client_sig, True)]
    rows.append(("client", "C2", "finished", finished, True))
    return pd.DataFrame([{"from": side, "flight": flight, "message": msg, "message_bytes": n,
                          "wire_bytes": RECORD_HEADER + 1 if enc is None else wire_bytes(n, enc)}
                         for side, flight, msg, n, enc in rows])


# --------------------------------------------------------------------------- inputs from measurements


def plan_matrix(groups: Iterable[str], signatures: Iterable[str], depths: Iterable[int] = (1,),
                modes: Iterable[str] = ("server-auth",)) -> list[tls.Config]:
    """Every group x signature x depth x mode (server-auth, mutual, resumed), names checked first."""
    groups, signatures = list(groups), list(signatures)
    tls.check_names(groups, signatures)
    for g in groups:
        if tls.display_group(g) not in GROUP_PARTS:
            raise UnknownName("group with a cost model", g, GROUP_PARTS, f"Choose from {', '.join(GROUP_PARTS)}")
    bad = [m for m in modes if m not in ("server-auth", "mutual", "resumed")]
    if bad:
        raise ValueError(f"unknown mode(s) {bad}: choose from server-auth, mutual, resumed")
    return [tls.Config(tls.display_group(g), s, d, mutual=(m == "mutual"), resume=(m == "resumed"))
            for g in groups for s in signatures for d in depths for m in modes]


def plan_handshakes(pairs, groups: Sequence[str], signatures: Sequence[str], depths: Iterable[int] = (1,),
                    modes: Iterable[str] = ("server-auth",)) -> list[tls.Config]:
    """The measured configurations: `pairs` ([group, signature] lists) or "all" (groups x signatures)."""
    if pairs == "all":
        return plan_matrix(groups, signatures, depths, modes)
    if isinstance(pairs, str) or not all(isinstance(p, (list, tuple)) and len(p) == 2 for p in pairs):
        raise ValueError(f"handshake_pairs must be \"all\" or a list of [group, signature] pairs, not {pairs!r}")
    configs: list[tls.Config] = []
    for group, signature in pairs:
        configs += plan_matrix([group], [signature], depths, modes)
    return configs


def describe_model() -> str:
    """The model's constants, as the code uses them."""
    return (f"Records carry at most {MAX_FRAGMENT:,} bytes; each adds a {RECORD_HEADER}-byte header, and once "
            f"encrypted {AEAD_OVERHEAD} more (inner content type and AEAD tag). TCP: the server's first flight "
            f"fits when it is at most {TCP_INITCWND} x {TCP_SEGMENT} = {TCP_INITCWND * TCP_SEGMENT:,} bytes; "
            f"beyond, slow start doubles the window each round trip. QUIC: before the client's address is "
            f"validated the server may send {QUIC_AMPLIFICATION}x what it received, the client's Initials being "
            f"padded to {QUIC_INITIAL:,} bytes, so {QUIC_AMPLIFICATION * QUIC_INITIAL:,} bytes after one Initial; "
            f"more waits one round trip. Limits checked: " + "; ".join(
                f"{m} <= {n:,} B ({src})" for m, n, src in LIMITS) + ".")


def operation_names(groups: Iterable[str], signatures: Iterable[str], extra_kems: Iterable[str] = ()) -> list[str]:
    """The ``name@backend`` list :func:`measure_operations` measures."""
    names = []
    for g in groups:
        names += [f"{p}@{KEM_BACKENDS[p]}" for p in GROUP_PARTS[tls.display_group(g)]]
    for s in signatures:
        names += list(SIGNATURE_OPS[s])
    names += [f"{k}@liboqs" for k in extra_kems]
    return list(dict.fromkeys(names))


def measure_operations(groups, signatures, extra_kems=(), *, budget_s: float = 0.2, min_samples: int = 5,
                       target_rel_ci: float | None = 0.01, rounds: int | None = None, max_rounds: int | None = None,
                       progress: bool = True):
    """The KEM and signature operations behind the matrix, measured by pqlab in rounds (a saved run;
    :func:`pqlab.benchmark.bench`: `rounds` first-stage rounds, default bench's; more until `target_rel_ci`, at
    most `max_rounds`)."""

    return bench(operation_names(groups, signatures, extra_kems), budget_s=budget_s, min_samples=min_samples,
                 target_rel_ci=target_rel_ci, rounds=ROUNDS if rounds is None else rounds, max_rounds=max_rounds,
                 study=TOPIC, progress=progress, allow_nonconforming=True)  # its caveat: conformance.caveat(run)


def _size(ops, name: str, column: str) -> int:
    algorithm, backend = name.split("@")
    row = ops.sizes[(ops.sizes["algorithm"] == algorithm) & (ops.sizes["backend"] == backend)]
    if row.empty or pd.isna(row[column].iloc[0]):
        raise KeyError(f"the operations run has no {column} for {name}")
    return int(row[column].iloc[0])


def share_sizes(ops, groups: Iterable[str]) -> pd.DataFrame:
    """Client and server key-share bytes per group: the parts' public keys and ciphertexts, summed."""
    rows = []
    for g in groups:
        parts = GROUP_PARTS[tls.display_group(g)]
        names = [f"{p}@{KEM_BACKENDS[p]}" for p in parts]
        rows.append({"group": tls.display_group(g), "parts": " + ".join(parts),
                     "client_share": sum(_size(ops, n, "public_key_bytes") for n in names),
                     "server_share": sum(_size(ops, n, "ciphertext_bytes") for n in names)})
    return pd.DataFrame(rows)


def signature_bytes(ops, signature: str) -> int:
    """The largest signature the chain's algorithm makes (declared maximum where it varies)."""
    name = SIGNATURE_OPS[signature][0]
    try:
        return _size(ops, name, "signature_max_bytes")
    except KeyError:
        return _size(ops, name, "signature_bytes")


def chains(certs: pd.DataFrame, signature: str, depth: int) -> tuple[list[int], list[int]]:
    """DER sizes the server and the client send for a chain of `depth`."""
    row = certs.set_index("signature").loc[signature]
    if depth == 1:
        return [int(row["leaf_from_root"])], [int(row["client_leaf_from_root"])]
    return ([int(row["leaf_from_intermediate"]), int(row["intermediate"])],
            [int(row["client_leaf_from_intermediate"]), int(row["intermediate"])])


def _inputs(config: tls.Config, shares: pd.DataFrame, certs: pd.DataFrame, ops) -> dict:
    share = shares.set_index("group").loc[tls.display_group(config.group)]
    server_chain, client_chain = chains(certs, config.signature, config.depth)
    return dict(client_share=int(share["client_share"]), server_share=int(share["server_share"]),
                server_chain=server_chain, client_chain=client_chain,
                signature_bytes=signature_bytes(ops, config.signature))


# --------------------------------------------------------------------------- the budget model


def tcp_extra_round_trips(flight_bytes: int, segment: int = TCP_SEGMENT, initcwnd: int = TCP_INITCWND) -> int:
    """Round trips beyond the first that slow start (window doubling from `initcwnd`) needs."""
    segments, sent, window, extra = math.ceil(flight_bytes / segment), 0, initcwnd, 0
    while sent + window < segments:
        sent, window, extra = sent + window, window * 2, extra + 1
    return extra


def budget_row(config: tls.Config, messages: pd.DataFrame) -> dict:
    """Flights, window and amplification checks, extra round trips and hard limits of one prediction."""
    flights = messages.groupby("flight")["wire_bytes"].sum()
    body = messages.set_index(["from", "message"])["message_bytes"]
    ch = int(body[("client", "client_hello")])
    # QUIC carries the handshake messages in CRYPTO frames: no records, no ChangeCipherSpec.
    quic_s1 = int(messages.query("flight == 'S1' and message != 'change_cipher_spec'")["message_bytes"].sum())
    quic_c2 = int(messages.query("flight == 'C2' and message != 'change_cipher_spec'")["message_bytes"].sum())
    quic_allowance = QUIC_AMPLIFICATION * QUIC_INITIAL * math.ceil(ch / QUIC_INITIAL)
    s1, c2 = int(flights.get("S1", 0)), int(flights.get("C2", 0))
    failures = []
    sizes = {"client_hello": ch, "server_hello": int(body[("server", "server_hello")])}
    for key in ("certificate", "certificate_verify"):
        for side in ("server", "client"):
            if (side, key) in body.index:
                sizes.setdefault(key, 0)
                sizes[key] = max(sizes[key], int(body[(side, key)]))
    for message, limit, source in LIMITS:
        if message == "key_share entry":
            continue
        if message in sizes and sizes[message] - HANDSHAKE_HEADER > limit:
            failures.append(f"{message} body {sizes[message] - HANDSHAKE_HEADER} B > {limit} B ({source})")
    cv = sizes.get("certificate_verify")
    return {"pair": config.pair, "mode": config.mode, "depth": config.depth,
            "C1": int(flights.get("C1", 0)), "S1": s1, "C2": c2,
            "fits_initcwnd": s1 <= TCP_SEGMENT * TCP_INITCWND, "tcp_extra_rtt": tcp_extra_round_trips(s1),
            "client_extra_rtt": tcp_extra_round_trips(c2) if config.mutual else 0,
            "quic_s1": quic_s1, "quic_c2": quic_c2, "quic_allowance": quic_allowance, "quic_extra_rtt": int(quic_s1 > quic_allowance),
            "older_openssl_cv_limit": "exceeded" if cv and cv - HANDSHAKE_HEADER > OLD_CV_LIMIT else "",
            "hard_failure": "; ".join(failures)}


def predict_matrix(configs: Sequence[tls.Config], ops, certs: pd.DataFrame, *,
                   ticket_bytes: int | None = None) -> pd.DataFrame:
    """The budget of every configuration, predicted from measured sizes alone (no handshake needed).

    A resumed configuration needs the ticket length (read from a measured handshake); without it its
    row is left out here.  A chain the stack has no TLS 1.3 signature scheme for is marked so.
    """
    groups = list(dict.fromkeys(tls.display_group(c.group) for c in configs))
    shares = share_sizes(ops, groups)
    rows = []
    for config in configs:
        if config.resume and ticket_bytes is None:
            continue
        msgs = predict_messages(config, **_inputs(config, shares, certs, ops), ticket_bytes=ticket_bytes)
        row = budget_row(config, msgs)
        if tls.SIGNATURES[config.signature][0] is None and not config.resume:
            scheme = f"the stack defines no TLS 1.3 signature scheme for {config.signature}"
            row["hard_failure"] = "; ".join(x for x in (scheme, row["hard_failure"]) if x)
        rows.append(row)
    return pd.DataFrame(rows)


def compare_bytes(run, ops, certs: pd.DataFrame) -> pd.DataFrame:
    """Every measured handshake beside its prediction, flight by flight; ``error`` must be 0.

    Inputs per handshake that the model cannot know beforehand are taken from that handshake: the
    length of a variable-length signature (ECDSA's DER encoding), the ticket a resumed client offers,
    and the negotiated cipher suite (which fixes the Finished length).
    """
    configs = {(r.algorithm, r.operation, int(r.chain_depth)): r for r in run.measurements.itertuples()}
    groups = list(dict.fromkeys(r.tls_group for r in configs.values()))
    shares = share_sizes(ops, groups)
    inputs_of, flights_of = {}, {}  # config -> its inputs; the model's inputs -> flight bytes (handshakes repeat them)
    rows = []
    for s in run.samples.itertuples():
        m = configs[(s.algorithm, s.operation, int(s.chain_depth))]
        config = tls.Config(m.tls_group, m.tls_signature, int(m.chain_depth), bool(m.mutual), bool(m.resumed))
        if config not in inputs_of:
            inputs_of[config] = _inputs(config, shares, certs, ops)
        inputs = dict(inputs_of[config])
        if not pd.isna(s.cv_signature_bytes):
            inputs["signature_bytes"] = int(s.cv_signature_bytes)
        client_sig = None if pd.isna(s.client_cv_signature_bytes) else int(s.client_cv_signature_bytes)
        ticket = None if pd.isna(s.ticket_bytes) else int(s.ticket_bytes)
        key = (config, inputs["signature_bytes"], client_sig, s.cipher, ticket)
        if key not in flights_of:
            flights_of[key] = predict_messages(config, **inputs, client_signature_bytes=client_sig, cipher=s.cipher,
                                               ticket_bytes=ticket).groupby("flight")["wire_bytes"].sum()
        predicted = flights_of[key]
        for flight in ("C1", "S1", "C2"):
            measured = int(getattr(s, f"bytes_{flight.lower()}"))
            rows.append({"pair": config.pair, "mode": config.mode, "depth": config.depth, "handshake": s.sample,
                         "flight": flight, "measured": measured, "predicted": int(predicted.get(flight, 0)),
                         "error": measured - int(predicted.get(flight, 0))})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- CPU


def _op_row(ops, name: str, operation: str):
    """The measurement row of one verified operation (``name@backend``), or None."""
    algorithm, backend = name.split("@")
    m = ops.measurements
    row = m[(m["algorithm"] == algorithm) & (m["backend"] == backend) & (m["operation"] == operation)]
    return None if row.empty or not bool(row["verified"].iloc[0]) else row.iloc[0]


def _op(ops, name: str, operation: str) -> tuple[float, float, float]:
    """(median, ci_low, ci_high) in ns of one measured operation, the harness's do-nothing call removed."""
    r = _op_row(ops, name, operation)
    if r is None:
        return (float("nan"),) * 3
    overhead = 0.0 if pd.isna(r["overhead_ns"]) else float(r["overhead_ns"])
    return tuple(max(0.0, float(r[c]) - overhead) for c in ("time_ns_median", "time_ns_ci_low", "time_ns_ci_high"))


def cpu_steps(config: tls.Config) -> dict[str, list[tuple[str, str]]]:
    """The public-key operations each side does in one handshake of `config`, as (``name@backend``, operation):
    the group's parts (client keygen and decaps, server encaps), and unless it resumes one CertificateVerify
    signature and the chain's verifications (one per certificate sent, plus the CertificateVerify's)."""
    parts = [f"{p}@{KEM_BACKENDS[p]}" for p in GROUP_PARTS[tls.display_group(config.group)]]
    cv_op, chain_op = SIGNATURE_OPS[config.signature]
    client = [(n, "keygen") for n in parts] + [(n, "decaps") for n in parts]
    server = [(n, "encaps") for n in parts]
    if not config.resume:
        verify = [(chain_op, "verify")] * config.depth + [(cv_op, "verify")]
        client += verify
        server.append((cv_op, "sign"))
        if config.mutual:
            server += verify
            client.append((cv_op, "sign"))
    return {"client": client, "server": server}


def operations_ns(ops, steps: Sequence[tuple[str, str]]) -> tuple[float, float, float]:
    """The sum of `steps` (ns, each operation's do-nothing call removed) with its interval over the operations
    run's rounds (:func:`pqlab.measure.stats.combined_ci`, paired by round); (0, 0, 0) for no steps; no interval where the
    samples carry no rounds (then the sum of the medians)."""

    if not steps:
        return 0.0, 0.0, 0.0
    rows = [_op_row(ops, name, operation) for name, operation in steps]
    if any(r is None for r in rows):
        return (float("nan"),) * 3
    overheads = [0.0 if pd.isna(r["overhead_ns"]) else float(r["overhead_ns"]) for r in rows]
    values = [ops.sample_values(r["algorithm"], r["operation"], backend=r["backend"]) for r in rows]
    if any(len(v) == 0 for v in values):
        return float(sum(_op(ops, n, o)[0] for n, o in steps)), float("nan"), float("nan")

    def total(estimates):
        return sum(np.maximum(np.asarray(e, float) - o, 0.0) for e, o in zip(estimates, overheads))

    value, low, high = combined_ci(values, total)
    return float(value), float(low), float(high)


def _config_of(m) -> tls.Config:
    return tls.Config(m.tls_group, m.tls_signature, int(m.chain_depth), bool(m.mutual), bool(m.resumed))


def _step_label(steps: Sequence[tuple[str, str]]) -> str:
    counts: dict[tuple[str, str], int] = {}
    for step in steps:
        counts[step] = counts.get(step, 0) + 1
    return " + ".join(f"{n}× " * (n > 1) + f"{name.split('@')[0]} {op}" for (name, op), n in counts.items())


def compare_cpu(run, ops) -> pd.DataFrame:
    """Each side's measured CPU per handshake beside two models, one row per configuration and side.

    * ``model_us`` [``model_low_us``, ``model_high_us``]: the public-key operations alone (:func:`cpu_steps`), timed
      by pqlab in the operations run, with the interval over its rounds; ``stack_us`` is what the measurement adds
      to them (the TLS stack's own work), ``measured_over_model`` the factor between them.
    * ``same_run_model_us``: the same pair's resumed handshake at the same depth, measured by the runner in the same
      run (its key exchange and the stack's work), plus the operations a full handshake adds (``same_run_basis``
      names them); empty for the resumed rows themselves and where the pair was not measured resumed.

    The handshakes are measured in one process without rounds: the measured values, and the same-run model that
    adds one, have no interval."""
    m = run.measurements[run.measurements["verified"].astype(bool)]
    resumed = {(r.algorithm, int(r.chain_depth)): r for r in m.itertuples() if bool(r.resumed)}
    rows = []
    for r in m.itertuples():
        config = _config_of(r)
        anchor = None if config.resume else resumed.get((r.algorithm, config.depth))
        kem = {f"{p}@{KEM_BACKENDS[p]}" for p in GROUP_PARTS[tls.display_group(config.group)]}
        for side, steps in cpu_steps(config).items():
            measured = float(getattr(r, f"{side}_cpu_ns_median"))
            value, low, high = operations_ns(ops, steps)
            auth = [step for step in steps if step[0] not in kem]  # what a full handshake adds to a resumed one
            same, basis = float("nan"), ""
            if anchor is not None:
                same = float(getattr(anchor, f"{side}_cpu_ns_median")) + operations_ns(ops, auth)[0]
                basis = " + ".join(x for x in ("resumed handshake", _step_label(auth)) if x)
            rows.append({"pair": config.pair, "mode": config.mode, "depth": config.depth, "side": side,
                         "measured_us": measured / 1e3, "model_us": value / 1e3, "model_low_us": low / 1e3,
                         "model_high_us": high / 1e3,
                         "stack_us": (measured - value) / 1e3,
                         "measured_over_model": measured / value if value > 0 else float("nan"),
                         "same_run_model_us": same / 1e3, "same_run_basis": basis,
                         "measured_over_same_run": measured / same if same > 0 else float("nan")})
    return pd.DataFrame(rows)


def cpu_notes(cpu: pd.DataFrame, run) -> list[str]:
    """The lines under the model-vs-measured table: which values carry intervals and why the others do not."""
    samples = run.measurements.loc[run.measurements["verified"].astype(bool), "samples"]
    counts = fmt_span(samples.dropna().astype(int), fmt=fmt_count)
    has_ci = cpu["model_low_us"].notna().any() if len(cpu) else False
    return [f"measured: the median over {counts} handshakes per configuration, each side's thread clock; one process "
            "without rounds, so no interval.",
            "model: the public-key operations as pqlab timed them, "
            + (f"with the {CONFIDENCE:.0%} interval over the operations run's rounds (model_low, model_high)."
               if has_ci else "without interval (the operations run has no rounds)."),
            "same-run model: the same pair's resumed handshake from this run plus the operations in its basis; no "
            "interval, since its handshake term was measured in one process."]


def _busy_configs(run) -> tuple[list[str], int]:
    """Configurations the machine was busy while measuring (:func:`pqlab.runners.tls.window_noise`), of how many watched."""
    noise = run.meta.get("tls", {}).get("noise") or {}
    return [key for key, rec in noise.items() if rec.get("busy")], len(noise)


def describe_cpu_model(cpu: pd.DataFrame, run, ops) -> str:
    """Why the operations-only model predicts more handshakes per second than were measured, from the data: the
    factor per mode, the stack's own work it leaves out, when and how the operations were timed, whether the
    machine was busy, and how close the same-run model comes."""
    server = cpu[cpu["side"] == "server"] if len(cpu) else cpu
    if server.empty:
        return "No handshake was measured: there is no model to set beside a measurement."
    span = fmt_span(server["measured_over_model"], fmt=fmt_factor)
    per_mode = "; ".join(f"{mode}: {fmt_span(g['measured_over_model'], fmt=fmt_factor)}"
                         for mode, g in server.groupby("mode", sort=False))
    text = [f"Summing only the public-key operations, the model predicts {span} as many handshakes per second as "
            f"one server core sustained ({per_mode}). The model leaves out the TLS stack's own work (key schedule, "
            "transcript hashing, record protection, certificate encoding and parsing, tickets): measured minus the "
            f"operations is {fmt_span(server['stack_us'] * 1e3, fmt=formatting.fmt_time_ns)} per server handshake "
            "(that work, plus whatever separates pqlab's timing of the operations from the runner's)."]
    res = server[server["mode"] == "resumed"]
    if len(res):
        share = res["stack_us"] / res["measured_us"]
        text.append(f"In the resumed handshakes, whose only public-key operation is the key exchange, it is "
                    f"{fmt_span(res['stack_us'] * 1e3, fmt=formatting.fmt_time_ns)}, {fmt_span(share, fmt=formatting.fmt_percent)} of "
                    "the server's CPU" + (": the work the model leaves out is larger than the work it counts."
                                          if share.min() > 0.5 else "."))
    md = formatting.markdown
    used = {name for r in run.measurements.itertuples() if r.verified
            for steps in cpu_steps(_config_of(r)).values() for name, _ in steps}
    impls = sorted({str(v) for k, v in ((ops.meta.get("implementations") or {}) if hasattr(ops, "meta") else {}).items()
                    if k in used})
    text.append("The operations were timed by pqlab from Python (the do-nothing call removed) through "
                + (md("; ".join(impls)) if impls else "cryptography, liboqs or pqcrypto")
                + f" in run {md(ops.run_id)}{_run_gap(ops, run)}; the handshakes by the runner's "
                + md(run.meta.get("tls", {}).get("openssl_version", "OpenSSL")) + f" in run {md(run.run_id)}: "
                "another build, another process and another stretch of time.")
    busy, watched = _busy_configs(run)
    rounds = (ops.meta.get("rounds") or []) if hasattr(ops, "meta") else []
    if watched or busy:
        text.append(f"The machine was busy while {len(busy)} of {watched or len(run.measurements)} configurations "
                    f"were measured" + (f" ({md('; '.join(busy))})" if busy else "") + ".")
    else:
        text.append("This run did not record whether the machine was busy while each configuration was measured.")
    if rounds:
        text.append(f"Busy rounds of the operations run: {sum(bool(r.get('busy')) for r in rounds)} of {len(rounds)}.")
    same_work = [(key[0], d["measured_us"].max() / d["measured_us"].min()) for key, d in
                 res.assign(group=res["pair"].str.split(" + ", regex=False).str[0]).groupby(["group", "depth"])
                 if len(d) > 1] if len(res) else []
    if same_work:
        group, worst = max(same_work, key=lambda x: x[1])
        text.append(f"A resumed handshake does the same work whatever the chain, yet those of one group differ by up "
                    f"to {fmt_factor(worst)} in server CPU here ({md(group)}): a spread that is not the handshakes' work, "
                    "and which one process without rounds cannot put an interval on.")
    same = cpu.dropna(subset=["measured_over_same_run"])
    if len(same):
        text.append("The same-run model takes the key exchange and the stack's work from the same pair's resumed "
                    "handshake in this run (the same runner, build and minutes) and adds only the operations a full "
                    "handshake adds: measured over it is "
                    + "; ".join(f"{side} {fmt_span(g['measured_over_same_run'], fmt=fmt_factor)}"
                                for side, g in same.groupby("side", sort=False))
                    + ". What remains is work a resumed handshake does not do (certificates and the CertificateVerify "
                    "transcript) less what only resumption does (the ticket and its binder), and the difference "
                    "between pqlab's timing of the added operations and the runner's.")
    else:
        text.append("No pair was measured resumed as well: there is no same-run model here.")
    text.append(f"Intervals: the operations carry {CONFIDENCE:.0%} intervals over pqlab's rounds; the handshakes were "
                "measured in one process without rounds, so the measured values, the factors and the same-run model "
                "have none.")
    return " ".join(text)


def _run_gap(ops, run) -> str:
    """", which ended N before the handshakes started", from the runs' times ("" where unknown)."""
    try:
        gap = (pd.Timestamp(run.meta["started_at"])
               - pd.Timestamp(ops.meta.get("finished_at") or ops.meta["started_at"])).total_seconds()
    except (KeyError, TypeError, ValueError, AttributeError):
        return ""
    return f", which ended {formatting.fmt_duration(abs(gap))} {'before' if gap >= 0 else 'after'} the handshakes started"


def _samples_of(samples: pd.DataFrame, pair: str, operation: str, depth) -> pd.DataFrame:
    return samples[(samples["algorithm"] == pair) & (samples["operation"] == operation)
                   & (samples["chain_depth"] == depth)]


def handshake_rates(run, ops, baseline: tuple[str, str] = BASELINE, cpu: pd.DataFrame | None = None) -> pd.DataFrame:
    """Handshakes per second one core sustains (server side: 1 s / server CPU per handshake): measured (no
    interval: one process), the operations-only model with its interval over the operations' rounds, the same-run
    model (:func:`compare_cpu`), each model over the measurement, and the measurement relative to the baseline pair
    in the same mode and depth (intervals where both sides have rounds; the TLS runner's handshakes have none)."""
    samples = run.samples
    base_pair = f"{baseline[0]} + {baseline[1]}"
    cpu = compare_cpu(run, ops) if cpu is None else cpu
    server = cpu[cpu["side"] == "server"].set_index(["pair", "mode", "depth"]) if len(cpu) else None
    rows = []
    for m in run.measurements.itertuples():
        if not m.verified:
            continue
        mine = _samples_of(samples, m.algorithm, m.operation, m.chain_depth)["server_cpu_ns"].to_numpy(float)
        base = _samples_of(samples, base_pair, m.operation, m.chain_depth)["server_cpu_ns"].to_numpy(float)
        config = _config_of(m)
        ratio, lo, hi = ratio_ci(base, mine)  # rate ratio = baseline CPU / this CPU
        s = server.loc[(config.pair, config.mode, config.depth)]
        rate = 1e9 / m.server_cpu_ns_median

        def per_s(us):
            return 1e6 / us if us > 0 else np.nan

        rows.append({"pair": config.pair, "mode": config.mode, "depth": config.depth,
                     "per_s": rate, "per_s_low": 1e9 / m.server_cpu_ns_ci_high,
                     "per_s_high": 1e9 / m.server_cpu_ns_ci_low,
                     "model_per_s": per_s(s["model_us"]), "model_per_s_low": per_s(s["model_high_us"]),
                     "model_per_s_high": per_s(s["model_low_us"]), "model_over_measured": per_s(s["model_us"]) / rate,
                     "same_run_model_per_s": per_s(s["same_run_model_us"]),
                     "same_run_over_measured": per_s(s["same_run_model_us"]) / rate,
                     "vs_baseline": ratio, "vs_baseline_low": lo, "vs_baseline_high": hi})
    return pd.DataFrame(rows)


def hybrid_cost(run, classical: str = "X25519") -> pd.DataFrame:
    """What each group adds over `classical` with the same chain, mode and depth: bytes of the first two
    flights, and client and server CPU as ratios (intervals where both sides have rounds)."""
    m = run.measurements[run.measurements["verified"].astype(bool)]
    s = run.samples
    rows = []
    for r in m.itertuples():
        if r.tls_group == tls.GROUPS[classical]:
            continue
        base = m[(m["tls_group"] == tls.GROUPS[classical]) & (m["tls_signature"] == r.tls_signature)
                 & (m["operation"] == r.operation) & (m["chain_depth"] == r.chain_depth)]
        if base.empty:
            continue
        b = base.iloc[0]
        row = {"group": tls.display_group(r.tls_group), "signature": r.tls_signature, "mode": r.operation.split(":")[1],
               "depth": int(r.chain_depth), "C1_added": int(r.bytes_c1 - b["bytes_c1"]),
               "S1_added": int(r.bytes_s1 - b["bytes_s1"])}
        for side in ("client", "server"):
            mine = _samples_of(s, r.algorithm, r.operation, r.chain_depth)
            theirs = _samples_of(s, b["algorithm"], b["operation"], b["chain_depth"])
            ratio, lo, hi = ratio_ci(mine[f"{side}_cpu_ns"], theirs[f"{side}_cpu_ns"])
            row.update({f"{side}_cpu_ratio": ratio, f"{side}_cpu_low": lo, f"{side}_cpu_high": hi})
        rows.append(row)
    return pd.DataFrame(rows)


def refused(run) -> pd.DataFrame:
    """Configurations the stack refused or whose handshake failed, with OpenSSL's reason."""
    m = run.measurements
    bad = m[~m["verified"].astype(bool)]
    return pd.DataFrame({"pair": bad["algorithm"], "mode": bad["operation"].str.split(":").str[1],
                         "depth": bad["chain_depth"].astype(int),
                         "reason": bad["flags"].str.replace("^failed:", "", regex=True)}).reset_index(drop=True)


def what_fits(budget: pd.DataFrame) -> pd.DataFrame:
    """Per pair (depth and mode as measured): does the handshake fit each protocol profile?"""
    out = []
    for r in budget.itertuples():
        failed = bool(r.hard_failure)
        out.append({"pair": r.pair, "depth": r.depth, "mode": r.mode,
                    "TCP initcwnd 10": "fails" if failed else ("fits" if r.tcp_extra_rtt == 0 else f"+{r.tcp_extra_rtt} RTT"),
                    "QUIC (3x amplification)": "fails" if failed else ("fits" if r.quic_extra_rtt == 0 else f"+{r.quic_extra_rtt} RTT"),
                    "mutual TLS (client flight)": ("fails" if failed else ("fits" if r.client_extra_rtt == 0
                                                                          else f"+{r.client_extra_rtt} RTT"))
                    if r.mode == "mutual" else "n/a"})
    return pd.DataFrame(out)


# --------------------------------------------------------------------------- KEMs beside the handshake


def kem_table(ops, groups: Iterable[str] = ()) -> pd.DataFrame:
    """Every KEM of the operations run (each backend it was measured through), then each hybrid group
    as the sum of its parts: keygen / encaps / decaps (µs, harness call removed), public key and
    ciphertext bytes, and whether TLS 1.3 could carry it: the key-share limit, OpenSSL's ClientHello
    and ServerHello limits given the rest of a minimal hello, and whether this OpenSSL offers it as a
    TLS group at all."""
    offered = {g.lower() for g in tls.capabilities()["groups"]}
    limit = {m: n for m, n, _ in LIMITS}
    kems = ops.sizes[ops.sizes["ciphertext_bytes"].notna()][["algorithm", "backend"]].drop_duplicates()
    entries = [(f"{a}@{b}", [f"{a}@{b}"]) for a, b in kems.itertuples(index=False)]
    entries += [(f"{g} (sum of parts)", [f"{p}@{KEM_BACKENDS[p]}" for p in GROUP_PARTS[g]])
                for g in map(tls.display_group, groups) if len(GROUP_PARTS.get(g, [])) > 1]
    rows = []
    for label, parts in entries:
        pk = sum(_size(ops, n, "public_key_bytes") for n in parts)
        ct = sum(_size(ops, n, "ciphertext_bytes") for n in parts)
        msgs = predict_messages(tls.Config("X25519", "ECDSA-P256"), pk, ct, [0], [0], 0)
        body = msgs.set_index("message")["message_bytes"] - HANDSHAKE_HEADER - 32  # minus X25519's share
        checks = [("public key", pk, "key_share entry"), ("ciphertext", ct, "key_share entry"),
                  ("ClientHello body", int(body["client_hello"]), "client_hello"),
                  ("ServerHello body", int(body["server_hello"]), "server_hello")]
        reasons = [f"{what} {n} B > {limit[key]} B" for what, n, key in checks if n > limit[key]]
        name, _, backend = label.partition("@")
        group = name.replace(" (sum of parts)", "")
        rows.append({"kem": name, "backend": backend or "+".join(sorted({p.split("@")[1] for p in parts})),
                     "public_key_bytes": pk, "ciphertext_bytes": ct,
                     **{f"{op}_us": sum(_op(ops, n, op)[0] for n in parts) / 1e3 for op in ("keygen", "encaps", "decaps")},
                     "tls_group_in_openssl": tls.GROUPS.get(group, group).lower() in offered,
                     "tls_can_carry": "no: " + "; ".join(reasons) if reasons else "yes"})
    return pd.DataFrame(rows)


def kem_families(names: Iterable[str]) -> list[str]:
    """Scheme families of algorithm names, in order: the name without its parameter set (HQC-128 -> HQC)."""
    return list(dict.fromkeys(re.split(r"-(?=\d)", str(n))[0] for n in names))


def describe_extra_kems(extra_kems: Iterable[str]) -> str:
    """Which other notebooks' parameters (the notebook's parameters cell and its ``notebooks/params`` file) name a
    member of each family of `extra_kems` beyond ML-KEM, read from those files."""

    import yaml


    def strings(x):
        return [x] if isinstance(x, str) else [s for v in (x.values() if isinstance(x, dict) else x) for s in strings(v)] \
            if isinstance(x, (dict, list)) else []

    families = [f for f in kem_families(extra_kems) if f != "ML-KEM"]
    seen: dict[str, list[str]] = {f: [] for f in families}
    for nb in sorted(paths.NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")):
        cells = [c for c in json.loads(nb.read_text())["cells"] if "parameters" in c["metadata"].get("tags", [])]
        names = {n.value for c in cells for n in ast.walk(ast.parse("".join(c["source"])))
                 if isinstance(n, ast.Constant) and isinstance(n.value, str)}
        full = paths.NOTEBOOKS / "params" / f"{nb.stem}.yaml"
        names |= set(strings(yaml.safe_load(full.read_text()))) if full.exists() else set()
        for f in set(kem_families(names)) & set(seen) if nb.stem != TOPIC else ():
            seen[f].append(nb.stem)
    return ("KEMs beyond ML-KEM here: " + formatting.markdown("; ".join(
        f"{f} ({'also in ' + ', '.join(seen[f]) if seen[f] else 'in no other notebook'})" for f in families))
            + "." if families else "No KEM beyond ML-KEM is measured here (`extra_kems`).")


# --------------------------------------------------------------------------- published evidence


#: What our number set beside a published one is (the reference's ``ours`` key, before any ``:mode``).
OURS = {"quic_s1": "the model's QUIC server flight (CRYPTO bytes)", "quic_c2": "the model's QUIC client flight "
        "(CRYPTO bytes)", "signature_bytes": "a signature as measured", "root_der": "our root certificate (DER)"}
#: The chain depth of our handshakes set beside published ones.
PUBLISHED_DEPTH = 1
#: Back references in the reference's notes ("as above"), replaced by the note they point at.
_ABOVE = re.compile(r"^\s*(?:as above|same setting as the row above)\W*", re.IGNORECASE)


def recorded_differences(reference: pd.DataFrame) -> list[str]:
    """Each published row's recorded difference from our setting (its ``note`` in ``data/reference``), a note
    that points at the row above replaced by that row's note (a table's rows stand alone)."""
    out: list[str] = []
    for note in reference["note"]:
        text = "" if pd.isna(note) else str(note).strip()
        if out and _ABOVE.match(text):
            rest = _ABOVE.sub("", text).strip(" ()")
            text = out[-1] + (f" ({rest})" if rest and rest.lower() not in out[-1].lower() else "")
        out.append(text)
    return out


def authentication(key, difference: str) -> str:
    """How each side authenticates, for a row whose number of ours is a handshake (``key`` ``quic_*:mode``): the
    source's, as its recorded difference names it, against our X.509 chains; "" for other rows."""
    if not isinstance(key, str) or ":" not in key:
        return ""
    theirs = "raw public keys" if "raw public key" in difference.lower() else (
        "X.509 chain" if "x.509" in difference.lower() else "not stated")
    return f"theirs: {theirs}; ours: X.509 chain of depth {PUBLISHED_DEPTH} ({key.split(':')[1]})"


def published_beside_ours(reference: pd.DataFrame, budget: pd.DataFrame, certs: pd.DataFrame, ops) -> pd.DataFrame:
    """Each published number as a ratio to its source's own baseline, beside ours for the same question, each row
    labelled with what our number is (``ours_is``), how each side authenticates (``authentication``, handshake
    rows) and every other recorded difference (``differs``, from the reference's notes)."""
    model = budget.set_index(["pair", "mode", "depth"])
    der = certs.set_index("signature")

    def ours(key, subject):
        if not isinstance(key, str) or not isinstance(subject, str):
            return np.nan
        if key == "root_der":
            return float(der.loc[subject, "root"]) if subject in der.index else np.nan
        if key == "signature_bytes":
            return float(signature_bytes(ops, subject)) if subject in SIGNATURE_OPS else np.nan
        column, mode = key.split(":")
        at = (subject, mode, PUBLISHED_DEPTH)
        return float(model.loc[at, column]) if at in model.index else np.nan

    rows = []
    for r, differs in zip(reference.itertuples(), recorded_differences(reference)):
        mine, base = ours(r.ours, r.subject), ours(r.ours, r.baseline)
        rows.append({"source": r.source, "quantity": r.quantity, "subject": r.subject, "baseline": r.baseline,
                     "published": r.value, "published_baseline": r.baseline_value,
                     "published_ratio": r.value / r.baseline_value, "ours": mine, "ours_baseline": base,
                     "our_ratio": mine / base, "ours_over_published": mine / r.value,
                     "ours_is": OURS.get(str(r.ours).split(":")[0], "none of ours") if isinstance(r.ours, str)
                     else "none of ours", "authentication": authentication(r.ours, differs), "differs": differs})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- figures


@plotting.styled
def plot_first_flight(budget: pd.DataFrame, mode: str = "server-auth", width: float = plotting.FULL_WIDTH):
    """The server's first flight per pair and chain depth, against TCP's initial window and the QUIC allowance."""
    df = budget[budget["mode"] == mode].assign(chain=lambda d: "depth " + d["depth"].astype(str))
    fig = plotting.grouped_bars(df, category="pair", group="chain", value="S1", log=False, width=width,
                                ylabel="server's first flight (bytes on the wire)")
    ax = fig.axes[0]
    for limit, text, colour, style in ((TCP_SEGMENT * TCP_INITCWND, f"TCP initcwnd {TCP_INITCWND} x {TCP_SEGMENT} B",
                                        "0.2", "--"),
                                       (QUIC_AMPLIFICATION * QUIC_INITIAL, f"QUIC {QUIC_AMPLIFICATION} x {QUIC_INITIAL} B",
                                        "0.5", ":")):
        if plotting.categories_on_y(ax):  # bars along x (a narrow figure)
            ax.axvline(limit, color=colour, lw=0.8, ls=style)
            ax.annotate(text, (limit, 1.0), xycoords=("data", "axes fraction"), fontsize=plotting.SMALL_PT,
                        rotation=90, xytext=(2, -2), textcoords="offset points", va="top")
        else:
            ax.axhline(limit, color=colour, lw=0.8, ls=style)
            ax.annotate(text, (0, limit), fontsize=plotting.SMALL_PT, xytext=(0, 2), textcoords="offset points")
    return fig


@plotting.styled
def plot_rates(rates: pd.DataFrame, width: float = plotting.FULL_WIDTH):
    """Handshakes per second per core relative to the baseline, with intervals where the rows have them."""
    df = rates.assign(config=lambda d: d["mode"] + ", depth " + d["depth"].astype(str))
    fig = plotting.grouped_bars(df, category="pair", group="config", value="vs_baseline", low="vs_baseline_low",
                                high="vs_baseline_high", log=False, width=width,
                                ylabel=f"handshakes/s per core vs {BASELINE[0]} + {BASELINE[1]}")
    ax = fig.axes[0]
    (ax.axvline if plotting.categories_on_y(ax) else ax.axhline)(1.0, color="0.3", lw=0.8, ls=":")
    return fig


# --------------------------------------------------------------------------- prose and numbers


def describe_build(builds: Sequence[dict]) -> str:
    """How long the runner's build took: the last build from nothing (cold) and the last build."""
    if not builds:
        return "No build of the runner is recorded here (it was built before pqlab kept a record): its build time is unknown."

    def one(b: dict) -> str:
        load = f", load average {b['load_before']:.1f} before it started" if b.get("load_before") is not None else ""
        return f"**{b['seconds']:.0f} s** on {b['cores']} cores{load}, finished {b['finished_at']}"

    cold = [b for b in builds if b["cold"]]
    text = (f"Built from nothing (cold), the TLS runner ({builds[-1]['openssl_version']}) took {one(cold[-1])}."
            if cold else "No cold build of the runner is recorded here; its first build time is unknown.")
    if not builds[-1]["cold"]:
        text += f" Its last build was incremental: {one(builds[-1])}."
    return text + f" Command: `{builds[-1]['command']}`. Other work on the machine slows a build: the load says how busy it was."


def describe_bytes_check(check: pd.DataFrame) -> str:
    worst = int(check["error"].abs().max()) if len(check) else 0
    n = check[["pair", "mode", "depth", "handshake"]].drop_duplicates().shape[0]
    verdict = "the model predicts every flight exactly" if worst == 0 else f"the largest error is {worst} bytes"
    return (f"Across {n} measured handshakes and {len(check)} flights, {verdict} "
            f"(largest absolute error: {worst} bytes).")


def describe_first_flight(budget: pd.DataFrame) -> str:
    srv = budget[(budget["mode"] == "server-auth")]
    if srv.empty:
        return ""
    lines = []
    base = srv[srv["pair"] == f"{BASELINE[0]} + {BASELINE[1]}"]
    for r in srv.sort_values("S1").itertuples():
        add = ""
        if not base.empty:
            b = base[base["depth"] == r.depth]
            if not b.empty:
                add = f" ({int(r.S1 - b['S1'].iloc[0]):+,} B against the baseline at the same depth)"
        fit = "fits" if r.tcp_extra_rtt == 0 else f"needs {r.tcp_extra_rtt} extra TCP round trip(s)"
        quic = "" if r.quic_extra_rtt == 0 else "; QUIC waits one round trip for address validation"
        hard = f"; **fails**: {r.hard_failure}" if r.hard_failure else ""
        lines.append(f"- {r.pair}, depth {r.depth}: {fmt_bytes(r.S1)}{add}, {fit}{quic}{hard}")
    return "\n".join(lines)


def numbers(build: dict | None, run, check: pd.DataFrame, rates: pd.DataFrame,
            pairs: Sequence[tuple[str, str]]) -> dict:
    """The closing note's numbers: the last cold build's time, the server's first flight for `pairs`
    (server-auth, depth 1), the model's largest byte error, and handshakes/s per core relative to the baseline."""
    m = run.measurements
    out = {"runner_cold_build_s": build["seconds"] if build else None,
           "model_byte_error_max": int(check["error"].abs().max()) if len(check) else None}
    for group, sig in pairs:
        key = f"{group} + {sig}"
        row = m[(m["algorithm"] == key) & (m["operation"] == "handshake:server-auth") & (m["chain_depth"] == 1)]
        name = slug(f"{group}_{sig}", lower=True)
        out[f"s1_bytes_{name}"] = int(row["bytes_s1"].iloc[0]) if len(row) and pd.notna(row["bytes_s1"].iloc[0]) else None
        r = rates[(rates["pair"] == key) & (rates["mode"] == "server-auth") & (rates["depth"] == 1)]
        out[f"rate_vs_baseline_{name}"] = float(r["vs_baseline"].iloc[0]) if len(r) else None
    return out


def write_closing_note(nums: dict, builds: Sequence[dict], pairs: Sequence[tuple[str, str]], rates: pd.DataFrame,
                       run_ids: Sequence[str]) -> str:
    lines = ["**Closing note.** " + describe_build(builds)]
    for group, sig in pairs:
        s1 = nums.get(f"s1_bytes_{slug(f'{group}_{sig}', lower=True)}")
        r = rates[(rates["pair"] == f"{group} + {sig}") & (rates["mode"] == "server-auth") & (rates["depth"] == 1)]
        rate = (f"; {fmt_count(r['per_s'].iloc[0])} handshakes/s per core, "
                f"{fmt_factor_ci(*r[['vs_baseline', 'vs_baseline_low', 'vs_baseline_high']].iloc[0])} the baseline's "
                + (f"({CONFIDENCE:.0%} interval)" if np.isfinite(r["vs_baseline_low"].iloc[0]) else "(no interval: one "
                   "process, without rounds)")) if len(r) else ""
        lines.append(f"- {group} + {sig}: server's first flight **{fmt_bytes(s1) if s1 is not None else 'not measured'}**"
                     f" (depth 1){rate}")
    err = nums.get("model_byte_error_max")
    lines.append(f"- The model's largest byte error over every measured flight: **{err if err is not None else 'n/a'}**.")
    lines.append(f"- Runs: {', '.join(run_ids)} (the machine is in the run context above).")
    return "\n".join(lines)
