"""Backends register their algorithms with :func:`pqlab.algorithms.register`.

Each module has a ``register_all()``; a backend whose library is missing or unusable registers
nothing and says why in :data:`UNAVAILABLE` (``python -m pqlab list`` prints it), and every other
backend still works.
"""
from __future__ import annotations

import importlib

from ..errors import LiboqsNotFound
from ..vocabulary import LIBRARY_BACKENDS, backend

MODULES = tuple(dict.fromkeys(backend(name).module for name in LIBRARY_BACKENDS))
#: backend module -> why it registered nothing (a missing optional library, no usable liboqs)
UNAVAILABLE: dict[str, str] = {}


def load_all(only: str | None = None) -> None:
    """Register every backend's algorithms, or (`only`: a backend's name) that backend's alone."""
    for name in MODULES if only is None else [only.replace("-", "_")]:
        try:
            module = importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:  # a backend module not written yet / optional
            UNAVAILABLE[name] = str(exc)
            continue
        try:
            module.register_all()
        except LiboqsNotFound as exc:
            UNAVAILABLE[name] = str(exc)
        except ImportError as exc:
            UNAVAILABLE[name] = f"{exc} (install it to use this backend)"
