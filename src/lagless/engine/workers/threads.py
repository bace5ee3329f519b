"""Worker threads: the default place handlers run, with lanes (a partition's tasks one after
another on one thread) and, for a fast handler, calls on the poll thread (see
:mod:`lagless.engine.workers.inline`)."""

from __future__ import annotations

import signal
import threading
import time
from collections import deque
from collections.abc import Callable, Hashable, Sequence
from queue import SimpleQueue
from typing import Any

from lagless.engine.intake.messages import stamps_ms
from lagless.engine.record import Record
from lagless.engine.workers.batch import BatchRun
from lagless.engine.workers.inbox import Outbox
from lagless.engine.workers.inline import HereRun, InlinePace, note_here, rest_of, run_here
from lagless.engine.workers.protocol import THREAD_TASK_S, Completion, Runner
from lagless.engine.workers.retry import RetryPolicy, TaskResult, Wait

# a task for a worker thread: its records, epoch, lane, and the rest of a batch whose first
# call ran on the poll thread (None: the whole task)
_Task = tuple[Sequence[Record], int, Hashable, Callable[[Wait], TaskResult | None] | None]

AHEAD_SHARE = 4  # tasks taken ahead: one per this many threads (at least one)
# epochs of dropped assignments remembered: a task queued behind thousands of later revokes
# is past any budget (were it to start, its completion's old epoch is ignored all the same)
GONE_KEPT = 4096


class ThreadWorkers:
    """``size`` threads running the handler. A task of a lane that is running waits behind
    it (in ``_lanes``, under ``_lock``) and its thread runs it next. With ``inline``, a fast
    handler's task starts in :meth:`submit`, on the poll thread: a batch's first call, a
    per-record task's first attempts (see :mod:`lagless.engine.workers.inline`); and
    :meth:`run_here` runs records there for the poll loop's fast path.

    The poll loop hands out up to :attr:`ahead` tasks more than there are threads: they wait
    in the queue, and a thread that finishes a task takes the next at once, holding the GIL,
    instead of blocking until the poll loop has collected its completion and handed out
    another task (two more hand-overs of the GIL per task, each waiting its turn among the
    threads). The threads still bound the calls running at once."""

    task_s = THREAD_TASK_S
    chains = True

    def __init__(
        self,
        size: int,
        handler: Any,
        run: Runner,
        policy: RetryPolicy,
        completions: Outbox,
        *,
        inline: bool = False,
        batch: bool = False,
    ) -> None:
        self._handler = handler
        self._batch = batch
        self._run = run
        self._policy = policy
        self._completions = completions
        self._pace = InlinePace() if inline else None
        self.inlined = 0  # batches whose first call ran in submit
        self.ran_here = 0  # tasks that started in submit (batches and per-record tasks)
        self.calling_here = False  # a first call runs in submit now (on the poll thread)
        self.interrupting = False  # the engine raised KeyboardInterrupt into that call
        self._tasks: SimpleQueue[_Task | None] = SimpleQueue()
        self._lanes: dict[Hashable, deque[_Task]] = {}  # running ones
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._gone: set[int] = set()  # epochs of assignments over: their tasks do not start
        self._closed = False  # set by close: tasks still queued do not start
        self.ahead = max(1, size // AHEAD_SHARE)
        self._threads = [
            threading.Thread(target=self._work, name=f"lagless-worker-{i}", daemon=True)
            for i in range(size)
        ]
        for thread in self._threads:
            thread.start()

    def submit(
        self, records: Sequence[Record], epoch: int, lane: Hashable = None, here: bool = True
    ) -> None:
        pace = self._pace  # only this thread adds lanes: one not running now stays so
        if here and pace is not None and pace.fast and (lane is None or lane not in self._lanes):
            if self._batch:
                self._start_here(pace, records, epoch, lane)
            else:
                self._records_here(pace, records, epoch, lane)
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
        self.ran_here += 1
        if run.interrupted and (self.interrupting or _ctrl_c_raises_here()):
            raise KeyboardInterrupt  # a Ctrl-C: the caller's, not the handler's failure
        if result is None:
            self._queue((records, epoch, lane, run.advance))
        else:
            self._completions.put(Completion(records, epoch, result, stamps=stamps_ms(records)))

    @property
    def inlines(self) -> bool:
        """Whether calls may run on the calling thread (``inline``)."""
        return self._pace is not None

    @property
    def fast(self) -> bool:
        """Whether the handler's calls run on the calling thread now."""
        pace = self._pace
        return pace is not None and pace.fast

    def run_here(self, records: Sequence[Record]) -> HereRun:
        """First attempts of ``records`` on this thread (:func:`.inline.run_here`), measured.
        A Ctrl-C raised into a call (see :meth:`lagless.engine.loop.Engine.hurry`) ends the
        run at that record, its error the ``KeyboardInterrupt``: :meth:`interrupted` says so."""
        self.calling_here = True
        try:
            here = run_here(self._handler, records)
        finally:
            self.calling_here = False
        if self._pace is not None:
            note_here(self._pace, here)
        return here

    def interrupted(self, here: HereRun) -> bool:
        """Whether a run here ended on a Ctrl-C (the caller's to raise, not the handler's
        failure)."""
        return isinstance(here.error, KeyboardInterrupt) and (
            self.interrupting or _ctrl_c_raises_here()
        )

    def resume(self, records: Sequence[Record], epoch: int, here: HereRun) -> None:
        """Hand a worker thread the rest of a task of ``records`` that started on this thread
        (``here``: what its first records did, see :func:`.inline.rest_of`)."""
        self._queue((records, epoch, None, rest_of(self._handler, records, here, self._policy)))

    def _records_here(
        self, pace: InlinePace, records: Sequence[Record], epoch: int, lane: Hashable
    ) -> None:
        """A fast per-record task on this thread; what it did not finish (a failed record's
        retries, the records after it or past the time budget) on a worker thread."""
        here = self.run_here(records)
        self.ran_here += 1
        if self.interrupted(here):
            raise KeyboardInterrupt  # a Ctrl-C: the caller's, not the handler's failure
        if here.done == len(records):
            result = TaskResult(time.time(), here.seconds, {})
            self._completions.put(Completion(records, epoch, result))
        else:
            self._queue((records, epoch, lane, rest_of(self._handler, records, here, self._policy)))

    def abort(self) -> None:
        self._stopping.set()

    def dropped(self, epoch: int) -> None:
        """Tasks of assignment ``epoch`` still queued (ahead, or behind their lane) never
        start: they come back without a result, their records not done."""
        gone = self._gone
        gone.add(epoch)
        if len(gone) > GONE_KEPT:  # bounded: keep the newest (epochs grow)
            for old in sorted(gone)[: len(gone) - GONE_KEPT // 2]:
                gone.discard(old)

    def dropped_epochs(self) -> int:
        """How many dropped assignments are remembered (at most ``GONE_KEPT``)."""
        return len(self._gone)

    def close(self, timeout: float) -> None:
        """Ask every thread to end; wait ``timeout`` seconds in all (they are daemons). Tasks
        still queued (ahead, or behind their lane) do not start: the engine has committed."""
        self._closed = True
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
        per_call = self._batch  # a task is one call (a batch), else one call a record
        gone = self._gone
        while (task := self._tasks.get()) is not None:
            lane = task[2]
            while True:
                records, epoch, _, rest = task
                if epoch in gone or self._closed:  # revoked, lost or closed before it started
                    put(Completion(records, epoch, None))
                else:
                    if rest is not None:  # the rest of a batch whose first call ran inline
                        result = rest(wait)
                    elif pace is None:  # nothing to measure (no inline path)
                        result = run(handler, records, policy, wait)
                    elif pace.slow:  # the wall clock alone (see InlinePace.slow)
                        wall = perf()
                        result = run(handler, records, policy, wait)
                        calls = 1 if per_call else max(1, len(records))
                        pace.note_wall((perf() - wall) / calls)
                    else:
                        wall, cpu = perf(), thread_time()
                        result = run(handler, records, policy, wait)
                        calls = 1 if per_call else max(1, len(records))
                        pace.note((perf() - wall) / calls, (thread_time() - cpu) / calls)
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
