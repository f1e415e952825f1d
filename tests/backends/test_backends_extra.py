"""The pqcrypto and pure-Python backends: registration, metadata, round trips, tampering
rejected, and cross-verification with the native implementations of the same standard."""
from __future__ import annotations

import pytest

from pqlab.backends import algorithms
from pqlab.checks.interop import check_round3_internal, cross_verify

pytest.importorskip("pqcrypto")

SLH_SETS = [f"SLH-DSA-{h}-{b}{v}" for h in ("SHA2", "SHAKE") for b in (128, 192, 256) for v in "sf"]
MESSAGE = b"pqlab: the same bytes, two implementations"


def test_pqcrypto_registers_fips_names():
    names = set(algorithms.names(backend="pqcrypto"))
    assert set(SLH_SETS) <= names
    assert {"ML-DSA-44", "ML-DSA-65", "ML-DSA-87", "ML-KEM-512", "ML-KEM-768", "ML-KEM-1024"} <= names


@pytest.mark.parametrize("name, family, level", [("SLH-DSA-SHA2-128f", "hash-based", 1),
                                                 ("SLH-DSA-SHAKE-192s", "hash-based", 3),
                                                 ("SLH-DSA-SHA2-256f", "hash-based", 5),
                                                 ("ML-DSA-44", "lattice", 2), ("ML-DSA-87", "lattice", 5),
                                                 ("ML-KEM-512", "lattice", 1)])
def test_pqcrypto_metadata(name, family, level):
    a = algorithms.get(name, "pqcrypto")
    assert (a.family, a.nist_level, a.backend) == (family, level, "pqcrypto")
    assert a.library_version and a.library_version in a.implementation


# ----- what each backend runs, read from the installed package -----
BACKBONE = ({"name": "backbone-ml-dsa", "version": "0.2.0",
             "description": "ML-DSA (FIPS 204) implementation"},
            {"name": "backbone-sphincs", "version": "0.2.0",
             "description": "SPHINCS+ (FIPS 205) implementation"},
            {"name": "sha3", "version": "0.10.9", "description": "Pure Rust implementation of SHA-3"})
PQCLEAN = ({"name": "pqcrypto-mldsa", "version": "0.1.0", "description": "Post-Quantum ML-DSA using PQClean"},
           {"name": "pqcrypto-internals", "version": "0.2.5",
            "description": "bindings to common PQClean code"})


def test_pqcrypto_label_names_the_crate_and_pqclean_from_the_sbom():
    from pqlab.backends.pqcrypto import implementation_label

    own = implementation_label("ml_dsa_44", BACKBONE, "9.9")
    assert own == "pqcrypto 9.9 (Rust crate backbone-ml-dsa 0.2.0; no PQClean code in the wheel's SBOM)"
    assert "backbone-sphincs 0.2.0" in implementation_label("slh_dsa_shake_128f", BACKBONE, "9.9")
    old = implementation_label("ml_dsa_44", PQCLEAN, "0.9")
    assert "pqcrypto-mldsa 0.1.0" in old and "PQClean code listed" in old
    assert "no SBOM" in implementation_label("ml_dsa_44", None, "0.8")
    assert "no crate named after it" in implementation_label("ml_kem_512", BACKBONE, "9.9")


def test_pqcrypto_label_of_the_installed_wheel_matches_its_sbom():
    from pqlab.backends.pqcrypto import sbom_components

    components = sbom_components()
    label = algorithms.get("ML-DSA-44", "pqcrypto").implementation
    if components is None:
        assert "no SBOM" in label
    else:
        crates = [c["name"] for c in components if "ml-dsa" in c["name"] or "mldsa" in c["name"]]
        assert crates and all(c in label for c in crates)
        assert "PQClean" in label  # stated either way: listed or not


def test_pycryptodome_label_follows_the_aes_engine(monkeypatch):
    from Crypto.Cipher import AES

    from pqlab.backends import pycryptodome

    monkeypatch.setattr(AES, "_raw_aes_hw", None, raising=False)
    assert pycryptodome.engine("AES-256-CBC") == "portable C AES"
    monkeypatch.setattr(AES, "_raw_aes_hw", (print, print), raising=False)
    assert pycryptodome.engine("AES-256-GCM") == "AES-NI instructions"
    from Crypto.Math.Numbers import Integer

    assert pycryptodome.engine("RSA-2048-PKCS1v15-enc") == f"big integers: {Integer.__name__}"


@pytest.mark.parametrize("name", ["SLH-DSA-SHA2-128f", "ML-DSA-44", "ML-KEM-512"])
def test_pqcrypto_round_trip_and_tampering(name):
    """Algorithm.trial's checks: outputs verify / decapsulate, tampered inputs are refused."""
    a = algorithms.get(name, "pqcrypto")
    for op in a.operations:
        t = a.trial(op, MESSAGE).bound()
        t.check(t.run())


def test_pqcrypto_verify_answers_false_instead_of_raising():
    a = algorithms.get("ML-DSA-44", "pqcrypto")
    pk, sk = a.generate()
    sig = a.signer(sk)(MESSAGE)
    verify = a.verifier(pk)
    assert verify(MESSAGE, sig) is True
    assert verify(MESSAGE + b"!", sig) is False
    assert verify(MESSAGE, sig[:-1]) is False  # wrong length
    assert verify(MESSAGE, b"") is False


def test_pqcrypto_sizes_are_the_standards():
    s = algorithms.get("SLH-DSA-SHAKE-128f", "pqcrypto").sizes(MESSAGE)
    assert (s["public_key_bytes"], s["secret_key_bytes"], s["signature_bytes"]) == (32, 64, 17088)
    k = algorithms.get("ML-KEM-768", "pqcrypto").sizes()
    assert (k["public_key_bytes"], k["ciphertext_bytes"], k["shared_secret_bytes"]) == (1184, 1088, 32)


# ----- pure Python -----
def test_pure_python_registers_ml_dsa_and_slh_dsa():
    pytest.importorskip("dilithium_py")
    pytest.importorskip("slhdsa")
    names = set(algorithms.names(backend="pure-python"))
    assert {"ML-DSA-44", "ML-DSA-65", "ML-DSA-87"} | set(SLH_SETS) <= names
    a = algorithms.get("SLH-DSA-SHA2-128f", "pure-python")
    assert a.nist_level == 1 and a.family == "hash-based" and a.library_version in a.implementation
    assert algorithms.get("ML-DSA-65", "pure-python").nist_level == 3


@pytest.mark.parametrize("name", ["ML-DSA-44", "SLH-DSA-SHA2-128f"])
def test_pure_python_sign_verify_and_tampering(name):
    pytest.importorskip("dilithium_py")
    pytest.importorskip("slhdsa")
    a = algorithms.get(name, "pure-python")
    t = a.trial("sign", MESSAGE).bound()  # checks: verifies, tampered signature and message refused
    t.check(t.run())
    pk, sk = a.generate()
    sig = a.signer(sk)(MESSAGE)
    assert len(sig) == a.declared_sizes()["signature_max_bytes"]
    assert a.verifier(pk)(MESSAGE, sig[:-1]) is False


# ----- agreement between implementations of the same standard -----
@pytest.mark.parametrize("signer, verifier", [
    ("ML-DSA-44@pure-python", "ML-DSA-44@liboqs"), ("ML-DSA-44@liboqs", "ML-DSA-44@pure-python"),
    ("ML-DSA-44@pure-python", "ML-DSA-44@cryptography"), ("ML-DSA-44@cryptography", "ML-DSA-44@pqcrypto"),
    ("SLH-DSA-SHA2-128f@pure-python", "SLH-DSA-SHA2-128f@pqcrypto"),
    ("SLH-DSA-SHA2-128f@pqcrypto", "SLH-DSA-SHA2-128f@pure-python"),
])
def test_cross_verification_same_standard(signer, verifier):
    pytest.importorskip("dilithium_py")
    pytest.importorskip("slhdsa")
    for name in (signer, verifier):
        n, _, b = name.partition("@")
        if b not in algorithms.backends_of(n):
            pytest.skip(f"{name} not available")
    out = cross_verify(signer, verifier, MESSAGE)
    assert out == {"verifies": True, "rejects_tampered": True}


def test_round3_sphincs_is_not_slh_dsa():
    if "liboqs" not in algorithms.backends_of("SPHINCS+-SHA2-128f-simple"):
        pytest.skip("liboqs not available")
    assert cross_verify("SPHINCS+-SHA2-128f-simple@liboqs", "SLH-DSA-SHA2-128f@pqcrypto",
                        MESSAGE)["verifies"] is False
    assert cross_verify("SLH-DSA-SHA2-128f@pqcrypto", "SPHINCS+-SHA2-128f-simple@liboqs",
                        MESSAGE)["verifies"] is False


def test_round3_differs_from_fips205_only_by_prefix_when_fors_indices_are_bytes():
    """Without FIPS 205's M' prefix, round-3 signatures verify exactly when a = 8 (192f sets)."""
    pytest.importorskip("slhdsa")
    if "liboqs" not in algorithms.backends_of("SPHINCS+-SHA2-128f-simple"):
        pytest.skip("liboqs not available")
    t = check_round3_internal(["SHA2-128f", "SHAKE-192f"])
    assert not t["verifies_as_slh_dsa_pure"].any()
    assert list(t["verifies_as_slh_dsa_internal"]) == [False, True]
    assert list(t["fors_height_a"]) == [6, 8]


def test_signature_sizes_table():
    pytest.importorskip("dilithium_py")
    from pqlab.studies.message_scaling import signature_sizes

    t = signature_sizes(["Ed25519", "ML-DSA-44@pure-python", "ML-DSA-44@pqcrypto", "ML-DSA-44@pqcrypto"])
    assert list(t["signature_max_bytes"]) == [64, 2420, 2420]  # duplicates collapse
    assert list(t["public_key_bytes"]) == [32, 1312, 1312]
