"""The figure of notebook 08: each algorithm's implementations side by side, every operation's median with its
interval (:func:`plot_dots`), and what it shows and leaves out, with why (:func:`figure_contents`,
:func:`describe_figure`: the caption's words, from the data).
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from pqlab.checks import conformance
from pqlab.core.escaping import markdown
from pqlab.core.schema import KIND_OPERATIONS, convert_unit
from pqlab.publish import plotting
from pqlab.studies.implementations.measuring import Checks
from pqlab.studies.implementations.pairing import TIME_INTERVAL
from pqlab.studies.implementations.tables import not_measured

#: How far apart (in rows) the operations of one implementation are drawn, so that no marker hides another.
DODGE = 0.22
#: What the notebook's parameters say of an item they leave out.
LEFT_OUT_BY_PARAMETERS = "left out by the notebook's parameters"


def operation_styles(operations: Sequence[str]) -> dict[str, tuple[str, str]]:
    """A (colour, marker shape) per operation, each operation its own colour and its own shape."""
    return {op: (plotting.PALETTE[i % len(plotting.PALETTE)], plotting.MARKERS[i % len(plotting.MARKERS)])
            for i, op in enumerate(dict.fromkeys(operations))}


def whisker_text() -> str:
    """What the whiskers of :func:`plot_dots` are."""
    return f"whiskers: {TIME_INTERVAL}"


@plotting.styled
def plot_dots(table: pd.DataFrame, algorithms: Sequence[str], width: float = plotting.COLUMN_WIDTH):
    """One panel per algorithm, one line per implementation (fastest first, by the algorithm's first
    operation): each operation's median as a marker of its own shape and colour, offset from the line by
    operation so that no marker hides another, with its interval over rounds as whiskers (log time)."""
    import matplotlib.pyplot as plt

    algorithms = [a for a in algorithms if (table["algorithm"] == a).any()]
    operations = list(dict.fromkeys(op for ops in KIND_OPERATIONS.values() for op in ops
                                    if (table["operation"] == op).any()))
    styles = operation_styles(operations)
    heights = [0.2 * table.loc[table["algorithm"] == a, "implementation"].nunique() + 0.45
               for a in algorithms]
    fig, axes = plt.subplots(len(algorithms), 1, figsize=(width, sum(heights) + 0.6), squeeze=False,
                             gridspec_kw={"height_ratios": heights})
    for ax, alg in zip(axes[:, 0], algorithms):
        mine = table[table["algorithm"] == alg]
        first = mine[mine["operation"] == mine["operation"].iloc[0]].sort_values("median_ns")
        names = list(dict.fromkeys(list(first["implementation"]) + sorted(mine["implementation"].unique())))
        bad = (set(mine.loc[mine["status"] == conformance.NONCONFORMING, "implementation"])
               if "status" in mine else set())
        present = [op for op in operations if (mine["operation"] == op).any()]
        offsets = dict(zip(present, np.linspace(-DODGE, DODGE, len(present)) if len(present) > 1 else [0.0]))
        for _, r in mine.iterrows():
            x = convert_unit(r["median_ns"], "ns", "µs")
            y = names.index(r["implementation"]) + offsets[r["operation"]]
            err = None
            if math.isfinite(r["ci_low_ns"]) and math.isfinite(r["ci_high_ns"]):
                err = [[x - convert_unit(r["ci_low_ns"], "ns", "µs")],
                       [convert_unit(r["ci_high_ns"], "ns", "µs") - x]]
            color, marker = styles[r["operation"]]
            ax.errorbar([x], [y], xerr=err, fmt=marker, ms=3, lw=0.8, color=color, label=r["operation"])
        ax.set_yticks(range(len(names)), [f"{n} (non-conforming)" if n in bad else n for n in names])
        ax.set_ylim(len(names) - 0.5, -0.5)
        ax.set_xscale("log")
        ax.set_title(alg)
    axes[-1, 0].set_xlabel(f"time per call (µs, log scale); {whisker_text()}")
    handles = [plt.Line2D([], [], marker=styles[op][1], ls="", color=styles[op][0]) for op in operations]
    plotting.figure_legend(fig, (handles, operations), max_cols=3)
    return fig


def figure_contents(table: pd.DataFrame, runs: Sequence, checks: Checks | None,
                    focus: Sequence[str]) -> tuple[dict[str, list[str]], dict[str, str]]:
    """What :func:`plot_dots` shows for the `focus` algorithms, ``{algorithm: [implementation, ...]}``, and
    what it leaves out, ``{"implementation/algorithm" (or "X program"): why}``: each implementation the
    cross-checks, the runs' plans or the notebook's parameters name for a focus algorithm that has no row in
    `table`, with the reason the checks or the runs give."""
    shown = {alg: sorted(table.loc[table["algorithm"] == alg, "implementation"].unique())
             for alg in focus if not table.empty and (table["algorithm"] == alg).any()}
    reasons = {r["what"]: r["why"] for _, r in not_measured(runs, checks or _no_checks()).iterrows()}
    candidates: dict[str, str] = {}
    for run in runs:
        for item in (run.meta.get("params") or {}).get("leave_out", []) or []:
            alg, _, impl = str(item).partition("@")
            candidates[f"{impl}/{alg}"] = LEFT_OUT_BY_PARAMETERS
    if checks is not None and not checks.cross.empty:
        for _, r in checks.cross.iterrows():
            for impl in (r["owner"], r["peer"]):
                candidates.setdefault(f"{impl}/{r['algorithm']}", "")
    for what in reasons:
        candidates.setdefault(what, "")
    left_out = {}
    for what, why in candidates.items():
        impl, _, alg = what.partition("/")
        if what.endswith(" program"):
            left_out[what] = reasons[what]
        elif alg in focus and impl not in shown.get(alg, []):
            left_out[what] = reasons.get(what) or why or "no verified measurement in the runs"
    return shown, left_out


def _no_checks() -> Checks:
    return Checks(pd.DataFrame(columns=["algorithm", "owner", "peer", "check", "passed", "detail"]),
                  pd.DataFrame())


def describe_figure(table: pd.DataFrame, runs: Sequence, checks: Checks | None, focus: Sequence[str]) -> str:
    """The figure's caption in words, from the data: who is shown per algorithm, who is left out and why, how
    the operations are told apart and what the whiskers are."""
    shown, left_out = figure_contents(table, runs, checks, focus)
    text = ("The figure shows " + "; ".join(f"{alg}: {len(names)} implementations ({', '.join(names)})"
                                            for alg, names in shown.items()) + "." if shown
            else "The figure shows no implementation.")
    text += (" Not shown: " + "; ".join(f"{what} ({why})" for what, why in left_out.items()) + "."
             if left_out else " Every implementation of these algorithms that was checked or planned is "
             "shown.")
    text += (" Each operation has its own marker shape and colour, offset vertically so that none hides "
             f"another; {whisker_text()}.")
    return markdown(text)
