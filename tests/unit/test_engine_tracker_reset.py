"""After an offset reset (OFFSET_OUT_OF_RANGE -> earliest) the tracker follows the
consumer's real position: records below the old commit are new, not stale (unit level:
Tansu has no retention nor DeleteRecords to force the reset)."""

from __future__ import annotations

from lagless.engine.offsets.tracker import Arrival, PartitionTracker


def test_records_below_the_old_commit_after_a_reset_are_processed() -> None:
    tracker = PartitionTracker(committed=500, completed={502, 503})
    assert tracker.receive(0, 1.0) is Arrival.NEW  # the log restarted at 0
    assert tracker.resets == 1
    assert tracker.receive(1, 1.0) is Arrival.NEW
    assert tracker.receive(1, 1.0) is Arrival.STALE  # a real re-delivery stays stale
    tracker.complete(0)
    assert tracker.committable == 1  # the commit follows the new log back
    assert tracker.receive(502, 1.0) is Arrival.NEW, "the old offset map no longer applies"


def test_a_redelivery_while_records_are_held_stays_stale() -> None:
    tracker = PartitionTracker(committed=10)
    assert tracker.receive(10, 1.0) is Arrival.NEW
    assert tracker.receive(11, 1.0) is Arrival.NEW
    assert tracker.receive(9, 1.0) is Arrival.STALE
    assert tracker.resets == 0 and tracker.committable == 10


def test_growing_offsets_never_reset() -> None:
    tracker = PartitionTracker(committed=3)
    for offset in range(3, 10):
        assert tracker.receive(offset, 1.0) is Arrival.NEW
        tracker.complete(offset)
    assert tracker.resets == 0 and tracker.committable == 10
