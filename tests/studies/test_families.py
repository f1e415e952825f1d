"""pqlab.studies.signature_cycles: the analysis of notebook 04 (signature cycle tables per family)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pqlab.benchmark import bench, bench_in_worker
from pqlab.core import formatting
from pqlab.core.paths import LIBOQS_PREFIX
from pqlab.core.references import load_reference
from pqlab.measure import cycles
from pqlab.studies import round2_study as R
from pqlab.studies import signature_cycles as F

# --------------------------------------------------------------------------- a real run


@pytest.fixture(scope="module")
def small_run():
    return bench(["ML-DSA-44", "Ed25519", "ECDSA-P256"], budget_s=0.05, min_samples=5, save=False,
                 progress=False, study="test_families", allow_nonconforming=True)  # issue #42


#: What :func:`F.study_counter` gives for each counter (availability as recorded on a machine without a PMU).
AVAILABILITY = {"perf": {"available": False, "error": "perf_event_open: No such file or directory [ENOENT]"},
                "tsc": {"available": True, "read_cost_ns": 154.0, "read_cost_ticks": 376.0,
                        "read_cost_ticks_in_c": 27.0}}
CORE = {"label": "core-cycles", "unit": "core cycles", "basis": "cycles", "availability": AVAILABILITY}
TSC = {"label": "tsc", "hz": 2.4454e9, "hz_source": "kernel log (dmesg): tsc 2445.406 MHz", "basis": "cycles",
       "unit": "TSC reference cycles at 2.45 GHz", "reason": "no core cycles: ENOENT",
       "availability": AVAILABILITY}
NONE = {"label": "none", "unit": "no cycle counter", "basis": "time_ns", "reason": "PQLAB_COUNTER=none",
        "availability": AVAILABILITY}


@pytest.mark.counter
def test_every_row_follows_from_its_counter(small_run):
    """Core cycles: time = cycles / the clock the run measured (within tolerance).  TSC: the clock check
    is skipped (it would be circular) and ticks / ns is the stated TSC rate.  None: no cycles at all."""
    rows = F.collect_rows(runs=[small_run])
    counter = F.study_counter(F.SignatureStudy({"default": small_run}, None))
    assert len(rows) == 9 and set(rows["operation"]) == set(F.SIGNATURE_OPERATIONS)
    assert set(rows["counter"]) == {counter["unit"]} and counter["label"] == cycles.counter().label
    clock = F.check_clock(rows, counter)
    if counter["label"] == cycles.TSC:
        assert clock is None and F.summarize_clock(clock) is None
        np.testing.assert_allclose(rows["implied_ghz"], counter["hz"] / 1e9, rtol=0.05)
        assert "check is skipped" in F.describe_clock(None, counter, rows=rows)
        return
    if counter["label"] == cycles.NONE:
        assert clock is None and rows["cycles_median"].isna().all() and counter["basis"] == "time_ns"
        return
    assert clock["implied_ghz"].notna().all()
    np.testing.assert_allclose(clock["implied_ghz"], clock["cycles_median"] / clock["time_ns_median"])
    outside = clock[~clock["consistent"]]
    assert outside.empty, f"rows whose time does not follow from their cycles:\n{outside.to_string()}"
    assert 0.2 < float(clock["run_clock_ghz"].iloc[0]) < 10  # a plausible core clock
    # the per-sample clocks agree with the clock of the medians
    np.testing.assert_allclose(clock["sample_ghz"], clock["implied_ghz"], rtol=F.CLOCK_TOLERANCE)


def test_collect_rows_adds_sizes_builds_and_means(small_run):
    rows = F.collect_rows(runs=[small_run])
    ml = rows[(rows["algorithm"] == "ML-DSA-44")].iloc[0]
    assert ml["build"] == "liboqs optimised" and ml["table_family"] == "lattice"
    assert (ml["public_key_bytes"], ml["secret_key_bytes"], ml["signature_max_bytes"]) == (1312, 2560, 2420)
    assert set(rows.loc[rows["algorithm"] != "ML-DSA-44", "table_family"]) == {"classical"}
    assert set(rows.loc[rows["algorithm"] != "ML-DSA-44", "build"]) == {"OpenSSL"}
    # the mean per call is the mean of the samples (each the mean of `loops` calls)
    s = small_run.samples
    sub = s[(s["algorithm"] == "Ed25519") & (s["operation"] == "verify")]
    got = rows[(rows["algorithm"] == "Ed25519") & (rows["operation"] == "verify")]
    assert got["time_ns_mean"].iloc[0] == pytest.approx(sub["time_ns"].mean())
    if sub["cycles"].notna().any():
        assert got["cycles_mean"].iloc[0] == pytest.approx(sub["cycles"].mean())


def test_worker_loads_the_requested_build(tmp_path, generic_liboqs):
    run = bench_in_worker(["ML-DSA-44"], build="generic", operations=["keygen"], budget_s=0.02, min_samples=3,
                          folder=tmp_path, study="test_families")
    info = F.check_build(run, "generic")
    # may be a link
    assert info["liboqs_path"].startswith(str((LIBOQS_PREFIX / "liboqs-0.13.0+generic").resolve()))
    assert (set(run.measurements.loc[run.measurements["backend"] == "liboqs", "build"])
            == {"liboqs-0.13.0+generic"})
    with pytest.raises(RuntimeError, match="default liboqs build"):
        F.check_build(run, "default")


# --------------------------------------------------------------------------- synthetic rows


def _rows() -> pd.DataFrame:
    """Two builds of three liboqs algorithms, one classical one and their native counterparts."""
    spec = {  # algorithm: (family, {op: optimised cycles}, portable factor)
        "ML-DSA-44": ("lattice", {"keygen": 1e5, "sign": 2e5, "verify": 9e4}, 4.0),
        "Falcon-512": ("lattice", {"keygen": 2e7, "sign": 6e5, "verify": 1.2e5}, 2.0),
        "SPHINCS+-SHA2-128f-simple": ("hash-based", {"keygen": 1e6, "sign": 2.4e7, "verify": 2e6}, 3.0),
        "Ed25519": ("elliptic-curve", {"keygen": 9e4, "sign": 8e4, "verify": 2.6e5}, None),
        "RSA-2048-PSS": ("RSA", {"keygen": 9e7, "sign": 9e5, "verify": 8e4}, None),
    }
    rows = []
    for alg, (family, ops, factor) in spec.items():
        builds = [("liboqs optimised", 1.0), ("liboqs portable", factor),
                  ("native optimised", 0.9)] if factor else [("OpenSSL", 1.0)]
        for build, f in builds:
            for op, c in ops.items():
                cyc = c * f
                rows.append(dict(algorithm=alg, family=family, table_family=F.table_family(family),
                                 build=build, operation=op, run_id=build, samples=100, cycles_median=cyc,
                                 cycles_q1=0.95 * cyc, cycles_q3=1.05 * cyc, cycles_mean=1.1 * cyc,
                                 time_ns_median=cyc / 3.6, time_ns_mean=1.1 * cyc / 3.6,
                                 counter="core cycles", nist_level=1, public_key_bytes=32,
                                 secret_key_bytes=64, signature_max_bytes=64))
    return pd.DataFrame(rows)


def test_classical_groups_rsa_and_elliptic_curves():
    assert F.table_family("RSA") == F.table_family("elliptic-curve") == "classical"
    assert F.table_family("lattice") == "lattice"
    assert (F.build_label("liboqs", "liboqs-0.13.0+generic") == F.build_label("liboqs", "generic")
            == "liboqs portable")
    assert F.build_label("native", "liboqs-0.12.0") == "native optimised"
    assert F.build_label("cryptography", float("nan")) == "OpenSSL"


def test_one_table_per_family_sorted_by_sign_cycles():
    tables = F.tabulate_families(_rows())
    assert list(tables) == ["lattice", "hash-based", "classical"]
    for family, table in tables.items():
        assert (table["family"] == family).all()
        assert table["sign_cycles"].is_monotonic_increasing, family
        assert not table["build"].str.startswith("native").any()
    lattice = tables["lattice"]
    assert list(zip(lattice["algorithm"], lattice["build"], strict=True)) == [
        ("ML-DSA-44", "liboqs optimised"), ("Falcon-512", "liboqs optimised"),
        ("ML-DSA-44", "liboqs portable"), ("Falcon-512", "liboqs portable")]
    assert set(tables["classical"]["algorithm"]) == {"Ed25519", "RSA-2048-PSS"}
    assert lattice["sign_us"].iloc[0] == pytest.approx(2e5 / 3.6 / 1e3)
    combined = F.tabulate_signatures(_rows(), builds=["liboqs optimised", "liboqs portable", "OpenSSL"])
    assert list(dict.fromkeys(combined["family"])) == ["lattice", "hash-based", "classical"]


def test_speedup_is_portable_over_optimised():
    sp = F.compute_speedups(_rows())
    assert len(sp) == 9
    got = sp.set_index(["algorithm", "operation"])
    assert got.loc[("ML-DSA-44", "sign"), "speedup"] == pytest.approx(4.0)
    assert got.loc[("Falcon-512", "verify"), "speedup"] == pytest.approx(2.0)
    assert got.loc[("SPHINCS+-SHA2-128f-simple", "keygen"), "speedup_median"] == pytest.approx(3.0)
    assert F.lookup(sp, "Falcon-512", "sign", "speedup") == pytest.approx(2.0)
    assert F.lookup(sp, "Ed25519", "sign", "speedup") is None


def test_fidelity_is_pqlab_over_native():
    fi = F.compute_python_over_native(_rows())
    assert len(fi) == 9
    assert np.allclose(fi["ratio"], 1 / 0.9) and np.allclose(fi["ratio_median"], 1 / 0.9)
    one = fi[(fi["algorithm"] == "ML-DSA-44") & (fi["operation"] == "sign")].iloc[0]
    assert one["added_cycles"] == pytest.approx(1.1 * 2e5 * (1 - 0.9))


def test_sample_means_do_not_depend_on_the_loop_count():
    """A sample of `loops` calls holds their mean; the mean per call is the same
    statistic for any loop count."""
    rng = np.random.default_rng(1)
    calls = rng.geometric(0.25, size=12_000) * 1000.0  # a skewed cost, like ML-DSA's rejection loop
    one = pd.DataFrame({"algorithm": "x", "backend": "native", "build": "liboqs-0.13.0", "operation": "sign",
                        "loops": 1, "cycles": calls, "time_ns": calls / 3.6})
    blocks = calls.reshape(-1, 6).mean(axis=1)
    six = pd.DataFrame({"algorithm": "x", "backend": "liboqs", "build": "liboqs-0.13.0", "operation": "sign",
                        "loops": 6, "cycles": blocks, "time_ns": blocks / 3.6})
    stats = F.sample_stats(pd.concat([one, six], ignore_index=True)).set_index("backend")
    assert stats.loc["liboqs", "cycles_mean"] == pytest.approx(stats.loc["native", "cycles_mean"])
    assert np.median(blocks) / np.median(calls) > 1.1  # ... which the medians are not
    assert stats["sample_ghz"].tolist() == pytest.approx([3.6, 3.6])


def test_check_clock_flags_time_without_cycles():
    rows = _rows()
    rows.loc[0, "time_ns_median"] *= 2  # descheduled half the time
    clock = F.check_clock(rows, CORE)
    assert not clock.loc[0, "consistent"] and clock.loc[0, "verdict"].startswith("below: time without cycles")
    assert clock.loc[1:, "consistent"].all()
    summary = F.summarize_clock(clock, nominal_mhz=2600.0)
    assert summary["consistent"] == len(rows) - 1 and summary["clock_ghz"] == pytest.approx(3.6)
    assert "1 does not" in F.describe_clock(summary, CORE)


# --------------------------------------------------------------------------- today's heirs of round 2


@pytest.fixture(scope="module")
def recomputed():
    return R.recompute_reference(load_reference(F.REFERENCE_TABLE))


def test_ancestors_face_the_build_the_studys_own_numbers_call_for(recomputed):
    anc = R.compare_ancestors(recomputed, _rows(), CORE)
    assert set(anc["algorithm"]) == {"ML-DSA-44", "Falcon-512", "SPHINCS+-SHA2-128f-simple"}
    # the study's opt code costs what its ref code costs: both face our portable build
    assert set(anc["our_build"]) == {"liboqs portable"} and set(anc["r2_build"]) == {"opt", "ref"}
    one = anc[(anc["algorithm"] == "Falcon-512") & (anc["r2_build"] == "opt")].iloc[0]
    assert one["sign_ratio"] == pytest.approx(1.1 * 2 * 6e5 / 12009319)
    sphincs = anc[(anc["algorithm"] == "SPHINCS+-SHA2-128f-simple") & (anc["r2_build"] == "ref")].iloc[0]
    assert sphincs["r2_sign_cycles"] == pytest.approx(401767469)  # the median of the three "ref" rows
    # the fake rows' sizes (32/64/64 bytes) are nobody's: no pair is called the same parameter set
    assert not anc["basis"].str.startswith("same parameter set").any()
    text = R.describe_ancestors(anc, CORE)
    assert "our portable build against the study's \"opt\" and \"ref\" rows" in text
    assert "Falcon-512 against FALCON (2 pairs)" in text
    assert text.startswith("Today's mean core cycles per call over the study's core-clock cycles")
    tsc = R.compare_ancestors(recomputed, _rows(), TSC)  # TSC reference cycles never share a ratio with core
    assert len(tsc) == len(anc) and tsc["sign_ratio"].isna().all() and tsc["verify_cycles_today"].isna().all()
    assert (tsc["basis"] == anc["basis"]).all()  # the pairs and their basis do not depend on the counter
    assert R.ancestors_caption(TSC).endswith("(no cycle ratio: the study counted core cycles, this run TSC "
                                             "reference cycles at 2.45 GHz)")
    assert R.describe_ancestors(R.compare_ancestors(recomputed, _rows(), TSC), TSC).startswith(
        "Not compared: the study counted cycles at its core clock (Turbo Boost off), "
        "and this run counted TSC reference")


def test_second_implementation_against_both_liboqs_builds():
    rows = _rows()
    openssl = rows[(rows["algorithm"] == "ML-DSA-44") & (rows["build"] == "liboqs optimised")].copy()
    openssl["build"] = "OpenSSL"
    openssl[["cycles_mean", "cycles_median"]] *= 3
    rows = pd.concat([rows, openssl], ignore_index=True)
    both = pd.concat([F.compare_implementations(rows, base=b).assign(liboqs_build=b)
                      for b in ("liboqs optimised", "liboqs portable")], ignore_index=True)
    assert both.loc[both["liboqs_build"] == "liboqs optimised", "ratio"].tolist() == pytest.approx([3, 3, 3])
    assert both.loc[both["liboqs_build"] == "liboqs portable", "ratio"].tolist() == pytest.approx([0.75] * 3)
    text = F.describe_implementations(both, CORE)
    assert "ML-DSA-44 through OpenSSL needs keygen 3.00×" in text and "sign 0.75×" in text


def test_closing_note_states_measured_numbers_only():
    rows = _rows()
    fidelity = F.compute_python_over_native(rows).assign(ratio_ci_low=1.0, ratio_ci_high=1.2)
    numbers = F.closing_numbers(fidelity, F.compute_speedups(rows))
    assert numbers["ratio ML-DSA-44 sign"] == pytest.approx((1 / 0.9, 1.0, 1.2))
    assert numbers["speedup SPHINCS+-SHAKE-128f-simple sign"] is None
    assert np.isnan(numbers["speedup ML-DSA-44 sign"][1])  # no interval in that table: none invented
    flat = F.numbers(numbers)
    assert flat["python_over_native_ml_dsa_44_sign"] == pytest.approx(1 / 0.9)
    assert flat["python_over_native_ml_dsa_44_sign_ci_high"] == 1.2
    # not measured stays empty (save_numbers writes it as such), never a number
    assert flat["portable_over_optimised_ml_dsa_44_sign_ci_low"] is None
    assert flat["portable_over_optimised_sphincsplus_shake_128f_simple_sign"] is None
    assert all(k == k.lower() and k.replace("_", "").isalnum() for k in flat)
    counts = {"rows": 105, "sign_matches": 105, "verify_matches": 11, "clock_hz": 1.895e9}
    clock = {"clock_ghz": 3.6, "consistent": 30, "rows": 30}
    precision = pd.DataFrame({"time_ns_rel_ci": [0.004] * 27 + [0.03, 0.03, 0.6], "target_rel_ci": 0.01,
                              "rounds": 6, "flags": ""})
    note = F.write_closing_note(numbers, clock, counts, {"default": "r1"}, {"default": 12.0}, CORE, precision)
    assert "1.11× [1.00, 1.20]" in note and "n/a" in note and "`r1`" in note
    assert "mean core cycles per call" in note and "the counter ran at 3.60 GHz" in note
    assert ("median ±0.40 %, worst ±3.00 % over 29 rows; 1 of 30 rows not resolved "
            "(interval wider than 2×), left out of the median and the worst; "
            "3 of 30 rows are wider than their target of ±1.00 %") in note
    tsc = F.write_closing_note(numbers, None, counts, {"default": "r1"}, {"default": 12.0}, TSC, precision)
    assert "TSC reference cycles at 2.45 GHz (rate from kernel log (dmesg): tsc 2445.406 MHz)" in tsc
    assert "the clock-consistency check applies to core cycles only and was skipped" in tsc
    assert "One TSC read costs 154 ns (376 ticks) from Python and 27 ticks inside C" in tsc
    # the reason: data, escaped
    assert ("a perf_event read could not be measured: core cycles are unavailable here "
            "(perf\\_event\\_open" in tsc)
    assert "GHz (median over rows)" not in tsc


# --------------------------------------------------------------------------- counters: tsc and none


def _time_only_rows() -> pd.DataFrame:
    rows = _rows()
    rows[["cycles_median", "cycles_q1", "cycles_q3", "cycles_mean"]] = np.nan
    rows["counter"] = "no cycle counter"
    return rows


def test_tsc_cycles_skip_the_clock_check_and_name_their_rate():
    rows = _rows().assign(counter=TSC["unit"])
    assert F.check_clock(rows, TSC) is None
    rows["implied_ghz"] = rows["cycles_median"] / rows["time_ns_median"]
    text = F.describe_clock(None, TSC, rows=rows)
    assert text.startswith("**The clock-consistency check is skipped**: it applies to core cycles only.")
    assert "ticks / ns has a median of 3.6000 over 33 rows against the stated 2.4454 GHz" in text
    table = F.tabulate_signatures(rows)
    assert set(table["counter"]) == {"TSC reference cycles at 2.45 GHz"} and "sign_cycles" in table
    fig = F.plot_cycles_vs_bytes(rows, "sign", "signature_max_bytes", "signature bytes", TSC["unit"])
    assert fig.axes[0].get_ylabel() == "sign: median TSC reference cycles at 2.45 GHz"


def test_two_counters_never_share_a_table_or_a_study():
    rows = _rows()
    rows.loc[rows["build"] == "liboqs portable", "counter"] = TSC["unit"]
    with pytest.raises(ValueError, match="rows of different counters"):
        F.tabulate_signatures(rows)

    def run(label):
        return type("R", (), {"meta": {"counter": {"label": label}}})()

    with pytest.raises(RuntimeError, match=r"different counters \(core-cycles, tsc\)"):
        F.study_counter(F.SignatureStudy({"default": run("core-cycles"), "generic": run("tsc")}, None))
    same = F.study_counter(F.SignatureStudy({"default": run("tsc")}, run("tsc")))
    assert same["basis"] == "cycles" and same["unit"] == "TSC reference cycles"


def test_without_a_counter_tables_show_times_and_ratios_use_times():
    rows = _time_only_rows()
    table = F.tabulate_signatures(rows)
    assert not any("cycles" in c for c in table.columns) and "sign_us" in table
    # the paper columns exist in every family table, for any counter
    for t in F.tabulate_families(rows).values():
        assert formatting.table(t, F.family_columns(NONE)) is not None
    assert "sign_cycles" in F.family_columns(CORE) and "sign_cycles" not in F.family_columns(NONE)
    tables = F.tabulate_families(rows)
    assert all(t["sign_us"].is_monotonic_increasing for t in tables.values())
    sp = F.compute_speedups(rows, "time_ns").set_index(["algorithm", "operation"])
    assert sp.loc[("ML-DSA-44", "sign"), "speedup"] == pytest.approx(4.0)
    assert "optimised_time_ns_mean" in sp
    fi = F.compute_python_over_native(rows, "time_ns")
    assert np.allclose(fi["ratio"], 1 / 0.9) and "added_time_ns" in fi
    text = F.describe_python_over_native(fi, NONE, noop=80.0)
    assert "mean time per call on both sides" in text and "costs 80 ns" in text
    assert (F.plot_python_over_native(fi, NONE).axes[0].get_title()
            == "pqlab / native runner: mean time per call")


def test_without_a_counter_no_cycle_figure_and_no_ancestors(recomputed):
    rows = _time_only_rows()
    assert F.plot_cycles_vs_bytes(rows, "sign", "signature_max_bytes", "signature bytes",
                                  NONE["unit"]) is None
    assert F.missing_figure(NONE, needs_cycles=True) == (
        "it shows cycles, and no cycle counter ran here (PQLAB_COUNTER=none)")
    none = R.compare_ancestors(recomputed, rows, NONE)
    assert len(none) and none["sign_ratio"].isna().all() and none["basis"].notna().all()
    assert "and no cycle counter ran here (PQLAB_COUNTER=none)" in R.describe_ancestors(
        R.compare_ancestors(recomputed, rows, NONE), NONE)


def test_a_ratio_figure_without_any_ratio_is_not_drawn():
    fi = F.compute_python_over_native(_rows())
    fi["ratio"] = np.nan
    assert F.plot_python_over_native(fi, CORE) is None
    assert F.missing_figure(CORE, needs_cycles=False).startswith("no row of this run has a value for it")


class _FakeRun:
    """sample_values() of a run: per-call cycles around `center[(backend, algorithm, operation)]`."""

    def __init__(self, centers):
        self.centers = centers

    def sample_values(self, algorithm, operation, *, backend=None, build=None, message_bytes=None,
                      column="cycles"):
        c = self.centers.get((backend, algorithm, operation))
        rng = np.random.default_rng(len(algorithm) + len(operation) + len(backend or ""))
        if c is None:
            return np.array([])
        return _in_rounds(c * (1 + 0.02 * rng.standard_normal(40)), f"run-{id(self)}")


def _in_rounds(values, run_id="r", rounds=8):
    """Samples labelled with a run and rounds (as Run.sample_values gives them): `rounds` rounds, in turn."""
    import pandas as pd

    idx = pd.MultiIndex.from_arrays([[run_id] * len(values), np.arange(len(values)) % rounds],
                                    names=["run_id", "round"])
    return pd.Series(np.asarray(values, float), index=idx)


def test_every_ratio_gets_an_interval_from_both_sides_samples():
    from types import SimpleNamespace

    rows = _rows()
    opt = {("liboqs", a, o): c
           for a, (_, ops, _f) in {"ML-DSA-44": (0, {"sign": 2e5, "verify": 9e4}, 0)}.items()
           for o, c in ops.items()}
    study = SimpleNamespace(runs={"default": _FakeRun(opt),
                                  "generic": _FakeRun({k: 4 * v for k, v in opt.items()})},
                            native=_FakeRun({("native", a, o): 0.9 * v for (_, a, o), v in opt.items()}))
    speedups = F.with_intervals(F.compute_speedups(rows), study, "liboqs portable", "liboqs optimised",
                                "speedup")
    sign = speedups[(speedups["algorithm"] == "ML-DSA-44") & (speedups["operation"] == "sign")].iloc[0]
    assert (sign["speedup_ci_low"] < 4 < sign["speedup_ci_high"]
            and sign["speedup_ci_high"] / sign["speedup_ci_low"] < 1.1)
    keygen = speedups[(speedups["algorithm"] == "ML-DSA-44") & (speedups["operation"] == "keygen")].iloc[0]
    assert np.isnan(keygen["speedup_ci_low"])  # no samples: no interval, never an invented one
    cols = list(speedups.columns)
    assert cols.index("speedup_ci_low") == cols.index("speedup") + 1
    fidelity = F.with_intervals(F.compute_python_over_native(rows), study, "liboqs optimised",
                                "native optimised", "ratio")
    one = fidelity[(fidelity["algorithm"] == "ML-DSA-44") & (fidelity["operation"] == "verify")].iloc[0]
    assert one["ratio_ci_low"] < 1 / 0.9 < one["ratio_ci_high"]
    fig = F.plot_speedups(speedups, CORE)  # a ratio figure draws the intervals as error bars
    assert any(len(c.get_segments()) for c in fig.axes[0].collections)
    recomputed = R.recompute_reference(load_reference(F.REFERENCE_TABLE))
    anc = F.ancestor_intervals(R.compare_ancestors(recomputed, rows, CORE), study)
    ml = anc[anc["algorithm"] == "ML-DSA-44"].iloc[0]
    truth = 4 * 2e5 / ml["r2_sign_cycles"]
    # the interval (from our samples' rounds) is about the samples' centre (a 95 % interval: within 3 % of it)
    assert ml["sign_ratio_ci_low"] < truth * 1.03 and ml["sign_ratio_ci_high"] > truth * 0.97
