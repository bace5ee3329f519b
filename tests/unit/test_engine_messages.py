"""A batch handler's lazy sequence of records, and the split of a poll into partition runs."""

from __future__ import annotations

import pickle

from confluent_kafka import Message

from lagless.engine.intake.messages import MessageBatch, partition_runs
from lagless.engine.record import Record


def message(offset: int, partition: int = 0, topic: str = "t", ts: int = 1000) -> Message:
    return Message(
        topic=topic, partition=partition, offset=offset, key=b"k%d" % offset,
        value=b"v", headers=[("h", b"x")], timestamp=(1, ts) if ts >= 0 else (0, -1),
    )  # fmt: skip


def test_a_batch_behaves_as_a_list_of_records() -> None:
    msgs = [message(o) for o in range(5)]
    records = [Record.from_message(m) for m in msgs]
    got = MessageBatch(msgs, ("t", 0))
    assert len(got) == 5
    assert got == records and records == list(got)
    assert got[0] == records[0] and got[-1] == records[-1]
    assert got[1:3] == records[1:3]
    assert [r.offset for r in got] == [0, 1, 2, 3, 4]
    assert got[2].header("h") == b"x"
    assert records[4] in got
    assert repr(got) == repr(records)
    assert got != records[:4]


def test_a_batch_pickles_as_a_plain_list_of_records() -> None:
    got = pickle.loads(pickle.dumps(MessageBatch([message(o) for o in range(3)], ("t", 0))))
    assert type(got) is list
    assert [r.offset for r in got] == [0, 1, 2]
    assert got[0].headers == (("h", b"x"),)


def test_offsets_and_timestamps() -> None:
    got = MessageBatch([message(0, ts=5), message(1, ts=-1), message(2, ts=7)], ("t", 0))
    assert (got.first_offset, got.last_offset, got.offsets()) == (0, 2, [0, 1, 2])
    assert got.stamps_ms().tolist() == [5, -1, 7], "-1: no timestamp"


def test_a_poll_splits_where_the_partition_changes() -> None:
    polled = [message(0, 0), message(1, 0), message(0, 1), message(2, 0), message(0, 1, "u")]
    runs = partition_runs(polled[:4], one_topic=True)
    assert [[(m.partition(), m.offset()) for m in run] for run in runs] == [
        [(0, 0), (0, 1)], [(1, 0)], [(0, 2)],
    ]  # fmt: skip
    runs = partition_runs(polled, one_topic=False)
    assert [(r[0].topic(), r[0].partition(), len(r)) for r in runs] == [
        ("t", 0, 2), ("t", 1, 1), ("t", 0, 1), ("u", 1, 1),
    ]  # fmt: skip
