"""Ascon-128a from the PyPI package ``ascon`` (pure Python), backend ``ascon``.

The package (https://github.com/meichlseder/pyascon) is the designers' reference implementation
of **Ascon v1.2** as submitted to the NIST lightweight-cryptography competition: Ascon-128a has a
128-bit key, a 128-bit nonce, a 128-bit tag, a 16-byte rate and 8-round intermediate
permutations. It is *not* NIST SP 800-232's Ascon-AEAD128, which changed the initial value and
the byte order, so ciphertexts differ (the Pi 4 study, from January 2026, also named Ascon-128a).
Its known-answer vectors are those of the Ascon team's ``LWC_AEAD_KAT_128_128.txt`` for
``ascon128av12`` (tests/studies/test_power.py checks three of them).

Every primitive runs in the interpreter, so this measures Python arithmetic, not what Ascon costs
in C or hardware: say so wherever its numbers appear beside OpenSSL's AES-GCM and ChaCha20-Poly1305.
"""
from __future__ import annotations

import functools
import os
from importlib.metadata import version

from pqlab.backends.base import Algorithm, register

ALGORITHM = "Ascon-128a"
KEY_BYTES = NONCE_BYTES = TAG_BYTES = 16


class AsconAuthenticationError(ValueError):
    """Decryption refused: the tag does not match (the package returns None)."""


class Ascon128a(Algorithm):
    """Ascon-128a AEAD: a random 16-byte nonce per message, prepended; the 16-byte tag appended;
    no associated data (as the other AEADs of pqlab)."""

    def __init__(self) -> None:
        import ascon  # noqa: F401 - ImportError here means the backend is missing

        v = version("ascon")
        super().__init__(ALGORITHM, "cipher", "symmetric", "ascon", f"ascon {v} (pure Python, PyPI)", v, 1,
                         f"raw key ({KEY_BYTES} bytes)",
                         "Ascon v1.2 (NIST LWC submission), not SP 800-232 Ascon-AEAD128; random "
                         f"{NONCE_BYTES * 8}-bit nonce per message, prepended; {TAG_BYTES * 8}-bit tag "
                         "appended")

    def generate(self) -> bytes:
        return os.urandom(KEY_BYTES)

    def encryptor(self, key: bytes):
        return functools.partial(encrypt, key)

    def decryptor(self, key: bytes):
        return functools.partial(decrypt, key)

    def sealer(self, key: bytes, iv: bytes, aad: bytes = b""):
        """(encrypt, decrypt) under a given nonce and associated data, for known answers (the adapter draws
        its nonce): ciphertext ‖ tag."""
        import ascon

        def unseal(sealed: bytes) -> bytes:
            out = ascon.decrypt(key, iv, aad, sealed, ALGORITHM)
            if out is None:
                raise AsconAuthenticationError("Ascon-128a tag mismatch: ciphertext or key is wrong")
            return out

        return (lambda m: ascon.encrypt(key, iv, aad, m, ALGORITHM)), unseal


def encrypt(key: bytes, message: bytes, associated_data: bytes = b"") -> bytes:
    """nonce || Ascon-128a(key, nonce, associated_data, message) (ciphertext || tag)."""
    import ascon

    nonce = os.urandom(NONCE_BYTES)
    return nonce + ascon.encrypt(key, nonce, associated_data, message, ALGORITHM)


def decrypt(key: bytes, data: bytes, associated_data: bytes = b"") -> bytes:
    """The plaintext of ``nonce || ciphertext || tag``; raises when the tag does not verify."""
    import ascon

    if len(data) < NONCE_BYTES + TAG_BYTES:
        raise AsconAuthenticationError(f"{len(data)} bytes are too short for a nonce and a tag")
    out = ascon.decrypt(key, data[:NONCE_BYTES], associated_data, data[NONCE_BYTES:], ALGORITHM)
    if out is None:
        raise AsconAuthenticationError("Ascon-128a tag mismatch: ciphertext or key is wrong")
    return out


def register_all() -> None:
    import ascon  # noqa: F401 - ImportError: the backend is missing (pip install ascon)

    register(ALGORITHM, "ascon", Ascon128a)
