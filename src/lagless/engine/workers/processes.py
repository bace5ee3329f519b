"""Worker processes: a spawned pool for CPU-bound, picklable handlers, with the same budgets
as threads (backoffs cut short at stop, hung handlers terminated at close)."""

from __future__ import annotations

import logging
import multiprocessing
import pickle
import signal
import time
from collections.abc import Hashable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from lagless.engine.record import Record
from lagless.engine.workers.inbox import Outbox
from lagless.engine.workers.protocol import PROCESS_TASK_S, Completion, Runner
from lagless.engine.workers.retry import Outcome, RetryPolicy, TaskResult, failure, run_each
from lagless.errors import ConfigError

log = logging.getLogger(__name__)


# in a pool process: the engine's "stopping" event and the tasks' progress (see _init_process)
_STOP: Any = None
_PROGRESS: Any = None


def _init_process(stop: Any, progress: Any) -> None:
    """A pool process: Ctrl-C and SIGTERM are the engine's to handle (a record must not fail
    of them): a terminal's Ctrl-C, or a SIGTERM to the whole process group (systemd's default
    ``KillMode=control-group``, ``kill -TERM -PGID``), reaches the pool's processes too, and the
    engine drains them. A handler still running after the budget is killed at close."""
    global _STOP, _PROGRESS  # noqa: PLW0603 - one per process, set once by the initializer
    _STOP = stop
    _PROGRESS = progress
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)


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
    ahead = 0  # max_in_flight tasks already wait in the pool for its few processes
    inlined = 0
    ran_here = 0

    def __init__(
        self,
        size: int,
        handler: Any,
        run: Runner,
        policy: RetryPolicy,
        completions: Outbox,
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

    def submit(
        self, records: Sequence[Record], epoch: int, lane: Hashable = None, here: bool = True
    ) -> None:
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

    def dropped(self, epoch: int) -> None:
        """Tasks handed to the pool run as before (the pool queues them beyond its processes:
        a task is not taken back once submitted)."""

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
            log.warning("killing %d handler processes still running", len(self._futures))
            for process in processes:  # the executor has no public way to stop a hung handler
                process.kill()  # SIGKILL: they ignore SIGTERM (see _init_process)
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
