"""Notebook 03: how much heap and stack one signature operation needs, beside the Gravity-SPHINCS study.

Tables, figures and generated text from a :func:`pqlab.memory.driver.measure_memory` run (the
method is described there) and a timing run; the study's published figures come from
``data/reference/03_memory_gravity_sphincs.csv``.
"""
from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .. import flags, plotting
from ..formatting import fmt_bytes, fmt_span, slug
from ..memory.driver import (
    HEAP_MARKER_BYTES,
    SOURCE_MASSIF,
    SOURCE_MASSIF_FIRST_CALL,
    SOURCE_MAXRSS,
    SOURCE_TRACEMALLOC,
    STACK_MARKER_DEPTH,
)
from ..memory.worker import SIGNATURE_OPERATIONS

if TYPE_CHECKING:
    import pandas as pd

_KEYS = ["algorithm", "backend", "family", "nist_level", "operation", "message_bytes"]
_OPERATION_ORDER = {op: i for i, op in enumerate(SIGNATURE_OPERATIONS)}
_MEMORY_COLUMNS = {  # memory_source -> {schema column: table column}
    SOURCE_MASSIF: {"peak_heap_bytes": "heap_bytes", "peak_stack_bytes": "stack_bytes",
                    "peak_heap_extra_bytes": "heap_extra_bytes", "peak_heap_raw_bytes": "heap_raw_bytes",
                    "peak_stack_raw_bytes": "stack_raw_bytes", "peak_heap_baseline_bytes": "heap_baseline_bytes",
                    "peak_stack_baseline_bytes": "stack_baseline_bytes", "massif_variant": "massif_variant"},
    SOURCE_MASSIF_FIRST_CALL: {"peak_heap_bytes": "heap_first_call_bytes"},
    SOURCE_TRACEMALLOC: {"peak_heap_bytes": "python_heap_bytes"},
    SOURCE_MAXRSS: {"peak_heap_bytes": "max_rss_delta_bytes", "max_rss_raw_bytes": "max_rss_bytes"},
}
#: flags every row of a source carries (they describe the method, not the row): left out of the tables
_ROUTINE_FLAGS = ("python-level-allocations-only", "coarse-rss", "first-call-in-process",
                  "stack-measured-at-other-message-sizes")


def _order(df, algorithms: Sequence[str] | None = None):
    order = {a: i for i, a in enumerate(dict.fromkeys(algorithms if algorithms is not None else df["algorithm"]))}
    return (df.assign(_a=df["algorithm"].map(order), _o=df["operation"].map(_OPERATION_ORDER).fillna(9),
                      _m=df["message_bytes"].fillna(-1))
            .sort_values(["_a", "_o", "_m"]).drop(columns=["_a", "_o", "_m"]).reset_index(drop=True))


def _run_algorithms(run) -> list[str] | None:
    names = getattr(run, "meta", {}).get("params", {}).get("algorithms")
    return [n.split("@")[0] for n in names] if names else None


def memory_table(run) -> pd.DataFrame:
    """One row per algorithm, backend, operation and message size (keygen: none): what the operation
    adds to the heap and the stack (massif, warm), the heap of the first call in a process, Python-level
    allocations (tracemalloc), the max-RSS difference, the raw peaks and levels, verified and flags."""
    import pandas as pd

    m = run.measurements if hasattr(run, "measurements") else run
    table = None
    for source, columns in _MEMORY_COLUMNS.items():
        part = m[m["memory_source"] == source]
        if part.empty:
            continue
        cols = {c: t for c, t in columns.items() if c in part}
        part = part[_KEYS + list(cols) + ["verified", "flags"]].rename(columns=cols)
        part = part.rename(columns={"verified": f"verified_{source}", "flags": f"flags_{source}"})
        part["message_bytes"] = part["message_bytes"].fillna(-1)
        table = part if table is None else table.merge(part, on=_KEYS, how="outer")
    if table is None:
        return pd.DataFrame(columns=_KEYS)
    table["message_bytes"] = table["message_bytes"].where(table["message_bytes"] >= 0).astype("Int64")
    verified = [c for c in table if c.startswith("verified_")]
    table["verified"] = table[verified].fillna(True).astype(bool).all(axis=1)  # every source that ran
    flag_cols = [c for c in table if c.startswith("flags_")]
    table["flags"] = table[flag_cols].apply(
        lambda r: flags.join(f"{c}:{d}" if d else c for v in r for c, d in flags.parse(v) if c not in _ROUTINE_FLAGS),
        axis=1)
    table = table.drop(columns=verified + flag_cols)
    for col in table:
        if col.endswith("_bytes") and col != "message_bytes":
            table[col] = pd.to_numeric(table[col], errors="coerce").round().astype("Int64")
    if {"heap_bytes", "stack_bytes"} <= set(table):
        table["heap_plus_stack_bytes"] = table["heap_bytes"] + table["stack_bytes"]
    return _order(table, _run_algorithms(run))


def size_table(run, message_bytes: Sequence[int], deterministic: bool = False) -> pd.DataFrame:
    """Key, signature and signed-message sizes per algorithm and message size.

    The signed message is what NIST's and SUPERCOP's ``crypto_sign`` returns: the signature attached
    to the message, so its size is message + signature.  `deterministic`: one row per algorithm with
    the declared maximum signature (Falcon's and DER-encoded ECDSA signatures vary in length) and
    without encodings whose length varies from key to key (RSA's PKCS#8 secret key), for checking."""
    import pandas as pd

    s = run.sizes if hasattr(run, "sizes") else run
    rows = []
    for _, r in s.iterrows():
        if deterministic and r["family"] == "RSA":
            continue
        sig = int(r["signature_max_bytes"] if deterministic else r["signature_bytes"])
        row = {"algorithm": r["algorithm"], "backend": r["backend"], "public_key_bytes": int(r["public_key_bytes"]),
               "secret_key_bytes": int(r["secret_key_bytes"]), "signature_bytes": sig}
        if not deterministic:
            row["signature_max_bytes"] = int(r["signature_max_bytes"])
        for n in message_bytes:
            row[f"signed_message_{n}_bytes"] = n + sig
        rows.append(row)
    return pd.DataFrame(rows)


def time_table(run) -> pd.DataFrame:
    """Median time per operation (µs) with quartiles and the precision reached, from a :func:`pqlab.bench` run."""
    m = run.measurements if hasattr(run, "measurements") else run
    m = m[m["operation"].isin(SIGNATURE_OPERATIONS)].copy()
    out = m[["algorithm", "backend", "operation", "message_bytes", "samples", "verified"]].copy()
    for col in ("median", "q1", "q3"):
        out[f"time_us_{col}"] = m[f"time_ns_{col}"] / 1e3
    out["rel_ci"] = m["time_ns_rel_ci"]  # precision reached: 95 % CI half-width / median
    out["message_bytes"] = out["message_bytes"].astype("Int64")
    return _order(out, _run_algorithms(run))


def footprint_table(memory: pd.DataFrame, times: pd.DataFrame | None = None) -> pd.DataFrame:
    """The reader's table: time and memory per algorithm, operation and message size."""
    cols = [c for c in ("algorithm", "backend", "family", "operation", "message_bytes", "heap_bytes", "stack_bytes",
                        "heap_plus_stack_bytes", "heap_first_call_bytes", "python_heap_bytes", "max_rss_delta_bytes",
                        "verified") if c in memory]
    out = memory[cols].copy()
    if times is not None and not times.empty:
        t = times[["algorithm", "backend", "operation", "message_bytes", "time_us_median"]]
        out = out.merge(t, on=["algorithm", "backend", "operation", "message_bytes"], how="left")
        out.insert(5, "time_us", out.pop("time_us_median").round(2))
    return out


def _panels(memory: pd.DataFrame) -> list[tuple[str, str]]:
    """(column, axis label) of what was measured: native heap and stack, else Python-level allocations."""
    native = [(c, f"{w} added (bytes, log)") for c, w in (("heap_bytes", "heap"), ("stack_bytes", "stack"))
              if c in memory and memory[c].notna().any()]
    return native or [("python_heap_bytes", "Python-level allocations\n(tracemalloc; bytes, log)")]


@plotting.styled
def plot_peaks(memory: pd.DataFrame, message_bytes: int | None = None, width: float = plotting.FULL_WIDTH):
    """Heap and stack each operation adds, per algorithm, at one message size (log axes); without valgrind,
    the Python-level allocations (tracemalloc) alone.  At full width the panels stand one above the other
    with the algorithms along x; in a column, side by side with the algorithms down the side."""
    import matplotlib.pyplot as plt

    from .. import plotting

    size = message_bytes if message_bytes is not None else memory["message_bytes"].dropna().min()
    df = memory[memory["message_bytes"].isna() | (memory["message_bytes"] == size)].copy()
    df["label"] = df["algorithm"] + df["backend"].map(lambda b: "" if b in ("liboqs", "cryptography") else f" ({b})")
    ops = [op for op in SIGNATURE_OPERATIONS if op in set(df["operation"])]
    colors = plotting.color_map(ops)
    panels = _panels(df)
    narrow = width < 4.5
    if narrow:
        height = 1.2 + df["label"].nunique() * (0.07 + 0.07 * len(ops))
        fig, axes = plt.subplots(1, len(panels), figsize=(width, height), sharey=True, squeeze=False)
        axes = axes[0, :]
    else:
        height = 1.3 + 1.9 * len(panels) + 0.035 * df["label"].str.len().max()
        fig, axes = plt.subplots(len(panels), 1, figsize=(width, height), sharex=True, squeeze=False)
        axes = axes[:, 0]
    for ax, (col, label) in zip(axes, panels):
        part = df.dropna(subset=[col])
        part = part.assign(**{col: part[col].astype(float).clip(lower=1)})  # 0 B drawn at 1 B (log axis)
        plotting.grouped_bars(part, category="label", group="operation", value=col, colors=colors, ax=ax,
                              ylabel=label.replace(" (", "\n(") if narrow else label, horizontal=narrow)
        if ax.get_legend() is not None:
            ax.get_legend().remove()
    plotting.figure_legend(fig, axes[0].get_legend_handles_labels(), max_cols=len(ops))
    source = "valgrind massif" if panels[0][0] != "python_heap_bytes" else "tracemalloc: valgrind was not available"
    fig.suptitle(f"Memory one operation adds ({source}; sign and verify of {size}-byte messages)")
    if narrow:
        plotting.grow_to_fit_labels(axes[0])
    else:
        plotting.fit_tick_labels(axes[-1])
    return fig


@plotting.styled
def plot_message_sizes(memory: pd.DataFrame, width: float = plotting.FULL_WIDTH):
    """What a longer message adds, per algorithm: heap and stack of signing and verifying beyond their
    values at the smallest message, coloured by binding, with "one copy of the message" for reference.
    With a single message size, the values themselves (log axes)."""
    import numpy as np
    import pandas as pd
    from matplotlib.lines import Line2D

    from .. import plotting

    df = memory.dropna(subset=["message_bytes"])
    df = df[df["operation"].isin(["sign", "verify"])]
    sizes = sorted(df["message_bytes"].unique())
    first = sizes[0]
    rows = []
    for op in ("sign", "verify"):
        for col, label in _panels(df):
            part = df[df["operation"] == op].dropna(subset=[col])
            what = label.split(" added")[0].split("\n")[0]
            base = part[part["message_bytes"] == first].set_index(["algorithm", "backend"])[col].astype(float)
            delta = part[col].astype(float) - [base.get((a, b), np.nan) for a, b in zip(part["algorithm"],
                                                                                      part["backend"])]
            rows.append(pd.DataFrame({"algorithm": part["algorithm"], "backend": part["backend"],
                                      "family": part["family"], "message_bytes": part["message_bytes"].astype(float),
                                      "bytes": part[col].astype(float).clip(lower=1), "delta": delta,
                                      "panel": f"{op}: {what}"}))
    long = pd.concat(rows, ignore_index=True)
    if len(sizes) < 2:
        return plotting.panel_lines(long, x="message_bytes", y="bytes", hue="algorithm", panel="panel",
                                    colors=plotting.shaded_family_colors(long), xlabel="message (bytes, log)",
                                    ylabel="added (bytes, log)", height=2.6, legend_cols=4, width=width,
                                    title="Memory added at the one message size measured")
    backends = list(dict.fromkeys(long["backend"]))
    by_backend = plotting.color_map(backends)
    colors = {a: by_backend[b] for a, b in zip(long["algorithm"], long["backend"])}
    fig = plotting.panel_lines(long.dropna(subset=["delta"]), x="message_bytes", y="delta", hue="algorithm",
                               panel="panel", colors=colors, logy=False, xlabel="message (bytes, log)",
                               ylabel=f"added beyond a {first}-byte message (bytes)", height=2.9, width=width,
                               title="What a longer message costs in memory, per algorithm, coloured by binding")
    xs = np.geomspace(first, sizes[-1], 50)
    for ax in fig.axes:
        if "heap" in ax.get_title():
            ax.plot(xs, xs - first, ls=(0, (1, 1.5)), lw=1.0, color="0.25", zorder=0)
    for legend in list(fig.legends):
        legend.remove()
    handles = [Line2D([], [], color=by_backend[b], lw=1.2, marker="o", ms=2.5) for b in backends]
    handles.append(Line2D([], [], color="0.25", ls=(0, (1, 1.5)), lw=1.0))
    labels = [*backends, "one copy of the message"]
    fig.legend(handles, labels, loc="outside lower center", ncols=plotting.legend_columns(labels, width, len(labels)))
    return fig


@plotting.styled
def plot_gravity(comparison: pd.DataFrame, width: float = plotting.FULL_WIDTH):
    """The study's Gravity-SPHINCS heap beside the heap and stack of the "s" sets (log axis), with the
    study's figure drawn across for reference."""
    from .. import plotting

    bars = gravity_bars(comparison)
    if bars.empty:
        return None
    fig = plotting.grouped_bars(bars, category="label", group="quantity", value="bytes", ylabel="bytes (log)",
                                height=3.0, width=width, title="Gravity-SPHINCS (Small) as published, beside the SPHINCS+ and "
                                                  "SLH-DSA \"s\" sets measured here")
    ax = fig.axes[0]
    study = comparison[comparison["source"].str.startswith("study")]["sign_heap_bytes"].dropna()
    if len(study):
        value = float(study.iloc[0])
        if ax.get_xscale() == "log":  # horizontal bars (a narrow figure): the value runs along x
            ax.axvline(value, ls=(0, (4, 2)), lw=0.8, color="0.3", zorder=0)
            ax.annotate(f"study's peak heap, {int(value):,} B", (value, 1.0), xycoords=("data", "axes fraction"),
                        xytext=(3, -2), textcoords="offset points", ha="left", va="top", fontsize=6.5, color="0.3")
        else:
            ax.axhline(value, ls=(0, (4, 2)), lw=0.8, color="0.3", zorder=0)
            ax.annotate(f"study's peak heap, {int(value):,} B", (1.0, value), xycoords=("axes fraction", "data"),
                        xytext=(-2, 3), textcoords="offset points", ha="right", fontsize=6.5, color="0.3")
    return fig


def describe_method(first_call: bool = True) -> str:
    """The method in a paragraph, its constants read from this module."""
    return (f"Each operation runs in a worker process of its own, which loads keys, message and signature from "
            f"files and writes its output to a file that the notebook's process checks. valgrind's massif measures "
            f"the heap (`--stacks=no --time-unit=B`) and the stack (`--heap=no --stacks=yes`) in two runs, both "
            f"with `--peak-inaccuracy=0`. A {HEAP_MARKER_BYTES >> 20} MiB heap block that is never touched and "
            f"{STACK_MARKER_DEPTH} nested calls through C open a window around the operation, so that the peaks of "
            f"the run fall inside it and not in the interpreter's start-up. What the operation *adds* is the peak "
            f"minus the level just before it: for the heap read in the same run (massif must take a snapshot when "
            f"the marker's allocation advances its byte clock), for the stack the peak of a baseline worker that "
            f"calls nothing in the window (one per backend and operation). The worker calls the operation once "
            f"before the measured call, and Python's garbage collector is run before the window and paused inside "
            f"it. " + ("The *first call* in a process is measured too (heap only), as are " if first_call else
                       "Also measured: ") +
            "Python-level allocations (tracemalloc, without valgrind) and the workers' maximum resident set size "
            "(coarse). Massif's heap "
            "is what `malloc` hands out: CPython serves its small objects from arenas it maps itself, which "
            "massif does not count as heap and tracemalloc does, so the two differ.")


# ----- the study: Gravity-SPHINCS -----
REFERENCE_TABLE = "03_memory_gravity_sphincs"


def load_gravity() -> dict:
    """The study's published figures (sphincs-bench block), with units made explicit; None = not published."""
    from ..reference import load_reference

    ref = load_reference(REFERENCE_TABLE)
    bench = ref[ref["source_block"].str.startswith("sphincs-bench")]

    def value(metric: str, operation: str | None = None):
        sel = bench[(bench["metric"] == metric) & ((bench["operation"] == operation) if operation else
                                                   bench["operation"].isna())]
        v = sel["value"].dropna()
        return float(v.iloc[0]) if len(v) else None

    out = {"scheme": bench["scheme"].iloc[0], "backend": bench["backend"].iloc[0],
           "machine": bench["machine"].iloc[0], "public_key_bytes": value("public_key_size"),
           "secret_key_bytes": value("secret_key_size"), "signature_bytes": value("signature_size"),
           "signed_message_bytes": value("signed_message_size")}
    for op in SIGNATURE_OPERATIONS:
        out[f"{op}_ms"] = value("time", op)
    for op in ("sign", "verify"):
        out[f"{op}_heap_bytes"] = value("peak_heap", op)
    out["anomalies"] = ref.attrs["source"].get("anomalies", [])
    out["placeholders"] = int(ref["value"].isna().sum())
    out["rows"] = len(ref)
    return out


def _small_sets(names) -> list[str]:
    return [n for n in names if re.search(r"^(SPHINCS\+|SLH-DSA)-.*\d{3}s(-simple)?$", n)]


def compare_gravity(memory: pd.DataFrame, times: pd.DataFrame | None, sizes: pd.DataFrame,
                    message_bytes: int | None = None) -> pd.DataFrame:
    """The study's Gravity-SPHINCS (Small) row beside every SPHINCS+/SLH-DSA "s" set measured here."""
    import pandas as pd

    g = load_gravity()
    rows = [{"source": "study (published)", "algorithm": g["scheme"], "implementation": g["backend"],
             "public_key_bytes": g["public_key_bytes"], "secret_key_bytes": g["secret_key_bytes"],
             "signature_bytes": g["signature_bytes"], "keygen_ms": g["keygen_ms"], "sign_ms": g["sign_ms"],
             "verify_ms": g["verify_ms"], "sign_heap_bytes": g["sign_heap_bytes"],
             "verify_heap_bytes": g["verify_heap_bytes"], "sign_stack_bytes": None, "verify_stack_bytes": None}]
    size = message_bytes if message_bytes is not None else memory["message_bytes"].dropna().min()

    def pick(df, algorithm, backend, op, col):
        if df is None or df.empty or col not in df:
            return None
        sel = df[(df["algorithm"] == algorithm) & (df["backend"] == backend) & (df["operation"] == op)]
        if op != "keygen":
            sel = sel[sel["message_bytes"] == size]
        v = sel[col].dropna()
        return float(v.iloc[0]) if len(v) else None

    for _, s in sizes.iterrows():
        if s["algorithm"] not in _small_sets([s["algorithm"]]):
            continue
        a, b = s["algorithm"], s["backend"]
        row = {"source": "measured here", "algorithm": a, "implementation": b,
               "public_key_bytes": s["public_key_bytes"], "secret_key_bytes": s["secret_key_bytes"],
               "signature_bytes": s["signature_bytes"]}
        for op in SIGNATURE_OPERATIONS:
            t = pick(times, a, b, op, "time_us_median")
            row[f"{op}_ms"] = None if t is None else t / 1e3
        for op in ("sign", "verify"):
            row[f"{op}_heap_bytes"] = pick(memory, a, b, op, "heap_bytes")
            row[f"{op}_stack_bytes"] = pick(memory, a, b, op, "stack_bytes")
        rows.append(row)
    out = pd.DataFrame(rows)
    for col in out:
        if col.endswith("_bytes"):
            out[col] = pd.to_numeric(out[col], errors="coerce").round().astype("Int64")
        elif col.endswith("_ms"):
            out[col] = pd.to_numeric(out[col], errors="coerce").round(3)
    return out


def gravity_bars(comparison: pd.DataFrame) -> pd.DataFrame:
    """Long table for a bar chart: heap (and stack) during signing and verifying, study beside ours."""
    import pandas as pd

    rows = []
    for _, r in comparison.iterrows():
        label = r["algorithm"] + (", study" if r["source"].startswith("study") else
                                  ("" if r["implementation"] == "liboqs" else f" ({r['implementation']})"))
        for op in ("sign", "verify"):
            for what in ("heap", "stack"):
                v = r.get(f"{op}_{what}_bytes")
                if v is not None and not pd.isna(v):
                    rows.append({"label": label, "quantity": f"{op}: {what}", "bytes": max(float(v), 1.0)})
    return pd.DataFrame(rows, columns=["label", "quantity", "bytes"])


# ----- generated text -----
def _get(table, algorithm: str, operation: str, col: str, message_bytes=None):
    sel = table[(table["algorithm"] == algorithm) & (table["operation"] == operation)]
    if message_bytes is not None and operation != "keygen":
        sel = sel[sel["message_bytes"] == message_bytes]
    elif operation != "keygen":
        sel = sel[sel["message_bytes"] == sel["message_bytes"].min()]
    if col not in sel:
        return None
    v = sel[col].dropna()
    return v.iloc[0] if len(v) else None


def describe_valgrind(status: dict, run=None) -> str:
    """Which memory sources this run had, in a sentence or three."""
    if not status.get("available"):
        return (f"**valgrind is not available here** ({status.get('reason', 'not found')}), so native heap and "
                "stack could not be measured. Shown instead: Python-level allocations during each operation "
                "(tracemalloc, which does not see what C libraries allocate) and the difference of the worker "
                "processes' maximum resident set size (page-granular, coarse). `make setup` installs valgrind "
                "where apt-get can.")
    text = (f"{status['version']} (`{status['path']}`) ran every worker under massif. ")
    if run is not None:
        if flags.has(run.measurements["flags"], "valgrind-used-generic-build").any():
            text += ("valgrind could not run liboqs's CPU-optimised build, so the portable (generic) build was "
                     "measured for memory where needed (flagged `valgrind-used-generic-build`). ")
        else:
            text += ("It ran liboqs's default (CPU-optimised, run-time dispatched) build; under valgrind's "
                     "synthetic CPU, code that dispatches at run time takes its AVX2 paths. ")
        meta = run.meta
        params = meta.get("params", {})
        text += (f"{meta.get('worker_runs', '?')} worker processes took {meta.get('wall_s', float('nan')):.0f} s "
                 f"({params.get('jobs', '?')} at a time).")
        stack_sizes = params.get("stack_message_bytes")
        if stack_sizes is not None and sorted(stack_sizes) != sorted(params.get("message_bytes", [])):
            text += (f" The stack was measured at {' and '.join(f'{n}-byte' for n in stack_sizes)} messages only (it does "
                     "not depend on the message, as the findings below show); the heap at every size.")
    return text


def describe_findings(memory: pd.DataFrame, sizes: pd.DataFrame | None = None) -> str:
    """What the measurements say, generated from them."""
    if memory.empty or "stack_bytes" not in memory or memory["stack_bytes"].dropna().empty:
        py = memory.dropna(subset=["python_heap_bytes"]) if "python_heap_bytes" in memory else memory.iloc[:0]
        if py.empty:
            return "No memory figure was measured."
        top = py.loc[py["python_heap_bytes"].astype(float).idxmax()]
        return (f"Without valgrind only Python-level allocations were seen: the largest, "
                f"{fmt_bytes(top['python_heap_bytes'])}, by {top['algorithm']} {top['operation']}.")
    m = memory.dropna(subset=["stack_bytes", "heap_bytes"])
    lines = []
    top = m.loc[m["stack_bytes"].astype(float).idxmax()]
    low = m.loc[m["stack_bytes"].astype(float).idxmin()]
    lines.append(f"The deepest stack: {top['algorithm']} {top['operation']}, {fmt_bytes(top['stack_bytes'])}; the "
                 f"shallowest: {low['algorithm']} {low['operation']}, {fmt_bytes(low['stack_bytes'])}.")
    if sizes is not None and not sizes.empty:
        first = m["message_bytes"].min()
        sig = m[(m["operation"] == "sign") & (m["message_bytes"] == first)].merge(sizes[["algorithm", "backend", "signature_bytes"]],
                                                on=["algorithm", "backend"])
        pq = sig[~sig["family"].isin(["RSA", "elliptic-curve"])]
        if not pq.empty:
            extra = pq["heap_bytes"].astype(float) - 2 * pq["signature_bytes"].astype(float)
            per = "; ".join(f"{backend}: {fmt_span(extra[pq['backend'] == backend])}"
                            for backend in dict.fromkeys(pq["backend"]))
            lines.append(f"Post-quantum signing ({first}-byte messages) adds two signature-sized buffers to the heap "
                         "(the binding's output buffer and the returned bytes) and a fixed amount per binding on top ("
                         + per + "): the C "
                         "code (liboqs, PQClean) allocates nothing itself and keeps its working state on the stack.")
        cl = sig[sig["family"].isin(["RSA", "elliptic-curve"])]
        if not cl.empty and "heap_first_call_bytes" in cl:
            first = cl.dropna(subset=["heap_first_call_bytes"])
            if not first.empty:
                lines.append("OpenSSL's first signature in a process allocates far more than later ones ("
                             + ", ".join(f"{r['algorithm']} {fmt_bytes(r['heap_first_call_bytes'])} against "
                                         f"{fmt_bytes(r['heap_bytes'])}" for _, r in first.iterrows())
                             + "): OpenSSL 3 fetches and caches its provider's methods on first use.")
    sizes_seen = sorted(m["message_bytes"].dropna().unique())
    if len(sizes_seen) > 1:
        lo, hi = sizes_seen[0], sizes_seen[-1]
        per = m[m["operation"].isin(["sign", "verify"])].pivot_table(
            index=["algorithm", "backend", "operation"], columns="message_bytes", values=["heap_bytes", "stack_bytes"])
        dheap = (per[("heap_bytes", hi)] - per[("heap_bytes", lo)]) / (hi - lo)
        dstack = (per[("stack_bytes", hi)] - per[("stack_bytes", lo)]).abs()
        lines.append(f"From {lo} to {hi}-byte messages the heap grows by {dheap.min():.2f} to {dheap.max():.2f} "
                     f"bytes per message byte (copies of the message), and the stack changes by at most "
                     f"{fmt_bytes(dstack.max())}: every scheme hashes the message instead of holding it.")
    return " ".join(lines)


def describe_gravity(comparison: pd.DataFrame) -> str:
    """The study's Gravity-SPHINCS figures beside the SPHINCS+/SLH-DSA "s" sets: where they agree, and why not."""
    g = load_gravity()
    ours = comparison[comparison["source"] == "measured here"]
    text = [f"**Gravity-SPHINCS has no implementation in any registry we reach** (PyPI and npm have no such "
            f"package, crates.io's `gravity` crate is unrelated, Debian has none; the study built gravity-rs from "
            f"its source repository), so its published figures stay the reference row. Of the study's "
            f"{g['rows']} published values {g['placeholders']} are placeholders (signature and signed-message "
            "sizes, every Divan figure); its machine attribution (an arm64 Apple M1 Pro, which the crate's own "
            "README says it does not support) is doubtful."]
    if ours.empty:
        return " ".join(text + ["No SPHINCS+ or SLH-DSA \"s\" set was measured in this run (the full run "
                                "measures them)."])
    same_keys = ours[(ours["public_key_bytes"] == g["public_key_bytes"]) &
                     (ours["secret_key_bytes"] == g["secret_key_bytes"])]
    if not same_keys.empty:
        text.append(f"Its keys ({int(g['public_key_bytes'])}-byte public, {int(g['secret_key_bytes'])}-byte secret) "
                    f"are exactly those of {', '.join(same_keys['algorithm'].unique())}.")
    heap = ours.dropna(subset=["sign_heap_bytes"])
    if not heap.empty and g["sign_heap_bytes"]:
        lo, hi = heap["sign_heap_bytes"].min(), heap["sign_heap_bytes"].max()
        stack = ours["sign_stack_bytes"].dropna()
        ratio = fmt_span([lo / g["sign_heap_bytes"], hi / g["sign_heap_bytes"]], fmt=lambda v: f"{v:.2f}")
        who = "Our \"s\" sets add" if len(heap) > 1 else f"{heap['algorithm'].iloc[0]} adds"
        text.append(f"The study's peak heap, {fmt_bytes(g['sign_heap_bytes'])} for signing and again for verifying, is a "
                    f"heap-only figure (its stack was not measured). {who} {fmt_span([lo, hi])} of heap when signing "
                    f"({ratio} times the study's), the output buffers of the Python bindings,"
                    + (f" and {fmt_span(stack)} of stack, where these C implementations keep their working state."
                       if not stack.empty else "."))
    for sig in sorted(set(comparison["signature_bytes"].dropna().astype(int))):
        rest = int(g["sign_heap_bytes"] or 0) - 2 * sig
        if 0 <= rest <= 256:
            names = comparison[comparison["signature_bytes"] == sig]["algorithm"].tolist()
            text.append(f"A coincidence worth checking against the study's source: {fmt_bytes(g['sign_heap_bytes'])} is "
                        f"exactly two {sig:,}-byte signatures ({', '.join(names)}) plus {rest} B.")
    t = ours.dropna(subset=["sign_ms"])
    if not t.empty and g["sign_ms"]:
        ms = fmt_span(t["sign_ms"], fmt=lambda v: f"{v:.1f} ms")
        ratio = fmt_span(t["sign_ms"] / g["sign_ms"], fmt=lambda v: f"{v:.2f}")
        text.append(f"Signing took the study {g['sign_ms']:.1f} ms; the \"s\" sets here take {ms} (another scheme, "
                    f"implementation, CPU and language: the ratio, {ratio}, is context, not a verdict).")
    return " ".join(text)


def closing_note(memory: pd.DataFrame, status: dict,
                 focus: Sequence[str] = ("SPHINCS+-SHAKE-128f-simple", "ML-DSA-44")) -> str:
    """The figures the issue asks for (signing with `focus`), raw and baseline-subtracted, and the method."""
    parts = []
    for name in focus:
        if name not in set(memory["algorithm"]):
            parts.append(f"{name} was not measured in this run.")
            continue
        h, s = _get(memory, name, "sign", "heap_bytes"), _get(memory, name, "sign", "stack_bytes")
        size = memory[(memory["algorithm"] == name) & (memory["operation"] == "sign")]["message_bytes"].min()
        if h is None and s is None:
            parts.append(f"{name} signing: no valgrind figure (Python-level allocations "
                         f"{fmt_bytes(_get(memory, name, 'sign', 'python_heap_bytes'))}).")
            continue
        parts.append(f"**{name} signing** ({size}-byte message) adds **{fmt_bytes(h)} of heap and {fmt_bytes(s)} of stack**; "
                     f"the worker's raw massif peaks, interpreter and markers included, were "
                     f"{fmt_bytes(_get(memory, name, 'sign', 'heap_raw_bytes'))} of heap and "
                     f"{fmt_bytes(_get(memory, name, 'sign', 'stack_raw_bytes'))} of stack (levels without the operation "
                     f"{fmt_bytes(_get(memory, name, 'sign', 'heap_baseline_bytes'))} and "
                     f"{fmt_bytes(_get(memory, name, 'sign', 'stack_baseline_bytes'))})"
                     + ("." if (first := _get(memory, name, "sign", "heap_first_call_bytes")) is None
                        else f"; its first call in a process adds {fmt_bytes(first)} of heap."))
    method = ("Method: one operation per valgrind massif process after one warm-up call, heap and stack in separate "
              "runs, peaks forced into the operation by a heap and a stack marker, and the level before the "
              "operation subtracted (heap: read in the same run; stack: a worker calling nothing at the same place)."
              if status.get("available") else
              "valgrind was not available: only tracemalloc and max-RSS figures were measured.")
    return " ".join(parts + [method])


def footprint_by_operation(footprint: pd.DataFrame) -> dict:
    """The reader's table at the smallest message size, one frame per operation (keygen has no message): the
    paper's tables, short enough for a page each."""
    smallest = footprint["message_bytes"].dropna().min()
    at = footprint[footprint["message_bytes"].isna() | (footprint["message_bytes"] == smallest)]
    return {op: part.reset_index(drop=True) for op, part in at.groupby("operation", sort=False)}


def numbers(memory: pd.DataFrame, focus: Sequence[str] = ("SPHINCS+-SHAKE-128f-simple", "ML-DSA-44")) -> dict:
    """The closing note's figures (numbers.tex): heap and stack of signing, in bytes, for each `focus` algorithm,
    under keys like ``sphincsplus-shake-128f-simple_sign_heap_bytes``; missing (None) where not measured."""
    out = {}
    for name in focus:
        for col in ("heap_bytes", "stack_bytes"):
            v = _get(memory, name, "sign", col) if name in set(memory["algorithm"]) else None
            missing = v is None or (isinstance(v, float) and math.isnan(v))
            out[f"{slug(name, lower=True)}_sign_{col}"] = None if missing else int(v)
    return out
