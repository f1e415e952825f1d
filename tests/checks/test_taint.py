"""pqlab.checks.taint: the valgrind taint check (ctgrind) of liboqs, its positive and negative controls, and
refusals.

The controls prove that memcheck sees what the check claims (a branch and a table index on a secret byte are
reported, a masked select is not); ML-KEM-768's decapsulation on the portable build is then expected clean,
and ML-DSA-44's signing flagged only in its rejection loop and on values its signature publishes.
"""
from __future__ import annotations

import shutil

import pytest

from pqlab.checks import taint
from pqlab.core.errors import UnknownName

needs_valgrind = pytest.mark.skipif(shutil.which("valgrind") is None,
                                    reason="valgrind is not installed (apt-get install valgrind)")


@pytest.fixture(scope="module")
def ready():
    """Skip (with the reason) where valgrind, a C compiler with valgrind/memcheck.h, or the generic liboqs
    build is missing and cannot be had."""
    why = taint.available("generic")
    if why:
        pytest.skip(why)


def no_valgrind(monkeypatch):
    """Make any attempt to reach valgrind or the harness fail the test."""
    def refuse(*args, **kwargs):
        raise AssertionError("valgrind or the harness was reached before the name was checked")

    monkeypatch.setattr(taint, "_valgrind", refuse)
    monkeypatch.setattr(taint, "harness", refuse)
    monkeypatch.setattr(taint, "_library", refuse)


def test_unknown_algorithm_is_refused_with_close_matches_before_valgrind(monkeypatch):
    no_valgrind(monkeypatch)
    with pytest.raises(UnknownName) as info:
        taint.check("ML-KEM-786", kind="kem", build="generic")
    assert "ML-KEM-768" in info.value.matches
    assert "\n" not in str(info.value)


def test_a_signature_asked_for_as_a_kem_is_refused_with_the_right_kind(monkeypatch):
    no_valgrind(monkeypatch)
    with pytest.raises(UnknownName, match="kind='sig'"):
        taint.check("ML-DSA-44", kind="kem")


def test_unknown_kind_and_control_are_refused(monkeypatch):
    no_valgrind(monkeypatch)
    with pytest.raises(UnknownName, match="close matches: control"):
        taint.check("leaky", kind="contrl")
    with pytest.raises(UnknownName, match="leaky"):
        taint.check("leaks", kind="control")


SYNTHETIC = """<?xml version="1.0"?>
<valgrindoutput>
<error><unique>0x0</unique><tid>1</tid><kind>UninitCondition</kind>
  <what>Conditional jump or move depends on uninitialised value(s)</what>
  <stack><frame><ip>0x1</ip><obj>/x/liboqs.so</obj><fn>pqcrystals_ml_dsa_44_ref_poly_chknorm</fn></frame>
         <frame><ip>0x2</ip><obj>/x/liboqs.so</obj></frame></stack></error>
<error><unique>0x1</unique><tid>1</tid><kind>UninitValue</kind>\
<what>Use of uninitialised value of size 8</what>
  <stack><frame><ip>0x3</ip><obj>/x/h</obj><fn>f</fn><dir>/d</dir>\
<file>h.c</file><line>7</line></frame></stack></error>
<error><unique>0x2</unique><tid>1</tid><kind>Leak_DefinitelyLost</kind><xwhat><text>32 bytes</text></xwhat>
  <stack><frame><ip>0x4</ip><obj>/x/h</obj><fn>calloc</fn></frame></stack></error>
<errorcounts><pair><count>5</count><unique>0x1</unique></pair>\
<pair><count>3</count><unique>0x0</unique></pair>
</errorcounts>
</valgrindoutput>
"""


def test_memcheck_xml_is_read_into_findings_with_counts_frames_and_labels(tmp_path):
    path = tmp_path / "memcheck.xml"
    path.write_text(SYNTHETIC)
    findings = taint.parse_xml(path)
    assert [f["count"] for f in findings] == [5, 3]  # the leak is left out, the most frequent comes first
    assert findings[0]["kind"] == "Use of uninitialised value of size 8"
    assert findings[0]["frames"] == ["f (h.c:7)"] and findings[0]["note"] == ""
    assert findings[1]["frames"] == ["pqcrystals_ml_dsa_44_ref_poly_chknorm", "?? (liboqs.so)"]
    assert findings[1]["note"].startswith("ML-DSA rejection test")


@pytest.mark.slow
@needs_valgrind
def test_the_positive_control_is_flagged_for_its_branch_and_its_index(ready):
    result = taint.check("leaky", kind="control")
    assert result["errors"] > 0 and result["exit_status"] == taint.ERROR_EXIT
    assert result["branches"] >= 1 and result["indices"] >= 1
    flagged = {f["frames"][0].split(" ")[0] for f in result["findings"]}
    assert flagged == {"pqlab_control_branch", "pqlab_control_index"}


@pytest.mark.slow
@needs_valgrind
def test_the_negative_control_is_not_flagged(ready):
    result = taint.check("clean", kind="control")
    assert result["errors"] == 0 and result["findings"] == [] and result["exit_status"] == 0


@pytest.mark.slow
@needs_valgrind
def test_ml_kem_768_decapsulation_on_the_generic_build_is_clean(ready):
    result = taint.check("ML-KEM-768", kind="kem", build="generic")
    assert result["liboqs_version"] and result["build"].endswith("+generic")
    # dk_PKE (1152 bytes) and z (32) tainted; ek and H(ek) are public copies and stay defined
    assert result["tainted_bytes"] == 1184
    assert result["public_ranges"] == [[1152, 1184], [2336, 32]]
    assert result["rejection"] == "implicit"
    assert result["phases"] == {"setup": 0, "decaps-valid": 0, "decaps-invalid": 0}
    assert result["errors"] == 0, result["findings"][:3]


@pytest.mark.slow
@needs_valgrind
def test_ml_dsa_44_signing_is_flagged_only_in_its_rejection_loop(ready):
    result = taint.check("ML-DSA-44", kind="sig", build="generic")
    assert result["errors"] > 0 and result["public_ranges"] == [[0, 32], [64, 64]]  # rho and tr stay defined
    unexplained = [f for f in result["findings"] if not f["note"]]
    assert unexplained == [], unexplained[:3]
