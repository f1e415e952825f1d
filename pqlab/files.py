"""The one atomic writer: every file pqlab writes goes to a temporary name beside its target and is
renamed into place, so a crash leaves either the old complete file or the new one, never half of one."""
from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path


def atomic_write(path: Path | str, write: Callable[[str], object], *, fsync: bool = False) -> Path:
    """Call ``write(tmp_path)`` on a temporary file beside `path`, then rename it into place.

    `fsync`: flush the file (and the folder entry) to disk before returning, where durability matters.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; results are ordinary files
    try:
        write(tmp)
        if fsync:
            with open(tmp, "rb+") as fh:
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    if fsync:
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    return path


def atomic_write_text(path: Path | str, text: str, *, fsync: bool = False) -> Path:
    """Write `text` (UTF-8) to `path` atomically."""
    return atomic_write(path, lambda tmp: Path(tmp).write_text(text, encoding="utf-8"), fsync=fsync)
