"""What every adapter is: an :class:`Algorithm` with a uniform interface and metadata, registered by name.

Four kinds of algorithm share one shape.  An adapter generates keys and hands out *bound*
callables (a signer holding its secret key, an encapsulator holding its public key ...), so
the timed call is the library's own call and nothing else.  :meth:`Algorithm.trial` turns an
operation into a :class:`Trial`: the callable that is timed, and a check run on its output
*outside* the timed region.  The checks cannot be fooled by an adapter that always says yes or
returns a cached result: a key pair must sign and verify *and* reject a tampered signature (KEM:
a tampered ciphertext gives another secret or the implicit-rejection value; encryption: a forged
tag is refused); keygen and encaps must not return the same output twice; signing and encryption
get a new message for every call (:func:`fresh_messages`, made before the clock starts), so a
cached signature or ciphertext fails its check.

=========  =====================  ==================================================
kind       operations             primitives an adapter implements
=========  =====================  ==================================================
sig        keygen, sign, verify   generate() -> (pk, sk); signer(sk); verifier(pk)
kem        keygen, encaps, decaps generate() -> (pk, sk); encapsulator(pk); decapsulator(sk)
pke        keygen, encrypt, ...   generate() -> (pk, sk); encryptor(pk); decryptor(sk)
cipher     keygen, encrypt, ...   generate() -> key; encryptor(key); decryptor(key)
=========  =====================  ==================================================
"""
from __future__ import annotations

import functools
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pqlab.core.errors import UnknownName
from pqlab.core.schema import KIND_OPERATIONS


class UnknownAlgorithm(UnknownName):
    """An algorithm name (or backend) that is not registered; the message lists close matches."""


class VerificationError(AssertionError):
    """An operation's output was wrong: it is reported as failed, never timed as a success."""


@dataclass(frozen=True)
class Trial:
    """One operation ready to time: `run` is timed, `check` runs on its output outside the timer.

    Without `fresh`: ``run()`` and ``check(output)``.  With `fresh` (operations that take a message),
    every call gets a new input made before the clock starts: ``run(x)`` and ``check(output, x)`` for
    each ``x`` of ``fresh(n)`` (:func:`pqlab.measure.timing.measure` feeds them).

    A backend whose calls can run in a loop of their own language also sets `repeat` and `output`:
    ``repeat(n)`` (or ``repeat(batch)``, a batch of ``fresh``) makes a sample's calls there, with one call
    from Python, and ``output(what repeat returned)`` is the last call's output, read after the clock stops,
    where a failed call raises :class:`VerificationError` (pqlab's liboqs backend: a C loop,
    :mod:`pqlab.backends.liboqs`)."""

    run: Callable[..., Any]
    check: Callable[..., None]
    fresh: Callable[[int], list] | None = None
    repeat: Callable[[Any], Any] | None = None
    output: Callable[[Any], Any] | None = None

    def bound(self) -> Trial:
        """This trial on one input, for callers that repeat one call: ``run()`` and ``check(output)``."""
        if self.fresh is None:
            return self
        (x,) = self.fresh(1)
        return Trial(functools.partial(self.run, x), functools.partial(_check_input, self.check, x))


def _check_input(check, x, out) -> None:
    check(out, x)


def fresh_messages(message: bytes) -> Callable[[int], list[bytes]] | None:
    """`n` -> n new messages of `message`'s length that never repeat (a counter in the first 8 bytes,
    the rest of `message` after it); None for an empty message, which has no other."""
    if not message:
        return None
    k = min(8, len(message))
    tail, counter, modulus = message[k:], itertools.count(1), 256 ** k
    return lambda n: [(next(counter) % modulus).to_bytes(k, "little") + tail for _ in range(n)]


def _not_repeated(check: Callable, what: str) -> Callable:
    """`check`, which also refuses the same output twice in a row (a cached key pair or encapsulation)."""
    last: list = []

    def checked(out) -> None:
        _require(not last or out != last[0], f"{what} returned the same output twice: a cached result")
        last[:] = [out]
        check(out)

    return checked


def _require(condition: bool, what: str) -> None:
    if not condition:
        raise VerificationError(what)


#: What a keygen check encrypts where the trial has no message (a key pair is checked by a round trip).
KEYGEN_PROBE = b"pqlab keygen check: sixteen+ bytes"


def _tamper(data: bytes) -> bytes:
    """Flip one bit in the middle: a valid object turned into an invalid one of the same size."""
    if not data:
        return b"\x01"
    i = len(data) // 2
    return data[:i] + bytes([data[i] ^ 0x01]) + data[i + 1:]


def _rejects(call: Callable[[], Any], good: Any) -> bool:
    """True when `call` raises or returns something other than `good` (and not True)."""
    try:
        out = call()
    except Exception:  # noqa: BLE001 - any refusal counts as rejection
        return True
    return out is not True and out != good


@dataclass
class Algorithm:
    """Base adapter. Subclasses set the metadata and implement the primitives of their kind."""

    name: str
    kind: str  # sig | kem | pke | cipher
    family: str
    backend: str
    implementation: str
    library_version: str
    nist_level: int | None = None
    key_encoding: str = "raw"
    notes: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def operations(self) -> tuple[str, ...]:
        return KIND_OPERATIONS[self.kind]

    @property
    def key(self) -> tuple[str, str]:
        return (self.name, self.backend)

    def identity(self) -> dict:
        """What ran, as the columns of a measurement row."""
        return {"backend": self.backend, "implementation": self.implementation,
                "library_version": self.library_version, "build": self.extra.get("build", ""),
                "algorithm": self.name, "kind": self.kind, "family": self.family,
                "nist_level": self.nist_level}

    def describe(self) -> dict:
        return {"algorithm": self.name, "kind": self.kind, "family": self.family,
                "nist_level": self.nist_level, "backend": self.backend, "implementation": self.implementation,
                "library_version": self.library_version, "operations": ",".join(self.operations)}

    # ----- primitives (implemented by backends) -----
    def generate(self):
        raise NotImplementedError

    def signer(self, sk) -> Callable[[bytes], bytes]:
        raise NotImplementedError

    def verifier(self, pk) -> Callable[[bytes, bytes], bool]:
        raise NotImplementedError

    def encapsulator(self, pk) -> Callable[[], tuple[bytes, bytes]]:
        raise NotImplementedError

    def decapsulator(self, sk) -> Callable[[bytes], bytes]:
        raise NotImplementedError

    def encryptor(self, key) -> Callable[[bytes], bytes]:
        raise NotImplementedError

    def decryptor(self, key) -> Callable[[bytes], bytes]:
        raise NotImplementedError

    def key_sizes(self, keys) -> dict:
        """public_key_bytes / secret_key_bytes (or symmetric_key_bytes) of generated keys."""
        pk, sk = keys
        return {"public_key_bytes": len(pk), "secret_key_bytes": len(sk)}

    def declared_sizes(self) -> dict:
        """Sizes the implementation declares (e.g. liboqs's maximum signature length)."""
        return {}

    # ----- operations -----
    def trial(self, operation: str, message: bytes = b"", keys=None, signed: tuple[bytes, bytes] | None = None
              ) -> Trial:
        """The timed callable and the output check for `operation` on `message`; with the algorithm's `keys`
        (from :meth:`generate`: a key pair, a cipher's key) instead of new ones, so that a run measuring every
        operation and size of an algorithm generates its keys once (an RSA key costs more than the operations
        measured with it).  keygen makes its own keys.  `signed`: verify this (message, signature) made with
        `keys` (checked here too) instead of signing `message` first: a SPHINCS+ s-set signature costs a
        second or so."""
        if operation not in self.operations:
            raise ValueError(f"{self.name} ({self.kind}) has no operation {operation!r}; "
                             f"choose from {', '.join(self.operations)}")
        if signed is not None:
            if self.kind != "sig" or operation != "verify" or keys is None:
                raise ValueError("signed= is a signature to verify: for verify of a signature scheme, with "
                                 "its keys")
            return self._trial_sig(operation, signed[0], keys, signed[1])
        return getattr(self, f"_trial_{self.kind}")(operation, message, keys)

    def _trial_sig(self, operation: str, message: bytes, keys=None, signature: bytes | None = None) -> Trial:
        def checker(verify):
            def check_signature(sig: bytes, msg: bytes = message) -> None:
                _require(verify(msg, sig) is True, "signature does not verify")
                _require(_rejects(lambda: verify(msg, _tamper(sig)), None),
                         "a tampered signature was accepted")
                _require(_rejects(lambda: verify(_tamper(msg), sig), None), "a tampered message was accepted")
            return check_signature

        def check_pair(keys) -> None:
            pk, sk = keys
            checker(self.verifier(pk))(self.signer(sk)(message))

        if operation == "keygen":
            return Trial(self.generate, _not_repeated(check_pair, "keygen"))
        pk, sk = keys if keys is not None else self.generate()
        sign, verify = self.signer(sk), self.verifier(pk)
        check_signature = checker(verify)
        if operation == "sign":
            fresh = fresh_messages(message)
            return Trial(sign, check_signature, fresh) if fresh else Trial(functools.partial(sign, message),
                                                                            check_signature)
        sig = sign(message) if signature is None else signature
        check_signature(sig)

        def check_verdict(ok) -> None:
            _require(ok is True, f"verify returned {ok!r} for a valid signature")
            _require(_rejects(lambda: verify(message, _tamper(sig)), None),
                     "a tampered signature was accepted")

        return Trial(functools.partial(verify, message, sig), check_verdict)

    def _trial_kem(self, operation: str, message: bytes, keys=None) -> Trial:
        def checker(decaps):
            def check_encaps(out) -> None:
                ct, ss = out
                _require(decaps(ct) == ss, "decapsulation does not give the encapsulated secret")
                _require(_rejects(lambda: decaps(_tamper(ct)), ss),
                         "a tampered ciphertext gave the same secret")
            return check_encaps

        def check_pair(keys) -> None:
            pk, sk = keys
            checker(self.decapsulator(sk))(self.encapsulator(pk)())

        if operation == "keygen":
            return Trial(self.generate, _not_repeated(check_pair, "keygen"))
        pk, sk = keys if keys is not None else self.generate()
        encaps, decaps = self.encapsulator(pk), self.decapsulator(sk)
        if operation == "encaps":
            return Trial(encaps, _not_repeated(checker(decaps), "encaps"))
        ct, ss = encaps()
        checker(decaps)((ct, ss))

        def check_decaps(secret: bytes) -> None:
            _require(secret == ss, "decapsulated secret differs from the encapsulated one")
            _require(_rejects(lambda: decaps(_tamper(ct)), ss), "a tampered ciphertext gave the same secret")

        return Trial(functools.partial(decaps, ct), check_decaps)

    def _trial_pke(self, operation: str, message: bytes, keys=None) -> Trial:
        return self._trial_encryption(operation, message, lambda keys: (self.encryptor(keys[0]),
                                                                        self.decryptor(keys[1])), keys)

    def _trial_cipher(self, operation: str, message: bytes, keys=None) -> Trial:
        return self._trial_encryption(operation, message,
                                      lambda key: (self.encryptor(key), self.decryptor(key)), keys)

    def _trial_encryption(self, operation, message, bind, keys=None) -> Trial:
        def checker(decrypt):
            def check_ciphertext(ct: bytes, msg: bytes = message) -> None:
                try:
                    plain = decrypt(ct)
                except Exception as exc:  # noqa: BLE001 - an undecryptable ciphertext is a wrong output
                    raise VerificationError(f"the ciphertext does not decrypt: {type(exc).__name__}: "
                                            f"{exc}") from exc
                _require(plain == msg, "decryption does not return the plaintext")
                _require(_rejects(lambda: decrypt(_tamper(ct)), msg),
                         "a tampered ciphertext decrypted to the plaintext")
            return check_ciphertext

        def check_keys(keys) -> None:
            # never the empty message: RSA PKCS#1 v1.5 decryption with implicit rejection (OpenSSL 3.2+) turns
            # a tampered ciphertext into a synthetic message, which is empty about once in 245 tries
            probe = message or KEYGEN_PROBE
            encrypt, decrypt = bind(keys)
            checker(decrypt)(encrypt(probe), probe)

        if operation == "keygen":
            return Trial(self.generate, _not_repeated(check_keys, "keygen"))
        encrypt, decrypt = bind(keys if keys is not None else self.generate())
        check_ciphertext = checker(decrypt)
        if operation == "encrypt":
            fresh = fresh_messages(message)
            return (Trial(encrypt, check_ciphertext, fresh) if fresh
                    else Trial(functools.partial(encrypt, message), check_ciphertext))
        ct = encrypt(message)
        check_ciphertext(ct)

        def check_plaintext(out: bytes) -> None:
            _require(out == message, "decryption does not return the plaintext")

        return Trial(functools.partial(decrypt, ct), check_plaintext)

    def sizes(self, message: bytes = b"\x00" * 100, keys=None, signature: bytes | None = None) -> dict:
        """Every size in bytes, observed on real outputs (and declared maxima where given), with `keys` or new
        ones; `signature`: one already made with `keys` on a message of `message`'s length (a signature
        scheme: not signed again)."""
        row = {"algorithm": self.name, "backend": self.backend, "family": self.family,
               "nist_level": self.nist_level, "key_encoding": self.key_encoding}
        keys = keys if keys is not None else self.generate()
        if self.kind == "cipher":
            row["symmetric_key_bytes"] = len(keys)
            row["ciphertext_bytes"] = len(self.encryptor(keys)(message))
            row.update(self.declared_sizes())
            return row
        row.update(self.key_sizes(keys))
        pk, sk = keys
        if self.kind == "sig":
            signature = self.signer(sk)(message) if signature is None else signature
            row["signature_bytes"] = row["signature_max_bytes"] = len(signature)
        elif self.kind == "kem":
            ct, ss = self.encapsulator(pk)()
            row["ciphertext_bytes"], row["shared_secret_bytes"] = len(ct), len(ss)
        else:
            row["ciphertext_bytes"] = len(self.encryptor(pk)(message))
        row.update(self.declared_sizes())  # a declared maximum replaces the observed length there
        return row


class Noop(Algorithm):
    """A do-nothing operation through the same path: what the harness itself costs.  Its trial takes
    `message` as sign takes it: bound to the call, or (`fed`) a fresh one fed to every call."""

    def __init__(self) -> None:
        super().__init__("noop", "cipher", "symmetric", "pqlab", "harness overhead: a call of a no-op", "")

    def trial(self, operation: str = "noop", message: bytes = b"", fed: bool = False) -> Trial:
        if fed:
            return Trial(_noop, lambda out, x: None, fresh_messages(message or b"\x00"))
        return Trial(functools.partial(_noop, message), lambda out: None)

    def identity(self) -> dict:
        return dict(super().identity(), kind="noop")


def _noop(message: bytes) -> None:
    return None


# ----- the registry every adapter registers into (looked up by pqlab.backends.algorithms) -----
_REGISTRY: dict[tuple[str, str], Callable[[], Algorithm]] = {}


def register(name: str, backend: str, factory: Callable[[], Algorithm]) -> None:
    """`factory` makes the adapter of `name` in `backend` (called by a backend module's ``register_all``)."""
    _REGISTRY[(name, backend)] = factory
