"""Units are owned by the schema (issue 43): one unit table (pqlab.core.schema.UNIT_TABLE), one conversion
(convert_unit), and a value converted by hand anywhere else in pqlab fails here."""
from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pqlab.core.errors import BadInput, UnknownName
from pqlab.core.schema import UNIT_TABLE, UNITS, convert_unit, unit_size

PACKAGE = Path(__file__).resolve().parents[2] / "pqlab"
#: the formatting layer, where units are defined and shown
OWNERS = {PACKAGE / "core" / "schema.py", PACKAGE / "core" / "quantities.py", PACKAGE / "core" / "tables.py"}
#: factors that change a unit when a value is multiplied or divided by them
HAND = {1e3, 1e6, 1e9, 1e12, 1e-3, 1e-6, 1e-9, 1e-12, 1024, 1024**2, 1024**3}


def hand_conversions(source: str) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.BinOp | ast.AugAssign)
                and isinstance(node.op, ast.Mult | ast.Div | ast.FloorDiv)):
            sides = (node.left, node.right) if isinstance(node, ast.BinOp) else (node.value,)
            if any(isinstance(s, ast.Constant) and type(s.value) in (int, float) and s.value in HAND
                   for s in sides):
                out.append(f"{node.lineno}: {ast.unparse(node)}")
    return out


def test_no_module_converts_units_by_hand():
    found = {str(p.relative_to(PACKAGE)): hits for p in sorted(PACKAGE.rglob("*.py")) if p not in OWNERS
             if (hits := hand_conversions(p.read_text(encoding="utf-8")))}
    assert found == {}, "convert with pqlab.core.schema.convert_unit instead"


def test_the_scan_finds_a_hand_conversion():
    assert ([h.split(":")[0] for h in hand_conversions("x = t_ns / 1e3\ny = 2 * n\nw = 1e6 * s\n")]
            == ["1", "3"])
    assert hand_conversions("budget /= 1000\n") and not hand_conversions("n = rounds * 3\n")


def test_every_stored_unit_is_in_the_table_at_size_one():
    assert all(UNIT_TABLE[u][1] == 1.0 for u in UNITS)


@pytest.mark.parametrize(("value", "unit", "to", "expected"), [
    (1500, "ns", "µs", 1.5), (2.5, "ms", "ns", 2.5e6), (3, "s", "ms", 3000), (2048, "bytes", "KiB", 2.0),
    (1.5, "MiB", "bytes", 1572864), (7, "mJ", "µJ", 7000), (250, "mW", "W", 0.25),
    (0.125, "fraction", "%", 12.5), (1200, "us", "ms", 1.2), (5, "kcycles", "cycles", 5000),
])
def test_convert_unit(value, unit, to, expected):
    assert convert_unit(value, unit, to) == pytest.approx(expected)


def test_convert_unit_takes_arrays_and_series():
    assert list(convert_unit(np.array([1e3, 2e3]), "ns", "µs")) == [1.0, 2.0]
    s = convert_unit(pd.Series([1.0, 2.0], name="t"), "s", "ns")
    assert list(s) == [1e9, 2e9] and s.name == "t"


def test_units_of_two_quantities_or_unknown_are_refused_in_one_line():
    with pytest.raises(BadInput, match="different things") as info:
        convert_unit(1, "ns", "µJ")
    assert "\n" not in str(info.value)
    with pytest.raises(UnknownName, match="close matches: us"):
        unit_size("usec")
