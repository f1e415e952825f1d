"""The TLS records each side of a handshake wrote, as the TLS runner reports them: their flights, message
types and wire bytes (RFC 8446), and the signature length a CertificateVerify carries."""
from __future__ import annotations

from collections.abc import Sequence

#: TLS record content types and handshake message types (RFC 8446) as the runner reports them.
CONTENT_TYPES = {20: "change_cipher_spec", 21: "alert", 22: "handshake", 23: "application_data"}
HANDSHAKE_TYPES = {1: "client_hello", 2: "server_hello", 4: "new_session_ticket", 8: "encrypted_extensions",
                   11: "certificate", 13: "certificate_request", 15: "certificate_verify", 20: "finished",
                   24: "key_update"}
#: Flights: C1 the ClientHello, S1 the server's first flight (ServerHello .. Finished), C2 the
#: client's second flight (.. Finished), S2 what the server sends after the handshake (tickets).
FLIGHTS = ("C1", "S1", "C2", "S2")


def flight_of(side: str, messages: Sequence[Sequence[int]]) -> list[str]:
    """The flight (C1, S1, C2, S2 or 'after') of each message a side wrote, in order."""
    flights, done = [], False
    for content_type, hs_type, *_ in messages:
        if content_type != 22 and content_type != 20:
            flights.append("after")
            continue
        if side == "client":
            flights.append("C1" if hs_type == 1 else ("after" if done else "C2"))
        else:
            flights.append("S2" if done else "S1")
        if content_type == 22 and hs_type == 20:
            done = True
    return flights


def message_rows(result: dict, handshake: dict) -> list[dict]:
    """One row per message either side wrote in one handshake: flight, type, length, wire bytes."""
    rows = []
    for side in ("client", "server"):
        msgs = handshake.get(f"{side}_messages") or []
        for (ct, hs, length, wire, *ext), flight in zip(msgs, flight_of(side, msgs)):
            rows.append({"index": handshake["index"], "from": side, "flight": flight,
                         "message": (HANDSHAKE_TYPES.get(hs, f"type {hs}") if ct == 22
                                     else CONTENT_TYPES.get(ct, str(ct))),
                         "message_bytes": length, "wire_bytes": wire,
                         "extensions": " ".join(f"{t}:{n}" for t, n in (ext[0] if ext else []))})
    return rows


def flight_bytes(handshake: dict) -> dict:
    """Wire bytes per flight of one handshake (C1, S1, C2, S2)."""
    out = dict.fromkeys(FLIGHTS, 0)
    for side in ("client", "server"):
        msgs = handshake.get(f"{side}_messages") or []
        for (_ct, _hs, _len, wire, *_), flight in zip(msgs, flight_of(side, msgs)):
            if flight in out:
                out[flight] += wire
    return out


def cv_signature_bytes(handshake: dict, side: str = "server") -> int | None:
    """The signature length in `side`'s CertificateVerify (its message minus 8 bytes of framing)."""
    for ct, hs, length, _wire, *_ in handshake.get(f"{side}_messages") or []:
        if ct == 22 and hs == 15:
            return length - 8  # 4 handshake header + 2 scheme + 2 length
    return None
