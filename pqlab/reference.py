"""Published numbers from the five seed studies, transcribed into ``data/reference/``.

Each study table is one CSV (``<stem>.csv``); ``sources.yaml`` holds one provenance entry per
stem: seed file and hash, section, machine, method, units, transcription notes and anomalies.

    >>> df = load_reference("04_round2_signatures")
    >>> df.attrs["source"]["clock_hz"]
    1895000000
"""
from __future__ import annotations

import copy
from functools import cache

import numpy as np
import pandas as pd
import yaml

from .errors import UnknownName
from .paths import REFERENCE

SOURCES_FILE = REFERENCE / "sources.yaml"

__all__ = ["check_published_ratios", "describe_ratio_checks", "list_references", "load_reference",
           "published_ratios", "reference_source"]


@cache
def _sources() -> dict[str, dict]:
    with open(SOURCES_FILE, encoding="utf-8") as f:
        return yaml.safe_load(f)


def list_references() -> list[str]:
    """The stems of every reference CSV, sorted (e.g. ``"01_aes_rsa_sphincs"``)."""
    return sorted(p.stem for p in REFERENCE.glob("*.csv"))


def _check(name: str) -> None:
    names = list_references()
    if name not in names:
        raise UnknownName("reference table", name, names, f"available: {', '.join(names)}")


def reference_source(name: str) -> dict:
    """The provenance entry of ``name`` from ``sources.yaml`` (a copy)."""
    _check(name)
    return copy.deepcopy(_sources()[name])


def load_reference(name: str) -> pd.DataFrame:
    """The table ``name`` as published, with its provenance in ``df.attrs["source"]``."""
    _check(name)
    df = pd.read_csv(REFERENCE / f"{name}.csv", encoding="utf-8")
    df.attrs["source"] = reference_source(name)
    return df


# ----- within-machine ratios: ours beside the published ones (a reported check, never a failure) -----
RATIOS = "within_machine_ratios"


def published_ratios() -> pd.DataFrame:
    """The published within-machine ratios with the ratio and its band computed from the transcribed values:
    ``ratio = numerator_value / denominator_value``, band ``[ratio / band_factor, ratio * band_factor]``."""
    df = load_reference(RATIOS)
    df["ratio"] = df["numerator_value"] / df["denominator_value"]
    df["band_low"] = df["ratio"] / df["band_factor"]
    df["band_high"] = df["ratio"] * df["band_factor"]
    return df


def _samples(runs, algorithm: str, backend: str, operation: str, message_bytes) -> tuple[object, object]:
    """Raw per-call times of one operation across `runs` (labelled with their rounds where they have them), at the
    measured message length closest to `message_bytes` (any length when it is missing); returns (values, length
    used)."""
    from .results import round_records, with_rounds

    frames = [r.samples for r in runs if r is not None and not r.samples.empty]
    if not frames:
        return np.array([]), None
    s = pd.concat(frames, ignore_index=True)
    s = s[(s["algorithm"] == algorithm) & (s["backend"] == backend) & (s["operation"] == operation)]
    if s.empty:
        return np.array([]), None
    sizes = s["message_bytes"].dropna().unique()
    used = None
    if len(sizes):
        target = 0 if pd.isna(message_bytes) else float(message_bytes)
        used = int(min(sizes, key=lambda n: (abs(float(n) - target), float(n))))
        s = s[s["message_bytes"] == used]
    return with_rounds(s.dropna(subset=["time_ns"]), "time_ns", round_records(*runs)), used


def check_published_ratios(runs, published: pd.DataFrame | None = None) -> pd.DataFrame:
    """Our within-machine ratios beside the published ones, for every published ratio whose two operations
    the `runs` measured through the same backend.

    Ours is the same statistic as the published one (the mean where a mean was published) with its
    interval over rounds (:func:`pqlab.stats.ratio_ci`); the published side has none.  ``status`` is "within band" or
    "outside band" (our estimate against ``[band_low, band_high]``), with "(its interval reaches the band)"
    when only the estimate is outside.  An empty frame when nothing matches."""
    from .stats import ratio_ci

    runs = [runs] if hasattr(runs, "samples") else [r for r in runs if r is not None]
    published = published_ratios() if published is None else published
    rows = []
    for p in published.itertuples():
        num, n_len = _samples(runs, p.algorithm, p.backend, p.numerator, p.message_bytes)
        den, d_len = _samples(runs, p.algorithm, p.backend, p.denominator, p.message_bytes)
        if num.size == 0 or den.size == 0:
            continue
        ours, low, high = ratio_ci(num, den, p.statistic)
        inside = p.band_low <= ours <= p.band_high
        reaches = not inside and np.isfinite(low) and low <= p.band_high and high >= p.band_low
        rows.append({"algorithm": p.algorithm, "backend": p.backend, "ratio": f"{p.numerator} / {p.denominator}",
                     "statistic": p.statistic, "ours": ours, "ours_ci_low": low, "ours_ci_high": high,
                     "ours_samples": f"{num.size} / {den.size}", "ours_message_bytes": n_len if n_len == d_len else None,
                     "published": p.ratio, "band_low": p.band_low, "band_high": p.band_high,
                     "published_message_bytes": p.message_bytes, "source": p.source,
                     "status": ("within band" if inside else "outside band"
                                + (" (its interval reaches the band)" if reaches else ""))})
    return pd.DataFrame(rows)


def describe_ratio_checks(checks: pd.DataFrame) -> str:
    """Markdown: each of our ratios beside the published one, its band, and a flag when ours is outside,
    with where the published numbers come from (generated from the data and sources.yaml)."""
    from .formatting import fmt_factor_ci, fmt_percent
    from .stats import CONFIDENCE

    if checks.empty:
        return "No operation measured here has a published within-machine ratio to check against."
    src = reference_source(RATIOS)
    lines = []
    for r in checks.itertuples():
        flag = "" if r.status == "within band" else "⚠ "
        size = "" if pd.isna(r.ours_message_bytes) else f", {int(r.ours_message_bytes):,}-byte message"
        lines.append(f"- {flag}**{r.algorithm} {r.ratio}** ({r.backend}{size}, ratio of {r.statistic}s): ours "
                     f"{fmt_factor_ci(r.ours, r.ours_ci_low, r.ours_ci_high)}, published {r.published:.3g} "
                     f"(band {r.band_low:.3g} to {r.band_high:.3g}): **{r.status}**.")
    outside = int((checks["status"] != "within band").sum())
    head = (f"**Sanity check against published within-machine ratios** ({len(checks) - outside} of {len(checks)} "
            f"within their band). Published: {', '.join(src['sources'][s].split(' (')[0] for s in checks['source'].unique())}; "
            f"{src['machine'].split(':')[0]}; {src['method'].split(':')[0]}. The published ratios carry no interval "
            f"(one mean per operation); ours carry a {fmt_percent(CONFIDENCE, 0)} interval over rounds (none where a "
            "side was measured without rounds). A ratio outside its band is reported, not failed: it points at noise on this machine, a different build, or the cost of calling from Python.")
    return head + "\n\n" + "\n".join(lines)
