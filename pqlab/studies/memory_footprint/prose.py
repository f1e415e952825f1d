"""Notebook 03's generated text: the method, which memory sources ran and what came from the cache, what the
measurements say (stack extremes, who allocated the heap, how the heap follows the signature, first calls,
longer messages), the study's Gravity-SPHINCS beside ours, the caveats, the closing note, and every number the
notebook quotes.
"""
from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pqlab.core import flags
from pqlab.core.formatting import (
    fmt_bytes,
    fmt_factor_ci,
    fmt_span,
    fmt_time_ms,
    is_missing,
    markdown,
    slug,
)
from pqlab.core.schema import convert_unit
from pqlab.runners.memory.driver import HEAP_MARKER_BYTES, STACK_MARKER_DEPTH
from pqlab.studies import conforming
from pqlab.studies.memory_footprint.published import load_gravity
from pqlab.studies.memory_footprint.tables import _get

if TYPE_CHECKING:
    import pandas as pd


def describe_method(first_call: bool = True) -> str:
    """The method in a paragraph, its constants read from this module."""
    marker_mib = convert_unit(HEAP_MARKER_BYTES, "bytes", "MiB")
    return ("Each operation runs in a worker process of its own, which loads keys, message and signature "
            "from files and writes its output to a file that the notebook's process checks. valgrind's "
            "massif measures the heap (`--stacks=no --time-unit=B`) and the stack (`--heap=no "
            f"--stacks=yes`) in separate runs, both with `--peak-inaccuracy=0`. A {marker_mib:.0f} MiB heap "
            f"block that is never touched and {STACK_MARKER_DEPTH} nested calls through C open a window "
            "around the operation, so that the peaks of the run fall inside it and not in the interpreter's "
            "start-up. What the operation *adds* is the peak minus the level just before it: for the heap "
            "read in the same run (massif must take a snapshot when the marker's allocation advances its "
            "byte clock), for the stack the peak of a baseline worker that calls nothing in the window (one "
            "per backend and operation). The worker calls the operation once before the measured call, and "
            "Python's garbage collector is run before the window and paused inside it. "
            + ("The *first call* in a process is measured too (heap only), as are " if first_call else
               "Also measured: ")
            + "Python-level allocations (tracemalloc, without valgrind) and the workers' maximum resident "
            "set size (coarse). Massif's heap is what `malloc` hands out: CPython serves its small objects "
            "from arenas it maps itself, which massif does not count as heap and tracemalloc does, so the "
            "two differ. Massif's allocation tree at the heap peak names the code that called the allocator "
            "for each block; each caller is looked up in the worker's memory map, so the heap an operation "
            "adds splits into what code outside the Python interpreter allocated (`heap_native_bytes`: the "
            "library, or the binding's extension module) and what the interpreter allocated (Python objects, "
            "ctypes buffers).")


def describe_valgrind(status: dict, run=None) -> str:
    """Which memory sources this run had, in a sentence or three."""
    if not status.get("available"):
        return (f"**valgrind is not available here** ({status.get('reason', 'not found')}), so native heap "
                "and stack could not be measured. Shown instead: Python-level allocations during each "
                "operation (tracemalloc, which does not see what C libraries allocate) and the difference of "
                "the worker processes' maximum resident set size (page-granular, coarse). `make setup` "
                "installs valgrind where apt-get can.")
    text = f"{status['version']} (`{status['path']}`) ran every worker under massif. "
    if run is not None:
        if flags.has(run.measurements["flags"], "valgrind-used-generic-build").any():
            text += ("valgrind could not run liboqs's CPU-optimised build, so the portable (generic) build "
                     "was measured for memory where needed (flagged `valgrind-used-generic-build`). ")
        meta = run.meta
        params = meta.get("params", {})
        text += (f"{meta.get('worker_runs', '?')} worker processes took "
                 f"{meta.get('wall_s', float('nan')):.0f} s ({params.get('jobs', '?')} at a time).")
        stack_sizes = params.get("stack_message_bytes")
        if stack_sizes is not None and sorted(stack_sizes) != sorted(params.get("message_bytes", [])):
            text += (f" The stack was measured at {' and '.join(f'{n}-byte' for n in stack_sizes)} messages "
                     "only (the findings below show whether it depends on the message); the heap at every "
                     "size.")
    return text


def describe_time_sizes(time_run, message_bytes: Sequence[int]) -> str:
    """Which message sizes were timed, when not all of `message_bytes` (the memory run's): one sentence, or
    ""."""
    timed = sorted(time_run.meta.get("params", {}).get("message_bytes", []))
    untimed = sorted(n for n in message_bytes if n not in timed)
    if not untimed:
        return ""
    return (f"Times were taken at {' and '.join(f'{n}-byte' for n in timed)} messages only "
            f"(`time_message_bytes`), memory at every size: at {', '.join(str(n) for n in untimed)} bytes "
            "the tables' `time_us` is empty. How time grows with the message is notebook 02's subject.")


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
        head = ("**Measured afresh** (`PQLAB_FRESH` set, as `make reproduce FRESH=1` does): none of the "
                f"{len(m)} memory rows came from the cache; {info['stored']} worker runs were stored in it "
                f"({where}).")
    elif not cached.any():
        head = (f"None of the {len(m)} memory rows came from the cache ({where}): nothing with their keys "
                f"was stored; {info['stored']} worker runs were stored now.")
    else:
        head = (f"**{int(cached.sum())} of the {len(m)} memory rows came from the cache** ({where}), "
                f"measured in run{'s' if len(origins) > 1 else ''} {', '.join(origins)}; {info['measured']} "
                "worker runs were measured now (their rows carry no `from-cache` flag).")
    files = info.get("files", {})
    objects = [f"{Path(p).name} `{d[:12]}`" for p, d in files.items() if ".so" in Path(p).name
               and not p.startswith((sys.base_prefix, "/lib", "/usr/lib"))]
    return (head + " A row's key (the sha256 its `from-cache` flag starts with) covers the method version "
            f"({info['method_version']}), {info['valgrind'] or 'no valgrind'}, {', '.join(info['python'])}, "
            "the algorithm, backend, liboqs build, operation, message size and kind of worker run, and the "
            f"sha256 of each of the {len(files)} files the workers load (among them these shared objects of "
            f"the libraries: {', '.join(objects) or 'none'}; every file is listed in the run's metadata). "
            "Times are never cached.")


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
    operation: in how many sets code outside the interpreter allocated none of it, and what the others
    allocated."""
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
        head = (f"{backend} {op}: none in {len(part) - len(some)} of {len(part)} sets, "
                if len(some) < len(part) else f"{backend} {op}: ")
        parts.append(head + f"{fmt_span(some['heap_native_bytes'])} in "
                     + (", ".join(some["algorithm"]) if len(some) <= 3 else f"{len(some)} sets")
                     + (f" ({', '.join(markdown(f) for f in functions[:4])}"
                        f"{', …' if len(functions) > 4 else ''})" if functions else ""))
    return ("Massif's allocation tree names the code that asked for the heap each operation adds. Code "
            "outside the Python interpreter (the library, or the binding's extension module) allocated: "
            + "; ".join(parts)
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
            reading = (f", about {copies} copies of the signature" if copies and abs(k - copies) < tolerance
                       else "")
            out.append(f"For the {len(part)} {backend} sets, the heap signing adds follows the signature "
                       f"length: {fmt_bytes(c)} plus {k:.2f} times the signature (off by at most "
                       f"{fmt_bytes(worst)}){reading}.")
        else:
            out.append(f"For the {len(part)} {backend} sets, the heap signing adds does not follow the "
                       f"signature length alone: a straight line misses by up to {fmt_bytes(worst)}.")
    return " ".join(out)


def _first_call_sentence(m: pd.DataFrame) -> str:
    """Where the first call in a process adds at least twice the heap of a later call, and who allocated
    it."""
    if "heap_first_call_bytes" not in m:
        return ""
    both = m.dropna(subset=["heap_first_call_bytes", "heap_bytes"])
    if both.empty:
        return ""
    later = both["heap_bytes"].astype(float).clip(lower=1)
    more = both[both["heap_first_call_bytes"].astype(float) >= 2 * later]
    if more.empty:
        gap = (both["heap_first_call_bytes"].astype(float) - both["heap_bytes"].astype(float)).max()
        return ("The first call in a process adds less than twice the heap of a later call everywhere (at "
                f"most {fmt_bytes(gap)} more).")
    listed = "; ".join(
        f"{r['algorithm']} {r['operation']}, {fmt_bytes(r['heap_first_call_bytes'])} against "
        f"{fmt_bytes(r['heap_bytes'])}" + (f" (allocated by {r['heap_first_call_native_callers']})"
                                           if isinstance(r.get("heap_first_call_native_callers"), str)
                                           and r["heap_first_call_native_callers"] else "")
        for _, r in more.iterrows())
    text = f"The first call in a process adds at least twice the heap of a later call for {listed}."
    if (more["backend"] == "cryptography").any():
        text += (" *Hypothesis, not measured here:* OpenSSL fetches its provider's implementation of an "
                 "algorithm on first use and caches it for later calls.")
    return text


def _message_sentence(m: pd.DataFrame) -> str:
    """What a longer message adds: heap per message byte, and whether the stack changes at all."""
    sizes_seen = sorted(m["message_bytes"].dropna().unique())
    if len(sizes_seen) < 2:
        return ""
    lo, hi = sizes_seen[0], sizes_seen[-1]
    ops = m[m["operation"].isin(["sign", "verify"])]
    keys = ["algorithm", "backend", "operation"]
    heap = ops.pivot_table(index=keys, columns="message_bytes", values="heap_bytes")
    dheap = ((heap[hi] - heap[lo]) / (hi - lo)).dropna()
    stack = ops.pivot_table(index=keys, columns="message_bytes", values="stack_bytes")
    dstack = (stack[hi] - stack[lo]).abs().dropna() if {lo, hi} <= set(stack.columns) else stack.iloc[:0, 0]
    text = (f"From {lo} to {hi}-byte messages the heap grows by {dheap.min():.2f} to {dheap.max():.2f} bytes "
            "per message byte.")
    if dstack.empty:
        return text
    if dstack.max() < hi - lo:
        return text + (f" The stack changes by at most {fmt_bytes(dstack.max())}, less than the message "
                       f"grew, in all {len(dstack)} operations: none holds a copy of the message on its "
                       "stack.")
    grows = ", ".join(f"{a} {o}" for (a, _, o) in dstack[dstack >= hi - lo].index)
    return text + f" The stack grows by at least the message's growth for {grows}."


def describe_findings(memory: pd.DataFrame, sizes: pd.DataFrame | None = None) -> str:
    """What the measurements say, generated from them; a mechanism only where massif's tree shows it."""
    if memory.empty or "stack_bytes" not in memory or memory["stack_bytes"].dropna().empty:
        py = memory.dropna(subset=["python_heap_bytes"]) if "python_heap_bytes" in memory else memory.iloc[:0]
        if py.empty:
            return "No memory figure was measured."
        top = py.loc[py["python_heap_bytes"].astype(float).idxmax()]
        return ("Without valgrind only Python-level allocations were seen: the largest, "
                f"{fmt_bytes(top['python_heap_bytes'])}, by {top['algorithm']} {top['operation']}.")
    m = memory.dropna(subset=["stack_bytes", "heap_bytes"])
    sign = m[(m["operation"] == "sign") & (m["message_bytes"] == m["message_bytes"].min())]
    smallest = m[m["message_bytes"].isna() | (m["message_bytes"] == m["message_bytes"].min())]
    lines = [_stack_extremes(m), _native_sentence(smallest),
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
    text = [f"**Gravity-SPHINCS is not measured here.** The study's crate uses gravity-rs{source}, which "
            "cargo built from source for it; this project does not fetch or build gravity-rs, so the study's "
            "published figures stay the reference row. Of the study's "
            f"{g['rows']} published values {g['placeholders']} are placeholders (signature and "
            "signed-message sizes, every Divan figure); its machine attribution (an arm64 Apple M1 Pro, "
            "which the crate's own README says it does not support) is doubtful.",
            f"gravity-rs hashes to {n} bytes (`HASH_SIZE` in its source), so its like-for-like neighbours "
            f"are the SPHINCS+ and SLH-DSA sets with {n}-byte hashes (a public key of two hashes, {2 * n} "
            f"bytes; Gravity-SPHINCS's is one hash, {fmt_bytes(g['public_key_bytes'])})."]
    if ours.empty:
        return " ".join(text + [f"No SPHINCS+ or SLH-DSA set with {n}-byte hashes was measured in this run."])
    text.append(f"Measured here with {n}-byte hashes: "
                f"{', '.join(ours['algorithm'] + ' (' + ours['implementation'] + ')')}.")
    heap = ours.dropna(subset=["sign_heap_bytes"])
    if not heap.empty and g["sign_heap_bytes"]:
        native = heap["sign_heap_native_bytes"].dropna()
        text.append(f"The study's peak heap, {fmt_bytes(g['sign_heap_bytes'])} for signing and again for "
                    "verifying, is what its Rust allocator handed out during the call, the returned "
                    "signature included; its stack was not measured. Here signing adds "
                    f"{fmt_span(heap['sign_heap_bytes'])} of heap, of which code outside the interpreter "
                    f"allocated {fmt_span(native)} (the rest are the binding's Python objects and buffers), "
                    f"and {fmt_span(ours['sign_stack_bytes'])} of stack. The two heaps count different "
                    "things, so no ratio is given.")
    if sizes is not None:
        for sig in sorted(set(sizes["signature_bytes"].dropna().astype(int))):
            rest = int(g["sign_heap_bytes"] or 0) - 2 * sig
            if 0 <= rest <= 256:
                names = sizes[sizes["signature_bytes"] == sig]["algorithm"].tolist()
                text.append("A coincidence worth checking against the study's source: "
                            f"{fmt_bytes(g['sign_heap_bytes'])} is exactly two {sig:,}-byte signatures "
                            f"({', '.join(names)}) plus {rest} B.")
    t = ours.dropna(subset=["sign_ms"])
    if not t.empty and g["sign_ms"]:
        ratios = "; ".join(f"{r['algorithm']} {fmt_time_ms(r['sign_ms'])}, study/ours "
                           + fmt_factor_ci(r["study_over_ours_sign"], r["study_over_ours_sign_ci_low"],
                                           r["study_over_ours_sign_ci_high"]) for _, r in t.iterrows())
        text.append(f"Signing took the study {fmt_time_ms(g['sign_ms'])} (one call, so no interval on its "
                    f"side); here (median): {ratios}. Another scheme, implementation, CPU and language: the "
                    "ratio is context, not a verdict.")
    return " ".join(text)


def describe_caveats(memory: pd.DataFrame, run, sizes: pd.DataFrame | None = None) -> str:
    """One sentence per caveat that applies to this run, as a Markdown list."""
    m = run.measurements
    items = []
    if ("heap_bytes" in memory and memory["heap_bytes"].notna().any()
            and (memory["backend"] == "liboqs").any()):
        items.append("valgrind runs the code on a CPU it emulates: liboqs picks its code paths at run time "
                     "for the features that CPU reports, which need not be this host's, and the figures "
                     "belong to the code that ran.")
    if "max_rss_delta_bytes" in memory:
        items.append("The maximum resident set size counts whole pages of the whole process: a difference of "
                     "zero means less than a page, not nothing.")
    cached = m[flags.has(m["flags"], "from-cache")] if len(m) else m
    if sizes is not None and len(cached):
        varying = sizes[(sizes["signature_bytes"] != sizes["signature_max_bytes"])
                        | (sizes["family"] == "RSA")]
        names = sorted(set(varying["algorithm"]) & set(cached["algorithm"]))
        if names:
            items.append(f"Cached rows of {', '.join(names)}, whose key or signature encodings vary in "
                         "length, were measured on the keys and signatures of the run that stored them.")
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
        parts.append(f"**{name} signing** ({size}-byte message) adds **{fmt_bytes(h)} of heap and "
                     f"{fmt_bytes(s)} of stack**; the worker's raw massif peaks, interpreter and markers "
                     f"included, were {fmt_bytes(_get(memory, name, 'sign', 'heap_raw_bytes'))} of heap and "
                     f"{fmt_bytes(_get(memory, name, 'sign', 'stack_raw_bytes'))} of stack (levels without "
                     f"the operation {fmt_bytes(_get(memory, name, 'sign', 'heap_baseline_bytes'))} and "
                     f"{fmt_bytes(_get(memory, name, 'sign', 'stack_baseline_bytes'))})"
                     + ("." if (first := _get(memory, name, "sign", "heap_first_call_bytes")) is None
                        else f"; its first call in a process adds {fmt_bytes(first)} of heap."))
    method = ("Method: one operation per valgrind massif process after one warm-up call, heap and stack in "
              "separate runs, peaks forced into the operation by a heap and a stack marker, and the level "
              "before the operation subtracted (heap: read in the same run; stack: a worker calling nothing "
              "at the same place)."
              if status.get("available") else
              "valgrind was not available: only tracemalloc and max-RSS figures were measured.")
    return " ".join(parts + [method])


def _key(*parts: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", "_".join(slug(p, lower=True) for p in parts)).strip("_")


def numbers(memory: pd.DataFrame, run=None, comparison: pd.DataFrame | None = None,
            focus: Sequence[str] = ("SPHINCS+-SHAKE-128f-simple", "ML-DSA-44"),
            runs=()) -> dict[str, float | int | str | None]:
    """Every headline number the notebook quotes, under stable keys (for numbers.tex and the .txt exports);
    ``memory_mldsa_caveat``: the ML-DSA conformance sentence of `runs` (the timing runs:
    :func:`pqlab.studies.conforming.paper_caveat`)."""
    out: dict[str, float | int | str | None] = {
        "memory_mldsa_caveat": conforming.paper_caveat(runs, "ML-DSA")}
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
