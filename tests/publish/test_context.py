"""pqlab.publish.context: the run context shown beside results, generated from run metadata."""
from __future__ import annotations

from types import SimpleNamespace

from pqlab.measure import machine
from pqlab.publish import context


def fake_run(run_id="r1", **meta):
    return SimpleNamespace(meta={**machine.collect({}, liboqs=False), "run_id": run_id, **meta})


def test_markdown_block_names_every_fact():
    text = context.context_markdown([fake_run()])
    for what in ("CPU", "cycle counter", "frequency", "hypervisor", "kernel", "Python", "liboqs",
                 "git commit", "r1"):
        assert what in text
    assert context.context_markdown([]) .endswith("no run.")


def test_values_that_differ_between_runs_are_all_listed():
    a = fake_run("a", hypervisor="kvm")
    b = fake_run("b", hypervisor="none")
    rows = dict(context.run_context([a, b]))
    assert rows["hypervisor"] == "kvm (run a); none (run b)" and rows["runs"] == "a, b"
    assert rows["kernel"] == a.meta["kernel"]  # the same in every run: said once, without run ids


def test_the_liboqs_row_says_which_runs_loaded_which_liboqs():
    """A notebook's runs beside Bouncy Castle's: the row must not read "0.13.0 (...); not loaded by this
    run"."""
    loaded = {"liboqs_version": "0.13.0", "options": "default", "build": "liboqs-0.13.0", "build_config": {}}
    rows = dict(context.run_context([fake_run("oqs1", liboqs=loaded), fake_run("oqs2", liboqs=loaded),
                                     fake_run("bc", liboqs={})]))
    assert rows["liboqs"] == ("0.13.0 (default build; options unknown) (runs oqs1, oqs2); "
                              "not loaded (run bc)")


def test_unknown_frequency_says_why_and_counter_dicts_are_read():
    meta = {"frequency": {"available": False, "reason": "no cpufreq"},
            "counter": {"label": "tsc", "hz": 2.445406e9}}
    assert context.frequency_text(meta) == "unknown: no cpufreq"
    assert context.counter_text(meta) == "tsc at 2.445 GHz"
    assert context.counter_text({"counter": {"label": "none", "reason": "no PMU"}}) == "none (no PMU)"


def test_footer_line_is_one_line():
    line = context.context_line([fake_run("r9")])
    assert "\n" not in line and line.endswith("run r9") and "counter" in line


def test_implementations_are_listed_per_backend():
    run = fake_run("r2", implementations={"ML-DSA-44@pqcrypto": "pqcrypto 1.0.0 (Rust crate x)",
                                          "ML-KEM-768@pqcrypto": "pqcrypto 1.0.0 (Rust crate y)",
                                          "noop@pqlab": "pqlab harness"})
    text = dict(context.run_context([run]))["implementations (checked against the installed packages)"]
    assert text == "pqcrypto: pqcrypto 1.0.0 (Rust crate x) / pqcrypto 1.0.0 (Rust crate y)"


def test_runs_in_memory_are_named_by_their_id_and_implementations_merge():
    a = SimpleNamespace(run_id="mem-1", meta={**machine.collect({}, liboqs=False),
                                              "implementations": {"X@b": "b 1.0"}})
    b = fake_run("r3", implementations={"Y@b": "b 2.0", "X@b": "b 1.0"})
    rows = dict(context.run_context([a, b]))
    assert rows["runs"] == "mem-1, r3"
    assert rows["implementations (checked against the installed packages)"] == "b: b 1.0 / b 2.0"
    assert context.context_line([a]).endswith("run mem-1")


AVAIL = {"perf": {"available": False, "error": "perf_event_open: No such file or directory [ENOENT]"},
         "tsc": {"available": True, "read_cost_ns": 154.0, "read_cost_ticks": 376.0,
                 "read_cost_ticks_in_c": 27.0}}


def test_counter_markdown_names_the_counter_its_rate_and_read_costs():
    tsc = {"label": "tsc", "hz": 2.4454e9, "hz_source": "kernel log (dmesg): tsc 2445.406 MHz",
           "reason": "no core cycles: ENOENT"}
    text = context.counter_markdown(tsc, AVAIL)
    assert text.startswith("Cycles here are **TSC reference cycles at 2.45 GHz** (`cycles_source` = `tsc`; "
                           "rate from kernel log (dmesg): tsc 2445.406 MHz), chosen because: no core cycles: "
                           "ENOENT.")
    assert "One TSC read costs 154 ns (376 ticks) from Python and 27 ticks inside C" in text
    # the error from the metadata as Markdown text (pqlab.core.formatting.markdown)
    assert (r"a perf_event read could not be measured: core cycles are unavailable here (perf\_event\_open"
            in text)
    core = context.counter_markdown({"label": "core-cycles", "reason": "auto"},
                                    dict(AVAIL, perf={"available": True, "read_cost_ns": 400.0,
                                                      "read_cost_ticks": 900.0}))
    assert core.startswith("Cycles here are **core cycles** (`cycles_source` = `core-cycles`).")
    assert "one perf_event read costs 400 ns (900 core cycles) from Python" in core
    none = context.counter_markdown({"label": "none", "reason": "PQLAB_COUNTER=none"}, AVAIL)
    assert none.startswith(r"**No cycle counter ran** (PQLAB\_COUNTER=none)")


def test_precision_markdown_states_median_worst_and_misses():
    import pandas as pd

    m = pd.DataFrame({"time_ns_rel_ci": [0.002, 0.004, 0.02], "target_rel_ci": [0.01] * 3,
                      "rounds": [3, 6, 18], "flags": ["", "", "precision-not-reached:budget"]})
    assert context.precision_markdown(m) == (
        "**Precision of the medians** (half the interval over the estimate; 95 % t-intervals on the "
        "logarithms of the per-round values (3 to 18 rounds), widened by the machine's drift over those "
        "rounds): median ±0.40 %, worst ±2.00 % over 3 rows; 1 of 3 rows are wider than their target of "
        "±1.00 % (flag `precision-not-reached`, whose detail says what ended their rounds).")
    assert "not recorded" in context.precision_markdown(m.assign(time_ns_rel_ci=float("nan")))


def test_the_caveats_say_profile_rounds_busy_rounds_and_nonconforming_timed(monkeypatch):
    """Issue #45: the quick profile's caveats (rounds, busy rounds) appeared only in context tables and
    footnotes; now a caveats paragraph opens every notebook's context block and is a row the paper's run
    context prints."""
    import pandas as pd

    from pqlab.core import paths

    monkeypatch.setattr(paths, "PROFILE", "quick")
    noise = [{"round": 0, "busy": True}, {"round": 1, "busy": False}, {"round": 2}]
    run = fake_run("q1", round_noise=noise, allowed_nonconforming=["ML-DSA-44@liboqs"])
    run.run_id = "q1"
    run.measurements = pd.DataFrame({"rounds": [3, 3, 5]})
    said = context.caveats([run])
    assert said[0].startswith("Made in the quick profile") and "cite the full profile" in said[0]
    assert "3 to 5 rounds" in said[0]
    assert said[1].startswith("1 of 3 rounds ran while the machine was busy")
    assert "ML-DSA-44@liboqs" in said[2] and "non-conforming" in said[2]
    screen = fake_run("s1")  # a run without rounds (a leakage screen's processes): no sentence on rounds
    screen.run_id, screen.measurements = "s1", pd.DataFrame({"rounds": [4]})
    assert "rounds" not in context.caveats([screen])[0]
    block = context.context_markdown([run])
    assert block.startswith("**Caveats.** Made in the quick profile")
    assert dict(context.run_context([run]))["caveats"] == " ".join(said)


def test_the_footer_names_every_liboqs_build_a_figure_compares():
    """Issue #45: notebook 04's speed-up figure compares two builds; its footer named one."""
    a = fake_run("a", liboqs={"liboqs_version": "0.13.0", "options": "default"})
    b = fake_run("b", liboqs={"liboqs_version": "0.13.0", "options": "generic"})
    line = context.context_line([a, b])
    assert "liboqs 0.13.0 default and 0.13.0 generic" in line
