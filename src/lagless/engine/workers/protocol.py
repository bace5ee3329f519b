"""The workers' protocol: what the poll loop hands a pool of workers and what comes back.

The poll loop calls :meth:`Workers.submit` only for tasks it has decided to start (at most
``max_in_flight`` at once, plus :attr:`Workers.ahead`), so every submitted task starts as soon
as a worker is free, but a task of a *lane* (threads only, see :attr:`Workers.chains`): the
tasks of one lane run one after another, in the order submitted, the next on the thread that
ran the one before, without a turn of the poll loop in between. Threads also take a few tasks
*ahead* (:attr:`lagless.engine.workers.threads.ThreadWorkers.ahead`): queued, each starts on
the next thread that frees, again without a turn of the poll loop; on threads, a task of an
assignment that ended before it started never starts (:meth:`Workers.dropped`). A task is a
list of records of one partition run one after another
(:func:`lagless.engine.workers.retry.run_each`) or as one batch
(:func:`lagless.engine.workers.batch.run_batch`); it crosses to a process as one pickle. Each
finished task comes back as one :class:`Completion` on the thread-safe inbox, which the poll
loop drains. Workers never touch the consumer. Implementations: threads
(:mod:`.threads`), processes (:mod:`.processes`), an event loop (:mod:`.aio`); which one runs
a handler is chosen by :func:`lagless.engine.workers.factory.make_workers`.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any, NamedTuple, Protocol

import numpy as np
from numpy.typing import NDArray

from lagless.engine.record import Record
from lagless.engine.workers.retry import RetryPolicy, TaskResult, Wait

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
    ahead: int  # tasks taken beyond max_in_flight, queued for the next free worker
    inlined: int  # batches whose first call ran on the submitting thread (see engine.inline)
    ran_here: int  # tasks that started on the submitting thread (batches and per record)

    def submit(
        self, records: Sequence[Record], epoch: int, lane: Hashable = None, here: bool = True
    ) -> None:
        """Start a task; with a ``lane`` (only if ``chains``), after the tasks of the lane
        submitted before it ended. ``here=False``: not on the calling thread (threads'
        ``inline``), every worker may be busy (tasks queued ahead)."""

    def abort(self) -> None:
        """Stop retry backoffs early (the engine is stopping)."""

    def dropped(self, epoch: int) -> None:
        """The assignment ``epoch`` is over (its partition revoked or lost): threads do not
        start its tasks still queued (their completions come back without a result)."""

    def close(self, timeout: float) -> None: ...
