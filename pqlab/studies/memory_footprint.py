"""Notebook 03: how much heap and stack one signature operation needs, beside the Gravity-SPHINCS study.

Tables, figures and generated text from a :func:`pqlab.runners.memory.driver.measure_memory` run (the
method is described there) and a timing run; the study's published figures come from
``data/reference/03_memory_gravity_sphincs.csv``.
"""
from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pqlab.core import flags, formatting
from pqlab.core.formatting import (
    Column,
    fmt_bytes,
    fmt_factor_ci,
    fmt_span,
    fmt_time_ms,
    is_missing,
    markdown,
    slug,
)
from pqlab.measure.stats import ratio_to_published
from pqlab.publish import plotting
from pqlab.runners.memory.driver import (
    HEAP_MARKER_BYTES,
    SOURCE_MASSIF,
    SOURCE_MASSIF_FIRST_CALL,
    SOURCE_MAXRSS,
    SOURCE_TRACEMALLOC,
    STACK_MARKER_DEPTH,
)
from pqlab.runners.memory.worker import SIGNATURE_OPERATIONS
from pqlab.studies import conforming

if TYPE_CHECKING:
    import pandas as pd

TOPIC = "03_memory_footprint"
_KEYS = ["algorithm", "backend", "family", "nist_level", "operation", "message_bytes"]
_OPERATION_ORDER = {op: i for i, op in enumerate(SIGNATURE_OPERATIONS)}
_MEMORY_COLUMNS = {  # memory_source -> {schema column: table column}
    SOURCE_MASSIF: {"peak_heap_bytes": "heap_bytes", "peak_stack_bytes": "stack_bytes",
                    "peak_heap_native_bytes": "heap_native_bytes", "peak_heap_native_callers": "heap_native_callers",
                    "peak_heap_extra_bytes": "heap_extra_bytes", "peak_heap_raw_bytes": "heap_raw_bytes",
                    "peak_stack_raw_bytes": "stack_raw_bytes", "peak_heap_baseline_bytes": "heap_baseline_bytes",
                    "peak_stack_baseline_bytes": "stack_baseline_bytes", "massif_build": "massif_build"},
    SOURCE_MASSIF_FIRST_CALL: {"peak_heap_bytes": "heap_first_call_bytes",
                               "peak_heap_native_bytes": "heap_first_call_native_bytes",
                               "peak_heap_native_callers": "heap_first_call_native_callers"},
    SOURCE_TRACEMALLOC: {"peak_heap_bytes": "python_heap_bytes"},
    SOURCE_MAXRSS: {"peak_heap_bytes": "max_rss_delta_bytes", "max_rss_raw_bytes": "max_rss_bytes"},
}
#: flags every row of a source carries (they describe the method, not the row): left out of the tables
_ROUTINE_FLAGS = ("python-level-allocations-only", "coarse-rss", "first-call-in-process",
                  "stack-measured-at-other-message-sizes", "from-cache")


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
    cols = [c for c in ("algorithm", "backend", "family", "operation", "message_bytes", "heap_bytes", "heap_native_bytes",
                        "stack_bytes", "heap_plus_stack_bytes", "heap_first_call_bytes", "python_heap_bytes",
                        "max_rss_delta_bytes", "verified") if c in memory]
    out = memory[cols].copy()
    if times is not None and not times.empty:
        t = times[["algorithm", "backend", "operation", "message_bytes", "time_us_median"]]
        out = out.merge(t, on=["algorithm", "backend", "operation", "message_bytes"], how="left")
        out.insert(5, "time_us", out.pop("time_us_median").round(2))
    return out


#: What each column of the reader's footprint table counts: column -> header (the caption and heap_note say more).
FOOTPRINT_LABELS = {"time_us": "Time, median", "heap_bytes": "Heap, all callers", "heap_native_bytes": "Heap by native code",
                    "stack_bytes": "Stack", "heap_plus_stack_bytes": "Heap (all) + stack",
                    "heap_first_call_bytes": "Heap, all callers, first call", "python_heap_bytes": "Python objects",
                    "max_rss_delta_bytes": "Max RSS rise"}


def footprint_columns(footprint: pd.DataFrame, shown: Sequence[str] | None = None) -> list:
    """The reader's columns of :func:`footprint_table` (those of `shown` present in it, default all), each header
    saying what it counts: the heap of every caller (the Python binding's objects and buffers included) apart from
    the part native code allocated, the stack, Python objects (tracemalloc), the max-RSS rise."""

    names = [c for c in (shown or footprint.columns) if c in footprint]
    return [Column(c, FOOTPRINT_LABELS[c], "time" if c == "time_us" else "size") if c in FOOTPRINT_LABELS else c
            for c in names]


def heap_note(footprint: pd.DataFrame) -> str:
    """Plain text (a table note, or Markdown): what the memory columns count, from how pqlab.runners.memory measures, and
    from the data how much of each operation's heap native code allocated."""
    if "heap_bytes" not in footprint or footprint["heap_bytes"].dropna().empty:
        return ("valgrind was not available: Python objects (tracemalloc, Python-level allocations only) and the "
                "maximum resident set size (whole pages of the whole process) are all that was measured.")
    said = {"heap_bytes": "Heap, all callers: every block allocated during the operation and live at its peak "
                          "(valgrind massif, the level before the operation subtracted), whoever asked for it: the "
                          "library, the binding's extension module and the interpreter (the binding's Python objects "
                          "and ctypes buffers, a returned signature included).",
            "heap_native_bytes": "Heap by native code: the part that code outside the Python interpreter allocated, "
                                 "by massif's allocation tree.",
            "stack_bytes": "Stack: the deepest stack during the operation, less that of a worker calling nothing.",
            "python_heap_bytes": "Python objects: tracemalloc, in a worker without valgrind.",
            "max_rss_delta_bytes": "Max RSS rise: whole pages of the whole process."}
    text = " ".join(t for c, t in said.items() if c in footprint)
    if "heap_native_bytes" not in footprint:
        return text
    both = footprint.dropna(subset=["heap_bytes", "heap_native_bytes"])
    both = both[both["heap_bytes"].astype(float) > 0]
    if both.empty:
        return text
    mostly = both[both["heap_native_bytes"].astype(float) < both["heap_bytes"].astype(float) / 2]
    none = mostly[mostly["heap_native_bytes"].astype(float) <= 0]
    text += (f" Native code allocated less than half of the heap in {len(mostly)} of {len(both)} rows"
             + (f" (nothing at all in {', '.join(dict.fromkeys(none['algorithm'] + ' ' + none['operation']))})" if len(none) else "")
             + (": there the heap is mostly the binding's and the interpreter's, not the library's." if len(mostly)
                else "."))
    return text


def footprint_caption(operation: str, footprint: pd.DataFrame | None = None) -> str:
    """The caption of one operation's exported footprint table (`footprint`: the table, to say what it holds)."""
    head = f"Time and memory one {operation} adds, at the smallest message size"
    if footprint is not None and ("heap_bytes" not in footprint or footprint["heap_bytes"].dropna().empty):
        return head + ": without valgrind, Python objects (tracemalloc) and the maximum resident set size only."
    return (head + ". The heap counts every caller, the Python binding's objects and buffers included; the part "
            "native code allocated is shown apart (the note under the table says more).")


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
    plotting.fit_panel_labels(axes, narrow)
    return fig


@plotting.styled
def plot_message_sizes(memory: pd.DataFrame, width: float = plotting.FULL_WIDTH):
    """What a longer message adds, per algorithm: heap and stack of signing and verifying beyond their
    values at the smallest message, coloured by binding, with "one copy of the message" for reference.
    With a single message size, the values themselves (log axes)."""
    import numpy as np
    import pandas as pd
    from matplotlib.lines import Line2D


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
    plotting.figure_legend(fig, (handles, labels), len(labels))
    return fig


@plotting.styled
def plot_gravity(comparison: pd.DataFrame, width: float = plotting.FULL_WIDTH):
    """The study's Gravity-SPHINCS heap beside the heap (all of it, and what code outside the interpreter
    allocated) and stack of the sets of its hash length (log axis), with the study's figure drawn across;
    None when no such set was measured."""

    bars = gravity_bars(comparison)
    if not (comparison["source"] == "measured here").any() or bars.empty:
        return None
    fig = plotting.grouped_bars(bars, category="label", group="quantity", value="bytes", ylabel="bytes (log)",
                                height=3.0, width=width, title="Gravity-SPHINCS (Small) as published, beside the "
                                                               "SPHINCS+ and SLH-DSA sets of its hash length measured here")
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
            f"the heap (`--stacks=no --time-unit=B`) and the stack (`--heap=no --stacks=yes`) in separate runs, both "
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
            "massif does not count as heap and tracemalloc does, so the two differ. Massif's allocation tree at the "
            "heap peak names the code that called the allocator for each block; each caller is looked up in the "
            "worker's memory map, so the heap an operation adds splits into what code outside the Python "
            "interpreter allocated (`heap_native_bytes`: the library, or the binding's extension module) and what "
            "the interpreter allocated (Python objects, ctypes buffers).")


# ----- the study: Gravity-SPHINCS -----
REFERENCE_TABLE = "03_memory_gravity_sphincs"
#: gravity-rs's constants (hash length, GravitySmall's parameters), read from the code the study names
PARAMETERS_TABLE = "03_study_gravity_params"


def published_table(reference: pd.DataFrame):
    """The study's published values (:data:`REFERENCE_TABLE`, rows with a value) as a reader sees them: each value
    exactly as published (its unit beside it differs per row, so no column unit rounds it)."""
    shown = reference[reference["value"].notna()]
    shown = shown.assign(value=shown["value"].map(lambda v: format(v, ".10g")))
    return formatting.table(shown, ["source_block", "metric", "operation", Column("value", kind="text"), "unit"])


def load_gravity() -> dict:
    """The study's published figures (sphincs-bench block), with units made explicit, and the hash length
    of gravity-rs (``hash_bytes``); None = not published."""
    from pqlab.core.references import load_reference

    ref = load_reference(REFERENCE_TABLE)
    bench = ref[ref["source_block"].str.startswith("sphincs-bench")]

    def value(metric: str, operation: str | None = None):
        sel = bench[(bench["metric"] == metric) & ((bench["operation"] == operation) if operation else
                                                   bench["operation"].isna())]
        v = sel["value"].dropna()
        return float(v.iloc[0]) if len(v) else None

    parameters = load_reference(PARAMETERS_TABLE)
    params = parameters.set_index("constant")["value"]
    repository = str(parameters.attrs["source"].get("sources", {}).get("gravity-rs", "")).split(" ")[0]
    out = {"repository": repository or None, "scheme": bench["scheme"].iloc[0], "backend": bench["backend"].iloc[0],
           "machine": bench["machine"].iloc[0], "public_key_bytes": value("public_key_size"),
           "secret_key_bytes": value("secret_key_size"), "signature_bytes": value("signature_size"),
           "signed_message_bytes": value("signed_message_size"), "hash_bytes": int(params["HASH_SIZE"])}
    for op in SIGNATURE_OPERATIONS:
        out[f"{op}_ms"] = value("time", op)
    for op in ("sign", "verify"):
        out[f"{op}_heap_bytes"] = value("peak_heap", op)
    out["anomalies"] = ref.attrs["source"].get("anomalies", [])
    out["placeholders"] = int(ref["value"].isna().sum())
    out["rows"] = len(ref)
    return out


def hash_bytes(algorithm: str, public_key_bytes) -> int | None:
    """The hash length n of a SPHINCS+ or SLH-DSA set: its public key is PK.seed and PK.root, n bytes
    each (FIPS 205), so n is half the measured public key; None for other schemes."""
    if not re.match(r"^(SPHINCS\+|SLH-DSA)-", str(algorithm)) or is_missing(public_key_bytes):
        return None
    return int(public_key_bytes) // 2


def compare_gravity(memory: pd.DataFrame, time_run, sizes: pd.DataFrame,
                    message_bytes: int | None = None) -> pd.DataFrame:
    """The study's Gravity-SPHINCS (Small) row beside every SPHINCS+/SLH-DSA set measured here whose
    hashes have the same length.  Times: the median of our samples; ``study_over_ours_<op>`` is the
    study's time over ours with an interval from our samples only (the study published one call)."""
    import numpy as np
    import pandas as pd


    g = load_gravity()
    rows = [{"source": "study (published)", "algorithm": g["scheme"], "implementation": g["backend"],
             "hash_bytes": g["hash_bytes"], "public_key_bytes": g["public_key_bytes"],
             "secret_key_bytes": g["secret_key_bytes"], "signature_bytes": g["signature_bytes"],
             **{f"{op}_ms": g[f"{op}_ms"] for op in SIGNATURE_OPERATIONS},
             "sign_heap_bytes": g["sign_heap_bytes"], "verify_heap_bytes": g["verify_heap_bytes"]}]
    sizes_seen = memory["message_bytes"].dropna() if "message_bytes" in memory else []
    size = message_bytes if message_bytes is not None else (sizes_seen.min() if len(sizes_seen) else None)
    for _, s in sizes.iterrows():
        if hash_bytes(s["algorithm"], s["public_key_bytes"]) != g["hash_bytes"]:
            continue
        a, b = s["algorithm"], s["backend"]
        row = {"source": "measured here", "algorithm": a, "implementation": b,
               "hash_bytes": hash_bytes(a, s["public_key_bytes"]), "public_key_bytes": s["public_key_bytes"],
               "secret_key_bytes": s["secret_key_bytes"], "signature_bytes": s["signature_bytes"]}
        for op in SIGNATURE_OPERATIONS:
            ns = (time_run.sample_values(a, op, backend=b, message_bytes=None if op == "keygen" else size)
                  if time_run is not None else np.array([]))
            row[f"{op}_ms"] = float(np.median(ns)) / 1e6 if len(ns) else None
            row[f"{op}_samples"] = len(ns)
            r, lo, hi = ratio_to_published(g[f"{op}_ms"], ns / 1e6)
            row.update({f"study_over_ours_{op}": r, f"study_over_ours_{op}_ci_low": lo,
                        f"study_over_ours_{op}_ci_high": hi})
        for op in ("sign", "verify"):
            for what, col in (("heap", "heap_bytes"), ("stack", "stack_bytes"), ("heap_native", "heap_native_bytes")):
                row[f"{op}_{what}_bytes"] = _get(memory, a, op, col, size, backend=b)
        rows.append(row)
    out = pd.DataFrame(rows)
    for col in out:
        if col.endswith("_bytes") or col.endswith("_samples"):
            out[col] = pd.to_numeric(out[col], errors="coerce").round().astype("Int64")
        elif col not in ("source", "algorithm", "implementation"):
            out[col] = pd.to_numeric(out[col], errors="coerce")
    return out


def gravity_bars(comparison: pd.DataFrame) -> pd.DataFrame:
    """Long table for a bar chart: heap (and stack) during signing and verifying, study beside ours."""
    import pandas as pd

    rows = []
    for _, r in comparison.iterrows():
        label = r["algorithm"] + (", study" if r["source"].startswith("study") else
                                  ("" if r["implementation"] == "liboqs" else f" ({r['implementation']})"))
        for op in ("sign", "verify"):
            for what in ("heap", "heap_native", "stack"):
                v = r.get(f"{op}_{what}_bytes")
                if v is not None and not pd.isna(v):
                    rows.append({"label": label, "quantity": f"{op}: {what.replace('_', ' ')}",
                                 "bytes": max(float(v), 1.0)})
    return pd.DataFrame(rows, columns=["label", "quantity", "bytes"])


# ----- generated text -----
def _get(table, algorithm: str, operation: str, col: str, message_bytes=None, backend: str | None = None):
    sel = table[(table["algorithm"] == algorithm) & (table["operation"] == operation)]
    if backend is not None:
        sel = sel[sel["backend"] == backend]
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
    text = f"{status['version']} (`{status['path']}`) ran every worker under massif. "
    if run is not None:
        if flags.has(run.measurements["flags"], "valgrind-used-generic-build").any():
            text += ("valgrind could not run liboqs's CPU-optimised build, so the portable (generic) build was "
                     "measured for memory where needed (flagged `valgrind-used-generic-build`). ")
        meta = run.meta
        params = meta.get("params", {})
        text += (f"{meta.get('worker_runs', '?')} worker processes took {meta.get('wall_s', float('nan')):.0f} s "
                 f"({params.get('jobs', '?')} at a time).")
        stack_sizes = params.get("stack_message_bytes")
        if stack_sizes is not None and sorted(stack_sizes) != sorted(params.get("message_bytes", [])):
            text += (f" The stack was measured at {' and '.join(f'{n}-byte' for n in stack_sizes)} messages only "
                     "(the findings below show whether it depends on the message); the heap at every size.")
    return text


def describe_time_sizes(time_run, message_bytes: Sequence[int]) -> str:
    """Which message sizes were timed, when not all of `message_bytes` (the memory run's): one sentence, or ""."""
    timed = sorted(time_run.meta.get("params", {}).get("message_bytes", []))
    untimed = sorted(n for n in message_bytes if n not in timed)
    if not untimed:
        return ""
    return (f"Times were taken at {' and '.join(f'{n}-byte' for n in timed)} messages only (`time_message_bytes`), "
            f"memory at every size: at {', '.join(str(n) for n in untimed)} bytes the tables' `time_us` is empty. "
            "How time grows with the message is notebook 02's subject.")


def describe_cache(run) -> str:
    """How many memory rows came from the cache, measured in which runs, and what their key covers."""
    info = run.meta.get("memory_cache")
    m = run.measurements
    if not info:
        return f"No cache was used: all {len(m)} memory rows were measured in this run."
    cached = flags.has(m["flags"], "from-cache") if len(m) else m["flags"].astype(bool)
    origins = sorted({run for c in m.loc[cached, "flags"]  # a row may combine worker runs of several runs
                      for run in flags.detail(c, "from-cache").rsplit("measured in run ", 1)[-1].split(", ")})
    where = f"`{info['root']}`"
    if info["fresh"]:
        head = (f"**Measured afresh** (`PQLAB_FRESH` set, as `make reproduce FRESH=1` does): none of the {len(m)} "
                f"memory rows came from the cache; {info['stored']} worker runs were stored in it ({where}).")
    elif not cached.any():
        head = (f"None of the {len(m)} memory rows came from the cache ({where}): nothing with their keys was "
                f"stored; {info['stored']} worker runs were stored now.")
    else:
        head = (f"**{int(cached.sum())} of the {len(m)} memory rows came from the cache** ({where}), measured in "
                f"run{'s' if len(origins) > 1 else ''} {', '.join(origins)}; {info['measured']} worker runs were "
                "measured now (their rows carry no `from-cache` flag).")
    files = info.get("files", {})
    objects = [f"{Path(p).name} `{d[:12]}`" for p, d in files.items() if ".so" in Path(p).name
               and not p.startswith((sys.base_prefix, "/lib", "/usr/lib"))]
    return (head + f" A row's key (the sha256 its `from-cache` flag starts with) covers the method version "
            f"({info['method_version']}), {info['valgrind'] or 'no valgrind'}, {', '.join(info['python'])}, the "
            f"algorithm, backend, liboqs build, operation, message size and kind of worker run, and the sha256 of "
            f"each of the {len(files)} files the workers load (among them these shared objects of the libraries: "
            f"{', '.join(objects) or 'none'}; every file is listed in the run's metadata). Times are never cached.")


def _stack_extremes(m: pd.DataFrame) -> str:
    top = m.loc[m["stack_bytes"].astype(float).idxmax()]
    low = m.loc[m["stack_bytes"].astype(float).idxmin()]
    return (f"The deepest stack: {top['algorithm']} {top['operation']}, {fmt_bytes(top['stack_bytes'])}; the "
            f"shallowest: {low['algorithm']} {low['operation']}, {fmt_bytes(low['stack_bytes'])}.")


def _caller_name(caller: str) -> str:
    """The function of a heap_native_callers entry ("object: function bytes"); valgrind's "???" (an object
    without symbols, such as a stripped wheel's extension module) becomes "unnamed code in <object>"."""
    obj, rest = caller.split(": ", 1)
    function = rest.rsplit(" ", 1)[0]
    return f"unnamed code in {obj}" if function == "???" else function


def _native_sentence(m: pd.DataFrame) -> str:
    """Who called the allocator for the heap each operation adds (massif's allocation tree), per backend and
    operation: in how many sets code outside the interpreter allocated none of it, and what the others allocated."""
    if "heap_native_bytes" not in m or m["heap_native_bytes"].isna().all():
        return ""
    parts = []
    rows = m.dropna(subset=["heap_native_bytes"])
    for (backend, op), part in rows.groupby(["backend", "operation"], sort=False):
        some = part[part["heap_native_bytes"].astype(float) > 0]
        if some.empty:
            parts.append(f"{backend} {op}: none, in all {len(part)} sets")
            continue
        functions = sorted({_caller_name(c) for cell in some["heap_native_callers"].dropna()
                            for c in str(cell).split(", ") if ": " in c})
        head = f"{backend} {op}: none in {len(part) - len(some)} of {len(part)} sets, " if len(some) < len(part) else \
            f"{backend} {op}: "
        parts.append(head + f"{fmt_span(some['heap_native_bytes'])} in "
                     + (", ".join(some["algorithm"]) if len(some) <= 3 else f"{len(some)} sets")
                     + (f" ({', '.join(markdown(f) for f in functions[:4])}{', …' if len(functions) > 4 else ''})"
                        if functions else ""))
    return ("Massif's allocation tree names the code that asked for the heap each operation adds. Code outside "
            "the Python interpreter (the library, or the binding's extension module) allocated: " + "; ".join(parts)
            + ". The rest was allocated by the interpreter: Python objects and ctypes buffers.")


def _signature_fit_sentence(sign: pd.DataFrame, sizes: pd.DataFrame, tolerance: float = 0.05) -> str:
    """Per backend: whether the heap signing adds follows the signature length (a straight line through
    three or more sets, off by at most `tolerance` of the smallest heap)."""
    import numpy as np

    pq = sign[~sign["family"].isin(["RSA", "elliptic-curve"])].merge(
        sizes[["algorithm", "backend", "signature_bytes"]], on=["algorithm", "backend"])
    out = []
    for backend, part in pq.groupby("backend", sort=False):
        x, y = part["signature_bytes"].astype(float).to_numpy(), part["heap_bytes"].astype(float).to_numpy()
        if len(set(x)) < 3:
            continue
        k, c = np.polyfit(x, y, 1)
        worst = float(np.abs(y - (c + k * x)).max())
        if worst <= tolerance * y.min():
            copies = round(k)
            reading = (f", about {copies} copies of the signature" if copies and abs(k - copies) < tolerance else "")
            out.append(f"For the {len(part)} {backend} sets, the heap signing adds follows the signature length: "
                       f"{fmt_bytes(c)} plus {k:.2f} times the signature (off by at most {fmt_bytes(worst)}){reading}.")
        else:
            out.append(f"For the {len(part)} {backend} sets, the heap signing adds does not follow the signature "
                       f"length alone: a straight line misses by up to {fmt_bytes(worst)}.")
    return " ".join(out)


def _first_call_sentence(m: pd.DataFrame) -> str:
    """Where the first call in a process adds at least twice the heap of a later call, and who allocated it."""
    if "heap_first_call_bytes" not in m:
        return ""
    both = m.dropna(subset=["heap_first_call_bytes", "heap_bytes"])
    if both.empty:
        return ""
    more = both[both["heap_first_call_bytes"].astype(float) >= 2 * both["heap_bytes"].astype(float).clip(lower=1)]
    if more.empty:
        gap = (both["heap_first_call_bytes"].astype(float) - both["heap_bytes"].astype(float)).max()
        return (f"The first call in a process adds less than twice the heap of a later call everywhere (at most "
                f"{fmt_bytes(gap)} more).")
    listed = "; ".join(
        f"{r['algorithm']} {r['operation']}, {fmt_bytes(r['heap_first_call_bytes'])} against "
        f"{fmt_bytes(r['heap_bytes'])}" + (f" (allocated by {r['heap_first_call_native_callers']})"
                                           if isinstance(r.get("heap_first_call_native_callers"), str)
                                           and r["heap_first_call_native_callers"] else "")
        for _, r in more.iterrows())
    text = f"The first call in a process adds at least twice the heap of a later call for {listed}."
    if (more["backend"] == "cryptography").any():
        text += (" *Hypothesis, not measured here:* OpenSSL fetches its provider's implementation of an algorithm "
                 "on first use and caches it for later calls.")
    return text


def _message_sentence(m: pd.DataFrame) -> str:
    """What a longer message adds: heap per message byte, and whether the stack changes at all."""
    sizes_seen = sorted(m["message_bytes"].dropna().unique())
    if len(sizes_seen) < 2:
        return ""
    lo, hi = sizes_seen[0], sizes_seen[-1]
    ops = m[m["operation"].isin(["sign", "verify"])]
    heap = ops.pivot_table(index=["algorithm", "backend", "operation"], columns="message_bytes", values="heap_bytes")
    dheap = ((heap[hi] - heap[lo]) / (hi - lo)).dropna()
    stack = ops.pivot_table(index=["algorithm", "backend", "operation"], columns="message_bytes", values="stack_bytes")
    dstack = (stack[hi] - stack[lo]).abs().dropna() if {lo, hi} <= set(stack.columns) else stack.iloc[:0, 0]
    text = (f"From {lo} to {hi}-byte messages the heap grows by {dheap.min():.2f} to {dheap.max():.2f} bytes per "
            "message byte.")
    if dstack.empty:
        return text
    if dstack.max() < hi - lo:
        return text + (f" The stack changes by at most {fmt_bytes(dstack.max())}, less than the message grew, in "
                       f"all {len(dstack)} operations: none holds a copy of the message on its stack.")
    grows = ", ".join(f"{a} {o}" for (a, _, o) in dstack[dstack >= hi - lo].index)
    return text + f" The stack grows by at least the message's growth for {grows}."


def describe_findings(memory: pd.DataFrame, sizes: pd.DataFrame | None = None) -> str:
    """What the measurements say, generated from them; a mechanism only where massif's tree shows it."""
    if memory.empty or "stack_bytes" not in memory or memory["stack_bytes"].dropna().empty:
        py = memory.dropna(subset=["python_heap_bytes"]) if "python_heap_bytes" in memory else memory.iloc[:0]
        if py.empty:
            return "No memory figure was measured."
        top = py.loc[py["python_heap_bytes"].astype(float).idxmax()]
        return (f"Without valgrind only Python-level allocations were seen: the largest, "
                f"{fmt_bytes(top['python_heap_bytes'])}, by {top['algorithm']} {top['operation']}.")
    m = memory.dropna(subset=["stack_bytes", "heap_bytes"])
    sign = m[(m["operation"] == "sign") & (m["message_bytes"] == m["message_bytes"].min())]
    lines = [_stack_extremes(m), _native_sentence(m[m["message_bytes"].isna() | (m["message_bytes"] == m["message_bytes"].min())]),
             _signature_fit_sentence(sign, sizes) if sizes is not None and not sizes.empty else "",
             _first_call_sentence(memory.dropna(subset=["heap_bytes"])), _message_sentence(m)]
    return " ".join(line for line in lines if line)


def describe_gravity(comparison: pd.DataFrame, sizes: pd.DataFrame | None = None) -> str:
    """The study's Gravity-SPHINCS figures beside the SPHINCS+/SLH-DSA sets of the same hash length: what
    each side counts, where they agree, and why not."""

    g = load_gravity()
    ours = comparison[comparison["source"] == "measured here"]
    n = g["hash_bytes"]
    source = f" ({g['repository']})" if g.get("repository") else ""
    text = [f"**Gravity-SPHINCS is not measured here.** The study's crate uses gravity-rs{source}, which cargo built "
            "from source for it; this project does not fetch or build gravity-rs, so the study's published figures "
            "stay the reference row. Of the study's "
            f"{g['rows']} published values {g['placeholders']} are placeholders (signature and signed-message "
            "sizes, every Divan figure); its machine attribution (an arm64 Apple M1 Pro, which the crate's own "
            "README says it does not support) is doubtful.",
            f"gravity-rs hashes to {n} bytes (`HASH_SIZE` in its source), so its like-for-like neighbours are the "
            f"SPHINCS+ and SLH-DSA sets with {n}-byte hashes (a public key of two hashes, {2 * n} bytes; "
            f"Gravity-SPHINCS's is one hash, {fmt_bytes(g['public_key_bytes'])})."]
    if ours.empty:
        return " ".join(text + [f"No SPHINCS+ or SLH-DSA set with {n}-byte hashes was measured in this run."])
    text.append(f"Measured here with {n}-byte hashes: {', '.join(ours['algorithm'] + ' (' + ours['implementation'] + ')')}.")
    heap = ours.dropna(subset=["sign_heap_bytes"])
    if not heap.empty and g["sign_heap_bytes"]:
        native = heap["sign_heap_native_bytes"].dropna()
        text.append(f"The study's peak heap, {fmt_bytes(g['sign_heap_bytes'])} for signing and again for verifying, "
                    "is what its Rust allocator handed out during the call, the returned signature included; its "
                    f"stack was not measured. Here signing adds {fmt_span(heap['sign_heap_bytes'])} of heap, of "
                    f"which code outside the interpreter allocated {fmt_span(native)}"
                    f" (the rest are the binding's Python objects and buffers), and {fmt_span(ours['sign_stack_bytes'])}"
                    " of stack. The two heaps count different things, so no ratio is given.")
    if sizes is not None:
        for sig in sorted(set(sizes["signature_bytes"].dropna().astype(int))):
            rest = int(g["sign_heap_bytes"] or 0) - 2 * sig
            if 0 <= rest <= 256:
                names = sizes[sizes["signature_bytes"] == sig]["algorithm"].tolist()
                text.append(f"A coincidence worth checking against the study's source: "
                            f"{fmt_bytes(g['sign_heap_bytes'])} is exactly two {sig:,}-byte signatures "
                            f"({', '.join(names)}) plus {rest} B.")
    t = ours.dropna(subset=["sign_ms"])
    if not t.empty and g["sign_ms"]:
        ratios = "; ".join(f"{r['algorithm']} {fmt_time_ms(r['sign_ms'])}, study/ours "
                           + fmt_factor_ci(r["study_over_ours_sign"], r["study_over_ours_sign_ci_low"],
                                           r["study_over_ours_sign_ci_high"]) for _, r in t.iterrows())
        text.append(f"Signing took the study {fmt_time_ms(g['sign_ms'])} (one call, so no interval on its side); "
                    f"here (median): {ratios}. Another scheme, implementation, CPU and language: the ratio is "
                    "context, not a verdict.")
    return " ".join(text)


def describe_caveats(memory: pd.DataFrame, run, sizes: pd.DataFrame | None = None) -> str:
    """One sentence per caveat that applies to this run, as a Markdown list."""
    m = run.measurements
    items = []
    if "heap_bytes" in memory and memory["heap_bytes"].notna().any() and (memory["backend"] == "liboqs").any():
        items.append("valgrind runs the code on a CPU it emulates: liboqs picks its code paths at run time for "
                     "the features that CPU reports, which need not be this host's, and the figures belong to the "
                     "code that ran.")
    if "max_rss_delta_bytes" in memory:
        items.append("The maximum resident set size counts whole pages of the whole process: a difference of "
                     "zero means less than a page, not nothing.")
    cached = m[flags.has(m["flags"], "from-cache")] if len(m) else m
    if sizes is not None and len(cached):
        varying = sizes[(sizes["signature_bytes"] != sizes["signature_max_bytes"]) | (sizes["family"] == "RSA")]
        names = sorted(set(varying["algorithm"]) & set(cached["algorithm"]))
        if names:
            items.append(f"Cached rows of {', '.join(names)}, whose key or signature encodings vary in length, were "
                         "measured on the keys and signatures of the run that stored them.")
    if "python_heap_bytes" in memory:
        items.append("tracemalloc sees Python objects only, not what C code allocates.")
    return "\n".join(f"- {item}" for item in items)


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
        parts.append(f"**{name} signing** ({size}-byte message) adds **{fmt_bytes(h)} of heap and {fmt_bytes(s)} of "
                     f"stack**; the worker's raw massif peaks, interpreter and markers included, were "
                     f"{fmt_bytes(_get(memory, name, 'sign', 'heap_raw_bytes'))} of heap and "
                     f"{fmt_bytes(_get(memory, name, 'sign', 'stack_raw_bytes'))} of stack (levels without the "
                     f"operation {fmt_bytes(_get(memory, name, 'sign', 'heap_baseline_bytes'))} and "
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


def _key(*parts: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", "_".join(slug(p, lower=True) for p in parts)).strip("_")


def numbers(memory: pd.DataFrame, run=None, comparison: pd.DataFrame | None = None,
            focus: Sequence[str] = ("SPHINCS+-SHAKE-128f-simple", "ML-DSA-44"),
            runs=()) -> dict[str, float | int | str | None]:
    """Every headline number the notebook quotes, under stable keys (for numbers.tex and the .txt exports);
    ``memory_mldsa_caveat``: the ML-DSA conformance sentence of `runs` (the timing runs:
    :func:`pqlab.studies.conforming.paper_caveat`)."""
    out: dict[str, float | int | str | None] = {"memory_mldsa_caveat": conforming.paper_caveat(runs, "ML-DSA")}
    for name in focus:
        for col in ("heap_bytes", "stack_bytes", "heap_native_bytes", "heap_first_call_bytes"):
            if name in set(memory["algorithm"]):  # None: not measured here (no valgrind, no first-call run)
                v = _get(memory, name, "sign", col)
                out[_key(name, "sign", col)] = None if v is None or is_missing(v) else int(v)
    if "stack_bytes" in memory and memory["stack_bytes"].notna().any():
        out["deepest_stack_bytes"] = int(memory["stack_bytes"].max())
        out["shallowest_stack_bytes"] = int(memory["stack_bytes"].min())
    if run is not None:
        m = run.measurements
        out["memory_rows"] = len(m)
        out["memory_rows_from_cache"] = int(flags.has(m["flags"], "from-cache").sum()) if len(m) else 0
        out["worker_processes"] = int(run.meta.get("worker_runs", 0))
    if comparison is not None:
        g = load_gravity()
        out["study_sign_heap_bytes"] = int(g["sign_heap_bytes"])
        out["gravity_hash_bytes"] = g["hash_bytes"]
        for _, r in comparison[comparison["source"] == "measured here"].iterrows():
            for suffix in ("", "_ci_low", "_ci_high"):
                v = r.get(f"study_over_ours_sign{suffix}")
                if v is not None and not is_missing(v):
                    out[_key("study_over", r["algorithm"], r["implementation"], "sign" + suffix)] = float(v)
    return out
