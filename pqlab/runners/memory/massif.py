"""Reading valgrind massif output: snapshots of heap (``mem_heap_B``, ``mem_heap_extra_B``) and stack
(``mem_stacks_B``), peaks, the snapshot taken when a heap marker was allocated (see
:mod:`pqlab.runners.memory.driver` for the method that relies on it), and who called ``malloc`` for the bytes
live at the peak: the first level of massif's allocation tree, each site attributed to the shared
object whose code called the allocator (:func:`bytes_by_object`)."""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from pathlib import Path


# ----- massif output -----
@dataclass(frozen=True)
class MassifSnapshot:
    index: int
    time: int
    heap: int
    heap_extra: int
    stacks: int
    tree: str  # empty | detailed | peak
    #: detailed snapshots: (bytes, code address, function) of each direct caller of the allocator
    sites: tuple[tuple[int, int, str], ...] = ()

    @property
    def total(self) -> int:
        return self.heap + self.heap_extra + self.stacks


@dataclass
class MassifProfile:
    """The snapshots of one massif output file."""

    snapshots: list[MassifSnapshot]
    command: str = ""
    description: str = ""
    time_unit: str = ""

    def _max(self, attr: str) -> MassifSnapshot:
        if not self.snapshots:
            raise ValueError("massif output without snapshots")
        return max(self.snapshots, key=lambda s: (getattr(s, attr), s.heap_extra))

    @property
    def peak_heap(self) -> int:
        """Largest mem_heap_B over every snapshot (bytes the program asked for)."""
        return self._max("heap").heap

    @property
    def peak_heap_extra(self) -> int:
        """mem_heap_extra_B (allocator headers and alignment) in the snapshot of the largest heap."""
        return self._max("heap").heap_extra

    @property
    def peak_stacks(self) -> int:
        """Largest mem_stacks_B over every snapshot (0 unless massif ran with --stacks=yes)."""
        return self._max("stacks").stacks

    @property
    def peak(self) -> MassifSnapshot | None:
        """Massif's own peak snapshot (largest heap + extra + stacks), if it took one."""
        return next((s for s in self.snapshots if s.tree == "peak"), None)

    def window_start(self, marker: int) -> MassifSnapshot | None:
        """The snapshot taken when the heap marker was allocated: the first whose heap reaches
        `marker`.  With ``--time-unit=B`` (time = bytes allocated + freed) the marker's allocation
        moves massif's clock by far more than its interval between snapshots, so massif must take
        one right then; checked here: the clock jumped by the marker since the snapshot before."""
        for prev, snap in zip(self.snapshots, self.snapshots[1:]):
            if snap.heap >= marker:
                exact = self.time_unit == "B" and snap.time - prev.time >= marker and prev.heap < marker
                return snap if exact else None
        return None


_SITE = re.compile(r"^ n\d+: (\d+) 0x([0-9A-Fa-f]+): (.*?) \((?:in )?[^()]*\)\s*$")
_FIELD = re.compile(r"^(snapshot|time|mem_heap_B|mem_heap_extra_B|mem_stacks_B|heap_tree)=(\S*)\s*$")
_HEADER = re.compile(r"^(desc|cmd|time_unit):\s?(.*)$")


def parse_massif(source: Path | str) -> MassifProfile:
    """Read a massif output file (a path, or the text itself when it contains a newline)."""
    text = source if isinstance(source, str) and "\n" in source else Path(source).read_text()
    header: dict[str, str] = {}
    snapshots: list[MassifSnapshot] = []
    current: dict[str, str] | None = None
    sites: list[tuple[int, int, str]] = []

    def close() -> None:
        if current is not None and "time" in current:
            snapshots.append(MassifSnapshot(int(current["snapshot"]), int(current["time"]),
                                            int(current.get("mem_heap_B", 0)),
                                            int(current.get("mem_heap_extra_B", 0)),
                                            int(current.get("mem_stacks_B", 0)),
                                            current.get("heap_tree", "empty"), tuple(sites)))
        sites.clear()

    for line in text.splitlines():
        if line.startswith(" n"):  # a direct caller of the allocator (first level of the tree)
            if (site := _SITE.match(line)) is not None:
                sites.append((int(site.group(1)), int(site.group(2), 16), site.group(3)))
            continue
        m = _FIELD.match(line)
        if m:
            key, value = m.groups()
            if key == "snapshot":
                close()
                current = {"snapshot": value}
            elif current is not None:
                current[key] = value
        elif current is None and (h := _HEADER.match(line)):
            header[h.group(1)] = h.group(2).strip()
    close()
    return MassifProfile(snapshots, header.get("cmd", ""), header.get("desc", ""),
                         header.get("time_unit", ""))




def attribute_sites(sites, mappings) -> list[tuple[str, str, int]]:
    """``(object path, function, bytes)`` of each allocation site of a snapshot: the site's code
    address looked up in `mappings` (``(start, end, path)`` of the process's executable mappings,
    as :func:`pqlab.runners.memory.worker.executable_mappings` reports them); "?" where none holds it."""
    spans = sorted((int(a), int(b), str(p)) for a, b, p in mappings)
    starts = [a for a, _, _ in spans]
    out = []
    for size, address, function in sites:
        i = bisect.bisect_right(starts, address) - 1
        out.append((spans[i][2] if i >= 0 and address < spans[i][1] else "?", function, size))
    return out
