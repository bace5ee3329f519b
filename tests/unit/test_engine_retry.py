"""Retry execution: every exception kind ends an attempt; work left undone (a returned
coroutine, awaitable or generator) is a failure, never a success; async backoffs are cut
short when the engine stops."""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Iterator

import pytest

from lagless.engine.record import Record
from lagless.engine.workers.aio import execute_async, is_async
from lagless.engine.workers.retry import RetryPolicy, execute

RECORD = Record("t", 0, 7, None, b"{}", None)
POLICY = RetryPolicy(retries=2, backoff_s=0.001, backoff_max_s=0.001)


@pytest.mark.parametrize("kind", [SystemExit, KeyboardInterrupt, GeneratorExit, RuntimeError])
def test_every_exception_kind_fails_the_attempt_and_is_retried(kind: type[BaseException]) -> None:
    calls: list[int] = []

    def handler(record: Record) -> None:
        calls.append(record.offset)
        raise kind("bye")

    outcome = execute(handler, RECORD, POLICY)
    assert not outcome.ok and outcome.attempts == 3 and calls == [7, 7, 7]
    assert outcome.error_class == kind.__name__


async def _coroutine_handler(record: Record) -> None:
    raise AssertionError("must not run")


def _returns_coroutine(record: Record) -> object:
    return _coroutine_handler(record)  # a sync function forgetting to await


def _generator_handler(record: Record) -> Iterator[int]:
    yield 1


def test_a_sync_handler_returning_a_coroutine_or_generator_fails_without_a_warning() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for handler in (_returns_coroutine, _generator_handler):
            outcome = execute(handler, RECORD, RetryPolicy(retries=0))
            assert not outcome.ok and outcome.error_class == "UnsupportedResultError"
            assert "never ran" in outcome.error_message


def test_a_sync_handler_returning_a_future_fails() -> None:
    loop = asyncio.new_event_loop()
    try:
        outcome = execute(lambda r: loop.create_future(), RECORD, RetryPolicy(retries=0))
    finally:
        loop.close()
    assert not outcome.ok and "Future" in outcome.error_message


def test_async_detection() -> None:
    class Callable:
        async def __call__(self, record: Record) -> None: ...

    assert is_async(_coroutine_handler) and is_async(Callable())
    assert not is_async(_generator_handler) and not is_async(print)


def test_async_execution_retries_and_reports_unawaited_results() -> None:
    async def run() -> None:
        stopping = asyncio.Event()
        tries: list[int] = []

        async def flaky(record: Record) -> None:
            tries.append(1)
            if len(tries) < 2:
                raise SystemExit("once")

        ok = await execute_async(flaky, RECORD, POLICY, stopping)
        assert ok.ok and ok.attempts == 2

        async def forgot(record: Record) -> object:
            return asyncio.sleep(0)

        bad = await execute_async(forgot, RECORD, RetryPolicy(retries=0), stopping)
        assert not bad.ok and bad.error_class == "UnsupportedResultError"

        def plain(record: Record) -> None:
            return None

        worse = await execute_async(plain, RECORD, RetryPolicy(retries=0), stopping)
        assert not worse.ok and "not an awaitable" in worse.error_message

    asyncio.run(run())


def test_async_backoff_is_cut_short_when_the_engine_stops() -> None:
    async def run() -> None:
        stopping = asyncio.Event()

        async def fail(record: Record) -> None:
            raise RuntimeError("x")

        slow = RetryPolicy(retries=5, backoff_s=30, backoff_max_s=30)
        asyncio.get_running_loop().call_later(0.05, stopping.set)
        outcome = await asyncio.wait_for(execute_async(fail, RECORD, slow, stopping), 5)
        assert not outcome.ok and outcome.aborted and outcome.attempts == 1

    asyncio.run(run())
