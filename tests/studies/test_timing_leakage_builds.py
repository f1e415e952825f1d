"""Notebook 09's screens of pqlab's own liboqs builds per compiler (issue #47): the plan refused before
anything is built, the table's outcome from the three looks (timing, taint, divisions), the sentences from
the table, nothing exported when no build was screened, and the full profile's plan naming findings the
reference has."""
from __future__ import annotations

import math

import pandas as pd
import pytest
import yaml

from pqlab.checks import leakage
from pqlab.core.errors import BadInput, UnknownName
from pqlab.core.paths import ROOT
from pqlab.studies import timing_leakage as tl
from pqlab.studies import timing_leakage_builds as tlb

FINDINGS = pd.DataFrame([
    {"source": "slash", "compiler": "not stated", "level": "not stated", "affected": "liboqs up to 0.9.0",
     "fixed": "liboqs 0.9.1",
     "screen": "liboqs-0.9.0+generic", "function": "poly_tomsg"},
    {"source": "slash", "compiler": "gcc", "level": "-Os", "affected": "the test build",
     "screen": "liboqs-0.9.0+generic+Os", "function": "poly_tomsg"},
    {"source": "cmov", "compiler": "clang 14-22", "level": "-O2, -O3", "affected": "", "screen": None,
     "function": "base_mul"}])


@pytest.fixture
def findings(monkeypatch):
    monkeypatch.setattr(tlb, "published", lambda: FINDINGS)


def _entry(**over):
    return {"build": "liboqs-0.9.0+generic+Os", "kem": "Kyber768", "blocks": 100, "group": "slash",
            "role": "known leak", "classes": ["zero-message", "ones-message"],
            "functions": ["poly_tomsg", "polyvec_compress"]} | over


def test_the_plan_names_builds_and_kems_and_is_refused_before_anything_is_built(findings):
    items = tlb.plan([_entry()], scale=2.0)
    assert items[0].target == "Kyber768-decaps@liboqs-0.9.0+generic+Os" and items[0].blocks == 200
    assert items[0].functions == ("poly_tomsg", "polyvec_compress")
    for bad, error, words in [(_entry(group="nope"), BadInput, "no finding of"),
                              (_entry(kem="ML-KEM-768"), UnknownName, "close matches: Kyber768"),
                              (_entry(build="liboqs-0.9.0+Os+gcc"), BadInput, "then a compiler"),
                              (_entry(color="red"), BadInput, "must have the keys")]:
        with pytest.raises(error, match=words):
            tlb.plan([bad])


def test_entry_symbols_are_liboqs_method_names():
    assert tlb.entry_symbol("Kyber768") == "OQS_KEM_kyber_768_decaps"
    assert tlb.entry_symbol("ML-KEM-768") == "OQS_KEM_ml_kem_768_decaps"
    assert tlb.entry_symbol("HQC-128") == "OQS_KEM_hqc_128_decaps"


def _taint(*places):
    return {"reason": "", "errors": sum(n for _, n in places),
            "found": [{"count": n, "frames": [f"{name} (x.c:1)", "caller"]} for name, n in places]}


def _divs(*functions):
    return {"reason": "", "found": [{"function": f, "address": "1", "instruction": "div %ebx"}
                                    for f in functions]}


ITEM = tl.Item("liboqs", "Kyber768-decaps@liboqs-0.9.0+generic+Os", 100, "slash", "known leak",
               functions=("poly_tomsg", "polyvec_compress"))
CLEAN, BRANCH_ELSEWHERE = _taint(), _taint(("pqcrystals_kyber768_ref_poly_frommsg", 256))
BRANCH_THERE = _taint(("pqcrystals_kyber768_ref_poly_tomsg", 40))
DIV_THERE = _divs("pqcrystals_kyber768_ref_polyvec_compress", "pqcrystals_kyber768_ref_gen_matrix")
DIV_PUBLIC = _divs("pqcrystals_kyber768_ref_gen_matrix")


def test_the_looks_match_the_findings_functions_and_keep_the_rest_apart():
    seen = tlb.looks(ITEM, BRANCH_ELSEWHERE, DIV_THERE)
    assert seen["branches_there"] == {} and seen["branches_elsewhere"] == {
        "pqcrystals_kyber768_ref_poly_frommsg": 256}
    assert seen["divs_there"] == {"pqcrystals_kyber768_ref_polyvec_compress": 1}
    assert seen["divs_elsewhere"] == {"pqcrystals_kyber768_ref_gen_matrix": 1}
    assert tlb.looks(ITEM, {"reason": "valgrind is not installed"}, None)["taint_reason"]


@pytest.mark.parametrize("role, verdict, taint, divs, outcome", [
    ("known leak", leakage.LEAK, CLEAN, DIV_THERE, tlb.REPRODUCED),
    ("known leak", leakage.NO_LEAK, BRANCH_THERE, DIV_PUBLIC, tlb.IN_CODE),
    ("known leak", leakage.NO_LEAK, CLEAN, DIV_THERE, tlb.IN_CODE),
    ("known leak", leakage.NO_LEAK, BRANCH_ELSEWHERE, DIV_PUBLIC, tlb.NOT_REPRODUCED),
    ("fixed", leakage.NO_LEAK, BRANCH_ELSEWHERE, DIV_PUBLIC, tlb.AGREES),
    ("fixed", leakage.NO_LEAK, BRANCH_THERE, DIV_PUBLIC, tlb.DISAGREES),
    ("fixed", leakage.LEAK, CLEAN, DIV_PUBLIC, tlb.OTHER),
    ("known leak", leakage.LEAK, BRANCH_ELSEWHERE, DIV_PUBLIC, tlb.OTHER),
    ("known leak", leakage.NO_VERDICT, BRANCH_THERE, DIV_PUBLIC, tlb.UNTESTED),
])
def test_the_outcome_follows_from_the_three_looks(role, verdict, taint, divs, outcome):
    said, why = tlb._outcome(role, verdict, tlb.looks(ITEM, taint, divs), ITEM.functions)
    assert said == outcome and why
    assert "gen_matrix" not in why and "poly_frommsg" not in why  # other places do not decide
    if outcome == tlb.NOT_REPRODUCED:
        assert "no div is reachable from decapsulation in poly_tomsg, polyvec_compress" in why


def test_a_leak_outside_the_findings_code_is_no_reproduction_and_names_the_finding_whose_code_it_is():
    ref = pd.DataFrame([{"source": "clangover", "function": "poly_frommsg"},
                        {"source": "slash", "function": "poly_compress, polyvec_compress (KyberSlash2)"}])
    seen = tlb.looks(ITEM, BRANCH_ELSEWHERE, DIV_PUBLIC)
    others = tlb._others(seen, ref)
    assert others == ("secret-dependent branches in pqcrystals_kyber768_ref_poly_frommsg (256), the code of "
                      "clangover; div in pqcrystals_kyber768_ref_gen_matrix (1)")
    said, why = tlb._outcome("known leak", leakage.LEAK, seen, ITEM.functions, others)
    assert said == tlb.OTHER and "no div is reachable from decapsulation in poly_tomsg" in why
    assert why.endswith(f"elsewhere: {others}")


def test_the_table_and_its_sentences_come_from_the_looks(findings):
    items = tlb.plan([_entry(), _entry(build="liboqs-0.9.0+generic", role="fixed")])
    verdicts = pd.DataFrame([
        {"program": "liboqs", "target": items[0].target, "verdict": leakage.NO_LEAK, "median_ns": 3.0,
         "ci_low_ns": -10.0, "ci_high_ns": 12.0, "largest": "ones-message - zero-message", "blocks": 100,
         "power_ns": 500.0, "power": "smallest injected delay found: 500 ns (1 run)"},
        {"program": "liboqs", "target": items[1].target, "verdict": leakage.NO_LEAK, "median_ns": -1.0,
         "ci_low_ns": -9.0, "ci_high_ns": 8.0, "largest": "ones-message - zero-message", "blocks": 100,
         "power_ns": math.nan, "power": "none of the injected delays found, up to 100 ns (1 run)"}])
    divs = pd.DataFrame([{"build": "liboqs-0.9.0+generic+Os", "kem": "Kyber768"} | DIV_THERE,
                         {"build": "liboqs-0.9.0+generic", "kem": "Kyber768"} | _divs()])
    taints = pd.DataFrame([{"algorithm": "Kyber768", "build": b} | CLEAN
                           for b in ("liboqs-0.9.0+generic+Os", "liboqs-0.9.0+generic")])
    table = tlb.compiler_table(items, verdicts, divs, taints)
    assert list(table["outcome"]) == [tlb.IN_CODE, tlb.AGREES]
    assert list(table["level"]) == ["Os", "O3"] and set(table["release"]) == {"0.9.0"}
    assert table["compiler"].str.match(r"(gcc|clang) \d+\.\d+\.\d+").all(), list(table["compiler"])
    assert table.loc[0, "divisions"] == (
        "div in the finding's code: pqcrystals_kyber768_ref_polyvec_compress (1); elsewhere: "
        "pqcrystals_kyber768_ref_gen_matrix (1)")
    assert list(table["published"]) == ["gcc, -Os", "affected: liboqs up to 0.9.0; fixed in liboqs 0.9.1"]
    text = tlb.describe_compiler_table(table)
    assert "**seen in the code only**" in text and "500 ns" in text and "[-10, 12" in text
    assert "By finding: slash: seen in the code only, agrees: nothing found." in text


def test_no_build_screened_says_so_and_exports_nothing():
    runs, table = tlb.screen_builds([], ladder=[5], steps=1, runs=1)
    assert runs == [] and table.empty and tlb.save(table, runs) == []
    assert "No build was screened" in tlb.describe_compiler_table(table)


def test_the_full_profile_screens_builds_the_reference_names_and_the_quick_profile_none():
    full = yaml.safe_load((ROOT / "notebooks" / "params" / "09_timing_leakage.yaml").read_text())
    items = tlb.plan(full["build_screens"], full["scale"])  # real reference: every group is a finding there
    targets = {i.target for i in items}
    assert {"HQC-128-decaps@liboqs-0.13.0", "HQC-128-decaps@liboqs-0.13.0+clang19",
            "Kyber768-decaps@liboqs-0.9.0+generic", "Kyber768-decaps@liboqs-0.9.0+generic+Os",
            "Kyber768-decaps@liboqs-0.9.0+generic+clang19+Os"} <= targets
    assert {"source", "compiler", "level"} <= set(tlb.published().columns)
    assert all(isinstance(i, tl.Item) for i in items)


def test_each_builds_known_answer_checks_come_with_it(findings):
    items = tlb.plan([_entry(build="liboqs-0.9.0"), _entry(build="liboqs-0.13.0+generic", kem="ML-KEM-768")])
    checks = tlb.conformance_of(items).set_index("build")["conformance"]
    assert checks["liboqs-0.9.0"].startswith("not checked: Wycheproof has no vectors for Kyber768")
    assert checks["liboqs-0.13.0+generic"].startswith("conforms (")  # checked in a worker that loads it
