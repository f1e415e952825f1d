"""The words of notebook 05's energy study: its kinds and uses, the *basis* every energy is labelled by,
and the names and order of its algorithms and operations.

=================================  ==========================================================
basis                              meaning
=================================  ==========================================================
``published (gross)``              the study's table: whole-board energy, idle included (near, not equal
                                   to, time x power:
                                   :func:`~pqlab.studies.energy_pi4.published.time_power_check`)
``replay (gross)``                 a step trace reconstructed from its times and powers, integrated
``replay (net of assumed idle)``   the same minus an *assumed* idle power (the study gives none)
``measured (net)``                 a live source here, minus the idle baseline around the window
``measured (gross)``               the same, baseline included (comparable with the study)
``modelled (<W> W x time)``        a constant power given as a parameter x our measured time
=================================  ==========================================================
"""
from __future__ import annotations

import re

import pandas as pd

from pqlab.core.vocabulary import CLASSICAL_PUBLIC_KEY

TOPIC = "05_energy"
KIND_LABEL = {"kem": "KEM", "sig": "signature", "cipher": "AEAD"}
#: The operations of one use: an ephemeral key exchange, a message signed and checked, a message
#: sealed and opened.  Recommendations compare algorithms by the sum over these.
USE = {"kem": ("keygen", "encaps", "decaps"), "sig": ("sign", "verify"), "cipher": ("encrypt", "decrypt")}
MEASURED_NET, MEASURED_GROSS = "measured (net)", "measured (gross)"
OPERATION_ORDER = ("keygen", "encaps", "decaps", "sign", "verify", "encrypt", "decrypt")


def modelled_basis(watts: float) -> str:
    return f"modelled ({watts:g} W x time)"


def is_modelled(basis: str) -> bool:
    return str(basis).startswith("modelled")


def _is_pq(family) -> bool:
    return family not in CLASSICAL_PUBLIC_KEY


def _ops(kind: str) -> str:
    return " + ".join(USE[kind])


def scheme_of(name: str) -> str:
    """The scheme without its parameter set: ML-KEM-768 -> ML-KEM, SPHINCS+-SHA2-128s-simple ->
    SPHINCS+-SHA2-s-simple."""
    return re.sub(r"-\d+([a-z]?)(?=-|$)", lambda m: f"-{m.group(1)}" if m.group(1) else "", name)


def short_name(name: str) -> str:
    """A compact label for crowded figures: Classic-McEliece-348864 -> McEliece-348864,
    SPHINCS+-SHA2-128s-simple -> SPHINCS+-128s."""
    return (name.replace("Classic-McEliece-", "McEliece-").replace("SPHINCS+-SHA2-", "SPHINCS+-")
            .replace("-simple", ""))


def _parameter(name: str) -> int:
    """The parameter-set number of a name (ML-KEM-768 -> 768; SPHINCS+-SHA2-128s -> 128), else 0."""
    numbers = re.findall(r"\d+", name.replace("SHA2", "").replace("P256", ""))
    return int(numbers[-1]) if numbers else 0


def sorted_rows(df: pd.DataFrame) -> pd.DataFrame:
    """KEMs, then signatures, then AEADs; by family, scheme, parameter set and operation order."""
    kinds = {k: i for i, k in enumerate(KIND_LABEL)}
    ops = {o: i for i, o in enumerate(OPERATION_ORDER)}
    key = {"kind": kinds.get, "operation": ops.get, "_scheme": scheme_of, "_param": _parameter}
    out = df.assign(_scheme=df["algorithm"], _param=df["algorithm"])
    out = out.sort_values(["kind", "family", "_scheme", "_param", "operation"],
                          key=lambda s: s.map(key[s.name]) if s.name in key else s)
    return out.drop(columns=["_scheme", "_param"])
