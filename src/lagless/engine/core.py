"""The state the poll loop and its parts share: one :class:`EngineCore` per run.

The engine is one object on one thread (the poll thread), split by concept into parts that
each add the steps of one concept: ``completions`` (collect), ``committing`` (safe commits),
``rebalance`` (assign/revoke/lost callbacks), ``watch`` (gauges, lag, progress) and ``poller``
(the loop, poll, dispatch, flow control, stop). They share the fields set up here.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from confluent_kafka import Consumer, TopicPartition

from lagless.engine.backpressure import FlowControl
from lagless.engine.carry import Owed
from lagless.engine.commit import CommitPolicy
from lagless.engine.config import EngineConfig
from lagless.engine.dlq import DeadLetterQueue
from lagless.engine.events import EventKind, EventLog
from lagless.engine.handlers import BatchHandler, Handler
from lagless.engine.health import Health
from lagless.engine.inbox import new_inbox
from lagless.engine.ledger import Ledger
from lagless.engine.ordering import Dispatcher
from lagless.engine.partition import DLQ, OK, SKIPPED, PartitionKey, PartitionState
from lagless.engine.publish import Publisher
from lagless.engine.runs import RunDispatcher
from lagless.engine.settle import Settling
from lagless.engine.summary import LatencyLog, Progress, Timing
from lagless.engine.workers import Workers
from lagless.errors import LaglessError
from lagless.observe.instance import StatusBoard
from lagless.observe.metrics import Metrics

ProgressFn = Callable[[Progress], None]


def topic_partition(key: PartitionKey) -> TopicPartition:
    return TopicPartition(key[0], key[1])


class EngineCore:
    """The fields of one engine run and the helpers every part uses."""

    def __init__(
        self,
        conf: Mapping[str, Any],
        config: EngineConfig,
        handler: Handler | BatchHandler,
        metrics: Metrics | None = None,
        stop: threading.Event | None = None,
        on_progress: ProgressFn | None = None,
        *,
        events: EventLog | None = None,
        ledger: Ledger | None = None,
        status: StatusBoard | None = None,
    ) -> None:
        self.config = config
        self._status_board = status  # lagless ui: what this instance owns (observe.instance)
        self.health = Health()
        self._events = events
        self._ledger = ledger
        self._ready_emitted = False
        self._never_assigned_warned = False
        self._conf = dict(conf)
        self._handler = handler
        self.metrics = metrics or Metrics(group=config.group)
        self._stop = stop or threading.Event()
        self._on_progress = on_progress
        self._completions = new_inbox()
        self._batching = config.batch_size is not None  # a batch handler: see engine.intake
        linger_s = config.batch_linger_ms / 1000.0
        self._dispatcher: Dispatcher | RunDispatcher = (
            RunDispatcher(config.ordering, linger_s)
            if self._batching
            else Dispatcher(config.ordering, linger_s)
        )
        self._flow = FlowControl(config.max_pending)
        self._policy = CommitPolicy(config.commit_interval_s, config.commit_every)
        self._states: dict[PartitionKey, PartitionState] = {}
        self._paused: set[PartitionKey] = set()
        self._latency = LatencyLog()
        self._publish = Publisher(self._latency)  # finished records' metrics, in bulk
        self._epoch = 0
        self._in_flight = 0  # records dispatched, not finished
        self._tasks = 0  # tasks dispatched, not finished (handler calls running or queued)
        self._record_s: float | None = None  # a per-record handler's pace, seconds a record
        self._max_in_flight_seen = 0
        self._counts = {OK: 0, DLQ: 0, SKIPPED: 0}
        self._per_partition: dict[str, int] = {}
        self._commits = 0
        self._rebalances = 0
        self._pauses = 0
        self._revoked = 0
        self._lost = 0
        self._metadata_kept: bool | None = None
        self._failure: LaglessError | None = None
        self._stopping = False
        self._hurry = False  # stop at once: no drain, commit what is safe (a second Ctrl-C)
        self._closing = False
        self._started = time.monotonic()
        self._timing = Timing(self._started)  # the run's figures: see Timing
        self._last_activity = self._started
        self._next_watch = self._started
        self._last_poll = self._started
        self._reported_errors: set[tuple[int, str | None]] = set()
        self._commit_failures_logged: set[str] = set()  # kinds logged since the last rebalance
        self._carried: dict[PartitionKey, Owed] = {}  # revoked, not committed (engine.carry)
        self._commit_failing_since: float | None = None  # commits refused since (none accepted)
        self._commit_error: object = None  # the last refusal
        self._revoke_due_until = 0.0  # eager: a commit refused, the revoke comes (engine.carry)
        self._consumer: Consumer | None = None
        self._workers: Workers | None = None
        self._poll_thread: threading.Thread | None = None  # the one running the loop
        self._chained = False  # a partition's batches in lanes of the workers (see poller)
        self._dlq: DeadLetterQueue | None = None
        self._settling = Settling()  # the member's join state, for until_idle_s

    @property
    def processed(self) -> int:
        return sum(self._counts.values())

    def _count(
        self, state: PartitionState, kind: str, records: int = 1, *, metric: bool = True
    ) -> None:
        """``records`` of ``state``'s partition finished as ``kind``; ``metric=False``: their
        counter is published with their latencies (see :mod:`lagless.engine.publish`)."""
        self._counts[kind] += records
        state.finished += records
        if metric:
            state.metrics.finished[kind].inc(records)
        self._policy.finished(records)
        self._timing.last_finished = time.monotonic()

    def _emit(self, kind: EventKind, keys: Iterable[PartitionKey] = (), **extra: Any) -> None:
        if self._events is not None:
            self._events.emit(kind, keys, **extra)

    def _owned_changed(self) -> None:
        """The set of owned partitions changed: readiness starts over."""
        self.health.assignment(len(self._states), time.monotonic())
        self._ready_emitted = False

    def _fail(self, failure: LaglessError) -> None:
        if self._failure is None:
            self._failure = failure

    # -- steps of one part that another part calls (defined by the part) -------------------

    def _collect(self, wait: float) -> None:
        raise NotImplementedError

    def _dispatch(self) -> None:
        raise NotImplementedError

    def _commit(
        self, states: Iterable[PartitionState], *, sync: bool
    ) -> dict[PartitionKey, object]:
        raise NotImplementedError

    def _commit_retrying(
        self, states: list[PartitionState], deadline: float
    ) -> dict[PartitionKey, object]:
        raise NotImplementedError

    def _owed(self, state: PartitionState, error: object) -> Owed | None:
        raise NotImplementedError

    def _commit_accepted(self) -> None:
        raise NotImplementedError

    def _resume(self, state: PartitionState) -> None:
        raise NotImplementedError
