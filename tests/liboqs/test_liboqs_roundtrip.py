"""Every signature and KEM enabled in liboqs round-trips through pqlab's adapter, and tampering
is detected: the trials' own checks (the ones bench runs) pass on genuine outputs and raise on
tampered ones.  One test per algorithm; all of them together take a few seconds."""
from __future__ import annotations

import pytest

from pqlab.backends.algorithms import get, names, random_message
from pqlab.backends.base import VerificationError
from pqlab.liboqs.loader import import_oqs

oqs = import_oqs()
SIGS = list(oqs.get_enabled_sig_mechanisms())
KEMS = list(oqs.get_enabled_kem_mechanisms())
MESSAGE = random_message(100, seed=5)


def flip(data: bytes) -> bytes:
    i = len(data) // 2
    return data[:i] + bytes([data[i] ^ 1]) + data[i + 1:]


def test_every_enabled_mechanism_is_registered():
    assert len(SIGS) == 56 and len(KEMS) == 29
    assert sorted(names(backend="liboqs")) == sorted(SIGS + KEMS)
    assert set(names(kind="sig", backend="liboqs")) >= set(SIGS)


@pytest.mark.parametrize("name", SIGS)
def test_signature_round_trip_and_tampering(name):
    algo = get(name, "liboqs")
    assert algo.kind == "sig"
    # fresh keys; the check verifies, and rejects a tampered signature/message
    trial = algo.trial("sign", MESSAGE).bound()
    sig = trial.run()
    trial.check(sig)
    assert len(sig) <= algo.declared_sizes()["signature_max_bytes"]
    with pytest.raises(VerificationError):
        trial.check(flip(sig))


@pytest.mark.parametrize("name", KEMS)
def test_kem_round_trip_and_tampering(name):
    algo = get(name, "liboqs")
    assert algo.kind == "kem"
    # fresh keys, encapsulation; the check compares secrets, tampers the ciphertext
    trial = algo.trial("decaps")
    secret = trial.run()
    trial.check(secret)
    with pytest.raises(VerificationError):
        trial.check(flip(secret))
