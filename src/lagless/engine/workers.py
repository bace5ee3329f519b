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
import signal
import threading
import time
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from queue import SimpleQueue
from typing import Any, NamedTuple, Protocol

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


_STOP: Any = None  # in a pool process: the engine's "stopping" event (see _init_process)


def _init_process(stop: Any) -> None:
    """A pool process: Ctrl-C is the engine's to handle (a record must not fail of it)."""
    global _STOP  # noqa: PLW0603 - one per process, set once by the pool's initializer
    _STOP = stop
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _stop_wait(seconds: float) -> bool:
    """A retry backoff in a pool process: True (give up) as soon as the engine stops."""
    return bool(_STOP is not None and _STOP.wait(seconds))


def execute_in_process(handler: Handler, record: Record, policy: RetryPolicy) -> Outcome:
    """:func:`execute` in a pool process, its backoffs cut short when the engine stops."""
    return execute(handler, record, policy, _stop_wait)


class ProcessWorkers:
    """A pool of ``size`` processes (spawned) running a picklable handler.

    Budgets hold as with threads: :meth:`abort` cuts retry backoffs short (an event shared
    with the processes) and cancels records not yet started; :meth:`close` waits up to its
    timeout, then terminates the processes still running a handler (their records are
    abandoned, never committed). A process that dies fails the run with one line naming the
    record it was running.
    """

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
        context = multiprocessing.get_context("spawn")
        self._stop = context.Event()
        self._closing = False
        self._futures: set[Future[Outcome]] = set()
        self._pool = ProcessPoolExecutor(
            size, mp_context=context, initializer=_init_process, initargs=(self._stop,)
        )

    def submit(self, record: Record, epoch: int) -> None:
        try:
            future = self._pool.submit(execute_in_process, self._handler, record, self._policy)
        except (BrokenProcessPool, RuntimeError) as exc:  # broken, or shut down
            self._completions.put(Completion(record, epoch, None, fatal=_pool_error(exc)))
            return
        self._futures.add(future)
        future.add_done_callback(lambda fut: self._done(fut, record, epoch))

    def _done(self, fut: Future[Outcome], record: Record, epoch: int) -> None:
        self._futures.discard(fut)
        if fut.cancelled():  # not started before the engine stopped: abandoned
            self._completions.put(Completion(record, epoch, None))
            return
        exc = fut.exception()
        if exc is None:
            self._completions.put(Completion(record, epoch, fut.result()))
        elif self._closing:  # terminated at close: abandoned, the next owner re-runs it
            self._completions.put(Completion(record, epoch, None))
        else:  # the run fails with this, one line naming the record
            self._completions.put(Completion(record, epoch, None, fatal=_pool_error(exc)))

    def abort(self) -> None:
        """Cut backoffs short in every process; cancel records not started yet."""
        self._stop.set()
        for future in list(self._futures):
            future.cancel()

    def close(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for running handlers, then terminate the pool."""
        self.abort()
        deadline = time.monotonic() + timeout
        while self._futures and time.monotonic() < deadline:
            time.sleep(0.02)
        self._closing = True
        processes = list((getattr(self._pool, "_processes", None) or {}).values())
        self._pool.shutdown(wait=False, cancel_futures=True)
        if self._futures:
            log.warning("terminating %d handler processes still running", len(self._futures))
            for process in processes:  # the executor has no public way to stop a hung handler
                process.terminate()
        for process in processes:
            process.join(timeout=max(0.1, deadline - time.monotonic()))


def _pool_error(exc: BaseException) -> str:
    """One line about a broken pool."""
    if isinstance(exc, BrokenProcessPool):
        return "a handler process died (killed, out of memory, or os._exit)"
    return f"{type(exc).__name__}: {exc}"


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
