"""Issue #13, checks that cannot be fooled: cheating adapters (a verify that always says yes, a signer,
key generator, encapsulator or decryptor that caches) get rows that are NOT verified; signing and
encryption get a fresh message every call, made outside the timed region; what feeding costs is
measured and said.  `pytest -k reliability` runs these."""
from __future__ import annotations

import time

import pytest

from pqlab.backends.algorithms import random_message
from pqlab.backends.base import VerificationError, fresh_messages
from pqlab.backends.cryptography import MLKEM, OpenSSLCipher, RawKeySignature
from pqlab.benchmark import bench, describe_harness
from pqlab.core import flags
from pqlab.core.formatting import fmt_time_ns
from pqlab.measure.timing import measure


class Ed25519(RawKeySignature):
    def __init__(self):
        super().__init__("Ed25519", "ed25519", "Ed25519PrivateKey", "elliptic-curve")


class AlwaysTrueVerifier(Ed25519):
    def verifier(self, pk):
        return lambda message, signature: True


class CachingSigner(Ed25519):
    """Signs the first message once and returns that signature for every message."""

    def signer(self, sk):
        sign, cache = super().signer(sk), []
        return lambda message: cache[0] if cache else cache.append(sign(message)) or cache[0]


class MemoSigner(Ed25519):
    """Signs each message once (a cache per message): honest outputs, but repeated messages would be free."""

    seen: list = []

    def signer(self, sk):
        sign, memo = super().signer(sk), {}

        def memo_sign(message):
            MemoSigner.seen.append(message)
            return memo[message] if message in memo else memo.setdefault(message, sign(message))
        return memo_sign


class CachingKeygen(Ed25519):
    def generate(self, _cache=[]):  # noqa: B006 - the cache is the cheat
        return _cache[0] if _cache else _cache.append(super().generate()) or _cache[0]


class ConstantSecretKem(MLKEM):
    """Decapsulates every ciphertext to the first secret it saw (no implicit rejection)."""

    def __init__(self):
        super().__init__("768", 3)

    def decapsulator(self, sk):
        decaps, cache = super().decapsulator(sk), []
        return lambda ct: cache[0] if cache else cache.append(decaps(ct)) or cache[0]


class CachingEncapsulator(MLKEM):
    def __init__(self):
        super().__init__("768", 3)

    def encapsulator(self, pk):
        encaps, cache = super().encapsulator(pk), []
        return lambda: cache[0] if cache else cache.append(encaps()) or cache[0]


class TagIgnoringCipher(OpenSSLCipher):
    """Returns the plaintext it last saw encrypted, whatever the ciphertext (a forged tag passes)."""

    def __init__(self):
        super().__init__("AES-256-GCM")

    def encryptor(self, key):
        encrypt = super().encryptor(key)
        self.last = None

        def remember(message):
            self.last = message
            return encrypt(message)
        return remember

    def decryptor(self, key):
        return lambda ct: self.last


def row(adapter, operation):
    # the timing's own checks are under test: a cheater that also fails its known answers is timed anyway
    run = bench([adapter], operations=[operation], budget_s=0.01, min_samples=3, save=False, progress=False,
                allow_nonconforming=True)
    return run.measurements.iloc[-1]


@pytest.mark.parametrize("adapter, operation, why", [
    (AlwaysTrueVerifier(), "keygen", "a tampered signature was accepted"),
    (CachingSigner(), "sign", "signature does not verify"),
    (CachingKeygen(), "keygen", "keygen returned the same output twice: a cached result"),
    (ConstantSecretKem(), "keygen", "a tampered ciphertext gave the same secret"),
    (CachingEncapsulator(), "encaps", "encaps returned the same output twice: a cached result"),
    (TagIgnoringCipher(), "keygen", "a tampered ciphertext decrypted to the plaintext"),
], ids=lambda x: type(x).__name__ if not isinstance(x, str) else x)
def test_reliability_cheating_adapters_get_rows_that_are_not_verified(adapter, operation, why):
    r = row(adapter, operation)
    assert r["operation"] == operation and not r["verified"] and r["samples"] == 0
    assert flags.detail(r["flags"], "failed") == f"verification: {why}"


def test_reliability_every_signature_is_of_a_new_message():
    MemoSigner.seen.clear()
    r = row(MemoSigner(), "sign")
    assert r["verified"] and r["samples"] >= 3
    seen = MemoSigner.seen
    assert len(seen) > 3 * r["loops"] and len(set(seen)) == len(seen)  # never the same message twice
    assert {len(m) for m in seen} == {100}


def test_reliability_verify_and_the_sizes_row_use_what_sign_made_and_nothing_signs_again(monkeypatch):
    """Verify at a size verifies the signature that sign's last checked call made there, and the sizes row is
    read from it: outside the sign measurements the signer is never called (a SPHINCS+ s-set signs for about a
    second; the old code signed once more per size for verify and once for the sizes row)."""
    import pqlab.measure.timing as timing

    measuring, outside = [], []
    real_measure = timing.measure

    def watched(*args, **kwargs):
        measuring.append(True)
        try:
            return real_measure(*args, **kwargs)
        finally:
            measuring.pop()

    class Counted(Ed25519):
        def signer(self, sk):
            sign = super().signer(sk)

            def counted(message):
                if not measuring:
                    outside.append(message)
                return sign(message)
            return counted

    monkeypatch.setattr(timing, "measure", watched)  # the rounds of an adapter outside the registry run here
    run = bench([Counted()], operations=["sign", "verify"], message_bytes=[32, 64], budget_s=0.01,
                min_samples=3, save=False, progress=False)
    m = run.measurements
    assert m["verified"].all() and list(m["operation"]) == ["noop", "sign", "sign", "verify", "verify"]
    assert outside == []
    assert run.sizes["signature_bytes"].tolist() == [64]


def test_reliability_a_signature_given_to_verify_is_checked_before_it_is_timed():
    algo = Ed25519()
    keys, message = algo.generate(), random_message(32, seed=0)
    sig = algo.signer(keys[1])(message)
    assert algo.trial("verify", keys=keys, signed=(message, sig)).run() is True
    forged = sig[:10] + bytes([sig[10] ^ 1]) + sig[11:]
    with pytest.raises(VerificationError, match="signature does not verify"):
        algo.trial("verify", keys=keys, signed=(message, forged))
    with pytest.raises(ValueError, match="signed= is a signature to verify"):
        algo.trial("sign", message, keys, signed=(message, sig))


def test_reliability_fresh_messages_never_repeat_and_keep_their_length():
    base = random_message(100, seed=1)
    fresh = fresh_messages(base)
    batch = fresh(1000) + fresh(1000)
    assert len(set(batch)) == 2000 and {len(m) for m in batch} == {100}
    assert all(m[8:] == base[8:] for m in batch)
    short = fresh_messages(b"\x07\x07")
    assert len(set(short(256 * 256))) == 256 * 256  # every two-byte message once before any repeats
    assert fresh_messages(b"") is None  # an empty message has no other: the fixed one is used


def test_reliability_inputs_are_made_outside_the_timed_region():
    calls, checked = [], []

    def slow_fresh(n):  # 2 ms per batch, outside the clock
        time.sleep(0.002)
        return [object() for _ in range(n)]

    s = measure(calls.append, lambda out, x: checked.append(x is calls[-1]), budget_s=0.05, min_samples=5,
                fresh=slow_fresh, warmup_s=0.0)
    assert s.n >= 5 and float(s.time_ns.max()) < 1e6  # the 2 ms of making inputs is not in any sample
    assert len(set(map(id, calls))) == len(calls)  # one input per call
    assert checked and all(checked)  # each check got the input of the output it checks


def test_reliability_the_feeding_cost_is_measured_and_said():
    run = bench([Ed25519()], budget_s=0.02, min_samples=3, save=False, progress=False)
    meta, m = run.meta, run.measurements.set_index("operation")
    assert meta["harness_feed_ns"] == pytest.approx(meta["harness_fed_ns"] - meta["harness_overhead_ns"])
    # a fed operation's harness is the fed no-op
    assert m.loc["sign", "overhead_ns"] == meta["harness_fed_ns"]
    assert m.loc["keygen", "overhead_ns"] == m.loc["noop", "time_ns_median"] == meta["harness_overhead_ns"]
    text = describe_harness(run)
    assert fmt_time_ns(meta["harness_overhead_ns"]) in text and fmt_time_ns(meta["harness_fed_ns"]) in text
    assert (f"({fmt_time_ns(abs(meta['harness_feed_ns']))} "
            f"{'more' if meta['harness_feed_ns'] >= 0 else 'less'})" in text)
    unfed = bench([Ed25519()], operations=["keygen"], budget_s=0.01, min_samples=3, save=False,
                  progress=False)
    assert "harness_feed_ns" not in unfed.meta and "fresh" not in describe_harness(unfed)


def test_reliability_a_bound_trial_repeats_one_checked_input():
    from pqlab.backends.base import VerificationError

    bound = Ed25519().trial("sign", random_message(100, seed=1)).bound()  # energy windows repeat one call
    assert bound.fresh is None
    sig = bound.run()
    bound.check(sig)
    with pytest.raises(VerificationError, match="signature does not verify"):
        bound.check(sig[:-1] + bytes([sig[-1] ^ 1]))
