"""Starting tasks: the dispatch step of the loop, and how often to poll for more.

The launcher takes tasks from the strategy's dispatcher (:mod:`.strategy`) and submits them to
the workers while fewer than ``max_in_flight`` run; it also says when the loop should poll
(:meth:`Launcher.wants_records`) and how long a poll may wait (:meth:`Launcher.poll_timeout`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from lagless.engine.config import EngineConfig
from lagless.engine.dispatch.strategy import Strategy
from lagless.engine.intake.messages import partition_of
from lagless.engine.lifecycle import Lifecycle
from lagless.engine.offsets.commits import OffsetLedger
from lagless.engine.partitions.owned import Owned
from lagless.engine.results.completions import Completions
from lagless.engine.tally import Tally
from lagless.engine.workers.protocol import Workers

IDLE_POLL_S = 0.1  # poll timeout with nothing in flight
POLL_EVERY_S = 0.05  # poll at least this often, however much is buffered
POLL_SHORT_S = 0.005  # poll this often while a partition holds nothing and workers are free


def count_left(count: int | None, tally: Tally, owned: Owned) -> int | None:
    """How many more records may start under ``--count`` (None: no count): exactly N finish,
    so none starts that the count could not use (those finished, in flight, or failed with
    their dead letter on its way count)."""
    if count is None:
        return None
    pending_letters = sum(s.dead_letters for s in owned.states.values())
    return count - tally.processed - pending_letters - tally.in_flight


@dataclass(frozen=True)
class DispatchParts:
    """The engine's parts that starting tasks reads and updates: the launcher's, and the
    fast path's (:mod:`.fast_path`)."""

    config: EngineConfig
    owned: Owned
    strategy: Strategy
    tally: Tally
    lifecycle: Lifecycle
    offsets: OffsetLedger
    completions: Completions


class Launcher:
    """Hands tasks to the workers (on the poll thread)."""

    def __init__(self, parts: DispatchParts) -> None:
        self._config = parts.config
        self._owned = parts.owned
        self._strategy = parts.strategy
        self._tally = parts.tally
        self._lifecycle = parts.lifecycle
        self._offsets = parts.offsets
        self._completions = parts.completions
        self.workers: Workers | None = None  # set when the run starts (see start)
        self._chained = False  # a partition's batches in lanes of the workers
        self._limit = parts.config.max_in_flight  # tasks handed out at once (see start)

    def start(self, workers: Workers) -> None:
        self.workers = workers
        self._chained = self._strategy.chain(workers)
        self._limit = self._config.max_in_flight + workers.ahead

    def task_size(self) -> int:
        assert self.workers is not None
        return self._strategy.task_size(self.workers)

    def wants_records(self, last_poll: float) -> bool:
        """Poll when the workers may run short of records to start, else every POLL_EVERY_S
        (heartbeats do not depend on it: librdkafka sends them from its own thread).

        "Short": fewer records held and in flight than the larger of two per worker, one
        poll's worth and two tasks. Polling more would only fill the partitions' windows
        while the workers catch up, then pause them (a paused partition's prefetched records
        are dropped and fetched again). Each poll also hands the GIL to the worker threads and
        waits to get it back.
        """
        dispatcher = self._strategy.dispatcher
        limit, size = self._config.max_in_flight, self.task_size()
        enough = max(2 * limit, self._config.poll_batch, 2 * size)
        if dispatcher.held + self._tally.in_flight < enough:
            return True
        since = time.monotonic() - last_poll
        free = self._limit - self._tally.tasks
        if dispatcher.starving and dispatcher.ready < free * size:
            return since >= POLL_SHORT_S  # a partition holds nothing and workers are free
        return since >= POLL_EVERY_S

    def poll_timeout(self) -> float:
        """Do not wait in poll while records run or wait to start (``consume`` waits for a
        whole poll batch or the timeout), nor past a lingering batch's deadline."""
        if self._tally.in_flight:
            return 0.0
        dispatcher = self._strategy.dispatcher
        due = dispatcher.lingering_until
        if due is not None:
            return min(IDLE_POLL_S, max(0.0, due - time.monotonic()))
        return 0.0 if dispatcher.ready else IDLE_POLL_S

    def dispatch(self) -> None:
        """Start tasks while fewer than max_in_flight run, and the workers' ``ahead`` more
        wait for them (chained: each in its partition's lane, see
        :meth:`.strategy.PerBatch.chain`)."""
        workers, tally, lifecycle = self.workers, self._tally, self._lifecycle
        assert workers is not None
        limit = self._limit
        if tally.tasks >= limit or lifecycle.stopping or lifecycle.failure is not None:
            return
        now = time.monotonic()
        if self._offsets.holds_starts(now):
            return  # eager: a commit was refused, the revoke is coming (offsets.carry)
        size = self.task_size()
        states = self._owned.states
        left = count_left(self._config.count, tally, self._owned)
        submit, next_task = workers.submit, self._strategy.dispatcher.next_task
        chained, ran_here = self._chained, workers.ran_here
        most = self._config.max_in_flight  # handler calls at once: a task here is one more
        while tally.tasks < limit:
            if left is not None:
                if left <= 0:
                    break
                size = min(size, left)
            records = next_task(size, now)
            if records is None:
                break
            key = partition_of(records)
            state = states[key]
            here = tally.tasks < most  # else every thread may be running a task
            state.in_flight += len(records)
            tally.in_flight += len(records)
            tally.tasks += 1
            if left is not None:
                left -= len(records)
            submit(records, state.epoch, key if chained else None, here)
        running = min(tally.tasks, self._config.max_in_flight)  # the rest wait for a worker
        tally.max_in_flight_seen = max(tally.max_in_flight_seen, running)
        if workers.ran_here != ran_here:  # tasks ran here (workers.inline): done already
            self._completions.collect(wait=0.0)
