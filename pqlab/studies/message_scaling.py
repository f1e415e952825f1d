"""How signing and verifying cost grows with the message: sweeps, a fitted cost model, agreement
checks between implementations, the study's table beside ours, and generated text.

Every signature scheme here hashes the message (once or twice) and then does work that does not
depend on its length, so its time is well described by

    t(n) = fixed + per_byte * n        (n = message length in bytes)

:func:`fit_linear_cost` fits that model per algorithm, backend and operation.  *Method*: weighted
least squares on the medians, each weighted by 1/se^2 where se is the standard error of the
median taken from its bootstrap 95% confidence interval (``(ci_high - ci_low) / 3.92``, floored
at 0.5% of the median so that a near-zero interval cannot dominate).  Timings deviate from a
straight line by more than their sampling error (caches, hash block boundaries), so the
standard errors of the two coefficients are scaled by sqrt(reduced chi^2) when that exceeds 1
(the Birge ratio).  Tables without confidence intervals (a study's published numbers) get
ordinary least squares.  The *crossover* length ``fixed / per_byte`` is where hashing the
message costs as much as everything else.

Message lengths: :func:`sweep_lengths` follows SUPERCOP's ``crypto_sign`` measurement loop
(``mlen += 1 + mlen / 4``: 0, 1, 2, 3, 4, 6, 8, 11, ... each about 1.25 times the last) up to 1 MiB;
:func:`study_lengths` is the study's grid, read from its table (10 000 .. 100 000 bytes).
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

from .. import algorithms
from ..algorithms import Algorithm, random_message, resolve
from ..formatting import fmt_bytes_binary, fmt_time_ns, slug
from ..results import verified_rows

STUDY = "02_message_scaling"
MIB = 1 << 20

#: The study's column labels -> the algorithms we measure in their place.
STUDY_MAP = {
    "SPHINCS": ["SPHINCS+-SHA2-128f-simple", "SPHINCS+-SHAKE-128f-simple"],
    "RSA": ["RSA-2048-PKCS1v15-sig", "RSA-2048-PSS"],
    "ECDSA": ["ECDSA-P256"],
}
#: The family of each study label (for the house colours).
STUDY_FAMILY = {"SPHINCS": "hash-based", "RSA": "RSA", "ECDSA": "elliptic-curve"}
#: What each study label really was, and why the comparison is loose (shown beside the table).
STUDY_CAVEATS = {
    "SPHINCS": "SPHINCS-256 (2015), an unoptimised Erlang port of SUPERCOP's reference code: not SPHINCS+, "
               "a different and larger parameter set (41,000-byte signatures) and hash (BLAKE/ChaCha)",
    "RSA": "MIRACL RSA; modulus size, padding and hash not stated",
    "ECDSA": "MIRACL ECDSA; curve and hash not stated",
}

PURE_BACKEND = "pure-python"


# ----- message lengths -----
def sweep_lengths(max_bytes: int = MIB, stride: int = 1) -> list[int]:
    """SUPERCOP's message lengths 0, 1, 2, 3, 4, 6, 8, 11, 14, ... (``n + 1 + n // 4``) up to
    `max_bytes`, with `max_bytes` itself last.  `stride` keeps every stride-th length (a quick
    run); 0 and `max_bytes` are always kept."""
    if max_bytes < 0 or stride < 1:
        raise ValueError("max_bytes must be >= 0 and stride >= 1")
    out, n = [], 0
    while n < max_bytes:
        out.append(n)
        n += 1 + n // 4
    out = out[::stride]
    out.append(max_bytes)
    return sorted(dict.fromkeys(int(x) for x in out))


def study_lengths(reference: pd.DataFrame | None = None) -> list[int]:
    """The study's message lengths in bytes (10 000 .. 100 000), from its published table."""
    ref = load_study() if reference is None else reference
    return sorted(int(x) for x in ref["message_bytes"].unique())


def load_study() -> pd.DataFrame:
    from ..reference import load_reference

    return load_reference(STUDY)


# ----- measurements -----
def measured(*runs_or_frames) -> pd.DataFrame:
    """The verified measurement rows of runs (or measurement frames), noop rows dropped."""
    frames = [getattr(r, "measurements", r) for r in runs_or_frames]
    df = pd.concat(frames, ignore_index=True)
    df = verified_rows(df).copy()
    df["message_bytes"] = pd.to_numeric(df["message_bytes"])
    return df.reset_index(drop=True)


def comparison_set(names: Iterable[str]) -> list[str]:
    """Every implementation ("NAME@backend") of each name, plus liboqs's round-3 SPHINCS+ set doing the
    same work as each SLH-DSA set: what the pure-Python implementations are compared with."""
    out = []
    for name in names:
        out += [f"{name}@{b}" for b in algorithms.backends_of(name)]
        old = round3_equivalent(name)
        if old and "liboqs" in algorithms.backends_of(old):
            out.append(f"{old}@liboqs")
    return list(dict.fromkeys(out))


def median_table(df: pd.DataFrame) -> pd.DataFrame:
    """Medians and quartiles in µs, one row per algorithm, backend, operation and length."""
    out = df[["algorithm", "backend", "operation", "message_bytes", "samples"]].copy()
    for c in ("median", "q1", "q3"):
        out[f"time_us_{c}"] = df[f"time_ns_{c}"] / 1e3
    out["flags"] = df["flags"].fillna("")
    out["message_bytes"] = out["message_bytes"].astype("Int64")
    return out.sort_values(["algorithm", "backend", "operation", "message_bytes"]).reset_index(drop=True)


def study_as_measurements(reference: pd.DataFrame | None = None) -> pd.DataFrame:
    """The study's table in pqlab's column names (time_ns_median, backend 'study'), so that the
    same functions fit and plot it."""
    ref = load_study() if reference is None else reference
    return pd.DataFrame({"algorithm": ref["algorithm"], "backend": "study", "implementation": ref["implementation"],
                         "operation": ref["operation"], "message_bytes": ref["message_bytes"],
                         "time_ns_median": ref["time_ms"] * 1e6, "family": ref["algorithm"].map(STUDY_FAMILY)})


def signature_sizes(names: Iterable, signatures: int = 64, message: bytes = b"\x00" * 100) -> pd.DataFrame:
    """Per algorithm: family, NIST level, public key bytes and the maximum signature length (the
    declared maximum where the library states one, else the longest of `signatures` signatures,
    e.g. 72 bytes for DER-encoded ECDSA P-256, which varies from 70 to 72)."""
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


# ----- the cost model -----
def _wls(x: np.ndarray, y: np.ndarray, se: np.ndarray | None) -> dict:
    X = np.column_stack([np.ones_like(x), x])
    w = np.ones_like(y) if se is None else 1.0 / se ** 2
    XtW = X.T * w
    cov = np.linalg.inv(XtW @ X)
    beta = cov @ (XtW @ y)
    resid = y - X @ beta
    dof = len(y) - 2
    chi2 = float(np.sum(w * resid ** 2))
    ybar = np.sum(w * y) / np.sum(w)
    ss_tot = float(np.sum(w * (y - ybar) ** 2))
    r2 = 1 - chi2 / ss_tot if ss_tot > 0 else math.nan
    if dof <= 0:
        return {"beta": beta, "se": np.array([math.nan, math.nan]), "r2": r2, "chi2_red": math.nan}
    chi2_red = chi2 / dof
    scale = chi2_red if se is None else max(1.0, chi2_red)  # OLS: residual variance; WLS: Birge ratio
    return {"beta": beta, "se": np.sqrt(np.diag(cov) * scale), "r2": r2, "chi2_red": chi2_red}


def fit_linear_cost(df: pd.DataFrame, by: Sequence[str] = ("algorithm", "backend", "operation"),
                    min_sizes: int = 3, se_floor: float = 0.005) -> pd.DataFrame:
    """Fit t(n) = fixed + per_byte * n per group (see the module docstring for the method).

    Returns one row per group: fixed_ns, fixed_ns_se, per_byte_ns, per_byte_ns_se, crossover_bytes
    (fixed / per_byte; inf when per_byte <= 0), per_byte_significant (per_byte > 2 se), r2,
    chi2_red, n_sizes, min_bytes, max_bytes, method.  Groups with fewer than `min_sizes`
    distinct lengths are skipped.
    """
    by = list(by)
    rows = []
    have_ci = {"time_ns_ci_low", "time_ns_ci_high"} <= set(df.columns)
    data = df.dropna(subset=["message_bytes", "time_ns_median"])
    for key, g in data.groupby(by, sort=False):
        g = g.sort_values("message_bytes")
        if g["message_bytes"].nunique() < min_sizes:
            continue
        x = g["message_bytes"].to_numpy(float)
        y = g["time_ns_median"].to_numpy(float)
        se = None
        if have_ci and g[["time_ns_ci_low", "time_ns_ci_high"]].notna().all().all():
            width = (g["time_ns_ci_high"] - g["time_ns_ci_low"]).to_numpy(float) / 3.92
            se = np.maximum(width, se_floor * y)
            se = np.where(se > 0, se, 1.0)
        fit = _wls(x, y, se)
        a, b = fit["beta"]
        sa, sb = fit["se"]
        row = dict(zip(by, key if isinstance(key, tuple) else (key,)))
        if "family" in g:
            row["family"] = g["family"].iloc[0]
        row.update(n_sizes=int(g["message_bytes"].nunique()), min_bytes=int(x.min()), max_bytes=int(x.max()),
                   fixed_ns=float(a), fixed_ns_se=float(sa), per_byte_ns=float(b), per_byte_ns_se=float(sb),
                   crossover_bytes=float(a / b) if b > 0 else math.inf,
                   per_byte_significant=bool(b > 2 * sb) if np.isfinite(sb) else False,
                   r2=float(fit["r2"]), chi2_red=float(fit["chi2_red"]),
                   method="ols" if se is None else "wls (1/se² of the median, Birge-scaled)")
        rows.append(row)
    return pd.DataFrame(rows)


def fit_table(fits: pd.DataFrame) -> pd.DataFrame:
    """The fits in readable units: fixed cost in µs and per-byte cost in ns/B, each with its standard error."""
    if fits.empty:
        return pd.DataFrame(columns=["algorithm", "backend", "operation", "fixed_us", "fixed_us_se", "per_byte_ns",
                                     "per_byte_ns_se", "crossover_bytes", "r2", "sizes"])
    cols = [c for c in ("algorithm", "backend", "operation") if c in fits]
    out = fits[cols].copy()
    out["fixed_us"] = fits["fixed_ns"] / 1e3
    out["fixed_us_se"] = fits["fixed_ns_se"] / 1e3
    out["per_byte_ns"] = fits["per_byte_ns"]
    out["per_byte_ns_se"] = fits["per_byte_ns_se"]
    out["crossover_bytes"] = fits["crossover_bytes"].round()
    out["r2"] = fits["r2"]
    out["sizes"] = fits["n_sizes"]
    return out


def hashing_passes(fits: pd.DataFrame) -> pd.DataFrame:
    """Per algorithm and backend: per-byte cost of signing over that of verifying, and what it suggests
    (about 2: signing reads the message twice, e.g. Ed25519's nonce and challenge hashes or SLH-DSA's
    PRF_msg and H_msg; about 1: once)."""
    wide = fits.pivot_table(index=["algorithm", "backend"], columns="operation", values="per_byte_ns", aggfunc="first")
    if not {"sign", "verify"} <= set(wide.columns):
        return pd.DataFrame(columns=["algorithm", "backend", "sign_over_verify", "passes"])
    out = (wide["sign"] / wide["verify"]).rename("sign_over_verify").reset_index()
    out["passes"] = np.select([out["sign_over_verify"].between(0.75, 1.33), out["sign_over_verify"].between(1.6, 2.5)],
                              ["same", "twice"], "other")
    return out


def model_deviation(df: pd.DataFrame, fits: pd.DataFrame, by: Sequence[str] = ("algorithm", "backend", "operation")
                    ) -> pd.DataFrame:
    """Measured median over the model's prediction at every fitted length (1.0 = on the line)."""
    by = list(by)
    m = df.merge(fits[by + ["fixed_ns", "per_byte_ns"]], on=by)
    m["measured_over_model"] = m["time_ns_median"] / (m["fixed_ns"] + m["per_byte_ns"] * m["message_bytes"])
    return m[by + ["message_bytes", "time_ns_median", "measured_over_model"]]


def describe_fits(fits: pd.DataFrame, df: pd.DataFrame | None = None, tolerance: float = 0.25) -> str:
    """Markdown: where hashing the message starts to matter, per operation, from the fits; with the
    measurements `df`, also where the straight line misses a point by more than `tolerance`."""
    lines = []
    for op in ("sign", "verify"):
        sub = fits[(fits["operation"] == op) & np.isfinite(fits["crossover_bytes"])
                   & fits["per_byte_significant"]].sort_values("crossover_bytes")
        flat = fits[(fits["operation"] == op) & ~fits["per_byte_significant"]]
        if sub.empty and flat.empty:
            continue
        parts = [f"{r.algorithm} at {fmt_bytes_binary(r.crossover_bytes)}"
                 + (" (extrapolated)" if r.crossover_bytes > r.max_bytes else "")
                 for r in sub.itertuples()]
        text = (f"- **{op}**: " + "; ".join(parts) + ".") if parts else \
            f"- **{op}**: no algorithm has a per-byte cost distinguishable from zero."
        if not flat.empty:
            text += (" No per-byte cost distinguishable from zero (within 2 standard errors) for "
                     + ", ".join(f"{r.algorithm} ({r.backend})" for r in flat.itertuples()) + ".")
        lines.append(text)
    if not lines:
        return "No algorithm was measured at enough message lengths to fit a model."
    top = fits.loc[fits["per_byte_ns"].idxmax()]
    low = fits.loc[fits["per_byte_ns"].idxmin()]
    paras = []
    paras.append(f"Per-byte costs range from {low.per_byte_ns:.3g} ns/B ({low.algorithm} {low.operation}) to "
                 f"{top.per_byte_ns:.3g} ns/B ({top.algorithm} {top.operation}); the lowest R² of a fit is "
                 f"{fits['r2'].min():.3f} (measured up to {fmt_bytes_binary(fits['max_bytes'].max())}).")
    passes = hashing_passes(fits)
    twice = passes[passes["passes"] == "twice"]
    same = passes[passes["passes"] == "same"]
    if len(twice):
        paras.append("Signing costs about twice as much per byte as verifying for "
                     + ", ".join(f"{r.algorithm} ({r.sign_over_verify:.2f}×)" for r in twice.itertuples())
                     + ": these schemes read the message twice when signing (Ed25519: the deterministic nonce and the "
                       "challenge; SPHINCS+/SLH-DSA: PRF_msg for the randomiser and H_msg for the digest) and once "
                       "when verifying"
                     + (("; about the same for " + ", ".join(f"{r.algorithm} ({r.sign_over_verify:.2f}×)"
                                                            for r in same.itertuples()) + ", which hash it once either way")
                        if len(same) else "") + ".")
    if df is not None:
        dev = model_deviation(df, fits)
        off = dev[(dev["measured_over_model"] - 1).abs() > tolerance]
        if len(off):
            worst = off.loc[off.groupby(["algorithm", "operation"])["measured_over_model"].apply(
                lambda v: (v - 1).abs().idxmax())]
            paras.append(f"The straight line misses {len(off)} of {len(dev)} measured points by more than "
                         f"{tolerance:.0%}; the worst per algorithm: "
                         + "; ".join(f"{r.algorithm} {r.operation} at {fmt_bytes_binary(r.message_bytes)} "
                                     f"({r.measured_over_model:.2f}× the model)" for r in worst.itertuples())
                         + ". Such points come from noise (other processes sharing the machine) or from effects a "
                           "straight line does not model (caches, hash block boundaries); the standard errors of the "
                           "fit are widened by the scatter (Birge ratio).")
        else:
            paras.append(f"Every measured point lies within {tolerance:.0%} of its straight line.")
    return ("Crossover length, where hashing the message costs as much as the fixed part of the operation "
            "(fastest first):\n\n" + "\n".join(lines) + "\n\n" + "\n\n".join(paras))


# ----- pure Python beside native -----
def round3_equivalent(name: str) -> str | None:
    """The liboqs round-3 SPHINCS+ set doing the same work as a FIPS 205 SLH-DSA set (simple variant)."""
    if not name.startswith("SLH-DSA-"):
        return None
    return "SPHINCS+-" + name[len("SLH-DSA-"):] + "-simple"


def slowdown(df: pd.DataFrame, pure_backend: str = PURE_BACKEND) -> pd.DataFrame:
    """Pure-Python time over native time, per algorithm, operation and message length.

    Each pure-Python row is paired with every other backend's row of the same algorithm
    (same standard) and, for SLH-DSA, with liboqs's round-3 SPHINCS+ of the same set (the same
    work, a different standard: ``same_standard`` False)."""
    df = df.copy()
    df["message_bytes"] = df["message_bytes"].fillna(-1)
    pure = df[df["backend"] == pure_backend]
    rows = []
    for r in pure.itertuples():
        native = df[(df["backend"] != pure_backend) & (df["operation"] == r.operation)
                    & (df["message_bytes"] == r.message_bytes)]
        equivalent = round3_equivalent(r.algorithm)
        for n in native[native["algorithm"].isin([r.algorithm, equivalent])].itertuples():
            rows.append({"algorithm": r.algorithm, "operation": r.operation,
                         "message_bytes": None if r.message_bytes < 0 else int(r.message_bytes),
                         "pure_python": r.implementation, "pure_python_ns": r.time_ns_median,
                         "native_algorithm": n.algorithm, "native_backend": n.backend,
                         "native": n.implementation, "native_ns": n.time_ns_median,
                         "slowdown": r.time_ns_median / n.time_ns_median,
                         "same_standard": n.algorithm == r.algorithm})
    return pd.DataFrame(rows)


def slowdown_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per algorithm and operation: the slowdown against the fastest and the slowest native implementation
    of the same standard, and against the fastest native code doing the same work (for SLH-DSA that
    includes liboqs's round-3 SPHINCS+)."""
    rows = []
    for (algo, op, n), g in table.groupby(["algorithm", "operation", table["message_bytes"].fillna(-1)], sort=False):
        same = g[g["same_standard"]]
        fastest_any = g.loc[g["native_ns"].idxmin()]
        row = {"algorithm": algo, "operation": op, "message_bytes": None if n < 0 else int(n)}
        if len(same):
            f, sl = same.loc[same["native_ns"].idxmin()], same.loc[same["native_ns"].idxmax()]
            row.update(vs_fastest=f.slowdown, fastest=f.native_backend, vs_slowest=sl.slowdown,
                       slowest=sl.native_backend)
        row.update(vs_fastest_same_work=fastest_any.slowdown,
                   fastest_same_work=fastest_any.native_backend
                   + ("" if fastest_any.same_standard else f" ({fastest_any.native_algorithm})"))
        rows.append(row)
    return pd.DataFrame(rows)


def describe_implementations(df: pd.DataFrame) -> str:
    """Markdown: which implementation (with its version) each backend of `df` ran."""
    pairs = df[["backend", "implementation"]].dropna().drop_duplicates().sort_values("backend")
    return "Implementations: " + "; ".join(f"{r.backend}: {r.implementation}" for r in pairs.itertuples()) + "."


def describe_slowdown(table: pd.DataFrame) -> str:
    """Markdown: the pure-Python slowdown factors, per algorithm and operation."""
    if table.empty:
        return "No pure-Python implementation was measured."
    lines = []
    sizes = table["message_bytes"].fillna(-1)
    for (algo, op, n), g in table.groupby(["algorithm", "operation", sizes], sort=False):
        parts = [f"{r.slowdown:,.1f}× vs {r.native_backend}" for r in g[g["same_standard"]].itertuples()]
        parts += [f"{r.slowdown:,.1f}× vs liboqs's round-3 {r.native_algorithm}" for r in g[~g["same_standard"]].itertuples()]
        lines.append(f"- {algo} {op}" + (f" at {int(n):,} B" if n >= 0 else "") + ": " + ", ".join(parts))
    text = "Pure-Python time divided by native time:\n\n" + "\n".join(lines)
    summary = slowdown_summary(table)
    fam = summary.assign(family=np.where(summary["algorithm"].str.startswith("SLH-DSA"), "SLH-DSA",
                                         np.where(summary["algorithm"].str.startswith("ML-DSA"), "ML-DSA", "other")))
    ranges = fam.groupby("family")["vs_fastest_same_work"].agg(["min", "max"])
    if {"SLH-DSA", "ML-DSA"} <= set(ranges.index):
        h, m = ranges.loc["SLH-DSA"], ranges.loc["ML-DSA"]
        text += (f"\n\nAgainst the fastest native code doing the same work, pure Python is {h['min']:,.1f}× to "
                 f"{h['max']:,.1f}× slower for SLH-DSA and {m['min']:,.0f}× to {m['max']:,.0f}× for ML-DSA.")
        if h["max"] < m["min"]:
            text += (" SLH-DSA spends its time in hash calls, which `hashlib` runs in native code (OpenSSL) even from "
                     "Python; ML-DSA's polynomial arithmetic runs in the interpreter.")
    spread = []
    same = table[table["same_standard"]]
    for (algo, op, n), g in same.groupby(["algorithm", "operation", same["message_bytes"].fillna(-1)], sort=False):
        if len(g) > 1 and (ratio := g["native_ns"].max() / g["native_ns"].min()) >= 5:
            fast, slow = g.loc[g["native_ns"].idxmin()], g.loc[g["native_ns"].idxmax()]
            spread.append(f"{algo} {op}" + (f" at {int(n):,} B" if n >= 0 else "")
                          + f" ({slow.native_backend} {fmt_time_ns(slow.native_ns)}, "
                          f"{fast.native_backend} {fmt_time_ns(fast.native_ns)}: {ratio:,.0f}×)")
    if spread:
        text += ("\n\nNative implementations of one standard differ by large factors too, so a slowdown depends on "
                 "which native code it is measured against: " + "; ".join(spread) + ".")
    return text


# ----- agreement between implementations -----
def _raw_public(pk) -> bytes:
    return pk if isinstance(pk, (bytes, bytearray)) else pk.public_bytes_raw()


def _public_for(algo: Algorithm, raw: bytes):
    """A public key in `algo`'s own form, from the standard raw encoding: bytes for liboqs,
    pqcrypto and pure Python; a key object for cryptography's raw-key signatures (its adapter
    names the module and private-key class, e.g. mldsa / MLDSA44PrivateKey)."""
    if algo.backend != "cryptography":
        return raw
    import importlib

    module = importlib.import_module(f"cryptography.hazmat.primitives.asymmetric.{algo.module}")
    return getattr(module, algo.cls.replace("PrivateKey", "PublicKey")).from_public_bytes(raw)


def cross_verify(signer: Algorithm | str, verifier: Algorithm | str, message: bytes) -> dict:
    """Keys and a signature from `signer`, checked by `verifier` with the same public key.

    Returns verifies (the genuine signature is accepted) and rejects_tampered (a signature with
    one bit flipped is refused)."""
    signer, verifier = resolve([signer, verifier])
    pk, sk = signer.generate()
    sig = signer.signer(sk)(message)
    verify = verifier.verifier(_public_for(verifier, _raw_public(pk)))
    bad = sig[: len(sig) // 2] + bytes([sig[len(sig) // 2] ^ 1]) + sig[len(sig) // 2 + 1:]
    return {"verifies": verify(message, sig) is True, "rejects_tampered": verify(message, bad) is not True}


def agreement_pairs(ml_dsa: str = "ML-DSA-44", slh_dsa: Sequence[str] = ("SLH-DSA-SHA2-128f", "SLH-DSA-SHAKE-128f"),
                    pure_backend: str = PURE_BACKEND) -> list[tuple[str, str, bool]]:
    """(signer, verifier, expected) pairs: every ordered pair of ML-DSA implementations; pure-Python
    SLH-DSA against every native SLH-DSA; liboqs's round-3 SPHINCS+ against FIPS 205 SLH-DSA
    (expected to fail: see :data:`ROUND3_VS_FIPS205`)."""
    pairs = []
    backends = algorithms.backends_of(ml_dsa)
    pairs += [(f"{ml_dsa}@{a}", f"{ml_dsa}@{b}", True) for a in backends for b in backends if a != b]
    for name in slh_dsa:
        native = [b for b in algorithms.backends_of(name) if b != pure_backend]
        if pure_backend in algorithms.backends_of(name):
            for b in native:
                pairs += [(f"{name}@{pure_backend}", f"{name}@{b}", True), (f"{name}@{b}", f"{name}@{pure_backend}", True)]
        old = round3_equivalent(name)
        if native and old in algorithms.names():
            pairs += [(f"{old}@liboqs", f"{name}@{native[0]}", False), (f"{name}@{native[0]}", f"{old}@liboqs", False)]
    return pairs


ROUND3_VS_FIPS205 = (
    "liboqs 0.13 ships SPHINCS+ as submitted in round 3 (v3.1), not FIPS 205 SLH-DSA. Keys and signatures "
    "have the same sizes and layout, but (1) pure SLH-DSA signs M' = 0x00 || len(ctx) || ctx || M (a domain "
    "separator between pure and pre-hash signing, with a context string) instead of M, and (2) FIPS 205 reads "
    "the FORS indices from the message digest most-significant bit first, where the round-3 reference code "
    "read them least-significant bit first (NIST, pqc-forum, May 2023). So a round-3 signature cannot verify as "
    "SLH-DSA, nor the reverse.")


def check_agreement(pairs: Sequence[tuple[str, str, bool]] | None = None, message_bytes: int = 100,
                    seed: int = 0) -> pd.DataFrame:
    """Cross-verification of each (signer, verifier, expected) pair on a random message."""
    message = random_message(message_bytes, seed)
    rows = []
    for signer, verifier, expected in (pairs if pairs is not None else agreement_pairs()):
        out = cross_verify(signer, verifier, message)
        rows.append({"signer": signer, "verifier": verifier, "expected": expected, **out,
                     "as_expected": out["verifies"] == expected and out["rejects_tampered"]})
    return pd.DataFrame(rows)


def check_round3_internal(sets: Iterable[str] = ("SHA2-128f", "SHA2-192f"), message_bytes: int = 100,
                          seed: int = 0) -> pd.DataFrame:
    """Where exactly round-3 SPHINCS+ and FIPS 205 differ, measured: a liboqs round-3 signature is
    checked with slh-dsa's FIPS 205 *pure* verification and with its *internal* one (slh_verify_internal,
    no M' prefix).  The internal check passes only for sets whose FORS indices are whole bytes (a = 8:
    the 192f sets), where the two bit orders coincide."""
    import slhdsa
    from slhdsa import PublicKey

    message = random_message(message_bytes, seed)
    rows = []
    for s in sets:
        h, rest = s.split("-")
        par = getattr(slhdsa, f"{h.lower()}_{rest}")
        algo = algorithms.get(f"SPHINCS+-{s}-simple", "liboqs")
        pk, sk = algo.generate()
        sig = algo.signer(sk)(message)
        pub = PublicKey.from_digest(pk, par)
        rows.append({"round3_set": algo.name, "fors_trees_k": par.k, "fors_height_a": par.a,
                     "verifies_as_slh_dsa_pure": bool(pub.verify_pure(message, sig)),
                     "verifies_as_slh_dsa_internal": bool(pub.verify(message, sig))})
    return pd.DataFrame(rows)


def describe_agreement(checks: pd.DataFrame, internal: pd.DataFrame | None = None) -> str:
    """Markdown summary of the cross-verification checks."""
    same = checks[checks["expected"]]
    diff = checks[~checks["expected"]]
    ok_same = int((same["verifies"] & same["rejects_tampered"]).sum())
    text = [f"- Same standard: {ok_same} of {len(same)} signer → verifier pairs cross-verify "
            f"(and reject a tampered signature)."]
    failed = same[~(same["verifies"] & same["rejects_tampered"])]
    if not failed.empty:
        text.append("  **Disagreement:** " + "; ".join(f"{r.signer} → {r.verifier}" for r in failed.itertuples()))
    if not diff.empty:
        text.append(f"- Round-3 SPHINCS+ vs FIPS 205 SLH-DSA: {int((~diff['verifies']).sum())} of {len(diff)} pairs "
                    f"refuse each other's signatures, as expected. {ROUND3_VS_FIPS205}")
    if internal is not None and not internal.empty:
        ok = internal[internal["verifies_as_slh_dsa_internal"]]
        text.append("- Without the M' prefix (FIPS 205's internal verification) a round-3 signature verifies for "
                    + (", ".join(f"{r.round3_set} (a = {r.fors_height_a})" for r in ok.itertuples()) or "no set")
                    + " and not for "
                    + (", ".join(f"{r.round3_set} (a = {r.fors_height_a})"
                                 for r in internal[~internal['verifies_as_slh_dsa_internal']].itertuples()) or "any other")
                    + ": with a = 8 each FORS index is one whole byte, so both bit orders read the same indices.")
    return "\n".join(text)


# ----- the study beside us -----
def compare_with_study(df: pd.DataFrame, reference: pd.DataFrame | None = None,
                       mapping: dict[str, list[str]] | None = None) -> pd.DataFrame:
    """The study's table beside our medians at the same lengths: one row per study label, our
    algorithm, operation and length, with ``study_over_ours`` (the study's time / ours)."""
    ref = load_study() if reference is None else reference
    mapping = mapping or STUDY_MAP
    ours = df[["algorithm", "backend", "operation", "message_bytes", "time_ns_median"]]
    rows = []
    for label, names in mapping.items():
        sub = ref[ref["algorithm"] == label]
        for name in names:
            m = sub.merge(ours[ours["algorithm"] == name], on=["operation", "message_bytes"], suffixes=("_study", ""))
            for r in m.itertuples():
                rows.append({"study_label": label, "algorithm": name, "backend": r.backend, "operation": r.operation,
                             "message_bytes": int(r.message_bytes), "study_ms": r.time_ms,
                             "ours_ms": r.time_ns_median / 1e6, "study_over_ours": r.time_ms / (r.time_ns_median / 1e6)})
    return pd.DataFrame(rows)


def study_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per study label, our algorithm and operation: the range of study/ours ratios over the grid."""
    if table.empty:
        return table
    g = table.groupby(["study_label", "algorithm", "operation"], sort=False)["study_over_ours"]
    return g.agg(ratio_min="min", ratio_median="median", ratio_max="max", sizes="count").reset_index()


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
    return out


def describe_study(table: pd.DataFrame, reference: pd.DataFrame | None = None) -> str:
    """Markdown: what the study's own numbers say, and how they compare with ours."""
    f = study_findings(reference)
    lines = [
        f"- The study recommends ECDSA because it 'performs faster than SPHINCS and RSA in terms of signing "
        f"messages'. Its own Table 1 has RSA signing faster than ECDSA at {f['rsa_faster_than_ecdsa_sign']} of "
        f"{f['sizes_sign']} sizes (ECDSA {f['ecdsa_over_rsa_sign_min']:.1f}× to {f['ecdsa_over_rsa_sign_max']:.1f}× "
        f"slower); RSA also verifies faster at {f['rsa_faster_than_ecdsa_verify']} of {f['sizes_verify']} sizes, and "
        f"signs plus verifies faster at {f['rsa_faster_than_ecdsa_both']} of {f['sizes_sign']}. "
        + ("The conclusion contradicts the data it rests on." if f["rsa_faster_than_ecdsa_sign"] == f["sizes_sign"]
           else ""),
        f"- SPHINCS signing in the study is flat ({f['sphincs_sign_min_ms']:.3f} to {f['sphincs_sign_max_ms']:.3f} ms "
        f"over the grid) while its verification grows ({f['sphincs_verify_min_ms']:.3f} to "
        f"{f['sphincs_verify_max_ms']:.3f} ms).",
    ]
    summary = study_summary(table)
    for label, g in summary.groupby("study_label", sort=False):
        parts = [f"{r.algorithm} {r.operation} {r.ratio_min:.3g}× to {r.ratio_max:.3g}×" for r in g.itertuples()]
        lines.append(f"- **{label}** ({STUDY_CAVEATS.get(label, '')}): the study's time over ours, "
                     + "; ".join(parts) + ".")
    if len(summary):
        rsa_sign = summary[(summary["study_label"] == "RSA") & (summary["operation"] == "sign")]
        slower = summary[summary["study_label"] != "RSA"]
        if len(rsa_sign) and len(slower) and rsa_sign["ratio_max"].max() < 1 < slower["ratio_min"].min():
            lines.append(f"- The study's RSA signs faster than our RSA-2048 (ratio below 1) although its other "
                         f"operations are {slower['ratio_min'].min():.2g}× to {slower['ratio_max'].max():.3g}× slower "
                         f"than ours: a private-key operation that fast points to a modulus smaller than 2048 bits "
                         f"(the study does not state it).")
    return "\n".join(lines)


# ----- the recommendation -----
def _at(df: pd.DataFrame, fits: pd.DataFrame | None, n: int) -> pd.DataFrame:
    """Sign and verify time of every native algorithm at length n: measured where we have it, else the model."""
    rows = []
    native = df[df["backend"] != PURE_BACKEND]
    for (name, backend), g in native.groupby(["algorithm", "backend"], sort=False):
        row = {"algorithm": name, "backend": backend, "family": g["family"].iloc[0], "source": "measured"}
        for op in ("sign", "verify"):
            hit = g[(g["operation"] == op) & (g["message_bytes"] == n)]
            if len(hit):
                row[op] = float(hit["time_ns_median"].iloc[0])
            elif fits is not None and len(f := fits[(fits["algorithm"] == name) & (fits["backend"] == backend)
                                                    & (fits["operation"] == op)]):
                row[op] = float(f["fixed_ns"].iloc[0] + f["per_byte_ns"].iloc[0] * n)
                row["source"] = "model"
            else:
                row[op] = math.nan
        rows.append(row)
    out = pd.DataFrame(rows)
    out["sign+verify"] = out["sign"] + out["verify"]
    return out


def ranking(df: pd.DataFrame, fits: pd.DataFrame | None = None, message_bytes: Sequence[int] = (10_000, 100_000)) -> pd.DataFrame:
    """Native algorithms ranked by sign, verify and sign+verify time at each length."""
    frames = []
    for n in message_bytes:
        t = _at(df, fits, n)
        for op in ("sign", "verify", "sign+verify"):
            sub = t.dropna(subset=[op]).sort_values(op)
            frames.append(pd.DataFrame({"message_bytes": n, "operation": op, "rank": range(1, len(sub) + 1),
                                        "algorithm": sub["algorithm"].values, "backend": sub["backend"].values,
                                        "family": sub["family"].values, "time_ns": sub[op].values,
                                        "source": sub["source"].values}))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


POST_QUANTUM = ("lattice", "hash-based", "multivariate", "code-based")


def recommend(df: pd.DataFrame, fits: pd.DataFrame | None = None, slowdowns: pd.DataFrame | None = None,
              message_bytes: Sequence[int] = (10_000, 100_000), reference: pd.DataFrame | None = None) -> str:
    """The closing recommendation, generated from the measurements (Markdown)."""
    ranks = ranking(df, fits, message_bytes)
    if ranks.empty:
        return "Nothing was measured."
    lines = ["**Which signature, for messages of the study's sizes?** (medians on this machine; native implementations)\n"]
    for n in message_bytes:
        r = ranks[ranks["message_bytes"] == n]
        parts = []
        for op in ("sign", "verify", "sign+verify"):
            o = r[r["operation"] == op]
            if o.empty:
                continue
            best = o.iloc[0]
            second = o.iloc[1] if len(o) > 1 else None
            pq = o[o["family"].isin(POST_QUANTUM)]
            s = f"{op}: **{best.algorithm}** ({fmt_time_ns(best.time_ns)}"
            s += f", {second.time_ns / best.time_ns:.3g}× faster than {second.algorithm})" if second is not None else ")"
            if len(pq) and pq.iloc[0].algorithm != best.algorithm:
                s += f"; post-quantum: **{pq.iloc[0].algorithm}** ({fmt_time_ns(pq.iloc[0].time_ns)})"
            parts.append(s)
        model = " (some values from the fitted model)" if (r["source"] == "model").any() else ""
        lines.append(f"- At {n:,} bytes{model}: " + "; ".join(parts) + ".")
    if fits is not None and not fits.empty:
        native = fits[fits["backend"] != PURE_BACKEND]
        hashing = native[native["per_byte_significant"]].sort_values("crossover_bytes")
        if len(hashing):
            h = hashing.iloc[0]
            n = max(message_bytes)
            share = native.assign(share=native["per_byte_ns"] * n / (native["fixed_ns"] + native["per_byte_ns"] * n))
            low = share.loc[share["share"].idxmin()]
            lines.append(f"- Hashing the message matters first for {h.algorithm} {h.operation}: beyond "
                         f"{fmt_bytes_binary(h.crossover_bytes)} it costs more than the rest of the operation. At "
                         f"{n:,} bytes the message's share of the time ranges from {low.share:.0%} "
                         f"({low.algorithm} {low.operation}) to {share['share'].max():.0%}.")
    f = study_findings(reference)
    best_sign = ranks[(ranks["message_bytes"] == message_bytes[0]) & (ranks["operation"] == "sign")]
    rsa = best_sign[best_sign["algorithm"].str.startswith("RSA")]
    ec = best_sign[best_sign["algorithm"].str.startswith("ECDSA")]
    if len(rsa) and len(ec):
        faster = "ECDSA" if ec.iloc[0].time_ns < rsa.iloc[0].time_ns else "RSA"
        ratio = max(ec.iloc[0].time_ns, rsa.iloc[0].time_ns) / min(ec.iloc[0].time_ns, rsa.iloc[0].time_ns)
        lines.append(f"- The study recommended ECDSA for signing although its own table has RSA signing faster at "
                     f"{f['rsa_faster_than_ecdsa_sign']} of {f['sizes_sign']} sizes. Here, with OpenSSL, {faster} signs "
                     f"{ratio:.2g}× faster ({ec.iloc[0].algorithm} vs {rsa.iloc[0].algorithm} at "
                     f"{message_bytes[0]:,} bytes).")
    verdict = _verdict(ranks, message_bytes)
    if verdict:
        lines.append(verdict)
    if slowdowns is not None and not slowdowns.empty:
        s = slowdowns[slowdowns["same_standard"]]
        per = s.groupby(["algorithm", "operation"])["slowdown"].agg(["min", "max"]).reset_index()
        lines.append("- Pure Python costs a factor of "
                     + "; ".join(f"{r.algorithm} {r.operation} {r.min:,.1f}×" + (f"–{r.max:,.1f}×" if r.max > r.min * 1.05 else "")
                                 for r in per.itertuples())
                     + " over native implementations of the same standard. An implementation's quality moves a "
                       "scheme's cost by factors of this size, which is why the study's unoptimised SPHINCS port says "
                       "little about SPHINCS itself.")
    return "\n".join(lines)


def _verdict(ranks: pd.DataFrame, message_bytes: Sequence[int]) -> str:
    """The recommendation proper: the fastest sign+verify overall and among post-quantum schemes, if the
    same algorithm wins at every length; how much the hash-based choice costs on top."""
    both = ranks[ranks["operation"] == "sign+verify"]
    winners = {n: both[both["message_bytes"] == n] for n in message_bytes}
    best = {n: w.iloc[0].algorithm for n, w in winners.items() if len(w)}
    pq = {n: w[w["family"].isin(POST_QUANTUM)] for n, w in winners.items()}
    best_pq = {n: p.iloc[0].algorithm for n, p in pq.items() if len(p)}
    if not best or len(set(best.values())) != 1:
        return ""
    n = max(message_bytes)
    w = winners[n]
    classical = w.iloc[0]
    text = f"- **Recommendation** (sign plus verify, {min(message_bytes):,} to {n:,} bytes): {classical.algorithm}"
    if best_pq and len(set(best_pq.values())) == 1:
        p = pq[n].iloc[0]
        text += (f" where a classical signature is still acceptable; {p.algorithm} as the post-quantum choice, at "
                 f"{p.time_ns / classical.time_ns:.2g}× the time of {classical.algorithm} at {n:,} bytes")
        hb = pq[n][pq[n]["family"] == "hash-based"]
        if len(hb) and hb.iloc[0].algorithm != p.algorithm:
            text += (f"; the hash-based {hb.iloc[0].algorithm} costs {hb.iloc[0].time_ns / p.time_ns:,.0f}× "
                     f"{p.algorithm}'s time, a price for resting on hash functions alone")
    return text + "."


# ----- figure data (tidy frames for pqlab.plotting) -----
def model_lines(fits: pd.DataFrame) -> pd.DataFrame:
    """The fits as plotting.panel_lines models: intercept, slope and the crossover (when significant)."""
    out = fits.assign(intercept=fits["fixed_ns"], slope=fits["per_byte_ns"])
    out["crossover"] = out["crossover_bytes"].where(out["per_byte_significant"])
    return out


def per_byte_bars(fits: pd.DataFrame) -> pd.DataFrame:
    """Per-byte cost with ± one standard error, for a bar chart (positive estimates only: log axis)."""
    out = fits[fits["per_byte_ns"] > 0].copy()
    several = out.groupby("algorithm")["backend"].transform("nunique") > 1
    out["label"] = out["algorithm"].where(~several, out["algorithm"] + " (" + out["backend"] + ")")
    out["low"] = (out["per_byte_ns"] - out["per_byte_ns_se"]).clip(lower=out["per_byte_ns"] * 0.01)
    out["high"] = out["per_byte_ns"] + out["per_byte_ns_se"]
    return out


def slowdown_bars(table: pd.DataFrame, message_bytes: int | None = None) -> pd.DataFrame:
    """Slowdown factors labelled 'ALGORITHM vs NATIVE' for a grouped bar chart (groups: operations), at one
    message length (default: the shortest measured) plus key generation."""
    n = message_bytes if message_bytes is not None else table["message_bytes"].min()
    out = table[table["message_bytes"].isna() | (table["message_bytes"] == n)].copy()
    out["label"] = [f"{a}\nvs {b}" + ("" if same else " (round 3)")
                    for a, b, same in zip(out["algorithm"], out["native_backend"], out["same_standard"])]
    return out


def study_lines(table: pd.DataFrame, reference: pd.DataFrame | None = None) -> pd.DataFrame:
    """The study's times (its whole grid) and ours at the lengths we measured, long form: series label,
    operation, length, ms, family."""
    ref = load_study() if reference is None else reference
    family = STUDY_FAMILY
    study = pd.DataFrame({"series": "study: " + ref["algorithm"], "family": ref["algorithm"].map(family),
                          "operation": ref["operation"], "message_bytes": ref["message_bytes"], "time_ms": ref["time_ms"]})
    ours = pd.DataFrame({"series": "ours: " + table["algorithm"], "family": table["study_label"].map(family),
                         "operation": table["operation"], "message_bytes": table["message_bytes"],
                         "time_ms": table["ours_ms"]})
    return pd.concat([study, ours], ignore_index=True)


def study_linestyles(lines: pd.DataFrame) -> dict:
    """Dashed lines for the study's series, solid for ours."""
    return {s: "--" for s in lines["series"].unique() if s.startswith("study")}


# ----- closing -----
def closing_note(slowdowns: pd.DataFrame, fits: pd.DataFrame, agreement: pd.DataFrame | None = None) -> str:
    """The notebook's last words: the pure-Python slowdown factors, the per-byte costs, agreement."""
    blocks, lines = [], []
    if not slowdowns.empty:
        summary = slowdown_summary(slowdowns)
        sizes = sorted({int(n) for n in slowdowns["message_bytes"].dropna()})
        lines.append("**Pure-Python slowdown factors** (pure-Python time / native time; signing and verifying at "
                     + ", ".join(f"{n:,}" for n in sizes) + "-byte messages), against the fastest and the slowest "
                     "native implementation of the same standard:\n")
        for r in summary.itertuples():
            same = (f"{r.vs_fastest:,.1f}× ({r.fastest})" + (f" to {r.vs_slowest:,.1f}× ({r.slowest})"
                                                             if r.slowest != r.fastest else "")
                    if isinstance(getattr(r, "fastest", None), str) else "no native implementation of the standard")
            extra = (f"; {r.vs_fastest_same_work:,.1f}× against liboqs's round-3 "
                     f"{str(r.fastest_same_work).split('(')[1].rstrip(')')}" if "(" in str(r.fastest_same_work) else "")
            size = "" if r.message_bytes is None or pd.isna(r.message_bytes) else f" at {int(r.message_bytes):,} B"
            lines.append(f"- {r.algorithm} {r.operation}{size}: {same}{extra}")
        blocks.append("\n".join(lines))
        lines = []
    if fits is not None and not fits.empty:
        sig = fits[fits["per_byte_significant"]]
        if len(sig):
            parts = [f"{r.algorithm} {r.operation} {r.per_byte_ns:.3g} ± {r.per_byte_ns_se:.2g}"
                     for r in sig.sort_values("per_byte_ns").itertuples()]
            blocks.append("**Per-byte costs** (ns/B): " + "; ".join(parts) + ".")
    if agreement is not None and not agreement.empty:
        same = agreement[agreement["expected"]]
        blocks.append(f"**Agreement**: {int(same['verifies'].sum())} of {len(same)} cross-verifications between "
                     f"implementations of the same standard succeed; "
                     f"{int((~agreement.loc[~agreement['expected'], 'verifies']).sum())} of "
                     f"{int((~agreement['expected']).sum())} round-3 SPHINCS+ / FIPS 205 SLH-DSA pairs fail, as they must.")
    return "\n\n".join(blocks)


def save_numbers(slowdowns: pd.DataFrame, fits: pd.DataFrame, topic: str = STUDY) -> list:
    """Single numbers for the write-up: each slowdown factor and each per-byte cost (.txt files)."""
    from ..export import save_number

    paths = []
    for r in slowdowns[slowdowns["same_standard"]].itertuples():
        size = "" if r.message_bytes is None or pd.isna(r.message_bytes) else f"_{int(r.message_bytes)}B"
        name = f"slowdown_{r.algorithm}_{r.operation}{size}_vs_{r.native_backend}"
        paths.append(save_number(r.slowdown, topic, slug(name), "{:.1f}"))
    for r in fits.itertuples():
        name = f"per_byte_ns_{r.algorithm}_{r.backend}_{r.operation}"
        paths.append(save_number(r.per_byte_ns, topic, slug(name), "{:.3g}"))
    return paths
