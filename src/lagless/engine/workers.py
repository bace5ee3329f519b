"""Workers: where handlers run. Threads by default, a process pool for CPU-bound handlers.

The poll loop calls :meth:`Workers.submit` only for tasks it has decided to start (at most
``max_in_flight`` at once), so every submitted task starts as soon as a worker is free. A
task is a list of records of one partition run one after another (:func:`run_each`) or as
one batch (:func:`run_batch`); it crosses to a process as one pickle. Each finished task comes
back as one :class:`Completion` on the thread-safe ``completions`` queue, which the poll loop
drains. Workers never touch the consumer.
"""

from __future__ import annotations

import logging
import multiprocessing
import pickle
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from queue import SimpleQueue
from typing import Any, NamedTuple, Protocol

from lagless.engine.batch import run_batch
from lagless.engine.record import Record
from lagless.engine.retry import RetryPolicy, TaskResult, Wait, plain_wait, run_each
from lagless.errors import ConfigError

log = logging.getLogger(__name__)


Runner = Callable[[Any, Sequence[Record], RetryPolicy, Wait], TaskResult]

THREAD_TASK_S = 0.001  # per-record handlers: records per task so one task takes about this
PROCESS_TASK_S = 0.02  # ... in a process (a task crosses as one pickle each way)


class Completion(NamedTuple):
    """A task that finished (or whose worker broke: ``fatal`` says why)."""

    records: list[Record]
    epoch: int
    result: TaskResult | None
    fatal: str | None = None


class Workers(Protocol):
    task_s: float  # how long one task of a per-record handler should take

    def submit(self, records: list[Record], epoch: int) -> None: ...

    def abort(self) -> None:
        """Stop retry backoffs early (the engine is stopping)."""

    def close(self, timeout: float) -> None: ...


class ThreadWorkers:
    """``size`` threads running the handler."""

    task_s = THREAD_TASK_S

    def __init__(
        self,
        size: int,
        handler: Any,
        run: Runner,
        policy: RetryPolicy,
        completions: SimpleQueue[object],
    ) -> None:
        self._handler = handler
        self._run = run
        self._policy = policy
        self._completions = completions
        self._tasks: SimpleQueue[tuple[list[Record], int] | None] = SimpleQueue()
        self._stopping = threading.Event()
        self._threads = [
            threading.Thread(target=self._work, name=f"lagless-worker-{i}", daemon=True)
            for i in range(size)
        ]
        for thread in self._threads:
            thread.start()

    def submit(self, records: list[Record], epoch: int) -> None:
        self._tasks.put((records, epoch))

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
        handler, run, policy, wait = self._handler, self._run, self._policy, self._stopping.wait
        put = self._completions.put
        while (task := self._tasks.get()) is not None:
            records, epoch = task
            put(Completion(records, epoch, run(handler, records, policy, wait)))


class ProcessWorkers:
    """A pool of ``size`` processes (spawned) running a picklable handler."""

    task_s = PROCESS_TASK_S

    def __init__(
        self,
        size: int,
        handler: Any,
        run: Runner,
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
        self._run = run
        self._policy = policy
        self._completions = completions
        self._pool = ProcessPoolExecutor(size, mp_context=multiprocessing.get_context("spawn"))

    def submit(self, records: list[Record], epoch: int) -> None:
        future = self._pool.submit(self._run, self._handler, records, self._policy, plain_wait)

        def done(fut: Future[TaskResult]) -> None:
            try:
                self._completions.put(Completion(records, epoch, fut.result()))
            except Exception as exc:  # the pool broke (a worker process died)
                log.error("worker process failed on %s: %s", records[0].coordinates, exc)
                self._completions.put(Completion(records, epoch, None, fatal=repr(exc)))

        future.add_done_callback(done)

    def abort(self) -> None:
        """Processes sleep through their backoff; nothing to interrupt."""

    def close(self, timeout: float) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


def make_workers(
    processes: int,
    threads: int,
    handler: Any,
    batch: bool,
    policy: RetryPolicy,
    completions: SimpleQueue[object],
) -> Workers:
    """Threads or processes running ``handler`` per record, or per batch when ``batch``."""
    run: Runner = run_batch if batch else run_each
    if processes:
        return ProcessWorkers(processes, handler, run, policy, completions)
    return ThreadWorkers(threads, handler, run, policy, completions)
