"""The one atomic writer: every file pqlab writes goes to a temporary name beside its target and is
renamed into place, so a crash leaves either the old complete file or the new one, never half of one.

A temporary name carries its writer: ``.<name>.<host>.<pid>-<start>.<random>.tmp`` (``start``: the
process's start time in clock ticks, so a reused pid is not mistaken for the writer).  A process
killed while writing (SIGKILL, power loss) leaves its temporary file behind; :func:`remove_orphans`
deletes those whose writer no longer exists (and, after a day, those that do not name a writer).
:func:`process_identity` and :func:`process_alive` are the same test for whole runs (a ``running`` run whose
process is gone was abandoned).
"""
from __future__ import annotations

import errno
import os
import re
import socket
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path


def _host() -> str:
    return re.sub(r"[^A-Za-z0-9-]", "-", socket.gethostname()) or "host"


def _start_ticks(pid: int) -> int | None:
    """When process `pid` started, in clock ticks since boot (Linux), or None where unknown."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[19])  # field 22; the command name may hold spaces


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def process_identity() -> dict:
    """This process, as stored in a run's metadata: pid, host, boot id and start time."""
    pid = os.getpid()
    return {"pid": pid, "host": socket.gethostname(), "boot_id": _boot_id(), "start_ticks": _start_ticks(pid)}


def _pid_alive(pid: int, start_ticks: int | None) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # it exists, under another user
    return start_ticks is None or _start_ticks(pid) in (None, start_ticks)


def process_alive(identity: dict | None) -> bool | None:
    """Whether the process of :func:`process_identity` still runs: None when that cannot be told here
    (no identity, or another host)."""
    if not isinstance(identity, dict) or not isinstance(identity.get("pid"), int):
        return None
    if identity.get("host") != socket.gethostname():
        return None
    if identity.get("boot_id") and _boot_id() and identity["boot_id"] != _boot_id():
        return False
    return _pid_alive(identity["pid"], identity.get("start_ticks"))


def _temp_for(path: Path) -> str:
    pid = os.getpid()
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.{_host()}.{pid}-{_start_ticks(pid) or 0}.",
                               suffix=".tmp", dir=path.parent)
    os.close(fd)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; results are ordinary files
    return tmp


_TEMP = re.compile(r"^\.(?P<target>.+)\.(?P<host>[A-Za-z0-9-]+)\.(?P<pid>\d+)-(?P<start>\d+)\.[^.]+\.tmp$")


#: A temporary file whose name does not say its writer (written before writers were named) counts as
#: orphaned once it is this old.
UNNAMED_ORPHAN_AGE_S = 24 * 3600


def remove_orphans(folder: Path | str) -> list[Path]:
    """Delete the temporary files in `folder` whose writer (a process on this host) no longer exists, and
    those that do not name their writer once they are :data:`UNNAMED_ORPHAN_AGE_S` old."""
    removed = []
    for tmp in Path(folder).glob(".*.tmp"):
        try:
            if _TEMP.match(tmp.name) is None:
                orphan = time.time() - tmp.stat().st_mtime > UNNAMED_ORPHAN_AGE_S
            else:
                orphan = temp_writer(tmp, dead=True) is not None
            if orphan:
                tmp.unlink()
                removed.append(tmp)
        except FileNotFoundError:  # its writer renamed or removed it meanwhile
            continue
    return removed


def temp_writer(tmp: Path, *, dead: bool = False) -> str | None:
    """The writer a temporary file names (``host.pid-start``), or None when it names none (or, with `dead`,
    when that writer may still exist: it is alive, or of another host)."""
    m = _TEMP.match(Path(tmp).name)
    if m is None or (dead and (m["host"] != _host() or _pid_alive(int(m["pid"]), int(m["start"]) or None))):
        return None
    return f"{m['host']}.{m['pid']}-{m['start']}"


def temp_target(tmp: Path) -> str | None:
    """The name of the file a temporary file was to become (None for a name that does not say)."""
    m = _TEMP.match(Path(tmp).name)
    return m["target"] if m else None


def _fsync_file(path: str) -> None:
    with open(path, "rb+") as fh:
        os.fsync(fh.fileno())


def _fsync_dir(folder: Path) -> None:
    dir_fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def _place(tmp: str, path: Path) -> None:
    """Put `tmp` at `path` only if nothing is there: a hard link fails when the name exists, so two writers
    (or a file made meanwhile) are never overwritten; FileExistsError then.  Where links are not supported,
    the last check and the rename are two steps."""
    try:
        os.link(tmp, path, follow_symlinks=False)
    except FileExistsError:
        raise
    except OSError:
        if os.path.lexists(path):
            raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(path)) from None
        os.replace(tmp, path)
        return
    os.unlink(tmp)


def atomic_write(path: Path | str, write: Callable[[str], object], *, fsync: bool = False,
                 replace: bool = True) -> Path:
    """Call ``write(tmp_path)`` on a temporary file beside `path`, then rename it into place.

    `fsync`: flush the file (and the folder entry) to disk before returning, where durability matters.
    `replace`: False refuses to replace anything at `path` (FileExistsError, the temporary file removed),
    however late it appeared.  Either way a symbolic link at `path` is replaced, never written through.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _temp_for(path)
    try:
        write(tmp)
        if fsync:
            _fsync_file(tmp)
        if replace:
            os.replace(tmp, path)
        else:
            _place(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    if fsync:
        _fsync_dir(path.parent)
    return path


def atomic_write_text(path: Path | str, text: str, *, fsync: bool = False) -> Path:
    """Write `text` (UTF-8) to `path` atomically."""
    return atomic_write(path, lambda tmp: Path(tmp).write_text(text, encoding="utf-8"), fsync=fsync)


def atomic_write_set(items: Sequence[tuple[Path | str, bytes]], *, fsync: bool = True) -> list[Path]:
    """Write several files as one save: every temporary file first (the slow part), then the renames in
    order, so the last item (a run's metadata) lands last and a crash between them is a matter of
    microseconds.  `fsync`: each file and the folder entries reach the disk before this returns."""
    staged: list[tuple[str, Path]] = []
    try:
        for path, data in items:
            path = Path(path)
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = _temp_for(path)
            staged.append((tmp, path))
            with open(tmp, "wb") as fh:
                fh.write(data)
                if fsync:
                    fh.flush()
                    os.fsync(fh.fileno())
        while staged:
            tmp, path = staged[0]
            os.replace(tmp, path)
            staged.pop(0)
    finally:
        for tmp, _ in staged:
            Path(tmp).unlink(missing_ok=True)
    if fsync:
        for folder in dict.fromkeys(Path(p).parent for p, _ in items):
            _fsync_dir(folder)
    return [Path(p) for p, _ in items]
