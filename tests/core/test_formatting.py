"""pqlab.core.formatting: one rule per unit, missing values printed as n/a;
pqlab.core.errors: close matches."""
from __future__ import annotations

import math

import pytest

from pqlab.core import formatting as f
from pqlab.core.errors import UnknownName, close_matches


@pytest.mark.parametrize("value", [None, float("nan"), "x"])
def test_missing_values_print_as_na(value):
    assert f.is_missing(value)
    for fmt in (f.fmt_time_ns, f.fmt_bytes, f.fmt_cycles, f.fmt_factor, f.fmt_energy_uj, f.fmt_percent):
        assert fmt(value) == f.MISSING


def test_units_and_digits():
    assert f.fmt_time_ns(51_010) == "51 µs"
    assert f.fmt_time_ns(812) == "812 ns"
    assert f.fmt_time_ms(1.5) == "1.5 ms"
    assert f.fmt_time_ns(2.5e9) == "2.5 s"
    assert f.fmt_bytes(17088) == "17,088 B"
    assert f.fmt_bytes_binary(3 << 20) == "3 MiB" and f.fmt_bytes_binary(1536) == "1.5 KiB"
    assert f.fmt_bytes_binary(math.inf) == "never" and f.fmt_bytes_binary(100) == "100 B"
    assert f.fmt_cycles(2.1e6) == "2.1 Mcycles" and f.fmt_cycles(812) == "812 cycles"
    assert f.fmt_factor(1.234) == "1.23×" and f.fmt_factor(1234.5) == "1,234×"
    assert f.fmt_factor_ci(1.234, 1.2, 1.26) == "1.23× [1.20, 1.26]"
    assert f.fmt_factor_ci(1.234, None, 1.26) == "1.23×"
    assert f.fmt_factor_ci(1143.2, 980.11, 1377.47) == "1,143× [980, 1,377]"  # bounds styled like the factor
    assert f.fmt_energy_uj(1520) == "1.52 mJ"
    assert f.fmt_percent(0.0123) == "1.2 %" and f.fmt_percent(0.0123, signed=True) == "+1.2 %"
    assert f.fmt_span([3, 1, None], f.fmt_bytes) == "1 B to 3 B" and f.fmt_span([2, 2]) == "2 B"
    assert f.fmt_count(1234) == "1,234"


def test_compact_numbers_for_figure_labels():
    assert [f.fmt_compact(x) for x in (0.0123, 45.61, 1234, 999.9, 4.5e6, -2500, 0, None)] == [
        "0.0123", "45.6", "1.23k", "1k", "4.5M", "-2.5k", "0", f.MISSING]


def test_slug():
    assert f.slug("speedup SPHINCS+-SHAKE-128f-simple sign") == "speedup_SPHINCSplus-SHAKE-128f-simple_sign"
    assert f.slug("measured (net)", lower=True) == "measured_net"


def test_close_matches_and_unknown_name():
    names = ["ML-DSA-44", "ML-DSA-65", "ML-KEM-768", "Ed25519"]
    assert set(close_matches("ml-dsa-45", names)[:2]) == {"ML-DSA-44", "ML-DSA-65"}
    assert close_matches("kem", names) == ["ML-KEM-768"]  # a part of the name also counts
    err = UnknownName("algorithm", "ML-DSA-45", names, "`python -m pqlab list` prints every name.")
    assert isinstance(err, KeyError)
    assert str(err).startswith("unknown algorithm 'ML-DSA-45'; close matches: ML-DSA-")
    assert str(err).endswith("prints every name.") and "\n" not in str(err)
    assert "close matches: none" in str(UnknownName("group", "zzz", names))


# ----- tables -----

def test_three_significant_digits_without_exponent():
    assert [f._sig(v) for v in (1234.5, 123.45, 12.345, 1.2345, 0.012345, 9.996, 51010.0, -0.5)] == [
        "1,230", "123", "12.3", "1.23", "0.0123", "10.0", "51,000", "-0.500"]


def test_a_schema_column_takes_its_unit_from_the_schema_not_its_name():
    """pyperf's metadata style (issue 30): the unit belongs to the column.  A schema column's kind comes from
    the unit the schema declares, even where its name says otherwise; a study's derived column falls back on
    its name."""
    from pqlab.core import schema

    assert f.kind_from_name("cycles_source") == ("", 1.0)  # a label: its name says "cycles"
    assert schema.unit_of("cycles_source") == "" and schema.unit_of("sign_cycles") is None
    assert f.kind_from_name("sign_cycles") == ("cycles", 1.0)
    for part in (schema.MEASUREMENTS, schema.SIZES, schema.SAMPLES, schema.TLS_MEASUREMENTS,
                 schema.TLS_SAMPLES):
        for name, col in part.items():
            assert col.unit in schema.UNITS + ("",), name
            if col.unit:
                assert f.kind_from_name(name)[0], name  # every unit has its kind (a display unit)
            if col.dtype == schema.STR:
                assert not col.unit and f.kind_from_name(name) == ("", 1.0), name


def test_kinds_and_labels_are_read_from_column_names():
    assert f.kind_from_name("time_ns_median") == ("time", 1.0)
    assert f.kind_from_name("cold_mean_first5_ms") == ("time", 1e6)
    assert f.kind_from_name("time_ns_cv") == ("percent", 1.0)
    assert f.kind_from_name("public_key_bytes_published") == ("size", 1.0)
    assert f.kind_from_name("factor_b_over_a") == ("ratio", 1.0)
    assert f.kind_from_name("energy_uj") == ("energy", 1.0) and f.kind_from_name("power_w") == ("power", 1.0)
    assert f.kind_from_name("algorithm") == ("", 1.0)
    assert f.label_from_name("public_key_bytes") == "Public key"
    assert f.label_from_name("nist_level") == "NIST level" and f.label_from_name("time_ns_q1") == "Time Q1"
    assert f.label_from_name("cycles_median") == "Median" and f.label_from_name("sign_cycles") == "Sign"
    assert f.label_from_name("BC 1.86 cold") == "BC 1.86 cold"


def table_of(**columns):
    import pandas as pd

    return f.table(pd.DataFrame(columns))


def test_each_kind_formats_its_cells():
    t = table_of(size=[17088, None], n_count=[3, 1234567])
    assert t.rows == [["17,088", "3"], ["–", "1,234,567"]] and t.headers == ["Size", "N count"]
    t = table_of(time_ns_median=[812.0, 51_010.0, 2.5e9])  # median 51 µs: the column is in µs
    assert t.headers == ["Time median [µs]"] and [r[0] for r in t.rows] == ["0.812", "51.0", "2,500,000"]
    t = table_of(cycles_median=[2.1e6, 812.0, 5.5e6])
    assert t.units == ["Mcycles"] and [r[0] for r in t.rows] == ["2.10", "0.000812", "5.50"]
    t = table_of(energy_uj=[1520.0, 3000.0], power_w=[2.345, 3.1], time_ns_cv=[0.0123, 0.2])
    assert t.units == ["mJ", "W", "%"] and t.rows[0] == ["1.52", "2.35", "1.2"]
    t = table_of(ok=[True, False], label=["a", None], x=[0.5, 2.0])
    assert t.rows == [["yes", "a", "0.500"], ["no", "–", "2.00"]] and t.numeric == [False, False, True]


def test_a_unit_and_kind_can_be_chosen():
    import pandas as pd

    df = pd.DataFrame({"t_ns": [51_010.0, 2_000_000.0]})
    t = f.table(df, [f.Column("t_ns", "Sign", unit="ms")])
    assert t.headers == ["Sign [ms]"] and [r[0] for r in t.rows] == ["0.0510", "2.00"]
    t = f.table(df, [f.Column("t_ns", "Sign", kind="number")])
    assert t.headers == ["Sign"] and t.rows[0] == ["51,000"]
    with pytest.raises(ValueError, match="unknown kind 'tme'; close matches: time"):
        f.Column("x", kind="tme")
    with pytest.raises(ValueError, match="unit 'min' does not suit kind 'time'; use one of: s, ms, µs, ns"):
        f.Column("x", kind="time", unit="min")


def test_flags_become_marks_and_a_legend():
    from pqlab.core import flags

    t = table_of(algorithm=["a", "b", "c"], flags=[flags.join([flags.make("no-cycles", "ENOENT"),
                                                               flags.make("few-samples")]),
                                                   flags.make("no-cycles"), None])
    assert t.marks == ["a,b", "a", ""]  # no-cycles is not on every row (c has none): a mark where it is
    t = table_of(algorithm=["a", "b"], flags=[flags.join([flags.make("no-cycles", "x"),
                                                          flags.make("few-samples")]),
                                              flags.make("no-cycles")])
    assert t.marks == ["a", ""] and t.notes == ["All rows: no cycle counter was available.",
                                                "a: fewer than 10 samples."]
    assert "Notes" in t.frame.columns and "ENOENT" not in t.to_string()
    t = f.table(__import__("pandas").DataFrame({"x": [1], "flags": [flags.make("few-samples")]}),
                show_flags=["failed"])
    assert t.marks == [""] and t.notes == []


def test_run_summary_is_formatted_and_raw_columns_stay_reachable():
    import pandas as pd

    from pqlab.core import flags
    from pqlab.store.results import Run

    rows = [{"algorithm": "ML-DSA-44", "backend": "liboqs", "operation": "sign", "samples": 120, "loops": 10,
             "time_ns_median": 49_123.4, "time_ns_q1": 48_000.0, "time_ns_q3": 51_000.0, "verified": True,
             "flags": flags.make("no-cycles", "[Errno 2] perf_event_open: No such file or directory")}]
    run = Run.from_rows("r1", rows, [], [], {})
    raw = run.raw_summary()
    assert raw["time_ns_median"].iloc[0] == 49_123.4 and "Errno" in raw["flags"].iloc[0]
    shown = run.summary()
    assert list(shown.frame.columns) == ["Algorithm", "Backend", "Operation", "Samples", "Time median [µs]",
                                         "Time Q1 [µs]", "Time Q3 [µs]", "Verified"]
    assert shown.rows[0][4:] == ["49.1", "48.0", "51.0", "yes"]
    assert shown.notes == ["All rows: no cycle counter was available."]
    assert "<table" in shown._repr_html_() and "no cycle counter" in shown._repr_html_()
    assert isinstance(shown.frame, pd.DataFrame)
@pytest.mark.parametrize("seconds, text", [(0.4, "0 s"), (59.4, "59 s"), (59.6, "1 min 0 s"),
                                           (142, "2 min 22 s"), (3655, "1 h 01 min"), (7199, "2 h 00 min")])
def test_fmt_duration(seconds, text):
    assert f.fmt_duration(seconds) == text
    assert f.fmt_duration(None) == f.MISSING


def test_a_pivot_with_numeric_column_names_is_shown():
    import pandas as pd

    pivot = pd.DataFrame({"algorithm": ["AES"], 64: [0.0021], 4096: [0.0125]})
    t = f.table(pivot, ["algorithm"] + [f.Column(c, f"{c:,} B", "time", scale=1e6) for c in (64, 4096)])
    assert t.headers == ["Algorithm", "64 B [µs]", "4,096 B [µs]"] and t.rows == [["AES", "2.10", "12.5"]]
    assert f.table(pivot).headers[1:] == ["64", "4096"]
