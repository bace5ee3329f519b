"""Where the task engine (issue 10) meets main's engine (issue 9, 12): every exception kind and
unsupported results in tasks and batches, async tasks and async batch handlers, the tracker's
bulk path keeping record timestamps and following an offset reset, lazy null headers."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from lagless.engine.offsets.tracker import PartitionTracker
from lagless.engine.record import LazyHeaders, Record
from lagless.engine.workers.aio import run_each_async
from lagless.engine.workers.batch import run_batch, run_batch_async
from lagless.engine.workers.retry import RetryPolicy, run_each

POLICY = RetryPolicy(retries=1, backoff_s=0.001)


def rec(offset: int) -> Record:
    return Record("t", 0, offset, None, b"", None)


def never(_seconds: float) -> bool:
    return False


@pytest.mark.parametrize("kind", [SystemExit, KeyboardInterrupt, GeneratorExit])
def test_any_exception_kind_fails_only_its_record_in_a_task(kind: type[BaseException]) -> None:
    def handler(record: Record) -> None:
        if record.offset == 1:
            raise kind("no")

    result = run_each(handler, [rec(0), rec(1), rec(2)], POLICY, never)
    assert set(result.failed) == {1} and result.failed[1].attempts == 2
    assert result.failed[1].error_class == kind.__name__


def test_a_sync_handler_returning_a_coroutine_fails_its_record_in_a_task() -> None:
    async def work() -> None:
        return None

    def handler(record: Record) -> object:
        return work() if record.offset == 0 else None

    result = run_each(handler, [rec(0), rec(1)], POLICY, never)
    assert set(result.failed) == {0}
    assert result.failed[0].error_class == "UnsupportedResultError"


def test_started_names_the_running_record_and_the_successes_before_it() -> None:
    seen: list[tuple[int, int]] = []

    def handler(record: Record) -> None:
        if record.offset == 1:
            raise ValueError("bad")

    run_each(handler, [rec(0), rec(1), rec(2)], POLICY, never, lambda i, ok: seen.append((i, ok)))
    assert seen == [(0, 0), (1, 1), (2, 1), (3, 1)], "after a failure only the earlier ones"


def test_a_batch_handler_raising_system_exit_is_split_like_any_failure() -> None:
    def handler(records: Sequence[Record]) -> None:
        if any(r.offset == 2 for r in records):
            raise SystemExit(3)

    result = run_batch(handler, [rec(i) for i in range(4)], POLICY, never)
    assert set(result.failed) == {2} and result.failed[2].error_class == "SystemExit"


def test_a_batch_handler_returning_a_coroutine_fails_the_call() -> None:
    async def work() -> None:
        return None

    def handler(records: Sequence[Record]) -> object:
        return work()

    result = run_batch(handler, [rec(0)], POLICY, never)
    assert result.failed[0].error_class == "UnsupportedResultError"


def test_async_tasks_await_records_in_order_and_async_batches_follow_the_rule() -> None:
    order: list[int] = []

    async def each(record: Record) -> None:
        await asyncio.sleep(0.001 * (3 - record.offset))
        order.append(record.offset)
        if record.offset == 1:
            raise RuntimeError("one")

    calls: list[list[int]] = []

    async def batch(records: Sequence[Record]) -> dict[Record, Exception] | None:
        calls.append([r.offset for r in records])
        await asyncio.sleep(0)
        return {r: ValueError("bad") for r in records if r.offset == 2} or None

    async def main() -> None:
        stopping = asyncio.Event()
        result = await run_each_async(each, [rec(0), rec(1), rec(2)], POLICY, stopping)
        assert order == [0, 1, 1, 2], "one after another, the failing one retried in place"
        assert set(result.failed) == {1}
        batched = await run_batch_async(batch, [rec(i) for i in range(4)], POLICY, stopping)
        assert calls == [[0, 1, 2, 3], [2]], "only the named record is tried again"
        assert set(batched.failed) == {2}

    asyncio.run(main())


def test_bulk_receive_keeps_timestamps_for_the_lag_seconds_gauge() -> None:
    t = PartitionTracker(committed=10)
    assert t.receive_many([10, 11, 12], 0.0, [1_000, 2_000, 3_000]) == (None, 0)
    assert t.first_uncommitted_timestamp_ms() == 1_000
    t.complete_many([10])
    assert t.first_uncommitted_timestamp_ms() == 2_000
    t.complete_many([12])
    t.complete_many([11])
    assert t.first_uncommitted_timestamp_ms() is None and t.committable == 13


def test_bulk_receive_follows_an_offset_reset() -> None:
    t = PartitionTracker(committed=500, completed={502})
    fresh, skipped = t.receive_many([0, 1, 2], 1.0, [5, 6, 7])
    assert fresh == [True, True, True] and skipped == 0 and t.resets == 1
    assert t.first_uncommitted_timestamp_ms() == 5
    t.complete_many([0, 1, 2])
    assert t.committable == 3


class _Msg:
    def headers(self) -> list[tuple[str, bytes | None]]:
        return [("a", b"1"), ("null", None)]


def test_lazy_headers_keep_a_null_value_none() -> None:
    headers = LazyHeaders(_Msg())  # type: ignore[arg-type]
    assert headers == (("a", b"1"), ("null", None))
    record = Record("t", 0, 0, None, None, None, headers)
    assert record.header("null") is None and record.header("a") == b"1"


def test_a_dead_process_names_its_record_and_keeps_the_task_successes_before_it() -> None:
    from lagless.engine.workers.inbox import new_inbox
    from lagless.engine.workers.processes import ProcessWorkers
    from lagless.engine.workers.protocol import Completion
    from tests.integration.engine_helpers.hostile import die

    completions = new_inbox()
    workers = ProcessWorkers(1, die, run_each, POLICY, completions)
    try:
        workers.submit([rec(i) for i in range(1, 8)], 0)
        done = completions.get(timeout=60)
    finally:
        workers.close(1.0)
    assert isinstance(done, Completion) and done.fatal is not None
    assert "process died" in done.fatal
    assert done.records[done.fatal_at].offset == 3
    assert done.result is not None and sorted(done.result.failed) == list(range(2, 7))
    assert all(o.aborted for o in done.result.failed.values()), "not finished: not committed"
