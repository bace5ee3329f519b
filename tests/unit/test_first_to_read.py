"""Where a consumer's first poll of a partition starts, for its position lag before any record
arrived (lagless.engine.watch.gauges.first_to_read)."""

from __future__ import annotations

from lagless.engine.watch.gauges import first_to_read


def test_committed_offset_inside_the_log_is_where_it_starts() -> None:
    assert first_to_read(7, (0, 10), "earliest") == 7
    assert first_to_read(10, (0, 10), "latest") == 10  # read to the end by an earlier run
    assert first_to_read(3, (3, 10), "latest") == 3


def test_without_a_commit_the_reset_policy_decides() -> None:
    assert first_to_read(None, (2, 10), "earliest") == 2
    assert first_to_read(None, (2, 10), "latest") == 10
    assert first_to_read(None, (0, 0), "earliest") == 0  # an empty partition: at its end


def test_a_commit_outside_the_log_is_reset() -> None:
    assert first_to_read(1, (5, 10), "earliest") == 5
    assert first_to_read(12, (5, 10), "latest") == 10


def test_unknown_watermarks_give_no_position() -> None:
    assert first_to_read(7, None, "earliest") == -1
    assert first_to_read(7, (-1001, -1001), "earliest") == -1
