"""Backends register their algorithms with :func:`pqlab.algorithms.register`.

Each module has a ``register_all()``; a backend whose library is missing registers nothing
and says why in :data:`UNAVAILABLE`.
"""
from __future__ import annotations

import importlib

MODULES = ("liboqs", "cryptography", "pycryptodome", "pqcrypto", "pure_python", "ascon")
#: backend module -> why it registered nothing (a missing optional library)
UNAVAILABLE: dict[str, str] = {}


def load_all() -> None:
    for name in MODULES:
        try:
            module = importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:  # a backend module not written yet / optional
            UNAVAILABLE[name] = str(exc)
            continue
        try:
            module.register_all()
        except ImportError as exc:
            UNAVAILABLE[name] = f"{exc} (install it to use this backend)"
