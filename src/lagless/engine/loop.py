"""The engine: the poll loop and the run's lifecycle, over parts it owns and calls.

Each turn reads like the algorithm::

    poll      intake: fetch records, offer each run to its partition (full: keep it, pause)
    collect   completions: drain the inbox; mark records done in their partition's tracker
    dispatch  launcher: start ready tasks on the workers, up to max_in_flight
    commit    offsets: when the policy says so, per partition the first unfinished offset
    flow      intake: offer kept records again; resume partitions that drained
    watch     watch: metrics, lag, stalled records, progress

Rebalance callbacks (:class:`~lagless.engine.partitions.rebalance.Rebalance`) run inside
``poll`` on this same thread. Workers never touch the consumer; they hand back completions
through a thread-safe inbox. The parts hold no reference to the engine: each is built here
with what it needs (see docs/engine.md, "Structure").
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from typing import Any

from confluent_kafka import Consumer, KafkaException, TopicPartition

from lagless.engine.config import EngineConfig
from lagless.engine.dispatch.fast_path import FastPath
from lagless.engine.dispatch.launcher import DispatchParts, Launcher
from lagless.engine.dispatch.strategy import PerRecord, strategy_for
from lagless.engine.events import EventKind, EventLog
from lagless.engine.handlers import BatchHandler, Handler
from lagless.engine.intake.client import engine_consumer
from lagless.engine.intake.poll import Intake
from lagless.engine.intake.topics import check_topics_exist
from lagless.engine.lifecycle import Lifecycle
from lagless.engine.offsets.commits import OffsetLedger
from lagless.engine.offsets.policy import CommitPolicy
from lagless.engine.partitions.owned import Owned
from lagless.engine.partitions.rebalance import Rebalance
from lagless.engine.partitions.state import DLQ, OK, SKIPPED
from lagless.engine.results.completions import Completions
from lagless.engine.results.dlq import FLUSH_S as DLQ_FLUSH_S
from lagless.engine.results.dlq import DeadLetterQueue
from lagless.engine.results.ledger import Ledger
from lagless.engine.results.publish import Publisher
from lagless.engine.status import InstanceStatus, snapshot
from lagless.engine.summary import LatencyLog, ProgressFn, RunSummary, Timing
from lagless.engine.tally import Tally
from lagless.engine.watch.ends import PausedEnds
from lagless.engine.watch.gauges import Watch
from lagless.engine.watch.health import Health
from lagless.engine.watch.idle import consumed_to_end
from lagless.engine.watch.settle import Settling, empty_floor_s
from lagless.engine.workers.factory import make_workers
from lagless.engine.workers.inbox import new_inbox
from lagless.engine.workers.protocol import Workers
from lagless.engine.workers.retry import RetryPolicy
from lagless.engine.workers.threads import ThreadWorkers
from lagless.kafka.offsets import LatestStarts
from lagless.observe.metrics import Metrics

__all__ = ["Engine", "ProgressFn"]

log = logging.getLogger(__name__)

BUSY_WAIT_S = 0.005  # wait for a completion when a poll brought nothing

# consumers left open on purpose (leave_group_on_close=False): never destroyed in this process
UNCLOSED: list[Consumer] = []


class Engine:
    """One run of the consumer engine; :meth:`run` blocks until a stop condition.

    ``Engine(conf, config, handler, metrics=None, stop=None, on_progress=None)``.
    """

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
    ) -> None:
        self.config = config
        self.health = Health()
        self.metrics = metrics = metrics or Metrics(group=config.group)
        self._conf = dict(conf)
        self._handler = handler
        self._stop = stop or threading.Event()
        self._records = ledger
        self._poll_thread: threading.Thread | None = None  # the one running the loop
        self._consumer: Consumer | None = None
        self._workers: Workers | None = None
        self._latency = LatencyLog()
        publisher = Publisher(self._latency)  # finished records' metrics, in bulk
        self.publisher = publisher
        self.settling = Settling()  # the member's join state, for until_idle_s
        self.owned = owned = Owned()
        self.lifecycle = lifecycle = Lifecycle(events, self.health)
        policy = CommitPolicy(config.commit_interval_s, config.commit_every)
        self.tally = tally = Tally(policy)
        self.strategy = strategy = strategy_for(config)
        self.watch = Watch(
            config, metrics, owned, tally, lifecycle, publisher, on_progress, PausedEnds(conf)
        )
        self.intake = Intake(config, metrics, owned, strategy, tally, lifecycle, self.watch.soon)
        self.offsets = OffsetLedger(config, metrics, policy, owned, tally, lifecycle, ledger)
        self.completions = Completions(
            config, metrics, new_inbox(), owned, strategy, tally, lifecycle, publisher, ledger
        )
        self._dispatch_parts = DispatchParts(
            config, owned, strategy, tally, lifecycle, self.offsets, self.completions
        )
        self.launcher = Launcher(self._dispatch_parts)
        self.rebalance = Rebalance(
            config, metrics, owned, strategy, self.offsets, self.intake, self.completions,
            self.launcher, self.settling, tally, lifecycle,
            LatestStarts(conf) if config.auto_offset_reset == "latest" else None,
        )  # fmt: skip

    @property
    def processed(self) -> int:
        return self.tally.processed

    def status(self) -> InstanceStatus:
        """A snapshot of this instance: owned partitions (epoch, since when, position, first
        unfinished offset, in flight, paused) and the run's counts. Safe from any thread."""
        return snapshot(self.owned, self.tally, self.lifecycle)

    # -- the loop -------------------------------------------------------------------------

    def run(self) -> RunSummary:
        """Consume until a stop condition; drain, commit and close. Raises on failure."""
        config, lifecycle = self.config, self.lifecycle
        self._poll_thread = threading.current_thread()
        self.tally.timing = Timing(time.monotonic())
        self._workers = workers = make_workers(
            config.processes,
            config.max_in_flight,
            self._handler,
            config.batch_size is not None,
            RetryPolicy(config.retries, config.retry_backoff_s, config.retry_backoff_max_s),
            self.completions.inbox,
            inline=config.inline,
        )
        self.launcher.start(workers)
        if (
            isinstance(workers, ThreadWorkers)
            and workers.inlines
            and isinstance(self.strategy, PerRecord)
        ):
            self.intake.fast_path = FastPath(self._dispatch_parts, workers)
        try:
            if config.dlq_topic is not None:
                self.completions.dlq = DeadLetterQueue(
                    self._conf, config.dlq_topic, self.completions.inbox
                )
            consumer_conf = config.consumer_conf(
                {**self._conf, "on_commit": self.offsets.on_commit}
            )
            if config.until_idle_s is not None:  # the join state, from librdkafka's statistics
                consumer_conf = self.settling.conf(consumer_conf, config.until_idle_s)
            self._consumer = consumer = engine_consumer(consumer_conf)
            self.intake.consumer = self.offsets.consumer = self.watch.consumer = consumer
            check_topics_exist(consumer, config.topics, config.dlq_topic)
            rebalance = self.rebalance
            consumer.subscribe(
                list(config.topics),
                on_assign=rebalance.on_assign,
                on_revoke=rebalance.on_revoke,
                on_lost=rebalance.on_lost,
            )
            lifecycle.emit(EventKind.SUBSCRIBED)
            lifecycle.started = lifecycle.last_activity = time.monotonic()
            self.offsets.policy.start(lifecycle.started)
            self._loop()
            self._shutdown()
        finally:
            self._close()
        if lifecycle.failure is not None:
            raise lifecycle.failure
        return self.summary()

    def _loop(self) -> None:
        intake, launcher, completions = self.intake, self.launcher, self.completions
        offsets, watch, lifecycle, tally = self.offsets, self.watch, self.lifecycle, self.tally
        health = self.health
        while not self._should_stop():
            turn = time.monotonic()
            health.turned(turn)
            if not lifecycle.ready_emitted and health.is_ready(turn):
                lifecycle.ready_emitted = True
                lifecycle.emit(EventKind.READY)
            wanted = launcher.wants_records(intake.last_poll)
            polled = intake.poll(launcher.poll_timeout()) if wanted else 0
            completions.collect(wait=0.0 if polled or not tally.in_flight else BUSY_WAIT_S)
            launcher.dispatch()
            offsets.commit_if_due()
            intake.flow_control()
            watch.watch()

    def _should_stop(self) -> bool:
        if self.lifecycle.failure is not None or self._stop.is_set():
            return True
        count = self.config.count
        if count is not None and self.tally.processed >= count:
            return True
        idle_s = self.config.until_idle_s
        return idle_s is not None and self._idle(idle_s, time.monotonic())

    def _idle(self, idle_s: float, now: float) -> bool:
        """Idle for ``idle_s`` (see :mod:`lagless.engine.watch.idle`): nothing held or
        running, settled in the group (:mod:`lagless.engine.watch.settle`), and everything
        assigned consumed to its end; with nothing assigned, settled so for at least two
        heartbeats."""
        owned, lifecycle = self.owned, self.lifecycle
        if self.tally.in_flight or owned.holding():
            return False
        settled = self.settling.steady_for(now)
        if not owned.states:
            lifecycle.last_activity = now  # partitions that come count their idle time afresh
            return self.settling.joined and settled >= max(idle_s, empty_floor_s(self.config))
        if settled < idle_s or now - lifecycle.last_activity < idle_s:
            return False
        assert self._consumer is not None
        latest = self.config.auto_offset_reset == "latest"
        known = {key: state.tracker.committable for key, state in owned.states.items()}
        if not consumed_to_end(self._consumer, known, latest):
            return False
        return not self.offsets.unconfirmed(now)

    # -- stop -----------------------------------------------------------------------------

    def request_stop(self) -> None:
        """Stop gracefully (as setting the ``stop`` event does): drain, commit, close."""
        self._stop.set()

    @property
    def stopping_requested(self) -> bool:
        return self._stop.is_set()

    def hurry(self) -> None:
        """Stop at once (a second Ctrl-C): no waiting for in-flight records; what finished
        is committed, what still runs is abandoned (re-run by the next owner).

        Called by a signal handler on the poll thread while a batch's first call runs there
        (see :mod:`lagless.engine.workers.inline`), it raises ``KeyboardInterrupt`` into that
        call, which the engine raises in turn after committing what finished: a call that
        hangs cannot hold the stop."""
        self.lifecycle.hurry = True
        self._stop.set()
        workers = self._workers
        if (
            isinstance(workers, ThreadWorkers)
            and workers.calling_here
            and threading.current_thread() is self._poll_thread
        ):
            workers.interrupting = True
            raise KeyboardInterrupt

    @property
    def hurried(self) -> bool:
        return self.lifecycle.hurry

    def _shutdown(self) -> None:
        """Stop taking records, let in-flight ones finish (up to the budget), commit."""
        consumer, workers, owned = self._consumer, self._workers, self.owned
        assert consumer is not None and workers is not None
        positions = self.offsets.positions()  # before any poll drops records (see skip_gaps)
        self._begin_stopping()
        workers.abort()
        if owned.states:
            try:
                consumer.pause([TopicPartition(*k) for k in owned.states])
            except KafkaException as exc:
                log.debug("pause at shutdown: %s", exc)
        deadline = time.monotonic() + self.config.shutdown_budget_s
        while self.tally.in_flight or owned.busy():
            if self.lifecycle.hurry:
                log.warning("stopping at once: %d records abandoned", self.tally.in_flight)
                break
            if time.monotonic() >= deadline:
                log.warning(
                    "shutdown: %d records still running after the budget", self.tally.in_flight
                )
                break
            consumer.consume(self.config.poll_batch, 0.0)  # serve callbacks only
            self.completions.collect(wait=0.05)
        self.offsets.skip_gaps(positions)
        self.offsets.final_commit()
        self.watch.soon()  # the gauges' last word is the drained state, not a stale look
        self.watch.watch()

    def _begin_stopping(self) -> None:
        self.lifecycle.stopping = True
        self.health.stopping = True
        self.lifecycle.emit(EventKind.STOPPING)

    def _close(self) -> None:
        lifecycle, completions = self.lifecycle, self.completions
        dlq = completions.dlq
        if dlq is not None:  # dead letters delivered count before the last commit
            dlq.flush(DLQ_FLUSH_S)
            completions.collect(wait=0.0)
        if not lifecycle.stopping and self._consumer is not None:
            self._begin_stopping()
            try:  # an error ended the loop: what finished counts and is committed
                completions.collect(wait=0.0)
            except Exception as exc:  # never mask the error that got us here
                log.warning("collect after failure: %s", exc)
            try:
                self.offsets.commit(list(self.owned.states.values()), sync=True)
            except Exception as exc:
                log.warning("commit after failure: %s", exc)
        lifecycle.closing = True
        if self._workers is not None:
            self._workers.close(timeout=0.0 if lifecycle.hurry else 1.0)
        if dlq is not None:
            left = dlq.flush(DLQ_FLUSH_S)
            if left:
                log.warning("%d dead letters undelivered at close", left)
        if self._records is not None:
            self._records.flush()
        self.publisher.flush()
        self.watch.close(0.0 if lifecycle.hurry else 1.0)
        if self._consumer is not None:
            self._close_consumer(self._consumer)
        self.metrics.in_flight.set(0)
        self.metrics.paused_partitions.set(0)

    def _close_consumer(self, consumer: Consumer) -> None:
        """Close (leaving the group), or with ``leave_group_on_close=False`` keep the consumer
        open and referenced for good: closing or destroying it would send LeaveGroup. Its
        process must then exit without cleanup (``os._exit``), as ``lagless consume`` does, so
        that the member stops heartbeating and the coordinator expires its session."""
        config = self.config
        if not config.leave_group_on_close:
            UNCLOSED.append(consumer)
            self.lifecycle.emit(EventKind.STOPPED, left_group=False)
            return
        try:
            consumer.close()
        except (KafkaException, RuntimeError) as exc:
            log.warning("consumer close: %s", exc)
        # static members (group.instance.id) do not leave on close: their session holds the place
        self.lifecycle.emit(EventKind.STOPPED, left_group=config.static_id is None)

    def summary(self) -> RunSummary:
        """What the run did so far (the value :meth:`run` returns; after a failure too)."""
        tally = self.tally
        for state in self.owned.states.values():
            tally.partition_done(state)
        self.publisher.flush()
        processed = tally.processed
        return RunSummary(
            processed=processed,
            ok=tally.counts[OK],
            dlq=tally.counts[DLQ],
            skipped=tally.counts[SKIPPED],
            **RunSummary.figures(processed, tally.timing, time.monotonic()),
            commits=tally.commits,
            rebalances=tally.rebalances,
            pauses=tally.pauses,
            max_in_flight_seen=tally.max_in_flight_seen,
            inline_batches=0 if self._workers is None else self._workers.inlined,
            e2e_ms=self._latency.summary(),
            partitions_revoked=tally.revoked,
            partitions_lost=tally.lost,
            metadata_kept=self.offsets.metadata_kept,
            per_partition=dict(tally.per_partition),
        )
