"""Reading valgrind massif output: snapshots of heap (``mem_heap_B``, ``mem_heap_extra_B``) and stack
(``mem_stacks_B``), peaks, and the snapshot taken when a heap marker was allocated (see
:mod:`pqlab.memory.driver` for the method that relies on it)."""
from __future__ import annotations

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


_FIELD = re.compile(r"^(snapshot|time|mem_heap_B|mem_heap_extra_B|mem_stacks_B|heap_tree)=(\S*)\s*$")
_HEADER = re.compile(r"^(desc|cmd|time_unit):\s?(.*)$")


def parse_massif(source: Path | str) -> MassifProfile:
    """Read a massif output file (a path, or the text itself when it contains a newline)."""
    text = source if isinstance(source, str) and "\n" in source else Path(source).read_text()
    header: dict[str, str] = {}
    snapshots: list[MassifSnapshot] = []
    current: dict[str, str] | None = None

    def close() -> None:
        if current is not None and "time" in current:
            snapshots.append(MassifSnapshot(int(current["snapshot"]), int(current["time"]),
                                            int(current.get("mem_heap_B", 0)), int(current.get("mem_heap_extra_B", 0)),
                                            int(current.get("mem_stacks_B", 0)), current.get("heap_tree", "empty")))

    for line in text.splitlines():
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
    return MassifProfile(snapshots, header.get("cmd", ""), header.get("desc", ""), header.get("time_unit", ""))

