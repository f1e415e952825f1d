"""pqlab.core.flags: one vocabulary, one writer and reader."""
from __future__ import annotations

import pandas as pd
import pytest

from pqlab.core import flags


def test_make_sanitizes_details_so_a_message_cannot_split_a_flag():
    flag = flags.make("failed", "ValueError: a; b\nsecond line")
    assert flag == "failed:ValueError: a, b second line"
    assert flags.codes(flags.join([flag, "few-samples"])) == ["failed", "few-samples"]
    assert len(flags.make("failed", "x" * 1000)) <= len("failed:") + flags.MAX_DETAIL


def test_unknown_codes_are_refused_when_written_and_read():
    with pytest.raises(flags.UnknownFlag, match="add it to pqlab.core.flags.FLAGS"):
        flags.make("frobnicated")
    with pytest.raises(flags.UnknownFlag):
        flags.has("few-samples", "few-sample")


def test_readers_match_codes_exactly_not_substrings():
    cell = flags.join([flags.make("no-cycles", "few-samples were taken"), flags.make("jvm-cold")])
    assert flags.has(cell, "no-cycles") and flags.has(cell, "jvm-cold")
    assert not flags.has(cell, "few-samples")  # only inside a detail
    assert flags.detail(cell, "no-cycles") == "few-samples were taken"
    series = pd.Series([cell, "", None, float("nan")])
    assert flags.has(series, "jvm-cold").tolist() == [True, False, False, False]


def test_join_drops_duplicates_and_keeps_order():
    assert flags.join(["few-samples", "unstable-cv;few-samples", ""]) == "few-samples;unstable-cv"
    assert flags.add("few-samples", "failed", "x") == "few-samples;failed:x"


def test_upgrade_of_schema_1_cells():
    old = "unstable-cv;cycles-estimated:[Errno 2] perf_event_open: No such file;coarse:resident-pages;gone:x"
    assert flags.codes(flags.upgrade(old)) == ["unstable-cv", "no-cycles", "coarse-rss"]
