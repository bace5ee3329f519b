"""A record still running when its partition was closed keeps its lane busy when the
partition comes back (key ordering after a revoke outlives --revoke-budget). Unit level:
the dispatcher's lanes; the engine wires completions of an earlier assignment to
``release_orphan``."""

from __future__ import annotations

from lagless.engine.config import Ordering
from lagless.engine.dispatch.lanes import Dispatcher
from lagless.engine.record import Record

TP = ("t", 0)


def rec(offset: int, key: bytes | None) -> Record:
    return Record("t", 0, offset, key, b"{}", None)


def next_ready(d: Dispatcher) -> Record | None:
    """Start a one-record task, if any may start."""
    task = d.next_task(1)
    return None if task is None else task[0]


def test_a_key_running_from_an_earlier_assignment_blocks_its_lane_until_it_ends() -> None:
    d = Dispatcher(Ordering.KEY)
    d.open(TP)
    d.push(rec(0, b"a"))
    d.push(rec(1, b"b"))
    first = next_ready(d)
    assert first is not None and first.offset == 0
    d.close(TP)  # revoked while offset 0 runs past the budget
    d.open(TP)  # ... and assigned back: offsets 0 and 1 come again
    d.push(rec(0, b"a"))
    d.push(rec(1, b"b"))
    started = next_ready(d)
    assert started is not None and started.offset == 1, "key b is free"
    assert next_ready(d) is None, "key a waits for the first execution"
    d.release_orphan([first])
    again = next_ready(d)
    assert again is not None and again.offset == 0


def test_partition_ordering_waits_for_the_whole_partition() -> None:
    d = Dispatcher(Ordering.PARTITION)
    d.open(TP)
    d.push(rec(0, None))
    first = next_ready(d)
    assert first is not None
    d.close(TP)
    d.open(TP)
    d.push(rec(0, None))
    assert next_ready(d) is None
    d.release_orphan([first])
    assert next_ready(d) is not None


def test_a_record_ending_while_its_partition_is_closed_frees_the_lane_for_later() -> None:
    d = Dispatcher(Ordering.KEY)
    d.open(TP)
    d.push(rec(0, b"a"))
    first = next_ready(d)
    assert first is not None
    d.close(TP)
    d.release([first])  # ended during the revoke's budget wait
    d.open(TP)
    d.push(rec(0, b"a"))
    assert next_ready(d) is not None, "no stale busy lane"


def test_a_task_from_an_earlier_assignment_holds_all_its_lanes_until_it_ends() -> None:
    d = Dispatcher(Ordering.KEY)
    d.open(TP)
    for offset, key in enumerate([b"a", b"b", b"a", b"c"]):
        d.push(rec(offset, key))
    task = d.next_task(3)
    assert task is not None and [r.offset for r in task] == [0, 1, 2], "a, b and a's next"
    d.close(TP)  # revoked while the task runs past the budget
    d.open(TP)  # ... and assigned back
    for offset, key in enumerate([b"a", b"b", b"a", b"c"]):
        d.push(rec(offset, key))
    started = d.next_task(10)
    assert started is not None and [r.offset for r in started] == [3], "only key c is free"
    assert d.next_task(10) is None, "keys a and b wait for the first execution"
    d.release_orphan(task)
    again = d.next_task(10)
    assert again is not None and [r.offset for r in again] == [0, 1, 2]
