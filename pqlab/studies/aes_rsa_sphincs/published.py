"""The study's side of notebook 01 (study 000, Java + Bouncy Castle): which of our algorithms each of its
rows is compared with, its platform and its number of runs as transcribed, and its numbers to the digits it
printed.
"""
from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd

from pqlab.core.formatting import MISSING, is_missing
from pqlab.core.references import load_reference, reference_source

TOPIC = "01_aes_rsa_sphincs"
#: our algorithm -> the study's row it is compared with (the study's SPHINCS+ construction is not stated)
STUDY_ROW = {"AES-256-CBC": "AES-256-CBC", "RSA-2048-PKCS1v15-enc": "RSA-2048", "RSA-2048": "RSA-2048",
             "SPHINCS+-SHAKE-128f-simple": "SPHINCS+-SHAKE-128f",
             "SPHINCS+-SHAKE-128f-robust": "SPHINCS+-SHAKE-128f"}
#: the within-system ratios compared with the study's: (study row, numerator, denominator)
PAIRS = [("SPHINCS+-SHAKE-128f", "sign", "verify"), ("SPHINCS+-SHAKE-128f", "sign", "keygen"),
         ("RSA-2048", "keygen", "decrypt"), ("RSA-2048", "decrypt", "encrypt"),
         ("AES-256-CBC", "keygen", "encrypt")]
#: Operations that play the same role in the study's three columns.
OPERATION_ROLE = {"keygen": "keygen", "encrypt": "encrypt/sign", "sign": "encrypt/sign",
                  "encaps": "encrypt/sign", "decrypt": "decrypt/verify", "verify": "decrypt/verify",
                  "decaps": "decrypt/verify"}
#: the kinds of system a time comes from: the study, a Bouncy Castle run's cold calls and steady state, Python
STUDY = "study"
COLD, STEADY, PYTHON = "jvm cold", "jvm steady state", "python"


def construction_of(algorithm: str) -> str:
    """"simple" / "robust" for SPHINCS+ names, "" otherwise."""
    return algorithm.rsplit("-", 1)[1] if algorithm.startswith("SPHINCS+") else ""


def constructions(study_row: str) -> list[str]:
    """Our constructions compared with one study row: ["robust", "simple"] for its SPHINCS+, [""]
    otherwise."""
    return sorted({construction_of(a) for a, s in STUDY_ROW.items() if s == study_row}) or [""]


def study_platform() -> dict:
    """The study's platform as transcribed (``sources.yaml``): Bouncy Castle release, Java."""
    return reference_source(TOPIC)["platform"]


def study_label(reference: pd.DataFrame | None = None) -> str:
    """E.g. "study (BC 1.72, mean of 5)", from the transcribed platform and method."""
    return f"{STUDY} (BC {study_platform()['bouncycastle']}, mean of {study_runs(reference)})"


def study_runs(reference: pd.DataFrame | None = None) -> int:
    """How many runs the study says it averaged each operation over (its Methodology, as transcribed)."""
    return int((load_reference(TOPIC) if reference is None else reference)["runs"].iloc[0])


def digits(published) -> int:
    """Significant digits of a number as printed ("≈2.0" -> 2, "≈0.7" -> 1, "≈211.5" -> 4)."""
    return max(1, len(re.sub(r"\D", "", str(published)).lstrip("0")))


def round_sig(x: float, n: int) -> float:
    """`x` to `n` significant digits (missing and zero values unchanged)."""
    return float(f"{x:.{n}g}") if not is_missing(x) and np.isfinite(x) and x else x


def approx(x, n: int, low=math.nan, high=math.nan) -> str:
    """A factor known to `n` significant digits, as such: "≈3×", "≈18.2×", with its interval to the same
    digits where it has one ("≈19× [17, 21]")."""
    def one(v):
        r = round_sig(float(v), n)
        return f"{r:,.{max(0, n - 1 - math.floor(math.log10(abs(r))))}f}" if r else "0"
    if is_missing(x):
        return MISSING
    ci = "" if is_missing(low) or is_missing(high) else f" [{one(low)}, {one(high)}]"
    return f"≈{one(x)}×{ci}"
