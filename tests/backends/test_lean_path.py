"""pqlab's lean path into liboqs (issue 31, item 5): backend ``liboqs`` calls liboqs's C API with buffers made
once and runs a sample's calls in pqlab's C loop; backend ``liboqs-python`` is the same library through its
binding. Both check every output; a failed call in the loop is a verification error, never a fast sample."""
from __future__ import annotations

import functools

import numpy as np
import pytest

from pqlab import benchmark
from pqlab.backends import algorithms
from pqlab.backends import liboqs as lean
from pqlab.backends.base import VerificationError
from pqlab.core import vocabulary
from pqlab.measure.timing import REPEAT_SAMPLE_NS, measure

FAST = {"budget_s": 0.05, "min_samples": 3, "progress": False, "rounds": 3, "max_rounds": 3}


@pytest.mark.parametrize("name, operations", [("ML-KEM-768", ("keygen", "encaps", "decaps")),
                                              ("ML-DSA-44", ("keygen", "sign", "verify")),
                                              ("Falcon-512", ("sign", "verify"))])
def test_every_operation_loops_in_c_with_its_output_checked(name, operations):
    algo = algorithms.get(name, "liboqs")
    assert algo.implementation.startswith("liboqs ") and "liboqs-python" not in algo.implementation
    for op in operations:
        trial = algo.trial(op, b"m" * 100)
        assert trial.repeat is not None and trial.output is not None, op
        s = measure(trial.run, trial.check, budget_s=0.02, min_samples=3, fresh=trial.fresh,
                    repeat=trial.repeat, output=trial.output, target_rel_ci=None)
        assert s.checked >= 3 and np.all(s.time_ns > 0), op
        assert s.loops * float(np.median(s.time_ns)) >= REPEAT_SAMPLE_NS * 0.5 or s.loops == 1, op


def test_the_binding_is_a_row_of_its_own_and_a_bare_name_picks_the_lean_path_without_a_word(recwarn):
    both = algorithms.get("ML-KEM-768", "liboqs-python"), algorithms.get("ML-KEM-768", "liboqs")
    assert both[0].implementation.endswith(f"through liboqs-python {both[0]._oqs.oqs_python_version()}")
    assert (both[0].library_version == both[1].library_version
            and both[0].extra["build"] == both[1].extra["build"])
    assert algorithms.get("ML-KEM-768").backend == "liboqs"
    for name in ("MAYO-1", "ML-KEM-768"):
        algorithms._ANNOUNCED.discard(name)
    assert algorithms.announce_defaults(["MAYO-1"]) == []  # one library, two paths: nothing to choose
    # other libraries: said, the binding not among them
    (said,) = algorithms.announce_defaults(["ML-KEM-768"])
    assert "(liboqs, cryptography, pqcrypto)" in said
    assert vocabulary.backend("liboqs-python").through == "liboqs" and vocabulary.c_loop("liboqs")


def test_a_call_that_fails_in_the_loop_is_a_verification_error_outside_the_timer():
    algo = algorithms.get("ML-DSA-44", "liboqs")
    pk, sk = algo.generate()
    sig = algo.signer(sk)(b"hello")
    trial = algo.trial("verify", b"hello", (pk, sk), signed=(b"hello", sig))
    assert trial.output(trial.repeat(5)) is True
    bad = lean._Verify(algo._obj, pk).loop(b"hello", sig[:-1] + bytes([sig[-1] ^ 1]))
    assert bad[1](bad[0](3)) is False  # rejected: False, which the verify check refuses
    kem = algorithms.get("ML-KEM-768", "liboqs")
    repeat, output = kem.encapsulator(kem.generate()[0]).loop()
    with pytest.raises(VerificationError, match="2 calls did not return OQS_SUCCESS"):
        output(2)
    assert len(output(repeat(2))[0]) == 1088


def test_a_tampered_input_is_rejected_through_the_lean_path():
    kem = algorithms.get("ML-KEM-768", "liboqs")
    pk, sk = kem.generate()
    ct, ss = kem.encapsulator(pk)()
    decaps = kem.decapsulator(sk)
    assert decaps(ct) == ss and decaps(ct[:-1] + bytes([ct[-1] ^ 1])) != ss
    sig = algorithms.get("ML-DSA-44", "liboqs")
    pk, sk = sig.generate()
    s = sig.signer(sk)(b"message")
    assert sig.verifier(pk)(b"message", s) is True and sig.verifier(pk)(b"messagf", s) is False
    # the binding agrees with the lean path on the same keys
    assert algorithms.get("ML-DSA-44", "liboqs-python").verifier(pk)(b"message", s) is True


def test_bench_gives_lean_rows_the_c_loops_own_cost_and_says_it(tmp_path):
    # liboqs-python's ML-KEM accepts keys and ciphertexts one byte short
    # (pqlab.checks.conformance); pqlab's path refuses them
    run = benchmark.bench(["ML-KEM-768@liboqs", "ML-KEM-768@liboqs-python"], operations=["encaps"],
                          folder=tmp_path, save=False, allow_nonconforming=True, **FAST)
    assert run.meta["allowed_nonconforming"] == ["ML-KEM-768@liboqs-python"]
    m = run.measurements.set_index("backend")
    lean_cost, harness = run.meta["harness_lean_ns"], run.meta["harness_overhead_ns"]
    assert m.loc["liboqs", "overhead_ns"] == pytest.approx(lean_cost) and lean_cost < harness
    assert m.loc["liboqs-python", "overhead_ns"] == pytest.approx(harness)
    assert "pqlab's C loop" in benchmark.describe_harness(run)
    # the loop's no-op is the run's meta, not a row
    assert set(run.samples["operation"]) == {"encaps", "noop"}


def test_the_c_loop_is_one_helper_for_every_build():
    path = lean._c()[1]._name
    assert "lean_loops" in path and functools.reduce(lambda a, b: a and b,
                                                     (hasattr(lean._c()[1], n) for n in lean._LOOPS))


def test_without_a_c_compiler_liboqs_is_measured_through_its_binding_and_says_so(tmp_path):
    """The C loop is compiled on first use; where no compiler exists the liboqs backend is not offered, a bare
    name means liboqs-python, and one line says why (in a fresh process with an empty cache and CC naming no
    program)."""
    import os
    import subprocess
    import sys

    code = ("import warnings; warnings.simplefilter('always')\n"
            "from pqlab import algorithms\n"
            "a = algorithms.get('ML-KEM-768')\n"
            "print(a.backend, ('ML-KEM-768', 'liboqs') in algorithms._REGISTRY)")
    env = dict(os.environ, CC="/nonexistent/cc", XDG_CACHE_HOME=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["liboqs-python", "False"]
    assert "C loop into liboqs cannot be built here" in out.stderr and "no C compiler" in out.stderr
