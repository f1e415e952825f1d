"""AES, ChaCha20-Poly1305, RSA PKCS#1 v1.5 encryption and ECDSA P-256 through PyCryptodome."""
from __future__ import annotations

import functools

from pqlab.backends.base import Algorithm, register
from pqlab.backends.cryptography import ecdsa_der_max

#: The AEADs' nonce (drawn at random per message, prepended) and tag (appended).
NONCE_BYTES, TAG_BYTES = 12, 16


def engine(name: str) -> str:
    """What PyCryptodome runs for `name`, read from the installed package: AES through the AES-NI
    instructions or its portable C code (``AES._raw_aes_hw``), RSA and ECC on which big-integer
    class (``Crypto.Math.Numbers.Integer``: GMP, its own C code or pure Python)."""
    if name.startswith("AES"):
        from Crypto.Cipher import AES

        return "AES-NI instructions" if getattr(AES, "_raw_aes_hw", None) else "portable C AES"
    if name.startswith(("RSA", "ECDSA")):
        from Crypto.Math.Numbers import Integer

        return f"big integers: {Integer.__name__}"
    return "its own C code"


class _Dome(Algorithm):
    def __init__(self, name, kind, family, level=None, key_encoding="raw", notes=""):
        import Crypto

        super().__init__(name, kind, family, "pycryptodome",
                         f"PyCryptodome {Crypto.__version__} ({engine(name)})",
                         Crypto.__version__, level, key_encoding, notes)


class DomeCipher(_Dome):
    def __init__(self, name: str):
        super().__init__(name, "cipher", "symmetric", 5, "raw key",
                         "random IV per message, prepended; PKCS#7 padding" if "CBC" in name
                         else f"random {NONCE_BYTES * 8}-bit nonce per message, prepended; {TAG_BYTES}-byte "
                              "tag appended")

    def generate(self):
        from Crypto.Random import get_random_bytes

        return get_random_bytes(32)

    def encryptor(self, key):
        return functools.partial(_ENCRYPT[self.name], key)

    def decryptor(self, key):
        return functools.partial(_DECRYPT[self.name], key)

    def sealer(self, key: bytes, iv: bytes, aad: bytes = b""):
        """(encrypt, decrypt) under a given IV and associated data, for known answers (the adapter draws its
        IV): ciphertext ‖ tag (AES-CBC: the padded ciphertext, and no associated data)."""
        if self.name == "AES-256-CBC":
            if aad:
                raise ValueError("AES-CBC takes no associated data")
            return (lambda m: _cbc(key, iv).encrypt(_pad(m))), (lambda c: _cbc_decrypt(key, iv + c))
        new = _gcm if self.name == "AES-256-GCM" else _chacha
        return functools.partial(_seal, new, key, iv, aad), functools.partial(_unseal, new, key, iv, aad)


def _cbc(key, iv):
    from Crypto.Cipher import AES

    return AES.new(key, AES.MODE_CBC, iv=iv)


def _pad(message):
    from Crypto.Util.Padding import pad

    return pad(message, 16)


def _seal(new, key, iv, aad, message):
    cipher = new(key, iv)
    cipher.update(aad)
    return b"".join(cipher.encrypt_and_digest(message))


def _unseal(new, key, iv, aad, sealed):
    cipher = new(key, iv)
    cipher.update(aad)
    return cipher.decrypt_and_verify(sealed[:-TAG_BYTES], sealed[-TAG_BYTES:])


def _cbc_encrypt(key, message):
    from Crypto.Cipher import AES
    from Crypto.Util.Padding import pad

    cipher = AES.new(key, AES.MODE_CBC)
    return cipher.iv + cipher.encrypt(pad(message, 16))


def _cbc_decrypt(key, data):
    from Crypto.Cipher import AES
    from Crypto.Util.Padding import unpad

    return unpad(AES.new(key, AES.MODE_CBC, iv=data[:16]).decrypt(data[16:]), 16)


def _aead_encrypt(new, key, message):
    from Crypto.Random import get_random_bytes

    nonce = get_random_bytes(NONCE_BYTES)
    ct, tag = new(key, nonce).encrypt_and_digest(message)
    return nonce + ct + tag


def _aead_decrypt(new, key, data):
    return new(key, data[:NONCE_BYTES]).decrypt_and_verify(data[NONCE_BYTES:-TAG_BYTES], data[-TAG_BYTES:])


def _gcm(key, nonce):
    from Crypto.Cipher import AES

    return AES.new(key, AES.MODE_GCM, nonce=nonce)


def _chacha(key, nonce):
    from Crypto.Cipher import ChaCha20_Poly1305

    return ChaCha20_Poly1305.new(key=key, nonce=nonce)


_ENCRYPT = {"AES-256-CBC": _cbc_encrypt, "AES-256-GCM": functools.partial(_aead_encrypt, _gcm),
            "ChaCha20-Poly1305": functools.partial(_aead_encrypt, _chacha)}
_DECRYPT = {"AES-256-CBC": _cbc_decrypt, "AES-256-GCM": functools.partial(_aead_decrypt, _gcm),
            "ChaCha20-Poly1305": functools.partial(_aead_decrypt, _chacha)}


class DomeRSAEncryption(_Dome):
    def __init__(self, bits: int):
        self.bits = bits
        super().__init__(f"RSA-{bits}-PKCS1v15-enc", "pke", "RSA", key_encoding="DER (SPKI / PKCS#8)",
                         notes="PKCS#1 v1.5")

    def generate(self):
        from Crypto.PublicKey import RSA

        sk = RSA.generate(self.bits)
        return sk.public_key(), sk

    def encryptor(self, pk):
        from Crypto.Cipher import PKCS1_v1_5

        return PKCS1_v1_5.new(pk).encrypt

    def decryptor(self, sk):
        from Crypto.Cipher import PKCS1_v1_5

        cipher = PKCS1_v1_5.new(sk)
        return lambda c: cipher.decrypt(c, None, expected_pt_len=0)

    def key_sizes(self, keys) -> dict:
        pk, sk = keys
        return {"public_key_bytes": len(pk.export_key("DER")),
                "secret_key_bytes": len(sk.export_key("DER", pkcs=8))}


class DomeECDSA(_Dome):
    def __init__(self):
        super().__init__("ECDSA-P256", "sig", "elliptic-curve",
                         key_encoding="X9.62 uncompressed point / scalar",
                         notes="SHA-256, FIPS 186-3 randomised nonces, DER signature")

    def generate(self):
        from Crypto.PublicKey import ECC

        sk = ECC.generate(curve="P-256")
        return sk.public_key(), sk

    def signer(self, sk):
        from Crypto.Hash import SHA256
        from Crypto.Signature import DSS

        signer = DSS.new(sk, "fips-186-3", encoding="der")
        return lambda m: signer.sign(SHA256.new(m))

    def verifier(self, pk):
        from Crypto.Signature import DSS

        return functools.partial(_dome_verify, DSS.new(pk, "fips-186-3", encoding="der"))

    def key_sizes(self, keys) -> dict:
        pk, _ = keys
        return {"public_key_bytes": len(pk.export_key(format="raw")), "secret_key_bytes": 32}

    def declared_sizes(self) -> dict:

        return {"signature_max_bytes": ecdsa_der_max(256)}


def _dome_verify(verifier, message: bytes, signature: bytes) -> bool:
    from Crypto.Hash import SHA256

    try:
        verifier.verify(SHA256.new(message), signature)
    except ValueError:
        return False
    return True


def register_all() -> None:
    import Crypto  # noqa: F401

    for name in ("AES-256-CBC", "AES-256-GCM", "ChaCha20-Poly1305"):
        register(name, "pycryptodome", functools.partial(DomeCipher, name))
    register("RSA-2048-PKCS1v15-enc", "pycryptodome", functools.partial(DomeRSAEncryption, 2048))
    register("ECDSA-P256", "pycryptodome", DomeECDSA)
