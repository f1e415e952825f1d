"""Hardware divisions on secret data in a compiled library, read from its disassembly (KyberSlash, issue #47).

A ``div``/``idiv`` takes a time that depends on its operands on most x86-64 CPUs, and memcheck (pqlab.taint)
is silent on it; whether the compiler emits one for a division by a constant depends on the compiler and its
optimisation level (gcc -Os divides where -O3 multiplies by the reciprocal).  :func:`divisions` disassembles a
shared library or object with ``objdump -d``, splits it into functions (local symbols included), builds the
graph of direct calls and jumps (``call``/``jmp``/``jcc`` to ``<symbol>``, PLT stubs resolved to the
library's own function of that name) and lists the divisions (any width: ``divl``, ``divq``, ``idivl`` ...;
aarch64's ``udiv``/``sdiv``) in every function reachable from the entry symbols.

"On secret data" means here: reachable from the secret-key operation's entry (``OQS_KEM_kyber_768_decaps``,
a signing function), an upper bound.  It over-counts: a division by a public value (a length, a loop bound)
is listed too, and so is one in a branch the operation never takes; the reader gets each division's function
to judge.  It under-counts where code is reached only through a function pointer or a jump table: indirect
calls (``call *%rax``) are not followed; ``indirect_calls`` says how many the reachable functions make.
Local functions of the same name (static functions of different files) are merged, which can only add.

    divisions("liboqs.so", ["OQS_KEM_kyber_768_decaps"]) -> dict: divisions [{function, address,
        instruction}], reachable (functions), entries, indirect_calls, library, objdump (its version)
"""
from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterable
from pathlib import Path

from pqlab.core.errors import BadInput, UnknownName

_HEADER = re.compile(r"^[0-9a-f]+ <(.+)>:$")
_LINE = re.compile(r"^\s*([0-9a-f]+):\s+(\S.*?)\s*$")
#: a direct branch or call to a symbol: x86-64 call/jmp/jcc (bnd or notrack prefix), aarch64 bl/b/b.cc/cbz/tbz
_DIRECT = re.compile(r"^(?:(?:bnd|notrack)\s+)?(?:call\w*|j[a-z]+|bl|b|b\.\w+|cbn?z|tbn?z)\s+(?:[^<#]*,\s*)?"
                     r"[0-9a-f]+ <([^>]+?)(?:\+0x[0-9a-f]+)?>$")
_INDIRECT = re.compile(r"^(?:(?:bnd|notrack)\s+)?(?:call\w*\s+\*|blr\s)")
_DIVISION = re.compile(r"^(?:i?div[bwlq]?|[su]div)\s")


class DisassemblyUnavailable(RuntimeError):
    """objdump is missing or cannot read the file; the message names the fix."""

    def _render_traceback_(self) -> list[str]:  # IPython (notebooks): the one line, no traceback
        return [f"{type(self).__name__}: {self}"]


def functions(text: str) -> dict[str, list[tuple[str, str]]]:
    """``objdump -d --no-show-raw-insn`` output as {symbol: [(address, instruction)]}, PLT stubs and sections
    included; a name that heads several functions gets all their instructions."""
    found: dict[str, list[tuple[str, str]]] = {}
    current = None
    for line in text.splitlines():
        header = _HEADER.match(line)
        if header:
            current = found.setdefault(header.group(1), [])
        elif current is not None and (insn := _LINE.match(line)):
            current.append((insn.group(1), " ".join(insn.group(2).split())))
    return found


def reachable(found: dict[str, list[tuple[str, str]]], entries: Iterable[str]) -> list[str]:
    """The functions of `found` reachable from `entries` by direct calls and jumps, entries first."""
    order, seen = list(entries), set(entries)
    for name in order:  # breadth first: order grows while it is walked
        for _, insn in found.get(name, ()):
            direct = _DIRECT.match(insn)
            if not direct:
                continue
            target = direct.group(1).removesuffix("@plt")
            if target in found and target not in seen:
                seen.add(target)
                order.append(target)
    return order


def scan(text: str, entries: Iterable[str], what: str = "library") -> dict:
    """:func:`divisions` on objdump's `text`; an entry not among its functions is refused with close
    matches (UnknownName)."""
    found = functions(text)
    entries = list(entries)
    for entry in entries:
        if entry not in found:
            raise UnknownName(f"symbol in {what}", entry, found,
                              "the entry is the function of the secret-key operation, e.g. "
                              "OQS_KEM_kyber_768_decaps; `nm -D` lists a library's symbols")
    names = reachable(found, entries)
    hits = [{"function": name, "address": address, "instruction": insn}
            for name in sorted(names) for address, insn in found[name] if _DIVISION.match(insn)]
    indirect = sum(1 for name in names for _, insn in found[name] if _INDIRECT.match(insn))
    return {"divisions": hits, "reachable": len(names), "entries": entries, "indirect_calls": indirect}


def _objdump() -> tuple[str, str]:
    path = shutil.which("objdump")
    if path is None:
        raise DisassemblyUnavailable("objdump is not installed: install binutils (apt-get install binutils, "
                                     "or conda install -c conda-forge binutils) to scan a disassembly")
    version = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30).stdout
    return path, (version.splitlines() or ["?"])[0]


def divisions(library: str | Path, entries: Iterable[str] | str) -> dict:
    """The ``div``/``idiv`` instructions in the functions of `library` (a shared library or object) reachable
    from `entries` (symbols), as :func:`scan` returns them, plus library and objdump (its version line).
    Nothing is cached: objdump runs on every call (seconds for a whole liboqs)."""
    entries = [entries] if isinstance(entries, str) else list(entries)
    if not entries:
        raise BadInput("no entry symbol: pass the secret-key operation's function, e.g. "
                       "['OQS_KEM_kyber_768_decaps']")
    path = Path(library).expanduser()
    if not path.is_file():
        raise BadInput(f"library {str(library)!r} is not a file: pass the path of a shared library or object")
    objdump, version = _objdump()
    proc = subprocess.run([objdump, "-d", "--no-show-raw-insn", str(path)], capture_output=True, text=True,
                          timeout=600)
    if proc.returncode != 0:
        why = " ".join(proc.stderr.split())[:300]
        raise DisassemblyUnavailable(f"objdump could not disassemble {path}: {why}; pass a shared library or "
                                     "object for this machine's architecture")
    return {**scan(proc.stdout, entries, path.name), "library": str(path), "objdump": version}
