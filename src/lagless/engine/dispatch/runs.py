"""Dispatching batches: per partition, the runs of fetched messages held, handed out as tasks.

The batch-handler counterpart of :class:`lagless.engine.dispatch.lanes.Dispatcher`, with no object
per record: a partition holds the runs the poll brought (lists of messages, the first one
from a position ``lo``), and a task takes up to ``size`` messages from its front (whole runs
without copying them, the last one sliced) as a :class:`MessageBatch`.

The ordering modes' promise for batches:

- ``partition``: a batch holds consecutive records of one partition; one batch running
  per partition.
- ``key``: the same rule — one batch running per partition, consecutive records. A batch
  then never runs beside another batch holding one of its keys (a key's records are in one
  partition) and holds a key's records in offset order. It costs no work per record (no key
  is read), which is what lets a fast batch handler keep up with the poll loop; parallelism
  comes from partitions, as with ``partition``.
- ``unordered``: any number of batches of a partition in flight.

With workers that run a partition's batches one after another on their own
(:attr:`lagless.engine.workers.threads.ThreadWorkers.chains`), ``partition`` and ``key`` *chain*
(:meth:`RunDispatcher.chain`): while a batch of a partition runs, its next batch is handed
out as soon as the partition holds a full one, to start on that worker the moment the running
one ends (at most two in flight: one running, one behind it). Still one batch of a partition
runs at a time, in offset order; the poll loop no longer waits for a completion before it can
hand out the next batch.

Partitions take turns (round-robin), a linger keeps a partition holding fewer than ``size``
records until its oldest waited ``linger_s``, and a batch still running when its partition is
closed keeps the partition busy (``partition``/``key``) if it comes back before the batch
ends (:meth:`RunDispatcher.release_orphan`), as in :mod:`lagless.engine.dispatch.lanes`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from itertools import chain

from confluent_kafka import Message

from lagless.engine.config import Ordering
from lagless.engine.dispatch.turns import PartitionKey, Turns
from lagless.engine.intake.messages import MessageBatch
from lagless.engine.record import Record


class RunQueue:
    """The messages of one partition held but not started: runs, the first from ``lo``."""

    __slots__ = ("busy", "held", "lo", "runs", "since")

    def __init__(self, busy: int = 0) -> None:
        self.runs: deque[list[Message]] = deque()
        self.lo = 0
        self.held = 0
        self.since = 0.0  # when the oldest message held arrived (approximately, see take)
        self.busy = busy  # batches of this partition running

    def take(self, size: int) -> list[Message]:
        """Up to ``size`` messages from the front, in offset order."""
        pieces: list[list[Message]] = []
        room = size
        runs = self.runs
        while runs and room:
            run, lo = runs[0], self.lo
            left = len(run) - lo
            if left <= room:
                pieces.append(run if not lo else run[lo:])
                runs.popleft()
                self.lo = 0
                room -= left
            else:
                pieces.append(run[lo : lo + room])
                self.lo = lo + room
                room = 0
        taken = size - room
        self.held -= taken
        return pieces[0] if len(pieces) == 1 else list(chain.from_iterable(pieces))


class RunDispatcher(Turns):
    """Per-partition run queues and the round-robin turn over partitions that may start."""

    def __init__(self, ordering: Ordering, linger_s: float = 0.0) -> None:
        super().__init__(ordering, linger_s)
        self.exclusive = ordering is not Ordering.UNORDERED  # one batch running a partition
        self.chain_size = 0  # chained (see chain): a full batch waits behind a running one
        self._queues: dict[PartitionKey, RunQueue] = {}
        self._orphans: dict[PartitionKey, int] = {}  # batches running from a closed queue

    def chain(self, size: int) -> None:
        """Hand out a busy partition's next batch once it holds ``size`` records (a full
        batch): the workers start it when the running one ends. ``partition`` and ``key``."""
        if self.exclusive:
            self.chain_size = size

    def open(self, tp: PartitionKey) -> None:
        if tp not in self._queues:
            self._queues[tp] = RunQueue(self._orphans.get(tp, 0) if self.exclusive else 0)
            self.starving += 1

    def close(self, tp: PartitionKey) -> int:
        """Stop dispatching ``tp``; its messages not started are dropped. Returns how many.
        Its batches still running keep a reopened queue busy until :meth:`release_orphan`."""
        queue = self._queues.pop(tp, None)
        if queue is None:
            return 0
        if queue.busy:
            self._orphans[tp] = queue.busy
        return self._dropped(queue.held, self._startable(queue))

    def _startable(self, queue: RunQueue) -> int:
        """How many of ``queue``'s records may start now (its share of ``ready``): all
        of them, unless a batch of the partition is in flight (``partition``, ``key``): then
        none, or with chaining all once they fill a batch behind the one running."""
        busy = queue.busy
        if not busy or not self.exclusive:
            return queue.held
        if busy == 1 and self.chain_size and queue.held >= self.chain_size:
            return queue.held
        return 0

    def push_run(self, tp: PartitionKey, messages: list[Message], now: float) -> None:
        """Hold a run of messages of ``tp`` (ascending offsets, after those held)."""
        if not messages:
            return
        queue = self._queues[tp]
        if not queue.held:
            self.starving -= 1
            queue.since = now
        before = self._startable(queue)
        queue.runs.append(messages)
        queue.held += len(messages)
        self.held += len(messages)
        startable = self._startable(queue)
        if startable:
            self.ready += startable - before
            self._schedule(tp)

    def release(self, task: Sequence[Record]) -> None:
        """A dispatched batch finished: its partition may start the next one."""
        assert isinstance(task, MessageBatch)
        queue = self._queues.get(task.tp)
        if queue is None:  # closed while it ran (a revoke waiting out its budget)
            self.release_orphan(task)
            return
        self._ended(task.tp, queue)

    def release_orphan(self, task: Sequence[Record]) -> None:
        """A batch of a closed assignment of its partition ended: free the partition (its
        current queue, if it came back)."""
        assert isinstance(task, MessageBatch)
        tp = task.tp
        running = self._orphans.get(tp)
        if not running:
            return
        if running == 1:
            del self._orphans[tp]
        else:
            self._orphans[tp] = running - 1
        queue = self._queues.get(tp)
        if queue is not None and self.exclusive:
            self._ended(tp, queue)

    def _ended(self, tp: PartitionKey, queue: RunQueue) -> None:
        before = self._startable(queue)
        queue.busy -= 1
        startable = self._startable(queue)
        if startable:
            self.ready += startable - before
            self._schedule(tp)

    def next_task(self, size: int, now: float = 0.0) -> MessageBatch | None:
        """The next batch (up to ``size`` messages of one partition), partitions in turn;
        None if none may start now (nothing ready, or every partition lingers)."""
        self.lingering_until = None
        turn = self._turn
        for _ in range(len(turn)):
            tp = turn.popleft()
            queue = self._queues.get(tp)
            before = 0 if queue is None else self._startable(queue)
            if not before:
                self._scheduled.discard(tp)
                continue
            assert queue is not None
            if self._lingers(tp, queue.held, queue.since, size, now):
                continue
            messages = queue.take(size)
            self.held -= len(messages)
            queue.busy += 1
            startable = self._startable(queue)
            self.ready += startable - before
            if startable:
                turn.append(tp)
            else:
                self._scheduled.discard(tp)
            if not queue.held:
                self.starving += 1
            return MessageBatch(messages, tp)
        return None
