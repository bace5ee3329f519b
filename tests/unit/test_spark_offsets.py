"""Offset planning of the lagless-kafka source, fed with partition lists (no broker).

Partition discovery is tested here: the embedded broker cannot add partitions to a topic
(CreatePartitions is unsupported), so a partition "added mid-stream" is one that appears in
the latest offsets without being in the start offsets.
"""

from __future__ import annotations

import itertools
import json
import math

import pytest

from lagless.errors import LaglessError
from lagless.kafka.offsets import PartitionRange
from lagless.spark.connector.offsets import (
    DataLossError,
    canonical,
    cap_ranges,
    data_loss_handler,
    from_json,
    next_end,
    plan_ranges,
    rate_limit,
    resolve_start,
    split_ranges,
    to_json,
)

FAIL = data_loss_handler(True)
SKIP = data_loss_handler(False)


def no_new(keys: object) -> dict[tuple[str, int], int]:
    raise AssertionError(f"no partition should be new: {keys}")


def test_json_is_canonical_whatever_the_input_order() -> None:
    a = {("b", 10): 5, ("a", 2): 1, ("b", 2): 7, ("a", 0): 3}
    b = dict(reversed(list(a.items())))
    assert json.dumps(to_json(a)) == json.dumps(to_json(b))
    assert to_json(a) == {"a": {"0": 3, "2": 1}, "b": {"2": 7, "10": 5}}
    assert list(to_json(a)["b"]) == ["2", "10"]  # by partition number, as Spark writes them
    assert from_json(to_json(a)) == a
    stored = json.loads('{"b": {"10": 5, "2": 7}, "a": {"2": 1, "0": 3}}')
    assert json.dumps(canonical(stored)) == json.dumps(to_json(a))


def test_resolve_start_earliest_latest_and_explicit() -> None:
    earliest = {("t", 0): 10, ("t", 1): 0}
    latest = {("t", 0): 50, ("t", 1): 20}
    assert resolve_start("earliest", earliest, latest) == earliest
    assert resolve_start("latest", earliest, latest) == latest
    explicit = {("t", 0): 42, ("t", 1): -1}
    assert resolve_start(explicit, earliest, latest) == {("t", 0): 42, ("t", 1): 20}
    # a partition left out starts at earliest, -2 is earliest
    assert resolve_start({("t", 1): -2}, earliest, latest) == {("t", 0): 10, ("t", 1): 0}
    with pytest.raises(LaglessError, match="do not exist"):
        resolve_start({("t", 7): 0}, earliest, latest)


@pytest.mark.parametrize(
    ("backlogs", "limit"),
    [((100, 100, 100), 100), ((1000, 10, 1), 100), ((7, 0, 3), 4), ((5, 5, 5, 5), 3)],
)
def test_rate_limit_takes_exactly_the_limit_in_proportion(
    backlogs: tuple[int, ...], limit: int
) -> None:
    begin = {("t", p): 100 for p in range(len(backlogs))}
    latest = {("t", p): 100 + b for p, b in enumerate(backlogs)}
    batches = 0
    while begin != latest:
        end = rate_limit(begin, latest, limit)
        taken = {k: end[k] - begin[k] for k in end}
        assert all(0 <= n <= latest[k] - begin[k] for k, n in taken.items())
        assert sum(taken.values()) == min(limit, sum(latest[k] - begin[k] for k in latest))
        begin = end
        batches += 1
    assert batches == math.ceil(sum(backlogs) / limit)


def test_rate_limit_shares_follow_the_backlog() -> None:
    begin = {("t", 0): 0, ("t", 1): 0}
    end = rate_limit(begin, {("t", 0): 900, ("t", 1): 100}, 100)
    assert end == {("t", 0): 90, ("t", 1): 10}


def test_next_end_without_limit_is_latest() -> None:
    start = {("t", 0): 5, ("t", 1): 7}
    latest = {("t", 0): 9, ("t", 1): 7}
    assert next_end(start, latest, no_new, None, FAIL) == latest


def test_a_partition_added_mid_stream_is_read_from_its_earliest_offset() -> None:
    start = {("t", 0): 40, ("t", 1): 40}
    latest = {("t", 0): 40, ("t", 1): 40, ("t", 2): 30}  # partition 2 appeared

    def earliest(keys: object) -> dict[tuple[str, int], int]:
        assert list(keys) == [("t", 2)]  # type: ignore[call-overload]
        return {("t", 2): 0}

    end = next_end(start, latest, earliest, None, FAIL)
    assert end[("t", 2)] == 30
    ranges = plan_ranges(start, end, {("t", 0): 0, ("t", 1): 0, ("t", 2): 0}, FAIL)
    assert ranges == [PartitionRange("t", 2, 0, 30)]
    # with a read limit the new partition gets its share of the backlog from offset 0
    limited = next_end(start, {**latest, ("t", 0): 70}, earliest, 30, FAIL)
    assert limited == {("t", 0): 55, ("t", 1): 40, ("t", 2): 15}


def test_a_partition_that_disappears_is_data_loss() -> None:
    start = {("t", 0): 5, ("t", 1): 7}
    latest = {("t", 0): 9}
    with pytest.raises(DataLossError, match=r"t\[1\] disappeared"):
        next_end(start, latest, no_new, None, FAIL)
    assert next_end(start, latest, no_new, None, SKIP) == latest


def test_an_end_below_the_start_is_data_loss() -> None:
    start = {("t", 0): 50}
    with pytest.raises(DataLossError, match="recreated"):
        next_end(start, {("t", 0): 10}, no_new, None, FAIL)
    assert next_end(start, {("t", 0): 10}, no_new, 5, SKIP) == {("t", 0): 10}


def test_plan_ranges_skips_empty_and_handles_deleted_records() -> None:
    start = {("t", 0): 5, ("t", 1): 7, ("t", 2): 3}
    end = {("t", 0): 9, ("t", 1): 7, ("t", 2): 12}
    earliest = {("t", 0): 0, ("t", 1): 0, ("t", 2): 6}
    with pytest.raises(DataLossError, match=r"\[3, 6\) were deleted"):
        plan_ranges(start, end, earliest, FAIL)
    assert plan_ranges(start, end, earliest, SKIP) == [
        PartitionRange("t", 0, 5, 9),
        PartitionRange("t", 2, 6, 12),
    ]


def test_split_ranges_for_min_partitions() -> None:
    ranges = [PartitionRange("t", 0, 0, 100), PartitionRange("t", 1, 50, 60)]
    assert split_ranges(ranges, None) == ranges
    assert split_ranges(ranges, 2) == ranges
    pieces = split_ranges(ranges, 6)
    assert len(pieces) >= 6
    for rng in ranges:
        mine = [p for p in pieces if p.partition == rng.partition]
        assert mine[0].start == rng.start and mine[-1].end == rng.end
        assert all(a.end == b.start for a, b in itertools.pairwise(mine))
        sizes = [p.records for p in mine]
        assert max(sizes) - min(sizes) <= 1
    assert sum(p.records for p in pieces) == 110


def test_cap_ranges_max_records_per_partition() -> None:
    ranges = [PartitionRange("t", 0, 10, 35), PartitionRange("t", 1, 0, 5)]
    capped = cap_ranges(ranges, 10)
    assert [(r.partition, r.start, r.end) for r in capped] == [
        (0, 10, 18),
        (0, 18, 26),
        (0, 26, 35),
        (1, 0, 5),
    ]
    assert cap_ranges(ranges, None) == ranges
