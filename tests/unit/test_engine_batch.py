"""The batch rule (retry the failing records, split a batch that raised, partial results),
per-record tasks, and the dispatcher's tasks and linger."""

from __future__ import annotations

from collections.abc import Sequence

from lagless.engine.config import Ordering
from lagless.engine.dispatch.lanes import Dispatcher
from lagless.engine.handlers import DecodeError
from lagless.engine.offsets.tracker import PartitionTracker
from lagless.engine.record import Record
from lagless.engine.workers.batch import run_batch
from lagless.engine.workers.retry import RetryPolicy, run_each

POLICY = RetryPolicy(retries=2, backoff_s=0.001)


def rec(offset: int, key: bytes | None = None, partition: int = 0) -> Record:
    return Record("t", partition, offset, key, b"", None)


def never(_seconds: float) -> bool:
    return False


class Recorder:
    """A batch handler failing for the offsets in ``poison`` (raising, or naming them)."""

    def __init__(self, poison: set[int], name: bool = False) -> None:
        self.poison = poison
        self.name = name
        self.calls: list[list[int]] = []

    def __call__(self, records: Sequence[Record]) -> dict[Record, Exception] | None:
        self.calls.append([r.offset for r in records])
        bad = [r for r in records if r.offset in self.poison]
        if bad and not self.name:
            raise RuntimeError("boom")
        return {r: ValueError(f"bad {r.offset}") for r in bad} or None


def test_a_good_batch_is_one_call() -> None:
    handler = Recorder(set())
    result = run_batch(handler, [rec(i) for i in range(5)], POLICY, never)
    assert handler.calls == [[0, 1, 2, 3, 4]]
    assert result.failed == {} and len(result.seconds) == 1


def test_a_batch_that_raises_is_retried_then_split_down_to_the_failing_record() -> None:
    handler = Recorder({5})
    waits: list[float] = []
    result = run_batch(handler, [rec(i) for i in range(8)], POLICY, waits.append)
    assert handler.calls[:3] == [list(range(8))] * 3, "1 attempt + 2 retries, whole batch"
    assert waits == [0.001, 0.002]
    assert handler.calls[3:] == [[0, 1, 2, 3], [4, 5, 6, 7], [4, 5], [4], [5], [6, 7]]
    assert set(result.failed) == {5}
    outcome = result.failed[5]
    assert (outcome.error_class, outcome.error_message) == ("RuntimeError", "boom")
    assert outcome.attempts == 6, "the calls that included it"


def test_named_failures_are_retried_alone_then_final_with_their_own_error() -> None:
    handler = Recorder({2, 3}, name=True)
    result = run_batch(handler, [rec(i) for i in range(6)], POLICY, never)
    assert handler.calls == [list(range(6)), [2, 3], [2, 3]]
    assert set(result.failed) == {2, 3}
    assert result.failed[3].error_message == "bad 3" and result.failed[3].attempts == 3


def test_a_decode_error_is_not_retried_but_still_split() -> None:
    def handler(records: Sequence[Record]) -> None:
        if any(r.offset == 1 for r in records):
            raise DecodeError("not json")

    result = run_batch(handler, [rec(0), rec(1), rec(2)], POLICY, never)
    assert set(result.failed) == {1}
    assert result.failed[1].permanent and result.failed[1].attempts == 3


def test_a_wrong_return_value_fails_the_call() -> None:
    result = run_batch(lambda records: 42, [rec(0)], RetryPolicy(retries=0), never)
    assert result.failed[0].error_class == "TypeError"
    assert "return None" in result.failed[0].error_message


def test_stopping_during_the_backoff_gives_the_batch_up() -> None:
    result = run_batch(Recorder({0}), [rec(0), rec(1)], POLICY, lambda s: True)
    assert {i: o.aborted for i, o in result.failed.items()} == {0: True, 1: True}


def test_run_each_retries_only_the_failing_record() -> None:
    seen: list[int] = []

    def handler(record: Record) -> None:
        seen.append(record.offset)
        if record.offset == 1:
            raise RuntimeError("no")

    result = run_each(handler, [rec(0), rec(1), rec(2)], POLICY, never)
    assert seen == [0, 1, 1, 1, 2]
    assert set(result.failed) == {1} and result.failed[1].attempts == 3
    assert len(result.seconds) == 3


def test_partition_tasks_are_consecutive_records_one_task_in_flight() -> None:
    d = Dispatcher(Ordering.PARTITION)
    d.open(("t", 0))
    d.push_many([rec(i) for i in range(10)], 0.0)
    task = d.next_task(4)
    assert task is not None and [r.offset for r in task] == [0, 1, 2, 3]
    assert d.next_task(4) is None, "the partition's lane is busy until the task finished"
    d.release(task)
    again = d.next_task(4)
    assert again is not None and [r.offset for r in again] == [4, 5, 6, 7]


def test_key_tasks_take_each_keys_records_in_order_and_never_share_a_key() -> None:
    d = Dispatcher(Ordering.KEY)
    d.open(("t", 0))
    keys = [b"a", b"b", b"a", None, b"c", b"a", b"b"]
    d.push_many([rec(i, k) for i, k in enumerate(keys)], 0.0)
    first = d.next_task(3)
    assert first is not None and [r.offset for r in first] == [0, 2, 5], "a's records"
    second = d.next_task(10)
    assert second is not None and [r.offset for r in second] == [1, 3, 4, 6]
    assert d.next_task(10) is None
    d.push_many([rec(7, b"a")], 0.0)
    assert d.next_task(10) is None, "key a is in flight"
    d.release(first)
    third = d.next_task(10)
    assert third is not None and [r.offset for r in third] == [7]


def test_linger_waits_for_a_full_batch_or_the_deadline() -> None:
    d = Dispatcher(Ordering.UNORDERED, linger_s=0.05)
    d.open(("t", 0))
    d.push_many([rec(i) for i in range(3)], 10.0)
    assert d.next_task(5, now=10.01) is None
    assert d.lingering_until == 10.05
    d.push_many([rec(i) for i in range(3, 6)], 10.02)
    full = d.next_task(5, now=10.02)
    assert full is not None and len(full) == 5, "full: goes at once"
    assert d.next_task(5, now=10.03) is None, "one left, still within the linger"
    late = d.next_task(5, now=10.06)
    assert late is not None and [r.offset for r in late] == [5], "never waits past linger"


def test_tracker_bulk_receive_and_complete() -> None:
    t = PartitionTracker(committed=10)
    assert t.receive_many([10, 11, 12, 13], 0.0) == (None, 0)
    t.complete_many([12, 13])
    assert t.committable == 10 and t.completed_above() == [12, 13]
    t.complete_many([10, 11])
    assert t.committable == 14 and t.pending == 0
    fresh, skipped = t.receive_many([13, 14, 15], 0.0)
    assert fresh == [False, True, True] and skipped == 0, "13 was received before"
    restarted = PartitionTracker(committed=20, completed=[21])
    assert restarted.receive_many([20, 21, 22], 0.0) == ([True, False, True], 1)
