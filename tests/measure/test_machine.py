"""machine: the counter report's verdict in every situation (forced: this machine shows one)."""
from __future__ import annotations

from pqlab.measure.machine import counter_report, verdict

PERF_OK = {"available": True, "read_cost_ns": 300.0}
PERF_NO = {"available": False, "error": "perf_event_open: No such file or directory [ENOENT]",
           "errno": "ENOENT"}
TSC_OK = {"available": True, "instruction": "rdtsc", "hz": 2.4454e9,
          "hz_source": "kernel log (dmesg): tsc 2445.406 MHz",
          "read_cost_ns": 150.0, "read_cost_ticks": 370.0, "read_cost_ticks_in_c": 27.0,
          "flags": {"constant_tsc": True, "nonstop_tsc": True, "tsc_known_freq": True}}
TSC_NO = {"available": False, "error": "no C compiler (cc) to build the TSC helper", "errno": "ENOENT",
          "flags": {}}
NO_FREQ = {"available": False, "reason": "/sys/devices/system/cpu/cpu0/cpufreq does not exist"}
BOOST_OFF = {"available": True, "scaling_governor": "performance", "boost": "off (no_turbo=1)"}
BOOST_ON = {"available": True, "scaling_governor": "schedutil", "boost": "1"}


USED = {"label": "tsc", "hz": 2.4454e9, "requested": "auto", "reason": "no core cycles: ..."}


def info(perf, tsc):
    return {"perf": perf, "tsc": tsc, "perf_event_paranoid": "2", "hypervisor": "kvm"}


def test_core_cycles_with_boost_off_are_publishable():
    assert verdict(info(PERF_OK, TSC_OK), BOOST_OFF) == [
        "Cycle tables measured here are core cycles with boost off: fit for publication."]


def test_core_cycles_with_boost_on_or_unknown_say_so():
    assert "boost is 1: turn boost off" in verdict(info(PERF_OK, TSC_OK), BOOST_ON)[0]
    assert "boost is unknown" in verdict(info(PERF_OK, TSC_OK), NO_FREQ)[0]


def test_tsc_only_names_its_rate_and_what_publishing_needs():
    lines = verdict(info(PERF_NO, TSC_OK), NO_FREQ)
    assert lines[0].startswith("Cycle tables measured here are TSC reference cycles at 2.45 GHz")
    assert lines[-1].startswith("Publishable cycle tables need core cycles")


def test_an_unsteady_tsc_is_called_unreliable():
    shaky = dict(TSC_OK, flags={"constant_tsc": False, "nonstop_tsc": True, "tsc_known_freq": False})
    assert any("not reliable reference cycles" in line for line in verdict(info(PERF_NO, shaky), NO_FREQ))


def test_no_counter_at_all():
    assert verdict(info(PERF_NO, TSC_NO), NO_FREQ)[0] == ("No cycle counter works here: "
                                                          "results carry times only.")


def test_report_fits_one_screen_and_states_the_facts():
    text = counter_report(info(PERF_NO, TSC_OK), NO_FREQ, USED)
    assert len(text.splitlines()) <= 25
    for part in ("unavailable: perf_event_open: No such file or directory [ENOENT]",
                 "perf_event_paranoid = 2", "2.4454 GHz, from kernel log (dmesg)",
                 "150 ns = 370 ticks from Python, 27 ticks inside C",
                 "constant_tsc yes", "auto -> tsc (TSC reference cycles at 2.45 GHz)", "hypervisor: kvm"):
        assert part in text, part
    forced = counter_report(info(PERF_NO, TSC_NO), NO_FREQ, {"label": None, "requested": "perf",
                                                            "error": "PQLAB_COUNTER=perf: ..."})
    assert "TSC           unavailable: no C compiler" in forced and "PQLAB_COUNTER=perf: ..." in forced
