"""Referee round 3, notebooks 01, 02, 04, 05, 06 and 07 and their paper sections.

Each test asserts the property the referee found false in the text, figure or table generated before the fix:

* 04 c25: the largest pqlab / native ratio, its interval and the cycles it adds come from one statistic (a
  ratio above 1 never adds negative cycles);
* paper 04: the pqlab / native ratio is quoted as a factor with its interval and, below 1, what that means;
* 04 c23: a speed-up whose interval does not resolve it says "not resolved", never "no gain";
* 04, 02, 05, 06 (finding 13): no generated factor without its interval or the reason it has none
  (:func:`pqlab.core.quoted.bare_factors`);
* 04 figures: ratios on a log axis are points with whiskers (a bar needs a zero), the title names both builds
  and what the whiskers are; the cycles figure's legend says its whiskers are quartiles;
* 01 c15: agreement with the study is stated only for ratios that can be told, never ranked by overlap count;
* 05: each side's harness from the backend's record (pqlab's C loop or a Python call per operation); the Pi's
  median factor with its interval and the unstated statistic of the published times;
* 06 c27: which inputs of the byte model come from the handshake itself;
* 07 c16: only resolved losses and gains are listed;
* 02: the time-against-length figure draws each median's interval and says how the empty message is placed;
* pairings (finding 12): each side's implementation, release and statistic.
"""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import matplotlib
import numpy as np
import pandas as pd

from pqlab.core.quoted import bare_factors
from pqlab.studies import aes_rsa_sphincs as A
from pqlab.studies import energy_pi4 as E
from pqlab.studies import message_scaling as M
from pqlab.studies import signature_cycles as F
from pqlab.studies import tls_handshake as T
from pqlab.studies.atlas.prose import describe_cross_platform
from pqlab.studies.energy_pi4 import tables as energy_tables

matplotlib.use("Agg")

from test_referee_04_05 import _Run  # noqa: E402 - the same synthetic run

ROOT = Path(__file__).resolve().parents[2]
COUNTER = {"basis": "cycles", "unit": "TSC reference cycles at 2.60 GHz", "label": "tsc"}


def _fidelity(native_rounds, pqlab_rounds):
    """pqlab / native of one operation (MAYO-1 keygen) as notebook 04 builds it, with each side's
    implementation and backend."""
    key = ("MAYO-1", "keygen")
    study = SimpleNamespace(runs={"default": _Run("py", {("liboqs", *key): list(pqlab_rounds)})},
                            native=_Run("c", {("native", *key): list(native_rounds)}))
    rows = []
    for build, backend, run in (("liboqs optimised", "liboqs", study.runs["default"]),
                                ("native optimised", "native", study.native)):
        s = run.sample_values(*key, backend=backend)
        rows.append({"algorithm": key[0], "operation": key[1], "table_family": "multivariate", "build": build,
                     "backend": backend, "implementation": "liboqs 0.13.0 (default build)",
                     "cycles_mean": s.mean(), "cycles_median": s.median(), "time_ns_mean": s.mean() / 2.6})
    table = F.compute_python_over_native(pd.DataFrame(rows))
    table = F.with_intervals(table, study, "liboqs optimised", "native optimised", "ratio")
    return F.with_round_checks(table, study, "liboqs optimised", "native optimised", "ratio",
                               ("pqlab", "native"))


# ----- 04 c25: one statistic for the ratio, its interval and the cycles added -----------------------------

def test_the_cycles_added_follow_the_ratio_and_its_interval():
    # one native round three times slower: the rounds' median ratio is above 1, the pooled means' below
    t = _fidelity([200e3] * 9 + [900e3], [220e3] * 10)
    row = t.iloc[0]
    assert row["ratio"] > 1 > row["ratio_pooled"]
    assert row["added_cycles"] > 0 and row["added_cycles_pooled"] < 0
    assert row["added_cycles_ci_low"] <= row["added_cycles"] <= row["added_cycles_ci_high"]
    text = F.describe_python_over_native(t, COUNTER)
    largest = text.split("The largest resolved ratio is")[1].split(" added per call")[0]
    assert "MAYO-1 keygen's: 1.10× [" in largest and "-" not in largest.split("×")[-1]


# ----- paper 04: the pqlab / native factor with its interval and its caveat -------------------------------

def test_the_paper_quotes_pqlab_over_native_with_its_interval_and_caveat():
    below = F.numbers({"ratio ML-DSA-44 sign": (0.776, 0.70, 0.86)})["python_over_native_ml_dsa_44_sign_text"]
    assert below.startswith("0.78× [0.70, 0.86]") and "different conditions" in below
    assert "not that the path through Python is faster" in below
    above = F.numbers({"ratio ML-DSA-44 sign": (1.2, 1.1, 1.3)})["python_over_native_ml_dsa_44_sign_text"]
    assert above.startswith("1.20× [1.10, 1.30]") and "different conditions" not in above
    tex = (ROOT / "paper" / "sections" / "04_signature_cycles.tex").read_text()
    assert r"\pqlabPythonOverNativeMlDsaFourFourSignText{}" in tex
    assert r"\pqlabPythonOverNativeMlDsaFourFourSign{} times" not in tex


# ----- 04 c23: not resolved is not "no gain" --------------------------------------------------------------

def _speedups():
    rows = [("Falcon-512", "verify", 0.93, 0.24, 3.59), ("Falcon-512", "sign", 19.7, 19.0, 20.4),
            ("ML-DSA-44", "sign", 5.1, 4.9, 5.3), ("ML-DSA-44", "verify", 1.0, 0.97, 1.03)]
    return pd.DataFrame([{"table_family": "lattice", "algorithm": a, "operation": o, "speedup": v,
                          "speedup_ci_low": lo, "speedup_ci_high": hi,
                          "optimised_implementation": "liboqs 0.13.0 (default build)",
                          "portable_implementation": "liboqs 0.13.0 (generic build)"}
                         for a, o, v, lo, hi in rows])


def test_an_unresolved_speedup_is_not_called_no_gain():
    text = F.describe_speedups(_speedups())
    assert "no gain for Falcon-512 verify" not in text
    assert "not resolved (interval wider than 2×) for Falcon-512 verify" in text
    assert ("no gain resolved (an interval reaching 1 or below) for ML-DSA-44 verify 1.00× [0.97, 1.03]"
            in text)
    assert "largest is Falcon-512's (19.7× [19.0, 20.4])" in text
    # both builds named, from the table
    assert "liboqs 0.13.0 (generic build) over liboqs 0.13.0 (default build)" in text


# ----- finding 13: no bare factor in generated prose ------------------------------------------------------

def test_notebook_04_prose_has_no_bare_factor():
    fid = _fidelity([200e3] * 6, [220e3] * 6)
    impl = pd.DataFrame([{"algorithm": "ML-DSA-44", "operation": op, "ratio": r, "ratio_ci_low": r * 0.95,
                          "ratio_ci_high": r * 1.05, "liboqs_build": "liboqs optimised",
                          "liboqs_implementation": "liboqs 0.13.0 (default build)",
                          "liboqs_backend": "liboqs",
                          "OpenSSL_implementation": "cryptography 50.0.2 (OpenSSL 4.0.3)",
                          "OpenSSL_backend": "cryptography"} for op, r in (("sign", 16.0), ("verify", 4.9))])
    for text in (F.describe_speedups(_speedups()), F.describe_python_over_native(fid, COUNTER, noop=100.0),
                 F.describe_implementations(impl, COUNTER)):
        assert bare_factors(text) == [], bare_factors(text)


def test_notebook_02_and_06_prose_has_no_bare_factor():
    summary = pd.DataFrame([{"algorithm": "SLH-DSA-SHA2-128f", "operation": "sign", "message_bytes": 100,
                             "native_algorithm": "SPHINCS+-SHA2-128f-simple", "native_backend": "liboqs",
                             "native_ns": 1e6, "slowdown": 15.3, "slowdown_ci_low": 15.0,
                             "slowdown_ci_high": 15.6, "same_standard": False},
                            {"algorithm": "SLH-DSA-SHA2-128f", "operation": "sign", "message_bytes": 100,
                             "native_algorithm": "SLH-DSA-SHA2-128f", "native_backend": "pqcrypto",
                             "native_ns": 2e6, "slowdown": 8.2, "slowdown_ci_low": 8.0,
                             "slowdown_ci_high": 8.4,
                             "same_standard": True}])
    note = M.closing_note(summary, None)
    assert "15.3× [15.0, 15.6] against liboqs's round-3" in note and bare_factors(note) == []
    cpu = pd.DataFrame([{"side": side, "mode": mode, "pair": "X25519 + Ed25519", "depth": 1,
                         "measured_over_model": f, "stack_us": 70.0, "measured_us": 100.0,
                         "measured_over_same_run": 1.2} for side in ("server", "client")
                        for mode, f in (("server-auth", 2.2), ("resumed", 4.0))])
    run = SimpleNamespace(measurements=pd.DataFrame(columns=["verified"]), meta={}, run_id="r")
    ops = SimpleNamespace(meta={}, run_id="o")
    text = T.describe_cpu_model(cpu, run, ops)
    assert bare_factors(text) == [], bare_factors(text)


# ----- 04 figures: points on a log axis, both builds, what the whiskers are -------------------------------

def test_the_speedup_figure_draws_points_with_whiskers_and_names_both_builds():
    fig = F.plot_speedups(_speedups(), COUNTER, width=6.0)
    ax = fig.axes[0]
    assert not [p for p in ax.patches if isinstance(p, matplotlib.patches.Rectangle)]  # no bars
    assert "log" in (ax.get_xscale(), ax.get_yscale()) and ax.containers  # error bars
    assert "liboqs 0.13.0: generic build / default build" in ax.get_title()
    assert "whiskers: 95 % interval" in ax.get_xlabel()
    matplotlib.pyplot.close(fig)


def test_the_cycles_figure_says_its_whiskers_are_quartiles():
    rows = pd.DataFrame([{"algorithm": a, "operation": "sign", "build": "liboqs optimised",
                          "family": "lattice", "table_family": "lattice", "signature_max_bytes": b,
                          "cycles_median": c, "cycles_q1": c * 0.9, "cycles_q3": c * 1.1}
                         for a, b, c in (("ML-DSA-44", 2420, 1.5e5), ("Falcon-512", 752, 5e5))])
    fig = F.plot_cycles_vs_bytes(rows, "sign", "signature_max_bytes", "signature bytes", "cycles", width=6.0)
    labels = [t.get_text() for legend in [*fig.legends, fig.axes[0].get_legend()] if legend
              for t in legend.get_texts()]
    assert F.figures.WHISKERS_QUARTILES in labels
    matplotlib.pyplot.close(fig)


# ----- 01 c15: agreement only where it can be told, no ranking --------------------------------------------

def _ratios():
    key = {"study_row": "RSA-2048", "construction": "", "ratio": "keygen / decrypt", "statistic": "mean"}
    rows = [{**key, "system": "study (BC 1.72)", "kind": "study", "value": 40.0, "value_ci_low": np.nan,
             "value_ci_high": np.nan, "digits": 1, "implementation": "Bouncy Castle 1.72, the study's"}]
    ours = [("cryptography", "python", 30.0, 0.5, 90.0, "cryptography 50.0.2 (OpenSSL 4.0.3)"),
            ("pycryptodome", "python", 35.0, 30.0, 41.0, "PyCryptodome 4.4.0"),
            ("BC 1.87 cold (mean of first 5)", "jvm cold", 102.0, np.nan, np.nan,
             "Bouncy Castle 1.87 on Java 17")]
    rows += [{**key, "system": s, "kind": k, "value": v, "value_ci_low": lo, "value_ci_high": hi,
              "implementation": impl} for s, k, v, lo, hi, impl in ours]
    return pd.DataFrame(rows)


def test_agreement_is_stated_only_where_it_can_be_told_and_never_ranked():
    text = A.describe_ratios(_ratios())
    assert "most often" not in text
    assert ("cryptography 50.0.2 (OpenSSL 4.0.3) not resolved (interval wider than 2×): too wide to tell"
            in text)
    assert "pycryptodome (PyCryptodome 4.4.0) 35.00× [30.00, 41.00]" in text
    assert "1 of 1 resolved ratio within a factor of 2" in text
    assert "0 of 1 single value (one process) within a factor of 2" in text and "1 too wide to tell" in text
    assert "(one process: no interval)" in text  # a point says it is one
    assert bare_factors(text) == [], bare_factors(text)


# ----- 05: each side's harness; the Pi's median factor ----------------------------------------------------

def test_each_side_of_a_recommendation_says_how_its_calls_were_made():
    rows = [SimpleNamespace(algorithm="ML-DSA-44", backend="liboqs",
                            implementation="liboqs 0.13.0 (default build)"),
            SimpleNamespace(algorithm="Ed25519", backend="cryptography",
                            implementation="cryptography 50.0.2 (OpenSSL 4.0.3)")]
    text = E.recommendations.what_ran(rows)
    assert "ML-DSA-44 in C (liboqs 0.13.0 (default build); a sample's calls in pqlab's C loop" in text
    assert ("Ed25519 in C and assembly (cryptography 50.0.2 (OpenSSL 4.0.3); one call from Python per "
            "operation)") in text
    assert "not like for like in that respect" in text
    times = pd.DataFrame([{"algorithm": r.algorithm, "backend": r.backend, "implementation": r.implementation,
                           "kind": "sig", "family": fam, "nist_level": lvl, "operation": op, "time_ms": 0.05,
                           "message_bytes": np.nan}
                          for r, fam, lvl in zip(rows, ("lattice", "elliptic-curve"), (2, np.nan),
                                                 strict=True) for op in ("sign", "verify")])
    lead = E.recommendations_markdown(times)
    assert "every call is made from Python" not in lead and "not like for like in that respect" in lead


def test_the_pi_median_factor_has_its_interval_and_the_unstated_statistic():
    ratios = pd.DataFrame({"pi_over_here": [10.0, 15.0, 20.0], "pi_over_here_ci_low": [9.0, 14.0, 19.0],
                           "pi_over_here_ci_high": [11.0, 16.0, 21.0]})
    out = energy_tables.pi_over_here_median(ratios)
    assert (out["pi_over_here_median"], out["pi_over_here_median_ci_low"],
            out["pi_over_here_median_ci_high"]) == (15.0, 14.0, 16.0)
    assert out["pi_over_here_median_with_caveat"].startswith("15.00× [14.00, 16.00]")
    assert "statistic the study does not state" in out["pi_over_here_median_with_caveat"]
    tex = (ROOT / "paper" / "sections" / "05_energy.tex").read_text()
    assert r"\pqlabPiOverHereMedianWithCaveat{}" in tex and r"\pqlabPiOverHereMedian{} as long" not in tex


# ----- 06 c27: the inputs the handshake supplies ----------------------------------------------------------

def test_the_byte_check_says_which_inputs_come_from_the_handshake():
    check = pd.DataFrame([{"pair": "X25519 + ECDSA-P256", "mode": "server-auth", "depth": 1, "handshake": h,
                           "flight": fl, "measured": 100, "predicted": 100, "error": 0,
                           "cipher_from_handshake": True, "signature_from_handshake": True,
                           "signature_differs": h == 0, "client_signature_from_handshake": False,
                           "ticket_from_handshake": False} for h in range(2) for fl in ("C1", "S1", "C2")])
    text = T.describe_bytes_check(check)
    assert "predicts every flight exactly" not in text and "by construction" in text
    assert "the negotiated cipher suite (it fixes the Finished length) (2 of 2 handshakes)" in text
    assert "the length of the server's CertificateVerify signature (2 of 2 handshakes)" in text
    assert "differs from the size the model would use in 1 of them" in text
    assert "ticket" not in text


# ----- 07 c16: only resolved losses and gains -------------------------------------------------------------

def test_only_resolved_losses_and_gains_are_listed():
    cross = pd.DataFrame([{"platform": "Pi", "comparison": c, "factor": f, "ci_low": lo, "ci_high": hi,
                           "verdict": v, "interval": "95% interval over rounds", "statistic": "mean",
                           "baseline_kind": "classical"}
                          for c, f, lo, hi, v in (("A / B", 1.00, 0.96, 1.04, "no clear change"),
                                                  ("C / D", 0.60, 0.50, 0.70, "gains"))])
    text = describe_cross_platform(cross, "here")
    assert "Loses most" not in text and "No loss is resolved" in text
    assert "Gains most (resolved, the whole interval below 1): C / D 0.60× [0.50, 0.70]." in text
    assert "A / B" not in text


# ----- 02: the time-against-length figure's intervals and its zero ----------------------------------------

def test_the_time_figure_draws_intervals_and_says_where_the_empty_message_is():
    native = pd.DataFrame([{"algorithm": "Ed25519", "family": "elliptic-curve", "operation": op,
                            "message_bytes": n, "time_ns_median": 3e4 + n, "time_ns_ci_low": 2.8e4 + n,
                            "time_ns_ci_high": 3.2e4 + n}
                           for op in ("sign", "verify") for n in (0, 100, 10000)])
    fits = pd.DataFrame([{"algorithm": "Ed25519", "operation": op, "fixed_ns": 3e4, "per_byte_ns": 1.0,
                          "crossover_bytes": 3e4, "per_byte_significant": True} for op in ("sign", "verify")])
    fig = M.plot_time_vs_message(native, fits, width=6.0)
    ax = fig.axes[0]
    assert any(isinstance(c, matplotlib.container.ErrorbarContainer) for c in ax.containers)
    assert ax.get_xscale() == "symlog" and "empty message" in ax.get_xlabel()
    assert "whiskers: 95 % interval over rounds" in ax.get_ylabel()
    matplotlib.pyplot.close(fig)


# ----- finding 12: pairings name each side ----------------------------------------------------------------

def test_a_second_implementation_names_each_side_and_its_harness():
    impl = pd.DataFrame([{"algorithm": "ML-DSA-44", "operation": "sign", "ratio": 16.0, "ratio_ci_low": 15.0,
                          "ratio_ci_high": 17.0, "liboqs_build": "liboqs optimised",
                          "liboqs_implementation": "liboqs 0.13.0 (default build)",
                          "liboqs_backend": "liboqs",
                          "OpenSSL_implementation": "cryptography 50.0.2 (OpenSSL 4.0.3)",
                          "OpenSSL_backend": "cryptography"}])
    text = F.describe_implementations(impl, COUNTER)
    assert ("ML-DSA-44 through cryptography 50.0.2 (OpenSSL 4.0.3) (one call from Python per operation) "
            "needs sign 16.00× [15.00, 17.00] that of liboqs 0.13.0 (default build) (a sample's calls in "
            "pqlab's C loop, one call from Python per sample)") in text
    assert "mean TSC reference cycles" in text and "not like for like" in text


def test_the_atlas_names_what_ran_each_side_of_its_ratios():
    from pqlab.studies.atlas.prose import what_ran

    m = pd.DataFrame([{"backend": "liboqs", "implementation": "liboqs 0.13.0 (default build)"},
                      {"backend": "cryptography", "implementation": "cryptography 50.0.2 (OpenSSL 4.0.3)"}])
    text = what_ran([SimpleNamespace(measurements=m)])
    assert ("liboqs 0.13.0 (default build) (a sample's calls in pqlab's C loop, one call from Python per "
            "sample); cryptography 50.0.2 (OpenSSL 4.0.3) (one call from Python per operation)") in text
    assert "not like for like in that respect" in text


def test_the_pi_comparison_names_each_side_and_its_statistic():
    ratios = pd.DataFrame([{"algorithm": "ML-KEM-768", "operation": "encaps", "family": "lattice",
                            "pi_over_here": 15.0, "pi_over_here_ci_low": 14.0, "pi_over_here_ci_high": 16.0,
                            "pi_time_ms": 0.3, "here_time_ms": 0.02, "code_here": "not recorded"}])
    run = SimpleNamespace(meta={"liboqs": {"liboqs_version": "0.13.0", "options": "default"}},
                          measurements=pd.DataFrame([{"algorithm": "ML-KEM-768", "backend": "liboqs"}]))
    setup = pd.DataFrame([{"parameter": "liboqs", "value": "0.8"}])
    text = E.cross_platform_markdown(ratios, setup=setup, runs=[run])
    assert "study's published Pi 4 time (liboqs '0.8'; a single value" in text
    assert "statistic the study does not state" in text
    assert "over our median time here (liboqs 0.13.0 (default build); the median over rounds)" in text
    assert "the median factor is 15.00× [14.00, 16.00]" in text
