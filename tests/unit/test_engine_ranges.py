"""Completion tracking in ranges (batch handlers): committable offset, gaps, order, restarts."""

from __future__ import annotations

from confluent_kafka import Message

from lagless.engine.intake.messages import MessageBatch
from lagless.engine.offsets.offset_map import decode
from lagless.engine.offsets.range_tracker import RangeTracker
from lagless.engine.offsets.tracker import Arrival
from lagless.engine.record import Record

TP = ("t", 0)


def messages(*offsets: int) -> list[Message]:
    return [
        Message(topic="t", partition=0, offset=o, value=b"v", timestamp=(1, 1000 + o))
        for o in offsets
    ]


def batch(msgs: list[Message]) -> MessageBatch:
    return MessageBatch(msgs, TP)


def test_a_run_is_one_range_and_a_batch_completes_it() -> None:
    t = RangeTracker(committed=0)
    run = messages(*range(10))
    assert t.receive_run(run, 5.0)
    assert (t.committable, t.pending) == (0, 10)
    assert t.oldest_unfinished() == (0, 5.0)
    assert t.first_uncommitted_timestamp_ms() == 1000
    t.complete_records(batch(run[:4]))
    assert (t.committable, t.pending) == (4, 6)
    assert t.first_uncommitted_timestamp_ms() == 1004
    t.complete_records(batch(run[4:]))
    assert (t.committable, t.pending) == (10, 0)
    assert t.oldest_unfinished() is None


def test_batches_finishing_out_of_order_commit_only_below_the_first_unfinished() -> None:
    t = RangeTracker(committed=0)
    run = messages(*range(12))
    t.receive_run(run, 0.0)
    t.complete_records(batch(run[8:]))
    t.complete_records(batch(run[4:8]))
    assert t.committable == 0
    assert t.completed_above() == list(range(4, 12))
    decoded = decode(t.offset_map())
    assert decoded is not None and decoded[0] == 0 and decoded[1] == frozenset(range(4, 12))
    t.complete_records(batch(run[:4]))
    assert (t.committable, t.pending, t.completed_above()) == (12, 0, [])


def test_offset_gaps_commit_past_the_last_offset_of_a_finished_range() -> None:
    t = RangeTracker(committed=0)
    run = messages(0, 1, 5, 9)  # compaction or transaction markers left holes
    t.receive_run(run, 0.0)
    t.complete_records(batch(run[:2]))
    assert t.committable == 5, "the next offset that exists"
    assert t.first_uncommitted_timestamp_ms() == 1005
    t.complete_records(batch(run[2:]))
    assert t.committable == 10


def test_a_batch_spanning_runs_completes_both() -> None:
    t = RangeTracker(committed=0)
    first, second = messages(0, 1, 2), messages(3, 4, 5)
    t.receive_run(first, 0.0)
    t.receive_run(second, 1.0)
    t.complete_records(batch(first[1:] + second[:2]))
    assert t.committable == 0
    t.complete_records(batch(first[:1]))
    assert (t.committable, t.oldest_unfinished()) == (5, (5, 1.0))


def test_records_of_a_batch_named_one_by_one() -> None:
    t = RangeTracker(committed=0)
    run = messages(*range(6))
    t.receive_run(run, 0.0)
    ok = [Record.from_message(m) for m in run if m.offset() != 2]
    t.complete_records(ok)  # the rest of a batch whose record 2 failed
    assert (t.committable, t.completed_above()) == (2, [3, 4, 5])
    t.complete_span(2, 2)  # its dead letter acknowledged
    assert (t.committable, t.pending) == (6, 0)


def test_offsets_an_earlier_run_completed_are_skipped() -> None:
    t = RangeTracker(committed=5, completed=[7, 8])
    run = messages(5, 6, 7, 8, 9)
    assert not t.receive_run(run, 0.0), "some may be done: one by one"
    fresh, skipped = t.receive_each(run, 0.0)
    assert [m.offset() for m in fresh] == [5, 6, 9]
    assert skipped == 2
    assert t.completed_above() == [7, 8]
    t.complete_records(batch(fresh))
    assert (t.committable, t.pending) == (10, 0)


def test_an_earlier_offset_that_never_comes_does_not_hold_later_runs_back() -> None:
    t = RangeTracker(committed=0, completed=[3, 50])
    assert not t.receive_run(messages(0, 1, 2, 3), 0.0)
    t.receive_each(messages(0, 1, 2, 3), 0.0)
    assert t.receive_run(messages(10, 11), 0.0), "50 is above it: one range"
    assert t.receive_run(messages(60, 61), 0.0), "50 never came (compacted): forgotten"
    assert t.completed_above() == [3], "until its batch finishes; 50 is not in the map"


def test_re_deliveries_are_stale_and_an_offset_reset_is_followed() -> None:
    t = RangeTracker(committed=0)
    t.receive_run(messages(*range(10)), 0.0)
    again = messages(*range(5, 15))
    assert not t.receive_run(again, 0.0)
    fresh, skipped = t.receive_each(again, 0.0)
    assert ([m.offset() for m in fresh], skipped) == (list(range(10, 15)), 0)
    t.complete_span(0, 14)
    assert (t.committable, t.pending) == (15, 0)
    assert t.receive(messages(3)[0], 0.0) is Arrival.NEW, "wholly below with nothing held"
    assert (t.resets, t.committable) == (1, 3)
