"""Our measurements beside a study's published numbers: what is comparable and what is not.

Absolute times from another machine, language and year do not compare; ratios between
operations *within* one system do (signing over verifying, key generation over
decryption ...), and so do sizes where the parameter sets are the same.  These functions
put several *systems* (the study, each of our backends, the JVM cold and warm phases)
side by side, compute the within-system ratios, and write the sentences that state the
agreement -- generated from the data, never typed.
"""
from __future__ import annotations

import math

import pandas as pd

from .. import flags
from ..results import verified_rows

#: Operations that play the same role in the study's three columns.
OPERATION_ROLE = {"keygen": "keygen", "encrypt": "encrypt/sign", "sign": "encrypt/sign", "encaps": "encrypt/sign",
        "decrypt": "decrypt/verify", "verify": "decrypt/verify", "decaps": "decrypt/verify"}


def times_by_system(systems: dict[str, pd.DataFrame], value: str = "time_ms") -> pd.DataFrame:
    """Wide table: one row per (algorithm, operation), one column per system (times in ms).

    Each frame needs columns algorithm, operation and `value`."""
    frames = []
    for name, df in systems.items():
        if df is None or df.empty:
            continue
        sub = df[["algorithm", "operation", value]].copy()
        sub["system"] = name
        frames.append(sub)
    long = pd.concat(frames, ignore_index=True)
    wide = long.pivot_table(index=["algorithm", "operation"], columns="system", values=value, aggfunc="first")
    return wide[[s for s in systems if s in wide.columns]].reset_index()


def ratio_table(wide: pd.DataFrame, pairs: list[tuple[str, str, str]]) -> pd.DataFrame:
    """Within-system ratios: for each (algorithm, numerator op, denominator op), one value per system."""
    systems = [c for c in wide.columns if c not in ("algorithm", "operation")]
    rows = []
    for algorithm, num, den in pairs:
        a = wide[(wide["algorithm"] == algorithm) & (wide["operation"] == num)]
        b = wide[(wide["algorithm"] == algorithm) & (wide["operation"] == den)]
        row = {"algorithm": algorithm, "ratio": f"{num} / {den}"}
        for s in systems:
            x = a[s].iloc[0] if len(a) else math.nan
            y = b[s].iloc[0] if len(b) else math.nan
            row[s] = x / y if y and not (pd.isna(x) or pd.isna(y)) else math.nan
        rows.append(row)
    return pd.DataFrame(rows)


def agreement_markdown(ratios: pd.DataFrame, reference: str = "study", factor: float = 2.0) -> str:
    """One sentence per ratio: does each of our systems agree with the reference within `factor`?"""
    systems = [c for c in ratios.columns if c not in ("algorithm", "ratio", reference)]
    lines = []
    for _, r in ratios.iterrows():
        ref = r[reference]
        if pd.isna(ref):
            continue
        parts, agree = [], []
        for s in systems:
            if pd.isna(r[s]):
                continue
            parts.append(f"{s} {r[s]:.3g}")
            agree.append(max(r[s], ref) / min(r[s], ref) <= factor if min(r[s], ref) > 0 else False)
        if not parts:
            continue
        verdict = ("agrees" if all(agree) else "disagrees" if not any(agree) else "partly agrees")
        lines.append(f"- **{r['algorithm']} {r['ratio']}**: {reference} {ref:.3g}; ours: {', '.join(parts)} "
                     f"-- {verdict} within a factor of {factor:g} "
                     f"({sum(agree)} of {len(agree)} of our systems).")
    return "\n".join(lines)


def size_table(ours: pd.DataFrame, reference: pd.DataFrame, columns: list[str], key: str = "algorithm") -> pd.DataFrame:
    """Sizes side by side: for each column, ours, published, and whether they match exactly."""
    merged = reference[[key, *[c for c in columns if c in reference]]].merge(
        ours[[key, *[c for c in columns if c in ours]]], on=key, how="left", suffixes=("_published", "_ours"))
    for c in columns:
        p, o = f"{c}_published", f"{c}_ours"
        if p in merged and o in merged:
            merged[f"{c}_match"] = [("" if pd.isna(a) or pd.isna(b) else "yes" if int(a) == int(b) else "no")
                                    for a, b in zip(merged[p], merged[o])]
    return merged


def size_differences_markdown(sizes: pd.DataFrame, columns: list[str], key: str = "algorithm") -> str:
    """Sentences naming every size that matches and every size that differs (generated)."""
    same, differ = [], []
    for _, r in sizes.iterrows():
        for c in columns:
            p, o = r.get(f"{c}_published"), r.get(f"{c}_ours")
            if pd.isna(p) or pd.isna(o):
                continue
            label = c.replace("_bytes", "").replace("_", " ")
            (same if int(p) == int(o) else differ).append(
                f"{r[key]} {label}: {int(o):,} B" + ("" if int(p) == int(o) else f" (published {int(p):,} B)"))
    out = []
    if same:
        out.append("**Equal to the byte:** " + "; ".join(same) + ".")
    if differ:
        out.append("**Different:** " + "; ".join(differ) + ".")
    return "\n\n".join(out)


def times_from_measurements(measurements: pd.DataFrame, rename: dict | None = None,
                            by: str = "backend") -> dict[str, pd.DataFrame]:
    """Per system (one per `by` value): algorithm, operation, time_ms (the median), from pqlab rows.

    Rows of a cold JVM phase (flag ``jvm-cold``) and failed rows are left out."""
    df = verified_rows(measurements)
    df = df[~flags.has(df["flags"], "jvm-cold")]
    out = {}
    for key, g in df.groupby(by, sort=False):
        out[key] = pd.DataFrame({"algorithm": g["algorithm"].replace(rename or {}), "operation": g["operation"],
                                 "time_ms": g["time_ns_median"] / 1e6})
    return out


def role_times(measurements: pd.DataFrame) -> pd.DataFrame:
    """Rows for an operation-time chart: label "algorithm (backend)", role, median and quartiles in ms."""
    df = verified_rows(measurements)
    df = df[df["operation"].isin(OPERATION_ROLE)]
    df = df[~flags.has(df["flags"], "jvm-cold")]
    return pd.DataFrame({"label": df["algorithm"] + "\n(" + df["backend"] + ")", "role": df["operation"].map(OPERATION_ROLE),
                         "median_ms": df["time_ns_median"] / 1e6, "q1_ms": df["time_ns_q1"] / 1e6,
                         "q3_ms": df["time_ns_q3"] / 1e6})


def numbers(ratios: pd.DataFrame, sizes: pd.DataFrame, reference: str, ours: str = "liboqs",
            rsa_backend: str = "cryptography") -> dict:
    """The numbers a text quotes (paper/sections/01_aes_rsa_sphincs.tex), formatted, under stable keys: the
    SPHINCS+ sign/verify and RSA keygen/decrypt ratios of the study (`reference`, a system of `ratios`) and
    ours, and the SPHINCS+ signature's size ("–" where a system did not run)."""
    from ..formatting import fmt_factor

    r = ratios.set_index(["algorithm", "ratio"])

    def ratio(algorithm: str, which: str, system: str):
        key = (algorithm, which)
        return fmt_factor(r.loc[key, system] if key in r.index and system in r.columns else math.nan)

    signature = sizes.loc[sizes["algorithm"] == "SPHINCS+-SHAKE-128f-simple", "signature_bytes_ours"]
    return {"sphincs_sign_over_verify_study": ratio("SPHINCS+-SHAKE-128f-simple", "sign / verify", reference),
            "sphincs_sign_over_verify_ours": ratio("SPHINCS+-SHAKE-128f-simple", "sign / verify", ours),
            "rsa_keygen_over_decrypt_study": ratio("RSA-2048", "keygen / decrypt", reference),
            "rsa_keygen_over_decrypt_ours": ratio("RSA-2048", "keygen / decrypt", rsa_backend),
            "sphincs_signature_bytes": signature.iloc[0] if len(signature) else math.nan}
