"""Classical algorithms, ML-DSA and ML-KEM through pyca/cryptography (OpenSSL)."""
from __future__ import annotations

import functools
import importlib
import os

from pqlab.backends.base import Algorithm, register

#: The raw secret keys cryptography stores: FIPS 204's ML-DSA seed (xi) and FIPS 203's ML-KEM seed (d || z).
MLDSA_SEED_BYTES, MLKEM_SEED_BYTES = 32, 64
#: The AEADs' nonce, drawn at random per message and prepended to it.
NONCE_BYTES = 12


def _versions() -> tuple[str, str]:
    import cryptography
    from cryptography.hazmat.backends.openssl.backend import backend

    return cryptography.__version__, backend.openssl_version_text()


class _OpenSSL(Algorithm):
    def __init__(self, name, kind, family, level=None, key_encoding="raw", notes=""):
        version, ossl = _versions()
        super().__init__(name, kind, family, "cryptography", f"cryptography {version} ({ossl})", version,
                         level, key_encoding, notes)


def _der_sizes(keys) -> dict:
    from cryptography.hazmat.primitives import serialization as s

    pk, sk = keys
    return {"public_key_bytes": len(pk.public_bytes(s.Encoding.DER, s.PublicFormat.SubjectPublicKeyInfo)),
            "secret_key_bytes": len(sk.private_bytes(s.Encoding.DER, s.PrivateFormat.PKCS8,
                                                     s.NoEncryption()))}


# ----- signatures -----
class RSASignature(_OpenSSL):
    def __init__(self, bits: int, padding_name: str):
        self.bits, self.padding_name = bits, padding_name
        suffix = "PSS" if padding_name == "pss" else "PKCS1v15-sig"
        padding = "PSS with MGF1-SHA-256, maximum salt" if padding_name == "pss" else "PKCS#1 v1.5"
        super().__init__(f"RSA-{bits}-{suffix}", "sig", "RSA", key_encoding="DER (SPKI / PKCS#8)",
                         notes=f"SHA-256, {padding}")

    def _padding(self):
        from cryptography.hazmat.primitives.asymmetric import padding

        if self.padding_name == "pss":
            return padding.PSS(mgf=padding.MGF1(_sha256()), salt_length=padding.PSS.MAX_LENGTH)
        return padding.PKCS1v15()

    def generate(self):
        from cryptography.hazmat.primitives.asymmetric import rsa

        sk = rsa.generate_private_key(public_exponent=65537, key_size=self.bits)
        return sk.public_key(), sk

    def signer(self, sk):
        pad, h = self._padding(), _sha256()
        return lambda m: sk.sign(m, pad, h)

    def verifier(self, pk):
        return functools.partial(_verify_raising, pk.verify, (self._padding(), _sha256()))

    key_sizes = staticmethod(_der_sizes)


class ECDSASignature(_OpenSSL):
    def __init__(self, curve: str):
        self.curve = curve
        super().__init__(f"ECDSA-{curve}", "sig", "elliptic-curve",
                         key_encoding="X9.62 uncompressed point / scalar",
                         notes=f"SHA-{'256' if curve == 'P256' else '384'}")

    def _objects(self):
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import ec

        curve, h = ((ec.SECP256R1(), hashes.SHA256()) if self.curve == "P256"
                    else (ec.SECP384R1(), hashes.SHA384()))
        return ec, curve, h

    def generate(self):
        ec, curve, _ = self._objects()
        sk = ec.generate_private_key(curve)
        return sk.public_key(), sk

    def signer(self, sk):
        ec, _, h = self._objects()
        algorithm = ec.ECDSA(h)
        return lambda m: sk.sign(m, algorithm)

    def verifier(self, pk):
        ec, _, h = self._objects()
        return functools.partial(_verify_raising, pk.verify, (ec.ECDSA(h),))

    def key_sizes(self, keys) -> dict:
        from cryptography.hazmat.primitives import serialization as s

        pk, sk = keys
        return {"public_key_bytes": len(pk.public_bytes(s.Encoding.X962, s.PublicFormat.UncompressedPoint)),
                "secret_key_bytes": (sk.curve.key_size + 7) // 8}

    def declared_sizes(self) -> dict:
        return {"signature_max_bytes": ecdsa_der_max(256 if self.curve == "P256" else 384)}


class RawKeySignature(_OpenSSL):
    """Ed25519, Ed448 and ML-DSA: keys with a raw encoding, sign(message) without parameters."""

    def __init__(self, name: str, module: str, cls: str, family: str, level=None, context: bool = False):
        self.module, self.cls = module, cls
        encoding = (f"raw (secret key: the {MLDSA_SEED_BYTES}-byte seed of FIPS 204)"
                    if name.startswith("ML-DSA") else "raw")
        super().__init__(name, "sig", family, level, encoding)

    def generate(self):

        mod = importlib.import_module(f"cryptography.hazmat.primitives.asymmetric.{self.module}")
        sk = getattr(mod, self.cls).generate()
        return sk.public_key(), sk

    def from_seed(self, seed: bytes):
        """The secret key from its seed (ML-DSA's 32-byte ξ; Ed25519's and Ed448's raw secret), for known
        answers."""

        cls = getattr(importlib.import_module(f"cryptography.hazmat.primitives.asymmetric.{self.module}"),
                      self.cls)
        return cls.from_seed_bytes(seed) if hasattr(cls, "from_seed_bytes") else cls.from_private_bytes(seed)

    def signer(self, sk):
        return sk.sign

    def verifier(self, pk):
        return functools.partial(_verify_raising, pk.verify, ())

    def key_sizes(self, keys) -> dict:
        pk, sk = keys
        return {"public_key_bytes": len(pk.public_bytes_raw()),
                "secret_key_bytes": len(sk.private_bytes_raw())}


def ecdsa_der_max(bits: int) -> int:
    """Longest DER ECDSA signature: SEQUENCE of two INTEGERs of up to bits/8 + 1 bytes each."""
    n = (bits + 7) // 8 + 1
    body = 2 * (2 + n)
    return body + (2 if body < 128 else 3)


def _verify_raising(verify, params: tuple, message: bytes, signature: bytes) -> bool:
    """cryptography's verify raises on a bad signature; pqlab's verifiers answer True/False."""
    from cryptography.exceptions import InvalidSignature

    try:
        verify(signature, message, *params)
    except InvalidSignature:
        return False
    return True


def _sha256():
    from cryptography.hazmat.primitives import hashes

    return hashes.SHA256()


# ----- KEMs -----
class MLKEM(_OpenSSL):
    def __init__(self, level_name: str, level: int):
        self.cls = f"MLKEM{level_name}PrivateKey"
        super().__init__(f"ML-KEM-{level_name}", "kem", "lattice", level,
                         f"raw (secret key: the {MLKEM_SEED_BYTES}-byte seed of FIPS 203)")

    def generate(self):
        from cryptography.hazmat.primitives.asymmetric import mlkem

        sk = getattr(mlkem, self.cls).generate()
        return sk.public_key(), sk

    def from_seed(self, seed: bytes):
        """The secret key from FIPS 203's 64-byte seed d ‖ z, for known answers."""
        from cryptography.hazmat.primitives.asymmetric import mlkem

        return getattr(mlkem, self.cls).from_seed_bytes(seed)

    def encapsulator(self, pk):
        return functools.partial(_swap, pk.encapsulate)  # cryptography answers (secret, ciphertext)

    def decapsulator(self, sk):
        return sk.decapsulate

    def key_sizes(self, keys) -> dict:
        pk, sk = keys
        return {"public_key_bytes": len(pk.public_bytes_raw()),
                "secret_key_bytes": len(sk.private_bytes_raw())}


def _swap(encapsulate) -> tuple[bytes, bytes]:
    secret, ciphertext = encapsulate()
    return ciphertext, secret


class XDHKem(_OpenSSL):
    """X25519 or X448 used as a KEM (ephemeral-static Diffie-Hellman, RFC 7748): the classical baseline of key
    exchange."""

    def __init__(self, name: str = "X25519", nist_level=None):
        super().__init__(name, "kem", "elliptic-curve", nist_level, "raw",
                         notes="DH as a KEM: encaps = ephemeral key pair + exchange, ciphertext = ephemeral "
                               "public key")
        self.module = name.lower()

    def _classes(self):
        module = importlib.import_module(f"cryptography.hazmat.primitives.asymmetric.{self.module}")
        return getattr(module, f"{self.name}PrivateKey"), getattr(module, f"{self.name}PublicKey")

    def generate(self):
        private, _ = self._classes()
        sk = private.generate()
        return sk.public_key().public_bytes_raw(), sk

    def encapsulator(self, pk):
        private, public = self._classes()
        peer = public.from_public_bytes(pk)
        gen = private.generate

        def encaps():
            eph = gen()
            return eph.public_key().public_bytes_raw(), eph.exchange(peer)

        return encaps

    def decapsulator(self, sk):
        _, public = self._classes()
        load = public.from_public_bytes
        return lambda ct: sk.exchange(load(ct))

    def key_sizes(self, keys) -> dict:
        pk, sk = keys
        return {"public_key_bytes": len(pk), "secret_key_bytes": len(sk.private_bytes_raw())}


class ECDHP256Kem(_OpenSSL):
    """ECDH on P-256 used as a KEM, as TLS uses it (the classical half of SecP256r1MLKEM768)."""

    def __init__(self):
        super().__init__("ECDH-P256", "kem", "elliptic-curve", None, "X9.62 uncompressed point",
                         notes="DH as a KEM: encaps = ephemeral key pair + exchange, ciphertext = ephemeral "
                               "public key")

    @staticmethod
    def _point(sk) -> bytes:
        from cryptography.hazmat.primitives import serialization as s

        return sk.public_key().public_bytes(s.Encoding.X962, s.PublicFormat.UncompressedPoint)

    def generate(self):
        from cryptography.hazmat.primitives.asymmetric import ec

        sk = ec.generate_private_key(ec.SECP256R1())
        return self._point(sk), sk

    def encapsulator(self, pk):
        from cryptography.hazmat.primitives.asymmetric import ec

        peer = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), pk)

        def encaps():
            eph = ec.generate_private_key(ec.SECP256R1())
            return self._point(eph), eph.exchange(ec.ECDH(), peer)

        return encaps

    def decapsulator(self, sk):
        from cryptography.hazmat.primitives.asymmetric import ec

        return lambda ct: sk.exchange(ec.ECDH(),
                                      ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), ct))

    def key_sizes(self, keys) -> dict:
        pk, sk = keys
        return {"public_key_bytes": len(pk), "secret_key_bytes": (sk.curve.key_size + 7) // 8}


# ----- public-key encryption -----
class RSAEncryption(_OpenSSL):
    def __init__(self, bits: int, padding_name: str):
        self.bits, self.padding_name = bits, padding_name
        super().__init__(f"RSA-{bits}-{'OAEP' if padding_name == 'oaep' else 'PKCS1v15-enc'}", "pke", "RSA",
                         key_encoding="DER (SPKI / PKCS#8)",
                         notes="OAEP with SHA-256 and MGF1-SHA-256" if padding_name == "oaep"
                         else "PKCS#1 v1.5")

    def _padding(self):
        from cryptography.hazmat.primitives.asymmetric import padding

        if self.padding_name == "oaep":
            return padding.OAEP(mgf=padding.MGF1(_sha256()), algorithm=_sha256(), label=None)
        return padding.PKCS1v15()

    generate = RSASignature.generate

    def encryptor(self, pk):
        pad = self._padding()
        return lambda m: pk.encrypt(m, pad)

    def decryptor(self, sk):
        pad = self._padding()
        return lambda c: sk.decrypt(c, pad)

    key_sizes = staticmethod(_der_sizes)


# ----- symmetric -----
class OpenSSLCipher(_OpenSSL):
    def __init__(self, name: str):
        super().__init__(name, "cipher", "symmetric", 5, "raw key",
                         notes=f"random {NONCE_BYTES * 8}-bit nonce per message, prepended"
                         if "CBC" not in name else "random IV per message, prepended; PKCS#7 padding")

    def generate(self):
        return os.urandom(32)

    def encryptor(self, key):
        if self.name == "AES-256-CBC":
            return functools.partial(_cbc_encrypt, key)
        aead = self._aead(key)
        return lambda m: _nonce_then(aead, m)

    def decryptor(self, key):
        if self.name == "AES-256-CBC":
            return functools.partial(_cbc_decrypt, key)
        aead = self._aead(key)
        return lambda c: aead.decrypt(c[:NONCE_BYTES], c[NONCE_BYTES:], None)

    def _aead(self, key):
        from cryptography.hazmat.primitives.ciphers import aead

        return aead.AESGCM(key) if self.name == "AES-256-GCM" else aead.ChaCha20Poly1305(key)

    def sealer(self, key: bytes, iv: bytes, aad: bytes = b""):
        """(encrypt, decrypt) under a given IV and associated data, for known answers (the adapter draws its
        IV): ciphertext ‖ tag (AES-CBC: the padded ciphertext, and no associated data)."""
        if self.name == "AES-256-CBC":
            if aad:
                raise ValueError("AES-CBC takes no associated data")
            return (lambda m: _cbc_encrypt(key, m, iv)[len(iv):]), (lambda c: _cbc_decrypt(key, iv + c))
        aead = self._aead(key)
        return (lambda m: aead.encrypt(iv, m, aad or None)), (lambda c: aead.decrypt(iv, c, aad or None))


def _nonce_then(aead, message: bytes) -> bytes:
    nonce = os.urandom(NONCE_BYTES)
    return nonce + aead.encrypt(nonce, message, None)


def _cbc_encrypt(key: bytes, message: bytes, iv: bytes | None = None) -> bytes:
    from cryptography.hazmat.primitives import padding
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    iv = os.urandom(16) if iv is None else iv
    padder = padding.PKCS7(128).padder()
    enc = Cipher(algorithms.AES(key), modes.CBC(iv)).encryptor()
    return iv + enc.update(padder.update(message) + padder.finalize()) + enc.finalize()


def _cbc_decrypt(key: bytes, data: bytes) -> bytes:
    from cryptography.hazmat.primitives import padding
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    dec = Cipher(algorithms.AES(key), modes.CBC(data[:16])).decryptor()
    unpadder = padding.PKCS7(128).unpadder()
    return unpadder.update(dec.update(data[16:]) + dec.finalize()) + unpadder.finalize()


def register_all() -> None:
    import cryptography  # noqa: F401 - ImportError here means the backend is missing

    for bits in (2048, 3072, 4096):
        for pad in ("pss", "pkcs1v15"):
            register(f"RSA-{bits}-{'PSS' if pad == 'pss' else 'PKCS1v15-sig'}", "cryptography",
                     functools.partial(RSASignature, bits, pad))
        for pad in ("oaep", "pkcs1v15"):
            register(f"RSA-{bits}-{'OAEP' if pad == 'oaep' else 'PKCS1v15-enc'}", "cryptography",
                     functools.partial(RSAEncryption, bits, pad))
    for curve in ("P256", "P384"):
        register(f"ECDSA-{curve}", "cryptography", functools.partial(ECDSASignature, curve))
    register("Ed25519", "cryptography",
             functools.partial(RawKeySignature, "Ed25519", "ed25519", "Ed25519PrivateKey", "elliptic-curve"))
    register("Ed448", "cryptography",
             functools.partial(RawKeySignature, "Ed448", "ed448", "Ed448PrivateKey", "elliptic-curve"))
    for level, nist in (("44", 2), ("65", 3), ("87", 5)):
        register(f"ML-DSA-{level}", "cryptography",
                 functools.partial(RawKeySignature, f"ML-DSA-{level}", "mldsa", f"MLDSA{level}PrivateKey",
                                   "lattice", nist))
    for level, nist in (("768", 3), ("1024", 5)):
        register(f"ML-KEM-{level}", "cryptography", functools.partial(MLKEM, level, nist))
    register("X25519", "cryptography", XDHKem)
    register("X448", "cryptography", functools.partial(XDHKem, "X448"))
    register("ECDH-P256", "cryptography", ECDHP256Kem)
    for name in ("AES-256-GCM", "AES-256-CBC", "ChaCha20-Poly1305"):
        register(name, "cryptography", functools.partial(OpenSSLCipher, name))
