"""The atlas's sentences, each stating numbers from the data: what was measured and merged here, which
platforms are drawn and how they differ, the statistic and interval of each kind of ratio, each platform's
range of ratios, which algorithms lose or gain most from one platform to another, and the values a write-up
quotes (:func:`numbers`).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from pqlab.core.escaping import code, data_key
from pqlab.core.formatting import fmt_factor_ci, markdown, resolved
from pqlab.core.vocabulary import c_loop
from pqlab.studies import conforming
from pqlab.studies.atlas.compared import (
    ANCHOR,
    CLASSICAL,
    INTERVAL,
    KIND_LABEL,
    MEASURED,
    NO_ROUNDS,
    PUBLISHED,
    statistic_text,
    statistic_words,
)
from pqlab.studies.atlas.platforms import Atlas


def describe_local(local: list[dict], reports: list[dict]) -> str:
    """What was measured here, under which identities, and what each merge did.  The atlas counts one platform
    per host and liboqs build: a run under an identity override joins its host's other runs of the same
    build.  Run ids, machine ids and bundle file names are code spans that hold any text
    (:func:`pqlab.core.escaping.code`): a backtick in a bundle's name never ends one."""
    lines = []
    for item in local:
        if not item["override"]:
            who = "this machine's own identity"
        elif item["build"] == "default":
            who = ("the identity `PQLAB_MACHINE_ID` sets, recorded as an override of this machine in its run "
                   "and bundle; the atlas counts it as this host's platform of the default build")
        else:
            who = (f"an **identity override** of this machine (`PQLAB_MACHINE_ID`), recorded as such in its "
                   f"run and bundle: the same host with the {markdown(item['build'])} build, not another "
                   f"machine; the atlas counts it with this host's other runs of that build as one platform")
        lines.append(f"- liboqs **{markdown(item['build'])}** build: run {code(item['run_id'])} as machine "
                     f"{code(item['machine_id'])}, {who}; bundle {code(Path(item['bundle']).name)}.")
    for r in reports:
        state = ("already imported, nothing changed" if r["status"] == "already imported" else
                 f"{len(r['imported'])} run(s) imported ({len(r['converted'])} converted from an older "
                 f"schema), {len(r['present'])} already present")
        lines.append(f"- merged {code(Path(r['bundle']).name)} (machine {code(r['machine_id'])}): {state}.")
    return ("\n".join(lines) if lines
            else "Nothing was measured or merged by this run (`local_builds` and `bundles` are empty).")


def describe_platforms(atlas: Atlas) -> str:
    """How many platforms are drawn (one per host and liboqs build), which of them are this host, which merge
    runs of several identities, what differs between them, and what `platforms` left out."""
    p = atlas.platforms
    measured, pub = p[p["kind"] == MEASURED], p[p["kind"] == PUBLISHED]
    left = (f" Left out by `platforms`: {', '.join(map(markdown, atlas.left_out))}." if atlas.left_out
            else "")
    if measured.empty:
        return (f"**No measured platform** is drawn: no run of the results store measured both sides of a "
                f"comparison{', or `platforms` selected none' if atlas.left_out else ''}. Only the "
                f"{len(pub)} published platform(s) are shown.{left}")
    here = measured[measured["this_host"]]
    text = [f"The atlas draws **{len(measured)} measured platform(s)**, one per host and liboqs build "
            f"({measured['machine_id'].nunique()} host(s)), and {len(pub)} published one(s)."]
    if len(here):
        text.append(f"{len(here)} of the measured platforms are this host, one per liboqs build.")
    for row in measured[measured["identities"].str.contains("; ", regex=False)].itertuples():
        text.append(f"**{markdown(row.platform)}** holds runs recorded under "
                    f"{len(row.identities.split('; '))} identities ({markdown(row.identity)}): one host and "
                    "one build, so one platform.")
    for what, col in (("cycle counter", "counter"), ("liboqs build", "liboqs"), ("frequency", "frequency"),
                      ("liboqs CPU code", "cpu_features")):
        values = list(dict.fromkeys(measured[col]))
        text.append(f"Every measured platform has the same {what}: {markdown(values[0])}."
                    if len(values) == 1 else
                    f"The {what} differs: " + "; ".join(
                        f"{markdown(v)} "
                        f"({', '.join(map(markdown, measured.loc[measured[col] == v, 'platform']))})"
                        for v in values) + ".")
    text.append("Each ratio is taken within one run of its platform, the newest that measured both sides "
                "(its run id is in the exported ratios): a ratio never combines runs, hosts or builds.")
    return " ".join(text) + left


def _interval_words(interval: str) -> str:
    return (f"with a {interval}" if interval.startswith(INTERVAL)
            else f"no interval {interval.removeprefix('none ')}")


def describe_statistics(atlas: Atlas) -> str:
    """Per kind of baseline: which statistic the ratios of each platform are, and which have an interval."""
    r = atlas.ratios[atlas.ratios["ratio"].notna()]
    if r.empty:
        return "No ratio to describe."
    lines = []
    for kind in (CLASSICAL, ANCHOR):
        g = r[r["baseline_kind"] == kind]
        if g.empty:
            continue
        parts = [f"{statistic_words(stat)}, {_interval_words(interval)}, on "
                 + ", ".join(markdown(x) for x in dict.fromkeys(h["platform"]))
                 for (stat, interval), h in g.groupby(["statistic", "interval"], sort=False)]
        mixed = g["statistic"].nunique() > 1
        lines.append(f"- Against the **{kind}** baseline: " + "; ".join(parts) + "."
                     + (" These cells differ in statistic: each header, legend entry and exported row names "
                        "its own." if mixed else ""))
    return "\n".join(lines)


def describe_ratios(atlas: Atlas) -> str:
    """Per measured platform and kind: the range of the ratios against the classical baseline, with their
    statistic; what ran each side (:func:`what_ran`); then the caveat of any non-conforming implementation
    the runs timed (:func:`pqlab.studies.conforming.caveat`)."""
    r = atlas.ratios[(atlas.ratios["kind"] == MEASURED) & (atlas.ratios["baseline_kind"] == CLASSICAL)
                     & atlas.ratios["ratio"].notna()]
    if r.empty:
        return "No platform measured a post-quantum algorithm and its classical baseline in one run."
    lines = []
    for platform, g in r.groupby("platform", sort=False):
        parts = []
        for kind, h in g.groupby("algorithm_kind", sort=False):
            lo, hi = h.loc[h["ratio"].idxmin()], h.loc[h["ratio"].idxmax()]
            parts.append(f"{KIND_LABEL[kind]}s from {fmt_factor_ci(lo.ratio, lo.ci_low, lo.ci_high)} "
                         f"({markdown(lo.comparison)}) to {fmt_factor_ci(hi.ratio, hi.ci_low, hi.ci_high)} "
                         f"({markdown(hi.comparison)})")
        lines.append(f"- **{markdown(platform)}** ({statistic_text(g)}; intervals: "
                     f"{'; '.join(dict.fromkeys(g['interval']))}): " + "; ".join(parts) + ".")
    ran = what_ran(atlas.runs)
    warning = conforming.caveat(atlas.runs)  # a ratio of a non-conforming verifier is not like for like
    return "\n".join(lines) + (f"\n\n{ran}" if ran else "") + (f"\n\n{warning}" if warning else "")


def what_ran(runs) -> str:
    """Each side of the measured ratios as the runs recorded it (Markdown): per backend, its implementations
    and releases and how its calls were made (:func:`pqlab.core.vocabulary.c_loop`); where the sides' calls
    were not made alike, that a ratio carries that difference too.  "" without runs."""
    frames = [r.measurements for r in runs if r is not None and len(r.measurements)]
    if not frames:
        return ""
    m = pd.concat(frames, ignore_index=True)
    if "implementation" not in m:
        return ""
    sides = []
    for backend, g in m.groupby("backend", sort=False):
        impls = ", ".join(sorted({str(x) for x in g["implementation"].dropna()})) or str(backend)
        how = ("a sample's calls in pqlab's C loop, one call from Python per sample" if c_loop(str(backend))
               else "one call from Python per operation")
        sides.append((f"{markdown(impls)} ({how})", c_loop(str(backend))))
    text = "What ran each side of these ratios (from the runs): " + "; ".join(t for t, _ in sides) + "."
    if len({c for _, c in sides}) > 1:
        text += (" The two sides' calls were not made alike, so a ratio of a liboqs algorithm over a "
                 "baseline run otherwise carries that difference too: not like for like in that respect.")
    return text


def describe_cross_platform(cross: pd.DataFrame, reference: str, n: int = 2) -> str:
    """Per platform: the statistics its factors divide, how many changed beyond their interval, and which
    algorithms lose or gain most, among the resolved changes only (an interval that resolves the factor and
    excludes 1); a factor whose interval includes 1 is neither a loss nor a gain, and where none is resolved
    the text says so."""
    if not reference:
        return "No measured platform to compare the others with."
    if cross.empty:
        return f"No other platform shares a comparison with **{markdown(reference)}**."
    lines = [f"Factors are each platform's ratio over the same ratio on **{markdown(reference)}** (above 1: "
             "the algorithm loses there, relative to its baseline; below 1: it gains)."]
    for platform, g in cross.groupby("platform", sort=False):
        g = g[np.isfinite(g["factor"])].sort_values("factor")

        def items(df) -> str:
            return "; ".join(f"{markdown(x.comparison)} {fmt_factor_ci(x.factor, x.ci_low, x.ci_high)}"
                             for x in df.itertuples())

        changed = int(g["verdict"].isin(["loses", "gains"]).sum())
        with_interval = g[g["interval"] != NO_ROUNDS]
        told = g[[resolved(lo, hi) for lo, hi in zip(g["ci_low"], g["ci_high"], strict=True)]]
        loses = told[told["verdict"] == "loses"].sort_values("factor", ascending=False)
        gains = told[told["verdict"] == "gains"].sort_values("factor")
        lines.append(f"- **{markdown(platform)}** ({statistic_text(g, 'factor')}): {changed} of {len(g)} "
                     f"ratios changed beyond their interval "
                     f"({'; '.join(dict.fromkeys(with_interval['interval'])) or 'none'}), "
                     f"{len(loses) + len(gains)} of them with an interval that resolves the factor. "
                     + (f"Loses most (resolved, the whole interval above 1): {items(loses.head(n))}. "
                        if len(loses) else "No loss is resolved (no resolved interval lies above 1). ")
                     + (f"Gains most (resolved, the whole interval below 1): {items(gains.head(n))}."
                        if len(gains) else "No gain is resolved (no resolved interval lies below 1)."))
    return "\n".join(lines)


def numbers(atlas: Atlas, cross: pd.DataFrame, reference: str) -> dict[str, tuple[float, str]]:
    """Values for the write-up (name -> (value, format)): platform counts, the reference platform's headline
    ratios, each platform's largest loss factor, and the ML-DSA conformance caveat of the runs
    (:func:`pqlab.studies.conforming.paper_caveat`).  A key made of a platform label or a comparison is
    bounded and never shared by two of them (:func:`pqlab.core.escaping.data_key`): no value replaces
    another."""
    p = atlas.platforms
    out = {"platforms_measured": (int((p["kind"] == MEASURED).sum()), "{}"),
           "platforms_published": (int((p["kind"] == PUBLISHED).sum()), "{}"),
           "atlas_mldsa_caveat": (conforming.paper_caveat(atlas.runs, "ML-DSA"), "{}")}
    taken: dict = {}  # folded key -> the text it stands for (data_key)
    r = atlas.ratios
    headline = r[(r["platform"] == reference) & (r["baseline_kind"] == CLASSICAL) & r["ratio"].notna()]
    for row in headline.itertuples():
        out[data_key("reference_", row.comparison.replace(" / ", "_over_"), taken)] = (row.ratio, "{:.2f}")
    for platform, g in cross.groupby("platform", sort=False):
        if np.isfinite(g["factor"]).any():
            out[data_key("largest_loss_", platform, taken)] = (float(g["factor"].max()), "{:.2f}")
    return out
