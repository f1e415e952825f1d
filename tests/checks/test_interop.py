"""Interoperability between independent implementations, through pqlab's adapters.

ML-DSA: liboqs signs, OpenSSL (cryptography) verifies, and the reverse.
ML-KEM: the two keep different secret keys (liboqs the expanded 2400/3168-byte form, OpenSSL
the 64-byte FIPS 203 seed), so they meet through public keys: OpenSSL encapsulates to a liboqs
public key and liboqs decapsulates, and liboqs encapsulates to an OpenSSL public key and OpenSSL
decapsulates.  Classical: OpenSSL and PyCryptodome read each other's ciphertexts and signatures.
"""
from __future__ import annotations

import pytest
from cryptography.hazmat.primitives.asymmetric import mldsa, mlkem

from pqlab.backends.algorithms import get, random_message

MESSAGE = random_message(100, seed=11)


def flip(data: bytes, i: int | None = None) -> bytes:
    i = len(data) // 2 if i is None else i
    return data[:i] + bytes([data[i] ^ 1]) + data[i + 1:]


ML_DSA = ["44", "65", "87"]
ML_KEM = ["768", "1024"]


@pytest.mark.parametrize("level", ML_DSA)
def test_ml_dsa_liboqs_signs_openssl_verifies(level):
    name = f"ML-DSA-{level}"
    oqs_algo, ossl_algo = get(name, "liboqs"), get(name, "cryptography")
    pk, sk = oqs_algo.generate()
    sig = oqs_algo.signer(sk)(MESSAGE)
    ossl_pk = getattr(mldsa, f"MLDSA{level}PublicKey").from_public_bytes(pk)
    verify = ossl_algo.verifier(ossl_pk)
    assert verify(MESSAGE, sig) is True
    assert verify(MESSAGE, flip(sig)) is False
    assert verify(flip(MESSAGE), sig) is False


@pytest.mark.parametrize("level", ML_DSA)
def test_ml_dsa_openssl_signs_liboqs_verifies(level):
    name = f"ML-DSA-{level}"
    oqs_algo, ossl_algo = get(name, "liboqs"), get(name, "cryptography")
    pk, sk = ossl_algo.generate()
    sig = ossl_algo.signer(sk)(MESSAGE)
    verify = oqs_algo.verifier(pk.public_bytes_raw())
    assert verify(MESSAGE, sig) is True
    assert verify(MESSAGE, flip(sig)) is False
    assert verify(flip(MESSAGE), sig) is False


@pytest.mark.parametrize("level", ML_KEM)
def test_ml_kem_openssl_encapsulates_to_liboqs(level):
    name = f"ML-KEM-{level}"
    oqs_algo, ossl_algo = get(name, "liboqs"), get(name, "cryptography")
    pk, sk = oqs_algo.generate()
    ossl_pk = getattr(mlkem, f"MLKEM{level}PublicKey").from_public_bytes(pk)
    ct, ss = ossl_algo.encapsulator(ossl_pk)()
    decaps = oqs_algo.decapsulator(sk)
    assert len(ss) == 32 and decaps(ct) == ss
    assert decaps(flip(ct)) != ss  # implicit rejection: a tampered ciphertext gives another secret


@pytest.mark.parametrize("level", ML_KEM)
def test_ml_kem_liboqs_encapsulates_to_openssl(level):
    name = f"ML-KEM-{level}"
    oqs_algo, ossl_algo = get(name, "liboqs"), get(name, "cryptography")
    pk, sk = ossl_algo.generate()
    ct, ss = oqs_algo.encapsulator(pk.public_bytes_raw())()
    decaps = ossl_algo.decapsulator(sk)
    assert len(ss) == 32 and decaps(ct) == ss
    assert decaps(flip(ct)) != ss


@pytest.mark.parametrize("name", ["AES-256-GCM", "AES-256-CBC", "ChaCha20-Poly1305"])
def test_symmetric_ciphertexts_cross_backends(name):
    """Both adapters frame a message the same way (IV/nonce first, tag last): each reads the other's."""
    a, b = get(name, "cryptography"), get(name, "pycryptodome")
    key = a.generate()
    for message in (b"", MESSAGE, random_message(1000, seed=2)):
        assert b.decryptor(key)(a.encryptor(key)(message)) == message
        assert a.decryptor(key)(b.encryptor(key)(message)) == message


def test_rsa_pkcs1v15_encryption_cross_backends():
    from Crypto.PublicKey import RSA
    from cryptography.hazmat.primitives import serialization as ser

    a, b = get("RSA-2048-PKCS1v15-enc", "cryptography"), get("RSA-2048-PKCS1v15-enc", "pycryptodome")
    pk, sk = a.generate()
    dome_sk = RSA.import_key(sk.private_bytes(ser.Encoding.DER, ser.PrivateFormat.PKCS8, ser.NoEncryption()))
    assert b.decryptor(dome_sk)(a.encryptor(pk)(MESSAGE)) == MESSAGE
    assert a.decryptor(sk)(b.encryptor(dome_sk.public_key())(MESSAGE)) == MESSAGE


def test_ecdsa_p256_signatures_cross_backends():
    from Crypto.PublicKey import ECC
    from cryptography.hazmat.primitives import serialization as ser

    a, b = get("ECDSA-P256", "cryptography"), get("ECDSA-P256", "pycryptodome")
    pk, sk = a.generate()
    dome_sk = ECC.import_key(sk.private_bytes(ser.Encoding.DER, ser.PrivateFormat.PKCS8, ser.NoEncryption()))
    assert b.verifier(dome_sk.public_key())(MESSAGE, a.signer(sk)(MESSAGE)) is True
    sig = b.signer(dome_sk)(MESSAGE)
    assert a.verifier(pk)(MESSAGE, sig) is True
    assert a.verifier(pk)(flip(MESSAGE), sig) is False
