"""pqlab: what post-quantum cryptography costs next to the classical algorithms it replaces.

The package is thin: a measurement core (algorithm adapters in :mod:`pqlab.algorithms` and
:mod:`pqlab.backends`, :mod:`pqlab.timing`, :mod:`pqlab.cycles`, :mod:`pqlab.stats`, the results
store :mod:`pqlab.results` with :mod:`pqlab.recorder`, exports :mod:`pqlab.export`) and one module
per notebook in :mod:`pqlab.studies`.  Notebooks hold narrative, parameters and calls.

``import pqlab`` is light: it loads neither liboqs nor pandas nor matplotlib.  The names below and
every submodule (``pqlab.results``, ``pqlab.export`` ...) are imported on first use (PEP 562).
Without a usable liboqs, every other backend still lists, measures and exports.
"""
from __future__ import annotations

import importlib

__version__ = "0.1.0"

#: name -> module that defines it, imported on first access
_LAZY = {
    "bench": "benchmark",
    "get": "algorithms",
    "names": "algorithms",
    "load_run": "results",
    "load_runs": "results",
    "compare_runs": "results",
}

__all__ = [*_LAZY, "__version__"]


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    try:
        return importlib.import_module(f".{name}", __name__)
    except ModuleNotFoundError as exc:
        if exc.name != f"{__name__}.{name}":
            raise
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
