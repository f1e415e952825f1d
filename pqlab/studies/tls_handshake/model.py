"""Notebook 06's budget model: every message and record of one TLS 1.3 handshake, predicted from sizes.

From measured sizes (key shares, ciphertexts, DER certificates, signatures) and the TLS 1.3 framing of RFC
8446 it predicts every handshake message and record, hence the bytes per flight; then whether the server's
first flight fits a TCP initial window of 10 x 1460 bytes, the QUIC anti-amplification allowance (3 x what the
client sent, its Initials padded to 1,200 bytes), the extra round trips each costs and the hard limits of the
stack; and it sets that prediction beside every measured handshake (:func:`compare_bytes`).

Framing the model knows about the stack (OpenSSL 3.6 as configured by the runner): TLS 1.3 only, one group and
one signature scheme offered, SNI, middlebox compatibility (a 32-byte session id and a ChangeCipherSpec record
per side), the extensions OpenSSL sends (``CLIENT_EXTENSIONS``), records of at most 16,384 bytes, AEAD records
adding 5 + 1 + 16 bytes.  Tickets (NewSessionTicket) are the server's own encoding of its state: their size is
read from the handshake (it is an input of the resumed ClientHello's prediction), not predicted.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd

from pqlab.runners import tls
from pqlab.studies.tls_handshake.measure import _inputs, share_sizes

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
            ("extended_master_secret", 4), ("signature_algorithms", 4 + 2 + 2),
            ("supported_versions", 4 + 1 + 2), ("psk_key_exchange_modes", 4 + 1 + 1),
            ("key_share", 4 + 2 + 2 + 2 + share)]
    if ticket is not None:  # one identity (ticket + obfuscated age) and one binder
        ext.append(("pre_shared_key", 4 + 2 + 2 + ticket + 4 + 2 + 1 + hash_bytes))
    return ext


def wire_bytes(length: int, encrypted: bool) -> int:
    """Bytes on the wire of one handshake message: its records' headers (and AEAD overhead) added."""
    records = max(1, math.ceil(length / MAX_FRAGMENT))
    return length + records * (RECORD_HEADER + (AEAD_OVERHEAD if encrypted else 0))


def certificate_message(ders: Sequence[int]) -> int:
    """Certificate: header, empty request context, list length, per entry 3-byte length + DER + no
    extensions."""
    return HANDSHAKE_HEADER + 1 + 3 + sum(3 + d + 2 for d in ders)


def predict_messages(config: tls.Config, client_share: int, server_share: int, server_chain: Sequence[int],
                     client_chain: Sequence[int], signature_bytes: int,
                     client_signature_bytes: int | None = None, *, cipher: str = CLIENT_SUITES[0],
                     ticket_bytes: int | None = None) -> pd.DataFrame:
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
            ("server", "S1", "change_cipher_spec", 1, None),
            ("server", "S1", "encrypted_extensions", 6, True)]
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
            "quic_s1": quic_s1, "quic_c2": quic_c2, "quic_allowance": quic_allowance,
            "quic_extra_rtt": int(quic_s1 > quic_allowance),
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


#: The inputs :func:`compare_bytes` reads from each handshake itself: its column -> what it is (prose).
FROM_HANDSHAKE = {"cipher_from_handshake": "the negotiated cipher suite (it fixes the Finished length)",
                  "signature_from_handshake": "the length of the server's CertificateVerify signature",
                  "client_signature_from_handshake": "the length of the client's CertificateVerify signature",
                  "ticket_from_handshake": "the length of the ticket a resumed client offers"}


def compare_bytes(run, ops, certs: pd.DataFrame) -> pd.DataFrame:
    """Every measured handshake beside its prediction, flight by flight; ``error`` must be 0.

    Inputs per handshake that the model cannot know beforehand are taken from that handshake: the
    length of the CertificateVerify signature (variable for ECDSA's DER encoding), the client's where it
    signs, the ticket a resumed client offers, and the negotiated cipher suite (which fixes the Finished
    length).  Each row says which it took (``*_from_handshake``, :data:`FROM_HANDSHAKE`) and whether the
    signature read from the handshake differs from the size the model would use (``signature_differs``), so
    that a reader knows how much of an exact match holds by construction.
    """
    configs = {(r.algorithm, r.operation, int(r.chain_depth)): r for r in run.measurements.itertuples()}
    groups = list(dict.fromkeys(r.tls_group for r in configs.values()))
    shares = share_sizes(ops, groups)
    # config -> its inputs; the model's inputs -> flight bytes (handshakes repeat them)
    inputs_of, flights_of = {}, {}
    rows = []
    for s in run.samples.itertuples():
        m = configs[(s.algorithm, s.operation, int(s.chain_depth))]
        config = tls.Config(m.tls_group, m.tls_signature, int(m.chain_depth), bool(m.mutual), bool(m.resumed))
        if config not in inputs_of:
            inputs_of[config] = _inputs(config, shares, certs, ops)
        inputs = dict(inputs_of[config])
        own_signature = inputs["signature_bytes"]
        if not pd.isna(s.cv_signature_bytes):
            inputs["signature_bytes"] = int(s.cv_signature_bytes)
        client_sig = None if pd.isna(s.client_cv_signature_bytes) else int(s.client_cv_signature_bytes)
        ticket = None if pd.isna(s.ticket_bytes) else int(s.ticket_bytes)
        key = (config, inputs["signature_bytes"], client_sig, s.cipher, ticket)
        if key not in flights_of:
            msgs = predict_messages(config, **inputs, client_signature_bytes=client_sig, cipher=s.cipher,
                                    ticket_bytes=ticket)
            flights_of[key] = msgs.groupby("flight")["wire_bytes"].sum()
        predicted = flights_of[key]
        for flight in ("C1", "S1", "C2"):
            measured = int(getattr(s, f"bytes_{flight.lower()}"))
            rows.append({"pair": config.pair, "mode": config.mode, "depth": config.depth,
                         "handshake": s.sample, "flight": flight, "measured": measured,
                         "predicted": int(predicted.get(flight, 0)),
                         "error": measured - int(predicted.get(flight, 0)),
                         # the inputs read from this handshake itself (FROM_HANDSHAKE), not predicted
                         "cipher_from_handshake": isinstance(s.cipher, str) and bool(s.cipher),
                         "signature_from_handshake": not pd.isna(s.cv_signature_bytes),
                         "signature_differs": (not pd.isna(s.cv_signature_bytes)
                                               and int(s.cv_signature_bytes) != own_signature),
                         "client_signature_from_handshake": client_sig is not None,
                         "ticket_from_handshake": ticket is not None})

    return pd.DataFrame(rows)
