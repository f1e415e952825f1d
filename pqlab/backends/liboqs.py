"""Every signature and KEM enabled in liboqs, twice: backend ``liboqs`` times liboqs through pqlab's lean
path, backend ``liboqs-python`` through liboqs-python, the binding a user calls.

The lean path calls liboqs's C API directly: objects made once (``OQS_KEM_new``), buffers allocated once,
foreign functions with their argument types set, and a sample's calls made by a C loop
(``pqlab/backends/lean_loops.c``) with one call from Python per sample, so a microsecond operation is not
measured with the binding's cost on top.  The ``liboqs-python`` rows are the same library through
``oqs.KeyEncapsulation`` and ``oqs.Signature`` as a user writes them; the difference between the two is what
the binding costs (``python -m pqlab fidelity``).  Both check every output the same way
(:class:`pqlab.backends.algorithms.Algorithm`), outside the timed region.
"""
from __future__ import annotations

import array
import ctypes
import dataclasses
import functools
import weakref
from pathlib import Path

from pqlab.backends.base import Algorithm, Trial, VerificationError, register
from pqlab.core.errors import warn
from pqlab.core.vocabulary import family_of
from pqlab.liboqs.loader import import_oqs, liboqs_info
from pqlab.measure.cycles import compile_helper, load_helper

LEAN, BINDING = "liboqs", "liboqs-python"
_SOURCE = Path(__file__).with_name("lean_loops.c")
_LOOPS = ("pqlab_keypair", "pqlab_encaps", "pqlab_decaps", "pqlab_sign", "pqlab_verify", "pqlab_noop",
          "pqlab_decaps_each")
_P, _B, _N, _L = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_long
#: liboqs's C API as pqlab calls it: name -> (result, argument types); the same from liboqs 0.9 to 0.16
_API = {
    "OQS_KEM_new": (_P, [_B]), "OQS_KEM_free": (None, [_P]), "OQS_SIG_new": (_P, [_B]),
    "OQS_SIG_free": (None, [_P]),
    "OQS_KEM_keypair": (ctypes.c_int, [_P, _P, _P]), "OQS_SIG_keypair": (ctypes.c_int, [_P, _P, _P]),
    "OQS_KEM_encaps": (ctypes.c_int, [_P, _P, _P, _P]), "OQS_KEM_decaps": (ctypes.c_int, [_P, _P, _B, _P]),
    "OQS_SIG_sign": (ctypes.c_int, [_P, _P, ctypes.POINTER(_N), _B, _N, _P]),
    "OQS_SIG_verify": (ctypes.c_int, [_P, _B, _N, _B, _N, _P]),
}


@functools.lru_cache(maxsize=1)
def _info() -> tuple[str, str, str]:
    """The loaded liboqs: its release, options and build id."""

    info = liboqs_info()
    return info["liboqs_version"], info["options"], info["build"]


@functools.lru_cache(maxsize=1)
def _c() -> tuple[dict, ctypes.CDLL]:
    """liboqs's functions (new foreign-function objects: liboqs-python's own keep their settings) with their
    addresses, and pqlab's compiled loops (built on first use into pqlab's cache, like the TSC helper)."""

    native = import_oqs().oqs.native()
    api = {}
    for name, (restype, argtypes) in _API.items():
        fn = ctypes.CFUNCTYPE(restype, *argtypes)((name, native))
        api[name] = (fn, ctypes.cast(fn, _P).value)
    loops = load_helper(compile_helper([_SOURCE], "lean_loops", "pqlab's lean liboqs loops"), _LOOPS,
                        "pqlab's lean liboqs loops")
    for name in _LOOPS:
        getattr(loops, name).restype = _L
    loops.pqlab_keypair.argtypes = [_P, _P, _P, _P, _L]
    loops.pqlab_encaps.argtypes = [_P, _P, _P, _P, _P, _L]
    loops.pqlab_decaps.argtypes = [_P, _P, _P, _P, _P, _L]
    loops.pqlab_sign.argtypes = [_P, _P, _P, _P, _P, _N, _L, _P, _L]
    loops.pqlab_verify.argtypes = [_P, _P, _P, _N, _P, _N, _P, _L]
    loops.pqlab_noop.argtypes = [_L]
    loops.pqlab_decaps_each.argtypes = [_P, _P, _P, _P, _N, _P, _N, _P, _N, _P, _P, _L, _P]
    return api, loops


def lean_noop_trial():
    """The lean path's no-op: a function that does nothing, called in the same C loop (what the path itself
    costs per call: the harness's no-op of the ``liboqs`` rows)."""

    noop = _c()[1].pqlab_noop
    return Trial(functools.partial(noop, 1), lambda out: None, repeat=noop, output=lambda failures: None)


class _Batch(list):
    """A sample's fresh messages, and the same bytes laid end to end in a buffer for the C loop (made before
    the clock starts)."""

    def __init__(self, messages) -> None:
        super().__init__(messages)
        self.buffer, self.address = _buffer(b"".join(self))


def _buffer(data: bytes | int):
    """A buffer holding `data` (or `n` zero bytes: a writable one), and its address."""
    buf = (ctypes.create_string_buffer(data, len(data)) if isinstance(data, bytes)
           else ctypes.create_string_buffer(data))
    return buf, ctypes.addressof(buf)


def _checked(what: str, value):
    """`value` (a loop's output) where no call failed; the failures counted by the loop raise, outside the
    timer."""
    def output(failures):
        if failures:
            raise VerificationError(f"{what}: {failures} calls did not return OQS_SUCCESS")
        return value()
    return output


def _object(kind: str, name: str) -> int:
    """A liboqs KEM or signature object (``OQS_<kind>_new``), freed when nothing refers to the adapter."""
    api = _c()[0]
    obj = api[f"OQS_{kind}_new"][0](name.encode())
    if not obj:
        raise ValueError(f"liboqs {_info()[0]} has no {kind} named {name!r}")
    return obj


# --------------------------------------------------------------------------- the lean path
# Each operation is an object: ``__call__`` makes one call (warm-up, checks, callers outside the timer) and
# ``loop(*args)`` gives (repeat, output) for pqlab.measure.timing.measure: `repeat` is the C loop with every
# argument but the count bound (a buffer's address, a length), so that a sample costs one ctypes call of plain
# integers.


class _Lean:
    def loop(self, *args):
        raise NotImplementedError


class _Keypair(_Lean):
    def __init__(self, kind: str, obj: int, pk_len: int, sk_len: int) -> None:
        self.kind, self.obj = kind, obj
        (self.pk, self.pk_at), (self.sk, self.sk_at) = _buffer(pk_len), _buffer(sk_len)

    def __call__(self):
        done = _c()[0][f"OQS_{self.kind}_keypair"][0](self.obj, self.pk_at, self.sk_at) != 0
        return self.output(done)

    def output(self, failures):
        return _checked("keygen", lambda: (self.pk.raw, self.sk.raw))(failures)

    def loop(self):
        api, loops = _c()
        return (functools.partial(loops.pqlab_keypair, api[f"OQS_{self.kind}_keypair"][1], self.obj,
                                  self.pk_at, self.sk_at), self.output)


class _Encaps(_Lean):
    def __init__(self, obj: int, pk: bytes, ct_len: int, ss_len: int) -> None:
        self.obj = obj
        (self.pk, self.pk_at), (self.ct, self.ct_at), (self.ss, self.ss_at) = (
            _buffer(bytes(pk)), _buffer(ct_len), _buffer(ss_len))

    def __call__(self):
        return self.output(_c()[0]["OQS_KEM_encaps"][0](self.obj, self.ct_at, self.ss_at, self.pk_at) != 0)

    def output(self, failures):
        return _checked("encaps", lambda: (self.ct.raw, self.ss.raw))(failures)

    def loop(self):
        api, loops = _c()
        return (functools.partial(loops.pqlab_encaps, api["OQS_KEM_encaps"][1], self.obj, self.ct_at,
                                  self.ss_at, self.pk_at), self.output)


def _exact(data: bytes, length: int, what: str) -> bytes:
    """`data` when it is `length` bytes; else one line: liboqs's C reads a fixed length, past a short buffer's
    end."""
    if len(data) != length:
        raise ValueError(f"a {what} of this algorithm is {length} bytes, not {len(data)}")
    return bytes(data)


class _Decaps(_Lean):
    def __init__(self, obj: int, sk: bytes, ss_len: int, ct_len: int) -> None:
        self.obj, self.ct_len = obj, ct_len
        (self.sk, self.sk_at), (self.ss, self.ss_at) = _buffer(bytes(sk)), _buffer(ss_len)

    def __call__(self, ct: bytes) -> bytes:
        ct = _exact(ct, self.ct_len, "ciphertext")
        return self.output(_c()[0]["OQS_KEM_decaps"][0](self.obj, self.ss_at, ct, self.sk_at) != 0)

    def output(self, failures):
        return _checked("decaps", lambda: self.ss.raw)(failures)

    def loop(self, ct: bytes):
        api, loops = _c()
        # the buffer kept with this object while its loop runs
        self.ct, ct_at = _buffer(_exact(ct, self.ct_len, "ciphertext"))
        return (functools.partial(loops.pqlab_decaps, api["OQS_KEM_decaps"][1], self.obj, self.ss_at, ct_at,
                                  self.sk_at), self.output)


class _Sign(_Lean):
    def __init__(self, obj: int, sk: bytes, sig_len: int) -> None:
        self.obj = obj
        (self.sk, self.sk_at), (self.sig, self.sig_at) = _buffer(bytes(sk)), _buffer(sig_len)
        self.length = ctypes.c_size_t(sig_len)
        self.length_at = ctypes.addressof(self.length)

    def __call__(self, message: bytes) -> bytes:
        message = bytes(message)
        fn = _c()[0]["OQS_SIG_sign"][0]
        return self.output(fn(self.obj, self.sig_at, ctypes.byref(self.length), message, len(message),
                              self.sk_at) != 0)

    def output(self, failures):
        return _checked("sign", lambda: ctypes.string_at(self.sig_at, self.length.value))(failures)

    def loop(self, message: bytes | None = None):
        """The loop over one `message`, or (``repeat(batch)``) over a sample's fresh ones
        (:class:`_Batch`)."""
        api, loops = _c()
        bound = functools.partial(loops.pqlab_sign, api["OQS_SIG_sign"][1], self.obj, self.sig_at,
                                  self.length_at)
        if message is not None:
            self.message, at = _buffer(bytes(message))
            return functools.partial(bound, at, len(message), 0, self.sk_at), self.output
        sk_at = self.sk_at
        return (lambda batch: bound(batch.address, len(batch[0]), 1, sk_at, len(batch))), self.output


class _Verify(_Lean):
    def __init__(self, obj: int, pk: bytes) -> None:
        self.obj = obj
        self.pk, self.pk_at = _buffer(bytes(pk))

    def __call__(self, message: bytes, signature: bytes) -> bool:
        message, signature = bytes(message), bytes(signature)
        fn = _c()[0]["OQS_SIG_verify"][0]
        return fn(self.obj, message, len(message), signature, len(signature), self.pk_at) == 0

    def loop(self, message: bytes, signature: bytes):
        api, loops = _c()
        (self.message, m_at), (self.signature, s_at) = _buffer(bytes(message)), _buffer(bytes(signature))
        return (functools.partial(loops.pqlab_verify, api["OQS_SIG_verify"][1], self.obj, m_at, len(message),
                                  s_at, len(signature), self.pk_at),
                lambda failures: failures == 0)  # a rejected valid signature: False, which the check refuses


def _with_loop(trial):
    """`trial` with the C loop of its timed call (:class:`pqlab.backends.algorithms.Trial` ``repeat`` and
    ``output``)."""

    run = trial.run
    func, args = (run.func, run.args) if isinstance(run, functools.partial) else (run, ())
    if not isinstance(func, _Lean):
        return trial
    repeat, output = func.loop(*args)
    fresh = trial.fresh and (lambda n, fresh=trial.fresh: _Batch(fresh(n)))
    return dataclasses.replace(trial, repeat=repeat, output=output, fresh=fresh)


class _LeanMixin:
    """The lean path: a liboqs object of its own (``_KIND``: KEM or SIG), freed with the adapter; the key pair
    as a lean operation; the base class's trials, with the C loop."""

    _KIND = ""

    def __init__(self, name: str) -> None:
        super().__init__(name, LEAN)
        self._obj = _object(self._KIND, self.name)
        weakref.finalize(self, _c()[0][f"OQS_{self._KIND}_free"][0], self._obj)
        d = self.extra["details"]
        self.generate = _Keypair(self._KIND, self._obj, d["length_public_key"],
                                 d["length_secret_key"])  # and its loop

    def trial(self, operation, message=b"", keys=None, signed=None):
        return _with_loop(super().trial(operation, message, keys, signed))


# --------------------------------------------------------------------------- the adapters


def _describe(name: str, kind: str, backend: str):
    """(details, the implementation's name) of `name` in the loaded liboqs, through `backend`."""
    oqs = import_oqs()
    with (oqs.Signature(name) if kind == "sig" else oqs.KeyEncapsulation(name)) as probe:
        details = probe.details
    version, options, _ = _info()
    through = f" through liboqs-python {oqs.oqs_python_version()}" if backend == BINDING else ""
    return details, f"liboqs {version} ({options} build){through}"


class OqsSignature(Algorithm):
    """A liboqs signature through liboqs-python (backend ``liboqs-python``)."""

    def __init__(self, name: str, backend: str = BINDING) -> None:
        details, implementation = _describe(name, "sig", backend)
        version, _, build = _info()
        super().__init__(name, "sig", family_of(name), backend, implementation, version,
                         details.get("claimed_nist_level"),
                         extra={"build": build, "max_signature_bytes": details["length_signature"],
                                "euf_cma": details.get("is_euf_cma"), "details": details})
        self._oqs = import_oqs()

    def generate(self):
        with self._oqs.Signature(self.name) as s:
            pk = s.generate_keypair()
            return pk, s.export_secret_key()

    def signer(self, sk):
        return self._oqs.Signature(self.name, sk).sign

    def verifier(self, pk):
        return functools.partial(_oqs_verify, self._oqs.Signature(self.name), pk)

    def declared_sizes(self) -> dict:
        return {"signature_max_bytes": self.extra["max_signature_bytes"]}


def _oqs_verify(sig_obj, pk: bytes, message: bytes, signature: bytes) -> bool:
    return sig_obj.verify(message, signature, pk)


class LeanSignature(_LeanMixin, OqsSignature):
    """A liboqs signature through pqlab's lean path (backend ``liboqs``)."""

    _KIND = "SIG"

    def signer(self, sk):
        return _Sign(self._obj, _exact(sk, self.extra["details"]["length_secret_key"], "secret key"),
                     self.extra["max_signature_bytes"])

    def verifier(self, pk):
        return _Verify(self._obj, _exact(pk, self.extra["details"]["length_public_key"], "public key"))


class OqsKem(Algorithm):
    """A liboqs KEM through liboqs-python (backend ``liboqs-python``)."""

    def __init__(self, name: str, backend: str = BINDING) -> None:
        details, implementation = _describe(name, "kem", backend)
        version, _, build = _info()
        super().__init__(name, "kem", family_of(name), backend, implementation, version,
                         details.get("claimed_nist_level"), extra={"build": build, "details": details})
        self._oqs = import_oqs()

    def generate(self):
        with self._oqs.KeyEncapsulation(self.name) as k:
            pk = k.generate_keypair()
            return pk, k.export_secret_key()

    def encapsulator(self, pk):
        return functools.partial(self._oqs.KeyEncapsulation(self.name).encap_secret, pk)

    def decapsulator(self, sk):
        return self._oqs.KeyEncapsulation(self.name, sk).decap_secret


class LeanKem(_LeanMixin, OqsKem):
    """A liboqs KEM through pqlab's lean path (backend ``liboqs``)."""

    _KIND = "KEM"

    def encapsulator(self, pk):
        d = self.extra["details"]
        return _Encaps(self._obj, _exact(pk, d["length_public_key"], "public key"), d["length_ciphertext"],
                       d["length_shared_secret"])

    def decapsulator(self, sk):
        d = self.extra["details"]
        return _Decaps(self._obj, _exact(sk, d["length_secret_key"], "secret key"), d["length_shared_secret"],
                       d["length_ciphertext"])


def register_all() -> None:
    """Both backends; only ``liboqs-python`` where pqlab's C loop cannot be compiled here (no C compiler),
    which is said once, so that a bare name then means liboqs through its binding, as the rows say."""
    oqs = import_oqs()
    try:
        _c()
        lean = True
    except OSError as exc:

        warn(f"pqlab's C loop into liboqs cannot be built here ({exc}): liboqs is measured through "
             "liboqs-python only (backend liboqs-python)")
        lean = False
    for name in oqs.get_enabled_sig_mechanisms():
        if lean:
            register(name, LEAN, functools.partial(LeanSignature, name))
        register(name, BINDING, functools.partial(OqsSignature, name))
    for name in oqs.get_enabled_kem_mechanisms():
        if lean:
            register(name, LEAN, functools.partial(LeanKem, name))
        register(name, BINDING, functools.partial(OqsKem, name))


def decaps_each(name: str, sk: bytes, cts: list[bytes], calls, failures: int = 0
                ) -> tuple[bytes, list[int]]:
    """Decapsulate ``cts[calls[i]]`` for every i in one C loop (``pqlab_decaps_each``), each call timed on its
    own: (the calls' shared secrets end to end, for the caller to check after the loop; each call's
    nanoseconds).  The timing screen's loop (:mod:`pqlab.runners.leakage`); unless exactly `failures` calls
    do not return OQS_SUCCESS (a KEM that rejects an invalid ciphertext with an error status, as liboqs 0.13's
    HQC does: the calls on those classes), it raises.  Equal ciphertexts share one copy, and each distinct one
    starts a page of its own (``_PAGE``)."""

    api, loops = _c()
    obj = _object("KEM", name)
    try:
        with import_oqs().KeyEncapsulation(name) as probe:
            d = probe.details
        ct_len, ss_len, n = d["length_ciphertext"], d["length_shared_secret"], len(calls)
        distinct = list(dict.fromkeys(_exact(c, ct_len, "ciphertext") for c in cts))
        slot = [distinct.index(bytes(c)) for c in cts]
        stride = -(-ct_len // _PAGE) * _PAGE
        raw = ctypes.create_string_buffer(stride * len(distinct) + _PAGE)
        base = -ctypes.addressof(raw) % _PAGE  # the first page boundary inside the buffer
        for i, c in enumerate(distinct):
            ctypes.memmove(ctypes.addressof(raw) + base + i * stride, c, ct_len)
        (_sk, sk_at) = _buffer(_exact(sk, d["length_secret_key"], "secret key"))
        (ss, ss_at), (_out, out_at), (_ct, ct_at) = _buffer(n * ss_len), _buffer(ss_len), _buffer(ct_len)
        order, ns = array.array("i", [slot[c] for c in calls]), array.array("Q", bytes(8 * n))
        failed = loops.pqlab_decaps_each(api["OQS_KEM_decaps"][1], obj, ss_at, out_at, ss_len,
                                         ctypes.addressof(raw) + base, stride, ct_at, ct_len, sk_at,
                                         order.buffer_info()[0], n, ns.buffer_info()[0])
    finally:
        api["OQS_KEM_free"][0](obj)
    if failed != failures:
        raise VerificationError(f"decaps: {failed} calls did not return OQS_SUCCESS, where {failures} should "
                                "have (the calls on classes that return an error status)")
    return ss.raw, ns.tolist()


_PAGE = 4096
