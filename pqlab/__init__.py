"""pqlab: what post-quantum cryptography costs next to the classical algorithms it replaces.

The package is thin, in layers, each folder importing only those below it (``tests/test_import_graph.py``):

==================  =========================================================================================
folder              holds
==================  =========================================================================================
:mod:`~pqlab.core`      errors, vocabularies, the column schema and its units, formatting, inputs, builds,
                        files
:mod:`~pqlab.liboqs`    liboqs builds: compiled, loaded by build, names per release
:mod:`~pqlab.measure`   clocks, cycle counters, the machine's noise, loads, statistics and ratios
:mod:`~pqlab.backends`  the algorithm registry and one adapter per Python library
:mod:`~pqlab.store`     runs recorded, read, converted and bundled
:mod:`~pqlab.runners`   the round loop and every program outside pqlab's process (C, Java, Rust, Go, JS, TLS)
:mod:`~pqlab.checks`    known answers, conformance, cross-checks, leakage screens, published ratios
:mod:`~pqlab.publish`   run context, figures, exports, the paper and the report
:mod:`~pqlab.studies`   one study per notebook
:mod:`~pqlab.app`       the command line, provisioning, JupyterLab
==================  =========================================================================================

The bench API (:func:`bench`) is :mod:`pqlab.benchmark`; calibration of the intervals is
:mod:`pqlab.calibration`.  Notebooks hold narrative, parameters and calls.

``import pqlab`` is light: it loads neither liboqs nor pandas nor matplotlib.  The names below and every
submodule are imported on first use (PEP 562); a module's name before the layers (``pqlab.results``,
``pqlab.export`` ...) still reaches it.  Without a usable liboqs, every other backend still lists, measures
and exports.
"""
from __future__ import annotations

import importlib

__version__ = "0.1.0"

#: name -> module that defines it, imported on first access
_LAZY = {
    "bench": "benchmark",
    "get": "backends.algorithms",
    "names": "backends.algorithms",
    "load_run": "store.results",
    "load_runs": "store.results",
    "compare_runs": "store.results",
}

#: a module's name before the package was layered -> where it is now (``pqlab.results`` reaches
#: ``pqlab.store.results``), so that code written against the flat package keeps working
_MOVED = {
    "errors": "core.errors", "flags": "core.flags", "files": "core.files", "paths": "core.paths",
    "vocabulary": "core.vocabulary", "integrity": "core.integrity", "schema": "core.schema",
    "formatting": "core.formatting", "inputs": "core.inputs", "builds": "core.builds",
    "reference": "core.references", "liboqs_build": "liboqs.build", "liboqs_loader": "liboqs.loader",
    "liboqs_names": "liboqs.names", "cycles": "measure.cycles", "noise": "measure.noise",
    "stats": "measure.stats", "timing": "measure.timing", "machine": "measure.machine",
    "load": "measure.load", "ratio": "measure.ratio", "algorithms": "backends.algorithms",
    "results": "store.results", "recorder": "store.recorder", "bundle": "store.bundle",
    "bundle_checks": "store.bundle_checks", "rounds": "runners.rounds", "memory": "runners.memory",
    "energy": "runners.energy", "fidelity": "runners.fidelity", "crosscheck": "checks.crosscheck",
    "vectors": "checks.vectors", "conformance": "checks.conformance", "interop": "checks.interop",
    "leakage": "checks.leakage", "taint": "checks.taint", "context": "publish.context",
    "plotting": "publish.plotting", "export": "publish.export", "paper": "publish.paper",
    "report": "publish.report", "durations": "publish.durations", "cli": "app.cli", "lab": "app.lab",
    "provision": "app.provision", "rerun": "publish.rerun",
}

__all__ = [*_LAZY, "__version__"]


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    try:
        return importlib.import_module(f".{_MOVED.get(name, name)}", __name__)
    except ModuleNotFoundError as exc:
        if exc.name != f"{__name__}.{_MOVED.get(name, name)}":
            raise
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
