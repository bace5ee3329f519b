"""A record still running when its partition was closed keeps its lane busy when the
partition comes back (key ordering after a revoke outlives --revoke-budget). Unit level:
the dispatcher's lanes; the engine wires completions of an earlier assignment to
``release_orphan``."""

from __future__ import annotations

from lagless.engine.config import Ordering
from lagless.engine.ordering import Dispatcher
from lagless.engine.record import Record

TP = ("t", 0)


def rec(offset: int, key: bytes | None) -> Record:
    return Record("t", 0, offset, key, b"{}", None)


def test_a_key_running_from_an_earlier_assignment_blocks_its_lane_until_it_ends() -> None:
    d = Dispatcher(Ordering.KEY)
    d.open(TP)
    d.push(rec(0, b"a"))
    d.push(rec(1, b"b"))
    first = d.next_ready()
    assert first is not None and first.offset == 0
    d.close(TP)  # revoked while offset 0 runs past the budget
    d.open(TP)  # ... and assigned back: offsets 0 and 1 come again
    d.push(rec(0, b"a"))
    d.push(rec(1, b"b"))
    started = d.next_ready()
    assert started is not None and started.offset == 1, "key b is free"
    assert d.next_ready() is None, "key a waits for the first execution"
    d.release_orphan(first)
    again = d.next_ready()
    assert again is not None and again.offset == 0


def test_partition_ordering_waits_for_the_whole_partition() -> None:
    d = Dispatcher(Ordering.PARTITION)
    d.open(TP)
    d.push(rec(0, None))
    first = d.next_ready()
    assert first is not None
    d.close(TP)
    d.open(TP)
    d.push(rec(0, None))
    assert d.next_ready() is None
    d.release_orphan(first)
    assert d.next_ready() is not None


def test_a_record_ending_while_its_partition_is_closed_frees_the_lane_for_later() -> None:
    d = Dispatcher(Ordering.KEY)
    d.open(TP)
    d.push(rec(0, b"a"))
    first = d.next_ready()
    assert first is not None
    d.close(TP)
    d.release(first)  # ended during the revoke's budget wait
    d.open(TP)
    d.push(rec(0, b"a"))
    assert d.next_ready() is not None, "no stale busy lane"
