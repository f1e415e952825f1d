"""pqlab: what post-quantum cryptography costs next to the classical algorithms it replaces.

The package is thin: adapters over liboqs-python, cryptography and PyCryptodome
(:mod:`pqlab.algorithms`), measurement (:mod:`pqlab.timing`, :mod:`pqlab.cycles`,
:mod:`pqlab.stats`), a tidy results store (:mod:`pqlab.results`) and exports
(:mod:`pqlab.export`, :mod:`pqlab.plotting`).  Notebooks hold narrative, parameters and calls.
"""
from __future__ import annotations

__version__ = "0.1.0"

from .liboqs import import_oqs as _import_oqs

try:  # load liboqs-python now, quietly (its import banner and version warning stay out of outputs)
    _import_oqs()
except Exception:  # noqa: BLE001 - pqlab without liboqs still lists, loads and exports
    pass

from .algorithms import get, names  # noqa: E402
from .bench import bench  # noqa: E402
from .results import compare_runs, load_run, load_runs  # noqa: E402

__all__ = ["bench", "get", "names", "load_run", "load_runs", "compare_runs", "__version__"]
