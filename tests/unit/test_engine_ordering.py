"""Lanes and the dispatcher: what may start now under each ordering mode."""

from __future__ import annotations

from lagless.engine.config import Ordering
from lagless.engine.dispatch.lanes import Dispatcher
from lagless.engine.record import Record


def rec(partition: int, offset: int, key: bytes | None = None, topic: str = "t") -> Record:
    return Record(topic, partition, offset, key, b"", None)


def drain(d: Dispatcher) -> list[Record]:
    """Start one-record tasks while any may start."""
    out = []
    while (task := d.next_task(1)) is not None:
        out.extend(task)
    return out


def test_partition_mode_runs_one_record_per_partition_in_order() -> None:
    d = Dispatcher(Ordering.PARTITION)
    d.open(("t", 0))
    d.open(("t", 1))
    for offset in range(3):
        d.push(rec(0, offset))
        d.push(rec(1, offset))
    first = drain(d)
    assert [(r.partition, r.offset) for r in first] == [(0, 0), (1, 0)]
    d.release([first[1]])  # partition 1 moves on while partition 0's record still runs
    assert [(r.partition, r.offset) for r in drain(d)] == [(1, 1)]
    d.release([first[0]])
    assert [(r.partition, r.offset) for r in drain(d)] == [(0, 1)]


def test_key_mode_runs_keys_side_by_side_and_each_key_in_order() -> None:
    d = Dispatcher(Ordering.KEY)
    d.open(("t", 0))
    for offset, key in enumerate([b"a", b"b", b"a", None, None, b"b"]):
        d.push(rec(0, offset, key))
    started = drain(d)
    assert [r.offset for r in started] == [0, 1, 3, 4]  # a, b and both keyless
    d.release([started[0]])
    assert [r.offset for r in drain(d)] == [2]
    d.release([started[1]])
    assert [r.offset for r in drain(d)] == [5]


def test_unordered_mode_everything_ready() -> None:
    d = Dispatcher(Ordering.UNORDERED)
    d.open(("t", 0))
    for offset in range(5):
        d.push(rec(0, offset, b"same"))
    assert len(drain(d)) == 5


def test_round_robin_over_partitions() -> None:
    d = Dispatcher(Ordering.UNORDERED)
    for p in range(3):
        d.open(("t", p))
    for offset in range(4):
        d.push(rec(0, offset))
    d.push(rec(1, 0))
    d.push(rec(2, 0))
    got = [r.partition for r in drain(d)]
    assert got[:3] == [0, 1, 2], "a busy partition does not starve the others"
    assert sorted(got) == [0, 0, 0, 0, 1, 2]


def test_closed_partition_is_no_longer_dispatched() -> None:
    d = Dispatcher(Ordering.PARTITION)
    d.open(("t", 0))
    d.open(("t", 1))
    d.push(rec(0, 0))
    d.push(rec(0, 1))
    d.push(rec(1, 0))
    assert d.close(("t", 0)) == 2
    assert [(r.partition, r.offset) for r in drain(d)] == [(1, 0)]
    d.release([rec(0, 0)])  # a late completion of a revoked partition is harmless
    assert drain(d) == []


def test_held_ready_and_starving_counts() -> None:
    d = Dispatcher(Ordering.PARTITION)
    d.open(("t", 0))
    d.open(("t", 1))
    assert d.starving == 2
    for offset in range(3):
        d.push(rec(0, offset))
    assert d.starving == 1, "partition 1 holds nothing"
    d.push(rec(1, 0))
    assert (d.held, d.ready, d.starving) == (4, 2, 0), "one ready per partition, rest wait"
    task = d.next_task(1)
    assert task is not None and (d.held, d.ready) == (3, 1)
    first = task[0]
    d.release([first])
    assert (d.held, d.ready) == (3, 2)
    assert d.close(("t", 0)) == 2
    assert (d.held, d.ready, d.starving) == (1, 1, 0)
    drain(d)
    assert (d.held, d.ready, d.starving) == (0, 0, 1)
