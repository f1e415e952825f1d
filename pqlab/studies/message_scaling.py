"""Notebook 02: how signing and verifying cost grows with the message; sweeps, a fitted cost model, the
study's table beside ours (its SPHINCS-256 beside the SPHINCS+/SLH-DSA sets with the same hash length),
what its RSA columns say about themselves, and generated text.

Signature schemes hash the message and then do work independent of its length, so ``t(n) = fixed + per_byte * n``;
:func:`fit_linear_cost` fits it per algorithm, backend and operation by weighted least squares on the medians
(weights 1/se^2, se from the median's interval over rounds, floored at 0.5% of the median; standard errors scaled
by the Birge ratio when the points scatter more than their errors), or by ordinary least squares for tables
without intervals (the study's).  The *crossover* ``fixed / per_byte`` is where hashing the message costs as much
as everything else.

Every ratio of two measured quantities carries an interval in the tables: over rounds for a ratio of medians where
samples exist (:func:`samples_of`), the delta method for ratios of fitted slopes; a ratio against the study's single
numbers takes its interval from our side only; ratios among the study's own numbers have none (and say so).

Message lengths: :func:`sweep_lengths` follows SUPERCOP's ``crypto_sign`` loop (``mlen += 1 + mlen / 4``: 0, 1, 2,
3, 4, 6, 8, 11, ... each about 1.25 times the last) up to 1 MiB; :func:`study_lengths` is the study's grid.
"""
from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

from pqlab.backends import algorithms
from pqlab.backends.algorithms import resolve
from pqlab.checks.interop import PURE_BACKEND, round3_equivalent
from pqlab.core import flags
from pqlab.core.formatting import (
    fmt_bytes,
    fmt_bytes_binary,
    fmt_factor_ci,
    fmt_percent,
    fmt_span,
    fmt_time_ns,
)
from pqlab.core.vocabulary import POST_QUANTUM, family_of
from pqlab.measure import stats
from pqlab.measure.stats import CONFIDENCE, MIN_SAMPLES, ratio_ci, ratio_of_estimates, ratio_to_published
from pqlab.publish import plotting
from pqlab.store.results import verified_rows
from pqlab.studies import conforming

TOPIC = "02_message_scaling"
MIB = 1 << 20

#: The study's RSA and ECDSA columns -> the algorithms we measure in their place (its SPHINCS: study_comparators).
CLASSICAL_MAP = {"RSA": ["RSA-2048-PKCS1v15-sig", "RSA-2048-PSS"], "ECDSA": ["ECDSA-P256"]}
#: What the study states, or not, about its RSA and ECDSA (its SPHINCS is described from data: study_labels).
STUDY_NOTES = {"RSA": "MIRACL RSA; modulus size, padding and hash not stated",
               "ECDSA": "MIRACL ECDSA; curve and hash not stated"}


# ----- message lengths -----
def sweep_lengths(max_bytes: int = MIB, stride: int = 1) -> list[int]:
    """SUPERCOP's message lengths 0, 1, 2, 3, 4, 6, 8, 11, 14, ... (``n + 1 + n // 4``) up to `max_bytes`, which is
    last; `stride` keeps every stride-th length (a quick run); 0 and `max_bytes` are always kept."""
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
    from pqlab.core.references import load_reference

    return load_reference(TOPIC)


# ----- the study's SPHINCS, as compiled -----
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
    signature = (c["MESSAGE_HASH_SEED_BYTES"] + (c["TOTALTREE_HEIGHT"] + 7) // 8 + horst + layers * c["WOTS_L"] * n
                 + c["TOTALTREE_HEIGHT"] * n)
    return {"hash_bytes": n, "public_key_bytes": public, "secret_key_bytes": c["SEED_BYTES"] + public - n
            + c["SK_RAND_SEED_BYTES"], "signature_bytes": signature, **ref.attrs["source"]["implementation"]}


def parameter_set(name: str) -> tuple[int, str] | None:
    """(hash length n in bytes, "f" or "s") of a SPHINCS+ / SLH-DSA name; its level in bits is 8 n."""
    m = re.match(r"^(?:SPHINCS\+|SLH-DSA)-[A-Z0-9]+-(\d{3})([fs])", name)
    return (int(m.group(1)) // 8, m.group(2)) if m else None


def study_comparators(tradeoffs: Sequence[str] = ("f",)) -> dict[str, list[str]]:
    """The study's column labels -> our algorithms ("NAME@backend"): for its SPHINCS (SPHINCS-256) every native
    round-3 SPHINCS+ (simple) and FIPS 205 SLH-DSA set with the same hash length, in the given `tradeoffs` ("f": fast signing, "s": small signatures)."""
    n = sphincs256()["hash_bytes"]
    same = [f"{a}@{b}" for a in algorithms.names() if (p := parameter_set(a)) and p[0] == n and p[1] in tradeoffs
            and not a.endswith("-robust") for b in algorithms.backends_of(a) if b != PURE_BACKEND]
    return {"SPHINCS": same, **{k: list(v) for k, v in CLASSICAL_MAP.items()}}


def study_labels(sizes: pd.DataFrame | None = None, comparators: dict | None = None) -> dict[str, str]:
    """What each of the study's columns really was and how far ours are from it, from the data (the
    SPHINCS-256 reference table, and our signature `sizes`)."""
    s = sphincs256()
    names = sorted({x.split("@")[0] for x in (comparators or study_comparators())["SPHINCS"]})
    sig = (sizes[sizes["algorithm"].isin(names)]["signature_max_bytes"] if sizes is not None
           and "signature_max_bytes" in sizes else pd.Series(dtype=float))
    ours = f"; signatures of {fmt_span(sig)}" if len(sig) else ""
    return {"SPHINCS": (f"SPHINCS-256: {s['code']}, built with {s['compiler']}, called through {s['binding']}; "
                        f"hash length {8 * s['hash_bytes']} bits, signatures of {fmt_bytes(s['signature_bytes'])}. "
                        f"Set beside the SPHINCS+/SLH-DSA sets with the same hash length ({', '.join(names) or 'none'}"
                        f"{ours}): the same n, but a different construction (HORST, no tweakable hashes) and tree "
                        "parameters, so not the same scheme"), **STUDY_NOTES}


# ----- measurements -----
def samples_of(*runs) -> dict:
    """Raw per-call times (ns) of `runs`, keyed (algorithm, backend, operation, message length; -1 for none)."""
    frames = [r.samples for r in runs if r is not None and not r.samples.empty]
    if not frames:
        return {}
    s = pd.concat(frames, ignore_index=True)
    s, rec = s.assign(n=pd.to_numeric(s["message_bytes"]).astype(float).fillna(-1.0)), stats.round_records(*runs)
    return {key: stats.with_rounds(g, "time_ns", rec) for key, g in s.groupby(["algorithm", "backend", "operation", "n"])}


def _get(samples: dict | None, algorithm: str, backend: str, operation: str, n) -> np.ndarray:
    n = -1.0 if n is None or pd.isna(n) else float(n)
    return (samples or {}).get((algorithm, backend, operation, n), np.array([]))


def _ratio(samples: dict | None, num: tuple, den: tuple, num_ns: float, den_ns: float) -> tuple[float, float, float]:
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
    """Every implementation ("NAME@backend") of each name, and liboqs's round-3 SPHINCS+ set doing each SLH-DSA set's work."""
    out = []
    for name in names:
        out += [f"{name}@{b}" for b in algorithms.backends_of(name)]
        old = round3_equivalent(name)
        if old and "liboqs" in algorithms.backends_of(old):
            out.append(f"{old}@liboqs")
    return list(dict.fromkeys(out))


def median_table(df: pd.DataFrame) -> pd.DataFrame:
    """Medians, quartiles, the median's 95 % interval (µs) and precision (rel_ci), per algorithm, backend, operation, length."""
    out = df[["algorithm", "backend", "operation", "message_bytes", "samples"]].assign(
        message_bytes=df["message_bytes"].astype("Int64"), flags=df["flags"].fillna(""), rel_ci=df["time_ns_rel_ci"],
        **{f"time_us_{c}": df[f"time_ns_{c}"] / 1e3 for c in ("median", "q1", "q3", "ci_low", "ci_high")})
    return out.sort_values(["algorithm", "backend", "operation", "message_bytes"]).reset_index(drop=True)


def study_as_measurements(reference: pd.DataFrame | None = None) -> pd.DataFrame:
    """The study's table in pqlab's column names (time_ns_median, backend 'study'): the same functions fit it."""
    ref = load_study() if reference is None else reference
    return pd.DataFrame({"algorithm": ref["algorithm"], "backend": "study", "implementation": ref["implementation"],
                         "operation": ref["operation"], "message_bytes": ref["message_bytes"],
                         "time_ns_median": ref["time_ms"] * 1e6, "family": ref["algorithm"].map(family_of)})


def signature_sizes(names: Iterable, signatures: int = 64, message: bytes = b"\x00" * 100) -> pd.DataFrame:
    """Per algorithm: family, NIST level, public key bytes and the maximum signature length (the declared maximum
    where the library states one, else the longest of `signatures` signatures, e.g. DER-encoded ECDSA's)."""
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
    """Fit t(n) = fixed + per_byte * n per group (the module docstring says how).  One row per group: fixed_ns(_se),
    per_byte_ns(_se), crossover_bytes (fixed / per_byte; inf when per_byte <= 0), per_byte_significant (per_byte >
    2 se), r2, chi2_red, n_sizes, min_bytes, max_bytes, method; groups with fewer than `min_sizes` lengths skipped."""
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
    cols = ["algorithm", "backend", "operation", "fixed_us", "fixed_us_se", "per_byte_ns", "per_byte_ns_se",
            "crossover_bytes", "r2", "sizes"]
    if fits.empty:
        return pd.DataFrame(columns=cols)
    return fits.assign(fixed_us=fits["fixed_ns"] / 1e3, fixed_us_se=fits["fixed_ns_se"] / 1e3,
                       crossover_bytes=fits["crossover_bytes"].round(), sizes=fits["n_sizes"])[
        [c for c in cols if c in fits or c in ("fixed_us", "fixed_us_se", "sizes")]]


def hashing_passes(fits: pd.DataFrame) -> pd.DataFrame:
    """Per algorithm and backend: per-byte cost of signing over verifying with its (delta-method) interval, and what
    it says: "twice" (interval above 4/3, ratio within 1.6 to 2.5: signing reads the message twice, as Ed25519's nonce
    and challenge or SLH-DSA's PRF_msg and H_msg do), "same" (0.75 to 1.33, interval within 2/3 to 1.5), "other"."""
    cols = ["algorithm", "backend", "sign_over_verify", "ci_low", "ci_high", "passes"]
    rows = []
    for (algo, backend), g in fits.groupby(["algorithm", "backend"], sort=False):
        ops = g.set_index("operation")
        if not {"sign", "verify"} <= set(ops.index):
            continue
        r, lo, hi = ratio_of_estimates(ops.loc["sign", "per_byte_ns"], ops.loc["sign", "per_byte_ns_se"],
                                       ops.loc["verify", "per_byte_ns"], ops.loc["verify", "per_byte_ns_se"])
        passes = ("twice" if 1.6 <= r <= 2.5 and lo > 4 / 3 else
                  "same" if 0.75 <= r <= 1.33 and lo > 2 / 3 and hi < 1.5 else "other")
        rows.append(dict(zip(cols, (algo, backend, r, lo, hi, passes))))
    return pd.DataFrame(rows, columns=cols)


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
                     + ", ".join(f"{r.algorithm} ({fmt_factor_ci(r.sign_over_verify, r.ci_low, r.ci_high)})"
                                 for r in twice.itertuples())
                     + ": as their standards specify, these schemes read the message twice when signing (Ed25519: the "
                       "deterministic nonce and the challenge; SPHINCS+/SLH-DSA: PRF_msg for the randomiser and H_msg "
                       "for the digest) and once when verifying"
                     + (("; about the same for " + ", ".join(f"{r.algorithm} ({fmt_factor_ci(r.sign_over_verify, r.ci_low, r.ci_high)})"
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
                         + ". Possible causes, not measured here: noise from other processes sharing the machine, or "
                           "effects a straight line does not model (caches, hash block boundaries). The standard errors "
                           "of the fit are widened by the scatter (Birge ratio).")
        else:
            paras.append(f"Every measured point lies within {tolerance:.0%} of its straight line.")
    return ("Crossover length, where hashing the message costs as much as the fixed part of the operation "
            "(fastest first):\n\n" + "\n".join(lines) + "\n\n" + "\n\n".join(paras))


# ----- pure Python beside native -----
def slowdown(df: pd.DataFrame, samples: dict | None = None, pure_backend: str = PURE_BACKEND) -> pd.DataFrame:
    """Pure-Python time over native time per algorithm, operation and length, with the interval over rounds of the
    ratio of medians when `samples` (:func:`samples_of`) are given: each pure-Python row against every other
    backend's row of the same algorithm and, for SLH-DSA, liboqs's round-3 SPHINCS+ set (``same_standard`` False)."""
    df = df.copy()
    df["message_bytes"] = df["message_bytes"].fillna(-1)
    pure = df[df["backend"] == pure_backend]
    rows = []
    for r in pure.itertuples():
        native = df[(df["backend"] != pure_backend) & (df["operation"] == r.operation)
                    & (df["message_bytes"] == r.message_bytes)]
        equivalent = round3_equivalent(r.algorithm)
        for n in native[native["algorithm"].isin([r.algorithm, equivalent])].itertuples():
            ratio, low, high = _ratio(samples, (r.algorithm, r.backend, r.operation, r.message_bytes),
                                      (n.algorithm, n.backend, n.operation, n.message_bytes), r.time_ns_median,
                                      n.time_ns_median)
            rows.append({"algorithm": r.algorithm, "operation": r.operation,
                         "message_bytes": None if r.message_bytes < 0 else int(r.message_bytes),
                         "pure_python": r.implementation, "pure_python_ns": r.time_ns_median,
                         "native_algorithm": n.algorithm, "native_backend": n.backend,
                         "native": n.implementation, "native_ns": n.time_ns_median,
                         "slowdown": ratio, "slowdown_ci_low": low, "slowdown_ci_high": high,
                         "same_standard": n.algorithm == r.algorithm})
    return pd.DataFrame(rows)


def slowdown_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per algorithm and operation: the slowdown against the fastest and the slowest native implementation of the
    same standard, and against the fastest native code doing the same work (SLH-DSA: also round-3 SPHINCS+)."""
    rows = []
    for (algo, op, n), g in table.groupby(["algorithm", "operation", table["message_bytes"].fillna(-1)], sort=False):
        same = g[g["same_standard"]]
        fastest_any = g.loc[g["native_ns"].idxmin()]
        row = {"algorithm": algo, "operation": op, "message_bytes": None if n < 0 else int(n)}
        if len(same):
            f, sl = same.loc[same["native_ns"].idxmin()], same.loc[same["native_ns"].idxmax()]
            row.update(vs_fastest=f.slowdown, vs_fastest_ci_low=f.slowdown_ci_low, vs_fastest_ci_high=f.slowdown_ci_high,
                       fastest=f.native_backend, vs_slowest=sl.slowdown, vs_slowest_ci_low=sl.slowdown_ci_low,
                       vs_slowest_ci_high=sl.slowdown_ci_high, slowest=sl.native_backend)
        row.update(vs_fastest_same_work=fastest_any.slowdown,
                   fastest_same_work=fastest_any.native_backend
                   + ("" if fastest_any.same_standard else f" ({fastest_any.native_algorithm})"))
        rows.append(row)
    return pd.DataFrame(rows)


def describe_implementations(df: pd.DataFrame) -> str:
    """Markdown: which implementation (with its version) each backend of `df` ran."""
    pairs = df[["backend", "implementation"]].dropna().drop_duplicates().sort_values("backend")
    return "Implementations: " + "; ".join(f"{r.backend}: {r.implementation}" for r in pairs.itertuples()) + "."


def describe_slowdown(table: pd.DataFrame, samples: dict | None = None) -> str:
    """Markdown: the pure-Python slowdown factors with their intervals, per algorithm and operation; where two native
    implementations of one standard differ by a large factor, that factor (with its interval) and what each runs."""
    if table.empty:
        return "No pure-Python implementation was measured."
    lines = []
    sizes = table["message_bytes"].fillna(-1)
    for (algo, op, n), g in table.groupby(["algorithm", "operation", sizes], sort=False):
        parts = [f"{_fci(r)} vs {r.native_backend}" for r in g[g["same_standard"]].itertuples()]
        parts += [f"{_fci(r)} vs liboqs's round-3 {r.native_algorithm}" for r in g[~g["same_standard"]].itertuples()]
        lines.append(f"- {algo} {op}" + (f" at {int(n):,} B" if n >= 0 else "") + ": " + ", ".join(parts))
    text = "Pure-Python time divided by native time (ratio of medians, interval over rounds):\n\n" + "\n".join(lines)
    summary = slowdown_summary(table)
    fam = summary.assign(family=np.where(summary["algorithm"].str.startswith("SLH-DSA"), "SLH-DSA",
                                         np.where(summary["algorithm"].str.startswith("ML-DSA"), "ML-DSA", "other")))
    ranges = fam.groupby("family")["vs_fastest_same_work"].agg(["min", "max"])
    if {"SLH-DSA", "ML-DSA"} <= set(ranges.index):
        h, m = ranges.loc["SLH-DSA"], ranges.loc["ML-DSA"]
        text += (f"\n\nAgainst the fastest native code doing the same work, pure Python is {h['min']:,.1f}× to "
                 f"{h['max']:,.1f}× slower for SLH-DSA and {m['min']:,.0f}× to {m['max']:,.0f}× for ML-DSA.")
        if h["max"] < m["min"]:
            text += (" A likely reason, not measured here: SLH-DSA spends its time in hash calls, which `hashlib` "
                     "runs in native code (OpenSSL) even from Python, while ML-DSA's polynomial arithmetic runs in "
                     "the interpreter.")
    spread = []
    same = table[table["same_standard"]]
    for (algo, op, n), g in same.groupby(["algorithm", "operation", same["message_bytes"].fillna(-1)], sort=False):
        if len(g) > 1 and g["native_ns"].max() / g["native_ns"].min() >= 5:
            fast, slow = g.loc[g["native_ns"].idxmin()], g.loc[g["native_ns"].idxmax()]
            n_ = None if n < 0 else n
            ratio, lo, hi = _ratio(samples, (slow.native_algorithm, slow.native_backend, op, n_),
                                   (fast.native_algorithm, fast.native_backend, op, n_), slow.native_ns, fast.native_ns)
            spread.append(f"{algo} {op}" + (f" at {int(n):,} B" if n >= 0 else "")
                          + f" ({slow.native_backend} {fmt_time_ns(slow.native_ns)}, {fast.native_backend} "
                          f"{fmt_time_ns(fast.native_ns)}: {fmt_factor_ci(ratio, lo, hi, 1)}; {slow.native_backend} "
                          f"runs {slow.native})")
    if spread:
        text += ("\n\nNative implementations of one standard differ by large factors too, so a slowdown depends on "
                 "which native code it is measured against: " + "; ".join(spread) + ". Whether the slower one's "
                 "implementation (named from its installed package) explains the factor is a hypothesis these "
                 "measurements do not test.")
    return text


def _fci(r) -> str:
    return fmt_factor_ci(r.slowdown, r.slowdown_ci_low, r.slowdown_ci_high, 1)


# ----- the study beside us -----
def compare_with_study(df: pd.DataFrame, samples: dict | None = None, reference: pd.DataFrame | None = None,
                       mapping: dict[str, list[str]] | None = None) -> pd.DataFrame:
    """The study's table beside our medians at the same lengths, one row per study label, algorithm, backend,
    operation and length: ``study_over_ours`` with its interval from our side only (:func:`pqlab.measure.stats.ratio_to_published`).
    `mapping`: study label -> our names ("NAME" or "NAME@backend"); default :func:`study_comparators`."""
    ref = load_study() if reference is None else reference
    mapping = mapping or study_comparators()
    ours = df[["algorithm", "backend", "operation", "message_bytes", "time_ns_median"]]
    rows = []
    for label, names in mapping.items():
        sub = ref[ref["algorithm"] == label]
        for spec in names:
            name, _, backend = spec.partition("@")
            mine = ours[(ours["algorithm"] == name) & ((ours["backend"] == backend) if backend else True)]
            for r in sub.merge(mine, on=["operation", "message_bytes"], suffixes=("_study", "")).itertuples():
                v = _get(samples, name, r.backend, r.operation, r.message_bytes)
                ratio, lo, hi = (ratio_to_published(r.time_ms * 1e6, v) if v.size
                                 else (r.time_ms * 1e6 / r.time_ns_median, math.nan, math.nan))
                rows.append({"study_label": label, "algorithm": name, "backend": r.backend, "operation": r.operation,
                             "message_bytes": int(r.message_bytes), "study_ms": r.time_ms,
                             "ours_ms": r.time_ns_median / 1e6, "study_over_ours": ratio, "ci_low": lo, "ci_high": hi})
    return pd.DataFrame(rows)


def study_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per study label, algorithm and operation: the smallest and largest study/ours ratio over the grid, each with
    its interval from our side only (``ratio_min_ci_low`` ...) and the length it was at."""
    if table.empty:
        return table
    keys, rows = ["study_label", "algorithm", "backend", "operation"], []
    for key, g in table.groupby(keys, sort=False):
        row = dict(zip(keys, key))
        for end, r in (("min", g.loc[g["study_over_ours"].idxmin()]), ("max", g.loc[g["study_over_ours"].idxmax()])):
            row.update({f"ratio_{end}": r.study_over_ours, f"ratio_{end}_ci_low": r.ci_low,
                        f"ratio_{end}_ci_high": r.ci_high, f"{end}_at_bytes": int(r.message_bytes)})
        rows.append({**row, "sizes": len(g)})
    return pd.DataFrame(rows)


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
    # the mean of k readings of a 1 µs timer times k is whole µs: the smallest k that makes most RSA/ECDSA cells so
    us = ref.loc[ref["algorithm"].isin(CLASSICAL_MAP), "time_ms"].to_numpy(float) * 1e3
    whole = {k: int((np.abs(us * k - np.round(us * k)) < 0.01).sum()) for k in range(1, 11)}
    k = next((k for k, n in whole.items() if n >= 0.9 * us.size), None)
    out.update(runs_inferred=k, runs_inferred_cells=whole.get(k, 0), runs_cells=int(us.size))
    return out


def describe_study(table: pd.DataFrame, reference: pd.DataFrame | None = None, labels: dict | None = None) -> str:
    """Markdown: what the study's own numbers say (its ratios are ratios of single published numbers: no
    interval), and how its times compare with ours (intervals in the table)."""
    f = study_findings(reference)
    labels = labels or study_labels()
    lines = [
        f"- The study recommends ECDSA because it 'performs faster than SPHINCS and RSA in terms of signing "
        f"messages'. Its own Table 1 has RSA signing faster than ECDSA at {f['rsa_faster_than_ecdsa_sign']} of "
        f"{f['sizes_sign']} sizes (ECDSA {f['ecdsa_over_rsa_sign_min']:.1f}× to {f['ecdsa_over_rsa_sign_max']:.1f}× "
        f"slower; ratios of its single numbers, without interval); RSA also verifies faster at "
        f"{f['rsa_faster_than_ecdsa_verify']} of {f['sizes_verify']} sizes, and signs plus verifies faster at "
        f"{f['rsa_faster_than_ecdsa_both']} of {f['sizes_sign']}. "
        + ("The conclusion contradicts the data it rests on." if f["rsa_faster_than_ecdsa_sign"] == f["sizes_sign"]
           else ""),
        f"- SPHINCS signing in the study is flat ({f['sphincs_sign_min_ms']:.3f} to {f['sphincs_sign_max_ms']:.3f} ms "
        f"over the grid) while its verification grows ({f['sphincs_verify_min_ms']:.3f} to "
        f"{f['sphincs_verify_max_ms']:.3f} ms).",
    ]
    for label, g in study_summary(table).groupby("study_label", sort=False):
        parts = [f"{r.algorithm} ({r.backend}) {r.operation} {fmt_factor_ci(r.ratio_min, r.ratio_min_ci_low, r.ratio_min_ci_high)}"
                 f" to {fmt_factor_ci(r.ratio_max, r.ratio_max_ci_low, r.ratio_max_ci_high)}" for r in g.itertuples()]
        lines.append(f"- **{label}** ({labels.get(label, '')}): the study's time over ours (smallest to largest over the "
                     "grid, each with its interval from our side only), " + "; ".join(parts) + ".")
    return "\n".join(lines)


# ----- what the study's RSA timings say about themselves -----
def rsa_evidence(native: pd.DataFrame, fits: pd.DataFrame, samples: dict | None = None,
                 reference: pd.DataFrame | None = None, ours: tuple[str, str] = ("RSA-2048-PKCS1v15-sig", "cryptography"),
                 modulus_bits: int = 2048) -> dict:
    """Computed from the study's own RSA columns, beside our RSA-2048 (`ours`: algorithm, backend): the study's
    per-byte cost of RSA signing (OLS over its grid, with its standard error) against ours (what hashing the message
    costs here) and the rise over the grid each implies; its sign/verify ratio at each size (single numbers) against
    ours at our shortest message (interval over rounds); the modulus that ratio would imply if the private/public
    cost ratio grew linearly with the modulus at a fixed public exponent (a model, not a measurement)."""
    ref = load_study() if reference is None else reference
    rsa = ref[ref["algorithm"] == "RSA"]
    study_fit = fit_linear_cost(study_as_measurements(rsa)).set_index("operation")
    span = float(rsa["message_bytes"].max() - rsa["message_bytes"].min())
    wide = rsa.pivot_table(index="message_bytes", columns="operation", values="time_ms")
    ratio_study = wide["sign"] / wide["verify"]
    mine = fits[(fits["algorithm"] == ours[0]) & (fits["backend"] == ours[1]) & (fits["operation"] == "sign")]
    m = native[(native["algorithm"] == ours[0]) & (native["backend"] == ours[1])]
    shortest = m.groupby("message_bytes")["operation"].nunique()
    shortest = shortest[shortest >= 2].index.min() if len(shortest) else None
    out = {"grid_span_bytes": span, "study_sign_per_byte_ns": float(study_fit.loc["sign", "per_byte_ns"]),
           "study_sign_per_byte_se": float(study_fit.loc["sign", "per_byte_ns_se"]),
           "study_sign_per_byte_significant": bool(study_fit.loc["sign", "per_byte_significant"]),
           "study_sign_min_ms": float(wide["sign"].min()), "study_sign_max_ms": float(wide["sign"].max()),
           "study_sign_over_verify_min": float(ratio_study.min()), "study_sign_over_verify_median": float(ratio_study.median()),
           "study_sign_over_verify_max": float(ratio_study.max()), "ours": f"{ours[0]} ({ours[1]})",
           "modulus_bits": modulus_bits}
    if len(mine):
        out["ours_sign_per_byte_ns"] = float(mine["per_byte_ns"].iloc[0])
        out["ours_sign_per_byte_se"] = float(mine["per_byte_ns_se"].iloc[0])
        out["hash_rise_over_grid_ms"] = out["ours_sign_per_byte_ns"] * span / 1e6
    if shortest is not None:
        at = m[m["message_bytes"] == shortest].set_index("operation")["time_ns_median"]
        r, lo, hi = _ratio(samples, (*ours, "sign", shortest), (*ours, "verify", shortest), at["sign"], at["verify"])
        out.update(ours_message_bytes=int(shortest), ours_sign_over_verify=r, ours_sign_over_verify_ci_low=lo,
                   ours_sign_over_verify_ci_high=hi,
                   implied_modulus_bits=modulus_bits * out["study_sign_over_verify_median"] / r)
    return out


def describe_rsa_evidence(ev: dict) -> str:
    """Markdown: what the study's RSA columns show about what was timed, each sentence only where the numbers
    support it; the modulus estimate is labelled as a model."""
    lines = []
    rise, ours = ev.get("hash_rise_over_grid_ms"), ev.get("ours_sign_per_byte_ns")
    slope = f"{ev['study_sign_per_byte_ns']:.3g} ± {ev['study_sign_per_byte_se']:.2g} ns/B"
    if ev["study_sign_per_byte_significant"]:
        lines.append(f"- The study's RSA signing grows with the message ({slope}).")
    elif ours is not None and (z := (ours - ev["study_sign_per_byte_ns"])
                               / math.hypot(ev["study_sign_per_byte_se"], ev["ours_sign_per_byte_se"])) > 2:
        lines.append(f"- The study's RSA signing does not grow with the message as hashing it would: its cost per byte, "
                     f"{slope}, lies {z:.1f} standard errors below the {ours:.3g} ± {ev['ours_sign_per_byte_se']:.2g} "
                     f"ns/B that hashing the message costs here ({ev['ours']}), which over its grid would add "
                     f"{rise:.3g} ms to times of {ev['study_sign_min_ms']:.3g} to {ev['study_sign_max_ms']:.3g} ms. "
                     "At the hash speed measured here, its timed region cannot have included hashing the message.")
    else:
        lines.append(f"- The study's RSA signing shows no cost per byte ({slope}), but the scatter of its times is "
                     "too large to tell whether the message was hashed inside the timer.")
    r = ev.get("ours_sign_over_verify")
    if r is not None and np.isfinite(ev.get("ours_sign_over_verify_ci_low", math.nan)) \
            and ev["ours_sign_over_verify_ci_low"] > 2 * ev["study_sign_over_verify_max"]:
        lines.append(f"- It signs and verifies in about the same time: sign/verify {ev['study_sign_over_verify_min']:.2g} "
                     f"to {ev['study_sign_over_verify_max']:.2g} over its grid (median "
                     f"{ev['study_sign_over_verify_median']:.2g}; single numbers, no interval). {ev['ours']} signs "
                     f"{fmt_factor_ci(r, ev['ours_sign_over_verify_ci_low'], ev['ours_sign_over_verify_ci_high'], 1)} "
                     f"slower than it verifies here (at {ev['ours_message_bytes']:,} B), as RSA with a small public "
                     "exponent does. *Model, not measurement:* if the private/public cost ratio grew linearly with the "
                     f"modulus, the study's ratio would mean a modulus of about {ev['implied_modulus_bits']:,.0f} bits "
                     "— no usable RSA key is that short, so the timings do not describe RSA private- and public-key "
                     "operations of any modulus, and the modulus cannot be read from them (the study does not state "
                     "it). A plausible reading, not tested here: a fixed per-call cost dominates both columns.")
    elif r is not None:
        lines.append(f"- Its sign/verify ratio ({ev['study_sign_over_verify_min']:.2g} to "
                     f"{ev['study_sign_over_verify_max']:.2g}) is not clearly below ours "
                     f"({fmt_factor_ci(r, ev.get('ours_sign_over_verify_ci_low'), ev.get('ours_sign_over_verify_ci_high'), 1)}).")
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


def _times(samples: dict | None, row, op: str, n):
    ops = ("sign", "verify") if op == "sign+verify" else (op,)
    parts = tuple(_get(samples, row.algorithm, row.backend, o, n) for o in ops)
    return parts if all(p.size for p in parts) and row.source == "measured" else None


def _rank_ratio(samples: dict | None, a, b, op: str, n) -> str:
    """a's time over b's at length n as "x× [low, high]" (over rounds; a model value has no interval)."""
    x, y = _times(samples, a, op, n), _times(samples, b, op, n)
    if x is None or y is None:
        return fmt_factor_ci(a.time_ns / b.time_ns, math.nan, math.nan) + (" (model)" if "model" in (a.source, b.source) else "")
    return fmt_factor_ci(*ratio_ci(x if len(x) > 1 else x[0], y if len(y) > 1 else y[0]))


def recommend(df: pd.DataFrame, fits: pd.DataFrame | None = None, slowdowns: pd.DataFrame | None = None,
              message_bytes: Sequence[int] = (10_000, 100_000), reference: pd.DataFrame | None = None,
              samples: dict | None = None, runs=()) -> str:
    """The closing recommendation, generated from the measurements (Markdown); every factor between two of
    our measurements carries its interval over rounds when `samples` are given; then conforming.caveat(runs)."""
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
            s += f"; {second.algorithm} takes {_rank_ratio(samples, second, best, op, n)} its time)" if second is not None else ")"
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
    n0 = message_bytes[0]
    best_sign = ranks[(ranks["message_bytes"] == n0) & (ranks["operation"] == "sign")]
    rsa = best_sign[best_sign["algorithm"].str.startswith("RSA")]
    ec = best_sign[best_sign["algorithm"].str.startswith("ECDSA")]
    if len(rsa) and len(ec):
        fast, slow = (ec.iloc[0], rsa.iloc[0]) if ec.iloc[0].time_ns < rsa.iloc[0].time_ns else (rsa.iloc[0], ec.iloc[0])
        lines.append(f"- The study recommended ECDSA for signing although its own table has RSA signing faster at "
                     f"{f['rsa_faster_than_ecdsa_sign']} of {f['sizes_sign']} sizes. Here {fast.algorithm} "
                     f"({fast.backend}) signs faster: {slow.algorithm} takes {_rank_ratio(samples, slow, fast, 'sign', n0)} "
                     f"its time at {n0:,} bytes.")
    verdict = _verdict(ranks, message_bytes, samples)
    if verdict:
        lines.append(verdict)
    if slowdowns is not None and not slowdowns.empty:
        s = slowdowns[slowdowns["same_standard"]]
        per = s.groupby(["algorithm", "operation"])["slowdown"].agg(["min", "max"]).reset_index()
        lines.append("- Pure Python costs a factor of "
                     + "; ".join(f"{r.algorithm} {r.operation} {r.min:,.1f}×" + (f"–{r.max:,.1f}×" if r.max > r.min * 1.05 else "")
                                 for r in per.itertuples())
                     + " over native implementations of the same standard (intervals in the slowdown table).")
    lines += [f"- {w.strip()}" for w in conforming.caveat(runs).split("⚠") if w.strip()]
    return "\n".join(lines)


def _verdict(ranks: pd.DataFrame, message_bytes: Sequence[int], samples: dict | None = None) -> str:
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
                 f"{_rank_ratio(samples, p, classical, 'sign+verify', n)} the time of {classical.algorithm} at {n:,} bytes")
        hb = pq[n][pq[n]["family"] == "hash-based"]
        if len(hb) and hb.iloc[0].algorithm != p.algorithm:
            text += (f"; the hash-based {hb.iloc[0].algorithm} costs {_rank_ratio(samples, hb.iloc[0], p, 'sign+verify', n)} "
                     f"{p.algorithm}'s time, a price for resting on hash functions alone")
    return text + "."


# ----- figures -----
@plotting.styled
def plot_time_vs_message(native: pd.DataFrame, fits: pd.DataFrame, width: float = plotting.FULL_WIDTH):
    """Median time against message length per operation, with each fitted line and its crossover."""
    model = fits.assign(intercept=fits["fixed_ns"], slope=fits["per_byte_ns"],
                        crossover=fits["crossover_bytes"].where(fits["per_byte_significant"]))
    return plotting.panel_lines(native, x="message_bytes", y="time_ns_median", hue="algorithm", panel="operation",
                                panels=["sign", "verify"], model=model, connect=False, mark="crossover",
                                model_label="fit: fixed + per-byte × length", mark_label="crossover: hashing = fixed part",
                                colors=plotting.shaded_family_colors(native), unit="µs", symlog_x=True,
                                xlabel="message length (bytes)", ylabel="median time (µs, log)", height=3.2, width=width)


@plotting.styled
def plot_per_byte(fits: pd.DataFrame, width: float = plotting.FULL_WIDTH):
    """Per-byte cost with ± one standard error (positive estimates only: log axis)."""
    out = fits[fits["per_byte_ns"] > 0].copy()
    several = out.groupby("algorithm")["backend"].transform("nunique") > 1
    out["label"] = out["algorithm"].where(~several, out["algorithm"] + " (" + out["backend"] + ")")
    out["low"], out["high"] = ((out["per_byte_ns"] - out["per_byte_ns_se"]).clip(lower=out["per_byte_ns"] * 0.01),
                               out["per_byte_ns"] + out["per_byte_ns_se"])
    return plotting.grouped_bars(out, category="label", group="operation", value="per_byte_ns", low="low", high="high",
                                 log=False, ylabel="ns per message byte", width=width, title="Cost per message byte (± 1 SE)")


@plotting.styled
def plot_slowdown(table: pd.DataFrame, message_bytes: int | None = None, width: float = plotting.FULL_WIDTH):
    """Pure-Python over native time per pair, with intervals over rounds, at one length (default: the shortest)."""
    n = message_bytes if message_bytes is not None else table["message_bytes"].min()
    out = table[table["message_bytes"].isna() | (table["message_bytes"] == n)].copy()
    out["label"] = [f"{a}\nvs {b}" + ("" if same else " (round 3)")
                    for a, b, same in zip(out["algorithm"], out["native_backend"], out["same_standard"])]
    return plotting.grouped_bars(out, category="label", group="operation", value="slowdown", low="slowdown_ci_low",
                                 high="slowdown_ci_high", ylabel="pure Python / native (log)", width=width,
                                 title=f"How much slower pure Python is (bars: {fmt_percent(CONFIDENCE, 0)} intervals)")


@plotting.styled
def plot_study_vs_ours(table: pd.DataFrame, reference: pd.DataFrame | None = None, width: float = plotting.FULL_WIDTH):
    """The study's times over its whole grid (dashed) and ours at the lengths we measured (solid)."""
    ref = load_study() if reference is None else reference
    study = pd.DataFrame({"series": "study: " + ref["algorithm"], "family": ref["algorithm"].map(family_of),
                          "operation": ref["operation"], "message_bytes": ref["message_bytes"], "time_ms": ref["time_ms"]})
    ours = pd.DataFrame({"series": "ours: " + table["algorithm"] + " (" + table["backend"] + ")",
                         "family": table["study_label"].map(family_of), "operation": table["operation"],
                         "message_bytes": table["message_bytes"], "time_ms": table["ours_ms"]})
    lines = pd.concat([study, ours], ignore_index=True)
    return plotting.panel_lines(lines, x="message_bytes", y="time_ms", hue="series", panel="operation",
                                panels=["sign", "verify"], colors=plotting.shaded_family_colors(lines, key="series"),
                                linestyles={s: "--" for s in study["series"].unique()}, logx=False, eng_x=True,
                                xlabel="message length (bytes)", ylabel="time (ms, log)", legend_cols=3, height=3.2, width=width)


# ----- closing, caveats and quoted numbers -----
def closing_note(slowdowns: pd.DataFrame, fits: pd.DataFrame, agreement: pd.DataFrame | None = None) -> str:
    """The notebook's last words: the pure-Python slowdown factors, the per-byte costs, agreement."""
    blocks, lines = [], []
    if not slowdowns.empty:
        summary = slowdown_summary(slowdowns)
        sizes = sorted({int(n) for n in slowdowns["message_bytes"].dropna()})
        lines.append("**Pure-Python slowdown factors** (pure-Python time / native time, ratio of medians with its "
                     "interval over rounds; signing and verifying at " + ", ".join(f"{n:,}" for n in sizes)
                     + "-byte messages), against the fastest and the slowest native implementation of the same standard:\n")
        for r in summary.itertuples():
            same = (fmt_factor_ci(r.vs_fastest, r.vs_fastest_ci_low, r.vs_fastest_ci_high, 1) + f" ({r.fastest})"
                    + (f" to {fmt_factor_ci(r.vs_slowest, r.vs_slowest_ci_low, r.vs_slowest_ci_high, 1)} ({r.slowest})"
                       if r.slowest != r.fastest else "")
                    if isinstance(getattr(r, "fastest", None), str) else "no native implementation of the standard")
            extra = (f"; {r.vs_fastest_same_work:,.1f}× against liboqs's round-3 "
                     f"{str(r.fastest_same_work).split('(')[1].rstrip(')')}" if "(" in str(r.fastest_same_work) else "")
            size = "" if r.message_bytes is None or pd.isna(r.message_bytes) else f" at {int(r.message_bytes):,} B"
            lines.append(f"- {r.algorithm} {r.operation}{size}: {same}{extra}")
        blocks.append("\n".join(lines))
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


def caveats(native: pd.DataFrame, reference: pd.DataFrame | None = None, run=None, overhead_share=0.01, runs=()) -> str:
    """Markdown, one sentence per caveat that applies here, each from the data: how the study timed, what it
    does not state, the SPHINCS comparison, few samples, the harness's own call cost, conforming.caveat(runs)."""
    ref = load_study() if reference is None else reference
    src = ref.attrs.get("source") or {}
    out = [f"The study's method: {src.get('method', 'not recorded')}; its machine: {src.get('machine', 'not recorded')}.",
           "The study's numbers are single values per size (no spread is given), so every ratio against them takes "
           "its interval from our side only.",
           f"{STUDY_NOTES['RSA']}; {STUDY_NOTES['ECDSA']}: our RSA-2048 and ECDSA-P256 stand in for them.",
           f"Its SPHINCS is SPHINCS-256, not SPHINCS+: ours are the sets with the same hash length "
           f"({8 * sphincs256()['hash_bytes']} bits), a like-for-like hash length, not a like-for-like scheme."]
    f = study_findings(ref)  # the study states no repetition count: what its table suggests (an inference)
    k = f["runs_inferred"]
    out.append("The study states no repetition count, and its times do not reveal one." if k is None else
               f"The study states no repetition count. {f['runs_inferred_cells']} of its {f['runs_cells']} RSA and ECDSA "
               f"times become whole microseconds once multiplied by {k}, and fewer for any smaller factor: consistent "
               f"with {f'means of {k} runs' if k > 1 else 'single readings'} of a microsecond timer (an inference, not "
               "the study's statement).")
    few = native[flags.has(native["flags"].fillna(""), "few-samples")]
    if len(few):
        out.append(f"{len(few)} of {len(native)} of our measurements have fewer than {MIN_SAMPLES} samples: their "
                   "intervals are wide.")
    overhead = (run.meta.get("harness_overhead_ns") if run is not None else None) or 0
    fast = native[native["time_ns_median"] * overhead_share < overhead]
    if len(fast):
        out.append(f"A do-nothing call through pqlab's harness costs {fmt_time_ns(overhead)}, more than "
                   f"{fmt_percent(overhead_share, 0)} of {len(fast)} medians here; those times include it.")
    out += [s.strip() for s in conforming.caveat([r for r in (run, *runs) if r]).split("⚠") if s.strip()]
    return "\n".join(f"- {c}" for c in out)


def _key(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", str(text).replace("+", "plus").lower()).strip("_")


def numbers(slowdowns: pd.DataFrame, fits: pd.DataFrame, beside: pd.DataFrame | None = None,
            evidence: dict | None = None, runs=()) -> dict:
    """Every number the notebook quotes, under stable keys (numbers.tex); ``scaling_mldsa_caveat``: of `runs`."""
    out = {}
    for r in slowdowns[slowdowns["same_standard"]].itertuples() if not slowdowns.empty else []:
        size = "" if r.message_bytes is None or pd.isna(r.message_bytes) else f"_{int(r.message_bytes)}b"
        key = _key(f"slowdown_{r.algorithm}_{r.operation}{size}_vs_{r.native_backend}")
        out[key], out[f"{key}_ci_low"], out[f"{key}_ci_high"] = r.slowdown, r.slowdown_ci_low, r.slowdown_ci_high
    for r in fits.itertuples():
        key = _key(f"per_byte_ns_{r.algorithm}_{r.backend}_{r.operation}")
        out[key], out[f"{key}_se"] = r.per_byte_ns, r.per_byte_ns_se
    if beside is not None and not beside.empty:
        for r in study_summary(beside).itertuples():
            key = _key(f"study_over_ours_{r.study_label}_{r.algorithm}_{r.backend}_{r.operation}")
            out[f"{key}_min"], out[f"{key}_max"] = r.ratio_min, r.ratio_max
    for k, v in (evidence or {}).items():
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            out[_key(f"rsa_evidence_{k}")] = v
    out = {k: float(v) if v is not None and np.isfinite(v) else None for k, v in out.items()}  # None: not measured
    return {**out, "scaling_mldsa_caveat": conforming.paper_caveat(runs, "ML-DSA")}
