"""pqlab's shared words, in one place: who runs an algorithm (the backends), which family it belongs to, and
the notebooks' topic ids.  Every other module reads them here; none spells its own list.

    BACKENDS                   every backend, library or runner, with its language, caller and packages
    backend("liboqs")          one of them (an unknown name: one line with close matches); find(): or None
    LIBRARY_BACKENDS           the backends pqlab's own harness measures, in the order a bare name picks them
    FAMILIES, family_of(name)  the family column's words, and the family of any algorithm name pqlab measures
    POST_QUANTUM               the post-quantum families; CLASSICAL_PUBLIC_KEY those Shor's algorithm breaks
    TOPICS                     one id per numbered notebook: its file name, its runs' study, its export folder
"""
from __future__ import annotations

from dataclasses import dataclass

from pqlab.core.errors import choice


@dataclass(frozen=True)
class Backend:
    """One value of the ``backend`` column.  `language`: what does the work; `caller`: the language of the
    timed loop; `module`: ``pqlab/backends/<module>.py`` for a library measured in pqlab's harness ("" for a
    runner, a program of its own under ``pqlab/runners/``); `packages`: the PyPI distributions whose versions
    a run records; `binding`: the Python binding, where the implementation's name does not say it; `through`:
    the backend this one measures too, through another path (``liboqs-python`` is liboqs through its binding);
    `c_loop`: a sample's calls run in a C loop, one call from Python per sample."""

    name: str
    language: str
    caller: str = "Python"
    module: str = ""
    packages: tuple[str, ...] = ()
    binding: str = ""
    through: str = ""
    c_loop: bool = False


#: Every backend.  The library ones come first, in the order a name several of them implement picks them
#: (liboqs for post-quantum, OpenSSL for the rest).
BACKENDS = (
    Backend("liboqs", "C", caller="C", module="liboqs", packages=("liboqs-python",), c_loop=True),
    Backend("liboqs-python", "C", module="liboqs", packages=("liboqs-python",), binding="liboqs-python",
            through="liboqs"),
    Backend("cryptography", "C and assembly", module="cryptography", packages=("cryptography",)),
    Backend("pycryptodome", "C", module="pycryptodome", packages=("pycryptodome",)),
    Backend("pqcrypto", "Rust", module="pqcrypto", packages=("pqcrypto",)),
    Backend("pure-python", "pure Python", module="pure_python", packages=("dilithium-py", "slh-dsa")),
    Backend("ascon", "pure Python", module="ascon", packages=("ascon",)),
    Backend("native", "C", caller="C"),  # pqlab.runners.native: liboqs timed from C
    Backend("bouncycastle", "Java", caller="Java"),  # pqlab.runners.jvm
    Backend("openssl-tls", "C", caller="C"),  # pqlab.runners.tls: TLS 1.3 handshakes
    # pqlab.runners.impls: the programs of native/impls, each implementation timed in its own language's loop
    Backend("openssl", "C and assembly", caller="C"),
    Backend("openssl-3.6", "C and assembly", caller="C"),
    Backend("aws-lc-rs", "C and assembly (AWS-LC)", caller="Rust"),
    Backend("libcrux", "Rust (formally verified)", caller="Rust"),
    Backend("rustcrypto", "Rust", caller="Rust"),
    Backend("go-stdlib", "Go and assembly", caller="Go"),
    Backend("noble", "JavaScript", caller="JavaScript"),
)
_BY_NAME = {b.name: b for b in BACKENDS}
#: The backends measured in pqlab's own harness (a module under pqlab/backends/ each), in preference order.
LIBRARY_BACKENDS = tuple(b.name for b in BACKENDS if b.module)


def backend(name: str) -> Backend:
    """The backend called `name`; an unknown one is refused in one line with close matches."""
    return _BY_NAME[choice(name, "backend", list(_BY_NAME))]


def find(name: str) -> Backend | None:
    """The backend called `name`, or None for a name pqlab does not know (a test's own adapter)."""
    return _BY_NAME.get(name)


def c_loop(name: str) -> bool:
    """Whether backend `name` runs a sample's calls in a C loop (False for a name pqlab does not know)."""
    record = find(name)
    return bool(record and record.c_loop)


#: The family column's words (pqlab.publish.plotting gives each a colour).
FAMILIES = ("lattice", "hash-based", "multivariate", "code-based", "isogeny", "RSA", "elliptic-curve",
            "symmetric", "other")
#: The post-quantum families.
POST_QUANTUM = ("lattice", "hash-based", "multivariate", "code-based", "isogeny")
#: The classical public-key families: those Shor's algorithm breaks.
CLASSICAL_PUBLIC_KEY = ("RSA", "elliptic-curve")
#: Name prefix -> family, for every algorithm name pqlab measures (first match wins): liboqs's post-quantum
#: names of every release, the other libraries' and runners' names, and the studies' own labels (SPHINCS-256,
#: MIRACL's RSA and ECDSA).
_PREFIXES = (
    ("ML-DSA", "lattice"), ("Dilithium", "lattice"), ("Falcon", "lattice"), ("ML-KEM", "lattice"),
    ("Kyber", "lattice"), ("FrodoKEM", "lattice"), ("eFrodoKEM", "lattice"), ("sntrup", "lattice"),
    ("NTRU", "lattice"), ("SPHINCS", "hash-based"), ("SLH-DSA", "hash-based"), ("SLH_DSA", "hash-based"),
    ("MAYO", "multivariate"), ("OV-", "multivariate"), ("UOV", "multivariate"), ("SNOVA", "multivariate"),
    ("mqom", "multivariate"),
    ("cross", "code-based"), ("CROSS", "code-based"), ("HQC", "code-based"), ("BIKE", "code-based"),
    ("Classic-McEliece", "code-based"),
    ("RSA", "RSA"), ("ECDSA", "elliptic-curve"), ("ECDH", "elliptic-curve"), ("Ed25519", "elliptic-curve"),
    ("Ed448", "elliptic-curve"), ("X25519", "elliptic-curve"), ("X448", "elliptic-curve"),
    ("P-256", "elliptic-curve"), ("P-384", "elliptic-curve"), ("AES", "symmetric"), ("ChaCha20", "symmetric"),
    ("Ascon", "symmetric"),
)


def family_of(name: str) -> str:
    """The family of an algorithm `name`, by its prefix; "other" when none matches."""
    return next((family for prefix, family in _PREFIXES if str(name).startswith(prefix)), "other")


#: One id per numbered notebook: ``notebooks/<id>.ipynb``, the ``study`` of its runs, its folder of exports
#: and of parameters (``notebooks/params/<id>.yaml``).  A study module's ``TOPIC`` is one of these.
TOPICS = ("01_aes_rsa_sphincs", "02_message_scaling", "03_memory_footprint", "04_signature_cycles",
          "05_energy", "06_tls_handshake", "07_atlas", "08_implementations", "09_timing_leakage")
