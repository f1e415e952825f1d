"""README.md's generated regions: the liboqs upgrade table comes from a comparison notebook 04 measured, kept
in data/measured/ with its provenance, and nothing else (issue #44)."""
from __future__ import annotations

import json

import pandas as pd
import pytest

from pqlab.core import builds
from pqlab.core.paths import ROOT
from pqlab.publish import readme


def _export(folder, to="liboqs-0.16.0+source"):
    table = folder / readme.EXPORT
    table.parent.mkdir(parents=True)
    rows = [{"algorithm": "ML-KEM-768", "operation": "decaps", "from": builds.SETUP.id, "to": to,
             "older_name": "ML-KEM-768", "newer_name": "ML-KEM-768", "same_algorithm": True,
             "older_ns": 13100.0, "newer_ns": 8530.0, "factor": 0.651, "factor_ci_low": 0.64,
             "factor_ci_high": 0.66, "verdict": "faster by 1.54×"},
            {"algorithm": "HQC-128", "operation": "keygen", "from": builds.SETUP.id, "to": to,
             "older_name": "HQC-128", "newer_name": "HQC-1", "same_algorithm": False, "older_ns": 2.0e6,
             "newer_ns": 1.0e6, "factor": 0.5, "factor_ci_low": 0.1, "factor_ci_high": 2.5, "verdict": "x"},
            {"algorithm": "Kyber768", "operation": "keygen", "from": "liboqs-0.12.0", "to": builds.SETUP.id,
             "older_name": "Kyber768", "newer_name": "Kyber768", "same_algorithm": True, "older_ns": 1.0,
             "newer_ns": 1.0, "factor": 1.0, "factor_ci_low": 0.9, "factor_ci_high": 1.1, "verdict": "x"}]
    pd.DataFrame(rows).to_csv(table, index=False)
    table.with_suffix(".export.json").write_text(json.dumps({"profile": "quick", "runs": ["run-a", "run-b"]}))
    return folder


def test_the_upgrade_table_is_kept_with_its_provenance_and_written_between_the_markers(tmp_path):
    dest = tmp_path / "measured" / "liboqs_upgrade.csv"
    readme.keep_upgrade(_export(tmp_path / "quick"), dest)
    kept = pd.read_csv(dest)
    assert list(kept["algorithm"]) == ["ML-KEM-768", "HQC-128"]  # setup's build against the newer one only
    record = json.loads(dest.with_suffix(".json").read_text())
    assert record["newer"] == "liboqs-0.16.0+source" and record["export"]["runs"] == ["run-a", "run-b"]
    text = readme.upgrade_table(dest)
    assert "| ML-KEM-768 | decaps | 13.1 µs | 8.53 µs | 0.65× [0.64, 0.66] |" in text
    assert "HQC-128 → HQC-1 (⚠ another algorithm)" in text and "not resolved" in text
    assert "runs run-a, run-b" in text
    begin, end = readme.markers("x", "make x")
    page = f"head\n{begin}\nold\n{end}\ntail\n"
    assert readme.replace_region(page, begin, end, "new") == f"head\n{begin}\nnew\n{end}\ntail\n"
    with pytest.raises(readme.ReadmeError, match="once each"):
        readme.replace_region("no markers", begin, end, "new")


def test_without_a_newer_build_nothing_is_kept_and_the_error_says_what_to_run(tmp_path):
    with pytest.raises(readme.ReadmeError, match="is missing: run notebook 04"):
        readme.keep_upgrade(tmp_path)
    with pytest.raises(readme.ReadmeError, match="compares no build newer than"):
        readme.keep_upgrade(_export(tmp_path / "q", to="liboqs-0.12.0"), tmp_path / "kept.csv")
    assert not (tmp_path / "kept.csv").exists()
    assert "make setup LIBOQS_SOURCE=DIR" in readme.upgrade_table(tmp_path / "none.csv")


def test_the_readme_region_is_what_the_kept_data_gives():
    begin, end = readme.markers(readme.UPGRADE_REGION, "make readme-liboqs")
    text = (ROOT / "README.md").read_text()
    assert readme.region(text, begin, end).strip() == readme.upgrade_table().strip()
