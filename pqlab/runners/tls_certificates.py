"""Certificate chains of the TLS runner made with ``cryptography``: root -> intermediate -> leaf, for the
server and the client.

Keys are derived from fixed seeds where ``cryptography`` can (so DER sizes are reproducible), and every
certificate carries the extensions the runner's ``mkchain`` writes too.  :mod:`pqlab.runners.tls` builds the
chains of key types ``cryptography`` cannot sign with (SLH-DSA) with the runner's OpenSSL, and reads every
size from the files.
"""
from __future__ import annotations

import datetime as dt
import hashlib
from pathlib import Path

NOT_BEFORE = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
NOT_AFTER = dt.datetime(2036, 1, 1, tzinfo=dt.UTC)
HOST = "pqlab.test"
CHAIN_FILES = ("root.der", "intermediate.der", "server-1.der", "server-2.der", "client-1.der", "client-2.der",
               "server.key.der", "client.key.der")


def _seed(algorithm: str, role: str) -> bytes:
    """A fixed 32-byte seed per algorithm and role: test keys, reproducible sizes (not secrets)."""
    return hashlib.sha256(f"pqlab tls {algorithm} {role}".encode()).digest()


def _private_key(algorithm: str, role: str):
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519, mldsa, rsa

    seed = _seed(algorithm, role)
    if algorithm == "RSA-2048":
        return rsa.generate_private_key(65537, 2048)  # no seeded RSA in cryptography; the size is fixed
    if algorithm == "ECDSA-P256":
        order = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551
        return ec.derive_private_key(int.from_bytes(seed) % (order - 1) + 1, ec.SECP256R1())
    if algorithm == "Ed25519":
        return ed25519.Ed25519PrivateKey.from_private_bytes(seed)
    classes = {"ML-DSA-44": mldsa.MLDSA44PrivateKey, "ML-DSA-65": mldsa.MLDSA65PrivateKey,
               "ML-DSA-87": mldsa.MLDSA87PrivateKey}
    return classes[algorithm].from_seed_bytes(seed)


def _certificate(algorithm: str, role: str, serial: int, key, issuer=None):
    """One X.509 v3 certificate with the extensions the runner's mkchain writes too."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    cn = {"root": f"pqlab {algorithm} root", "intermediate": f"pqlab {algorithm} intermediate",
          "server": HOST, "client": "pqlab client"}[role]
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])
    issuer_cert, issuer_key = issuer if issuer else (None, key)
    ca = role in ("root", "intermediate")
    b = (x509.CertificateBuilder().subject_name(subject)
         .issuer_name(issuer_cert.subject if issuer_cert else subject)
         .public_key(key.public_key()).serial_number(serial)
         .not_valid_before(NOT_BEFORE).not_valid_after(NOT_AFTER)
         .add_extension(x509.BasicConstraints(ca=ca, path_length=0 if role == "intermediate" else None),
                        critical=True)
         .add_extension(x509.KeyUsage(digital_signature=not ca, content_commitment=False,
                                      key_encipherment=False, data_encipherment=False, key_agreement=False,
                                      key_cert_sign=ca, crl_sign=ca, encipher_only=False,
                                      decipher_only=False),
                        critical=True))
    if role == "server":
        b = (b.add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
             .add_extension(x509.SubjectAlternativeName([x509.DNSName(HOST)]), critical=False))
    elif role == "client":
        b = b.add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
    b = b.add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
    if issuer_cert is not None:
        b = b.add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_key.public_key()),
                            critical=False)
    if algorithm in ("RSA-2048",):
        return b.sign(issuer_key, hashes.SHA256())
    if algorithm == "ECDSA-P256":
        return b.sign(issuer_key, hashes.SHA256(), ecdsa_deterministic=True)
    return b.sign(issuer_key, None)


def _write_chain_with_cryptography(algorithm: str, folder: Path) -> None:
    from cryptography.hazmat.primitives import serialization

    keys = {role: _private_key(algorithm, role) for role in ("root", "intermediate", "server", "client")}
    root = _certificate(algorithm, "root", 1, keys["root"])
    inter = _certificate(algorithm, "intermediate", 2, keys["intermediate"], (root, keys["root"]))
    certs = {"root.der": root, "intermediate.der": inter,
             "server-1.der": _certificate(algorithm, "server", 3, keys["server"], (root, keys["root"])),
             "server-2.der": _certificate(algorithm, "server", 4, keys["server"],
                                          (inter, keys["intermediate"])),
             "client-1.der": _certificate(algorithm, "client", 5, keys["client"], (root, keys["root"])),
             "client-2.der": _certificate(algorithm, "client", 6, keys["client"],
                                          (inter, keys["intermediate"]))}
    for name, cert in certs.items():
        (folder / name).write_bytes(cert.public_bytes(serialization.Encoding.DER))
    for role in ("server", "client"):
        (folder / f"{role}.key.der").write_bytes(keys[role].private_bytes(
            serialization.Encoding.DER, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
