"""Offset reset planning: parsing of times and durations, target offsets (pure)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from lagless.errors import ConfigError
from lagless.kafka.reset import (
    ResetSpec,
    ResetTo,
    build_spec,
    new_offset,
    parse_duration,
    parse_time,
)


def test_parse_duration_reads_iso_8601_days_hours_minutes_seconds() -> None:
    assert parse_duration("PT10M") == timedelta(minutes=10)
    assert parse_duration("P1DT2H30M") == timedelta(days=1, hours=2, minutes=30)
    assert parse_duration("pt1.5s") == timedelta(seconds=1.5)
    for bad in ("10m", "P", "PT", "P1H"):
        with pytest.raises(ConfigError, match="ISO 8601"):
            parse_duration(bad)


def test_parse_time_is_utc_without_a_zone() -> None:
    assert parse_time("1970-01-01T00:00:01") == 1000
    assert parse_time("1970-01-01T01:00:01+01:00") == 1000
    assert parse_time("1970-01-01T00:00:01Z") == 1000
    with pytest.raises(ConfigError, match="ISO 8601"):
        parse_time("yesterday")


def test_exactly_one_target() -> None:
    with pytest.raises(ConfigError, match="exactly one"):
        build_spec(False, False, None, None, None, None)
    with pytest.raises(ConfigError, match="exactly one"):
        build_spec(True, False, 5, None, None, None)
    assert build_spec(False, False, 0, None, None, None) == ResetSpec(ResetTo.OFFSET, 0)
    assert build_spec(False, False, None, None, None, -3) == ResetSpec(ResetTo.SHIFT, -3)
    by = build_spec(False, False, None, None, "PT1M", None, now_ms=100_000)
    assert by == ResetSpec(ResetTo.DURATION, 40_000)


def test_new_offsets_are_clamped_to_the_partition() -> None:
    assert new_offset(ResetSpec(ResetTo.EARLIEST), 7, start=2, end=10) == 2
    assert new_offset(ResetSpec(ResetTo.LATEST), 7, start=2, end=10) == 10
    assert new_offset(ResetSpec(ResetTo.OFFSET, 99), 7, start=2, end=10) == 10
    assert new_offset(ResetSpec(ResetTo.OFFSET, 0), 7, start=2, end=10) == 2
    assert new_offset(ResetSpec(ResetTo.SHIFT, -3), 7, start=2, end=10) == 4
    assert new_offset(ResetSpec(ResetTo.SHIFT, 3), None, start=2, end=10) == 5  # from the start
    assert new_offset(ResetSpec(ResetTo.DATETIME, 0), 7, start=2, end=10, at_time=6) == 6
    with pytest.raises(ValueError):
        new_offset(ResetSpec(ResetTo.DATETIME, 0), 7, start=2, end=10)


def test_topic_selectors_files_and_to_current() -> None:
    from lagless.kafka.reset import ResetRow, offsets_csv, parse_selectors, read_offsets_csv

    assert parse_selectors(["a", "b:0,2", "b:1", "a:3"]) == {"a": (), "b": (0, 1, 2)}
    with pytest.raises(ConfigError, match="TOPIC:P"):
        parse_selectors(["b:x"])
    rows = [ResetRow("a", 0, 3, 5), ResetRow("b,c", 1, None, 0)]
    text = offsets_csv(rows)
    assert text == 'a,0,5\n"b,c",1,0\n'
    assert read_offsets_csv(text, "f.csv") == {("a", 0): 5, ("b,c", 1): 0}
    with pytest.raises(ConfigError, match=r"f\.csv line 2: not TOPIC,PARTITION,OFFSET"):
        read_offsets_csv("a,0,5\na,zero,5\n", "f.csv")
    assert build_spec(False, False, None, None, None, None, current=True) == ResetSpec(
        ResetTo.CURRENT
    )
    assert new_offset(ResetSpec(ResetTo.CURRENT), 7, start=2, end=10) == 7
    assert new_offset(ResetSpec(ResetTo.CURRENT), None, start=2, end=10) == 2
