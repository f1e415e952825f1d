"""Notebook 06's tables beside the budget and CPU models: what each group adds over the classical one, the
configurations the stack refused, which handshakes fit each protocol profile, and every KEM of the operations
run with whether TLS 1.3 could carry it."""
from __future__ import annotations

import re
from collections.abc import Iterable

import pandas as pd

from pqlab.core.schema import convert_unit
from pqlab.measure.stats import ratio_ci
from pqlab.runners import tls
from pqlab.studies.tls_handshake.cpu import _op, _samples_of
from pqlab.studies.tls_handshake.measure import GROUP_PARTS, KEM_BACKENDS, _size
from pqlab.studies.tls_handshake.model import HANDSHAKE_HEADER, LIMITS, predict_messages


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
        row = {"group": tls.display_group(r.tls_group), "signature": r.tls_signature,
               "mode": r.operation.split(":")[1], "depth": int(r.chain_depth),
               "C1_added": int(r.bytes_c1 - b["bytes_c1"]), "S1_added": int(r.bytes_s1 - b["bytes_s1"])}
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
    out = pd.DataFrame({"pair": bad["algorithm"], "mode": bad["operation"].str.split(":").str[1],
                        "depth": bad["chain_depth"].astype(int),
                        "reason": bad["flags"].str.replace("^failed:", "", regex=True)})
    return out.reset_index(drop=True)




def what_fits(budget: pd.DataFrame) -> pd.DataFrame:
    """Per pair (depth and mode as measured): does the handshake fit each protocol profile?"""
    out = []
    for r in budget.itertuples():
        failed = bool(r.hard_failure)
        out.append({"pair": r.pair, "depth": r.depth, "mode": r.mode,
                    "TCP initcwnd 10": "fails" if failed else ("fits" if r.tcp_extra_rtt == 0
                                                               else f"+{r.tcp_extra_rtt} RTT"),
                    "QUIC (3x amplification)": "fails" if failed else ("fits" if r.quic_extra_rtt == 0
                                                                       else f"+{r.quic_extra_rtt} RTT"),
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
                     **{f"{op}_us": convert_unit(sum(_op(ops, n, op)[0] for n in parts), "ns", "µs")
                        for op in ("keygen", "encaps", "decaps")},
                     "tls_group_in_openssl": tls.GROUPS.get(group, group).lower() in offered,
                     "tls_can_carry": "no: " + "; ".join(reasons) if reasons else "yes"})
    return pd.DataFrame(rows)


def kem_families(names: Iterable[str]) -> list[str]:
    """Scheme families of algorithm names, in order: the name without its parameter set (HQC-128 -> HQC)."""
    return list(dict.fromkeys(re.split(r"-(?=\d)", str(n))[0] for n in names))
