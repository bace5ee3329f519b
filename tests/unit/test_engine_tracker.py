"""Per-partition completion tracking: committable offset, offset map, skipping on restart."""

from __future__ import annotations

import random

from lagless.engine.offsets.offset_map import decode
from lagless.engine.offsets.tracker import Arrival, PartitionTracker
from lagless.engine.partitions.state import PartitionMetrics, PartitionState
from lagless.observe.metrics import Metrics


def test_committable_is_first_unfinished() -> None:
    t = PartitionTracker(committed=10)
    for offset in range(10, 15):
        assert t.receive(offset, 0.0) is Arrival.NEW
    assert t.committable == 10
    t.complete(11)
    t.complete(13)
    assert t.committable == 10
    assert t.completed_above() == [11, 13]
    t.complete(10)
    assert t.committable == 12
    t.complete(12)
    t.complete(14)
    assert t.committable == 15
    assert t.pending == 0
    assert t.completed_above() == []


def test_no_commit_yet_starts_at_first_received() -> None:
    t = PartitionTracker()
    assert t.committable is None
    t.receive(42, 0.0)
    assert t.committable == 42
    t.complete(42)
    assert t.committable == 43


def test_offset_gaps_in_the_log_do_not_block() -> None:
    t = PartitionTracker(committed=0)
    for offset in (0, 1, 5, 9):  # e.g. transaction markers or compaction left holes
        t.receive(offset, 0.0)
    for offset in (9, 5, 1, 0):
        t.complete(offset)
    assert t.committable == 10


def test_redelivery_is_stale() -> None:
    t = PartitionTracker(committed=0)
    t.receive(0, 0.0)
    t.receive(1, 0.0)
    assert t.receive(1, 0.0) is Arrival.STALE
    assert t.receive(0, 0.0) is Arrival.STALE
    assert t.pending == 2


def test_oldest_unfinished_reports_offset_and_receipt_time() -> None:
    t = PartitionTracker(committed=0)
    t.receive(0, 1.0)
    t.receive(1, 2.0)
    assert t.oldest_unfinished() == (0, 1.0)
    t.complete(0)
    assert t.oldest_unfinished() == (1, 2.0)
    t.complete(1)
    assert t.oldest_unfinished() is None


def test_restart_skips_records_completed_per_the_offset_map() -> None:
    """What a broker that keeps commit metadata gives a restarted consumer (unit level:
    the embedded broker drops metadata, so this path is tested below the broker)."""
    rng = random.Random(3)
    first = PartitionTracker(committed=100)
    for offset in range(100, 200):
        first.receive(offset, 0.0)
    finished = set(rng.sample(range(101, 200), 60)) | {100, 101}
    finished.discard(102)  # 102 stays unfinished: the commit stops there
    for offset in finished:
        first.complete(offset)
    base = first.committable
    assert base == 102
    metadata = first.offset_map()
    decoded = decode(metadata)
    assert decoded is not None and decoded[0] == base

    second = PartitionTracker(committed=base, completed=decoded[1])
    ran: list[int] = []
    for offset in range(base, 200):
        arrival = second.receive(offset, 0.0)
        if arrival is Arrival.NEW:
            ran.append(offset)
            second.complete(offset)
        else:
            assert arrival is Arrival.DONE_BEFORE
    assert ran == sorted(set(range(base, 200)) - finished)
    assert second.committable == 200


def test_earlier_completions_survive_a_commit_before_they_arrive() -> None:
    t = PartitionTracker(committed=5, completed={7, 8})
    t.receive(5, 0.0)
    assert decode(t.offset_map()) == (5, frozenset({7, 8}))
    t.complete(5)
    assert t.committable == 6
    assert decode(t.offset_map()) == (6, frozenset({7, 8}))


def test_first_uncommitted_timestamp_follows_the_committable_offset() -> None:
    t = PartitionTracker(committed=10)
    assert t.first_uncommitted_timestamp_ms() is None  # nothing fetched
    t.receive(10, 0.0, 1_000)
    t.receive(11, 0.0, 2_000)
    assert t.first_uncommitted_timestamp_ms() == 1_000
    t.complete(11)  # done above the first unfinished: the head stays
    assert t.first_uncommitted_timestamp_ms() == 1_000
    t.complete(10)
    assert t.committable == 12
    assert t.first_uncommitted_timestamp_ms() is None  # caught up with what was fetched


def test_a_partition_owes_its_first_commit_once_a_record_finished_or_when_carried() -> None:
    """A fresh partition owes no commit before a record of it finished; one started at an
    offset carried from a commit the group refused owes it at once (see engine.carry)."""

    def state(carried: bool) -> PartitionState:
        metrics = PartitionMetrics(Metrics(), "t", 0)
        return PartitionState(("t", 0), 1, PartitionTracker(40), metrics, carried=carried)

    fresh, carried = state(False), state(True)
    assert not fresh.commit_owed
    assert carried.commit_owed
    fresh.finished = 1
    assert fresh.commit_owed
    carried.last_commit = (40, "")  # the carried offset sent
    assert not carried.commit_owed
