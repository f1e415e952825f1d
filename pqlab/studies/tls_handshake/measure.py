"""What notebook 06 measures, and where: the handshake matrix it plans for the TLS runner
(:mod:`pqlab.runners.tls`), the KEM and signature operations behind it, measured by pqlab
(:func:`pqlab.benchmark.bench`), and the sizes the budget model takes from that operations run (key shares,
signatures, certificate chains)."""
from __future__ import annotations

from collections.abc import Iterable, Sequence

import pandas as pd

from pqlab.benchmark import bench
from pqlab.core.errors import UnknownName
from pqlab.runners import tls
from pqlab.runners.rounds import ROUNDS

TOPIC = "06_tls_handshake"

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


# --------------------------------------------------------------------------- inputs from measurements


def plan_matrix(groups: Iterable[str], signatures: Iterable[str], depths: Iterable[int] = (1,),
                modes: Iterable[str] = ("server-auth",)) -> list[tls.Config]:
    """Every group x signature x depth x mode (server-auth, mutual, resumed), names checked first."""
    groups, signatures = list(groups), list(signatures)
    tls.check_names(groups, signatures)
    for g in groups:
        if tls.display_group(g) not in GROUP_PARTS:
            raise UnknownName("group with a cost model", g, GROUP_PARTS,
                              f"Choose from {', '.join(GROUP_PARTS)}")
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
        raise ValueError(f"handshake_pairs must be \"all\" or a list of [group, signature] pairs, "
                         f"not {pairs!r}")
    configs: list[tls.Config] = []
    for group, signature in pairs:
        configs += plan_matrix([group], [signature], depths, modes)
    return configs


def operation_names(groups: Iterable[str], signatures: Iterable[str],
                    extra_kems: Iterable[str] = ()) -> list[str]:
    """The ``name@backend`` list :func:`measure_operations` measures."""
    names = []
    for g in groups:
        names += [f"{p}@{KEM_BACKENDS[p]}" for p in GROUP_PARTS[tls.display_group(g)]]
    for s in signatures:
        names += list(SIGNATURE_OPS[s])
    names += [f"{k}@liboqs" for k in extra_kems]
    return list(dict.fromkeys(names))


def measure_operations(groups, signatures, extra_kems=(), *, budget_s: float = 0.2, min_samples: int = 5,
                       target_rel_ci: float | None = 0.01, rounds: int | None = None,
                       max_rounds: int | None = None, progress: bool = True):
    """The KEM and signature operations behind the matrix, measured by pqlab in rounds (a saved run;
    :func:`pqlab.benchmark.bench`: `rounds` first-stage rounds, default bench's; more until `target_rel_ci`,
    at most `max_rounds`)."""

    return bench(operation_names(groups, signatures, extra_kems), budget_s=budget_s, min_samples=min_samples,
                 target_rel_ci=target_rel_ci, rounds=ROUNDS if rounds is None else rounds,
                 max_rounds=max_rounds, study=TOPIC, progress=progress,
                 allow_nonconforming=True)  # its caveat: conformance.caveat(run)


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
