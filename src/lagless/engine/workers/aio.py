"""Async handlers: ``async def`` handlers run as tasks on one event loop the engine owns.

The loop runs on its own thread (``lagless-aio``). The poll loop hands tasks (records of one
partition, see :mod:`lagless.engine.dispatch.lanes`) over with :meth:`AsyncWorkers.submit`
(thread-safe, batched: one wake-up of the loop per turn of the poll loop, not one per task);
each becomes an asyncio task that awaits the handler on its records one after another (so a
lane's order holds), each under the same retry policy as threads (the backoff is an
``asyncio.sleep`` cut short when the engine stops), and puts its :class:`Completion` on the
completion queue. Ten thousand concurrent awaits cost ten thousand small tasks, no threads.
A batch handler (``async def`` taking a sequence) is awaited per batch under the rule of
:mod:`lagless.engine.workers.batch`.

At close the tasks still running are cancelled: their records end without a completion, so
they are never counted nor committed (the next owner of the partition runs them again).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import threading
import time
from collections import deque
from collections.abc import Hashable, Sequence
from typing import Any

from lagless.engine.handlers import Handler
from lagless.engine.record import Record
from lagless.engine.workers.batch import run_batch_async
from lagless.engine.workers.inbox import Outbox
from lagless.engine.workers.protocol import ASYNC_TASK_S, Completion
from lagless.engine.workers.retry import (
    Attempts,
    Outcome,
    RetryPolicy,
    TaskResult,
    UnsupportedResultError,
)

log = logging.getLogger(__name__)

CANCEL_GRACE_S = 0.2  # at close, even "at once": a loop turn for the cancellations to land


def is_async(handler: Any) -> bool:
    """Whether ``handler`` is an ``async def`` function (or a callable object whose
    ``__call__`` is one)."""
    call = getattr(handler, "__call__", None)  # noqa: B004 - the bound __call__ itself
    return inspect.iscoroutinefunction(handler) or inspect.iscoroutinefunction(call)


async def execute_async(
    handler: Handler, record: Record, policy: RetryPolicy, stopping: asyncio.Event
) -> Outcome:
    """Await ``handler(record)`` with retries; never raises but ``CancelledError``."""
    attempts = Attempts(policy)
    while True:
        attempts.begin()
        try:
            result = handler(record)
            if not inspect.isawaitable(result):
                raise UnsupportedResultError(
                    f"async handler returned {type(result).__name__}, not an awaitable"
                )
            inspect_result(await result)
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # any failure, whatever its kind, is the record's
            verdict = attempts.failed(exc)
            if isinstance(verdict, Outcome):
                return verdict
            if await _backoff(verdict, stopping):
                return attempts.abandoned(exc)
        else:
            return attempts.succeeded()


def inspect_result(result: object) -> None:
    """An awaited handler must not hand back more work (a coroutine it forgot to await)."""
    if inspect.iscoroutine(result):
        result.close()
    if inspect.isawaitable(result) or inspect.isgenerator(result) or inspect.isasyncgen(result):
        raise UnsupportedResultError(
            f"async handler's result is {type(result).__name__}: work it did not await"
        )


async def run_each_async(
    handler: Handler, records: Sequence[Record], policy: RetryPolicy, stopping: asyncio.Event
) -> TaskResult:
    """Await ``handler`` on each record in turn, each with its retries (as ``run_each``)."""
    seconds: list[float] = []
    failed: dict[int, Outcome] = {}
    for index, record in enumerate(records):
        outcome = await execute_async(handler, record, policy, stopping)
        seconds.append(outcome.seconds)
        if not outcome.ok:
            failed[index] = outcome
    return TaskResult(time.time(), seconds, failed)


async def _backoff(delay: float, stopping: asyncio.Event) -> bool:
    """Sleep the retry delay; True (stop retrying) if the engine stops meanwhile."""
    try:
        await asyncio.wait_for(stopping.wait(), delay)
    except TimeoutError:
        return False
    return True


class AsyncWorkers:
    """An event loop thread running an ``async def`` handler as one asyncio task per task of
    records."""

    task_s = ASYNC_TASK_S
    chains = False
    ahead = 0  # a task starts at once: nothing to queue
    inlined = 0
    ran_here = 0

    def __init__(self, handler: Any, batch: bool, policy: RetryPolicy, completions: Outbox) -> None:
        self._handler = handler
        self._batch = batch
        self._policy = policy
        self._completions = completions
        self._incoming: deque[tuple[Sequence[Record], int]] = deque()
        self._wake_pending = threading.Event()
        self._loop = asyncio.new_event_loop()
        self._tasks: set[asyncio.Task[None]] = set()
        self._stopping = asyncio.Event()
        self._thread = threading.Thread(target=self._run, name="lagless-aio", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_forever()

    def submit(
        self, records: Sequence[Record], epoch: int, lane: Hashable = None, here: bool = True
    ) -> None:
        assert lane is None, "the event loop runs no lanes"
        self._incoming.append((records, epoch))
        if not self._wake_pending.is_set():
            self._wake_pending.set()
            self._loop.call_soon_threadsafe(self._start_incoming)

    def _start_incoming(self) -> None:
        self._wake_pending.clear()
        incoming = self._incoming
        while incoming:
            records, epoch = incoming.popleft()
            self._tasks.add(self._loop.create_task(self._one(records, epoch)))

    async def _one(self, records: Sequence[Record], epoch: int) -> None:
        try:
            if self._batch:
                result = await run_batch_async(self._handler, records, self._policy, self._stopping)
            else:
                result = await run_each_async(self._handler, records, self._policy, self._stopping)
            self._completions.put(Completion(records, epoch, result))
        finally:  # cheaper than a done callback (one loop turn less per record)
            task = asyncio.current_task()
            if task is not None:
                self._tasks.discard(task)

    def dropped(self, epoch: int) -> None:
        """Nothing waits to start: every task submitted has started."""

    def abort(self) -> None:
        """Cut retry backoffs short (the engine is stopping)."""
        if not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._stopping.set)

    def close(self, timeout: float) -> None:
        """Cancel what still runs, stop the loop; wait ``timeout`` seconds for it in all."""
        if self._loop.is_closed():
            return
        self._loop.call_soon_threadsafe(self._cancel_all)
        self._thread.join(timeout=max(CANCEL_GRACE_S, timeout))
        if self._thread.is_alive():
            log.warning("async handlers ignored cancellation for %.1f s; left running", timeout)
            return
        self._loop.close()

    def _cancel_all(self) -> None:
        self._stopping.set()
        self._incoming.clear()
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        if not tasks:
            self._loop.stop()
            return
        log.info("cancelled %d async handlers still running at close", len(tasks))
        gathered = asyncio.gather(*tasks, return_exceptions=True)
        gathered.add_done_callback(lambda _f: self._loop.stop())
