"""The study's side of notebook 02: study 001's published table (its message lengths and its RSA, ECDSA and
SPHINCS columns), its SPHINCS-256 as compiled, which of our algorithms stand in for each column, and the facts
its own numbers state (how often RSA beats ECDSA, how many runs its times suggest).
"""
from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import pandas as pd

from pqlab.backends import algorithms
from pqlab.checks.interop import PURE_BACKEND
from pqlab.core.formatting import fmt_bytes, fmt_span
from pqlab.core.schema import convert_unit
from pqlab.core.vocabulary import family_of

TOPIC = "02_message_scaling"
#: The study's RSA and ECDSA columns -> the algorithms we measure in their place (its SPHINCS:
#: study_comparators).
CLASSICAL_MAP = {"RSA": ["RSA-2048-PKCS1v15-sig", "RSA-2048-PSS"], "ECDSA": ["ECDSA-P256"]}
#: What the study states, or not, about its RSA and ECDSA (its SPHINCS is described from data: study_labels).
STUDY_NOTES = {"RSA": "MIRACL RSA; modulus size, padding and hash not stated",
               "ECDSA": "MIRACL ECDSA; curve and hash not stated"}


def study_lengths(reference: pd.DataFrame | None = None) -> list[int]:
    """The study's message lengths in bytes (10 000 .. 100 000), from its published table."""
    ref = load_study() if reference is None else reference
    return sorted(int(x) for x in ref["message_bytes"].unique())


def load_study() -> pd.DataFrame:
    from pqlab.core.references import load_reference

    return load_reference(TOPIC)


def sphincs256() -> dict:
    """SPHINCS-256 as study 001 ran it: the params.h constants of the code it cites, the key and signature
    lengths api.h derives from them, and how it was built (``data/reference/02_study_sphincs256``)."""
    from pqlab.core.references import load_reference

    ref = load_reference("02_study_sphincs256")
    c = {k: int(v) for k, v in zip(ref["constant"], ref["value"])}
    n = c["HASH_BYTES"]
    horst = 64 * n + ((c["HORST_LOGT"] - 6) * n + c["HORST_SKBYTES"]) * c["HORST_K"]
    layers = c["TOTALTREE_HEIGHT"] // c["SUBTREE_HEIGHT"]
    public = (2 * c["HORST_LOGT"] + 1) * n  # (N_MASKS + 1) * HASH_BYTES
    signature = (c["MESSAGE_HASH_SEED_BYTES"] + (c["TOTALTREE_HEIGHT"] + 7) // 8 + horst
                 + layers * c["WOTS_L"] * n + c["TOTALTREE_HEIGHT"] * n)
    return {"hash_bytes": n, "public_key_bytes": public, "secret_key_bytes": c["SEED_BYTES"] + public - n
            + c["SK_RAND_SEED_BYTES"], "signature_bytes": signature, **ref.attrs["source"]["implementation"]}


def parameter_set(name: str) -> tuple[int, str] | None:
    """(hash length n in bytes, "f" or "s") of a SPHINCS+ / SLH-DSA name; its level in bits is 8 n."""
    m = re.match(r"^(?:SPHINCS\+|SLH-DSA)-[A-Z0-9]+-(\d{3})([fs])", name)
    return (int(m.group(1)) // 8, m.group(2)) if m else None


def study_comparators(tradeoffs: Sequence[str] = ("f",)) -> dict[str, list[str]]:
    """The study's column labels -> our algorithms ("NAME@backend"): for its SPHINCS (SPHINCS-256) every
    native round-3 SPHINCS+ (simple) and FIPS 205 SLH-DSA set with the same hash length, in the given
    `tradeoffs` ("f": fast signing, "s": small signatures)."""
    n = sphincs256()["hash_bytes"]
    same = [f"{a}@{b}" for a in algorithms.names()
            if (p := parameter_set(a)) and p[0] == n and p[1] in tradeoffs and not a.endswith("-robust")
            for b in algorithms.backends_of(a) if b != PURE_BACKEND]
    return {"SPHINCS": same, **{k: list(v) for k, v in CLASSICAL_MAP.items()}}


def study_labels(sizes: pd.DataFrame | None = None, comparators: dict | None = None) -> dict[str, str]:
    """What each of the study's columns really was and how far ours are from it, from the data (the
    SPHINCS-256 reference table, and our signature `sizes`)."""
    s = sphincs256()
    names = sorted({x.split("@")[0] for x in (comparators or study_comparators())["SPHINCS"]})
    sig = (sizes[sizes["algorithm"].isin(names)]["signature_max_bytes"] if sizes is not None
           and "signature_max_bytes" in sizes else pd.Series(dtype=float))
    ours = f"; signatures of {fmt_span(sig)}" if len(sig) else ""
    return {"SPHINCS": (f"SPHINCS-256: {s['code']}, built with {s['compiler']}, called through "
                        f"{s['binding']}; hash length {8 * s['hash_bytes']} bits, signatures of "
                        f"{fmt_bytes(s['signature_bytes'])}. Set beside the SPHINCS+/SLH-DSA sets with the "
                        f"same hash length ({', '.join(names) or 'none'}{ours}): the same n, but a different "
                        "construction (HORST, no tweakable hashes) and tree parameters, so not the same "
                        "scheme"), **STUDY_NOTES}


def study_as_measurements(reference: pd.DataFrame | None = None) -> pd.DataFrame:
    """The study's table in pqlab's column names (time_ns_median, backend 'study'): the same functions fit
    it."""
    ref = load_study() if reference is None else reference
    return pd.DataFrame({"algorithm": ref["algorithm"], "backend": "study",
                         "implementation": ref["implementation"], "operation": ref["operation"],
                         "message_bytes": ref["message_bytes"],
                         "time_ns_median": convert_unit(ref["time_ms"], "ms", "ns"),
                         "family": ref["algorithm"].map(family_of)})


def study_findings(reference: pd.DataFrame | None = None) -> dict:
    """Facts from the study's own table: how often RSA beats ECDSA, how flat SPHINCS signing is."""
    ref = load_study() if reference is None else reference
    wide = ref.pivot_table(index=["operation", "message_bytes"], columns="algorithm", values="time_ms")
    out = {}
    for op in ("sign", "verify"):
        w = wide.loc[op]
        out[f"rsa_faster_than_ecdsa_{op}"] = int((w["RSA"] < w["ECDSA"]).sum())
        out[f"sizes_{op}"] = len(w)
        out[f"ecdsa_over_rsa_{op}_min"] = float((w["ECDSA"] / w["RSA"]).min())
        out[f"ecdsa_over_rsa_{op}_max"] = float((w["ECDSA"] / w["RSA"]).max())
        out[f"sphincs_{op}_min_ms"] = float(w["SPHINCS"].min())
        out[f"sphincs_{op}_max_ms"] = float(w["SPHINCS"].max())
    both = wide.loc["sign"] + wide.loc["verify"]
    out["rsa_faster_than_ecdsa_both"] = int((both["RSA"] < both["ECDSA"]).sum())
    # the mean of k readings of a 1 µs timer times k is whole µs: the smallest k that makes most RSA/ECDSA
    # cells so
    us = convert_unit(ref.loc[ref["algorithm"].isin(CLASSICAL_MAP), "time_ms"].to_numpy(float), "ms", "µs")
    whole = {k: int((np.abs(us * k - np.round(us * k)) < 0.01).sum()) for k in range(1, 11)}
    k = next((k for k, n in whole.items() if n >= 0.9 * us.size), None)
    out.update(runs_inferred=k, runs_inferred_cells=whole.get(k, 0), runs_cells=int(us.size))
    return out
