"""Fast because wrong? (issue #42): every implementation pqlab times is checked against known answers and
invalid inputs first, the record is cached per build, bench refuses a non-conforming implementation unless
asked, and every exported row that shows a time says what its implementation passed."""
from __future__ import annotations

import copy
import json

import pandas as pd
import pytest
from conftest import fake_run

from pqlab.backends import algorithms
from pqlab.benchmark import bench
from pqlab.checks import conformance
from pqlab.core.errors import BadInput
from pqlab.publish import export


def planted(name: str = "ML-DSA-44", backend: str = "liboqs"):
    """The registry's adapter of `name`, but with a verifier that accepts anything (a test's double: not
    cached)."""
    real = algorithms.get(name, backend)

    class AcceptsAnything(type(real)):
        def verifier(self, pk):
            return lambda message, signature: True

    double = copy.copy(real)
    double.__class__ = AcceptsAnything
    return double


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setattr(conformance, "cache_folder", lambda: tmp_path / "conformance")
    return tmp_path / "conformance"


def test_a_verifier_that_accepts_anything_is_non_conforming_and_bench_refuses_it(cache):
    r = conformance.check(planted())
    assert r["status"] == conformance.NONCONFORMING and not r["cached"]
    assert r["failures"]["accepts invalid signatures"] > 0 and r["ran"] > r["failed"] > 0
    assert not list(cache.glob("*.json"))  # a double is never cached under the real adapter's identity
    with pytest.raises(BadInput, match="fails its known-answer checks: accepts invalid "
                                       "signatures.*--allow-nonconforming"):
        bench([planted()], operations=["verify"], budget_s=0.01, rounds=3, save=False, progress=False)


def test_asked_for_a_non_conforming_run_records_that_it_was_asked(cache):
    run = bench([planted()], operations=["keygen"], budget_s=0.01, rounds=3, save=False, progress=False,
                allow_nonconforming=True)
    assert run.meta["allowed_nonconforming"] == ["ML-DSA-44@liboqs"]
    assert run.meta["conformance"]["ML-DSA-44@liboqs"]["status"] == conformance.NONCONFORMING


def test_a_record_is_cached_per_build_and_a_hit_costs_nothing(cache, monkeypatch):
    algo = algorithms.get("Ed25519", "cryptography")
    first = conformance.check(algo)
    assert first["status"] == conformance.CONFORMS and not first["cached"] and first["ran"] > 0
    calls = []
    monkeypatch.setattr("pqlab.checks.vectors.run", lambda *a, **k: calls.append(a) or pd.DataFrame())
    again = conformance.check(algo)
    assert again["cached"] and not calls and again["ran"] == first["ran"]
    # an unreadable entry is a miss, checked again (and the vectors are asked again)
    for path in cache.glob("*.json"):
        path.write_text("{" * 5000)
    assert not conformance.check(algo)["cached"] and calls


def test_an_algorithm_no_source_covers_is_not_checked_and_says_why(cache):
    r = conformance.check(algorithms.get("Falcon-512", "liboqs"))
    assert (r["status"] == conformance.NOT_CHECKED
            and "Wycheproof has no vectors for Falcon-512" in r["why_not"])


def test_every_exported_row_that_shows_a_time_says_what_its_implementation_passed(cache, export_tree):
    run = fake_run()
    run.meta["conformance"] = {"ML-DSA-44@liboqs": conformance.check(planted()),
                               "Ed25519@cryptography":
                                   conformance.check(algorithms.get("Ed25519", "cryptography"))}
    df = pd.DataFrame({"algorithm": ["ML-DSA-44", "Ed25519"], "backend": ["liboqs", "cryptography"],
                       "operation": ["verify", "verify"], "time_ns_median": [20_000.0, 60_000.0],
                       "flags": ["", ""]})
    export.save_table(df, "t", "times", runs=[run], caption="Verify times",
                      columns=["algorithm", "backend", "operation", "time_ns_median"])
    folder = export_tree / "data" / "tables" / "t"
    csv = pd.read_csv(folder / "times.csv")
    assert csv["conformance"].iloc[0].startswith("accepts invalid signatures (")
    assert csv["conformance"].iloc[1].startswith("passed ")
    md = (folder / "times.md").read_text()
    assert "known-answer" in md and "ML-DSA-44@liboqs" in md and "accepts invalid signatures" in md
    tex = (folder / "times.tex").read_text()
    assert "accepts invalid signatures" in tex
    assert conformance.caveat([run]).startswith("⚠ ML-DSA-44@liboqs")


def test_the_command_prints_the_records_and_refuses_nothing_to_check(cache, capsys):
    from pqlab.app.cli import main

    assert main(["conformance", "Ed25519@cryptography", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows[0]["status"] == conformance.CONFORMS and rows[0]["ran"] > 0
    assert main(["conformance"]) == 2
    assert "name the implementations to check" in capsys.readouterr().err


def test_rows_of_two_builds_get_each_its_own_builds_record_and_a_row_without_one_gets_none():
    ok = {"status": conformance.CONFORMS, "ran": 173, "failures": {},
          "liboqs": {"build": "liboqs-0.13.0+generic"}, "implementation": "liboqs 0.13.0 (generic build)"}
    bad = {"status": conformance.NONCONFORMING, "ran": 173, "failures": {"accepts invalid signatures": 37},
           "liboqs": {"build": "liboqs-0.13.0"}, "implementation": "liboqs 0.13.0 (default build)"}
    runs = [fake_run("20261129T000000Z-a-000001"), fake_run("20261129T000000Z-b-000002")]
    runs[0].meta["conformance"], runs[1].meta["conformance"] = ({"ML-DSA-44@liboqs": bad},
                                                                {"ML-DSA-44@liboqs": ok})
    df = pd.DataFrame({"algorithm": ["ML-DSA-44", "ML-DSA-44", "Ed25519"],
                       "backend": ["liboqs", "liboqs", "x"],
                       "build": ["liboqs-0.13.0", "liboqs-0.13.0+generic", ""], "flags": ["", "", ""]})
    out, notes = conformance.with_conformance(df, runs)
    assert out["conformance"].iloc[0].startswith("accepts invalid signatures")
    assert out["conformance"].iloc[1] == "passed 173 vectors" and out["conformance"].iloc[2] == ""
    assert "non-conforming" in out["flags"].iloc[0] and "non-conforming" not in out["flags"].iloc[1]
    assert len(notes) == 1 and "liboqs 0.13.0 (default build)" in notes[0]
