"""Issue #41 (item 6): the printed text follows the statistic.

An interval wider than :data:`pqlab.core.formatting.RESOLVED_FACTOR` is "not resolved", never a factor with
digits; the precision flag follows the precision a row reached; the sentences that say how intervals are made
describe the method that made them (rounds, a t quantile on logarithms, the machine's drift) with counts from
the data; a table's footnote letters are the same in a notebook's display and in its .md and .tex export."""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import fake_run
from test_typed_numbers import unresolved_factors

from pqlab import benchmark
from pqlab.core import flags, formatting
from pqlab.core.formatting import RESOLVED_FACTOR, fmt_factor_ci, resolved, resolved_rel
from pqlab.publish import context

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


# ----- the limit --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("low, high, digits", [(0.05, 2366.83, 2), (0.1, 2596, 1), (0, 3, 2), (-1, 3, 2)])
def test_an_interval_wider_than_the_limit_prints_as_not_resolved(low, high, digits):
    text = fmt_factor_ci(10.55, low, high, digits)
    assert text == formatting.not_resolved_text() and text.startswith("not resolved")
    assert not unresolved_factors(text) and "10.5" not in text
    assert unresolved_factors(f"10.55× [{low}, {high}]")  # what was printed before


def test_the_limit_is_one_constant_and_inside_it_the_factor_prints():
    assert resolved(1.0, RESOLVED_FACTOR) and not resolved(1.0, RESOLVED_FACTOR * 1.001)
    assert fmt_factor_ci(1.234, 1.2, 1.26) == "1.23× [1.20, 1.26]"
    assert fmt_factor_ci(1.5, None, 9.0) == "1.50×"  # no interval: the value alone, as before
    h = (RESOLVED_FACTOR - 1) / (RESOLVED_FACTOR + 1)  # (1 + h) / (1 - h) is the limit
    assert resolved_rel(h * 0.999) and not resolved_rel(h * 1.001) and not resolved_rel(67.88)
    assert resolved_rel(float("nan"))  # no interval, nothing to resolve


def test_a_table_shows_unresolved_ratios_and_precisions_as_marks_with_their_note():
    df = pd.DataFrame({"algorithm": ["SLH-DSA", "ML-DSA"], "speedup": [10.55, 1.2],
                       "speedup_ci_low": [0.05, 1.1], "speedup_ci_high": [2366.83, 1.3],
                       "time_ns_rel_ci": [67.88, 0.007]})
    t = formatting.table(df)
    assert (t.rows[0][1:] == [formatting.NOT_RESOLVED_MARK] * 2
            and t.rows[1][1:] == ["1.20× [1.10, 1.30]", "0.7"])
    assert t.notes == [formatting.not_resolved_note()]
    assert not unresolved_factors(t.to_markdown()) and not unresolved_factors(t.to_string())
    assert formatting.table(df.iloc[1:]).notes == []  # no mark, no note


# ----- the precision flag and sentence ----------------------------------------------------------------------

def _rows_after(monkeypatch, round_medians: dict, needed: dict, target: float) -> pd.DataFrame:
    """The rows _set_rows writes for items measured in rounds with these medians (item -> one per round)."""
    from pqlab.backends.algorithms import get
    from pqlab.runners.rounds import Item
    from pqlab.store.recorder import RunRecorder

    rec = RunRecorder("t", save=False, liboqs=False)
    k = len(next(iter(round_medians.values())))
    rec.meta["round_noise"] = [{"round": r} for r in range(k)]
    algos = [get("Ed25519", "cryptography")]
    items = [Item(-1, "noop", None)] + [Item(0, op, None) for op in round_medians]

    def rounds_of(medians):
        return [(r, {"time_ns": [m * 0.99, m, m * 1.01], "loops": 1, "cycles": None, "cycles_source": "none",
                     "flags": []}) for r, m in enumerate(medians)]

    results = {0: rounds_of([10.0] * k),
               **{i + 1: rounds_of(m) for i, m in enumerate(round_medians.values())}}
    benchmark._set_rows(rec, algos, items, results, needed, {}, k, target, in_process=True)
    return pd.DataFrame(rec.measurements).set_index("operation")


def test_the_precision_flag_follows_the_precision_reached(monkeypatch):
    # Stein's rule wanted more rounds than the most allowed for both; only the wide one missed the target
    rows = _rows_after(monkeypatch, {"keygen": [1000, 1003, 1006], "sign": [1000, 2000, 4000]},
                       needed={1: 50, 2: 50}, target=0.05)
    tight, wide = rows.loc["keygen"], rows.loc["sign"]
    assert tight["time_ns_rel_ci"] < 0.05 and not flags.has(tight["flags"], "precision-not-reached")
    assert (wide["time_ns_rel_ci"] > 0.05
            and flags.detail(wide["flags"], "precision-not-reached") == "max-rounds (3)")
    # without a target nothing is flagged, however wide
    assert not flags.has(
        _rows_after(monkeypatch, {"sign": [1000, 2000, 4000]}, {}, None).loc["sign", "flags"],
        "precision-not-reached")


def test_the_precision_sentence_states_no_unresolved_precision_and_the_method_with_the_data():
    m = pd.DataFrame({"time_ns_rel_ci": [0.007, 0.01, 67.88, np.nan], "target_rel_ci": 0.05,
                      "rounds": [6, 18, 3, 2], "flags": ""})
    text = context.precision_markdown(m)
    assert "6788" not in text.replace(",", "") and "worst ±1.00 %" in text
    assert f"1 of 3 rows {formatting.not_resolved_text()}" in text
    assert "1 of 3 rows are wider than their target of ±5.00 %" in text
    assert "t-intervals on the logarithms" in text and "drift" in text and "(3 to 18 rounds)" in text
    assert "95 %" in text and "order statistic" not in text


def test_notebook_01_says_how_its_intervals_are_made_as_the_code_makes_them():
    nb = json.loads((NOTEBOOKS / "01_aes_rsa_sphincs.ipynb").read_text())
    sources = ["".join(c["source"]) for c in nb["cells"]]
    assert not any("order statistic" in s or "bootstrap" in s for s in sources)
    # its precision sentence is generated
    assert sum("context.precision_markdown(" in s for s in sources) >= 1
    text = context.precision_markdown(pd.DataFrame({"time_ns_rel_ci": [0.01], "rounds": [3], "flags": ""}))
    assert "order statistic" not in text and "(3 rounds)" in text and "t-intervals on the logarithms" in text


# ----- footnote letters -------------------------------------------------------------------------------------

def test_footnote_letters_are_the_same_in_the_display_and_the_export(export_tree):
    from pqlab.publish import export

    df = pd.DataFrame({"algorithm": ["A", "B", "C"], "time_ns_median": [1e3, 2e3, 3e3],
                       "flags": ["busy", "few-rounds;busy", "reference-shift:round 2 vector +48%;busy"]})
    shown = formatting.table(df)
    export.save_table(df, "t", "x", runs=[fake_run()], caption="c")
    md = (export_tree / "data" / "tables" / "t" / "x.md").read_text()
    tex = (export_tree / "data" / "tables" / "t" / "x.tex").read_text()
    assert shown.marks == ["", "a", "b"]
    assert ([r.rstrip("|").split("|")[-1].strip() for r in md.splitlines() if r.startswith("| ")][1:]
            == shown.marks)
    assert re.findall(r"\\textsuperscript\{([a-z,]+)\}(?!\\,)", tex) == [m for m in shown.marks if m]
    letters = [n.split(":")[0] for n in shown.notes if re.match(r"^[a-z]:", n)]
    assert re.findall(r"\\textsuperscript\{([a-z])\}\\,", tex) == letters == ["a", "b"]
    assert all(markdown_note in md for markdown_note in (formatting.markdown(n) for n in shown.notes))
    assert formatting.flag_marks(df["flags"]) == (shown.marks, shown.notes)
