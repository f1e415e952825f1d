"""What the atlas compares: the ratios of notebook 07, each a post-quantum algorithm's use over a baseline's
measured in the same run on the same platform, the kinds of baseline, and the words that name each ratio's
statistic and interval.

:func:`comparisons` names the ratios: each post-quantum signature and KEM of the notebook's parameters against
a classical baseline (Ed25519, X25519) and against a post-quantum anchor (ML-DSA-44, ML-KEM-768), the only
kind of baseline the published platforms have.  Every ratio names its statistic (:data:`STATISTICS`: medians
against the classical baseline, means against the post-quantum anchor, as pqm4 publishes means; a published
statistic as its source states it, "unstated" where it states none) and carries an interval only where rounds
give one.
"""
from __future__ import annotations

import pandas as pd

from pqlab.backends.algorithms import get
from pqlab.measure.stats import CONFIDENCE

TOPIC = "07_atlas"
#: one use of an algorithm: the operations whose costs are summed
USES = {"sig": (("keygen",), ("sign",), ("verify",)), "kem": (("keygen",), ("encaps", "decaps"))}
KIND_LABEL = {"sig": "signature", "kem": "KEM"}
CLASSICAL, ANCHOR = "classical", "post-quantum anchor"
#: the statistic of a measured ratio, per kind of baseline (a sample is the mean of its loop's calls; each
#: round gives the statistic of its samples, the ratio is the median over rounds).  Against the classical
#: baseline, which only measured platforms have: medians, robust to the interference of a shared machine.
#: Against the post-quantum anchor: means, the statistic pqm4 publishes, so that a measured platform and pqm4
#: compare like with like (a signature's rejection loop makes its mean differ from its median).
STATISTICS = {CLASSICAL: "median", ANCHOR: "mean"}
#: the statistic of a published value whose source does not name one (study 004's times)
UNSTATED = "unstated"
#: how every interval of the atlas is described
INTERVAL = f"{CONFIDENCE:.0%} interval over rounds"
#: what a ratio without interval says about it
NO_INTERVAL = "none (published single numbers)"
NO_ROUNDS = "none (a side has too few rounds)"
MEASURED, PUBLISHED = "measured", "published"
PI4 = "Raspberry Pi 4 (study 004, published)"
PQM4_CLEAN = "Cortex-M4 (pqm4 clean C, published)"
PQM4_FASTEST = "Cortex-M4 (pqm4 fastest code, published)"


def _checked(name: str, kind: str, role: str):

    algo = get(name)  # an unknown name: UnknownName with close matches
    if algo.kind != kind:
        other = "kems" if algo.kind == "kem" else "signatures"
        raise ValueError(f"{role} {name!r} is a {KIND_LABEL.get(algo.kind, algo.kind)}, not a "
                         f"{KIND_LABEL[kind]}: move it to the {other} parameter")
    return algo


def comparisons(signatures, kems, baselines: dict, anchors: dict) -> pd.DataFrame:
    """Every ratio of the atlas: algorithm x use x baseline (classical, then post-quantum anchor), with the
    backends that measure them here.  Names are checked first (one-line errors with close matches)."""
    rows = []
    for kind, names in (("sig", signatures), ("kem", kems)):
        algos = [_checked(n, kind, "algorithm") for n in names]
        for role, base_name in ((CLASSICAL, baselines.get(kind)), (ANCHOR, anchors.get(kind))):
            if not base_name:
                continue
            base = _checked(base_name, kind, f"{role} baseline")
            for algo in algos:
                if algo.name == base.name:
                    continue
                for ops in USES[kind]:
                    use = "+".join(ops)
                    rows.append({"kind": kind, "algorithm": algo.name, "backend": algo.backend, "use": use,
                                 "operations": ops, "baseline": base.name, "baseline_backend": base.backend,
                                 "baseline_kind": role,
                                 "comparison": f"{algo.name} {use} / {base.name} {use}"})
    if not rows:
        raise ValueError("nothing to compare: give at least one signature or KEM and a baseline for its kind")
    return pd.DataFrame(rows)


def algorithms_to_measure(comps: pd.DataFrame) -> list[str]:
    return list(dict.fromkeys([*comps["algorithm"], *comps["baseline"]]))


def _comp_fields(comp) -> dict:
    return {"kind": comp.kind, "comparison": comp.comparison, "algorithm": comp.algorithm, "use": comp.use,
            "baseline": comp.baseline, "baseline_kind": comp.baseline_kind}


def statistic_words(stat: str) -> str:
    """How a cell's statistic is named: "ratio of medians", "ratio of means", "statistic unstated"; a factor
    between platforms ("unstated / mean"): each side's."""
    if " / " in stat:
        mine, ref = stat.split(" / ", 1)
        return f"{statistic_words(mine)} over the reference's {statistic_words(ref)}"
    return "statistic unstated" if stat == UNSTATED else f"ratio of {stat}s"


def statistic_text(ratios: pd.DataFrame, value: str = "ratio") -> str:
    """The statistics of one platform's ratios (those with a `value`), each with the kinds of baseline it
    covers."""
    r = ratios[ratios[value].notna()]
    pairs = list(dict.fromkeys(zip(r["statistic"], r["baseline_kind"])))
    stats = list(dict.fromkeys(s for s, _ in pairs))
    if len(stats) <= 1:
        return statistic_words(stats[0]) if stats else "no ratio"
    return "; ".join(f"{statistic_words(s)} ({', '.join(k for t, k in pairs if t == s)})" for s in stats)
