"""The schema rows of one measured thing: what the operation adds to the heap and the stack (its worker
runs less their baselines), the Python heap and the resident set, with the flags that say what failed, what
is coarse and what came from the cache; and the row of the key and signature sizes."""
from __future__ import annotations

from pathlib import Path

from pqlab.core import builds, flags
from pqlab.runners.memory.method import (
    BASELINE_OF,
    HEAP_MARKER_BYTES,
    RUNS,
    SOURCE_MASSIF,
    SOURCE_MASSIF_FIRST_CALL,
    SOURCE_MAXRSS,
    SOURCE_TRACEMALLOC,
    STACK_MARKER_DEPTH,
    STACK_MARKER_MIN_BYTES_PER_LEVEL,
)
from pqlab.runners.memory.processes import Job, WorkerRun, check_output


def _failed(what: str, why: str) -> str:
    return flags.make("failed", f"{what}: {why}")


def _window_heap(run: WorkerRun) -> str:
    s = run.summary
    if s["peak_heap"] < HEAP_MARKER_BYTES:
        return flags.make("peak-outside-window", "heap")
    return "" if s["start_heap"] is not None else flags.make("heap-level-before-operation-not-captured")


def _missing(pairs) -> list[str]:
    return [_failed(f"massif {name}", r.error if r else "not run") for name, r in pairs
            if r is None or r.error or not r.summary]


def heap_figures(run: WorkerRun | None, baseline: WorkerRun | None) -> tuple[dict, list[str]]:
    """What the operation adds to the heap: (peak - level when the window opened) of the run,
    minus the same of the baseline run (what the empty window itself allocates, ~0.1 KiB); and
    what of it code outside the Python installation allocated (:func:`native_heap`)."""
    failed = _missing((("heap", run), ("heap-baseline", baseline)))
    if failed:
        return {}, failed
    why, base_why = _window_heap(run), _window_heap(baseline)
    if why or base_why:
        return {}, [f for f in (why, base_why and f"{base_why} (baseline run)") if f]
    s, b = run.summary, baseline.summary
    window = b["peak_heap"] - b["start_heap"]
    raw, level = s["peak_heap"] - HEAP_MARKER_BYTES, s["start_heap"] - HEAP_MARKER_BYTES + window
    extra = (s["peak_heap_extra"] - s["start_heap_extra"]) - (b["peak_heap_extra"] - b["start_heap_extra"])
    return {"peak_heap_bytes": raw - level, "peak_heap_raw_bytes": raw, "peak_heap_baseline_bytes": level,
            "peak_heap_extra_bytes": extra, **native_heap(run, baseline)}, []


def native_heap(run: WorkerRun, baseline: WorkerRun) -> dict:
    """Bytes live at the run's heap peak that code outside the Python installation (liboqs, OpenSSL,
    a binding's extension module) asked the allocator for, minus the same in the baseline run, and
    the functions that did (``object: function bytes``, largest first); massif's tree names them.
    Empty when either run has no breakdown."""
    ours, theirs = run.summary.get("callers"), baseline.summary.get("callers")
    if ours is None or theirs is None:
        return {}
    interpreter = (set(run.summary.get("interpreter_objects") or ())
                   | set(baseline.summary.get("interpreter_objects") or ()))
    delta: dict[tuple[str, str], int] = {}
    for sign, callers in ((1, ours), (-1, theirs)):
        for path, functions in callers.items():
            if path == "?" or path in interpreter:
                continue
            for function, size in functions.items():
                delta[(path, function)] = delta.get((path, function), 0) + sign * size
    per_object: dict[str, int] = {}
    for (path, _), size in delta.items():
        per_object[path] = per_object.get(path, 0) + size
    # per object that added bytes, its largest allocating functions up to that net amount (a baseline shared
    # by a backend's algorithms built another algorithm's objects through other functions: those cancel in the
    # net)
    named = []
    for path, net in per_object.items():
        for function, size in sorted(((f, v) for (p, f), v in delta.items() if p == path and v > 0),
                                     key=lambda t: -t[1]):
            if net <= 0:
                break
            named.append((path, function, size))
            net -= size
    named.sort(key=lambda t: -t[2])
    return {"peak_heap_native_bytes": sum(per_object.values()),
            "peak_heap_native_callers": ", ".join(f"{Path(p).name}: {f} {v}" for p, f, v in named[:4])}


def stack_figures(run: WorkerRun | None, baseline: WorkerRun | None) -> tuple[dict, list[str]]:
    """What the operation adds to the stack: peak of the run minus peak of the baseline run."""
    failed = _missing((("stack", run), ("stack-baseline", baseline)))
    if failed:
        return {}, failed
    raw, level = run.summary["peak_stacks"], baseline.summary["peak_stacks"]
    marks = [flags.make("peak-outside-window", name)
             for name, value in (("stack", raw), ("stack-baseline", level))
             if value < STACK_MARKER_DEPTH * STACK_MARKER_MIN_BYTES_PER_LEVEL]
    return {"peak_stack_bytes": raw - level, "peak_stack_raw_bytes": raw,
            "peak_stack_baseline_bytes": level}, marks


def _cache_flags(runs) -> list[str]:
    """``from-cache`` when every worker run behind a row came from the cache (detail: the key of the
    first and the run that measured them)."""
    runs = [r for r in runs if r is not None]
    if not runs or not all(r.cached for r in runs):
        return []
    origins = ", ".join(sorted({r.origin for r in runs}))
    return [flags.make("from-cache", f"key {runs[0].cached[:16]}, measured in run {origins}")]


def measurement_rows(job: Job, base: dict, inputs: dict) -> list[dict]:
    """The schema rows of one job: massif heap and stack (warm), massif heap of the first call
    (when measured), tracemalloc and maxrss.  Every worker's output is checked here (a cached run's
    was checked when it was measured)."""
    algo, runs = job.algo, job.runs
    common = dict(base, **algo.identity(), operation=job.operation, message_bytes=job.message_bytes,
                  samples=1)
    wrong = {k: why for k, r in runs.items()
             if not RUNS[k][1] and (why := check_output(algo, job.operation, inputs, r))}
    rows = []
    if "heap" in runs or "stack" in runs:
        heap, hflags = heap_figures(runs.get("heap"), runs.get(BASELINE_OF["heap"]))
        stack, sflags = (stack_figures(runs["stack"], runs.get(BASELINE_OF["stack"])) if "stack" in runs
                         else ({}, []))
        failed = [_failed(k, wrong[k]) for k in ("heap", "stack") if k in wrong]
        measured = [k for k in ("heap", "stack") if k in runs]
        builds_used = {runs[k].build for k in measured if runs[k].build}
        extra = ([flags.make("valgrind-used-generic-build")]
                 if any(builds.matches(b, "generic") for b in builds_used) else [])
        if "stack" not in runs:
            extra.append(flags.make("stack-measured-at-other-message-sizes"))
        extra += _cache_flags([runs.get(k) for k in measured] + [runs.get(BASELINE_OF[k]) for k in measured])
        rows.append(dict(common, memory_source=SOURCE_MASSIF,
                         verified=not failed and not hflags and not sflags,
                         flags=flags.join(failed + hflags + sflags + extra),
                         massif_build=",".join(sorted(builds_used)),
                         valgrind_wall_s=round(sum(runs[k].wall_s for k in measured if not runs[k].cached),
                                               2),
                         **heap, **stack))
    if "heap-cold" in runs:
        heap, hflags = heap_figures(runs["heap-cold"], runs.get(BASELINE_OF["heap-cold"]))
        failed = [_failed("heap-cold", wrong["heap-cold"])] if "heap-cold" in wrong else []
        cached = _cache_flags([runs["heap-cold"], runs.get(BASELINE_OF["heap-cold"])])
        rows.append(dict(common, memory_source=SOURCE_MASSIF_FIRST_CALL, verified=not failed and not hflags,
                         flags=flags.join([*failed, *hflags, flags.make("first-call-in-process"), *cached]),
                         **heap))
    plain = runs.get("plain")
    ok = plain is not None and not plain.error
    failed = [_failed("plain", wrong["plain"])] if "plain" in wrong else []
    cached = _cache_flags([plain])
    rows.append(dict(common, memory_source=SOURCE_TRACEMALLOC, verified=ok and not failed,
                     peak_heap_bytes=plain.report.get("tracemalloc_peak_bytes") if ok else None,
                     flags=flags.join([*failed, flags.make("python-level-allocations-only"), *cached])))
    rss_op = plain.report.get("max_rss_bytes") if ok else None
    rss_base = plain.report.get("max_rss_before_bytes") if ok else None
    rows.append(dict(common, memory_source=SOURCE_MAXRSS, verified=ok and not failed,
                     peak_heap_bytes=None if rss_op is None or rss_base is None else rss_op - rss_base,
                     max_rss_raw_bytes=rss_op, max_rss_baseline_bytes=rss_base,
                     flags=flags.join([*failed, flags.make("coarse-rss"), *cached])))
    return rows


def _size_row(algo, keys, signature: bytes) -> dict:
    row = {"algorithm": algo.name, "backend": algo.backend, "family": algo.family,
           "nist_level": algo.nist_level}
    row.update(algo.key_sizes(keys))
    row["signature_bytes"] = len(signature)
    row["signature_max_bytes"] = algo.declared_sizes().get("signature_max_bytes", len(signature))
    return row
