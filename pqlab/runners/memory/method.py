"""The memory method's constants: the markers that put a run's peaks inside the operation, massif's options,
the worker runs a measurement makes (:data:`RUNS`, and the baseline of each), the ``memory_source`` labels of
the rows, and :data:`METHOD`, the one-line account stored with every run.  The method itself is described in
:mod:`pqlab.runners.memory.driver`."""
from __future__ import annotations

from pqlab.core import builds
from pqlab.core.schema import convert_unit

#: Held across the operation window of a massif run; larger than any heap the interpreter reaches.
HEAP_MARKER_BYTES = 256 << 20
#: Calls through C before the operation (about 0.5 KiB of C stack each on CPython 3.11).
STACK_MARKER_DEPTH = 400
#: A lower bound of the C stack one marker level takes: the check that the peak is in the window.
STACK_MARKER_MIN_BYTES_PER_LEVEL = 256
#: Frames kept in massif's allocation tree: the direct caller of the allocator is all that
#: :func:`native_heap` reads (each site attributed to the shared object whose code called malloc).
MASSIF_DEPTH = 1
#: Raised whenever anything that changes a figure changes (markers, massif options, warm-up calls, the
#: baselines): part of every cache key (:mod:`pqlab.runners.memory.cache`).
METHOD_VERSION = 4
SOURCE_MASSIF = "valgrind-massif:stacks"
SOURCE_MASSIF_FIRST_CALL = "valgrind-massif:first-call"
SOURCE_TRACEMALLOC = "tracemalloc"
SOURCE_MAXRSS = "maxrss"
#: the build valgrind falls back to where it cannot run liboqs's CPU-specific code: the setup release's
#: portable one
_PORTABLE = builds.parse("generic").id
#: Stored with every run (meta["memory_method"]).
METHOD = ("one operation per worker process, inputs and outputs through files, outputs checked by the "
          "parent; massif runs forked by a worker server that loaded the backend under valgrind once; "
          "valgrind massif, heap run (--stacks=no --time-unit=B) and stack run (--heap=no --stacks=yes), "
          f"--peak-inaccuracy=0, --threshold=0, --depth={MASSIF_DEPTH}; a "
          f"{convert_unit(HEAP_MARKER_BYTES, 'bytes', 'MiB'):g} MiB heap marker and a "
          f"{STACK_MARKER_DEPTH}-call stack marker put the peaks inside the operation; heap = (peak - level "
          "when the marker was allocated) - the same of a baseline worker calling nothing in the window; "
          "stack = peak - peak of that baseline worker; native heap = bytes live at the peak whose allocator "
          "was called by code outside the Python installation, minus the same in the baseline worker; warm = "
          "one call before the measured one (baselines too); garbage collector run before and paused in the "
          f"window; method version {METHOD_VERSION}")


#: The worker runs of a measurement: name -> (mode, baseline, warm-up calls before the window).
#: "warm" runs call the operation once first, so a library's one-time initialisation on first
#: use is not counted as the operation's memory; "heap-cold" measures exactly that first call.
#: Each baseline makes the same warm-up calls as what it is subtracted from (a warm-up's lasting
#: allocations are then on both sides).  "probe" lists the files a worker loads (the cache key).
RUNS = {
    "plain": ("plain", False, 1),
    "heap": ("heap", False, 1),
    "stack": ("stack", False, 1),
    "heap-cold": ("heap", False, 0),
    "stack-baseline": ("stack", True, 0),
    "heap-baseline": ("heap", True, 1),
    "heap-cold-baseline": ("heap", True, 0),
    "probe": ("probe", False, 0),
}
#: the baseline each measured kind is subtracted from
BASELINE_OF = {"heap": "heap-baseline", "stack": "stack-baseline", "heap-cold": "heap-cold-baseline"}
