"""Dispatching batches of message runs: sizes, one batch a partition, orphans, linger."""

from __future__ import annotations

from confluent_kafka import Message

from lagless.engine.config import Ordering
from lagless.engine.dispatch.runs import RunDispatcher
from lagless.engine.intake.messages import MessageBatch

A, B = ("t", 0), ("t", 1)


def run(tp: tuple[str, int], *offsets: int) -> list[Message]:
    return [Message(topic=tp[0], partition=tp[1], offset=o) for o in offsets]


def offsets(task: MessageBatch | None) -> list[int]:
    assert task is not None
    return task.offsets()


def test_a_batch_takes_whole_runs_then_a_slice_in_offset_order() -> None:
    d = RunDispatcher(Ordering.UNORDERED)
    d.open(A)
    first = run(A, 0, 1, 2)
    d.push_run(A, first, 0.0)
    d.push_run(A, run(A, 3, 4, 5, 6), 0.0)
    assert (d.held, d.ready, d.starving) == (7, 7, 0)
    task = d.next_task(5)
    assert task is not None and task.tp == A
    assert offsets(task) == [0, 1, 2, 3, 4]
    assert offsets(d.next_task(5)) == [5, 6], "unordered: the next batch runs beside it"
    assert d.next_task(5) is None
    assert (d.held, d.ready, d.starving) == (0, 0, 1)
    d.push_run(A, first[:0], 0.0)  # an empty run holds nothing
    assert d.held == 0


def test_a_whole_run_is_handed_out_without_a_copy() -> None:
    d = RunDispatcher(Ordering.UNORDERED)
    d.open(A)
    whole = run(A, 0, 1)
    d.push_run(A, whole, 0.0)
    task = d.next_task(10)
    assert task is not None and task.messages is whole


def test_partition_and_key_batches_run_one_at_a_time_per_partition() -> None:
    for ordering in (Ordering.PARTITION, Ordering.KEY):
        d = RunDispatcher(ordering)
        d.open(A)
        d.open(B)
        d.push_run(A, run(A, 0, 1, 2, 3), 0.0)
        d.push_run(B, run(B, 0), 0.0)
        first = d.next_task(2)
        assert first is not None and offsets(first) == [0, 1]
        other = d.next_task(2)
        assert other is not None and other.tp == B, "partitions take turns"
        assert d.next_task(2) is None, f"{ordering}: A waits for its batch"
        assert d.ready == 0 and d.held == 2
        d.release(first)
        assert d.ready == 2
        assert offsets(d.next_task(2)) == [2, 3]


def test_a_batch_of_a_closed_assignment_keeps_the_reopened_partition_busy() -> None:
    d = RunDispatcher(Ordering.PARTITION)
    d.open(A)
    d.push_run(A, run(A, 0, 1), 0.0)
    old = d.next_task(2)
    assert old is not None
    assert d.close(A) == 0
    d.open(A)
    d.push_run(A, run(A, 2, 3), 0.0)
    assert d.next_task(2) is None, "the old batch of A still runs"
    d.release_orphan(old)
    assert offsets(d.next_task(2)) == [2, 3]


def test_a_lingering_partition_waits_to_fill_its_batch() -> None:
    d = RunDispatcher(Ordering.UNORDERED, linger_s=0.05)
    d.open(A)
    d.push_run(A, run(A, 0, 1), 10.0)
    assert d.next_task(5, now=10.01) is None
    assert d.lingering_until == 10.05
    d.push_run(A, run(A, 2, 3, 4), 10.02)
    assert offsets(d.next_task(5, now=10.02)) == [0, 1, 2, 3, 4], "full: goes at once"
    d.push_run(A, run(A, 5), 10.03)
    assert d.next_task(5, now=10.04) is None
    assert offsets(d.next_task(5, now=10.09)) == [5]


def test_chained_a_full_next_batch_goes_while_one_runs_never_two_behind() -> None:
    for ordering in (Ordering.PARTITION, Ordering.KEY):
        d = RunDispatcher(ordering)
        d.chain(2)
        d.open(A)
        d.push_run(A, run(A, 0, 1, 2), 0.0)
        first = d.next_task(2)
        assert first is not None and offsets(first) == [0, 1]
        assert d.next_task(2) is None, "one record held: no full batch to chain"
        assert (d.held, d.ready) == (1, 0)
        d.push_run(A, run(A, 3, 4, 5), 0.0)
        assert d.ready == 4, "a full batch behind the running one: ready"
        assert offsets(d.next_task(2)) == [2, 3], "chained behind the first"
        assert d.next_task(2) is None, f"{ordering}: never a third batch of A in flight"
        assert (d.held, d.ready) == (2, 0)
        d.release(first)
        assert d.ready == 2, "one runs, a full batch held: it may be chained"
        assert offsets(d.next_task(2)) == [4, 5]


def test_chained_a_partial_batch_waits_for_the_running_one() -> None:
    d = RunDispatcher(Ordering.KEY)
    d.chain(3)
    d.open(A)
    d.push_run(A, run(A, 0, 1, 2, 3), 0.0)
    first = d.next_task(3)
    assert first is not None
    assert d.next_task(3) is None and d.ready == 0
    d.release(first)
    assert d.ready == 1
    assert offsets(d.next_task(3)) == [3], "nothing runs: the rest goes as it is"


def test_chaining_changes_nothing_unordered() -> None:
    d = RunDispatcher(Ordering.UNORDERED)
    d.chain(2)
    assert d.chain_size == 0
    d.open(A)
    d.push_run(A, run(A, 0, 1, 2), 0.0)
    assert offsets(d.next_task(2)) == [0, 1]
    assert offsets(d.next_task(2)) == [2]


def test_chained_closing_counts_a_full_held_batch_as_ready() -> None:
    d = RunDispatcher(Ordering.PARTITION)
    d.chain(2)
    d.open(A)
    d.push_run(A, run(A, 0, 1, 2, 3), 0.0)
    assert d.next_task(2) is not None
    assert d.ready == 2
    assert d.close(A) == 2
    assert (d.held, d.ready) == (0, 0)
