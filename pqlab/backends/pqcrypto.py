"""SLH-DSA (FIPS 205, all 12 sets), ML-DSA and ML-KEM through PyPI ``pqcrypto`` (Rust, PyO3 bindings).

``pqcrypto`` is the second native implementation of the final standards beside liboqs and
OpenSSL, and the only one here with **SLH-DSA** (liboqs ships the round-3 SPHINCS+ submission, and
OpenSSL in ``cryptography`` has no SLH-DSA).  Names follow FIPS 205/204/203:
``SLH-DSA-SHA2-128f`` ... ``SLH-DSA-SHAKE-256s``, ``ML-DSA-44/65/87``, ``ML-KEM-512/768/1024``.

Signing and verifying use the *pure* FIPS 204/205 interface with an empty context string
(what the other backends use).  ``pqcrypto``'s ``verify`` returns None and raises
``InvalidSignatureError`` on a bad signature; the adapter answers True/False like every other
pqlab verifier.

**What it runs** is read from the installed wheel, not assumed: its CycloneDX SBOM
(``pqcrypto-*.dist-info/sboms/*.cyclonedx.json``) lists the Rust crates compiled in, and
:func:`implementation_label` names the crate behind each scheme and whether any PQClean code is
listed.  ``pqcrypto`` 1.0 moved from PQClean to its maintainers' own implementations
(backbone-hq/pqcrypto#21); earlier releases wrapped PQClean.  A wheel without an SBOM is labelled
as such.
"""
from __future__ import annotations

import functools
import importlib
import json
from importlib.metadata import distribution, version

from pqlab.backends.base import Algorithm, register

#: FIPS 205 parameter sets: (hash, security bits, s|f) -> NIST category
SLH_DSA_SETS = [(h, bits, v) for h in ("SHA2", "SHAKE") for bits in (128, 192, 256) for v in ("s", "f")]
SLH_DSA_LEVELS = {128: 1, 192: 3, 256: 5}
ML_DSA_LEVELS = {"44": 2, "65": 3, "87": 5}
ML_KEM_LEVELS = {"512": 1, "768": 3, "1024": 5}


@functools.lru_cache(maxsize=1)
def package_version() -> str:

    return version("pqcrypto")


#: module prefix -> words that name its scheme in a crate's name (``backbone-ml-dsa``, ``pqcrypto-mldsa`` ...)
SCHEME_WORDS = {"ml_dsa": ("ml-dsa", "mldsa", "dilithium"), "slh_dsa": ("slh-dsa", "slhdsa", "sphincs"),
                "ml_kem": ("ml-kem", "mlkem", "kyber")}


@functools.lru_cache(maxsize=1)
def sbom_components() -> tuple[dict, ...] | None:
    """The components of the installed wheel's CycloneDX SBOM (None when the wheel has none)."""

    files = [f for f in (distribution("pqcrypto").files or []) if str(f).endswith(".cyclonedx.json")]
    if not files:
        return None
    return tuple(json.loads(files[0].read_text()).get("components", []))


def implementation_label(module: str, components, version: str) -> str:
    """What ``pqcrypto.<kind>.<module>`` runs according to the SBOM `components` (None: no SBOM),
    e.g. "pqcrypto 1.0.0 (Rust crate backbone-ml-dsa 0.2.0; no PQClean code in the wheel's SBOM)"."""
    if components is None:
        return f"pqcrypto {version} (implementation not recorded: the wheel has no SBOM)"
    words = next((w for prefix, w in SCHEME_WORDS.items() if module.startswith(prefix)), ())
    crates = [c for c in components if any(w in c.get("name", "").lower() for w in words)]
    pqclean = any("pqclean" in f"{c.get('name', '')} {c.get('description', '')}".lower() for c in components)
    crate = (", ".join(f"{c['name']} {c.get('version', '')}".strip() for c in crates)
             or "no crate named after it")
    return (f"pqcrypto {version} (Rust crate {crate}; "
            + ("PQClean code listed" if pqclean else "no PQClean code") + " in the wheel's SBOM)")


def slh_dsa_name(hash_name: str, bits: int, tradeoff: str) -> str:
    """The FIPS 205 name of a parameter set, e.g. ``SLH-DSA-SHA2-128f``."""
    return f"SLH-DSA-{hash_name}-{bits}{tradeoff}"


def _module(kind: str, module: str):
    importlib.import_module(f"pqcrypto.{kind}")  # the package creates its submodules on import
    return importlib.import_module(f"pqcrypto.{kind}.{module}")


class _PQCrypto(Algorithm):
    def __init__(self, name: str, kind: str, module: str, family: str, level: int, notes: str = ""):
        self._mod = _module("sign" if kind == "sig" else "kem", module)
        version = package_version()
        super().__init__(name, kind, family, "pqcrypto",
                         implementation_label(module, sbom_components(), version), version, level, "raw",
                         notes, extra={"module": f"pqcrypto.{'sign' if kind == 'sig' else 'kem'}.{module}"})

    def generate(self):
        return self._mod.keygen()


class PQCryptoSignature(_PQCrypto):
    """A FIPS 204/205 signature: pure mode, empty context."""

    def signer(self, sk):
        return functools.partial(self._mod.sign, sk)  # sign(sk, message)

    def verifier(self, pk):
        return functools.partial(_verify, self._mod.verify, pk)

    def declared_sizes(self) -> dict:
        return {"signature_max_bytes": self._mod.SIGNATURE_SIZE}


def _verify(verify, pk: bytes, message: bytes, signature: bytes) -> bool:
    """pqcrypto's verify returns None or raises (InvalidSignatureError is a ValueError)."""
    try:
        verify(pk, message, signature)
    except (ValueError, TypeError):
        return False
    return True


class PQCryptoKem(_PQCrypto):
    def encapsulator(self, pk):
        return functools.partial(self._mod.encaps, pk)  # -> (ciphertext, shared secret)

    def decapsulator(self, sk):
        return functools.partial(self._mod.decaps, sk)


def register_all() -> None:
    import pqcrypto  # noqa: F401 - ImportError here means the backend is missing

    for h, bits, v in SLH_DSA_SETS:
        name = slh_dsa_name(h, bits, v)
        register(name, "pqcrypto", functools.partial(
            PQCryptoSignature, name, "sig", f"slh_dsa_{h.lower()}_{bits}{v}", "hash-based",
            SLH_DSA_LEVELS[bits], "FIPS 205 pure SLH-DSA, empty context"))
    for p, level in ML_DSA_LEVELS.items():
        register(f"ML-DSA-{p}", "pqcrypto", functools.partial(
            PQCryptoSignature, f"ML-DSA-{p}", "sig", f"ml_dsa_{p}", "lattice", level,
            "FIPS 204 pure ML-DSA, empty context"))
    for p, level in ML_KEM_LEVELS.items():
        register(f"ML-KEM-{p}", "pqcrypto", functools.partial(
            PQCryptoKem, f"ML-KEM-{p}", "kem", f"ml_kem_{p}", "lattice", level, "FIPS 203"))
