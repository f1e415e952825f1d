"""pqlab.formatting: one rule per unit, missing values printed as n/a; pqlab.errors: close matches."""
from __future__ import annotations

import math

import pytest

from pqlab import formatting as f
from pqlab.errors import UnknownName, close_matches


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


@pytest.mark.parametrize("seconds, text", [(0.4, "0 s"), (59.4, "59 s"), (59.6, "1 min 0 s"), (142, "2 min 22 s"),
                                           (3655, "1 h 01 min"), (7199, "2 h 00 min")])
def test_fmt_duration(seconds, text):
    assert f.fmt_duration(seconds) == text
    assert f.fmt_duration(None) == f.MISSING
