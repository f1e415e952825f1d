"""What upgrading liboqs changes (notebook 04's last section, issue #44): every build here, names through
what they mean, related algorithms labelled, the release notes between the builds, and how to add today's
liboqs."""
from __future__ import annotations

import pandas as pd
import pytest
from test_source_builds import _tree

from pqlab.core import builds
from pqlab.core.errors import UnknownName
from pqlab.studies import liboqs_releases as lr

NAMES = ["ML-KEM-768", "SPHINCS+-SHA2-128f-simple", "HQC-128", "Kyber768"]


@pytest.fixture
def with_016(tmp_path, monkeypatch):
    """A registered liboqs 0.16.0 source tree (its CMakeLists.txt only: nothing here builds it)."""
    monkeypatch.setenv("PQLAB_LIBOQS_SOURCES", str(tmp_path / "sources.json"))
    return builds.add_source(_tree(tmp_path / "liboqs-0.16.0")).id


def test_without_a_given_build_the_crate_builds_are_compared_and_the_text_says_how_to_add_one(monkeypatch,
                                                                                                tmp_path):
    monkeypatch.setenv("PQLAB_LIBOQS_SOURCES", str(tmp_path / "none.json"))
    monkeypatch.setattr(lr, "given_builds", lambda: ())
    assert lr.present() == [builds.Build(r).id for r in builds.own_releases()]
    chosen = lr.plan(NAMES, "present")
    text = lr.describe(chosen, pd.DataFrame())
    assert lr.how_to_add() in text and "--add-source" in lr.how_to_add()
    assert builds.SETUP_RELEASE in lr.how_to_add()
    with pytest.raises(UnknownName, match="close matches"):
        lr.plan(["ML-KEM-786"], "present")


def test_a_source_build_measures_each_name_as_its_release_calls_it_and_says_what_differs(with_016):
    assert lr.present()[-1] == with_016 == "liboqs-0.16.0+source"
    chosen = lr.plan(NAMES, ["liboqs-0.13.0", with_016]).set_index(["build", "algorithm"])
    new = chosen.loc[with_016]
    assert new.loc["SPHINCS+-SHA2-128f-simple", "measured_as"] == "SLH_DSA_PURE_SHA2_128F"
    assert new.loc["HQC-128", "measured_as"] == "HQC-1"
    assert not new.loc["SPHINCS+-SHA2-128f-simple", "same_algorithm"]
    assert not new.loc["HQC-128", "same_algorithm"]
    assert new.loc["ML-KEM-768", "same_algorithm"] and new.loc["Kyber768", "same_algorithm"]
    assert "FIPS 205" in new.loc["SPHINCS+-SHA2-128f-simple", "note"]
    assert chosen.loc["liboqs-0.13.0"]["same_algorithm"].all()
    plan = chosen.reset_index()
    notes = lr.notes(plan)
    assert set(notes["release"]) <= {"0.14.0", "0.15.0", "0.16.0"} and len(notes)
    assert notes["source"].str.contains(r"@0\.1[456]\.0").all()
    assert {"ML-KEM", "HQC", "SPHINCS+"} <= set(notes["family"]) and "Falcon" not in set(notes["family"])
    text = lr.describe(plan, pd.DataFrame())
    assert lr.how_to_add() not in text and "SLH" in text and "not the same one" in text
    # a build before a name: nothing stands in (ML-KEM on 0.9.0)
    old = lr.plan(["ML-KEM-768"], ["liboqs-0.9.0"]).iloc[0]
    assert not old["measured"] and "not in liboqs 0.9.0" in old["why_not"]


def test_changes_pair_each_name_across_builds_with_an_interval_and_label_another_algorithm(with_016):
    from test_own_question import synthetic_run

    chosen = lr.plan(["ML-KEM-768", "HQC-128"], ["liboqs-0.13.0", with_016])
    side = "liboqs 0.13.0"
    runs = {"liboqs-0.13.0": synthetic_run([("ML-KEM-768", "liboqs", side, 1, 13_000.0, "liboqs-0.13.0"),
                                            ("HQC-128", "liboqs", side, 1, 60_000.0, "liboqs-0.13.0")],
                                           operation="decaps", message_bytes=None, run_id="r-013"),
            with_016: synthetic_run([("ML-KEM-768", "liboqs", side, 1, 8_500.0, with_016),
                                     ("HQC-1", "liboqs", side, 1, 60_300.0, with_016)],
                                    operation="decaps", message_bytes=None, run_id="r-016")}
    moved = lr.changes(runs, chosen).set_index("algorithm")
    kem = moved.loc["ML-KEM-768"]
    assert kem["same_algorithm"] and kem["called"] and kem["verdict"].startswith("faster by 1.53")
    assert kem["factor"] == pytest.approx(8_500 / 13_000, rel=0.01)
    assert kem["factor_ci_low"] < kem["factor"] < kem["factor_ci_high"]
    hqc = moved.loc["HQC-128"]
    assert (hqc["older_name"], hqc["newer_name"]) == ("HQC-128", "HQC-1") and not hqc["same_algorithm"]
    assert "⚠ different algorithms: HQC-2023-128 → HQC-2025-1" in hqc["verdict"] and not hqc["called"]
    text = lr.describe(chosen, moved.reset_index())
    assert "1 of 2 operations changed" in text and "ML-KEM-768 decaps 0.65×" in text


def test_the_paper_table_drops_the_repeated_prefix_and_names_only_a_changed_name():
    """A registered source build and 0.16's names made the exported table wider than the page."""
    import pandas as pd

    from pqlab.studies import liboqs_releases

    moved = pd.DataFrame({"algorithm": ["ML-KEM-768", "SPHINCS+-SHA2-128f-simple"],
                          "from": ["liboqs-0.13.0", "liboqs-0.13.0"],
                          "to": ["liboqs-0.16.0+source", "liboqs-0.16.0+source"],
                          "newer_name": ["ML-KEM-768", "SLH_DSA_PURE_SHA2_128F"]})
    out = liboqs_releases.for_paper(moved)
    assert list(out["to"]) == ["0.16.0+source"] * 2 and list(out["from"]) == ["0.13.0"] * 2
    assert list(out["newer_name"]) == ["same", "SLH_DSA_PURE_SHA2_128F"]
