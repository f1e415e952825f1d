"""Every implementation of a standard checked against every other before anything is timed.

For a KEM, each implementation makes a key pair; every implementation (itself included) encapsulates to its
public key, and the key's owner must decapsulate each ciphertext to the same shared secret; a ciphertext with
its first byte flipped must give another secret (ML-KEM's implicit rejection; Diffie-Hellman "KEMs" have no
such check).  For a signature, each implementation signs a message, and every implementation must accept the
signature and refuse it with one byte flipped, and refuse it for another message.  Public keys, ciphertexts
and signatures cross in the standard encodings of ``native/PROTOCOL.md``; secret keys never leave their
implementation.

Who is to blame when two disagree: an implementation fails an algorithm when it fails with itself, or with
more than half of the others; :func:`excluded` names each with the failed checks, and
:func:`pqlab.runners.impls.measure` leaves them out.  Nothing fails silently.

    participants = participants_for(algorithms)      # runners' serve sessions and pqlab's Python backends
    checks = cross_check(algorithms, participants)   # one row per (algorithm, owner, peer, check)
    excluded(checks)                                 # {"implementation/algorithm": why}
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence

import pandas as pd

from pqlab.backends import algorithms as registry
from pqlab.checks.interop import _public_for
from pqlab.core.vocabulary import find
from pqlab.runners import impls

#: The message every signature check signs (fixed: the check is repeatable).
MESSAGE = b"pqlab cross-check: one message, signed by one implementation, verified by every other"
#: The checks, by kind.
CHECKS = {"kem": ("shared secret agrees", "tampered ciphertext changes the secret"),
          "sig": ("signature verifies", "tampered signature refused", "other message refused")}


def _flip(data: bytes, at: int = 0) -> bytes:
    return data[:at] + bytes([data[at] ^ 0x01]) + data[at + 1:]


class Participant:
    """One implementation, as the checks see it: ``keygen(alg) -> (handle, public key)``, ``encaps``,
    ``decaps(alg, handle, ct)``, ``sign(alg, handle, msg)``, ``verify(alg, pk, msg, sig) -> bool``."""

    name: str
    language: str
    #: a slow implementation (the interpreter does the arithmetic): the known-answer tests run fewer of its
    #: vectors
    slow = False

    def has(self, alg) -> bool:
        """Whether it implements `alg` (:func:`has`)."""
        return has(self, alg)

    def seeded(self, alg) -> tuple[str, ...]:
        """The operations of `alg` whose randomness a caller may give (:func:`seeded`)."""
        return seeded(self, alg)

    def imports(self, alg) -> bool:
        """Whether :meth:`import_private` takes a given secret key of `alg` (the vectors that come with
        one)."""
        return False

    def seals(self, alg) -> bool:
        """Whether :meth:`seal` and :meth:`unseal` take a given key and IV of the cipher `alg`."""
        return False


class RunnerParticipant(Participant):
    """An implementation in a program of native/impls, through its ``serve`` session."""

    def __init__(self, session: impls.Session, implementation: str) -> None:
        self.session, self.name, self.language = session, implementation, session.program.language

    def keygen(self, alg, seed=None):
        return self.session.keygen(self.name, alg, seed)

    def encaps(self, alg, public_key, seed=None):
        return self.session.encaps(self.name, alg, public_key, seed)

    def decaps(self, alg, handle, ciphertext):
        return self.session.decaps(self.name, alg, handle, ciphertext)

    def sign(self, alg, handle, message, deterministic=None):
        return self.session.sign(self.name, alg, handle, message, deterministic)

    def verify(self, alg, public_key, message, signature):
        return self.session.verify(self.name, alg, public_key, message, signature)


class PythonParticipant(Participant):
    """A backend of pqlab's own harness (an adapter of :mod:`pqlab.backends.algorithms`), its keys turned into
    and read from the standard encodings."""

    language = "Python"

    def __init__(self, backend: str, name: str | None = None) -> None:
        self.backend, self.name, self._keys = backend, name or backend, {}

    def _algo(self, alg):
        return registry.get(alg, self.backend)

    def keygen(self, alg, seed=None):
        if seed is None:
            pk, sk = self._algo(alg).generate()
        elif "keygen" in self.seeded(alg):  # cryptography's ML-KEM and ML-DSA keys from their FIPS seeds
            sk = self._algo(alg).from_seed(seed)
            pk = sk.public_key()
        else:
            raise impls.ImplementationError(f"{alg} in {self.name}: seeded key generation is not in its "
                                            "adapter")
        handle = f"k{len(self._keys) + 1}"
        self._keys[handle] = sk
        return handle, standard_public(pk)

    def seeded(self, alg) -> tuple[str, ...]:
        """The operations whose randomness this adapter lets a caller give: key generation from the FIPS seed
        where the adapter has ``from_seed`` (cryptography's ML-KEM and ML-DSA)."""
        return ("keygen",) if hasattr(self._algo(alg), "from_seed") else ()

    def encaps(self, alg, public_key, seed=None):
        if seed is not None:
            raise impls.ImplementationError(f"{alg} in {self.name}: seeded encapsulation is not in its "
                                            "adapter")
        return self._algo(alg).encapsulator(own_public(self._algo(alg), public_key))()

    def decaps(self, alg, handle, ciphertext):
        return self._algo(alg).decapsulator(self._keys[handle])(ciphertext)

    def sign(self, alg, handle, message, deterministic=None):
        return self._algo(alg).signer(self._keys[handle])(message)

    def verify(self, alg, public_key, message, signature):
        algo = self._algo(alg)
        try:
            return algo.verifier(own_public(algo, public_key))(message, signature) is True
        except Exception:  # noqa: BLE001 - a malformed key or signature is a refusal
            return False

    @property
    def slow(self) -> bool:

        return getattr(find(self.backend), "language", "") == "pure Python"

    def imports(self, alg) -> bool:
        algo = self._algo(alg)
        return algo.kind in ("kem", "pke") and not (algo.backend == "cryptography"
                                                    and alg.startswith("ML-KEM"))

    def import_private(self, alg, private: bytes) -> str:
        """A handle to a given secret key in its standard encoding (:func:`own_private`), for ``decaps`` (a
        Diffie-Hellman KEM: the exchange with a given public key) and ``decrypt``."""
        handle = f"k{len(self._keys) + 1}"
        self._keys[handle] = own_private(self._algo(alg), private)
        return handle

    def decrypt(self, alg, handle, ciphertext):
        """The adapter's decryption (public-key encryption) under a key of :meth:`import_private`."""
        return self._algo(alg).decryptor(self._keys[handle])(ciphertext)

    def seals(self, alg) -> bool:
        return hasattr(self._algo(alg), "sealer")

    def seal(self, alg, key: bytes, iv: bytes, aad: bytes, message: bytes) -> bytes:
        """`message` encrypted under a given key and IV with associated data `aad`, through the adapter's
        library (the adapter draws its IV at random): ciphertext ‖ tag (AES-CBC: the padded ciphertext)."""
        return self._algo(alg).sealer(key, iv, aad)[0](message)

    def unseal(self, alg, key: bytes, iv: bytes, aad: bytes, sealed: bytes) -> bytes:
        """The plaintext of ciphertext ‖ tag under a given key and IV; raises on a wrong tag or padding.
        Through the adapter's own decryptor (its framing: IV ‖ ciphertext ‖ tag) where there is no associated
        data, which the adapter does not take; else through its library."""
        if not aad:
            return self._algo(alg).decryptor(key)(iv + sealed)
        return self._algo(alg).sealer(key, iv, aad)[1](sealed)


def standard_public(pk) -> bytes:
    """A public key of pqlab's adapters in the standard encoding of native/PROTOCOL.md."""
    if isinstance(pk, (bytes, bytearray)):
        return bytes(pk)
    from cryptography.hazmat.primitives import serialization as s
    from cryptography.hazmat.primitives.asymmetric import ec, rsa

    if isinstance(pk, ec.EllipticCurvePublicKey):
        return pk.public_bytes(s.Encoding.X962, s.PublicFormat.UncompressedPoint)
    if isinstance(pk, rsa.RSAPublicKey):
        return pk.public_bytes(s.Encoding.DER, s.PublicFormat.SubjectPublicKeyInfo)
    if hasattr(pk, "public_bytes_raw"):
        return pk.public_bytes_raw()
    return pk.export_key(format="raw")  # PyCryptodome's ECC key: the uncompressed point


def own_public(algo, raw: bytes):
    """A public key in the standard encoding as `algo`'s adapter takes it: bytes for every backend but
    ``cryptography``, whose signatures and ML-KEM take key objects, and PyCryptodome's ECDSA."""
    if algo.backend == "pycryptodome" and algo.kind == "sig":
        from Crypto.PublicKey import ECC

        return ECC.import_key(raw, curve_name="P-256")
    if algo.backend != "cryptography" or algo.kind == "kem" and not algo.name.startswith("ML-KEM"):
        return raw
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec, mlkem

    if algo.name.startswith("ML-KEM"):
        return getattr(mlkem, algo.cls.replace("PrivateKey", "PublicKey")).from_public_bytes(raw)
    if algo.name.startswith("ECDSA-"):
        curve = ec.SECP256R1() if algo.name == "ECDSA-P256" else ec.SECP384R1()
        return ec.EllipticCurvePublicKey.from_encoded_point(curve, raw)
    if algo.name.startswith("RSA"):
        return serialization.load_der_public_key(raw)

    return _public_for(algo, raw)


def own_private(algo, raw: bytes):
    """A secret key in its standard encoding as `algo`'s adapter takes it
    (:meth:`PythonParticipant.import_private`): X25519's 32 bytes (X448's 56), ECDH-P256's scalar
    (big-endian), RSA's PKCS#8 DER, ML-KEM's FIPS 203 decapsulation key (bytes for liboqs and pqcrypto)."""
    if algo.backend == "pycryptodome" and algo.name.startswith("RSA"):
        from Crypto.PublicKey import RSA

        return RSA.import_key(raw)
    if algo.backend != "cryptography":
        return raw
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec, x448, x25519

    if algo.name == "X25519":
        return x25519.X25519PrivateKey.from_private_bytes(raw)
    if algo.name == "X448":
        return x448.X448PrivateKey.from_private_bytes(raw)
    if algo.name == "ECDH-P256":
        return ec.derive_private_key(int.from_bytes(raw, "big"), ec.SECP256R1())
    if algo.name.startswith("RSA"):
        # the vectors' keys are given, not made: OpenSSL's check of an RSA key (its primes) costs more than
        # all the vectors of a file, and is no part of decryption
        return serialization.load_der_private_key(raw, None, unsafe_skip_rsa_key_validation=True)
    raise impls.ImplementationError(f"{algo.name} in {algo.backend}: the adapter takes no given secret key")


def participants_for(algorithms: Sequence[str], programs: Iterable[str] | None = None,
                     python: Iterable[str] | None = None) -> tuple[dict[str, Participant],
                                                                   list[impls.Session]]:
    """{implementation: participant} for every implementation of any of `algorithms`: the programs'
    (`programs`, default every available one) and pqlab's Python backends (`python`, default every one that
    has one of them; backends measured through another's path are the same code and left out), and the serve
    sessions to close."""
    found, sessions = {}, []
    for name, document in impls.available(programs).items():
        mine = {a["implementation"] for a in document["algorithms"] if a["algorithm"] in algorithms}
        if not mine:
            continue
        session = impls.Session(name)
        sessions.append(session)
        found.update({impl: RunnerParticipant(session, impl) for impl in sorted(mine)})
    backends = python if python is not None else sorted({b for alg in algorithms
                                                         for b in registry.backends_of(alg)
                                                          if alg in registry.names(backend=b)})
    found.update({b: PythonParticipant(b) for b in backends})
    return found, sessions


def _listed(participant: RunnerParticipant, alg: str) -> dict | None:
    """The program's ``list`` entry of `alg` in `participant`'s implementation, None when it has none."""
    document = impls.describe(participant.session.program)
    return next((a for a in document["algorithms"] if a["implementation"] == participant.name
                 and a["algorithm"] == alg), None)


def seeded(participant: Participant, alg: str) -> tuple[str, ...]:
    """The operations of `alg` whose randomness `participant` lets a caller give (the known-answer tests need
    them)."""
    if isinstance(participant, PythonParticipant):
        return participant.seeded(alg)
    return tuple((_listed(participant, alg) or {}).get("seeded", ()))


def has(participant: Participant, alg: str) -> bool:
    """Whether `participant` implements `alg` (for a Python backend, its adapter registry; for a runner, its
    list)."""
    if isinstance(participant, PythonParticipant):
        return alg in registry.names(backend=participant.backend)
    return _listed(participant, alg) is not None


def _attempt(rows: list, base: dict, check: str, test, *args) -> None:
    """One check: ``test(*args)`` -> (passed, detail); a refusal or crash fails it, with its reason."""
    try:
        passed, detail = test(*args)
    except Exception as exc:  # noqa: BLE001
        passed, detail = False, f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    rows.append(dict(base, check=check, passed=bool(passed), detail=detail))


def _agrees(owner, alg, handle, ct, ss):
    return owner.decaps(alg, handle, ct) == ss, f"{len(ct)}-byte ciphertext"


def _rejects_tampered(owner, alg, handle, ct, ss):
    return owner.decaps(alg, handle, _flip(ct)) != ss, ""


def _accepts(peer, alg, pk, message, sig):
    return peer.verify(alg, pk, message, sig), f"{len(sig)}-byte signature"


def _refuses(peer, alg, pk, message, sig):
    return not peer.verify(alg, pk, message, sig), ""


def _kem_checks(alg: str, owner: Participant, peers: list[Participant], rows: list) -> None:
    handle, pk = owner.keygen(alg)
    for peer in peers:
        base = {"algorithm": alg, "owner": owner.name, "peer": peer.name}
        try:
            ct, ss = peer.encaps(alg, pk)
        except Exception as exc:  # noqa: BLE001
            rows.append(dict(base, check=CHECKS["kem"][0], passed=False, detail=f"encaps failed: {exc}"))
            continue
        _attempt(rows, base, CHECKS["kem"][0], _agrees, owner, alg, handle, ct, ss)
        if alg.startswith("ML-KEM"):
            _attempt(rows, base, CHECKS["kem"][1], _rejects_tampered, owner, alg, handle, ct, ss)


def _sig_checks(alg: str, owner: Participant, peers: list[Participant], rows: list) -> None:
    handle, pk = owner.keygen(alg)
    sig = owner.sign(alg, handle, MESSAGE)
    for peer in peers:
        base = {"algorithm": alg, "owner": owner.name, "peer": peer.name}
        _attempt(rows, base, CHECKS["sig"][0], _accepts, peer, alg, pk, MESSAGE, sig)
        _attempt(rows, base, CHECKS["sig"][1], _refuses, peer, alg, pk, MESSAGE, _flip(sig, len(sig) // 2))
        _attempt(rows, base, CHECKS["sig"][2], _refuses, peer, alg, pk, MESSAGE + b"!", sig)


def cross_check(algorithms: Sequence[str], participants: dict[str, Participant]) -> pd.DataFrame:
    """One row per (algorithm, owner, peer, check): ``passed`` and a ``detail``.  Owner: the implementation
    whose key pair it is (it decapsulates, or signs); peer: the one that encapsulates, or verifies."""
    rows: list[dict] = []
    for alg in algorithms:
        mine = [p for p in participants.values() if has(p, alg)]
        kind = "kem" if registry_kind(alg, mine) == "kem" else "sig"
        for owner in mine:
            try:
                (_kem_checks if kind == "kem" else _sig_checks)(alg, owner, mine, rows)
            except Exception as exc:  # noqa: BLE001 - key generation or signing itself failed
                rows.append({"algorithm": alg, "owner": owner.name, "peer": owner.name,
                             "check": "key pair made",
                             "passed": False, "detail": f"{type(exc).__name__}: {str(exc).splitlines()[0]}"})
    return pd.DataFrame(rows, columns=["algorithm", "owner", "peer", "check", "passed", "detail"])


def registry_kind(alg: str, participants: Sequence[Participant]) -> str:
    """"kem" or "sig": the kind the runners' lists or pqlab's registry give `alg`."""
    for p in participants:
        if isinstance(p, RunnerParticipant):
            return _listed(p, alg)["kind"]
    return registry.get(alg, participants[0].backend).kind if participants else "sig"


def excluded(checks: pd.DataFrame) -> dict[str, str]:
    """{"implementation/algorithm": why} for every implementation that fails an algorithm.  Who is wrong is
    decided step by step: an implementation that fails with itself goes first; otherwise the ones that fail
    with the most others go (all of them on a tie: two that disagree with no third to tell them apart both
    go); and again, among those left, until no check fails.  One broken implementation among several agreeing
    ones is the only one left out."""
    out = {}
    for alg, mine in checks.groupby("algorithm"):
        left = set(mine["owner"]) | set(mine["peer"])
        while True:
            bad = mine[~mine["passed"].astype(bool) & mine["owner"].isin(left) & mine["peer"].isin(left)]
            if bad.empty:
                break
            alone = set(bad.loc[bad["owner"] == bad["peer"], "owner"])
            partners = {n: {p for o, p in zip(bad["owner"], bad["peer"]) for p in (o, p)
                            if p != n and n in (o, p)}
                        for n in left}
            most = max(len(p) for p in partners.values())
            drop = alone or {n for n, p in partners.items() if len(p) == most}
            for name in sorted(drop):
                mistakes = bad[(bad["owner"] == name) | (bad["peer"] == name)]
                first = mistakes.iloc[0]
                out[f"{name}/{alg}"] = (f"failed {len(mistakes)} cross-check(s), e.g. {first['check']} "
                                        f"({first['owner']} → {first['peer']}): "
                                        f"{first['detail'] or 'mismatch'}")
            left -= drop
    return out


def summary(checks: pd.DataFrame) -> pd.DataFrame:
    """Per algorithm: implementations checked, checks run and passed, and who was excluded."""
    dropped = excluded(checks)
    rows = []
    for alg, mine in checks.groupby("algorithm", sort=False):
        names = sorted(set(mine["owner"]) | set(mine["peer"]))
        rows.append({"algorithm": alg, "implementations": len(names), "checks": len(mine),
                     "passed": int(mine["passed"].sum()),
                     "excluded": ", ".join(n for n in names if f"{n}/{alg}" in dropped)})
    return pd.DataFrame(rows)
