"""What notebook 02 measures: the message lengths of a sweep, the verified rows and raw samples of its runs
(with a ratio of two medians over rounds), the implementations compared, and each algorithm's signature size.

Message lengths: :func:`sweep_lengths` follows SUPERCOP's ``crypto_sign`` loop (``mlen += 1 + mlen / 4``:
0, 1, 2, 3, 4, 6, 8, 11, ... each about 1.25 times the last) up to 1 MiB; :func:`~.published.study_lengths`
is the study's grid.
"""
from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
import pandas as pd

from pqlab.backends import algorithms
from pqlab.backends.algorithms import resolve
from pqlab.checks.interop import round3_equivalent
from pqlab.measure import stats
from pqlab.measure.stats import ratio_ci
from pqlab.store.results import verified_rows

MIB = 1 << 20


def sweep_lengths(max_bytes: int = MIB, stride: int = 1) -> list[int]:
    """SUPERCOP's message lengths 0, 1, 2, 3, 4, 6, 8, 11, 14, ... (``n + 1 + n // 4``) up to `max_bytes`,
    which is last; `stride` keeps every stride-th length (a quick run); 0 and `max_bytes` are always kept."""
    if max_bytes < 0 or stride < 1:
        raise ValueError("max_bytes must be >= 0 and stride >= 1")
    out, n = [], 0
    while n < max_bytes:
        out.append(n)
        n += 1 + n // 4
    out = out[::stride]
    out.append(max_bytes)
    return sorted(dict.fromkeys(int(x) for x in out))


def samples_of(*runs) -> dict:
    """Raw per-call times (ns) of `runs`, keyed (algorithm, backend, operation, message length; -1 for
    none)."""
    frames = [r.samples for r in runs if r is not None and not r.samples.empty]
    if not frames:
        return {}
    s = pd.concat(frames, ignore_index=True)
    s = s.assign(n=pd.to_numeric(s["message_bytes"]).astype(float).fillna(-1.0))
    rec = stats.round_records(*runs)
    return {key: stats.with_rounds(g, "time_ns", rec)
            for key, g in s.groupby(["algorithm", "backend", "operation", "n"])}


def _get(samples: dict | None, algorithm: str, backend: str, operation: str, n) -> np.ndarray:
    n = -1.0 if n is None or pd.isna(n) else float(n)
    return (samples or {}).get((algorithm, backend, operation, n), np.array([]))


def _ratio(samples: dict | None, num: tuple, den: tuple, num_ns: float,
           den_ns: float) -> tuple[float, float, float]:
    """num / den of two measured medians with an interval over rounds when both samples are known."""
    a, b = _get(samples, *num), _get(samples, *den)
    return ratio_ci(a, b, "median") if a.size and b.size else (num_ns / den_ns, math.nan, math.nan)


def measured(*runs_or_frames) -> pd.DataFrame:
    """The verified measurement rows of runs (or measurement frames), noop rows dropped."""
    frames = [getattr(r, "measurements", r) for r in runs_or_frames]
    df = pd.concat(frames, ignore_index=True)
    df = verified_rows(df).copy()
    df["message_bytes"] = pd.to_numeric(df["message_bytes"])
    return df.reset_index(drop=True)


def comparison_set(names: Iterable[str]) -> list[str]:
    """Every implementation ("NAME@backend") of each name, and liboqs's round-3 SPHINCS+ set doing each
    SLH-DSA set's work."""
    out = []
    for name in names:
        out += [f"{name}@{b}" for b in algorithms.backends_of(name)]
        old = round3_equivalent(name)
        if old and "liboqs" in algorithms.backends_of(old):
            out.append(f"{old}@liboqs")
    return list(dict.fromkeys(out))


def signature_sizes(names: Iterable, signatures: int = 64, message: bytes = b"\x00" * 100) -> pd.DataFrame:
    """Per algorithm: family, NIST level, public key bytes and the maximum signature length (the declared
    maximum where the library states one, else the longest of `signatures` signatures, e.g. DER-encoded
    ECDSA's)."""
    rows = []
    unique = {a.key: a for a in resolve(names)}  # "ML-DSA-44" and "ML-DSA-44@liboqs" are one adapter
    for algo in unique.values():
        pk, sk = keys = algo.generate()
        sizes = algo.key_sizes(keys)
        declared = algo.declared_sizes().get("signature_max_bytes")
        sign = algo.signer(sk)
        longest = declared or max(len(sign(message)) for _ in range(signatures))
        rows.append({"algorithm": algo.name, "backend": algo.backend, "family": algo.family,
                     "nist_level": algo.nist_level, "public_key_bytes": sizes["public_key_bytes"],
                     "signature_max_bytes": longest})
    out = pd.DataFrame(rows)
    out["nist_level"] = out["nist_level"].astype("Int64")
    return out
