"""Lag arithmetic: where a group resumes, the age of the next record, totals."""

from __future__ import annotations

from lagless.observe.lag import PartitionLag, lag_seconds, position, totals


def test_position_is_the_commit_clamped_to_the_partition() -> None:
    assert position(10, start=0, end=50) == 10
    assert position(None, start=5, end=50) == 5  # no commit: from the start offset
    assert position(2, start=5, end=50) == 5  # committed records since deleted
    assert position(80, start=0, end=50) == 50  # a commit past the end is no lag


def test_lag_seconds_is_the_age_of_the_next_record() -> None:
    assert lag_seconds(10_000, 7_500) == 2.5
    assert lag_seconds(10_000, 12_000) == 0.0  # a record from the future: no negative lag
    assert lag_seconds(10_000, None) is None


def test_totals_sum_records_and_take_the_oldest() -> None:
    rows = [
        PartitionLag("t", 0, 5, 0, 10, 5, 1.5),
        PartitionLag("t", 1, None, 0, 7, 7, None),
        PartitionLag("t", 2, 3, 0, 3, 0, 0.0),
    ]
    assert totals(rows) == {"total_lag": 12, "max_lag_seconds": 1.5, "partition_count": 3}
    assert rows[1].position == 0
