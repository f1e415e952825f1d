"""Cache entries that check what they hand out, and shared libraries checked before they are loaded.

Everything pqlab builds once and reuses (the liboqs builds in ``~/.cache/pqlab/liboqs/<key>/``, the C helpers
``~/.cache/pqlab/tsc-*.so``, the native, TLS and Bouncy Castle runners, the memory cache's entries) carries
the sha256 of its bytes, recorded when it was made, and is verified against it on every hit: an entry that was
truncated, replaced or made by an older pqlab is rebuilt (or refused) with one line saying so, never handed
out.  A single file's sha256 sits beside it in ``<file>.sha256`` (:func:`record`, :func:`problem`); a liboqs
build keeps its own in its ``build.json``.

A truncated shared library is worse than a wrong one: ``dlopen`` maps it whole and the process dies with
SIGBUS (exit 135, no message) when it touches a page past the end of the file.  :func:`elf_problem` reads the
ELF headers first and refuses a file that is shorter than the segments and section table they describe, so
such a file never reaches the loader, whoever made it (a liboqs of the system or conda has no recorded
sha256).
"""
from __future__ import annotations

import hashlib
import os
import struct
from pathlib import Path

from pqlab.core.files import atomic_write_text

#: The suffix of the file that holds another file's sha256 (``sha256sum`` format).
SUFFIX = ".sha256"
_PT_LOAD = 1


#: (path, inode, size, mtime_ns) -> sha256: a file that has not changed is read once per process
_DIGESTS: dict[tuple, str] = {}


def sha256_file(path: Path | str) -> str:
    """sha256 of a file's bytes (hex); read again whenever its inode, size or modification time changed."""
    with open(path, "rb") as fh:
        st = os.fstat(fh.fileno())
        memo = (str(path), st.st_ino, st.st_size, st.st_mtime_ns)
        if memo not in _DIGESTS:
            h = hashlib.sha256()
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
            _DIGESTS[memo] = h.hexdigest()
    return _DIGESTS[memo]


def sidecar(path: Path | str) -> Path:
    """Where the sha256 of `path` is recorded: ``<path>.sha256``."""
    path = Path(path)
    return path.with_name(path.name + SUFFIX)


def record(path: Path | str) -> str:
    """Record the sha256 of `path` (just made) beside it; returns it."""
    digest = sha256_file(path)
    atomic_write_text(sidecar(path), f"{digest}  {Path(path).name}\n")
    return digest


def recorded(path: Path | str) -> str | None:
    """The sha256 recorded for `path`, or None when none is (or the record is unreadable)."""
    try:
        digest = sidecar(path).read_text().split()[0]
    except (OSError, IndexError, UnicodeDecodeError):
        return None
    return digest if len(digest) == 64 and all(c in "0123456789abcdef" for c in digest) else None


def problem(path: Path | str, expected: str | None = None) -> str:
    """"" when `path` is there and its sha256 is the one recorded when it was made (`expected`, else the one
    in its ``.sha256`` file); otherwise what is wrong, as a phrase that follows the file's name."""
    path = Path(path)
    if not path.is_file():
        return "is missing"
    want = expected or recorded(path)
    if not want:
        return "has no sha256 recorded when it was made (made by an older pqlab, or by hand)"
    got = sha256_file(path)
    if got != want:
        return (f"does not match the sha256 recorded when it was made (sha256 {got[:12]}…, recorded "
                f"{want[:12]}…; {path.stat().st_size} B): truncated or replaced")
    return ""


def elf_problem(path: Path | str) -> str:
    """"" when `path` is a whole ELF file (every loadable segment and the section table within the file); else
    why not, as a phrase that follows the file's name.  Read before ``dlopen``, which dies with SIGBUS on a
    truncated library."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(64)
            size = fh.seek(0, 2)
            if head[:4] != b"\x7fELF":
                return "is not an ELF file" if head else "is empty"
            if len(head) < 52 or head[4] not in (1, 2) or head[5] not in (1, 2):
                return f"is a truncated or damaged ELF file ({size} B)"
            wide, end = head[4] == 2, "<" if head[5] == 1 else ">"
            if wide and len(head) < 64:
                return f"is a truncated ELF file ({size} B)"
            if wide:
                phoff, shoff = struct.unpack_from(end + "QQ", head, 32)
                phentsize, phnum, shentsize, shnum = struct.unpack_from(end + "HHHH", head, 54)
            else:
                phoff, shoff = struct.unpack_from(end + "II", head, 28)
                phentsize, phnum, shentsize, shnum = struct.unpack_from(end + "HHHH", head, 42)
            needed = max(phoff + phnum * phentsize, shoff + shnum * shentsize if shoff else 0)
            if needed > size:
                return f"is a truncated ELF file ({size} B, its headers describe at least {needed} B)"
            fh.seek(phoff)
            table = fh.read(phnum * phentsize)
            for i in range(phnum):
                entry = table[i * phentsize:(i + 1) * phentsize]
                if wide:  # p_type, p_flags, p_offset, p_vaddr, p_paddr, p_filesz
                    kind, _, offset, _, _, filesz = struct.unpack_from(end + "IIQQQQ", entry)
                else:  # p_type, p_offset, p_vaddr, p_paddr, p_filesz
                    kind, offset, _, _, filesz = struct.unpack_from(end + "IIIII", entry)
                if kind == _PT_LOAD and offset + filesz > size:
                    return (f"is a truncated ELF file ({size} B, a loadable segment ends at "
                            f"{offset + filesz} B)")
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    except struct.error:
        return "is a damaged ELF file (its program headers cannot be read)"
    return ""


def library_problem(path: Path | str, expected: str | None = None) -> str:
    """"" when the shared library at `path` may be handed to ``dlopen``: a whole ELF file and, where a sha256
    was recorded when it was made (`expected`, else its ``.sha256`` file), that one; else what is wrong (a
    phrase that follows the file's name)."""
    why = elf_problem(path)
    if why or not (expected or recorded(path)):
        return why
    return problem(path, expected)


def tree_digests(root: Path | str, skip: tuple[str, ...] = ()) -> dict[str, str]:
    """``{relative path: sha256}`` of every file under `root` (names in `skip` left out), to record in an
    entry."""
    root = Path(root)
    return {p.relative_to(root).as_posix(): sha256_file(p) for p in sorted(root.rglob("*"))
            if p.is_file() and p.name not in skip}


def tree_problem(root: Path | str, digests: dict | None) -> str:
    """"" when every file of `digests` (:func:`tree_digests`, recorded when `root` was made) is under `root`
    with that sha256; otherwise the first file that is not, and why (a phrase that follows the folder's
    name)."""
    if not isinstance(digests, dict) or not digests:
        return "has no sha256 recorded when it was made (made by an older pqlab, or by hand)"
    for name, digest in digests.items():
        bad = problem(Path(root) / name, digest)
        if bad:
            return f"holds {name}, which {bad}"
    return ""
