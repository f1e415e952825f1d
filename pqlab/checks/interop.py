"""Agreement between implementations of one standard: a signature made by one must verify under the
other, and a tampered one must not; round-3 SPHINCS+ and FIPS 205 SLH-DSA must *not* verify each other,
and where exactly they differ is measured (:func:`check_round3_internal`).

    checks = check_agreement(agreement_pairs())   # every ordered pair of implementations of ML-DSA-44 ...
    describe_agreement(checks, check_round3_internal(["SHA2-128f", "SHA2-192f"]))
"""
from __future__ import annotations

import importlib
from collections.abc import Iterable, Sequence

import pandas as pd

from pqlab.backends import algorithms
from pqlab.backends.algorithms import random_message, resolve
from pqlab.backends.base import Algorithm

PURE_BACKEND = "pure-python"


def round3_equivalent(name: str) -> str | None:
    """The liboqs round-3 SPHINCS+ set doing the same work as a FIPS 205 SLH-DSA set (the simple
    construction)."""
    if not name.startswith("SLH-DSA-"):
        return None
    return "SPHINCS+-" + name[len("SLH-DSA-"):] + "-simple"


def _raw_public(pk) -> bytes:
    return pk if isinstance(pk, (bytes, bytearray)) else pk.public_bytes_raw()


def _public_for(algo: Algorithm, raw: bytes):
    """A public key in `algo`'s own form, from the standard raw encoding: bytes for liboqs,
    pqcrypto and pure Python; a key object for cryptography's raw-key signatures (its adapter
    names the module and private-key class, e.g. mldsa / MLDSA44PrivateKey)."""
    if algo.backend != "cryptography":
        return raw

    module = importlib.import_module(f"cryptography.hazmat.primitives.asymmetric.{algo.module}")
    return getattr(module, algo.cls.replace("PrivateKey", "PublicKey")).from_public_bytes(raw)


def cross_verify(signer: Algorithm | str, verifier: Algorithm | str, message: bytes) -> dict:
    """Keys and a signature from `signer`, checked by `verifier` with the same public key.

    Returns verifies (the genuine signature is accepted) and rejects_tampered (a signature with
    one bit flipped is refused)."""
    signer, verifier = resolve([signer, verifier])
    pk, sk = signer.generate()
    sig = signer.signer(sk)(message)
    verify = verifier.verifier(_public_for(verifier, _raw_public(pk)))
    bad = sig[: len(sig) // 2] + bytes([sig[len(sig) // 2] ^ 1]) + sig[len(sig) // 2 + 1:]
    return {"verifies": verify(message, sig) is True, "rejects_tampered": verify(message, bad) is not True}


def agreement_pairs(ml_dsa: str = "ML-DSA-44",
                    slh_dsa: Sequence[str] = ("SLH-DSA-SHA2-128f", "SLH-DSA-SHAKE-128f"),
                    pure_backend: str = PURE_BACKEND) -> list[tuple[str, str, bool]]:
    """(signer, verifier, expected) pairs: every ordered pair of ML-DSA implementations; pure-Python
    SLH-DSA against every native SLH-DSA; liboqs's round-3 SPHINCS+ against FIPS 205 SLH-DSA
    (expected to fail: see :func:`round3_note`)."""
    pairs = []
    backends = algorithms.backends_of(ml_dsa)
    pairs += [(f"{ml_dsa}@{a}", f"{ml_dsa}@{b}", True) for a in backends for b in backends if a != b]
    for name in slh_dsa:
        native = [b for b in algorithms.backends_of(name) if b != pure_backend]
        if pure_backend in algorithms.backends_of(name):
            for b in native:
                pairs += [(f"{name}@{pure_backend}", f"{name}@{b}", True),
                          (f"{name}@{b}", f"{name}@{pure_backend}", True)]
        old = round3_equivalent(name)
        if native and old in algorithms.names():
            pairs += [(f"{old}@liboqs", f"{name}@{native[0]}", False),
                      (f"{name}@{native[0]}", f"{old}@liboqs", False)]
    return pairs


ROUND3_VS_FIPS205 = (
    "liboqs {version} ships SPHINCS+ as submitted in round 3 (v3.1), not FIPS 205 SLH-DSA. Keys and "
    "signatures have the same sizes and layout, but (1) pure SLH-DSA signs M' = 0x00 || len(ctx) || ctx || M "
    "(a domain separator between pure and pre-hash signing, with a context string) instead of M, and (2) "
    "FIPS 205 reads the FORS indices from the message digest most-significant bit first, where the round-3 "
    "reference code read them least-significant bit first (NIST, pqc-forum, May 2023). So a round-3 "
    "signature cannot verify as SLH-DSA, nor the reverse.")


def round3_note() -> str:
    """Why round-3 SPHINCS+ and FIPS 205 SLH-DSA refuse each other's signatures, naming the liboqs in use."""
    version = algorithms.get("SPHINCS+-SHA2-128f-simple", "liboqs").library_version
    return ROUND3_VS_FIPS205.format(version=version)


def check_agreement(pairs: Sequence[tuple[str, str, bool]] | None = None, message_bytes: int = 100,
                    seed: int = 0) -> pd.DataFrame:
    """Cross-verification of each (signer, verifier, expected) pair on a random message."""
    message = random_message(message_bytes, seed)
    rows = []
    for signer, verifier, expected in (pairs if pairs is not None else agreement_pairs()):
        out = cross_verify(signer, verifier, message)
        rows.append({"signer": signer, "verifier": verifier, "expected": expected, **out,
                     "as_expected": out["verifies"] == expected and out["rejects_tampered"]})
    return pd.DataFrame(rows)


def check_round3_internal(sets: Iterable[str] = ("SHA2-128f", "SHA2-192f"), message_bytes: int = 100,
                          seed: int = 0) -> pd.DataFrame:
    """Where exactly round-3 SPHINCS+ and FIPS 205 differ, measured: a liboqs round-3 signature is
    checked with slh-dsa's FIPS 205 *pure* verification and with its *internal* one (slh_verify_internal,
    no M' prefix).  The internal check passes only for sets whose FORS indices are whole bytes (a = 8:
    the 192f sets), where the two bit orders coincide."""
    import slhdsa
    from slhdsa import PublicKey

    message = random_message(message_bytes, seed)
    rows = []
    for s in sets:
        h, rest = s.split("-")
        par = getattr(slhdsa, f"{h.lower()}_{rest}")
        algo = algorithms.get(f"SPHINCS+-{s}-simple", "liboqs")
        pk, sk = algo.generate()
        sig = algo.signer(sk)(message)
        pub = PublicKey.from_digest(pk, par)
        rows.append({"round3_set": algo.name, "fors_trees_k": par.k, "fors_height_a": par.a,
                     "verifies_as_slh_dsa_pure": bool(pub.verify_pure(message, sig)),
                     "verifies_as_slh_dsa_internal": bool(pub.verify(message, sig))})
    return pd.DataFrame(rows)


def describe_agreement(checks: pd.DataFrame, internal: pd.DataFrame | None = None) -> str:
    """Markdown summary of the cross-verification checks."""
    same = checks[checks["expected"]]
    diff = checks[~checks["expected"]]
    ok_same = int((same["verifies"] & same["rejects_tampered"]).sum())
    text = [f"- Same standard: {ok_same} of {len(same)} signer → verifier pairs cross-verify "
            f"(and reject a tampered signature)."]
    failed = same[~(same["verifies"] & same["rejects_tampered"])]
    if not failed.empty:
        text.append("  **Disagreement:** " + "; ".join(f"{r.signer} → {r.verifier}"
                                                       for r in failed.itertuples()))
    if not diff.empty:
        text.append(f"- Round-3 SPHINCS+ vs FIPS 205 SLH-DSA: {int((~diff['verifies']).sum())} of "
                    f"{len(diff)} pairs refuse each other's signatures, as expected. {round3_note()}")
    if internal is not None and not internal.empty:
        ok = internal[internal["verifies_as_slh_dsa_internal"]]
        others = internal[~internal['verifies_as_slh_dsa_internal']]
        text.append("- Without the M' prefix (FIPS 205's internal verification) a round-3 signature verifies "
                    "for " + (", ".join(f"{r.round3_set} (a = {r.fors_height_a})" for r in ok.itertuples())
                              or "no set")
                    + " and not for "
                    + (", ".join(f"{r.round3_set} (a = {r.fors_height_a})" for r in others.itertuples())
                       or "any other")
                    + ": with a = 8 each FORS index is one whole byte, so both bit orders read the same "
                    "indices.")
    return "\n".join(text)
