"""The timing screen under load (issue #41): a load the paired blocks cancel keeps the verdict and is named;
no free core or a moved clock gives no verdict naming the load and a quiet rerun's time; the notebook's and
the paper's counts keep the screens without a verdict apart from the clean ones."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pqlab.checks import leakage
from pqlab.core.errors import UnknownName
from pqlab.measure import noise
from pqlab.runners import leakage as programs
from pqlab.studies import timing_leakage as tl

CORES = 2


def _machine(monkeypatch, others_cores, steal=0.0, scalar_end=1.0, vector_end=1.0, shift_ns=0.0):
    """A screen's machine, faked: a two-core machine whose other processes used `others_cores` and whose
    scalar and vector reference loops ended at these multiples of their start; the program returns blocks of
    times with a drift shared within each block, and the second class `shift_ns` slower."""
    readings = iter([{"scalar_ns": 1e6, "vector_ns": 1e6},
                     {"scalar_ns": 1e6 * scalar_end, "vector_ns": 1e6 * vector_end}])
    monkeypatch.setattr(noise, "reference_times", lambda: next(readings))
    monkeypatch.setattr(noise, "round_noise", lambda before, after: {
        "wall_s": 1.0, "steal": steal, "others_cores": others_cores, "ctxt": 0, "own_involuntary": 0,
        "load1": None, "mhz": None})
    monkeypatch.setattr(leakage, "cores", lambda: CORES)
    rng = np.random.default_rng(3)

    def program(name, request):
        n, k = len(request["order"]), len(request["classes"])
        times = 10_000 + np.cumsum(rng.normal(0, 5, n))[:, None] + rng.standard_t(3, (n, k)) * 20
        times[:, 1] += shift_ns
        return {"times_ns": times.tolist()}

    monkeypatch.setattr(programs, "run", program)


@pytest.mark.parametrize("shift_ns, verdict", [(40.0, leakage.LEAK), (0.0, leakage.NO_LEAK)])
def test_a_steady_one_core_load_keeps_the_verdict_and_is_named(shift_ns, verdict, monkeypatch):
    _machine(monkeypatch, others_cores=1.0, steal=0.01, shift_ns=shift_ns)
    s = leakage.screen("liboqs", "ML-KEM-768-decaps", classes=["valid", "invalid-first"], blocks=2000)
    assert s.verdict == verdict, s.reason
    assert s.others_cores == 1.0 and s.load == "other processes used 1.00 cores of 2, steal 1.0%"
    assert f"under load ({s.load})" in s.reason
    assert s.summary()["load"] == s.load and not s.summary()["no_free_core"]


def test_a_quiet_machine_names_no_load(monkeypatch):
    _machine(monkeypatch, others_cores=0.05, shift_ns=40.0)
    s = leakage.screen("liboqs", "ML-KEM-768-decaps", classes=["valid", "invalid-first"], blocks=500)
    assert s.verdict == leakage.LEAK and s.load == "" and "load" not in s.reason


@pytest.mark.parametrize("others, steal, scalar_end, vector_end, why, named", [
    (1.6, 0.0, 1.0, 1.0, "left no more than 0.5 of a core free",
     "other processes used 1.60 cores of 2, steal 0.0%"),
    (1.2, 0.2, 1.0, 1.0, "left no more than 0.5 of a core free",
     "other processes used 1.20 cores of 2, steal 20.0%"),
    (1.0, 0.0, 1.15, 1.0, "reference loop moved (+15%)", "other processes used 1.00 cores of 2, steal 0.0%"),
    (0.0, 0.0, 1.15, 1.0, "reference loop moved (+15%)", "other processes used 0.00 cores of 2, steal 0.0%"),
])
def test_no_free_core_or_a_moved_clock_gives_no_verdict_naming_the_load_and_a_quiet_rerun(
        others, steal, scalar_end, vector_end, why, named, monkeypatch):
    _machine(monkeypatch, others_cores=others, steal=steal, scalar_end=scalar_end, vector_end=vector_end,
             shift_ns=40.0)
    s = leakage.screen("liboqs", "ML-KEM-768-decaps", classes=["valid", "invalid-first"], blocks=500)
    assert s.verdict == leakage.NO_VERDICT, s.reason
    assert why in s.reason and f"({named})" in s.reason
    assert f"a quiet rerun takes about {s.quiet_s:.0f} s" in s.reason and 0 <= s.quiet_s <= s.wall_s
    assert not s.tests.empty  # the statistics are kept for the reader, the verdict is not given


def test_the_vector_loop_alone_does_not_gate(monkeypatch):
    _machine(monkeypatch, others_cores=0.0, vector_end=1.2, shift_ns=40.0)
    s = leakage.screen("liboqs", "ML-KEM-768-decaps", classes=["valid", "invalid-first"], blocks=500)
    assert s.verdict == leakage.LEAK, s.reason


def test_the_rule_is_free_cores(monkeypatch):
    monkeypatch.setattr(leakage, "cores", lambda: 4)
    edge = 4 - leakage.FREE_CORES
    assert leakage.unjudgeable({"others_cores": edge - 0.01, "steal": 0.0}) == ""
    assert "core free" in leakage.unjudgeable({"others_cores": edge, "steal": 0.0})
    # steal takes cores
    assert "core free" in leakage.unjudgeable({"others_cores": edge - 0.5, "steal": 0.5 / 4})
    assert leakage.unjudgeable({"others_cores": None, "steal": None}) == ""  # unknown: the clock alone gates
    assert leakage.load_cores({"others_cores": 1.0, "steal": None}) == 1.0


# -------------------------------------------------------------------- the counts of notebook 09 and the paper


def _screen(target, verdict, *, others=0.0, load="", quiet_s=None, median=0.0, role_classes=("a", "b")):
    diffs = pd.DataFrame({"pair": ["b - a"], "median_ns": [median], "ci_low_ns": [median - 1],
                          "ci_high_ns": [median + 1], "mean_ns": [median]})
    tests = pd.DataFrame({"pair": ["b - a"], "test": ["sign"], "p": [0.5], "threshold": [0.01],
                          "significant": [False]})
    return leakage.Screen("liboqs", target, list(role_classes), verdict, reason=f"{verdict} because",
                          implementation="liboqs", version="x", times=np.zeros((100, 2)), differences=diffs,
                          tests=tests, bound_ns=3.0, wall_s=30.0,
                          noise={"others_cores": others, "steal": 0.0},
                          load=load, others_cores=others, quiet_s=quiet_s)


@pytest.fixture
def four(monkeypatch):
    """Four screens: a leak found under a one-core load, a clean one, one with no free core and one not
    run."""
    monkeypatch.setattr(leakage, "cores", lambda: CORES)
    items = tl.plan([{"program": "liboqs", "target": t, "blocks": 100, "group": "g", "role": "clean control"}
                     for t in ("t1", "t2", "t3", "t4")])
    screens = [_screen("t1", leakage.LEAK, others=1.0, load="other processes used 1.00 cores of 2",
                       median=50.0),
               _screen("t2", leakage.NO_LEAK),
               _screen("t3", leakage.NO_VERDICT, others=1.8, load="other processes used 1.80 cores of 2",
                       quiet_s=12.4),
               leakage.Screen("liboqs", "t4", ["a", "b"], leakage.NOT_SCREENED, reason="no such thing here")]
    return items, screens


def test_the_count_keeps_screens_without_a_verdict_apart(four):
    table = tl.verdicts(*four)
    text = tl.describe_counts(table)
    assert text.startswith("Of 4 screens, 1 said leak, 1 found no leak, 1 gave no verdict (1 with no free "
                           "core; a quiet rerun of them takes about 12 s) and 1 could not run here."), text
    assert "1 of the screens with a verdict ran on a loaded machine (other processes used 1.00 cores)" in text
    numbers = tl.numbers(table, {"runs": 0, "judged": 0, "leaks": 0}, 0.01)
    assert (numbers["screens"], numbers["leaks"], numbers["noLeaks"], numbers["noVerdicts"],
            numbers["notScreened"], numbers["loaded"]) == (4, 1, 1, 1, 1, 1)
    assert text in tl.closing_note(table, {"runs": 0, "judged": 0, "leaks": 0}, 0.01)


def test_a_span_of_cores_reads_as_one_value_where_its_ends_agree():
    assert (tl.span(pd.Series([0.951, 1.27])) == "0.95 to 1.27"
            and tl.span(pd.Series([1.001, 0.999])) == "1.00")


def test_a_quiet_count_says_none_was_without_a_verdict(four):
    items, screens = four
    text = tl.describe_counts(tl.verdicts(items[1:2], screens[1:2]))
    assert text == "Of 1 screens, 0 said leak, 1 found no leak and 0 gave no verdict."


def test_false_positives_are_counted_over_the_runs_with_a_verdict(monkeypatch):
    monkeypatch.setattr(leakage, "cores", lambda: CORES)
    items = tl.identical("liboqs", "ML-KEM-768-decaps", "valid", 4, 100)
    screens = [_screen("ML-KEM-768-decaps", leakage.LEAK, others=1.1,
                       load="other processes used 1.10 cores of 2"),
               _screen("ML-KEM-768-decaps", leakage.NO_LEAK),
               _screen("ML-KEM-768-decaps", leakage.NO_VERDICT, others=1.9, load="x", quiet_s=3.0),
               _screen("ML-KEM-768-decaps", leakage.NO_VERDICT, others=1.9, load="x", quiet_s=3.0)]
    df, fp = tl.false_positives(items, screens, 0.01)
    assert (fp["runs"], fp["judged"], fp["leaks"], fp["loaded"]) == (4, 2, 1, 1) and fp["rate"] == 0.5
    text = tl.describe_false_positives(fp)
    assert "in 1 of the 2 runs with a verdict (2 of 4 runs gave none)" in text, text
    assert "1 of the runs with a verdict ran on a loaded machine (other processes used 1.10 cores)" in text
    table = tl.verdicts(tl.plan([{"program": "liboqs", "target": "t", "blocks": 100, "group": "g",
                                  "role": "clean control"}]), [_screen("t", leakage.NO_LEAK)])
    note = tl.closing_note(table, fp, 0.01)
    assert "in 1 of the 2 runs with a verdict at alpha 0.01 (2 of 4 runs gave none)." in note
    numbers = tl.numbers(table, fp, 0.01)
    assert (numbers["fpAll"], numbers["fpRuns"], numbers["fpNoVerdicts"], numbers["fpLeaks"]) == (4, 2, 2, 1)


def test_an_unknown_load_is_refused_before_anything_runs(monkeypatch):
    monkeypatch.setattr(programs, "run", lambda *a, **k: pytest.fail("measured despite a bad load"))
    items = tl.plan([{"program": "liboqs", "target": "ML-KEM-768-decaps", "blocks": 40, "group": "g",
                      "role": "clean control"}])
    with pytest.raises(UnknownName, match="close matches: spin"):
        tl.run(items, load="spinn", save=False, progress=False)
    with pytest.raises(UnknownName, match="close matches: spin"):
        tl.under_load("spinn", save=False, progress=False)
