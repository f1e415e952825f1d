"""Notebook 06's published evidence: each published number (``data/reference/06_tls_published``) as a ratio
to its source's own baseline, beside ours for the same question, with what our number is, how each side
authenticates and every other difference the reference records."""
from __future__ import annotations

import re

import numpy as np
import pandas as pd

from pqlab.studies.tls_handshake.measure import SIGNATURE_OPS, signature_bytes

REFERENCE = "06_tls_published"

#: What our number set beside a published one is (the reference's ``ours`` key, before any ``:mode``).
OURS = {"quic_s1": "the model's QUIC server flight (CRYPTO bytes)",
        "quic_c2": "the model's QUIC client flight (CRYPTO bytes)",
        "signature_bytes": "a signature as measured", "root_der": "our root certificate (DER)"}


#: The chain depth of our handshakes set beside published ones.
PUBLISHED_DEPTH = 1
#: Back references in the reference's notes ("as above"), replaced by the note they point at.
_ABOVE = re.compile(r"^\s*(?:as above|same setting as the row above)\W*", re.IGNORECASE)


def recorded_differences(reference: pd.DataFrame) -> list[str]:
    """Each published row's recorded difference from our setting (its ``note`` in ``data/reference``), a note
    that points at the row above replaced by that row's note (a table's rows stand alone)."""
    out: list[str] = []
    for note in reference["note"]:
        text = "" if pd.isna(note) else str(note).strip()
        if out and _ABOVE.match(text):
            rest = _ABOVE.sub("", text).strip(" ()")
            text = out[-1] + (f" ({rest})" if rest and rest.lower() not in out[-1].lower() else "")
        out.append(text)
    return out


def authentication(key, difference: str) -> str:
    """How each side authenticates, for a row whose number of ours is a handshake (``key`` ``quic_*:mode``):
    the source's, as its recorded difference names it, against our X.509 chains; "" for other rows."""
    if not isinstance(key, str) or ":" not in key:
        return ""
    theirs = "raw public keys" if "raw public key" in difference.lower() else (
        "X.509 chain" if "x.509" in difference.lower() else "not stated")
    return f"theirs: {theirs}; ours: X.509 chain of depth {PUBLISHED_DEPTH} ({key.split(':')[1]})"


def published_beside_ours(reference: pd.DataFrame, budget: pd.DataFrame, certs: pd.DataFrame,
                          ops) -> pd.DataFrame:
    """Each published number as a ratio to its source's own baseline, beside ours for the same question, each
    row labelled with what our number is (``ours_is``), how each side authenticates (``authentication``,
    handshake rows) and every other recorded difference (``differs``, from the reference's notes)."""
    model = budget.set_index(["pair", "mode", "depth"])
    der = certs.set_index("signature")

    def ours(key, subject):
        if not isinstance(key, str) or not isinstance(subject, str):
            return np.nan
        if key == "root_der":
            return float(der.loc[subject, "root"]) if subject in der.index else np.nan
        if key == "signature_bytes":
            return float(signature_bytes(ops, subject)) if subject in SIGNATURE_OPS else np.nan
        column, mode = key.split(":")
        at = (subject, mode, PUBLISHED_DEPTH)
        return float(model.loc[at, column]) if at in model.index else np.nan

    rows = []
    for r, differs in zip(reference.itertuples(), recorded_differences(reference)):
        mine, base = ours(r.ours, r.subject), ours(r.ours, r.baseline)
        rows.append({"source": r.source, "quantity": r.quantity, "subject": r.subject, "baseline": r.baseline,
                     "published": r.value, "published_baseline": r.baseline_value,
                     "published_ratio": r.value / r.baseline_value, "ours": mine, "ours_baseline": base,
                     "our_ratio": mine / base, "ours_over_published": mine / r.value,
                     "ours_is": OURS.get(str(r.ours).split(":")[0], "none of ours") if isinstance(r.ours, str)
                     else "none of ours", "authentication": authentication(r.ours, differs),
                     "differs": differs})
    return pd.DataFrame(rows)
