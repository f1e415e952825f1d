"""User-facing errors: refused input (:class:`BadInput`, one line naming the problem and the fix), unknown
names with their close matches (:class:`UnknownName`, :func:`close_matches`), and notes to the caller
(:func:`warn`)."""
from __future__ import annotations

import difflib
import os
import shutil
import sys
import warnings
from collections.abc import Iterable, Sequence


def shell_command(args: str) -> str:
    """A command to suggest in a message that works wherever it is typed, a terminal or a notebook's ``!``
    line: ``python -m ARGS`` when ``python`` on PATH is this interpreter (an activated venv, ``make lab``),
    else this interpreter's full path (a kernel whose PATH is not the venv's)."""
    found = shutil.which("python")
    same = found is not None and os.path.realpath(found) == os.path.realpath(sys.executable) and \
        os.path.dirname(os.path.abspath(found)) == os.path.dirname(os.path.abspath(sys.executable))
    return f"{'python' if same else sys.executable} -m {args}"


def close_matches(name: str, candidates: Iterable[str], n: int = 6, cutoff: float = 0.5) -> list[str]:
    """Candidates like `name`: case-insensitive difflib matches, then candidates that contain it."""
    by_lower: dict[str, str] = {}
    for candidate in candidates:
        by_lower.setdefault(str(candidate).lower(), str(candidate))
    key = str(name).lower()
    hits = difflib.get_close_matches(key, list(by_lower), n=n, cutoff=cutoff)
    hits += [c for c in by_lower if key and key in c and c not in hits]
    return [by_lower[h] for h in hits[:n]]


class UnknownName(KeyError):
    """A name pqlab does not know (an algorithm, backend, operation, reference, TLS group ...); the
    message names what was asked, the close matches and where the full list is."""

    def __init__(self, what: str, name: str, candidates: Iterable[str], hint: str = "") -> None:
        self.name = name
        self.matches = close_matches(name, candidates)
        text = f"unknown {what} {name!r}; close matches: {', '.join(self.matches) or 'none'}"
        super().__init__(text + (f". {hint}" if hint else ""))

    def __str__(self) -> str:  # KeyError would quote the message
        return self.args[0]


def choice(value, name: str, choices: Sequence[str]) -> str:
    """One of `choices` (an enum-like argument); anything else is refused with the close matches
    (:class:`UnknownName`).  Here, beside the errors, so that any module can check an argument without
    importing more (``pqlab.core.inputs`` hands it on)."""
    if isinstance(value, str) and value in choices:
        return value
    raise UnknownName(name, str(value), choices, f"{name} is one of {', '.join(choices)}")


class BadInput(ValueError):
    """Input pqlab refuses before measuring anything: the message names the problem and the fix, in one
    line."""


class PqlabWarning(UserWarning):
    """Something pqlab changed or noticed on the caller's behalf (a duplicate dropped, a fallback folder
    used)."""


def warn(text: str) -> None:
    """Tell the caller, as a :class:`PqlabWarning` (the CLI prints it as one ``warning:`` line)."""

    warnings.warn(text, PqlabWarning, stacklevel=3)


class LiboqsNotFound(RuntimeError):
    """No usable liboqs: names where it looked and how to get one (raised by :mod:`pqlab.liboqs.loader`; here
    so that code which only catches it does not load the loader)."""
