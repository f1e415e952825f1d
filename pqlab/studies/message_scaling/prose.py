"""Notebook 02's generated text: what the fits say, the pure-Python slowdown, the study's own numbers and its
RSA columns, the recommendation, the closing note and caveats, and every number the notebook quotes.  Each
sentence is built from the data.
"""
from __future__ import annotations

import math
import re
from collections.abc import Sequence

import numpy as np
import pandas as pd

from pqlab.checks.interop import PURE_BACKEND
from pqlab.core import flags
from pqlab.core.formatting import fmt_bytes_binary, fmt_factor_ci, fmt_percent, fmt_time_ns
from pqlab.core.vocabulary import POST_QUANTUM
from pqlab.measure.stats import MIN_SAMPLES, ratio_ci
from pqlab.studies import conforming
from pqlab.studies.message_scaling.measure import _get, _ratio
from pqlab.studies.message_scaling.model import hashing_passes, model_deviation
from pqlab.studies.message_scaling.published import (
    STUDY_NOTES,
    load_study,
    sphincs256,
    study_findings,
    study_labels,
)
from pqlab.studies.message_scaling.tables import STUDY_ENDS, ranking, slowdown_summary, study_summary


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
                     + ": as their standards specify, these schemes read the message twice when signing "
                       "(Ed25519: the deterministic nonce and the challenge; SPHINCS+/SLH-DSA: PRF_msg for "
                       "the randomiser and H_msg for the digest) and once when verifying"
                     + (("; about the same for "
                         + ", ".join(f"{r.algorithm} "
                                     f"({fmt_factor_ci(r.sign_over_verify, r.ci_low, r.ci_high)})"
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
                                     f"({r.measured_over_model:.2f}× the model, no interval: a model "
                                     "value has none)" for r in worst.itertuples())
                         + ". Possible causes, not measured here: noise from other processes sharing the "
                           "machine, or effects a straight line does not model (caches, hash block "
                           "boundaries). The standard errors of the fit are widened by the scatter (Birge "
                           "ratio).")
        else:
            paras.append(f"Every measured point lies within {tolerance:.0%} of its straight line.")
    return ("Crossover length, where hashing the message costs as much as the fixed part of the operation "
            "(fastest first):\n\n" + "\n".join(lines) + "\n\n" + "\n\n".join(paras))


def describe_implementations(df: pd.DataFrame) -> str:
    """Markdown: which implementation (with its version) each backend of `df` ran."""
    pairs = df[["backend", "implementation"]].dropna().drop_duplicates().sort_values("backend")
    return ("Implementations: " + "; ".join(f"{r.backend}: {r.implementation}" for r in pairs.itertuples())
            + ".")


def describe_slowdown(table: pd.DataFrame, samples: dict | None = None) -> str:
    """Markdown: the pure-Python slowdown factors with their intervals, per algorithm and operation; where two
    native implementations of one standard differ by a large factor, that factor (with its interval) and what
    each runs."""
    if table.empty:
        return "No pure-Python implementation was measured."
    lines = []
    sizes = table["message_bytes"].fillna(-1)
    for (algo, op, n), g in table.groupby(["algorithm", "operation", sizes], sort=False):
        parts = [f"{_fci(r)} vs {r.native_backend}" for r in g[g["same_standard"]].itertuples()]
        parts += [f"{_fci(r)} vs liboqs's round-3 {r.native_algorithm}"
                  for r in g[~g["same_standard"]].itertuples()]
        lines.append(f"- {algo} {op}" + (f" at {int(n):,} B" if n >= 0 else "") + ": " + ", ".join(parts))
    text = ("Pure-Python time divided by native time (ratio of medians, interval over rounds):\n\n"
            + "\n".join(lines))
    summary = slowdown_summary(table)
    fam = summary.assign(family=np.where(summary["algorithm"].str.startswith("SLH-DSA"), "SLH-DSA",
                                         np.where(summary["algorithm"].str.startswith("ML-DSA"), "ML-DSA",
                                                  "other")))
    ranges = fam.groupby("family")["vs_fastest_same_work"].agg(["min", "max"])
    if {"SLH-DSA", "ML-DSA"} <= set(ranges.index):
        h, m = ranges.loc["SLH-DSA"], ranges.loc["ML-DSA"]
        text += (f"\n\nAgainst the fastest native code doing the same work, pure Python is {h['min']:,.1f}× "
                 f"to {h['max']:,.1f}× slower for SLH-DSA and {m['min']:,.0f}× to {m['max']:,.0f}× for "
                 "ML-DSA (the smallest and largest of the factors above, each with its interval there; the "
                 "range has no interval of its own).")
        if h["max"] < m["min"]:
            text += (" A likely reason, not measured here: SLH-DSA spends its time in hash calls, which "
                     "`hashlib` runs in native code (OpenSSL) even from Python, while ML-DSA's polynomial "
                     "arithmetic runs in the interpreter.")
    spread = []
    same = table[table["same_standard"]]
    for (algo, op, n), g in same.groupby(["algorithm", "operation", same["message_bytes"].fillna(-1)],
                                         sort=False):
        if len(g) > 1 and g["native_ns"].max() / g["native_ns"].min() >= 5:
            fast, slow = g.loc[g["native_ns"].idxmin()], g.loc[g["native_ns"].idxmax()]
            n_ = None if n < 0 else n
            ratio, lo, hi = _ratio(samples, (slow.native_algorithm, slow.native_backend, op, n_),
                                   (fast.native_algorithm, fast.native_backend, op, n_), slow.native_ns,
                                   fast.native_ns)
            spread.append(f"{algo} {op}" + (f" at {int(n):,} B" if n >= 0 else "")
                          + f" ({slow.native_backend} {fmt_time_ns(slow.native_ns)}, {fast.native_backend} "
                          f"{fmt_time_ns(fast.native_ns)}: {fmt_factor_ci(ratio, lo, hi, 1)}; "
                          f"{slow.native_backend} runs {slow.native})")
    if spread:
        text += ("\n\nNative implementations of one standard differ by large factors too, so a slowdown "
                 "depends on which native code it is measured against: " + "; ".join(spread) + ". Whether "
                 "the slower one's implementation (named from its installed package) explains the factor is "
                 "a hypothesis these measurements do not test.")
    return text


def _fci(r) -> str:
    return fmt_factor_ci(r.slowdown, r.slowdown_ci_low, r.slowdown_ci_high, 1)


def describe_study(table: pd.DataFrame, reference: pd.DataFrame | None = None,
                   labels: dict | None = None) -> str:
    """Markdown: what the study's own numbers say (its ratios are ratios of single published numbers: no
    interval), and how its times compare with ours (intervals in the table)."""
    f = study_findings(reference)
    labels = labels or study_labels()
    lines = [
        "- The study recommends ECDSA because it 'performs faster than SPHINCS and RSA in terms of signing "
        f"messages'. Its own Table 1 has RSA signing faster than ECDSA at {f['rsa_faster_than_ecdsa_sign']} "
        f"of {f['sizes_sign']} sizes (ECDSA {f['ecdsa_over_rsa_sign_min']:.1f}× to "
        f"{f['ecdsa_over_rsa_sign_max']:.1f}× slower; ratios of its single numbers, no interval); RSA "
        f"also verifies faster at {f['rsa_faster_than_ecdsa_verify']} of {f['sizes_verify']} sizes, and "
        f"signs plus verifies faster at {f['rsa_faster_than_ecdsa_both']} of {f['sizes_sign']}. "
        + ("The conclusion contradicts the data it rests on."
           if f["rsa_faster_than_ecdsa_sign"] == f["sizes_sign"] else ""),
        f"- SPHINCS signing in the study is flat ({f['sphincs_sign_min_ms']:.3f} to "
        f"{f['sphincs_sign_max_ms']:.3f} ms over the grid) while its verification grows "
        f"({f['sphincs_verify_min_ms']:.3f} to {f['sphincs_verify_max_ms']:.3f} ms).",
    ]
    for label, g in study_summary(table).groupby("study_label", sort=False):
        parts = [f"{r.algorithm} ({r.backend}) {r.operation} "
                 f"{fmt_factor_ci(r.ratio_min, r.ratio_min_ci_low, r.ratio_min_ci_high)}"
                 f" to {fmt_factor_ci(r.ratio_max, r.ratio_max_ci_low, r.ratio_max_ci_high)}"
                 for r in g.itertuples()]
        lines.append(f"- **{label}** ({labels.get(label, '')}): the study's time over ours (smallest to "
                     "largest over the grid, each with its interval from our side only), " + "; ".join(parts)
                     + ".")
    return "\n".join(lines)


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
        lines.append("- The study's RSA signing does not grow with the message as hashing it would: its "
                     f"cost per byte, {slope}, lies {z:.1f} standard errors below the {ours:.3g} ± "
                     f"{ev['ours_sign_per_byte_se']:.2g} ns/B that hashing the message costs here "
                     f"({ev['ours']}), which over its grid would add {rise:.3g} ms to times of "
                     f"{ev['study_sign_min_ms']:.3g} to {ev['study_sign_max_ms']:.3g} ms. At the hash speed "
                     "measured here, its timed region cannot have included hashing the message.")
    else:
        lines.append(f"- The study's RSA signing shows no cost per byte ({slope}), but the scatter of its "
                     "times is too large to tell whether the message was hashed inside the timer.")
    r = ev.get("ours_sign_over_verify")
    if r is not None and np.isfinite(ev.get("ours_sign_over_verify_ci_low", math.nan)) \
            and ev["ours_sign_over_verify_ci_low"] > 2 * ev["study_sign_over_verify_max"]:
        ours_ratio = fmt_factor_ci(r, ev["ours_sign_over_verify_ci_low"], ev["ours_sign_over_verify_ci_high"],
                                   1)
        lines.append("- It signs and verifies in about the same time: sign/verify "
                     f"{ev['study_sign_over_verify_min']:.2g} to {ev['study_sign_over_verify_max']:.2g} over "
                     f"its grid (median {ev['study_sign_over_verify_median']:.2g}; single numbers, no "
                     f"interval). {ev['ours']} signs {ours_ratio} slower than it verifies here (at "
                     f"{ev['ours_message_bytes']:,} B), as RSA with a small public exponent does. *Model, "
                     "not measurement:* if the private/public cost ratio grew linearly with the modulus, the "
                     f"study's ratio would mean a modulus of about {ev['implied_modulus_bits']:,.0f} bits — "
                     "no usable RSA key is that short, so the timings do not describe RSA private- and "
                     "public-key operations of any modulus, and the modulus cannot be read from them (the "
                     "study does not state it). A plausible reading, not tested here: a fixed per-call cost "
                     "dominates both columns.")
    elif r is not None:
        ours_ratio = fmt_factor_ci(r, ev.get("ours_sign_over_verify_ci_low"),
                                   ev.get("ours_sign_over_verify_ci_high"), 1)
        lines.append(f"- Its sign/verify ratio ({ev['study_sign_over_verify_min']:.2g} to "
                     f"{ev['study_sign_over_verify_max']:.2g}) is not clearly below ours ({ours_ratio}).")
    return "\n".join(lines)


def _times(samples: dict | None, row, op: str, n):
    ops = ("sign", "verify") if op == "sign+verify" else (op,)
    parts = tuple(_get(samples, row.algorithm, row.backend, o, n) for o in ops)
    return parts if all(p.size for p in parts) and row.source == "measured" else None


def _rank_ratio(samples: dict | None, a, b, op: str, n) -> str:
    """a's time over b's at length n as "x× [low, high]" (over rounds; a model value has no interval)."""
    x, y = _times(samples, a, op, n), _times(samples, b, op, n)
    if x is None or y is None:
        return (fmt_factor_ci(a.time_ns / b.time_ns, math.nan, math.nan)
                + (" (model)" if "model" in (a.source, b.source) else ""))
    return fmt_factor_ci(*ratio_ci(x if len(x) > 1 else x[0], y if len(y) > 1 else y[0]))


def recommend(df: pd.DataFrame, fits: pd.DataFrame | None = None, slowdowns: pd.DataFrame | None = None,
              message_bytes: Sequence[int] = STUDY_ENDS, reference: pd.DataFrame | None = None,
              samples: dict | None = None, runs=()) -> str:
    """The closing recommendation, generated from the measurements (Markdown); every factor between two of
    our measurements carries its interval over rounds when `samples` are given; then
    conforming.caveat(runs)."""
    ranks = ranking(df, fits, message_bytes)
    if ranks.empty:
        return "Nothing was measured."
    lines = ["**Which signature, for messages of the study's sizes?** (medians on this machine; native "
             "implementations)\n"]
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
            s += (f"; {second.algorithm} takes {_rank_ratio(samples, second, best, op, n)} its time)"
                  if second is not None else ")")
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
            share = native.assign(share=native["per_byte_ns"] * n
                                  / (native["fixed_ns"] + native["per_byte_ns"] * n))
            low = share.loc[share["share"].idxmin()]
            lines.append(f"- Hashing the message matters first for {h.algorithm} {h.operation}: beyond "
                         f"{fmt_bytes_binary(h.crossover_bytes)} it costs more than the rest of the "
                         f"operation. At {n:,} bytes the message's share of the time ranges from "
                         f"{low.share:.0%} ({low.algorithm} {low.operation}) to {share['share'].max():.0%}.")
    f = study_findings(reference)
    n0 = message_bytes[0]
    best_sign = ranks[(ranks["message_bytes"] == n0) & (ranks["operation"] == "sign")]
    rsa = best_sign[best_sign["algorithm"].str.startswith("RSA")]
    ec = best_sign[best_sign["algorithm"].str.startswith("ECDSA")]
    if len(rsa) and len(ec):
        fast, slow = ((ec.iloc[0], rsa.iloc[0]) if ec.iloc[0].time_ns < rsa.iloc[0].time_ns
                      else (rsa.iloc[0], ec.iloc[0]))
        lines.append("- The study recommended ECDSA for signing although its own table has RSA signing "
                     f"faster at {f['rsa_faster_than_ecdsa_sign']} of {f['sizes_sign']} sizes. Here "
                     f"{fast.algorithm} ({fast.backend}) signs faster: {slow.algorithm} takes "
                     f"{_rank_ratio(samples, slow, fast, 'sign', n0)} its time at {n0:,} bytes.")
    verdict = _verdict(ranks, message_bytes, samples)
    if verdict:
        lines.append(verdict)
    if slowdowns is not None and not slowdowns.empty:
        s = slowdowns[slowdowns["same_standard"]]
        per = s.groupby(["algorithm", "operation"])["slowdown"].agg(["min", "max"]).reset_index()
        lines.append("- Over native implementations of the same standard (ranges over lengths and "
                     "implementations, with no interval here: each factor's interval is in the slowdown "
                     "table), pure Python costs a factor of "
                     + ", ".join(f"{r.algorithm} {r.operation} {r.min:,.1f}×"
                                 + (f"–{r.max:,.1f}×" if r.max > r.min * 1.05 else "")
                                 for r in per.itertuples()) + ".")
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
    text = (f"- **Recommendation** (sign plus verify, {min(message_bytes):,} to {n:,} bytes): "
            f"{classical.algorithm}")
    if best_pq and len(set(best_pq.values())) == 1:
        p = pq[n].iloc[0]
        text += (f" where a classical signature is still acceptable; {p.algorithm} as the post-quantum "
                 f"choice, at {_rank_ratio(samples, p, classical, 'sign+verify', n)} the time of "
                 f"{classical.algorithm} at {n:,} bytes")
        hb = pq[n][pq[n]["family"] == "hash-based"]
        if len(hb) and hb.iloc[0].algorithm != p.algorithm:
            text += (f"; the hash-based {hb.iloc[0].algorithm} costs "
                     f"{_rank_ratio(samples, hb.iloc[0], p, 'sign+verify', n)} {p.algorithm}'s time, a price "
                     "for resting on hash functions alone")
    return text + "."


def closing_note(slowdowns: pd.DataFrame, fits: pd.DataFrame, agreement: pd.DataFrame | None = None) -> str:
    """The notebook's last words: the pure-Python slowdown factors, the per-byte costs, agreement."""
    blocks, lines = [], []
    if not slowdowns.empty:
        summary = slowdown_summary(slowdowns)
        sizes = sorted({int(n) for n in slowdowns["message_bytes"].dropna()})
        lines.append("**Pure-Python slowdown factors** (pure-Python time / native time, ratio of medians "
                     "with its interval over rounds; signing and verifying at "
                     + ", ".join(f"{n:,}" for n in sizes)
                     + "-byte messages), against the fastest and the slowest native implementation of the "
                       "same standard:\n")
        for r in summary.itertuples():
            same = (fmt_factor_ci(r.vs_fastest, r.vs_fastest_ci_low, r.vs_fastest_ci_high, 1)
                    + f" ({r.fastest})"
                    + (f" to {fmt_factor_ci(r.vs_slowest, r.vs_slowest_ci_low, r.vs_slowest_ci_high, 1)} "
                       f"({r.slowest})" if r.slowest != r.fastest else "")
                    if isinstance(getattr(r, "fastest", None), str)
                    else "no native implementation of the standard")
            any_ci = (r.vs_fastest_same_work_ci_low, r.vs_fastest_same_work_ci_high)
            extra = (f"; {fmt_factor_ci(r.vs_fastest_same_work, *any_ci, 1)} against liboqs's round-3 "
                     f"{str(r.fastest_same_work).split('(')[1].rstrip(')')}"
                     if "(" in str(r.fastest_same_work) else "")
            size = ("" if r.message_bytes is None or pd.isna(r.message_bytes)
                    else f" at {int(r.message_bytes):,} B")
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
        blocks.append(f"**Agreement**: {int(same['verifies'].sum())} of {len(same)} cross-verifications "
                      "between implementations of the same standard succeed; "
                      f"{int((~agreement.loc[~agreement['expected'], 'verifies']).sum())} of "
                      f"{int((~agreement['expected']).sum())} round-3 SPHINCS+ / FIPS 205 SLH-DSA pairs "
                      "fail, as they must.")
    return "\n\n".join(blocks)


def caveats(native: pd.DataFrame, reference: pd.DataFrame | None = None, run=None, overhead_share=0.01,
            runs=()) -> str:
    """Markdown, one sentence per caveat that applies here, each from the data: how the study timed, what it
    does not state, the SPHINCS comparison, few samples, the harness's own call cost,
    conforming.caveat(runs)."""
    ref = load_study() if reference is None else reference
    src = ref.attrs.get("source") or {}
    out = [f"The study's method: {src.get('method', 'not recorded')}; its machine: "
           f"{src.get('machine', 'not recorded')}.",
           "The study's numbers are single values per size (no spread is given), so every ratio against them "
           "takes its interval from our side only.",
           f"{STUDY_NOTES['RSA']}; {STUDY_NOTES['ECDSA']}: our RSA-2048 and ECDSA-P256 stand in for them.",
           "Its SPHINCS is SPHINCS-256, not SPHINCS+: ours are the sets with the same hash length "
           f"({8 * sphincs256()['hash_bytes']} bits), a like-for-like hash length, not a like-for-like "
           "scheme."]
    f = study_findings(ref)  # the study states no repetition count: what its table suggests (an inference)
    k = f["runs_inferred"]
    out.append("The study states no repetition count, and its times do not reveal one." if k is None else
               f"The study states no repetition count. {f['runs_inferred_cells']} of its {f['runs_cells']} "
               f"RSA and ECDSA times become whole microseconds once multiplied by {k}, and fewer for any "
               f"smaller factor: consistent with {f'means of {k} runs' if k > 1 else 'single readings'} of a "
               "microsecond timer (an inference, not the study's statement).")
    few = native[flags.has(native["flags"].fillna(""), "few-samples")]
    if len(few):
        out.append(f"{len(few)} of {len(native)} of our measurements have fewer than {MIN_SAMPLES} samples: "
                   "their intervals are wide.")
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
    """Every number the notebook quotes, under stable keys (numbers.tex); ``scaling_mldsa_caveat``: of
    `runs`."""
    out = {}
    for r in slowdowns[slowdowns["same_standard"]].itertuples() if not slowdowns.empty else []:
        size = "" if r.message_bytes is None or pd.isna(r.message_bytes) else f"_{int(r.message_bytes)}b"
        key = _key(f"slowdown_{r.algorithm}_{r.operation}{size}_vs_{r.native_backend}")
        out[key], out[f"{key}_ci_low"], out[f"{key}_ci_high"] = (r.slowdown, r.slowdown_ci_low,
                                                                 r.slowdown_ci_high)
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
    # None: not measured
    out = {k: float(v) if v is not None and np.isfinite(v) else None for k, v in out.items()}
    return {**out, "scaling_mldsa_caveat": conforming.paper_caveat(runs, "ML-DSA")}
