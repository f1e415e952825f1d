"""Pure-Python implementations from PyPI: ML-DSA (``dilithium-py``) and SLH-DSA (``slh-dsa``).

They put a number on the caveat of the studies that used "an unoptimised port": how much
slower is the same standard when the arithmetic runs in the interpreter?  Backend name
``pure-python``; algorithm names as in FIPS 204/205 (``ML-DSA-44``, ``SLH-DSA-SHA2-128f`` ...).

* ``dilithium-py``: FIPS 204 ML-DSA-44/65/87, pure interface (``sign(sk, m, ctx)``), hedged
  signing (its default, as liboqs and OpenSSL do).
* ``slh-dsa``: FIPS 205, all 12 sets, pure interface (``sign_pure`` / ``verify_pure`` with an
  empty context; its ``sign``/``verify`` implement the initial draft and are *not* used),
  randomised signing (``randomize=True``, the FIPS 205 default).  Its PyPI wheel for CPython
  3.11 on x86_64 is compiled from the same Python source with mypyc; the implementation
  string says which form was loaded (the hashing itself is hashlib, i.e. OpenSSL, either way).

Keys are plain bytes in the standards' encodings (ML-DSA: pk 1312 / sk 2560 bytes for
ML-DSA-44; SLH-DSA: pk = PK.seed || PK.root, sk = SK.seed || SK.prf || PK.seed || PK.root),
so signatures and keys can be handed to a native implementation of the same standard.
"""
from __future__ import annotations

import functools
from importlib.metadata import version

from pqlab.backends.base import Algorithm, register
from pqlab.backends.pqcrypto import ML_DSA_LEVELS, SLH_DSA_LEVELS, SLH_DSA_SETS, slh_dsa_name

#: FIPS 204 Table 2: signature sizes in bytes
FIPS204_SIGNATURE_BYTES = {"ML-DSA-44": 2420, "ML-DSA-65": 3309, "ML-DSA-87": 4627}


@functools.lru_cache(maxsize=1)
def slh_dsa_form() -> str:
    """'mypyc-compiled' when the installed slh-dsa runs compiled modules, else 'interpreted'."""
    import slhdsa.lowlevel.slhdsa as lowlevel

    return "interpreted" if str(lowlevel.__file__).endswith(".py") else "mypyc-compiled"


class DilithiumPy(Algorithm):
    """ML-DSA from dilithium-py (FIPS 204, pure mode, empty context, hedged signing)."""

    def __init__(self, level: str):
        from dilithium_py import ml_dsa

        self._impl = getattr(ml_dsa, f"ML_DSA_{level}")
        v = version("dilithium-py")
        super().__init__(f"ML-DSA-{level}", "sig", "lattice", "pure-python",
                         f"dilithium-py {v} (pure Python)", v, ML_DSA_LEVELS[level],
                         "raw (FIPS 204 encodings)", "FIPS 204 pure ML-DSA, empty context")

    def generate(self):
        return self._impl.keygen()  # (pk, sk)

    def signer(self, sk):
        return functools.partial(self._impl.sign, sk)  # sign(sk, message)

    def verifier(self, pk):
        return functools.partial(_safe_verify, functools.partial(self._impl.verify, pk))

    def declared_sizes(self) -> dict:
        return {"signature_max_bytes": FIPS204_SIGNATURE_BYTES[self.name]}


class SlhDsaPy(Algorithm):
    """SLH-DSA from slh-dsa (FIPS 205 pure interface, empty context, randomised signing)."""

    def __init__(self, hash_name: str, bits: int, tradeoff: str):
        import slhdsa

        self._par = getattr(slhdsa, f"{hash_name.lower()}_{bits}{tradeoff}")
        v = version("slh-dsa")
        super().__init__(slh_dsa_name(hash_name, bits, tradeoff), "sig", "hash-based", "pure-python",
                         f"slh-dsa {v} (Python, {slh_dsa_form()})", v, SLH_DSA_LEVELS[bits],
                         "raw (FIPS 205 encodings)",
                         "FIPS 205 pure SLH-DSA (sign_pure/verify_pure), empty context",
                         extra={"form": slh_dsa_form()})

    def generate(self):
        from slhdsa import KeyPair

        kp = KeyPair.gen(self._par)
        return kp.pub.digest(), kp.sec.digest()

    def signer(self, sk):
        from slhdsa import SecretKey

        return functools.partial(SecretKey.from_digest(sk, self._par).sign_pure, randomize=True)

    def verifier(self, pk):
        from slhdsa import PublicKey

        return functools.partial(_safe_verify, PublicKey.from_digest(pk, self._par).verify_pure)

    def declared_sizes(self) -> dict:
        """FIPS 205 signature length n (1 + k (1 + a) + h + d len), len = 2n + 3 WOTS+ chains (lg w = 4)."""
        p = self._par
        return {"signature_max_bytes": p.n * (1 + p.k * (1 + p.a) + p.h + p.d * (2 * p.n + 3))}


def _safe_verify(verify, message: bytes, signature: bytes) -> bool:
    """True only for a valid signature; a malformed one (any exception) is False."""
    try:
        return verify(message, signature) is True
    except Exception:  # noqa: BLE001 - a refusal of any kind is a rejection
        return False


def register_all() -> None:
    missing = []
    try:
        import dilithium_py  # noqa: F401
    except ImportError as exc:
        missing.append(str(exc))
    else:
        for level in ML_DSA_LEVELS:
            register(f"ML-DSA-{level}", "pure-python", functools.partial(DilithiumPy, level))
    try:
        import slhdsa  # noqa: F401
    except ImportError as exc:
        missing.append(str(exc))
    else:
        for h, bits, v in SLH_DSA_SETS:
            register(slh_dsa_name(h, bits, v), "pure-python", functools.partial(SlhDsaPy, h, bits, v))
    if len(missing) == 2:
        raise ImportError("; ".join(missing))
