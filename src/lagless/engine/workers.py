"""Workers: where handlers run. Threads by default, a process pool for CPU-bound handlers,
an event loop for ``async def`` handlers (:mod:`lagless.engine.aio`).

The poll loop calls :meth:`Workers.submit` only for tasks it has decided to start (at most
``max_in_flight`` at once), so every submitted task starts as soon as a worker is free, but
a task of a *lane* (threads only, see :attr:`ThreadWorkers.chains`): the tasks of one lane run
one after another, in the order submitted, the next on the thread that ran the one before,
without a turn of the poll loop in between. A
task is a list of records of one partition run one after another (:func:`run_each`) or as
one batch (:func:`run_batch`); it crosses to a process as one pickle. Each finished task comes
back as one :class:`Completion` on the thread-safe ``completions`` queue, which the poll loop
drains. Workers never touch the consumer.
"""

from __future__ import annotations

import logging
import multiprocessing
import pickle
import signal
import threading
import time
from collections import deque
from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from queue import Queue, SimpleQueue
from typing import Any, NamedTuple, Protocol

import numpy as np
from numpy.typing import NDArray

from lagless.engine.batch import BatchRun, run_batch
from lagless.engine.inline import InlinePace
from lagless.engine.messages import stamps_ms
from lagless.engine.record import Record
from lagless.engine.retry import Outcome, RetryPolicy, TaskResult, Wait, failure, run_each
from lagless.errors import ConfigError

log = logging.getLogger(__name__)


Runner = Callable[[Any, Sequence[Record], RetryPolicy, Wait], TaskResult]

THREAD_TASK_S = 0.001  # per-record handlers: records per task so one task takes about this
PROCESS_TASK_S = 0.02  # ... in a process (a task crosses as one pickle each way)
ASYNC_TASK_S = 0.001  # ... on the event loop (a task's records are awaited one by one)


class Completion(NamedTuple):
    """A task that finished (or whose worker broke: ``fatal`` says why, and ``result`` then
    says which of its records finished before, if known; the others are abandoned)."""

    records: Sequence[Record]
    epoch: int
    result: TaskResult | None
    fatal: str | None = None
    fatal_at: int = 0  # with ``fatal``: the position in the task of the record it ran
    # the records' timestamps (see messages.stamps_ms), read by a worker thread after the
    # handler so the poll loop need not; None: the poll loop reads them
    stamps: NDArray[np.int64] | None = None


class Workers(Protocol):
    task_s: float  # how long one task of a per-record handler should take
    chains: bool  # whether submit takes a lane
    inlined: int  # batches whose first call ran on the submitting thread (see engine.inline)

    def submit(self, records: Sequence[Record], epoch: int, lane: Hashable = None) -> None:
        """Start a task; with a ``lane`` (only if ``chains``), after the tasks of the lane
        submitted before it ended."""

    def abort(self) -> None:
        """Stop retry backoffs early (the engine is stopping)."""

    def close(self, timeout: float) -> None: ...


# a task for a worker thread: its records, epoch, lane, and the rest of a batch whose first
# call ran on the poll thread (None: the whole task)
_Task = tuple[Sequence[Record], int, Hashable, Callable[[Wait], TaskResult | None] | None]


class ThreadWorkers:
    """``size`` threads running the handler. A task of a lane that is running waits behind
    it (in ``_lanes``, under ``_lock``) and its thread runs it next. With ``inline`` (a batch
    handler), a fast batch's first call runs in :meth:`submit`, on the poll thread (see
    :mod:`lagless.engine.inline`)."""

    task_s = THREAD_TASK_S
    chains = True

    def __init__(
        self,
        size: int,
        handler: Any,
        run: Runner,
        policy: RetryPolicy,
        completions: Queue[object],
        *,
        inline: bool = False,
    ) -> None:
        self._handler = handler
        self._run = run
        self._policy = policy
        self._completions = completions
        self._pace = InlinePace() if inline else None
        self.inlined = 0
        self.calling_here = False  # a first call runs in submit now (on the poll thread)
        self.interrupting = False  # the engine raised KeyboardInterrupt into that call
        self._tasks: SimpleQueue[_Task | None] = SimpleQueue()
        self._lanes: dict[Hashable, deque[_Task]] = {}  # running ones
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._threads = [
            threading.Thread(target=self._work, name=f"lagless-worker-{i}", daemon=True)
            for i in range(size)
        ]
        for thread in self._threads:
            thread.start()

    def submit(self, records: Sequence[Record], epoch: int, lane: Hashable = None) -> None:
        pace = self._pace  # only this thread adds lanes: one not running now stays so
        if pace is not None and pace.fast and (lane is None or lane not in self._lanes):
            self._start_here(pace, records, epoch, lane)
        else:
            self._queue((records, epoch, lane, None))

    def _queue(self, task: _Task) -> None:
        lane = task[2]
        if lane is not None:
            with self._lock:
                behind = self._lanes.get(lane)
                if behind is not None:  # the lane runs: its thread runs this task next
                    behind.append(task)
                    return
                self._lanes[lane] = deque()
        self._tasks.put(task)

    def _start_here(
        self, pace: InlinePace, records: Sequence[Record], epoch: int, lane: Hashable
    ) -> None:
        """A fast batch's first call, on this thread; the rest of its rule, if the call did
        not settle the batch, on a worker thread as a task of its lane."""
        run = BatchRun(self._handler, records, self._policy)
        wall, cpu = time.perf_counter(), time.thread_time()
        self.calling_here = True
        try:
            result = run.advance(self._stopping.wait, first_only=True)
        finally:
            self.calling_here = False
        pace.note(time.perf_counter() - wall, time.thread_time() - cpu)
        self.inlined += 1
        if run.interrupted and (self.interrupting or _ctrl_c_raises_here()):
            raise KeyboardInterrupt  # a Ctrl-C: the caller's, not the handler's failure
        if result is None:
            self._queue((records, epoch, lane, run.advance))
        else:
            self._completions.put(Completion(records, epoch, result, stamps=stamps_ms(records)))

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
        put, lanes, lock, pace = self._completions.put, self._lanes, self._lock, self._pace
        perf, thread_time = time.perf_counter, time.thread_time
        while (task := self._tasks.get()) is not None:
            lane = task[2]
            while True:
                records, epoch, _, rest = task
                if rest is not None:  # the rest of a batch whose first call ran inline
                    result = rest(wait)
                elif pace is None:  # nothing to measure (no inline path)
                    result = run(handler, records, policy, wait)
                else:
                    wall, cpu = perf(), thread_time()
                    result = run(handler, records, policy, wait)
                    pace.note(perf() - wall, thread_time() - cpu)
                assert result is not None
                put(Completion(records, epoch, result, stamps=stamps_ms(records)))
                if lane is None:
                    break
                with lock:
                    behind = lanes[lane]
                    if not behind:
                        del lanes[lane]
                        break
                    task = behind.popleft()


def _ctrl_c_raises_here() -> bool:
    """Whether a Ctrl-C raises KeyboardInterrupt on this thread (the main thread, SIGINT at
    Python's default): one caught in a handler call here is then the user's interrupt."""
    return (
        threading.current_thread() is threading.main_thread()
        and signal.getsignal(signal.SIGINT) is signal.default_int_handler
    )


# in a pool process: the engine's "stopping" event and the tasks' progress (see _init_process)
_STOP: Any = None
_PROGRESS: Any = None


def _init_process(stop: Any, progress: Any) -> None:
    """A pool process: Ctrl-C is the engine's to handle (a record must not fail of it)."""
    global _STOP, _PROGRESS  # noqa: PLW0603 - one per process, set once by the initializer
    _STOP = stop
    _PROGRESS = progress
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _stop_wait(seconds: float) -> bool:
    """A retry backoff in a pool process: True (give up) as soon as the engine stops."""
    return bool(_STOP is not None and _STOP.wait(seconds))


def run_in_process(
    run: Runner, handler: Any, records: Sequence[Record], policy: RetryPolicy, slot: int
) -> TaskResult:
    """A task in a pool process, its backoffs cut short when the engine stops. A per-record
    task notes its progress in its ``slot`` of the shared progress array (-1: none), so the
    engine knows where a process that died stood."""
    if run is run_each and slot >= 0 and _PROGRESS is not None:
        progress = _PROGRESS

        def started(index: int, ok: int) -> None:
            progress[2 * slot] = index
            progress[2 * slot + 1] = ok

        return run_each(handler, records, policy, _stop_wait, started)
    return run(handler, records, policy, _stop_wait)


class ProcessWorkers:
    """A pool of ``size`` processes (spawned) running a picklable handler.

    Budgets hold as with threads: :meth:`abort` cuts retry backoffs short (an event shared
    with the processes) and cancels tasks not yet started; :meth:`close` waits up to its
    timeout, then terminates the processes still running a handler (their records are
    abandoned, never committed). A process that dies fails the run with one line naming the
    record it was running; the records of its task that had succeeded before still count.
    """

    task_s = PROCESS_TASK_S
    chains = False
    inlined = 0

    def __init__(
        self,
        size: int,
        handler: Any,
        run: Runner,
        policy: RetryPolicy,
        completions: Queue[object],
        slots: int = 1024,
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
        context = multiprocessing.get_context("spawn")
        self._stop = context.Event()
        self._progress = context.RawArray("q", 2 * slots)  # per slot: running, ok before
        self._free = list(range(slots - 1, -1, -1))
        self._closing = False
        self._futures: set[Future[TaskResult]] = set()
        self._pool = ProcessPoolExecutor(
            size,
            mp_context=context,
            initializer=_init_process,
            initargs=(self._stop, self._progress),
        )

    def submit(self, records: Sequence[Record], epoch: int, lane: Hashable = None) -> None:
        assert lane is None, "processes run no lanes"
        slot = self._free.pop() if self._free else -1
        if slot >= 0:
            self._progress[2 * slot] = self._progress[2 * slot + 1] = 0
        try:
            future = self._pool.submit(
                run_in_process, self._run, self._handler, records, self._policy, slot
            )
        except (BrokenProcessPool, RuntimeError) as exc:  # broken, or shut down
            self._release(slot)
            self._completions.put(Completion(records, epoch, None, fatal=_pool_error(exc)))
            return
        self._futures.add(future)
        future.add_done_callback(lambda fut: self._done(fut, records, epoch, slot))

    def _release(self, slot: int) -> None:
        if slot >= 0:
            self._free.append(slot)

    def _done(
        self, fut: Future[TaskResult], records: Sequence[Record], epoch: int, slot: int
    ) -> None:
        self._futures.discard(fut)
        if fut.cancelled():  # not started before the engine stopped: abandoned
            self._release(slot)
            self._completions.put(Completion(records, epoch, None))
            return
        exc = fut.exception()
        if exc is None:
            self._release(slot)
            self._completions.put(Completion(records, epoch, fut.result()))
        elif self._closing:  # terminated at close: abandoned, the next owner re-runs it
            self._release(slot)
            self._completions.put(Completion(records, epoch, None))
        else:  # the run fails with this, one line naming the record
            at, ok = (
                (int(self._progress[2 * slot]), int(self._progress[2 * slot + 1]))
                if slot >= 0
                else (0, 0)
            )
            self._release(slot)
            at = min(at, len(records) - 1)
            self._completions.put(
                Completion(
                    records, epoch, _succeeded_before(records, ok, exc), _pool_error(exc), at
                )
            )

    def abort(self) -> None:
        """Cut backoffs short in every process; cancel tasks not started yet."""
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


def _succeeded_before(records: Sequence[Record], ok: int, exc: BaseException) -> TaskResult:
    """A broken task's result: its first ``ok`` records succeeded, the others are abandoned
    (not finished: the next owner runs them again)."""
    abandoned: dict[int, Outcome] = {
        i: failure(exc, 0, 0.0, aborted=True) for i in range(ok, len(records))
    }
    return TaskResult(time.time(), [], abandoned)


def _pool_error(exc: BaseException) -> str:
    """One line about a broken pool."""
    if isinstance(exc, BrokenProcessPool):
        return "a handler process died (killed, out of memory, or os._exit)"
    return f"{type(exc).__name__}: {exc}"


def make_workers(
    processes: int,
    threads: int,
    handler: Any,
    batch: bool,
    policy: RetryPolicy,
    completions: Queue[object],
    *,
    inline: bool = False,
) -> Workers:
    """Where ``handler`` runs, per record or per batch when ``batch``: an event loop if it is
    ``async def``, else processes or threads (with ``inline``, a fast batch's first call on
    the poll thread: see :mod:`lagless.engine.inline`)."""
    from lagless.engine.aio import AsyncWorkers, is_async  # aio builds on this module

    if is_async(handler):
        if processes:
            raise ConfigError(
                "an async handler runs on the engine's event loop: --processes is for "
                "blocking, CPU-bound handlers"
            )
        return AsyncWorkers(handler, batch, policy, completions)
    run: Runner = run_batch if batch else run_each
    if processes:
        return ProcessWorkers(processes, handler, run, policy, completions)
    return ThreadWorkers(threads, handler, run, policy, completions, inline=inline and batch)
