"""Notebook 03's study module: tables, figures and every generated sentence, both branches of each
conditional sentence, from synthetic frames."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from pqlab.core import flags
from pqlab.studies import memory_footprint as mf

S128, S256 = "SPHINCS+-SHAKE-128s-simple", "SPHINCS+-SHAKE-256s-simple"


def fake_memory(native=(0, 0, 0)) -> pd.DataFrame:
    rows = []
    for (name, family, heap, stack), nat in zip(((S128, "hash-based", 19201, 10328),
                                                 ("ML-DSA-44", "lattice", 8329, 50520),
                                                 (S256, "hash-based", 62000, 40000)), native):
        for op, size in (("sign", 32), ("verify", 32), ("sign", 4096)):
            rows.append({"algorithm": name, "backend": "liboqs", "family": family, "operation": op,
                         "message_bytes": size, "heap_bytes": heap + (size - 32), "stack_bytes": stack,
                         "heap_native_bytes": nat, "heap_native_callers": "liboqs.so: f 832" if nat else "",
                         "heap_raw_bytes": 4_000_000 + heap, "heap_baseline_bytes": 4_000_000,
                         "stack_raw_bytes": 219_440 + stack, "stack_baseline_bytes": 219_440,
                         "heap_first_call_bytes": heap + 1520})
    return pd.DataFrame(rows)


def fake_sizes() -> pd.DataFrame:
    return pd.DataFrame([
        {"algorithm": S128, "backend": "liboqs", "family": "hash-based", "public_key_bytes": 32,
         "secret_key_bytes": 64, "signature_bytes": 7856, "signature_max_bytes": 7856},
        {"algorithm": S256, "backend": "liboqs", "family": "hash-based", "public_key_bytes": 64,
         "secret_key_bytes": 128, "signature_bytes": 29792, "signature_max_bytes": 29792},
        {"algorithm": "ML-DSA-44", "backend": "liboqs", "family": "lattice", "public_key_bytes": 1312,
         "secret_key_bytes": 2560, "signature_bytes": 2420, "signature_max_bytes": 2420},
        {"algorithm": "Falcon-512", "backend": "liboqs", "family": "lattice", "public_key_bytes": 897,
         "secret_key_bytes": 1281, "signature_bytes": 655, "signature_max_bytes": 752},
        {"algorithm": "RSA-2048-PSS", "backend": "cryptography", "family": "RSA", "public_key_bytes": 294,
         "secret_key_bytes": 1218, "signature_bytes": 256, "signature_max_bytes": 256}])


class FakeTimeRun:
    """sample_values() of a timing run: per-call times in ns around `center` ms."""

    def __init__(self, centers: dict):
        self.centers = centers

    def sample_values(self, algorithm, operation, *, backend=None, message_bytes=None):
        center = self.centers.get((algorithm, operation))
        rng = np.random.default_rng(len(algorithm) + len(operation))
        from conftest import in_rounds

        return np.array([]) if center is None else in_rounds(center * 1e6
                                                             * (1 + 0.01 * rng.standard_normal(30)))


def test_size_table_adds_the_signed_message():
    sizes = mf.size_table(fake_sizes(), [32, 4096])
    falcon = sizes.set_index("algorithm").loc["Falcon-512"]
    assert falcon["signed_message_32_bytes"] == 32 + 655 and falcon["signed_message_4096_bytes"] == 4096 + 655
    checked = mf.size_table(fake_sizes(), [32], deterministic=True)
    assert "RSA-2048-PSS" not in set(checked["algorithm"])  # RSA's PKCS#8 length varies
    assert checked.set_index("algorithm").loc["Falcon-512", "signature_bytes"] == 752  # the declared maximum


def test_hash_length_comes_from_the_public_key_of_sphincs_and_slh_dsa_only():
    assert mf.hash_bytes(S256, 64) == 32 and mf.hash_bytes("SLH-DSA-SHA2-128f", 32) == 16
    assert mf.hash_bytes("ML-DSA-44", 1312) is None and mf.hash_bytes(S128, None) is None


def test_gravity_is_compared_with_the_sets_of_its_hash_length_without_a_heap_ratio():
    g = mf.load_gravity()
    assert (g["public_key_bytes"], g["secret_key_bytes"], g["sign_heap_bytes"],
            g["hash_bytes"]) == (32, 64, 34304, 32)
    assert g["signature_bytes"] is None and g["sign_ms"] == pytest.approx(185.4075)
    comparison = mf.compare_gravity(fake_memory(), FakeTimeRun({(S256, "sign"): 600.0}), fake_sizes())
    assert list(comparison["source"]) == ["study (published)", "measured here"]
    ours = comparison.iloc[1]
    # not the 128 set, whose keys match by size only
    assert ours["algorithm"] == S256 and ours["hash_bytes"] == 32
    assert ours["sign_heap_bytes"] == 62000 and ours["sign_stack_bytes"] == 40000
    assert ours["sign_ms"] == pytest.approx(600, rel=0.01) and ours["sign_samples"] == 30
    assert (ours["study_over_ours_sign_ci_low"] < ours["study_over_ours_sign"]
            < ours["study_over_ours_sign_ci_high"])
    assert ours["study_over_ours_sign"] == pytest.approx(185.4075 / 600, rel=0.01)
    assert pd.isna(ours["study_over_ours_verify"])  # not timed: no ratio
    assert not any("heap" in c and ("over" in c or "ratio" in c) for c in comparison.columns)
    text = mf.describe_gravity(comparison, fake_sizes())
    assert "Gravity-SPHINCS is not measured here" in text and "hashes to 32 bytes" in text
    assert "count different things, so no ratio is given" in text and "62,000 B" in text
    assert "study/ours 0.31×" in text and "no interval on its side" in text
    bars = mf.gravity_bars(comparison)
    assert {"sign: heap", "sign: heap native", "sign: stack"} <= set(bars["quantity"])
    assert mf.plot_gravity(comparison).axes[0].get_yscale() == "log"


def test_gravity_without_a_set_of_its_hash_length():
    sizes = fake_sizes()[lambda d: d["algorithm"] != S256]
    comparison = mf.compare_gravity(fake_memory(), None, sizes)
    assert list(comparison["source"]) == ["study (published)"]
    assert mf.plot_gravity(comparison) is None  # never an empty comparison figure
    text = mf.describe_gravity(comparison, sizes)
    assert "No SPHINCS+ or SLH-DSA set with 32-byte hashes was measured" in text


def test_message_size_figure_shows_what_a_longer_message_adds():
    fig = mf.plot_message_sizes(fake_memory())
    panels = {ax.get_title(): ax for ax in fig.axes}
    assert set(panels) == {"sign: heap", "sign: stack", "verify: heap", "verify: stack"}
    ys = [line.get_ydata() for line in panels["sign: heap"].get_lines()]
    assert any(max(y) == 4096 - 32 for y in ys)  # one copy of the message in the fake data


def test_findings_native_heap_both_ways():
    none = mf.describe_findings(fake_memory())
    assert "ML-DSA-44 sign, 50,520 B" in none and "liboqs sign: none, in all 3 sets" in none
    some = mf.describe_findings(fake_memory(native=(0, 832, 0)))
    assert "liboqs sign: none in 2 of 3 sets, 832 B in ML-DSA-44 (f)" in some
    every = mf.describe_findings(fake_memory(native=(224, 832, 224)))
    assert ("liboqs sign: 224 B to 832 B in SPHINCS+-SHAKE-128s-simple, ML-DSA-44, "
            "SPHINCS+-SHAKE-256s-simple (f)" in every)
    assert "allocates nothing" not in some  # the old typed mechanism is gone
    stripped = fake_memory(native=(0, 832, 0)).replace({"liboqs.so: f 832": "pqcrypto.abi3.so: ??? 832"})
    # not "(???)"
    assert "832 B in ML-DSA-44 (unnamed code in pqcrypto.abi3.so)" in mf.describe_findings(stripped)


def test_findings_signature_fit_both_ways():
    mem = fake_memory()
    sig = fake_sizes().set_index("algorithm")["signature_bytes"]
    on_line = mem.assign(heap_bytes=[1000 + 2 * sig[a] + (m - 32)
                                     for a, m in zip(mem["algorithm"], mem["message_bytes"])])
    text = mf.describe_findings(on_line, fake_sizes())
    assert ("For the 3 liboqs sets, the heap signing adds follows the signature length: "
            "1,000 B plus 2.00 times" in text)
    assert "about 2 copies of the signature" in text
    mem.loc[mem["algorithm"] == "ML-DSA-44", "heap_bytes"] = 30000  # far off any line through the others
    off = mf.describe_findings(mem, fake_sizes())
    assert "does not follow the signature length alone" in off and "copies" not in off


def test_findings_first_call_both_ways_and_the_hypothesis_only_for_openssl():
    mem = fake_memory()
    assert ("adds less than twice the heap of a later call everywhere (at most 1,520 B more)"
            in mf.describe_findings(mem))
    ed = pd.DataFrame([{"algorithm": "Ed25519", "backend": "cryptography", "family": "elliptic-curve",
                        "operation": "sign", "message_bytes": 32, "heap_bytes": 1096, "stack_bytes": 4488,
                        "heap_first_call_bytes": 70860,
                        "heap_first_call_native_callers": "_rust.abi3.so: CRYPTO_malloc 70684"}])
    text = mf.describe_findings(pd.concat([mem, ed], ignore_index=True))
    assert ("at least twice the heap of a later call for Ed25519 sign, 70,860 B against 1,096 B "
            "(allocated by _rust.abi3.so: CRYPTO_malloc 70684)") in text
    assert "*Hypothesis, not measured here:* OpenSSL fetches" in text
    liboqs_only = mem.assign(heap_first_call_bytes=mem["heap_bytes"] * 3)
    assert "Hypothesis" not in mf.describe_findings(liboqs_only)


def test_findings_message_sizes_both_ways():
    text = mf.describe_findings(fake_memory())
    assert "heap grows by 1.00 to 1.00 bytes per message byte" in text
    assert "none holds a copy of the message on its stack" in text
    mem = fake_memory()
    mem.loc[(mem["algorithm"] == "ML-DSA-44") & (mem["message_bytes"] == 4096), "stack_bytes"] += 5000
    grows = mf.describe_findings(mem)
    assert "The stack grows by at least the message's growth for ML-DSA-44 sign." in grows


def fake_run(n_cached: int, fresh=False, meta=True):
    m = pd.DataFrame({"algorithm": ["Falcon-512", "ML-DSA-44", "ML-DSA-44"],
                      "flags": [flags.make("from-cache", "key abcdef0123456789, measured in run R1")]
                      * n_cached + [""] * (3 - n_cached)})
    info = {"root": "/c", "fresh": fresh, "stored": 3 - n_cached, "measured": 7, "method_version": 2,
            "valgrind": "valgrind-3.19.0", "python": ["CPython 3.11.7"],
            "files": {"/x/liboqs.so": "a" * 64, "/x/mod.py": "b" * 64}}
    return SimpleNamespace(measurements=m, meta={"memory_cache": info} if meta else {})


def test_describe_cache_every_case():
    assert "No cache was used: all 3 memory rows" in mf.describe_cache(fake_run(0, meta=False))
    assert "**Measured afresh**" in mf.describe_cache(fake_run(0, fresh=True))
    assert "None of the 3 memory rows came from the cache" in mf.describe_cache(fake_run(0))
    text = mf.describe_cache(fake_run(2))
    assert ("**2 of the 3 memory rows came from the cache** (`/c`), measured in run R1; 7 worker runs"
            in text)
    assert ("method version (2), valgrind-3.19.0, CPython 3.11.7" in text
            and "liboqs.so `aaaaaaaaaaaa`" in text)
    assert "mod.py" not in text  # source files are counted, shared objects named
    assert "each of the 2 files" in text and "Times are never cached" in text
    run = fake_run(2)  # a row whose heap and stack came from worker runs of two runs names each run once
    run.measurements.loc[1, "flags"] = flags.make("from-cache",
                                                  "key 0123456789abcdef, measured in run R1, R2")
    assert "measured in runs R1, R2; 7 worker runs" in mf.describe_cache(run)


def test_caveats_apply_where_they_should():
    run = fake_run(2)
    text = mf.describe_caveats(fake_memory().assign(max_rss_delta_bytes=0), run, fake_sizes())
    assert "emulates" in text and "whole pages" in text
    assert "Cached rows of Falcon-512, whose key or signature encodings vary" in text
    assert "Cached rows" not in mf.describe_caveats(fake_memory(), fake_run(0), fake_sizes())


def test_closing_note_and_numbers_come_from_the_data():
    table = fake_memory(native=(0, 832, 0))
    note = mf.closing_note(table, {"available": True}, focus=("ML-DSA-44", "Falcon-512"))
    assert "adds **8,329 B of heap and 50,520 B of stack**" in note and "Falcon-512 was not measured" in note
    comparison = mf.compare_gravity(table, FakeTimeRun({(S256, "sign"): 600.0}), fake_sizes())
    values = mf.numbers(table, fake_run(2), comparison, focus=("ML-DSA-44",))
    assert values["ml_dsa_44_sign_heap_bytes"] == 8329 and values["ml_dsa_44_sign_heap_native_bytes"] == 832
    assert values["memory_rows_from_cache"] == 2 and values["deepest_stack_bytes"] == 50520
    assert values["gravity_hash_bytes"] == 32 and values["study_sign_heap_bytes"] == 34304
    key = "study_over_sphincsplus_shake_256s_simple_liboqs_sign"
    assert values[key + "_ci_low"] < values[key] < values[key + "_ci_high"]
    assert all(k == k.lower() and k.replace("_", "").isalnum() for k in values)


def test_describe_time_sizes_names_the_sizes_not_timed():
    timed = SimpleNamespace(meta={"params": {"message_bytes": [32, 4096]}})
    text = mf.describe_time_sizes(timed, [32, 256, 1024, 4096])
    assert ("at 32-byte and 4096-byte messages only" in text
            and "at 256, 1024 bytes the tables' `time_us` is empty" in text)
    assert mf.describe_time_sizes(timed, [4096, 32]) == ""  # every size timed: nothing to say


def test_findings_escape_the_function_names_valgrind_reports():
    # a Rust symbol as massif names it: unescaped, Markdown renders <pyo3::...> as a link (the report's
    # browser check found it in notebook 03)
    rust = fake_memory(native=(0, 832, 0)).replace({"liboqs.so: f 832":
                                                    "pqcrypto.abi3.so: <pyo3::buffer::Buf>::get 832"})
    text = mf.describe_findings(rust)
    assert "<pyo3::buffer::Buf>" not in text and "pyo3::buffer::Buf" in text
