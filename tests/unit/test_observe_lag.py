"""Lag arithmetic: where a group resumes, the age of the next record, totals."""

from __future__ import annotations

from lagless.observe.lag import PartitionLag, position, totals
from lagless.observe.lagtime import lag_seconds


def test_position_is_the_commit_clamped_to_the_partition() -> None:
    assert position(10, start=0, end=50) == 10
    assert position(None, start=5, end=50) == 5  # no commit: from the start offset
    assert position(2, start=5, end=50) == 5  # committed records since deleted
    assert position(80, start=0, end=50) == 50  # a commit past the end is no lag


def test_lag_seconds_is_the_age_of_the_first_uncommitted_record() -> None:
    assert lag_seconds(10_000, 7_500, lag_records=3) == 2.5
    assert lag_seconds(10_000, 12_000, lag_records=1) == 0.0  # from the future: never negative
    assert lag_seconds(10_000, None, lag_records=5) is None  # lagging, timestamp unknown


def test_lag_seconds_is_zero_when_caught_up_whatever_the_timestamp() -> None:
    assert lag_seconds(10_000, 1_000, lag_records=0) == 0.0
    assert lag_seconds(10_000, None, lag_records=0) == 0.0


def test_totals_sum_records_and_take_the_oldest() -> None:
    rows = [
        PartitionLag("t", 0, 5, 0, 10, 5, 1.5),
        PartitionLag("t", 1, None, 0, 7, 7, None),
        PartitionLag("t", 2, 3, 0, 3, 0, 0.0),
    ]
    assert totals(rows) == {"total_lag": 12, "max_lag_seconds": 1.5, "partition_count": 3}
    assert rows[1].position == 0
    # no lagging partition's seconds known (its head record not fetched): unknown, not 0
    assert totals(rows[1:])["max_lag_seconds"] is None
    assert totals(rows[2:])["max_lag_seconds"] == 0.0  # caught up
