"""Issue #42, "Fast because wrong?": wherever a notebook or the paper quotes the time of an implementation
that fails its known-answer checks (liboqs's default ML-DSA verifier of some releases), the text says so, from
the run's conformance record (pqlab.studies.conforming), never from a typed sentence."""
from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from pqlab.checks import conformance
from pqlab.publish.export_numbers import macro_name
from pqlab.studies import conforming, message_scaling, signature_cycles

ROOT = Path(__file__).resolve().parents[2]
#: the sections whose studies time liboqs's ML-DSA (06 quotes its sizes in bytes; 08 and 09 count and label
#: their non-conforming implementations themselves)
SECTIONS = sorted((ROOT / "paper" / "sections").glob("0[1-57]_*.tex"))
STUDIES = sorted((ROOT / "pqlab" / "studies").rglob("*.py"))
#: the notebooks issue #42 covers (06 models a TLS handshake from its
#: operations: its record goes with its run)
NOTEBOOKS = [*sorted((ROOT / "notebooks").glob("0[1-57]_*.ipynb")),
             ROOT / "notebooks" / "own_comparison.ipynb"]
#: a quoted number in running text (\pqlabName{}); \pqlabfigure and friends take arguments
NUMBER = re.compile(r"\\pqlab[A-Z]\w*\{\}")
CAVEAT = re.compile(r"\\pqlab\w*MldsaCaveat\{\}")


def record(status=conformance.NONCONFORMING, failures=None, ran=42, build="liboqs-0.13.0") -> dict:
    """A record with the fields :func:`pqlab.checks.conformance.record_from_rows` gives."""
    failures = ({"accepts invalid signatures": 37} if failures is None and status == conformance.NONCONFORMING
                else (failures or {}))
    failed = sum(failures.values())
    return {"algorithm": "ML-DSA-44", "backend": "liboqs", "implementation": "liboqs 0.13.0",
            "library_version": "0.13.0", "build": build, "status": status, "why_not": "", "ran": ran,
            "passed": ran - failed, "failed": failed, "skipped": 0, "skip_reasons": {}, "failures": failures,
            "files": ["mldsa_44_verify_test.json"], "sources": ["wycheproof"], "seconds": 0.1}


def fake_run(run_id: str, **records) -> SimpleNamespace:
    return SimpleNamespace(run_id=run_id, meta={"conformance": dict(records)})


BAD = fake_run("bad", **{"ML-DSA-44@liboqs": record()})
GOOD = fake_run("good", **{"ML-DSA-44@liboqs": record(conformance.CONFORMS, build="generic")})


def paragraphs(path: Path) -> list[str]:
    text = "\n".join(line for line in path.read_text(encoding="utf-8").splitlines()
                     if not line.lstrip().startswith("%"))
    return [p for p in re.split(r"\n\s*\n", text) if p.strip()]


@pytest.mark.parametrize("section", SECTIONS, ids=lambda p: p.stem)
def test_every_paper_paragraph_quoting_an_ml_dsa_number_carries_the_caveat(section):
    for paragraph in paragraphs(section):
        if "ML-DSA" in paragraph:
            quoted = [m for m in NUMBER.findall(paragraph) if not CAVEAT.fullmatch(m)]
            if quoted:
                assert CAVEAT.search(paragraph), (f"{section.name}: a paragraph quotes {quoted[0]} "
                                                  f"about ML-DSA without a \\pqlab...MldsaCaveat{{}}: "
                                                  f"{paragraph[:120]!r}")


def _string_keys(path: Path) -> set[str]:
    return {n.value for n in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(n, ast.Constant) and isinstance(n.value, str)}


def test_every_caveat_macro_a_section_uses_is_exported_by_its_study():
    used = {s.stem: set(CAVEAT.findall(s.read_text(encoding="utf-8"))) for s in SECTIONS}
    assert any(used.values()), "no section uses a caveat macro"
    exported = {}
    for study in STUDIES:
        topic = re.search(r'^TOPIC = "(\w+)"', study.read_text(encoding="utf-8"), re.M)
        if topic:  # a study package's numbers() may live in another of its modules than its TOPIC
            modules = sorted(study.parent.glob("*.py")) if study.parent.name != "studies" else [study]
            keys = {k for m in modules for k in _string_keys(m) if k.endswith("mldsa_caveat")}
            exported.setdefault(topic.group(1), set()).update(f"\\{macro_name(k)}{{}}" for k in keys)
    for stem, macros in used.items():
        missing = macros - exported.get(stem, set())
        assert not missing, f"{stem}.tex uses {sorted(missing)}, which no numbers() of its study exports"


def test_the_caveat_of_a_non_conforming_run_comes_from_its_record():
    text = conforming.caveat(BAD)
    assert "ML-DSA-44@liboqs" in text and "accepts invalid signatures (37 of 42)" in text
    assert conforming.caveat(GOOD) == ""
    assert conforming.caveat([BAD, GOOD, BAD]).count("ML-DSA-44@liboqs") == 1  # each sentence once
    assert conforming.nonconforming([GOOD, BAD], "ML-DSA") == ["ML-DSA-44"]


def test_the_paper_caveat_says_what_the_records_say():
    bad = conforming.paper_caveat([GOOD, BAD])
    assert "accepts invalid signatures (37 of 42)" in bad and "⚠" not in bad
    good = conforming.paper_caveat([GOOD])
    assert "conforms" in good and "passed 42 vectors" in good
    assert "No conformance record" in conforming.paper_caveat([SimpleNamespace(run_id="old", meta={})])


def test_the_studies_numbers_carry_the_caveat_of_their_runs():
    cycles = signature_cycles.numbers({}, runs=[BAD])["cycles_mldsa_caveat"]
    assert "accepts invalid signatures (37 of 42)" in cycles
    empty = pd.DataFrame(columns=["algorithm", "operation", "same_standard", "message_bytes"])
    scaling = message_scaling.numbers(empty, pd.DataFrame(), runs=[BAD])["scaling_mldsa_caveat"]
    assert "accepts invalid signatures (37 of 42)" in scaling


def test_a_study_sentence_on_a_non_conforming_run_says_so():
    implementations = pd.DataFrame({"algorithm": ["ML-DSA-44"], "liboqs_build": ["liboqs optimised"],
                                    "operation": ["verify"], "ratio": [1.5]})
    counter = {"basis": "cycles", "unit": "core cycles"}
    text = signature_cycles.describe_implementations(implementations, counter, runs=[BAD])
    assert "non-conforming" in text and "accepts invalid signatures (37 of 42)" in text
    assert "non-conforming" not in signature_cycles.describe_implementations(implementations, counter,
                                                                             runs=[GOOD])


def test_a_ratio_between_a_conforming_and_a_non_conforming_build_is_labelled_unlike_work():
    speedups = pd.DataFrame({"table_family": ["lattice"] * 2, "algorithm": ["ML-DSA-44"] * 2,
                             "operation": ["sign", "verify"], "speedup": [1.5, 1.07],
                             "speedup_ci_low": [1.4, 1.0], "speedup_ci_high": [1.6, 1.1]})
    labelled = conforming.label_unlike_work(speedups, {"default": BAD, "generic": GOOD})
    assert labelled.loc[labelled["operation"] == "sign", "unlike_work"].iloc[0] == ""
    verify = labelled.loc[labelled["operation"] == "verify", "unlike_work"].iloc[0]
    assert "unlike work" in verify and "passed 42 vectors" in verify and "(37 of 42)" in verify
    assert "unlike work" in signature_cycles.describe_speedups(labelled)
    alike = conforming.label_unlike_work(speedups, {"default": GOOD, "generic": GOOD})
    assert not alike["unlike_work"].astype(bool).any()


def _measured_run(run_id: str, build: str, median_ns: float, rec: dict) -> SimpleNamespace:
    rows = pd.DataFrame({"algorithm": ["ML-DSA-44"], "backend": ["liboqs"], "operation": ["verify"],
                         "message_bytes": [100], "build": [build], "time_ns_median": [median_ns]})
    values = np.full(20, median_ns)
    return SimpleNamespace(run_id=run_id, meta={"conformance": {"ML-DSA-44@liboqs": rec}}, measurements=rows,
                           verified=lambda: rows, sample_values=lambda *a, **k: values)


def test_the_price_of_the_check_sets_both_builds_side_by_side():
    default = _measured_run("d", "liboqs-0.13.0", 30_000.0, record())
    portable = _measured_run("g", "liboqs-0.13.0+generic", 60_000.0, record(conformance.CONFORMS))
    price = conforming.price_table({"default": default, "generic": portable}, message_bytes=100)
    row = price.table.iloc[0]
    assert row["default_verify_ns"] == 30_000.0 and row["portable_verify_ns"] == 60_000.0
    assert row["portable_over_default"] == pytest.approx(2.0)
    assert "(37 of 42)" in row["default_conformance"] and "passed 42 vectors" in row["portable_conformance"]
    assert "unlike work" in price.sentence and price.runs == [default, portable]
    alike = conforming.price_table({"default": portable, "generic": portable}, message_bytes=100)
    assert alike.table.empty and "conforms" in alike.sentence  # nothing non-conforming: nothing to price
    assert "did not run" in conforming.price_table({"default": default}).sentence


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_a_notebook_that_times_a_non_conforming_implementation_says_so(notebook):
    code = "\n".join("".join(c["source"]) for c in json.loads(notebook.read_text(encoding="utf-8"))["cells"]
                     if c["cell_type"] == "code")
    if notebook.stem == "own_comparison":  # the recipe's prose is README's, and its table marks the row
        assert "allow_nonconforming=True" in code and "pqlab conformance ML-DSA-65@liboqs" in code
        return
    if "allow_nonconforming=True" in code or "ML-DSA" in code:
        assert "conforming.caveat(" in code or "conforming.price_table(" in code, (
            f"{notebook.name} times ML-DSA but shows no conformance caveat")
