"""A researcher's own question in a notebook (issue 29): a ratio that knows what it compares, a bench that
says which backend it picked, arguments that refuse what they do not know, units instead of multipliers, and a
run, a figure and an export that display as a reader expects."""
from __future__ import annotations

import re
import warnings

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from conftest import fake_run  # noqa: E402

import pqlab  # noqa: E402
from pqlab.backends import algorithms
from pqlab.core.errors import BadInput, PqlabWarning, UnknownName  # noqa: E402
from pqlab.measure import stats  # noqa: E402
from pqlab.publish import export, plotting
from pqlab.store.results import Run  # noqa: E402

LIBOQS = "liboqs 0.13.0 (default build)"
OPENSSL = "cryptography 50.0.2 (OpenSSL 4.0.3)"


def synthetic_run(sides, rounds=6, run_id="20261126T000000Z-own-abc123", operation="sign", message_bytes=100):
    """A run of one operation per (algorithm, backend, implementation, loops, ns per call, build), measured in
    `rounds` rounds of a few samples each, with per-round noise shared by every side (as a real round shares
    its machine)."""
    rng = np.random.default_rng(1)
    shared = np.exp(rng.normal(0, 0.05, rounds))
    measurements, samples = [], []
    for algorithm, backend, implementation, loops, ns, build, *own in sides:
        operation_of_side = own[0] if own else operation
        measurements.append({"run_id": run_id, "algorithm": algorithm, "backend": backend, "build": build,
                             "operation": operation_of_side, "message_bytes": message_bytes, "loops": loops,
                             "verified": True, "implementation": implementation,
                             "library_version": implementation.split()[1], "time_ns_median": ns,
                             "samples": rounds * 4})
        for r in range(rounds):
            for i in range(4):
                samples.append({"run_id": run_id, "algorithm": algorithm, "backend": backend, "build": build,
                                "operation": operation_of_side, "message_bytes": message_bytes, "round": r,
                                "sample": i, "loops": loops,
                                "time_ns": ns * shared[r] * (1 + 0.01 * i)})
    return Run.from_rows(run_id, measurements, [], samples, {"status": "complete", "round_noise": []})


@pytest.fixture
def run():
    return synthetic_run([("ML-DSA-65", "liboqs", LIBOQS, 1, 50_000.0, "liboqs-0.13.0"),
                          ("ML-DSA-65", "cryptography", OPENSSL, 1, 340_000.0, ""),
                          ("ECDSA-P384", "cryptography", OPENSSL, 1, 100_000.0, "")])


def test_a_ratio_across_libraries_warns_unless_both_sides_name_their_backend(run):
    with pytest.warns(PqlabWarning, match="different implementations: liboqs .* against cryptography"):
        r = run.ratio("ML-DSA-65@liboqs", "ECDSA-P384", operation="sign")
    assert "cross-implementation" in r.flags and "⚠ different implementations" in str(r)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # named on both sides: said in the text and flags, not warned
        named = run.ratio("ML-DSA-65@liboqs", "ECDSA-P384@cryptography", operation="sign")
    assert "cross-implementation" in named.flags and "different implementations" in str(named)
    assert "Name both backends" not in str(named)


def test_a_ratio_within_one_library_says_so_and_has_its_paired_interval(run):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = run.ratio("ML-DSA-65@cryptography", "ECDSA-P384@cryptography", operation="sign")
    assert r.flags == () and r.rounds == 6 and r.statistic == "median"
    assert r.low < r.value < r.high and r.value == pytest.approx(3.4, rel=0.01)
    assert r.high / r.low < 1.1  # the shared per-round noise cancels: paired by round
    assert f"Both sides ran in {OPENSSL}" in str(r) and r.text in r._repr_html_()


def test_a_name_that_ran_on_several_backends_must_be_chosen(run):
    with pytest.raises(BadInput, match="ML-DSA-65 ran on several backends .*'ML-DSA-65@cryptography' or "
                                       "'ML-DSA-65@liboqs'"):
        run.ratio("ML-DSA-65", "ECDSA-P384", operation="sign")


def test_a_ratio_refuses_unknown_names_operations_and_backends_with_close_matches(run):
    with pytest.raises(UnknownName, match="'ECDSA-P348'; close matches: ECDSA-P384"):
        run.ratio("ML-DSA-65@liboqs", "ECDSA-P348", operation="sign")
    with pytest.raises(UnknownName, match="'sing'; close matches: sign"):
        run.ratio("ML-DSA-65@liboqs", "ECDSA-P384", operation="sing")
    with pytest.raises(UnknownName, match="'oqs'; close matches: liboqs"):
        run.ratio("ML-DSA-65@oqs", "ECDSA-P384", operation="sign")


def test_different_builds_of_one_library_are_flagged_as_another_release():
    run = synthetic_run([("ML-KEM-768", "liboqs", LIBOQS, 1, 20_000.0, "liboqs-0.13.0"),
                         ("ML-DSA-65", "liboqs", "liboqs 0.13.0 (generic build)", 1, 60_000.0,
                          "liboqs-0.13.0+generic")])
    with pytest.warns(PqlabWarning, match="different releases or builds"):
        r = run.ratio("ML-DSA-65", "ML-KEM-768", operation="sign")
    assert r.flags == ("cross-release",)


def test_samples_of_different_loop_counts_are_compared_by_their_medians_and_flagged():
    run = synthetic_run([("AES-256-GCM", "cryptography", OPENSSL, 20, 1_000.0, ""),
                         ("ECDSA-P384", "cryptography", OPENSSL, 1, 100_000.0, "")])
    r = run.ratio("AES-256-GCM", "ECDSA-P384", operation="sign")
    assert r.statistic == "median" and "unequal-batches" in r.flags and r.loops == (20, 1)
    assert "means of 20 and 1 calls" in str(r)
    asked = run.ratio("AES-256-GCM", "ECDSA-P384", operation="sign", statistic="mean")
    assert asked.statistic == "mean" and "means of" in str(asked)
    with pytest.raises(UnknownName, match="median"):
        run.ratio("AES-256-GCM", "ECDSA-P384", operation="sign", statistic="meen")


def stalled_run(rounds=18, stalls=3):
    """ML-DSA-65 sign (18 µs calls, batches of 4) against ECDSA-P384 sign (27 µs single calls), each round a
    few samples, with 0.4-1.1 ms stalls among `stalls` samples of every round on the ECDSA side
    (issue #41)."""
    rng = np.random.default_rng(7)
    run_id = "20261129T000000Z-stall-abc123"
    measurements, samples = [], []
    for algorithm, loops, ns in (("ML-DSA-65", 4, 18_000.0), ("ECDSA-P384", 1, 27_000.0)):
        measurements.append({"run_id": run_id, "algorithm": algorithm, "backend": "cryptography", "build": "",
                             "operation": "sign", "message_bytes": 100, "loops": loops, "verified": True,
                             "implementation": OPENSSL, "library_version": "50.0.2", "time_ns_median": ns,
                             "samples": rounds * 20})
        for r in range(rounds):
            times = ns * np.exp(rng.normal(0, 0.01, 20))
            if algorithm == "ECDSA-P384":
                times[rng.choice(20, stalls, replace=False)] += rng.uniform(400_000, 1_100_000, stalls)
            samples += [{"run_id": run_id, "algorithm": algorithm, "backend": "cryptography", "build": "",
                         "operation": "sign", "message_bytes": 100, "round": r, "sample": i, "loops": loops,
                         "time_ns": t} for i, t in enumerate(times)]
    return Run.from_rows(run_id, measurements, [], samples, {"status": "complete", "round_noise": []})


def test_a_ratio_over_rounds_with_stalls_agrees_with_the_medians_beside_it():
    run = stalled_run()
    r = run.ratio("ML-DSA-65", "ECDSA-P384", operation="sign")
    medians = {a: stats.round_interval(run.sample_values(a, "sign"))[0] for a in ("ML-DSA-65", "ECDSA-P384")}
    of_medians = medians["ML-DSA-65"] / medians["ECDSA-P384"]
    per_round = (stats.round_values(run.sample_values("ML-DSA-65", "sign"))
                 / stats.round_values(run.sample_values("ECDSA-P384", "sign")))
    assert r.value == pytest.approx(of_medians)
    assert per_round.min() <= r.value <= per_round.max()
    assert r.low <= of_medians <= r.high and r.high / r.low < 1.1
    assert r.value == pytest.approx(18 / 27, rel=0.02)  # the stalls' means would give about 0.3


def test_few_rounds_give_no_interval_and_say_so():
    r = synthetic_run([("A", "cryptography", OPENSSL, 1, 10.0, ""),
                       ("B", "cryptography", OPENSSL, 1, 20.0, "")],
                      rounds=2).ratio("A", "B", operation="sign")
    assert "no-interval" in r.flags and "no interval" in str(r) and "[" not in r.text


def test_a_run_displays_as_its_summary(run):
    html = run._repr_html_()
    assert run.run_id in html and "Time median" in html and "time_ns_q1" not in html
    text = repr(run)
    assert text.splitlines()[0] == run.headline() and "ECDSA-P384" in text and "time_ns_q1" not in text
    assert len(text.splitlines()) < 20  # the summary, not a dump of the frames


def test_bench_says_once_which_backend_a_name_runs_on_and_why(monkeypatch):
    if len(algorithms.backends_of("ML-DSA-65")) < 2:
        pytest.skip("ML-DSA-65 has one backend here")
    monkeypatch.setattr(algorithms, "_ANNOUNCED", set())
    with pytest.warns(PqlabWarning,
                      match=r"ML-DSA-65 runs on liboqs, the first of pqlab's backend order") as seen:
        said = algorithms.announce_defaults(["ML-DSA-65", "ML-DSA-65@cryptography",
                                             ("Ed25519", "cryptography")])
    assert len(said) == 1 and len([w for w in seen if "ML-DSA-65 runs on" in str(w.message)]) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert algorithms.announce_defaults("ML-DSA-65") == []  # once per name and process
        assert algorithms.announce_defaults(["Ed25519@cryptography"]) == []  # named: nothing to say


def test_bench_announces_after_refusing_bad_input(monkeypatch):
    monkeypatch.setattr(algorithms, "_ANNOUNCED", set())
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the refusal comes alone, before any announcement
        with pytest.raises(BadInput, match="has no operation 'sign'"):
            pqlab.bench(["ML-KEM-768"], operations=["sign"], save=False, progress=False)
    assert "ML-KEM-768" not in algorithms._ANNOUNCED


@pytest.mark.parametrize("call, match", [
    (lambda: pqlab.names(kind="signature"), "unknown kind 'signature'; close matches: sig"),
    (lambda: pqlab.names(backend="openssl"), "unknown backend 'openssl'"),
    (lambda: stats.round_interval(np.ones(5), stat="medain"),
     "unknown stat 'medain'; close matches: median"),
    (lambda: algorithms.implementations(["ML-DSA-44"], ["liboq"]),
     "unknown backend 'liboq'; close matches: liboqs"),
    (lambda: export.save_figure(lambda w: None, "own", "x", runs=[], formats=("pdf", "jpg")),
     "unknown figure format 'jpg'"),
])
def test_enum_arguments_refuse_unknown_values_with_close_matches(call, match):
    with pytest.raises(UnknownName, match=match):
        call()


def test_kinds_are_listed_and_each_has_names():
    assert set(algorithms.KINDS) == {"sig", "kem", "pke", "cipher"}
    assert pqlab.names(kind="sig") and pqlab.names(kind="cipher")


def test_bars_take_a_unit_not_a_multiplier():
    df = pd.DataFrame({"algorithm": ["A", "B"], "operation": ["sign", "sign"],
                       "time_ns_median": [2_000.0, 5_000.0], "time_ns_q1": [1_900.0, 4_900.0],
                       "time_ns_q3": [2_100.0, 5_100.0]})
    fig = plotting.grouped_bars(df, category="algorithm", group="operation", value="time_ns_median",
                                low="time_ns_q1", high="time_ns_q3", unit="µs", log=False)
    heights = sorted(p.get_height() for p in fig.axes[0].patches)
    assert heights == pytest.approx([2.0, 5.0]) and "(µs)" in fig.axes[0].get_ylabel()
    plt.close(fig)
    with pytest.raises(UnknownName,
                       match="unknown unit of time column 'time_ns_median' 'us'; close matches: .*µs"):
        plotting.grouped_bars(df, category="algorithm", group="operation", value="time_ns_median", unit="us")
    with pytest.raises(BadInput, match="does not say its unit in its name"):
        plotting.grouped_bars(df.rename(columns={"time_ns_median": "t"}), category="algorithm",
                              group="operation", value="t", unit="µs")
    with pytest.raises(TypeError, match="scale"):
        plotting.grouped_bars(df, category="algorithm", group="operation", value="time_ns_median", scale=1e3)


def test_save_figure_shows_the_figure_each_time_in_a_notebook_and_leaves_none_open(export_tree, monkeypatch):
    import IPython
    import IPython.display

    shown = []
    monkeypatch.setattr(IPython, "get_ipython", lambda: type("Kernel", (), {"kernel": object()})())
    monkeypatch.setattr(IPython.display, "display", lambda fig: shown.append(fig))
    plt.close("all")
    df = pd.DataFrame({"algorithm": ["A"], "operation": ["sign"], "time_ns_median": [2_000.0]})

    def draw(w):
        return plotting.grouped_bars(df, category="algorithm", group="operation", value="time_ns_median",
                                     unit="µs", width=w)

    for _ in range(2):
        written = export.save_figure(draw, "own", "bars", runs=[fake_run()])
        assert "figures/own/" in repr(written) and "bars.pdf" in repr(written)
    assert len(shown) == 2 and plt.get_fignums() == []


def test_outside_a_notebook_save_figure_shows_nothing(export_tree, monkeypatch):
    import IPython

    monkeypatch.setattr(IPython, "get_ipython", lambda: None)
    assert export.show_in_notebook(plt.figure()) is False
    plt.close("all")


@pytest.mark.parametrize("venv_first", [True, False])
def test_suggested_commands_work_from_a_kernel_whatever_its_path(monkeypatch, venv_first):
    """A notebook's kernel often lacks the venv on PATH (`!python -m pqlab list`: No module named pqlab)."""
    import os
    import shlex
    import subprocess
    import sys

    from pqlab.core.errors import shell_command

    venv_bin = os.path.dirname(sys.executable)
    monkeypatch.setenv("PATH", os.pathsep.join(([venv_bin] if venv_first else []) + ["/usr/bin", "/bin"]))
    command = shell_command("pqlab list --kind kem")
    assert command.startswith("python -m") == venv_first
    out = subprocess.run(shlex.split(command), capture_output=True, text=True)
    assert out.returncode == 0 and "ML-KEM-768" in out.stdout


def test_an_unknown_algorithm_suggests_the_python_call_and_a_working_command():
    with pytest.raises(UnknownName,
                       match=r"pqlab.names\(\) lists every registered name \(shell: .*-m pqlab list\)"):
        pqlab.get("ML-DSA-6")


def test_a_table_column_names_the_unit_its_values_are_stored_in():
    from pqlab.core import formatting

    df = pd.DataFrame({"algorithm": ["A"], "100": [0.0123]})  # milliseconds, under a name that says nothing
    t = formatting.table(df, ["algorithm", formatting.Column("100", "100 B", stored="ms")])
    assert t.units[1] == "µs" and t.rows[0][1] == "12.3"
    with pytest.raises(UnknownName, match="'msec'; close matches: ms"):
        formatting.Column("100", stored="msec")


def test_an_empty_table_says_so_and_files_in_unrelated_folders_are_each_named():
    from pqlab.core import formatting

    assert (formatting.table(pd.DataFrame({"a_bytes": []}), ["a_bytes"]).to_string()
            == "(no rows; columns: A [B])")
    text = export.written(["/tmp/pqlab-a/x.csv", "/var/tmp/pqlab-b/y.csv"])
    assert text == "2 files written: /tmp/pqlab-a/ (1), /var/tmp/pqlab-b/ (1)" and "//" not in text


@pytest.mark.parametrize("name, release, there, says", [
    ("SPHINCS+-SHA2-128f-simple", "0.16.0", "SLH_DSA_PURE_SHA2_128F", "SLH-DSA-SHA2-128f (FIPS 205)"),
    ("HQC-128", "0.16.0", "HQC-1", "HQC-2025-1; HQC as selected by NIST"),
    ("Dilithium2", "0.15.0", "ML-DSA-44", "a related algorithm, not the same one"),
])
def test_a_name_a_newer_liboqs_dropped_is_measured_as_its_stand_in_and_says_so(monkeypatch, name, release,
                                                                                 there, says):
    """A machine whose liboqs is newer than the name a notebook asks for (issues 30 and 44): the name that
    release gives the same algorithm, or the related one of its lineage, is measured in its place, with a
    warning that says which, and the run's record keeps the sentence."""
    algorithms._load_backends()
    monkeypatch.setattr(algorithms, "_loaded_release", lambda: release)
    monkeypatch.setattr(algorithms, "STOOD_IN", {})
    registry = {k: v for k, v in algorithms._REGISTRY.items() if k[0] != name}
    registry.setdefault((there, "liboqs"), algorithms._REGISTRY[(name, "liboqs")])
    monkeypatch.setattr(algorithms, "_REGISTRY", registry)
    with pytest.warns(PqlabWarning, match=re.escape(says)):
        algorithms.get(name)
    assert algorithms.STOOD_IN[name][0] == there


def test_a_name_from_after_the_loaded_liboqs_is_refused_with_what_it_has(monkeypatch):
    """Nothing stands in for a name newer than the loaded release (ML-KEM on liboqs 0.9.0)."""
    monkeypatch.setattr(algorithms, "_loaded_release", lambda: "0.9.0")
    monkeypatch.setattr(algorithms, "_REGISTRY",
                        {k: v for k, v in algorithms._REGISTRY.items() if k[0] != "ML-KEM-768"})
    with pytest.raises(UnknownName, match=re.escape("is not in liboqs 0.9.0; there: Kyber768-round3")):
        algorithms.get("ML-KEM-768")


def test_a_ratio_of_operations_without_a_message_works():
    """keygen, encaps, decaps have no message size (a missing value in the results): a ratio of them works."""
    run = synthetic_run([("ML-KEM-768", "liboqs", LIBOQS, 1, 20_000.0, "liboqs-0.13.0"),
                         ("X25519", "liboqs", LIBOQS, 1, 40_000.0, "liboqs-0.13.0")], operation="keygen",
                        message_bytes=None)
    r = run.ratio("ML-KEM-768", "X25519", operation="keygen")
    assert r.value == pytest.approx(0.5, rel=0.01) and r.rounds == 6


def test_a_ratio_of_a_kem_operation_over_a_signature_operation_is_refused():
    """Issue #45: run.ratio(..., operation="encaps", denominator_operation="sign") divided a KEM's
    encapsulation by a signature's signing, silently."""
    run = synthetic_run([("ML-KEM-768", "liboqs", LIBOQS, 1, 20_000.0, "liboqs-0.13.0", "encaps"),
                         ("ML-KEM-768", "liboqs", LIBOQS, 1, 25_000.0, "liboqs-0.13.0", "decaps"),
                         ("ML-DSA-65", "liboqs", LIBOQS, 1, 50_000.0, "liboqs-0.13.0", "sign")])
    with pytest.raises(BadInput, match="divides a kem operation by a sig one"):
        run.ratio("ML-KEM-768@liboqs", "ML-DSA-65@liboqs", operation="encaps", denominator_operation="sign")
    within = run.ratio("ML-KEM-768@liboqs", "ML-KEM-768@liboqs", operation="encaps",
                       denominator_operation="decaps")
    assert "cross-operation" in within.flags and within.value == pytest.approx(0.8, rel=0.01)


def test_a_cross_library_ratio_keeps_its_statistic_and_caveat_in_every_export(run, export_tree):
    """Issue #45: the statistic and the cross-library caveat were printed in the notebook but lost in the
    exported macro, .txt and numbers.export.json ("0.96× [0.73, 1.26]" alone)."""
    import json

    from pqlab.core.escaping import latex

    r = run.ratio("ML-DSA-65@liboqs", "ECDSA-P384@cryptography", operation="sign")
    export.save_numbers({"mldsa_over_ecdsa_sign": r, "plain": 3}, "my_question", runs=[fake_run()])
    folder = export_tree / "data" / "tables" / "my_question"
    tex = (folder / "numbers.tex").read_text()
    assert latex(r.text).replace(" ", "~") in tex
    note = next(line for line in tex.splitlines() if "pqlabMldsaOverEcdsaSignNote" in line)
    assert "ratio of medians of 6 rounds" in note and "different implementations" in note and "liboqs" in note
    txt = (folder / "mldsa_over_ecdsa_sign.txt").read_text()
    assert txt.startswith(r.text) and "different implementations" in txt and "ratio of medians" in txt
    record = json.loads((folder / "numbers.export.json").read_text())["numbers"]["mldsa_over_ecdsa_sign"]
    assert (record["value"], record["low"], record["high"]) == pytest.approx((r.value, r.low, r.high))
    assert record["statistic"] == r.statistic_text and any("different implementations" in c
                                                           for c in record["caveats"])
    assert (folder / "plain.txt").read_text() == "3"
    # a quoted number its interval does not resolve: "not resolved" everywhere, listed as such
    from pqlab.core.quoted import Quoted

    export.save_numbers({"wide": Quoted(10.0, 0.1, 900.0, statistic="ratio of medians")}, "my_question",
                        runs=[fake_run()])
    sidecar = json.loads((folder / "numbers.export.json").read_text())
    assert sidecar["not_resolved"] == ["wide"] and not sidecar["numbers"]["wide"]["resolved"]
    assert (folder / "wide.txt").read_text().startswith("not resolved")


def test_the_progress_bar_of_a_run_that_succeeded_ends_full(monkeypatch, tmp_path):
    """Issue #45: the bar ended red at "96 % 45/47 … round 3" on a run that succeeded: its total was the first
    stage's estimate of the rounds Stein's rule would ask for, which asked fewer."""
    import pqlab.benchmark as benchmark

    bars = []

    class Bar:
        def __init__(self, total):
            self.n, self.total, self.closed = 0, total, None
            bars.append(self)

        def update(self, k):
            self.n += k

        def set_postfix_str(self, *a, **k):
            pass

        def refresh(self):
            pass

        def close(self):
            self.closed = (self.n, self.total)

    monkeypatch.setattr(benchmark, "_progress", lambda total, enabled, desc: Bar(total) if enabled else None)
    # the first stage's estimate asks three more rounds; the rounds that follow ask none (as when an item's
    # spread settles, or it fails and leaves the run)
    monkeypatch.setattr(benchmark, "_rounds_needed", lambda results, *a, **k: {i: 6 for i in results})
    first_stage = benchmark._active
    monkeypatch.setattr(benchmark, "_active", lambda items, results, needed, r, rounds:
                        first_stage(items, results, {}, r, rounds))
    pqlab.bench(["X25519@cryptography"], operations=["keygen"], budget_s=0.05, rounds=3, max_rounds=9,
                isolation="in-process", progress=True, save=False, study="bar")
    (bar,) = bars
    assert bar.closed[0] == bar.closed[1] > 0
