"""The referee's findings on notebook 09 (timing-leakage screens), each checked on synthetic screens: the
process count from data, power measured by injection (never the bootstrap bound called a detectable effect),
every pairing with a published finding saying what differs, the quantile figure's titles, axis, legend, bands
and shapes, and intervals on the numbers the text compares."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
import pytest

from pqlab.checks import leakage
from pqlab.runners import leakage as programs
from pqlab.studies import timing_leakage as tl

matplotlib.use("Agg")
ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "notebooks" / "09_timing_leakage.ipynb"
PAPER = ROOT / "paper" / "sections" / "09_timing_leakage.tex"


def _screen(program, target, impl, version, operation, classes, times, verdict=leakage.LEAK, processes=4,
            median=100.0, lo=80.0, hi=120.0):
    diffs = pd.DataFrame({"pair": [f"{classes[1]} - {classes[0]}"], "median_ns": [median], "ci_low_ns": [lo],
                          "ci_high_ns": [hi], "mean_ns": [median]})
    tests = pd.DataFrame({"pair": [diffs["pair"][0]] * 2, "test": ["sign", "Wilcoxon signed-rank"],
                          "p": [1e-6, 1e-6], "threshold": [0.005] * 2, "significant": [True, True]})
    return leakage.Screen(program, target, list(classes), verdict, reason="because", implementation=impl,
                          version=version, operation=operation, times=times, differences=diffs, tests=tests,
                          wall_s=1.0, processes=processes, bound_ns=max(abs(lo), abs(hi)))


def _times(n=400, k=2, shift=0.0, tail=0.0, seed=0):
    rng = np.random.default_rng(seed)
    t = 10_000 + rng.normal(0, 20, (n, k))
    t[:, 1] += shift
    if tail:  # the slowest fifth of the second class only
        slow = t[:, 1] > np.quantile(t[:, 1], 0.8)
        t[slow, 1] += tail
    return t


@pytest.fixture
def marvin(monkeypatch):
    """A Marvin and a Minerva group as the notebook screens them, with the programs' notes faked."""
    notes = {("python-leaky", "cryptography-rsa-pkcs1v15-decrypt"): "linked with OpenSSL 1.1.1h  22 Sep 2020"}
    monkeypatch.setattr(tl, "_notes", lambda program, target: notes.get((program, target), ""))
    plan = [("python-leaky", "rsa-512-pkcs1v15-decrypt", "python-rsa", "4.9",
             "RSA-512 PKCS#1 v1.5 decryption (rsa.decrypt)", "Marvin", "known leak", 230, 200, 251),
            ("python-leaky", "cryptography-rsa-pkcs1v15-decrypt", "cryptography", "3.2.1",
             "RSA-2048 PKCS#1 v1.5 decryption", "Marvin", "known leak", 390, 260, 486),
            ("bc-1.83", "frodokem640shake-decaps", "bouncy-castle", "1.83",
             "FrodoKEM-640-SHAKE decapsulation",
             "FrodoKEM", "known leak", -12150, -21800, -2500),
            ("liboqs", "FrodoKEM-640-SHAKE-decaps", "liboqs", "0.16.0", "FrodoKEM-640-SHAKE decapsulation",
             "FrodoKEM", "clean control", -567, -930, -113),
            ("python-leaky", "ecdsa-p256-sign", "python-ecdsa", "0.19.1", "ECDSA P-256 deterministic signing",
             "Minerva", "known leak", -4622, -5418, -3872),
            ("python", "cryptography-ecdsa-p256-sign", "cryptography", "50.0.2", "ECDSA P-256 signing",
             "Minerva", "fixed", 10, -5, 15)]
    items = tl.plan([{"program": p, "target": t, "blocks": 100, "group": g, "role": r}
                     for p, t, *_, g, r, _m, _l, _h in plan])
    screens = [_screen(p, t, i, v, o, ["valid", "bad"], _times(seed=n), median=md, lo=lo, hi=hi,
                       verdict=leakage.LEAK if r == "known leak" else leakage.NO_LEAK)
               for n, (p, t, i, v, o, g, r, md, lo, hi) in enumerate(plan)]
    return items, screens


# ------------------------------------------------------------------ 1. processes, from data


def test_the_process_count_is_generated_from_the_run(marvin):
    table = tl.verdicts(*marvin)
    assert tl.describe_processes(table).startswith(
        "Every one of the 6 screens that ran split its blocks over 4 fresh processes")
    table.loc[0, "processes"] = 1
    text = tl.describe_processes(table)
    assert "1 screen over 1 process" in text and "5 screens over 4 processes" in text


def test_the_notebook_states_no_process_count_by_hand():
    nb = json.loads(NOTEBOOK.read_text())
    prose = " ".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    code = " ".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    assert "in one process" not in prose and "tl.describe_processes(table)" in code


# ------------------------------------------------------------------ 2. power, by injection


def _fake_program(monkeypatch, base_shift=0.0):
    """A program whose calls take about 10 us with noise; a class given a delay gets it added (as a busy-wait
    would) and the document reports what was added."""
    monkeypatch.setattr(leakage, "unjudgeable", lambda record: "")
    rng = np.random.default_rng(5)

    def program(name, request):
        n, k = len(request["order"]), len(request["classes"])
        delays = np.asarray(request.get("delays_ns") or [0] * k, dtype=float)
        times = 10_000 + rng.normal(0, 50, (n, k)) + delays + 3.0 * (delays > 0)
        return {"times_ns": times.tolist(),
                **({"injected_ns": (delays + 3.0 * (delays > 0)).tolist()} if delays.any() else {})}

    monkeypatch.setattr(programs, "run", program)


def test_injection_finds_a_large_delay_and_not_the_duplicate(monkeypatch):
    _fake_program(monkeypatch)
    rows = leakage.injected("liboqs", "ML-KEM-768-decaps", "valid", 400, [2, 500], tests=2)
    assert list(rows["delay_ns"]) == [0, 2, 500]
    assert list(rows["injected_ns"]) == [0.0, 5.0, 503.0]  # what the program says it added, not the request
    assert rows.loc[2, "found"] and not rows.loc[0, "found"] and not rows.loc[1, "found"]


def test_the_power_is_the_smallest_delay_found_in_enough_runs():
    rows = pd.DataFrame({"group": "g", "role": "fixed", "program": "p", "target": "t", "release": "x 1",
                         "blocks": 100, "run": [1, 1, 1, 2, 2, 2], "delay_ns": [0, 20, 100] * 2,
                         "injected_ns": [0, 61, 121, 0, 63, 119],
                         "found": [False, True, True, False, False, True],
                         "alarm": [False, True, True, True, False, True],
                         "median_ns": [0, 60, 120, 1, 2, 118],
                         "mean_ns": [-22.9, 60, 120, 7.3, 2, 118], "reason": ""})
    s = tl.power_summary(rows).iloc[0]
    assert s["power_ns"] == 120.0 and s["runs"] == 2  # 62 ns was found in 1 of 2 runs only
    assert s["tried"] == "62 ns (asked 20): found in 1 of 2; 120 ns (asked 100): found in 2 of 2"
    assert s["duplicates"] == "1 of 2" and s["duplicate_means"] == "-22.9, 7.3"
    assert s["power"] == "smallest injected delay found: 120 ns (2 runs)"


def test_the_steps_bracket_the_screens_own_interval():
    ladder = [5, 20, 100, 500, 2000, 10000, 50000]
    assert tl.steps(ladder, 0.0, 2) == [5, 20]
    assert tl.steps(ladder, 25.0, 2) == [20, 100]
    assert tl.steps(ladder, 4000.0, 2) == [2000, 10000]
    assert tl.steps(ladder, 1e9, 2) == [10000, 50000]


def test_no_text_calls_the_bootstrap_bound_a_detectable_effect(marvin, monkeypatch):
    _fake_program(monkeypatch)
    s = leakage.screen("liboqs", "ML-KEM-768-decaps", classes=["valid", "valid"], blocks=200)
    assert s.verdict == leakage.NO_LEAK and "no leak larger than" not in s.reason
    assert "not the smallest leak the screen finds" in s.reason
    labels = [getattr(c, "label", "") or getattr(c, "name", c) for c in tl.VERDICT_COLUMNS + tl.PAPER_COLUMNS]
    assert not any("detectable" in str(x).lower() for x in labels)
    table = tl.with_power(tl.verdicts(*marvin), pd.DataFrame(
        [{"program": "python", "target": "cryptography-ecdsa-p256-sign", "power_ns": 62.0,
          "power": "smallest injected delay found: 62 ns (1 run)", "duplicates": "0 of 1",
          "duplicate_medians": "0", "duplicate_means": "1.0"}]))
    note = tl.closing_note(table, {"runs": 0, "judged": 0, "leaks": 0}, 0.01)
    assert "no leak larger than" not in note and "smallest injected delay found: 62 ns" in note
    assert "slow tail alone" in note and "counter's step" in note


def test_the_python_harness_busy_waits_inside_the_interval():
    """screen.py under this interpreter: the copy given a delay reports what its wait added, at least the
    delay, and every one of its times includes it."""
    request = {"target": "hmac-compare-digest", "classes": ["differ-first"] * 3, "order": [[0, 1, 2]] * 30,
               "warmup_blocks": 2, "seed": 1, "delays_ns": [0, 0, 20000]}
    out = subprocess.run([sys.executable, "screen.py", "screen"], input=json.dumps(request), text=True,
                         capture_output=True, cwd=ROOT / "native" / "leakage" / "python", timeout=60)
    doc = json.loads(out.stdout)
    times = np.asarray(doc["times_ns"])
    assert doc["injected_ns"][:2] == [0, 0] and doc["injected_ns"][2] >= 20000
    assert (times[:, 2] >= 20000).all()


# ------------------------------------------------------------------ 3. published pairings and controls


def test_every_pairing_says_what_differs(marvin):
    side = tl.published(tl.verdicts(*marvin)).set_index("source")
    assert "key size: ours RSA-512, published 2048-bit" in side.loc["python-rsa-230", "differs"]
    crypto = side.loc["pyca-cryptography-9785"].iloc[0]
    assert "OpenSSL: ours 1.1.1h" in crypto["differs"] and "1.1.1k" in crypto["differs"]
    assert "newer than every release the source names" in side.loc["python-ecdsa-ghsa-wj6h", "differs"]
    assert "one of the published range" in side.loc["bc-java-cve-2026-5598", "differs"]
    assert not side["same"].fillna(False).any()
    text = tl.describe_published(tl.published(tl.verdicts(*marvin)))
    assert "the same implementation and release" not in text


def test_a_gap_beyond_an_order_of_magnitude_is_commented_with_its_interval():
    r = {"ratio_low": 0.11, "ratio_high": 0.14}
    assert not tl.beyond_expectation(r)
    assert tl.beyond_expectation({"ratio_low": 0.05, "ratio_high": 0.08})
    ratio, lo, hi = tl.ratio_interval(-12150, -21800, -2500, 800)
    assert lo == pytest.approx(2500 / 800) and hi == pytest.approx(21800 / 800)


def test_a_counterpart_of_another_library_says_so(marvin):
    table = tl.verdicts(*marvin)
    minerva = table[table["target"] == "cryptography-ecdsa-p256-sign"].iloc[0]
    assert minerva["counterpart"] == "another library than the known leak (python-ecdsa 0.19.1)"
    assert "another library than the known leak" in tl.describe_screen(table)


def test_a_control_whose_interval_excludes_zero_is_discussed(marvin):
    table = tl.with_power(tl.verdicts(*marvin), pd.DataFrame(
        [{"program": "liboqs", "target": "FrodoKEM-640-SHAKE-decaps", "power_ns": 500.0,
          "power": "finds 500 ns", "duplicates": "0 of 1", "duplicate_medians": "3",
          "duplicate_means": "4.0"}]))
    text = tl.describe_controls(table)
    assert "liboqs 0.16.0" in text and "-567 ns \\[-930, -113\\]" in text and "excludes zero" in text
    assert "as large as injected delays it finds (500 ns)" in text and "0 of 1" in text
    assert text in tl.closing_note(table, {"runs": 0, "judged": 0, "leaks": 0}, 0.01)


# ------------------------------------------------------------------ 4. the quantile figure


def test_each_panel_names_release_operation_and_baseline_with_bands_and_legend_outside(marvin):
    items, screens = marvin
    fig = tl.plot_quantiles(items, screens, ["Marvin", "Minerva"])
    fig.canvas.draw()
    axes = [a for a in fig.axes if a.get_title()]
    titles = [a.get_title() for a in axes]
    assert any("python-rsa 4.9" in t and "RSA-512 PKCS#1 v1.5 decryption" in t for t in titles), titles
    assert len(set(titles)) == len(titles)
    for ax in axes:
        assert "minus valid" in ax.get_ylabel()
        assert ax.collections, "no bootstrap band"
        legend, box = ax.get_legend().get_window_extent(), ax.get_window_extent()
        assert not legend.overlaps(box)


def test_the_shapes_tell_a_tail_from_a_whole_curve():
    items = tl.plan([{"program": "liboqs", "target": t, "blocks": 100, "group": "g", "role": "known leak"}
                     for t in ("whole", "tail")])
    screens = [_screen("liboqs", "whole", "x", "1", "op", ["valid", "bad"], _times(2000, shift=200.0)),
               _screen("liboqs", "tail", "x", "1", "op", ["valid", "bad"], _times(2000, tail=5000.0))]
    text = tl.describe_shapes(items, screens, ["g"]).splitlines()
    assert "the whole curve moved" in text[0]
    assert "not the whole curve" in text[1] and "90th" in text[1]


def test_the_captions_no_longer_say_a_leak_shifts_a_whole_curve():
    nb = json.loads(NOTEBOOK.read_text())
    prose = " ".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    for text in (prose, PAPER.read_text()):
        assert "shifts a whole curve" not in text and "moves a whole curve" not in text
        assert "only" in text and "bootstrap band" in text


# ------------------------------------------------------------------ 5. intervals on compared numbers


def test_the_leaks_the_closing_note_lists_carry_their_intervals(marvin):
    note = tl.closing_note(tl.verdicts(*marvin), {"runs": 0, "judged": 0, "leaks": 0}, 0.01)
    assert "(rsa-512-pkcs1v15-decrypt, 230 ns \\[200, 251\\])" in note


def test_a_ratio_to_a_published_value_carries_the_interval_of_ours(marvin):
    text = tl.describe_published(tl.published(tl.verdicts(*marvin)))
    line = next(x for x in text.splitlines() if x.startswith("- **python-rsa-230**"))
    assert "ours over the published magnitude: 0.13× [0.11, 0.14]" in line
    assert "the source's value" in line
