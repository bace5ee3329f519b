"""Workers: where handlers run. Threads by default, a process pool for CPU-bound handlers,
an event loop for ``async def`` handlers (:mod:`lagless.engine.aio`).

The poll loop calls :meth:`Workers.submit` only for records it has decided to start (at most
``max_in_flight`` at once), so every submitted record starts as soon as a worker is free.
Each finished record comes back as a :class:`Completion` on the thread-safe ``completions``
queue, which the poll loop drains. Workers never touch the consumer.
"""

from __future__ import annotations

import logging
import multiprocessing
import pickle
import threading
import time
from concurrent.futures import Future, ProcessPoolExecutor
from queue import SimpleQueue
from typing import NamedTuple, Protocol

from lagless.engine.handlers import Handler
from lagless.engine.record import Record
from lagless.engine.retry import Outcome, RetryPolicy, execute
from lagless.errors import ConfigError

log = logging.getLogger(__name__)


class Completion(NamedTuple):
    """A record that finished (or whose worker broke: ``fatal`` says why)."""

    record: Record
    epoch: int
    outcome: Outcome | None
    fatal: str | None = None


class Workers(Protocol):
    def submit(self, record: Record, epoch: int) -> None: ...

    def abort(self) -> None:
        """Stop retry backoffs early (the engine is stopping)."""

    def close(self, timeout: float) -> None: ...


class ThreadWorkers:
    """``size`` threads running the handler."""

    def __init__(
        self,
        size: int,
        handler: Handler,
        policy: RetryPolicy,
        completions: SimpleQueue[object],
    ) -> None:
        self._handler = handler
        self._policy = policy
        self._completions = completions
        self._tasks: SimpleQueue[tuple[Record, int] | None] = SimpleQueue()
        self._stopping = threading.Event()
        self._threads = [
            threading.Thread(target=self._work, name=f"lagless-worker-{i}", daemon=True)
            for i in range(size)
        ]
        for thread in self._threads:
            thread.start()

    def submit(self, record: Record, epoch: int) -> None:
        self._tasks.put((record, epoch))

    def abort(self) -> None:
        self._stopping.set()

    def close(self, timeout: float) -> None:
        """Ask every thread to end; wait ``timeout`` seconds in all (they are daemons)."""
        self._stopping.set()
        for _ in self._threads:
            self._tasks.put(None)
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(timeout=max(0.0, deadline - time.monotonic()))

    def _work(self) -> None:
        while (task := self._tasks.get()) is not None:
            record, epoch = task
            outcome = execute(self._handler, record, self._policy, self._stopping.wait)
            self._completions.put(Completion(record, epoch, outcome))


class ProcessWorkers:
    """A pool of ``size`` processes (spawned) running a picklable handler."""

    def __init__(
        self,
        size: int,
        handler: Handler,
        policy: RetryPolicy,
        completions: SimpleQueue[object],
    ) -> None:
        try:
            pickle.dumps(handler)
        except (pickle.PicklingError, TypeError, AttributeError) as exc:
            raise ConfigError(
                f"handler cannot run in processes (not picklable: {exc}); use a module function"
            ) from None
        self._handler = handler
        self._policy = policy
        self._completions = completions
        self._pool = ProcessPoolExecutor(size, mp_context=multiprocessing.get_context("spawn"))

    def submit(self, record: Record, epoch: int) -> None:
        future = self._pool.submit(execute, self._handler, record, self._policy)

        def done(fut: Future[Outcome]) -> None:
            try:
                self._completions.put(Completion(record, epoch, fut.result()))
            except Exception as exc:  # the pool broke (a worker process died)
                log.error("worker process failed on %s: %s", record.coordinates, exc)
                self._completions.put(Completion(record, epoch, None, fatal=repr(exc)))

        future.add_done_callback(done)

    def abort(self) -> None:
        """Processes sleep through their backoff; nothing to interrupt."""

    def close(self, timeout: float) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


def make_workers(
    processes: int,
    threads: int,
    handler: Handler,
    policy: RetryPolicy,
    completions: SimpleQueue[object],
) -> Workers:
    """Where ``handler`` runs: an event loop if it is ``async def``, else processes or
    threads."""
    from lagless.engine.aio import AsyncWorkers, is_async  # aio builds on this module

    if is_async(handler):
        if processes:
            raise ConfigError(
                "an async handler runs on the engine's event loop: --processes is for "
                "blocking, CPU-bound handlers"
            )
        return AsyncWorkers(handler, policy, completions)
    if processes:
        return ProcessWorkers(processes, handler, policy, completions)
    return ThreadWorkers(threads, handler, policy, completions)
