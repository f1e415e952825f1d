"""Notebook 04's figures (house style of :mod:`pqlab.publish.plotting`): median cycles against a size in
bytes, one colour per family, and the ratio bars (optimised / portable, pqlab / native) per algorithm and
operation."""
from __future__ import annotations

import numpy as np
import pandas as pd

from pqlab.core.vocabulary import CLASSICAL_PUBLIC_KEY, FAMILIES, POST_QUANTUM
from pqlab.measure.cycles import per_call
from pqlab.publish import plotting
from pqlab.studies.signature_cycles.measure import FAMILY_ORDER, SIGNATURE_OPERATIONS


def missing_figure(counter: dict, needs_cycles: bool) -> str:
    """Why a figure of this notebook has no data here (the note shown instead of it)."""
    if needs_cycles and counter["basis"] == "time_ns":
        return f"it shows cycles, and no cycle counter ran here ({counter.get('reason')})"
    return "no row of this run has a value for it (see the table above)"


#: Groups of points labelled once in crowded figures: (name prefix, label); the longest prefix wins.
SCHEMES = (("ML-DSA", "ML-DSA, Dilithium"), ("Dilithium", "ML-DSA, Dilithium"), ("Falcon", "Falcon"),
           ("SPHINCS+-SHA2", "SPHINCS+ SHA2"), ("SPHINCS+-SHAKE", "SPHINCS+ SHAKE"), ("MAYO", "MAYO"),
           ("OV-", "UOV"), ("cross", "CROSS"), ("RSA", "RSA"), ("ECDSA", "elliptic curves"),
           ("Ed", "elliptic curves"))


def scheme_of(name: str) -> str:
    """The label of the group of `name` in crowded figures (the name itself when in no group)."""
    hits = [(p, label) for p, label in SCHEMES if name.startswith(p)]
    return max(hits, key=lambda h: len(h[0]))[1] if hits else name


def _labels(df: pd.DataFrame, label_all: bool) -> pd.Series:
    """Point labels: every point's name, or (crowded) one label per group of schemes, on the point
    nearest the group's centre (in log-log coordinates); a second implementation is its own group."""
    if label_all:
        return df["name"]
    second = df["name"].str.endswith("(OpenSSL)")
    group = df["algorithm"].map(scheme_of).where(~second, df["algorithm"].map(scheme_of).str.split(",").str[0]
                                                 + " (OpenSSL)")
    x = np.log10(df["_x"].astype(float))
    y = np.log10(df["cycles_median"].astype(float))
    labels = pd.Series("", index=df.index)
    for g, idx in df.groupby(group).groups.items():
        d = (x[idx] - x[idx].mean()) ** 2 + (y[idx] - y[idx].mean()) ** 2
        labels[d.idxmin()] = g
    return labels


def _scatter_frame(rows: pd.DataFrame, operation: str, size_col: str) -> pd.DataFrame:
    keep = rows[(rows["operation"] == operation) & rows["build"].isin(["liboqs optimised", "OpenSSL"])].copy()
    keep = keep.dropna(subset=["cycles_median", size_col])
    second = (keep["build"] == "OpenSSL") & ~keep["family"].isin(CLASSICAL_PUBLIC_KEY)
    keep["name"] = keep["algorithm"].where(~second, keep["algorithm"] + " (OpenSSL)")
    keep = keep.sort_values(["table_family", size_col]).reset_index(drop=True)
    keep["point_label"] = _labels(keep.assign(_x=keep[size_col]), len(keep) <= 20)
    return keep


#: Registry families in the order of the figures' legends.
FIGURE_FAMILIES = tuple(f for f in FAMILIES if f in POST_QUANTUM + CLASSICAL_PUBLIC_KEY)


@plotting.styled
def plot_cycles_vs_bytes(rows: pd.DataFrame, operation: str, size_col: str, xlabel: str, unit: str,
                         width: float = plotting.FULL_WIDTH):
    """Median cycles (`unit`: which counter) of `operation` against a size in bytes (log-log), one colour per
    family, quartile whiskers; None without cycles."""
    df = _scatter_frame(rows, operation, size_col)
    if df.empty:
        return None
    rank = {f: i for i, f in enumerate(FIGURE_FAMILIES)}
    df = df.assign(_r=df["family"].map(rank).fillna(len(rank))).sort_values(["_r", size_col], kind="stable")
    fig = plotting.scatter(df, x=size_col, y="cycles_median", label=None, hue="family", annotate=False,
                           xlabel=xlabel, ylabel=f"{operation}: median {unit}", width=width,
                           height=3.2 if width >= 4.5 else 3.4)
    ax = fig.axes[0]
    q = df.dropna(subset=["cycles_q1", "cycles_q3"])
    ax.vlines(q[size_col], q["cycles_q1"], q["cycles_q3"], color="0.4", lw=0.6, zorder=0,
              label=WHISKERS_QUARTILES)
    if width >= 4.5:
        ax.legend(markerscale=1.2, loc="center left", bbox_to_anchor=(1.01, 0.5))
    else:
        ax.get_legend().remove()
        fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center", ncols=3, markerscale=1.2)
    named = df[df["point_label"] != ""]
    plotting.place_labels(ax, named[size_col].to_numpy(float), named["cycles_median"].to_numpy(float),
                  named["point_label"].tolist())
    return fig


def _category_order(df: pd.DataFrame, by: str, families: bool) -> pd.DataFrame:
    """Rows ordered by the sign operation's `by` (within the table families when `families`)."""
    rank = {f: i for i, f in enumerate(FAMILY_ORDER)}
    sign = df[df["operation"] == "sign"].assign(_f=lambda d: d["table_family"].map(rank) if families else 0)
    order = sign.sort_values(["_f", by])["algorithm"].tolist()
    order += sorted(set(df["algorithm"]) - set(order))
    op = {o: i for i, o in enumerate(SIGNATURE_OPERATIONS)}
    return (df.assign(_a=df["algorithm"].map({a: i for i, a in enumerate(order)}), _o=df["operation"].map(op))
            .sort_values(["_a", "_o"]).drop(columns=["_a", "_o"]))


#: what the whiskers of the cycles figures are (their legend says it)
WHISKERS_QUARTILES = plotting.interval_note("cycles_q1", "cycles_q3")


#: the narrowest figure (inches) whose title has room for its statistic on the first line
WIDE = 4.5


def builds_shown(table: pd.DataFrame, sides: tuple[str, str]) -> str:
    """"A / B": the implementations (liboqs release and build) on each side of a ratio table, from its
    ``<side>_implementation`` columns, said once where both share it ("liboqs 0.13.0: generic build / default
    build"; "" where the table has none)."""
    names = []
    for side in sides:
        col = table.get(f"{side}_implementation")
        if col is None or col.dropna().empty:
            return ""
        names.append(", ".join(dict.fromkeys(str(x) for x in col.dropna())))
    if names[0] == names[1]:
        return f"{names[0]} on both sides"
    parts = [n.split(" (", 1) for n in names]
    if all(len(p) == 2 for p in parts) and parts[0][0] == parts[1][0]:
        return f"{parts[0][0]}: {parts[0][1].rstrip(')')} / {parts[1][1].rstrip(')')}"
    return " / ".join(names)


@plotting.styled
def plot_speedups(speedups: pd.DataFrame, counter: dict, width: float = plotting.FULL_WIDTH):
    """Portable / optimised mean per call (log axis, 1 = no gain): one point per algorithm and operation with
    its interval as whiskers (points, not bars: a log axis has no zero for a bar to start from), by family
    and signing speed-up; the title names both builds, from the table, and the value axis what the whiskers
    are (:func:`pqlab.publish.plotting.grouped_bars`).  None without one."""
    builds = builds_shown(speedups, ("portable", "optimised"))
    title = ("Portable / optimised build" + (": " if width >= WIDE else "\n") + per_call(counter)
             + (f"\n{builds}" if builds else ""))
    return _operation_bars(_category_order(speedups, "speedup", families=True), "speedup", True,
                           "portable / optimised (log)", title, width)


@plotting.styled
def plot_python_over_native(fidelity: pd.DataFrame, counter: dict, width: float = plotting.FULL_WIDTH):
    """pqlab / native mean per call (1 = the harness adds nothing), by native signing time; None without
    one."""
    builds = builds_shown(fidelity, ("pqlab", "native"))
    title = ("pqlab / native runner" + (": " if width >= WIDE else "\n") + per_call(counter)
             + (f"\n{builds}" if builds else ""))
    return _operation_bars(_category_order(fidelity, "native_time_ns_mean", families=False), "ratio", False,
                           "pqlab / native", title, width)


def _operation_bars(df: pd.DataFrame, value: str, log: bool, ylabel: str, title: str, width: float):
    """One bar per algorithm and operation on a linear axis (a bar starts at zero), one point with whiskers on
    a log axis, laid out for the width; None when nothing has a value."""
    if df[value].isna().all():
        return None
    low, high = (f"{value}_ci_low", f"{value}_ci_high") if f"{value}_ci_low" in df else (None, None)
    layout = {"horizontal": True, "dots": True} if log else {}
    fig = plotting.grouped_bars(df, category="algorithm", group="operation", value=value, low=low, high=high,
                                log=log, ylabel=ylabel, colors=plotting.color_map(SIGNATURE_OPERATIONS),
                                width=width, height=2.8, title=title, **layout)

    plotting.finish_ratio_bars(fig, log=log)
    if width < WIDE:  # the category labels push the axes right: the title ends where the axes end
        fig.axes[0].title.set(horizontalalignment="right", x=1.0)
    return fig
