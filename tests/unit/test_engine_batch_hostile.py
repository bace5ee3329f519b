"""A hostile handler against a batch: indexes out of range, slices with steps, reversed,
keeps records, mutates its list, and names records that are not in its batch (refused: the
call fails). And the trackers' skip past transaction markers."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from confluent_kafka import Message

from lagless.engine.intake.messages import MessageBatch
from lagless.engine.offsets.range_tracker import RangeTracker
from lagless.engine.offsets.tracker import PartitionTracker
from lagless.engine.record import Record
from lagless.engine.workers.batch import run_batch
from lagless.engine.workers.retry import RetryPolicy


def message(offset: int, partition: int = 0) -> Message:
    return Message(
        topic="t", partition=partition, offset=offset, key=b"k%d" % offset, value=b"v%d" % offset,
        headers=[("h", b"%d" % offset)], timestamp=(1, 1000 + offset),
    )  # fmt: skip


def batch(offsets: range, partition: int = 0) -> MessageBatch:
    return MessageBatch([message(o, partition) for o in offsets], ("t", partition))


def test_indexing_out_of_range_raises_index_error_like_a_list() -> None:
    got = batch(range(10, 15))
    assert got[-5].offset == 10 and got[4].offset == 14
    for bad in (5, -6, 100):
        with pytest.raises(IndexError):
            got[bad]


def test_slices_with_steps_reversed_index_and_count_are_a_lists() -> None:
    got = batch(range(10, 15))
    as_list = list(got)
    assert got[::2] == as_list[::2] and got[::-1] == as_list[::-1] and got[7:] == []
    assert list(reversed(got)) == as_list[::-1]
    assert got.index(as_list[3]) == 3 and got.count(as_list[3]) == 1
    assert got == tuple(as_list) and got != "not records" and got != as_list[1:]


def test_a_record_kept_after_the_batch_reads_its_headers_and_value() -> None:
    kept = batch(range(3))[1]
    assert (kept.value, kept.header("h"), kept.timestamp_ms) == (b"v1", b"1", 1001)


class Namer:
    """Names as failed a record that is not one of its batch's."""

    def __init__(self, foreign: Record) -> None:
        self.foreign = foreign
        self.calls = 0

    def __call__(self, records: Sequence[Record]) -> dict[Record, Exception]:
        self.calls += 1
        return {self.foreign: ValueError("not yours")}


@pytest.mark.parametrize(
    "foreign",
    [
        Record("t", 0, 99, None, b"", None),  # an offset not in the batch
        Record("t", 1, 2, b"k2", b"v2", None),  # the right offset, another partition
        Record("t", 0, 2, b"k2", b"changed", None),  # the right offset, another record
    ],
)
def test_naming_a_record_not_in_the_batch_is_refused(foreign: Record) -> None:
    handler = Namer(foreign)
    result = run_batch(handler, batch(range(4)), RetryPolicy(retries=0), lambda s: False)
    assert set(result.failed) == {0, 1, 2, 3}, "no record of the batch counts as done"
    assert {o.error_class for o in result.failed.values()} == {"TypeError"}
    assert "not in its batch" in result.failed[0].error_message


def test_a_handler_that_empties_its_list_changes_nothing_the_engine_holds() -> None:
    """In a worker process the batch is a plain list: a handler that pops from it (then
    raises, or not) must not change the records the rule retries, splits and reports."""
    records = [Record("t", 0, o, None, b"v%d" % o, None) for o in range(6)]
    calls: list[list[int]] = []

    def handler(got: list[Record]) -> None:
        calls.append([r.offset for r in got])
        if any(r.offset == 4 for r in got):
            got.clear()
            raise RuntimeError("poison 4")
        got.pop()

    result = run_batch(handler, records, RetryPolicy(retries=1), lambda s: False)
    assert [r.offset for r in records] == list(range(6)), "the engine's records untouched"
    assert set(result.failed) == {4}, "only the poison failed"
    assert calls[0] == calls[1] == list(range(6)), "the retry had the whole batch again"


def test_a_gap_is_skipped_only_when_nothing_is_held_and_never_backwards() -> None:
    ranges = RangeTracker(committed=0)
    run = [message(o) for o in range(5)]
    assert ranges.receive_run(run, 0.0)
    ranges.skip_gap(6)
    assert ranges.committable == 0, "records held: the position says nothing about them"
    ranges.complete_records(MessageBatch(run, ("t", 0)))
    assert ranges.committable == 5
    ranges.skip_gap(6)  # offset 5 is a transaction marker
    assert ranges.committable == 6
    ranges.skip_gap(3)
    assert ranges.committable == 6, "never backwards"
    per_record = PartitionTracker(committed=None)
    per_record.skip_gap(9)
    assert per_record.committable is None, "nothing known: no guess"
