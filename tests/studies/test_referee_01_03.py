"""Issue #28, notebooks 01-03: every sentence true for the data, every pairing labelled with its statistics.

Each test asserts the property a referee's finding is about (not a sentence), on the committed notebooks or on
the generated text of synthetic data; each fails on the text before the fix."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from pqlab.core import formatting
from pqlab.core.references import load_reference
from pqlab.studies import aes_rsa_sphincs as S
from pqlab.studies import memory_footprint as mf
from pqlab.studies import message_scaling as scaling

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


def markdown_cells(name: str) -> list[str]:
    nb = json.loads((NOTEBOOKS / f"{name}.ipynb").read_text())
    return ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown"]


@pytest.fixture(scope="module")
def values():
    from test_aes_rsa_sphincs import BC_SIZES, SPHINCS_OPS, bc_run, python_run

    py = python_run({("SPHINCS+-SHAKE-128f-simple", "liboqs", "keygen"): 1,
                     ("SPHINCS+-SHAKE-128f-simple", "liboqs", "sign"): 12,
                     ("SPHINCS+-SHAKE-128f-simple", "liboqs", "verify"): 1,
                     ("RSA-2048-PKCS1v15-enc", "cryptography", "keygen"): 100,
                     ("RSA-2048-PKCS1v15-enc", "cryptography", "encrypt"): 0.03,
                     ("RSA-2048-PKCS1v15-enc", "cryptography", "decrypt"): 0.7,
                     ("AES-256-CBC", "cryptography", "keygen"): 0.0005,
                     ("AES-256-CBC", "cryptography", "encrypt"): 0.005})
    # the Python backends' operations stand in other proportions than Bouncy Castle's: the same ratio moves
    return S.system_values(py, [bc_run("1.72", SPHINCS_OPS, BC_SIZES), bc_run("1.86", SPHINCS_OPS, BC_SIZES)])


# ----- finding 1: notebook 02 c0 "one time per size" -----
def test_02_says_the_study_gives_no_repetition_count_and_infers_one_from_its_table():
    intro = markdown_cells("02_message_scaling")[0]
    # a single run was never stated
    assert not re.search(r"\bone (?:time|measurement|run|timing) per\b", intro)
    f = scaling.study_findings()
    # RSA, ECDSA times x 3
    assert f["runs_inferred"] == 3 and f["runs_inferred_cells"] >= 0.9 * f["runs_cells"]
    native = pd.DataFrame({"time_ns_median": [1e6], "flags": [""]})
    text = scaling.caveats(native, scaling.load_study(), None)
    assert "no repetition count" in text and "means of 3 runs" in text and "inference" in text


# ----- finding 2: notebook 01 c14 "a ratio ... cancels the machine, the language and most of the clock" -----
def test_01_does_not_claim_that_a_ratio_within_a_system_cancels_the_system():
    assert not any(re.search(r"cancel", cell, re.IGNORECASE) for cell in markdown_cells("01_aes_rsa_sphincs"))


def test_ratio_spread_between_our_systems_is_generated_from_the_data(values):
    ratios = S.ratio_table(values)
    text = S.describe_ratio_spread(ratios)
    means = ratios[(ratios["kind"] != S.STUDY) & (ratios["statistic"] == "mean")]
    by = means.groupby(["study_row", "construction", "ratio"])["value"]
    spread = (by.max() / by.min())[by.count() >= 2]
    assert formatting.fmt_factor(spread.max()) in text and formatting.fmt_factor(spread.min()) in text
    assert spread.max() >= 1.5 and "does not carry unchanged" in text
    steady_only = ratios[ratios["kind"] != S.COLD]
    calm = S.describe_ratio_spread(steady_only, carries=1e6)
    assert "does not carry" not in calm and "agrees between our systems within" in calm
    assert S.describe_ratio_spread(ratios[ratios["kind"] == S.STUDY]).startswith(
        "No ratio was measured by two")


# ----- finding 3: notebook 01 c0/c6 "the mean of a handful of cold calls",
# "what the study's mean measures" -----
def test_01_says_only_what_the_study_says_of_its_runs(values):
    cells = markdown_cells("01_aes_rsa_sphincs")
    assert not any(re.search(r"handful|what the study's mean measures|as the study computed", c)
                   for c in cells)
    reproduces = cells[0].split("**What we do differently.**")[0]
    # the study never says its runs were cold
    assert "cold" not in reproduces and "first call" not in reproduces
    runs = int(load_reference(S.TOPIC)["runs"].iloc[0])
    method = S.describe_study_method()
    assert f"averaged over {runs} runs" in method and "does not say" in method
    over = S.describe_study_over_ours(S.study_over_ours(values))
    assert "same calls" not in over and "not whether they were first calls" in over


# ----- finding 4: intervals promised by captions and text, and given -----
def test_01_exported_ratio_table_shows_the_intervals_its_caption_promises(values):
    ratios = S.ratio_table(values)
    pairs = S.ratio_pairs(ratios)
    shown = formatting.table(pairs, S.ratio_columns(pairs)).frame["Ours, of means"]  # as exported (md, tex)
    with_ci = pairs["ours_mean_ci_low"].notna()
    assert (with_ci.any() and shown[with_ci].str.contains(r"× \[").all()
            and not shown[~with_ci].str.contains(r"\[").any())
    caption = S.ratio_caption(ratios)
    assert "liboqs" in caption and "cryptography" in caption  # the systems whose ratios carry intervals
    assert "BC 1.72 cold (mean of first 5)" in caption.split("none for")[1] and "without interval" in caption
    jvm_only = S.ratio_caption(ratios[ratios["kind"].isin([S.STUDY, S.COLD])])
    assert "intervals over rounds" not in jvm_only and "none for" in jvm_only  # no interval, none promised


def test_01_study_over_ours_says_whether_any_interval_exists(values):
    table = S.study_over_ours(values)
    assert table["study_over_ours_ci_low"].isna().all()  # one JVM process per release
    for text in (S.study_over_caption(table), S.describe_study_over_ours(table)):
        assert "with no interval" in text and "interval from our side" not in text
    with_ci = table.assign(study_over_ours_ci_low=0.5, study_over_ours_ci_high=2.0)
    assert "each with its interval from our side only" in S.study_over_caption(with_ci)


def test_02_study_over_ours_carries_intervals_in_table_and_text():
    from test_scaling import fake_samples

    ours = pd.DataFrame({"algorithm": "ECDSA-P256", "backend": "cryptography", "operation": "sign",
                         "message_bytes": [10_000, 20_000, 30_000], "time_ns_median": [2e5, 3e5, 2.5e5]})
    beside = scaling.compare_with_study(ours, fake_samples([("ECDSA-P256", "cryptography", "sign", n, t)
                                                             for n, t in zip(ours["message_bytes"],
                                                                             ours["time_ns_median"])]))
    summary = scaling.study_summary(beside)
    row = summary.iloc[0]
    assert row.ratio_min_ci_low < row.ratio_min < row.ratio_min_ci_high
    assert row.ratio_max_ci_low < row.ratio_max < row.ratio_max_ci_high and row.max_at_bytes == 30_000
    cells = formatting.table(summary).frame
    assert cells["Ratio min"].str.contains(r"\[").all() and cells["Ratio max"].str.contains(r"\[").all()
    assert "× [" in scaling.describe_study(beside).splitlines()[-1]
    assert not any("Every ratio carries an interval" in c for c in markdown_cells("02_message_scaling"))


# ----- finding 5: the study's rounded means beside our three-digit medians -----
def test_01_times_name_their_statistic_on_both_sides(values):
    table = S.times_by_system(values)
    columns = [c for c in table.columns if c not in ("study_row", "construction", "operation")]
    assert all(re.search(r": (?:median|mean|as printed)$|\(mean of first \d+\)$", c) for c in columns)
    printed = table[f"{S.study_label()}: as printed"].dropna()
    assert len(printed) and printed.str.startswith("≈").all()  # the study's means exactly as printed
    # ours where the study's is a mean: our mean
    for system in ("cryptography", "liboqs", "BC 1.72 steady state"):
        assert {f"{system}: median", f"{system}: mean"} <= set(columns)
    labels = [getattr(c, "label", c) for c in S.time_columns(table)]
    assert labels == list(table.columns)


def test_01_study_ratios_are_shown_to_the_digits_it_printed_and_compared_mean_with_mean(values):
    ratios = S.ratio_table(values)
    aes = ratios[(ratios["kind"] == S.STUDY) & (ratios["study_row"] == "AES-256-CBC")].iloc[0]
    assert aes.published == "≈2.0 / ≈0.7" and aes.digits == 1 and aes.value == 3  # not 2.86
    assert S.digits("≈211.5") == 4 and S.digits("≈0.54") == 2 and S.approx(2.857, 1) == "≈3×"
    pairs = S.ratio_pairs(ratios)
    assert set(pairs.loc[pairs["study_row"] == "AES-256-CBC", "study_ratio"]) == {"≈3×"}
    text = S.describe_ratios(ratios)
    assert "2.86" not in text and "mean of 5) ≈3× (published" in text
    assert set(S.agreement(ratios)["statistic"]) == {"mean"}  # the study's means against our means only
    labels = [c.label for c in S.ratio_columns(pairs) if isinstance(c, formatting.Column)]
    assert any("means" in x and x.startswith("Study") for x in labels) and "Ours, of medians" in labels
    assert "Ours, of medians" not in [getattr(c, "label", c) for c in S.ratio_columns(pairs, medians=False)]


# ----- finding 6: notebook 03 c0 and describe_gravity's registry claims -----
REGISTRY_CLAIM = re.compile(r"PyPI|npm|crates\.io|Debian|registr|can install", re.IGNORECASE)


def test_03_gravity_text_states_what_is_checkable_and_no_registry_claims():
    from test_memory_footprint import S256, FakeTimeRun, fake_memory, fake_sizes

    assert not REGISTRY_CLAIM.search(markdown_cells("03_memory_footprint")[0])
    comparison = mf.compare_gravity(fake_memory(), FakeTimeRun({(S256, "sign"): 600.0}), fake_sizes())
    text = mf.describe_gravity(comparison, fake_sizes())
    assert not REGISTRY_CLAIM.search(text)
    repository = load_reference(mf.PARAMETERS_TABLE).attrs["source"]["sources"]["gravity-rs"].split()[0]
    assert mf.load_gravity()["repository"] == repository and repository in text and "does not fetch" in text


# ----- finding 7: notebook 03's footprint tables say what they count -----
def test_03_footprint_tables_say_what_the_heap_counts():
    from test_memory_footprint import fake_memory

    footprint = mf.footprint_table(fake_memory(native=(0, 832, 0)))
    labels = {getattr(c, "name", c): getattr(c, "label", c) for c in mf.footprint_columns(footprint)}
    assert "all callers" in labels["heap_bytes"] and "native" in labels["heap_native_bytes"]
    part = mf.footprint_by_operation(footprint)["sign"]
    shown = [getattr(c, "name", c)
             for c in mf.footprint_columns(part, ["algorithm", "heap_bytes", "heap_native_bytes"])]
    assert shown == ["algorithm", "heap_bytes", "heap_native_bytes"]
    note = mf.heap_note(part)
    assert "binding" in note and "nothing at all in SPHINCS+-SHAKE-128s-simple sign" in note
    assert "2 of 3 rows" in note or "3 of 3 rows" in note
    assert "binding" in mf.footprint_caption("sign") and "native" in mf.footprint_caption("sign")
    # the library allocated all of it: no such claim
    library = part.assign(heap_native_bytes=part["heap_bytes"])
    assert "mostly the binding" not in mf.heap_note(library)
    bare = part.drop(columns=["heap_bytes", "heap_native_bytes"])
    assert ("valgrind was not available" in mf.heap_note(bare)
            and "binding" not in mf.footprint_caption("sign", bare))

