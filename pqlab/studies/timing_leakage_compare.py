"""Notebook 09's comparisons: our screens beside the published effects (:func:`published`, each row saying
what differs between the two settings, from the reference rows and the run's metadata) and the quantile
figure (:func:`plot_quantiles`, with bootstrap bands, and :func:`describe_shapes`, what each curve does).
:mod:`pqlab.studies.timing_leakage` re-exports every name here.
"""
from __future__ import annotations

import math
import re
import textwrap
from collections.abc import Sequence

import numpy as np
import pandas as pd

from pqlab.checks import leakage
from pqlab.core.formatting import fmt_factor_ci, mpl_text
from pqlab.core.formatting import markdown as m
from pqlab.core.references import load_reference
from pqlab.publish import plotting

#: What the notebook expects of ours against a published effect measured on another machine: agreement
#: within this factor either way (an order of magnitude); a gap beyond it is commented on.
EXPECTED_FACTOR = 10.0
_VERSION = re.compile(r"\b\d+(?:\.\d+)+[a-z]?\b")
_OPENSSL = re.compile(r"openssl[- ]?(\d+\.\d+\.\d+[a-z]?)", re.IGNORECASE)
_KEY_OURS = re.compile(r"\bRSA-(\d{3,5})\b")
_KEY_PUBLISHED = re.compile(r"\b(\d{3,5})-bit\b")


def _key(text: str, pattern: re.Pattern) -> str:
    found = pattern.search(text or "")
    return found.group(1) if found else ""


def _vtuple(v: str) -> tuple:
    return tuple(int(x) for x in re.findall(r"\d+", v))


def differences(published_row: dict, ours: dict) -> list[str]:
    """What differs between a published finding (a ``09_leakage_published`` row) and our screen (a
    :func:`pqlab.studies.timing_leakage.verdicts` row with its ``notes``), each part read from the two rows:
    the library, the release (the same, one of an advisory's listed range, or outside it), the build's
    OpenSSL, the RSA key size.  Empty when they are the same implementation and release."""
    out = []
    theirs_impl = str(published_row["implementation"]).lower().replace("/", "-").replace(" ", "-")
    ours_impl = str(ours["implementation"]).lower()
    if ours_impl not in theirs_impl:
        out.append(f"library: ours {ours['implementation']}, published {published_row['implementation']}")
    text, version = str(published_row["version"]), str(ours["version"])
    listed = _VERSION.findall(text)
    if text == version:
        pass
    elif text.startswith(version + " ") or text.startswith(version + "("):
        out.append(f"build: the same release ({version}), published as {text[len(version):].strip()}")
    elif version in listed:
        out.append(f"release: ours {version} is one of the published range ({text}), not a release the "
                   "source measured")
    elif listed and _vtuple(version) > max(_vtuple(v) for v in listed):
        out.append(f"release: ours {version} is newer than every release the source names ({text})")
    else:
        out.append(f"release: ours {version}, published {text}")
    theirs_ssl = _OPENSSL.findall(f"{text} {published_row.get('note', '')}")
    ours_ssl = _OPENSSL.findall(str(ours.get("notes") or ""))
    if theirs_ssl and ours_ssl and theirs_ssl[0] != ours_ssl[0]:
        out.append(f"OpenSSL: ours {ours_ssl[0]} (the build it links), published {theirs_ssl[0]}")
    elif theirs_ssl and not ours_ssl:
        out.append(f"OpenSSL: published {theirs_ssl[0]}, ours not recorded")
    ours_key = _key(str(ours.get("operation", "")), _KEY_OURS)
    their_key = _key(str(published_row.get("operation", "")), _KEY_PUBLISHED)
    where = "its operation"
    if not their_key:
        their_key, where = _key(str(published_row.get("note", "")), _KEY_PUBLISHED), "its note"
    if ours_key and their_key and ours_key != their_key:
        out.append(f"key size: ours RSA-{ours_key}, published {their_key}-bit ({where})")
    elif ours_key and not their_key:
        out.append(f"key size: ours RSA-{ours_key}, published not stated")
    return out


def ratio_interval(median: float, low: float, high: float, published: float) -> tuple[float, float, float]:
    """Ours over the published magnitude with the interval of ours (nan ends where our interval spans
    zero: no magnitude is resolved)."""
    if not published or any(pd.isna(v) for v in (median, low, high)):
        return math.nan, math.nan, math.nan
    if low <= 0 <= high:
        return abs(median) / published, math.nan, math.nan
    a, b = sorted((abs(low), abs(high)))
    return abs(median) / published, a / published, b / published


def published(table: pd.DataFrame) -> pd.DataFrame:
    """The published effect sizes (``09_leakage_published``) beside ours: each published row names the screens
    (``program/target``, ``;``-separated, the closest first) that run the same release here; ours is the first
    of them that ran, and empty, with the reason, where none did.  Each row says what differs between the two
    (:func:`differences`): ``same`` is True only where nothing does.  The effect is compared in magnitude (the
    sign only says which class the source subtracted), with the interval of ours."""
    ref = load_reference("09_leakage_published")
    keyed = {f"{r['program']}/{r['target']}": r for _, r in table.iterrows()}
    rows = []
    for _, p in ref.iterrows():
        row = {"source": p["source"], "screen": p["screen"],
               "published_release": f"{p['implementation']} {p['version']}",
               "published_ns": abs(p["value_ns"]), "published_interval": p["interval_ns"],
               "published_repetitions": p["repetitions"], "published_classes": p["classes"]}
        wanted = p["screen"].split(";") if isinstance(p["screen"], str) and p["screen"] else []
        ours = next((keyed[w] for w in wanted if w in keyed), None)  # the first of the screens that ran
        if ours is None:
            row["ours"] = ("no screen of this release in this run" if wanted
                           else "no screen of this release here")
        elif ours["verdict"] == leakage.NOT_SCREENED:
            row["ours"] = ours["reason"]
        else:
            diff = differences(p.to_dict(), ours.to_dict())
            row.update(ours=f"{ours['implementation']} {ours['version']}: {ours['operation']}",
                       verdict=ours["verdict"], pair=ours["largest"], median_ns=ours["median_ns"],
                       ci_low_ns=ours["ci_low_ns"], ci_high_ns=ours["ci_high_ns"],
                       blocks=ours["blocks"], same=not diff,
                       differs="; ".join(diff) or "same implementation and release")
            ratio, lo, hi = ratio_interval(row["median_ns"], row["ci_low_ns"], row["ci_high_ns"],
                                           row["published_ns"])
            row.update(ours_over_published=ratio, ratio_low=lo, ratio_high=hi)
        rows.append(row)
    df = pd.DataFrame(rows)
    return df.reindex(columns=list(dict.fromkeys([*df.columns, "median_ns", "ci_low_ns", "ci_high_ns",
                                                  "blocks", "verdict", "pair", "ours_over_published",
                                                  "ratio_low", "ratio_high", "differs", "same"])))


def beyond_expectation(r) -> bool:
    """Whether ours lies beyond :data:`EXPECTED_FACTOR` of the published magnitude, its interval included."""
    lo, hi = r.get("ratio_low"), r.get("ratio_high")
    if pd.isna(lo) or pd.isna(hi):
        return False
    return hi < 1 / EXPECTED_FACTOR or lo > EXPECTED_FACTOR


def describe_published(side: pd.DataFrame) -> str:
    """One bullet per published number: theirs, ours (the same implementation and release only where that
    is true, else what differs), how far apart with the interval of ours, and a comment where the gap is
    beyond the order of magnitude the notebook expects."""
    lines = []
    for _, r in side.iterrows():
        theirs = (f"published for {m(r['published_release'])}: {r['published_ns']:.0f} ns "
                  f"({m(r['published_classes'])}, {r['published_repetitions']:.0f} repetitions per class; "
                  "the source's value" + (f", {m(r['published_interval'])}" if isinstance(
                      r["published_interval"], str) and r["published_interval"] else "") + ")"
                  if not math.isnan(r["published_ns"])
                  else f"no effect size published for {m(r['published_release'])}")
        if pd.isna(r.get("median_ns")):
            lines.append(f"- **{m(r['source'])}**: {theirs}; ours: {m(r['ours'])}.")
            continue
        same = ("the same implementation and release" if r["same"]
                else f"not the same setting: {m(r['differs'])}")
        ratio = ""
        if not pd.isna(r.get("ours_over_published")):
            factor = fmt_factor_ci(r["ours_over_published"], r["ratio_low"], r["ratio_high"])
            why = ("" if not pd.isna(r["ratio_low"])
                   else " (no interval: ours spans zero, so no magnitude is resolved)")
            ratio = f"; ours over the published magnitude: {factor}{why}"
            if beyond_expectation(r):
                ratio += (f", beyond the factor of {EXPECTED_FACTOR:.0f} either way this notebook expects, "
                          "which the differences listed may account for; it is not explained here")
        lines.append(f"- **{m(r['source'])}**: {theirs}; ours ({m(r['ours'])}, {m(r['pair'])}, "
                     f"{r['blocks']:.0f} blocks): {r['verdict']}, {r['median_ns']:.0f} ns "
                     f"\\[{r['ci_low_ns']:.0f}, {r['ci_high_ns']:.0f}\\]{ratio}; {same}.")
    return "\n".join(lines)


# --------------------------------------------------------------------------- figure

QUANTILES = np.linspace(0.10, 0.90, 17)
#: Bootstrap resamples (over blocks) of the quantile differences' bands, and their confidence.
BAND_RESAMPLES = 200
BAND_CONFIDENCE = 0.95
#: A panel's height with its title and legend (inches).
PANEL_HEIGHT = 2.4
#: The percentiles labelled on a panel's axis (a column-wide figure has room for few).
PERCENTILE_TICKS = (10, 50, 90)
#: A panel title's line length (characters) before the operation wraps.
TITLE_CHARS = 38


def quantile_bands(times: np.ndarray, j: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Class `j`'s quantiles (:data:`QUANTILES`) minus the baseline's (class 0), with a percentile bootstrap
    band over blocks (paired: a resample keeps each block's classes together): (difference, low, high)."""
    times = np.asarray(times, dtype=float)
    d = np.quantile(times[:, j], QUANTILES) - np.quantile(times[:, 0], QUANTILES)
    rng = np.random.default_rng(seed + j)
    idx = rng.integers(0, len(times), size=(BAND_RESAMPLES, len(times)))
    boot = (np.quantile(times[idx, j], QUANTILES, axis=1) - np.quantile(times[idx, 0], QUANTILES, axis=1)).T
    tail = (1 - BAND_CONFIDENCE) / 2
    return d, np.quantile(boot, tail, axis=0), np.quantile(boot, 1 - tail, axis=0)


def shape(times: np.ndarray, j: int, seed: int = 0) -> dict:
    """Where class `j`'s quantiles moved from the baseline's: the percentiles whose band excludes zero."""
    _, lo, hi = quantile_bands(times, j, seed)
    moved = (lo > 0) | (hi < 0)
    return {"moved": int(moved.sum()), "of": len(QUANTILES),
            "percentiles": [float(q * 100) for q in QUANTILES[moved]]}


def describe_shapes(items: Sequence, screens: Sequence[leakage.Screen], groups: Sequence[str]) -> str:
    """What each drawn curve does, from its bands: moved at every percentile drawn (the whole curve), at some
    (e.g. only the upper tail), or at none."""
    lines = []
    for i, s in zip(items, screens):
        if i.group not in groups or s.times is None:
            continue
        for j in range(1, s.times.shape[1]):
            sh = shape(s.times, j)
            if sh["moved"] == sh["of"]:
                where = "the whole curve moved (every percentile drawn)"
            elif sh["moved"]:
                p = sh["percentiles"]
                where = (f"moved at {sh['moved']} of the {sh['of']} percentiles drawn (between the "
                         f"{p[0]:.0f}th and the {p[-1]:.0f}th), not the whole curve")
            else:
                where = "no percentile drawn moved beyond its band"
            lines.append(f"- {m(s.implementation)} {m(s.version)}, {m(s.operation)}: "
                         f"{m(s.classes[j])} against {m(s.classes[0])}: {where} ({s.verdict}).")
    return "\n".join(lines)


@plotting.styled
def plot_quantiles(items: Sequence, screens: Sequence[leakage.Screen], groups: Sequence[str],
                   width: float = plotting.COLUMN_WIDTH):
    """Per screen of `groups` (one panel each, titled with implementation, release and operation): each
    class's quantiles minus the baseline class's (named on the axis), from the 10th to the 90th percentile, in
    ns (tlsfuzzer draws its quantile differences so), each with its bootstrap band (:func:`quantile_bands`);
    the legend, under the verdict, below the panel.  A leak moves the whole curve or only part of it (a tail);
    noise wiggles around zero within the band."""
    import matplotlib.pyplot as plt

    shown = [(i, s) for i, s in zip(items, screens) if i.group in groups and s.times is not None]
    if not shown:
        raise ValueError("no screen of these groups has times to draw")
    # a page-wide figure: three panels a row past four (the figure and its caption must fit one page); a
    # column-wide one: one a row
    cols = (3 if len(shown) > 4 else 2) if width >= 1.5 * plotting.COLUMN_WIDTH else 1
    chars = TITLE_CHARS if cols < 3 else TITLE_CHARS * 2 // 3  # a title's line, as narrow as its panel
    rows = math.ceil(len(shown) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(width, PANEL_HEIGHT * rows + 0.4), squeeze=False,
                             layout="constrained")
    for ax in axes.flat[len(shown):]:
        fig.delaxes(ax)
    for n, (ax, (_, s)) in enumerate(zip(axes.flat, shown)):
        for j in range(1, s.times.shape[1]):
            d, lo, hi = quantile_bands(s.times, j)
            line, = ax.plot(QUANTILES * 100, d, marker=".", lw=0.8, label=mpl_text(s.classes[j]))
            ax.fill_between(QUANTILES * 100, lo, hi, color=line.get_color(), alpha=0.2, lw=0)
        ax.axhline(0, color="0.5", lw=0.5)
        ax.set_xticks(PERCENTILE_TICKS)
        title = "\n".join([f"{s.implementation} {s.version}", *textwrap.wrap(s.operation, chars)])
        ax.set_title(mpl_text(title), fontsize=plotting.SMALL_PT)
        ax.set_ylabel(mpl_text(f"minus {s.classes[0]} (ns)"), fontsize=plotting.SMALL_PT)
        if n + cols >= len(shown):  # the lowest panel of its column
            ax.set_xlabel("percentile")
        ax.legend(fontsize=plotting.SMALL_PT, title=s.verdict, title_fontsize=plotting.SMALL_PT,
                  loc="upper center", bbox_to_anchor=(0.5, -0.18 if n + cols < len(shown) else -0.32),
                  ncol=2, frameon=False)
    return fig
