"""The study's side of notebook 03: Gravity-SPHINCS as published
(``data/reference/03_memory_gravity_sphincs.csv`` and gravity-rs's constants), and its row beside the
SPHINCS+/SLH-DSA sets measured here with the same hash length.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

from pqlab.core import formatting
from pqlab.core.formatting import Column, is_missing
from pqlab.core.schema import convert_unit
from pqlab.measure.stats import ratio_to_published
from pqlab.runners.memory.worker import SIGNATURE_OPERATIONS
from pqlab.studies.memory_footprint.tables import _get

if TYPE_CHECKING:
    import pandas as pd


TOPIC = "03_memory_footprint"
REFERENCE_TABLE = "03_memory_gravity_sphincs"
#: gravity-rs's constants (hash length, GravitySmall's parameters), read from the code the study names
PARAMETERS_TABLE = "03_study_gravity_params"


def published_table(reference: pd.DataFrame):
    """The study's published values (:data:`REFERENCE_TABLE`, rows with a value) as a reader sees them: each
    value exactly as published (its unit beside it differs per row, so no column unit rounds it)."""
    shown = reference[reference["value"].notna()]
    shown = shown.assign(value=shown["value"].map(lambda v: format(v, ".10g")))
    return formatting.table(shown, ["source_block", "metric", "operation", Column("value", kind="text"),
                                    "unit"])


def load_gravity() -> dict:
    """The study's published figures (sphincs-bench block), with units made explicit, and the hash length
    of gravity-rs (``hash_bytes``); None = not published."""
    from pqlab.core.references import load_reference

    ref = load_reference(REFERENCE_TABLE)
    bench = ref[ref["source_block"].str.startswith("sphincs-bench")]

    def value(metric: str, operation: str | None = None):
        sel = bench[(bench["metric"] == metric) & ((bench["operation"] == operation) if operation else
                                                   bench["operation"].isna())]
        v = sel["value"].dropna()
        return float(v.iloc[0]) if len(v) else None

    parameters = load_reference(PARAMETERS_TABLE)
    params = parameters.set_index("constant")["value"]
    repository = str(parameters.attrs["source"].get("sources", {}).get("gravity-rs", "")).split(" ")[0]
    out = {"repository": repository or None, "scheme": bench["scheme"].iloc[0],
           "backend": bench["backend"].iloc[0], "machine": bench["machine"].iloc[0],
           "public_key_bytes": value("public_key_size"),
           "secret_key_bytes": value("secret_key_size"), "signature_bytes": value("signature_size"),
           "signed_message_bytes": value("signed_message_size"), "hash_bytes": int(params["HASH_SIZE"])}
    for op in SIGNATURE_OPERATIONS:
        out[f"{op}_ms"] = value("time", op)
    for op in ("sign", "verify"):
        out[f"{op}_heap_bytes"] = value("peak_heap", op)
    out["anomalies"] = ref.attrs["source"].get("anomalies", [])
    out["placeholders"] = int(ref["value"].isna().sum())
    out["rows"] = len(ref)
    return out


def hash_bytes(algorithm: str, public_key_bytes) -> int | None:
    """The hash length n of a SPHINCS+ or SLH-DSA set: its public key is PK.seed and PK.root, n bytes
    each (FIPS 205), so n is half the measured public key; None for other schemes."""
    if not re.match(r"^(SPHINCS\+-|SLH-DSA-|SLH_DSA_)", str(algorithm)) or is_missing(public_key_bytes):
        return None
    return int(public_key_bytes) // 2


def compare_gravity(memory: pd.DataFrame, time_run, sizes: pd.DataFrame,
                    message_bytes: int | None = None) -> pd.DataFrame:
    """The study's Gravity-SPHINCS (Small) row beside every SPHINCS+/SLH-DSA set measured here whose
    hashes have the same length.  Times: the median of our samples; ``study_over_ours_<op>`` is the
    study's time over ours with an interval from our samples only (the study published one call)."""
    import numpy as np
    import pandas as pd

    g = load_gravity()
    rows = [{"source": "study (published)", "algorithm": g["scheme"], "implementation": g["backend"],
             "hash_bytes": g["hash_bytes"], "public_key_bytes": g["public_key_bytes"],
             "secret_key_bytes": g["secret_key_bytes"], "signature_bytes": g["signature_bytes"],
             **{f"{op}_ms": g[f"{op}_ms"] for op in SIGNATURE_OPERATIONS},
             "sign_heap_bytes": g["sign_heap_bytes"], "verify_heap_bytes": g["verify_heap_bytes"]}]
    sizes_seen = memory["message_bytes"].dropna() if "message_bytes" in memory else []
    size = message_bytes if message_bytes is not None else (sizes_seen.min() if len(sizes_seen) else None)
    for _, s in sizes.iterrows():
        if hash_bytes(s["algorithm"], s["public_key_bytes"]) != g["hash_bytes"]:
            continue
        a, b = s["algorithm"], s["backend"]
        row = {"source": "measured here", "algorithm": a, "implementation": b,
               "hash_bytes": hash_bytes(a, s["public_key_bytes"]), "public_key_bytes": s["public_key_bytes"],
               "secret_key_bytes": s["secret_key_bytes"], "signature_bytes": s["signature_bytes"]}
        for op in SIGNATURE_OPERATIONS:
            ns = (time_run.sample_values(a, op, backend=b, message_bytes=None if op == "keygen" else size)
                  if time_run is not None else np.array([]))
            row[f"{op}_ms"] = convert_unit(float(np.median(ns)), "ns", "ms") if len(ns) else None
            row[f"{op}_samples"] = len(ns)
            r, lo, hi = ratio_to_published(g[f"{op}_ms"], convert_unit(ns, "ns", "ms"))
            row.update({f"study_over_ours_{op}": r, f"study_over_ours_{op}_ci_low": lo,
                        f"study_over_ours_{op}_ci_high": hi})
        for op in ("sign", "verify"):
            for what, col in (("heap", "heap_bytes"), ("stack", "stack_bytes"),
                              ("heap_native", "heap_native_bytes")):
                row[f"{op}_{what}_bytes"] = _get(memory, a, op, col, size, backend=b)
        rows.append(row)
    out = pd.DataFrame(rows)
    for col in out:
        if col.endswith("_bytes") or col.endswith("_samples"):
            out[col] = pd.to_numeric(out[col], errors="coerce").round().astype("Int64")
        elif col not in ("source", "algorithm", "implementation"):
            out[col] = pd.to_numeric(out[col], errors="coerce")
    return out


def gravity_bars(comparison: pd.DataFrame) -> pd.DataFrame:
    """Long table for a bar chart: heap (and stack) during signing and verifying, study beside ours."""
    import pandas as pd

    rows = []
    for _, r in comparison.iterrows():
        label = r["algorithm"] + (", study" if r["source"].startswith("study") else
                                  ("" if r["implementation"] == "liboqs" else f" ({r['implementation']})"))
        for op in ("sign", "verify"):
            for what in ("heap", "heap_native", "stack"):
                v = r.get(f"{op}_{what}_bytes")
                if v is not None and not pd.isna(v):
                    rows.append({"label": label, "quantity": f"{op}: {what.replace('_', ' ')}",
                                 "bytes": max(float(v), 1.0)})
    return pd.DataFrame(rows, columns=["label", "quantity", "bytes"])
