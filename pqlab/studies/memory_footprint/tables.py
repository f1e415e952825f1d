"""Notebook 03's tables, from a :func:`pqlab.runners.memory.driver.measure_memory` run (the method is
described there) and a timing run: heap and stack per operation, key and signature sizes, times, and the
reader's footprint table with its columns, caption and note.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from pqlab.core import flags
from pqlab.core.formatting import Column
from pqlab.core.schema import convert_unit
from pqlab.runners.memory.driver import (
    SOURCE_MASSIF,
    SOURCE_MASSIF_FIRST_CALL,
    SOURCE_MAXRSS,
    SOURCE_TRACEMALLOC,
)
from pqlab.runners.memory.worker import SIGNATURE_OPERATIONS

if TYPE_CHECKING:
    import pandas as pd


_KEYS = ["algorithm", "backend", "family", "nist_level", "operation", "message_bytes"]
_OPERATION_ORDER = {op: i for i, op in enumerate(SIGNATURE_OPERATIONS)}
_MEMORY_COLUMNS = {  # memory_source -> {schema column: table column}
    SOURCE_MASSIF: {"peak_heap_bytes": "heap_bytes", "peak_stack_bytes": "stack_bytes",
                    "peak_heap_native_bytes": "heap_native_bytes",
                    "peak_heap_native_callers": "heap_native_callers",
                    "peak_heap_extra_bytes": "heap_extra_bytes", "peak_heap_raw_bytes": "heap_raw_bytes",
                    "peak_stack_raw_bytes": "stack_raw_bytes",
                    "peak_heap_baseline_bytes": "heap_baseline_bytes",
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
    names = algorithms if algorithms is not None else df["algorithm"]
    order = {a: i for i, a in enumerate(dict.fromkeys(names))}
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
        lambda r: flags.join(f"{c}:{d}" if d else c for v in r for c, d in flags.parse(v)
                             if c not in _ROUTINE_FLAGS),
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
        row = {"algorithm": r["algorithm"], "backend": r["backend"],
               "public_key_bytes": int(r["public_key_bytes"]), "secret_key_bytes": int(r["secret_key_bytes"]),
               "signature_bytes": sig}
        if not deterministic:
            row["signature_max_bytes"] = int(r["signature_max_bytes"])
        for n in message_bytes:
            row[f"signed_message_{n}_bytes"] = n + sig
        rows.append(row)
    return pd.DataFrame(rows)


def time_table(run) -> pd.DataFrame:
    """Median time per operation (µs) with quartiles and the precision reached, from a :func:`pqlab.bench`
    run."""
    m = run.measurements if hasattr(run, "measurements") else run
    m = m[m["operation"].isin(SIGNATURE_OPERATIONS)].copy()
    out = m[["algorithm", "backend", "operation", "message_bytes", "samples", "verified"]].copy()
    for col in ("median", "q1", "q3"):
        out[f"time_us_{col}"] = convert_unit(m[f"time_ns_{col}"], "ns", "µs")
    out["rel_ci"] = m["time_ns_rel_ci"]  # precision reached: 95 % CI half-width / median
    out["message_bytes"] = out["message_bytes"].astype("Int64")
    return _order(out, _run_algorithms(run))


def footprint_table(memory: pd.DataFrame, times: pd.DataFrame | None = None) -> pd.DataFrame:
    """The reader's table: time and memory per algorithm, operation and message size."""
    cols = [c for c in ("algorithm", "backend", "family", "operation", "message_bytes", "heap_bytes",
                        "heap_native_bytes", "stack_bytes", "heap_plus_stack_bytes", "heap_first_call_bytes",
                        "python_heap_bytes", "max_rss_delta_bytes", "verified") if c in memory]
    out = memory[cols].copy()
    if times is not None and not times.empty:
        t = times[["algorithm", "backend", "operation", "message_bytes", "time_us_median"]]
        out = out.merge(t, on=["algorithm", "backend", "operation", "message_bytes"], how="left")
        out.insert(5, "time_us", out.pop("time_us_median").round(2))
    return out


#: What each column of the reader's footprint table counts: column -> header (the caption and heap_note say
#: more).
FOOTPRINT_LABELS = {"time_us": "Time, median", "heap_bytes": "Heap, all callers",
                    "heap_native_bytes": "Heap by native code", "stack_bytes": "Stack",
                    "heap_plus_stack_bytes": "Heap (all) + stack",
                    "heap_first_call_bytes": "Heap, all callers, first call",
                    "python_heap_bytes": "Python objects", "max_rss_delta_bytes": "Max RSS rise"}


def footprint_columns(footprint: pd.DataFrame, shown: Sequence[str] | None = None) -> list:
    """The reader's columns of :func:`footprint_table` (those of `shown` present in it, default all), each
    header saying what it counts: the heap of every caller (the Python binding's objects and buffers included)
    apart from the part native code allocated, the stack, Python objects (tracemalloc), the max-RSS rise."""

    names = [c for c in (shown or footprint.columns) if c in footprint]
    return [Column(c, FOOTPRINT_LABELS[c], "time" if c == "time_us" else "size") if c in FOOTPRINT_LABELS
            else c for c in names]


def heap_note(footprint: pd.DataFrame) -> str:
    """Plain text (a table note, or Markdown): what the memory columns count, from how pqlab.runners.memory
    measures, and from the data how much of each operation's heap native code allocated."""
    if "heap_bytes" not in footprint or footprint["heap_bytes"].dropna().empty:
        return ("valgrind was not available: Python objects (tracemalloc, Python-level allocations only) and "
                "the maximum resident set size (whole pages of the whole process) are all that was measured.")
    said = {"heap_bytes": "Heap, all callers: every block allocated during the operation and live at its "
                          "peak (valgrind massif, the level before the operation subtracted), whoever asked "
                          "for it: the library, the binding's extension module and the interpreter (the "
                          "binding's Python objects and ctypes buffers, a returned signature included).",
            "heap_native_bytes": "Heap by native code: the part that code outside the Python interpreter "
                                 "allocated, by massif's allocation tree.",
            "stack_bytes": "Stack: the deepest stack during the operation, less that of a worker calling "
                           "nothing.",
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
    nothing = ", ".join(dict.fromkeys(none["algorithm"] + " " + none["operation"]))
    text += (f" Native code allocated less than half of the heap in {len(mostly)} of {len(both)} rows"
             + (f" (nothing at all in {nothing})" if len(none) else "")
             + (": there the heap is mostly the binding's and the interpreter's, not the library's."
                if len(mostly) else "."))
    return text


def footprint_caption(operation: str, footprint: pd.DataFrame | None = None) -> str:
    """The caption of one operation's exported footprint table (`footprint`: the table, to say what it
    holds)."""
    head = f"Time and memory one {operation} adds, at the smallest message size"
    if footprint is not None and ("heap_bytes" not in footprint or footprint["heap_bytes"].dropna().empty):
        return (head + ": without valgrind, Python objects (tracemalloc) and the maximum resident set size "
                "only.")
    return (head + ". The heap counts every caller, the Python binding's objects and buffers included; the "
            "part native code allocated is shown apart (the note under the table says more).")


def _get(table, algorithm: str, operation: str, col: str, message_bytes=None, backend: str | None = None):
    """One value of a memory table: `col` of `algorithm`'s `operation` (at `message_bytes`, default the
    smallest; keygen has none), None where it was not measured."""
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


def footprint_by_operation(footprint: pd.DataFrame) -> dict:
    """The reader's table at the smallest message size, one frame per operation (keygen has no message): the
    paper's tables, short enough for a page each."""
    smallest = footprint["message_bytes"].dropna().min()
    at = footprint[footprint["message_bytes"].isna() | (footprint["message_bytes"] == smallest)]
    return {op: part.reset_index(drop=True) for op, part in at.groupby("operation", sort=False)}
