"""Issue #28, notebooks 04 and 05: every sentence true for the data, every pairing labelled.

Each test asserts the property a referee found false in the text generated before the fix:

* 04 c0: only the study's verify column fails to follow from its cycles (its sign column does);
* 04: a pqlab / native ratio below 1 is named, with its interval, and explained from the rounds of both runs;
  a ratio lies inside its own interval;
* 05 c0: the study's energy is not time x power within rounding (its own check says so);
* 05 c23: the study names no statistic for its times ("published mean times" was not true);
* 05 recommendations: two implementations compared are labelled with language and implementation;
* 05 ``describe_hqc``: where the liboqs that ran came from, from the run's record.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from pqlab.core.references import load_reference
from pqlab.runners import fidelity
from pqlab.studies import energy_pi4 as energy
from pqlab.studies import round2_study as R
from pqlab.studies import signature_cycles as F
from pqlab.studies.energy_pi4 import published

ROOT = Path(__file__).resolve().parents[2]


def cell(notebook: str, cell_id: str) -> str:
    nb = json.loads((ROOT / "notebooks" / notebook).read_text())
    return next("".join(c["source"]) for c in nb["cells"] if c.get("id") == cell_id)


# ----- 04: the study's time columns ---------------------------------------------------------------

def test_only_the_verify_column_is_said_not_to_follow():
    counts = R.count_reference_matches(R.recompute_reference(load_reference(R.REFERENCE_TABLE)))
    verdict = R.reference_verdict(counts)
    assert "**sign** time column follows" in verdict and "**verify** time column does not" in verdict
    assert "time columns do not" not in verdict  # never both, when the sign column follows in every row
    assert f"{counts['verify_matches']} of {counts['rows']}" in verdict  # the count, from the check
    assert R.reference_verdict(dict(counts, verify_matches=counts["rows"])).startswith(
        "Both of the study's time")
    assert "**sign** and **verify** time columns do not" in R.reference_verdict(dict(counts, sign_matches=3))
    assert R.describe_reference(counts).startswith(verdict)
    intro = " ".join(cell("04_signature_cycles.ipynb", "nb04-00").split())
    assert "time columns do not follow" not in intro
    assert re.search(r"sign times follow from its sign cycles .* its verify times do not", intro)


# ----- 04: pqlab / native below 1 ------------------------------------------------------------------

class _Run:
    """sample_values() of a run: per-round centres of (backend, algorithm, operation), 1 % noise."""

    def __init__(self, run_id, centres):
        self.run_id, self.centres = run_id, centres

    def sample_values(self, algorithm, operation, *, backend=None, build=None, message_bytes=None,
                      column="cycles"):
        per_round = self.centres.get((backend, algorithm, operation))
        if per_round is None:
            return np.array([])
        rng = np.random.default_rng(len(algorithm) + len(operation))
        values = np.concatenate([c * (1 + 0.01 * rng.standard_normal(10)) for c in per_round])
        idx = pd.MultiIndex.from_arrays([[self.run_id] * len(values),
                                         np.repeat(np.arange(len(per_round)), 10)],
                                        names=["run_id", "round"])
        return pd.Series(values, index=idx)


def _pqlab_vs_native(native_rounds, pqlab_rounds=(210e3,) * 6):
    """A study of one operation (MAYO-1 verify) and the rows `collect_rows` would give from its samples."""
    key = ("MAYO-1", "verify")
    study = SimpleNamespace(runs={"default": _Run("py", {("liboqs", *key): list(pqlab_rounds)})},
                            native=_Run("c", {("native", *key): list(native_rounds)}))
    rows = []
    for build, backend, run in (("liboqs optimised", "liboqs", study.runs["default"]),
                                ("native optimised", "native", study.native)):
        s = run.sample_values(*key, backend=backend)
        rows.append({"algorithm": key[0], "operation": key[1], "table_family": "multivariate", "build": build,
                     "cycles_mean": s.mean(), "cycles_median": s.median(), "time_ns_mean": s.mean() / 2.6})
    table = F.compute_python_over_native(pd.DataFrame(rows))
    table = F.with_intervals(table, study, "liboqs optimised", "native optimised", "ratio")
    return F.with_round_checks(table, study, "liboqs optimised", "native optimised", "ratio",
                               ("pqlab", "native"))


COUNTER = {"basis": "cycles", "unit": "TSC reference cycles at 2.60 GHz", "label": "tsc"}


def test_a_ratio_lies_inside_its_own_interval():
    # four of six native rounds slow: the pooled mean and the rounds' median disagree
    t = _pqlab_vs_native([200e3, 260e3, 260e3, 200e3, 260e3, 260e3]).iloc[0]
    assert t["ratio_ci_low"] <= t["ratio"] <= t["ratio_ci_high"]
    # six rounds split 2:4 between two levels: every round counts below stats.ROBUST_FROM (issue #41: no round
    # ignored by construction), so the interval is as wide as their spread makes it, not the 4 equal rounds'
    # zero
    assert t["ratio_ci_high"] / t["ratio_ci_low"] > 1.3


def test_a_ratio_below_one_is_named_and_explained_from_the_rounds():
    t = _pqlab_vs_native([200e3, 260e3, 260e3, 200e3, 260e3, 260e3])
    row = t.iloc[0]
    assert row["ratio"] < 1 <= row["ratio_fastest_rounds"]
    assert row["native_slow_rounds"] == 4 and row["native_rounds"] == 6 and row["pqlab_slow_rounds"] == 0
    text = F.describe_python_over_native(t, COUNTER)
    below = text.split("**Below 1**")[1]
    assert "MAYO-1 verify 0.81× [" in below and "with the whole interval below 1" in below
    assert "not that pqlab's path is faster" in below
    assert "4 of the native runner's 6 rounds" in below and "against 0 of pqlab's 6" in below
    assert re.search(r"MAYO-1 verify \(fastest rounds 1\.0\d; native: 4 slow of 6 rounds, "
                     r"the slowest \d+ % above its fastest\)", below)
    assert "slow rounds of the machine, not the harness" in below


def test_a_ratio_below_one_that_slow_rounds_do_not_explain_says_so():
    text = F.describe_python_over_native(_pqlab_vs_native([230e3] * 6), COUNTER)
    assert ("MAYO-1 verify 0.91×" in text and "On their fastest rounds too" in text
            and "do not explain it" in text)
    # both: one (pool 1)
    assert "records nothing else that would" in text and "pre-made signatures" not in text
    above = F.describe_python_over_native(_pqlab_vs_native([200e3] * 6), COUNTER)
    assert "No ratio lies below 1." in above and "Below 1" not in above


def test_fastest_rounds_counts_slow_rounds_per_side():
    idx = pd.MultiIndex.from_arrays([["r"] * 4, [0, 1, 2, 3]], names=["run_id", "round"])
    out = fidelity.fastest_rounds(pd.Series([100.0, 105, 120, 100], index=idx),
                                  pd.Series([50.0, 50, 50, 80], index=idx))
    assert out["fastest_ratio"] == pytest.approx(2.0)
    assert (out["num_slow"], out["den_slow"], out["num_rounds"]) == (1, 1, 4)
    assert out["den_worst"] == pytest.approx(0.6)
    bare = fidelity.fastest_rounds(np.array([1.0, 2.0]), np.array([1.0]))  # no rounds: nothing to say
    assert np.isnan(bare["fastest_ratio"]) and bare["num_rounds"] == 0


# ----- 05: what the study tabulated -----------------------------------------------------------------

def test_energy_is_not_said_to_be_time_times_power():
    study = load_reference(published.REFERENCE_NAME)
    beyond = int(published.time_power_check(study)["beyond_rounding"].sum())
    assert beyond > 0  # the data: not time x power within rounding
    intro = " ".join(cell("05_energy.ipynb", "cell-00").split())
    assert "tabulated time × whole-board power" not in intro
    assert "not time × power within the rounding" in intro
    t = pd.DataFrame([{"algorithm": "ML-KEM-768", "backend": "liboqs", "kind": "kem", "family": "lattice",
                       "nist_level": 3, "operation": op, "message_bytes": pd.NA, "time_ms": 0.02}
                      for op in energy.USE["kem"]])
    text = energy.recommendations_markdown(t, study)
    assert "power x time" not in text and "the board's idle draw included" in text


def test_the_studys_times_are_never_called_means():
    replay_intro = " ".join(cell("05_energy.ipynb", "cell-23").split())
    assert "mean time" not in replay_intro and "published means" not in replay_intro
    assert "names no statistic for its times" in replay_intro
    study = load_reference(published.REFERENCE_NAME)
    table, traces = published.replay_reference(study, [2.0, 3.0])
    text = published.replay_markdown(table, traces)
    assert "means" not in text and "names no statistic for its times" in text


# ----- 05: implementations and languages beside each other --------------------------------------------

IMPLEMENTATIONS = {"liboqs": "liboqs 0.13.0 (default build)",
                   "cryptography": "cryptography 50.0.2 (OpenSSL 4.0.3)",
                   "ascon": "ascon 0.0.9 (pure Python, PyPI)"}


def _times() -> pd.DataFrame:
    rows = []
    for op in energy.USE["kem"]:
        rows += [("ML-KEM-768", "liboqs", "kem", "lattice", 3, op, None, 0.02),
                 ("X25519", "cryptography", "kem", "elliptic-curve", None, op, None, 0.04)]
    for size in (64, 16384):
        for op in energy.USE["cipher"]:
            rows += [("AES-256-GCM", "cryptography", "cipher", "symmetric", 5, op, size, 0.001 * size / 64),
                     ("ChaCha20-Poly1305", "cryptography", "cipher", "symmetric", 5, op, size,
                      0.002 * size / 64),
                     ("Ascon-128a", "ascon", "cipher", "symmetric", 1, op, size, 0.2 * size / 64)]
    df = pd.DataFrame(rows, columns=["algorithm", "backend", "kind", "family", "nist_level", "operation",
                                     "message_bytes", "time_ms"])
    df["nist_level"] = df["nist_level"].astype("Int64")
    df["message_bytes"] = df["message_bytes"].astype("Int64")
    return df.assign(implementation=df["backend"].map(IMPLEMENTATIONS))


def test_recommendations_label_every_comparison_with_language_and_implementation():
    setup = load_reference(f"{published.REFERENCE_NAME}_setup")
    text = energy.recommendations_markdown(_times(), load_reference(published.REFERENCE_NAME), None, setup)
    items = [line for line in text.splitlines() if line.startswith("- **") and "no energy" not in line
             and "Pi 4, published" not in line]
    assert items
    # every algorithm of ours named in an item is said to run in a language, through a library
    for line in items:
        ran = line.split(" What ran: ")[1]
        for name in ("ML-KEM-768", "X25519", "AES-256-GCM", "ChaCha20-Poly1305", "Ascon-128a"):
            if name in line.split(" What ran: ")[0]:
                assert name in ran, (name, line)
    latency = text.split("### Energy-constrained")[0]
    # pqlab's C loop: no binding; each side says how its calls were made (referee round 3)
    assert ("ML-KEM-768 in C (liboqs 0.13.0 (default build); a sample's calls in pqlab's C loop, one call "
            "from Python per sample)") in latency
    assert ("X25519 in C and assembly (cryptography 50.0.2 (OpenSSL 4.0.3); one call from Python per "
            "operation)") in latency
    assert ("Ascon-128a in pure Python (ascon 0.0.9 (pure Python, PyPI); one call from Python per operation)"
            in latency)
    assert "Ascon-128a runs in pure Python beside compiled code" in latency
    assert "the study's liboqs 'unknown' from Python 3.11.2" in text  # what ran the published rows
    assert energy.implementation_label("somewhere", "x 1.0") == "language not recorded (x 1.0)"


# ----- 05: where the liboqs that ran HQC came from ------------------------------------------------------

def _hqc_run(path, version="0.13.0"):
    m = pd.DataFrame([{"algorithm": "HQC-128", "backend": "liboqs"}])
    return SimpleNamespace(measurements=m, meta={"liboqs": {"liboqs_version": version, "liboqs_path": path}})


def test_describe_hqc_says_where_the_liboqs_that_ran_came_from():
    conda = energy.describe_hqc([_hqc_run("/opt/conda/envs/pq/lib/liboqs.so.7")])
    assert ("oqs-sys" not in conda and "pqlab did not build" in conda
            and "/opt/conda/envs/pq/lib/liboqs.so.7" in conda)
    own = energy.describe_hqc([_hqc_run("/home/someone/pqlab/.venv/liboqs/default/lib/liboqs.so")])
    assert "pqlab's own build" in own and "`oqs-sys` crate" in own and "pre-fix HQC" in own
    unknown = energy.describe_hqc([_hqc_run("")])
    assert "did not record" in unknown and "oqs-sys" not in unknown
    newer = energy.describe_hqc([_hqc_run("/usr/lib/liboqs.so", version="0.15.0")])
    assert "pre-fix" not in newer and "not recorded by the run" in newer
