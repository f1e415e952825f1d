"""The memory cache: a worker run's figures reused when nothing that decides them has changed.

Massif and tracemalloc count bytes, and the bytes one operation allocates follow from the code that
runs: the same build, interpreter and valgrind give the same counts (a test measures one row twice
and compares).  So each worker run of :mod:`pqlab.runners.memory.driver` is stored under a key, and a later
run with the same key reuses it instead of starting valgrind again.  The key is the sha256 of:

* the driver's method version (:data:`pqlab.runners.memory.method.METHOD_VERSION`: markers, massif options,
  warm-up calls), the valgrind version and the worker's Python version;
* the algorithm, backend, liboqs build, operation, message size and kind of worker run
  (heap, stack, first call, their baselines, the plain run);
* the sha256 of every file the worker runs code from: its shared objects (liboqs, OpenSSL, the
  binding's extension modules, the interpreter) and the source of every module it imports (pqlab's
  own included), as a probe worker of the same algorithm lists them
  (:func:`pqlab.runners.memory.worker.loaded_files`).

A run is stored only when its output checked out and it loaded no file outside its key.  Entries live
in ``$PQLAB_CACHE`` (default ``$XDG_CACHE_HOME/pqlab/memory``, i.e. ``~/.cache/pqlab/memory``), one
JSON file per key; ``make clean`` leaves them.  Each entry holds the sha256 of its own content, recorded when
it was stored and checked on every hit: an entry that cannot be used (cut, edited, not JSON or nested too
deep to parse, unreadable, a folder or a symbolic link in its place) is measured again and replaced, with one
warning line per entry and process saying so (one stored by an older pqlab, without a sha256, is measured
again quietly).
``PQLAB_FRESH=1`` (``make reproduce FRESH=1``) measures everything again and replaces the entries.

Timing is never cached: a time belongs to the moment and the machine state it was taken in (frequency,
load, caches), and reusing it would present an old state as today's.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import re
import shutil
from pathlib import Path

from pqlab.core.errors import warn
from pqlab.core.files import atomic_write_text
from pqlab.core.integrity import sha256_file

#: What reading an entry can raise when it is not one (PermissionError, IsADirectoryError and the like are
#: OSErrors, UnicodeDecodeError and a JSON error ValueErrors, JSON nested too deep a RecursionError)
UNREADABLE = (OSError, ValueError, RecursionError, TypeError)
#: The entries already reported as unusable in this process (each is reported once)
_reported: set[Path] = set()


def cache_root() -> Path:
    """``$PQLAB_CACHE``, else ``$XDG_CACHE_HOME/pqlab/memory`` (``~/.cache`` when unset or relative)."""
    if os.environ.get("PQLAB_CACHE"):
        return Path(os.environ["PQLAB_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME", "")
    return (Path(base) if os.path.isabs(base) else Path.home() / ".cache") / "pqlab" / "memory"


def fresh_requested() -> bool:
    """Whether ``PQLAB_FRESH`` asks to measure everything again (set by ``make reproduce FRESH=1``)."""
    return os.environ.get("PQLAB_FRESH", "").strip().lower() not in ("", "0", "no", "false")


def file_digest(path: str | Path) -> str:
    """sha256 of a file's bytes ("missing" when it cannot be read)."""
    try:
        return sha256_file(path)
    except OSError:
        return "missing"


def file_digests(paths) -> dict[str, str]:
    return {str(p): file_digest(p) for p in sorted(set(paths))}


def cache_key(parts: dict) -> str:
    """sha256 of the key's parts (a JSON-serialisable dict), in a canonical form."""
    return hashlib.sha256(json.dumps(parts, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


class MemoryCache:
    """Entries ``<root>/<key[:2]>/<key>.json``: the key's parts, the stored figures, the run that measured
    them.

    `fresh`: None = :func:`fresh_requested`; True = every lookup misses (entries are replaced)."""

    def __init__(self, root: Path | str | None = None, fresh: bool | None = None) -> None:
        self.root = Path(root) if root is not None else cache_root()
        self.fresh = fresh_requested() if fresh is None else fresh

    def _path(self, key: str) -> Path:
        """Where the entry of `key` (a sha256 in hex, :func:`cache_key`) lives: inside the root, always."""
        if not re.fullmatch(r"[0-9a-f]{64}", key):
            raise ValueError(f"memory cache key {key!r} is not a sha256 in hex: make it with cache_key()")
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict | None:
        """The stored entry (``parts``, ``value``, ``run_id``, ``stored_at``), or None: none stored, or one
        that does not check out (a warning says which and why; the caller measures again and replaces it)."""
        if self.fresh:
            return None
        path = self._path(key)
        if path.is_symlink():  # never read through a link: what it points to is no entry of the cache
            return self._bad(path, "is a symbolic link")
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except UNREADABLE as exc:  # a folder in its place, no permission, not UTF-8 ...
            return self._bad(path, f"cannot be read ({getattr(exc, 'strerror', None) or exc})")
        try:
            entry = json.loads(text)
        except UNREADABLE as exc:
            return self._bad(path, f"is not whole JSON ({type(exc).__name__}: cut short, damaged or "
                                   "nested too deep)")
        if not isinstance(entry, dict) or entry.get("key") != key:
            return self._bad(path, "is not the entry of its key")
        recorded = entry.pop("sha256", None)
        if recorded is None:  # stored by an older pqlab: measured again and replaced, nothing wrong with it
            return None
        try:
            intact = recorded == entry_digest(entry)
        except UNREADABLE:  # values JSON cannot write back (nested too deep)
            intact = False
        if not intact:
            return self._bad(path, "does not match the sha256 recorded when it was stored (edited or "
                                   "damaged)")
        return entry

    @staticmethod
    def _bad(path: Path, why: str) -> None:
        """A miss, said once per entry and process (the caller measures again and :meth:`put` replaces it)."""
        if path not in _reported:
            _reported.add(path)
            warn(f"memory cache entry {path} {why}: measuring it again")
        return None

    def put(self, key: str, parts: dict, value: dict, run_id: str) -> None:
        """Store an entry, replacing whatever is in its place: a file, a symbolic link, a folder (the entry's
        path lies inside the cache root, :meth:`_path`), and a file or link where its shard folder goes."""
        path = self._path(key)
        entry = {"key": key, "parts": parts, "value": value, "run_id": run_id,
                 "stored_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds")}
        entry["sha256"] = entry_digest(entry)
        if path.parent.is_symlink() or (path.parent.exists() and not path.parent.is_dir()):
            path.parent.unlink()  # never written through a link to elsewhere
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)  # a link at `path` is replaced by the rename itself
        atomic_write_text(path, json.dumps(entry, sort_keys=True) + "\n")


def entry_digest(entry: dict) -> str:
    """sha256 of an entry's content (its ``sha256`` field left out), in the canonical form of
    :func:`cache_key`."""
    return cache_key({k: v for k, v in entry.items() if k != "sha256"})
