"""The algorithm registry's lookup: canonical name -> adapter (:mod:`pqlab.backends.base`), every backend
module loaded on first need (:func:`load_all`).

Each backend module has a ``register_all()``; a backend whose library is missing or unusable registers nothing
and says why in :data:`UNAVAILABLE` (``python -m pqlab list`` prints it), and every other backend still works.
Adapters import :mod:`pqlab.backends.base` only, so loading them through importlib is an arrow down, never a
loop.
"""
from __future__ import annotations

import functools
import importlib
import os
import random
from collections.abc import Iterable

from pqlab.backends.base import _REGISTRY, Algorithm, UnknownAlgorithm
from pqlab.core.builds import SETUP_RELEASE
from pqlab.core.errors import LiboqsNotFound, choice, shell_command, warn
from pqlab.core.schema import KIND_OPERATIONS
from pqlab.core.vocabulary import LIBRARY_BACKENDS, POST_QUANTUM, family_of, find
from pqlab.core.vocabulary import backend as backend_entry

MODULES = tuple(dict.fromkeys(backend_entry(name).module for name in LIBRARY_BACKENDS))
#: backend module -> why it registered nothing (a missing optional library, no usable liboqs)
UNAVAILABLE: dict[str, str] = {}


def load_all(only: str | None = None) -> None:
    """Register every backend's algorithms, or (`only`: a backend's name) that backend's alone."""
    for name in MODULES if only is None else [only.replace("-", "_")]:
        try:
            module = importlib.import_module(f"pqlab.backends.{name}")
        except ModuleNotFoundError as exc:  # a backend module not written yet / optional
            UNAVAILABLE[name] = str(exc)
            continue
        try:
            module.register_all()
        except LiboqsNotFound as exc:
            UNAVAILABLE[name] = str(exc)
        except ImportError as exc:
            UNAVAILABLE[name] = f"{exc} (install it to use this backend)"


_LOADED = False
#: Default backend when a name has several: liboqs for post-quantum, OpenSSL for the rest.
BACKEND_PREFERENCE = LIBRARY_BACKENDS


def _load_backends() -> None:
    global _LOADED
    if _LOADED:
        return
    _LOADED = True
    try:
        load_all()
    except BaseException:
        _LOADED = False  # the next call tries again (and fails the same way), never an empty registry
        raise


def load_backend(backend: str) -> None:
    """Register one backend's algorithms and import no other library: a memory worker measures one
    backend, under valgrind, where every import is slow (:func:`get` of one of them loads nothing more)."""
    load_all(only=backend)


def _liboqs_missing() -> str:
    """Why liboqs registered nothing ("" when it is there)."""
    return UNAVAILABLE.get("liboqs", "")


#: the kinds of algorithm (:func:`names`, ``python -m pqlab list --kind``): signatures, KEMs, public-key
#: encryption, symmetric ciphers
KINDS = tuple(KIND_OPERATIONS)


def known_backends() -> list[str]:
    """Every backend pqlab knows here: those that registered algorithms and those unavailable (with a
    reason)."""
    _load_backends()
    return sorted({b for _, b in _REGISTRY} | set(UNAVAILABLE))


def names(kind: str | None = None, backend: str | None = None) -> list[str]:
    """Canonical names, sorted, optionally only of one `kind` (one of :data:`KINDS`: "sig", "kem", "pke",
    "cipher") or `backend` (:func:`known_backends`); an unknown kind or backend is refused with close
    matches."""

    _load_backends()
    if kind is not None:
        choice(kind, "kind", KINDS)
    if backend is not None:
        choice(backend, "backend", known_backends())
    keys = [k for k in _REGISTRY if backend is None or k[1] == backend]
    out = sorted({n for n, _ in keys})
    if kind:
        out = [n for n in out if get(n, _backends_of(n)[0]).kind == kind]
    return out


def _backends_of(name: str) -> list[str]:
    found = [b for (n, b) in _REGISTRY if n == name]
    return sorted(found, key=lambda b: BACKEND_PREFERENCE.index(b) if b in BACKEND_PREFERENCE else 99)


def backends_of(name: str) -> list[str]:
    """Every backend that implements `name`, preferred first: one per implementation, so not a backend that
    measures another of them through another path (``liboqs-python``, liboqs through its binding: name it to
    get it)."""
    _load_backends()
    return _distinct(_backends_of(name))


def _distinct(found: list[str]) -> list[str]:
    return [b for b in found if getattr(find(b), "through", "") not in found]


@functools.cache
def _instance(name: str, backend: str) -> Algorithm:
    return _REGISTRY[(name, backend)]()


def get(name: str, backend: str | None = None) -> Algorithm:
    """The adapter for `name` (and `backend`, else the preferred one); errors list close matches."""
    if (name, backend) in _REGISTRY:  # registered already (all backends, or this one: load_backend)
        return _instance(name, backend)
    _load_backends()
    available = _backends_of(name)
    missing = _liboqs_missing()
    if missing and (backend == "liboqs" or (not available and backend is None and _post_quantum(name))):
        raise LiboqsNotFound(f"{name}: {missing}")
    if not available and not missing and backend in (None, "liboqs") and (there := _stand_in(name)):
        return get(there, backend)
    if not available and not missing and (elsewhere := _in_another_liboqs(name)):
        raise UnknownAlgorithm("algorithm", name, {n for n, _ in _REGISTRY}, elsewhere)
    if not available:
        raise UnknownAlgorithm("algorithm", name, {n for n, _ in _REGISTRY},
                               "pqlab.names() lists every registered name (shell: "
                               f"{shell_command('pqlab list')})"
                               + (f"; liboqs is not usable here: {missing}" if missing else ""))
    if backend is None:
        backend = available[0]
        if missing and _post_quantum(name):
            warn(f"liboqs is not usable here, so {name} runs on {backend}")
    if backend not in available:
        raise UnknownAlgorithm(f"backend for {name}", backend, available,
                               f"{name} is implemented by: {', '.join(available)}")
    return _instance(name, backend)


def _in_another_liboqs(name: str) -> str:
    """Why the loaded liboqs lacks `name` where another liboqs release has it
    (:func:`pqlab.liboqs.names.missing_in`: renamed there, or what it has instead); "" otherwise."""
    from pqlab.liboqs.names import missing_in

    return missing_in(name, _loaded_release())


#: names the loaded liboqs does not list, each with its name for what is measured in their place and why
#: (:func:`pqlab.liboqs.names.stand_in`), said once per process
STOOD_IN: dict[str, tuple[str, str]] = {}


def _stand_in(name: str) -> str:
    """The loaded liboqs's name for what stands in for `name` (said once per process), or ""."""
    from pqlab.liboqs.names import stand_in

    if name not in STOOD_IN:
        there, why = stand_in(name, _loaded_release())
        if not there:
            return ""
        STOOD_IN[name] = (there, why)
        warn(why)
    return STOOD_IN[name][0]


def liboqs_name_notes(algos) -> dict[str, str]:
    """For the liboqs algorithms among `algos` (adapters): ``NAME@backend`` -> the sentence that says the name
    stands where pqlab's setup release has another (:func:`pqlab.liboqs.names.in_place_of`: SLH-DSA where
    0.13.0 has round-3 SPHINCS+) or means another algorithm than there
    (:func:`pqlab.liboqs.names.meaning_changed`); empty on the setup release.  From the name tables alone, so
    a worker handed the new names says it as well as the process that stood them in (:func:`_stand_in`)."""
    from pqlab.liboqs.names import in_place_of, meaning_changed

    liboqs = [a for a in algos if a.backend in ("liboqs", "liboqs-python")]
    if not liboqs or _liboqs_missing():
        return {}
    release = _loaded_release()
    notes = {}
    for a in liboqs:
        said = [s for s in (in_place_of(a.name, release, SETUP_RELEASE),
                            meaning_changed(a.name, release, SETUP_RELEASE)) if s]
        if said:
            notes[f"{a.name}@{a.backend}"] = "; ".join(said)
    return notes


def _loaded_release() -> str:
    """The release of the liboqs this process loaded (e.g. "0.13.0")."""
    from pqlab.liboqs.loader import liboqs_info

    return str(liboqs_info()["liboqs_version"])


def _post_quantum(name: str) -> bool:
    """Whether `name` belongs to a post-quantum family liboqs implements (by its prefix)."""

    return family_of(name) in POST_QUANTUM


#: names whose default backend :func:`announce_defaults` has announced in this process (once each)
_ANNOUNCED: set[str] = set()


def announce_defaults(items) -> list[str]:
    """Once per name and process, say which backend each name given without one (a str without "@") runs on,
    where several implement it, and why (:func:`pqlab.core.errors.warn`); returns the sentences said."""
    said = []
    for item in [items] if isinstance(items, str) else items:
        name, at, _ = str(item).partition("@") if isinstance(item, str) else ("", "@", "")
        found = backends_of(name) if name and not at else []
        if len(found) < 2 or name in _ANNOUNCED:
            continue
        _ANNOUNCED.add(name)
        order = ([b for b in BACKEND_PREFERENCE if b in found]
                 + [b for b in found if b not in BACKEND_PREFERENCE])
        said.append(f"{name} runs on {found[0]}, the first of pqlab's backend order ({', '.join(order)}) "
                    f"that implements it (liboqs first for post-quantum algorithms, OpenSSL through "
                    f"cryptography for classical ones); name another to measure it there, e.g. "
                    f"'{name}@{found[1]}'")
        warn(said[-1])
    return said


def resolve(items: Iterable) -> list[Algorithm]:
    """Algorithms from names, "NAME@backend" strings, (name, backend) pairs or adapters (one name or adapter
    may be given alone: a str is never read letter by letter)."""
    out = []
    for item in [items] if isinstance(items, (str, Algorithm)) else items:
        if isinstance(item, Algorithm):
            out.append(item)
        elif isinstance(item, tuple):
            out.append(get(*item))
        else:
            name, _, backend = str(item).partition("@")
            out.append(get(name, backend or None))
    return out


def implementations(names: Iterable[str], backends: Iterable[str] | None = None) -> list[str]:
    """"NAME@backend" for every backend of `backends` that implements each name (every implementation when
    None: :func:`backends_of`); a name none of them implements gets its preferred backend.  An unknown backend
    is refused with close matches (:func:`known_backends`)."""

    _load_backends()
    wanted = list(backends) if backends is not None else None
    for b in wanted or []:
        choice(b, "backend", known_backends())
    out = []
    for name in names:
        name = get(name).name  # an unknown name raises, with close matches; a stand-in goes by its own name
        found = _backends_of(name)
        chosen = (_distinct(found) if wanted is None else [b for b in found if b in wanted]) or found[:1]
        out += [f"{name}@{b}" for b in chosen]
    return out


def catalogue() -> pandas.DataFrame:  # noqa: F821
    """Every registered (algorithm, backend) with its metadata, as a table."""
    import pandas as pd

    _load_backends()
    rows = [_instance(n, b).describe() for (n, b) in sorted(_REGISTRY)]
    return pd.DataFrame(rows).astype({"nist_level": "Int64"})


def random_message(n: int, seed: int | str | None = None) -> bytes:
    """`n` random bytes (reproducible when `seed` is given)."""
    if seed is None:
        return os.urandom(n)

    return random.Random(seed).randbytes(n)
