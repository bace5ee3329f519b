"""The poll loop: the one thread that owns the consumer.

Each turn reads like the algorithm::

    poll      fetch records; offer each to its partition (MessageRejected -> keep it, pause)
    collect   drain the completion queue; mark records done in their partition's tracker
    dispatch  start ready records on the workers, up to max_in_flight
    commit    when the policy says so: per partition, the first unfinished offset + offset map
    flow      offer kept records again; resume partitions that drained
    watch     metrics, lag, stalled records, progress

Rebalance callbacks run inside ``poll`` on this same thread. Workers never touch the consumer;
they hand back completions through a thread-safe queue.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from queue import Empty, SimpleQueue
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition

from lagless.engine import offset_map
from lagless.engine.backpressure import FlowControl, MessageRejected
from lagless.engine.commit import CommitPolicy
from lagless.engine.config import EngineConfig, OnFailure
from lagless.engine.dlq import DeadLettered, DeadLetterQueue
from lagless.engine.handlers import Handler
from lagless.engine.ordering import Dispatcher
from lagless.engine.partition import (
    DLQ,
    OK,
    SKIPPED,
    PartitionKey,
    PartitionMetrics,
    PartitionState,
)
from lagless.engine.record import Record
from lagless.engine.retry import Outcome, RetryPolicy
from lagless.engine.summary import LatencyLog, Progress, RunSummary
from lagless.engine.tracker import Arrival, PartitionTracker
from lagless.engine.workers import Completion, Workers, make_workers
from lagless.errors import ClusterError, LaglessError, RecordError
from lagless.kafka.clients import make_consumer
from lagless.observe.metrics import Metrics

log = logging.getLogger(__name__)

ProgressFn = Callable[[Progress], None]

IDLE_POLL_S = 0.1  # poll timeout with nothing in flight
BUSY_WAIT_S = 0.005  # wait for a completion when a poll brought nothing
WATCH_EVERY_S = 0.5
POLL_EVERY_S = 0.05  # poll at least this often, however much is buffered
POLL_SHORT_S = 0.005  # poll this often while a partition holds nothing and workers are free


def _tp(key: PartitionKey) -> TopicPartition:
    return TopicPartition(key[0], key[1])


class Engine:
    """One run of the consumer engine; :meth:`run` blocks until a stop condition."""

    def __init__(
        self,
        conf: Mapping[str, Any],
        config: EngineConfig,
        handler: Handler,
        metrics: Metrics | None = None,
        stop: threading.Event | None = None,
        on_progress: ProgressFn | None = None,
    ) -> None:
        self.config = config
        self._conf = dict(conf)
        self._handler = handler
        self.metrics = metrics or Metrics()
        self._stop = stop or threading.Event()
        self._on_progress = on_progress
        self._completions: SimpleQueue[object] = SimpleQueue()
        self._dispatcher = Dispatcher(config.ordering)
        self._flow = FlowControl(config.max_pending)
        self._policy = CommitPolicy(config.commit_interval_s, config.commit_every)
        self._states: dict[PartitionKey, PartitionState] = {}
        self._paused: set[PartitionKey] = set()
        self._latency = LatencyLog()
        self._epoch = 0
        self._in_flight = 0
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
        self._closing = False
        self._started = time.monotonic()
        self._last_activity = self._started
        self._next_watch = self._started
        self._last_poll = self._started
        self._reported_errors: set[tuple[int, str | None]] = set()
        self._consumer: Consumer | None = None
        self._workers: Workers | None = None
        self._dlq: DeadLetterQueue | None = None

    # -- the loop -------------------------------------------------------------------------

    def run(self) -> RunSummary:
        """Consume until a stop condition; drain, commit and close. Raises on failure."""
        config = self.config
        self._workers = make_workers(
            config.processes,
            config.max_in_flight,
            self._handler,
            RetryPolicy(config.retries, config.retry_backoff_s, config.retry_backoff_max_s),
            self._completions,
        )
        try:
            if config.dlq_topic is not None:
                self._dlq = DeadLetterQueue(self._conf, config.dlq_topic, self._completions)
            self._consumer = make_consumer(
                config.consumer_conf({**self._conf, "on_commit": self._on_commit})
            )
            self._consumer.subscribe(
                list(config.topics),
                on_assign=self._on_assign,
                on_revoke=self._on_revoke,
                on_lost=self._on_lost,
            )
            self._started = self._last_activity = time.monotonic()
            self._policy.start(self._started)
            while not self._should_stop():
                polled = self._poll() if self._wants_records() else 0
                self._collect(wait=0.0 if polled or not self._in_flight else BUSY_WAIT_S)
                self._dispatch()
                self._commit_if_due()
                self._flow_control()
                self._watch()
            self._shutdown()
        finally:
            self._close()
        if self._failure is not None:
            raise self._failure
        return self._summary()

    def _should_stop(self) -> bool:
        if self._failure is not None or self._stop.is_set():
            return True
        count = self.config.count
        if count is not None and self.processed >= count:
            return True
        idle_s = self.config.until_idle_s
        if idle_s is None:
            return False
        if self._in_flight or any(s.tracker.pending or s.busy for s in self._states.values()):
            return False
        if not self._rebalances:  # idleness counts from joining the group (first assignment)
            return False
        return time.monotonic() - self._last_activity >= idle_s

    @property
    def processed(self) -> int:
        return sum(self._counts.values())

    # -- poll -----------------------------------------------------------------------------

    def _wants_records(self) -> bool:
        """Poll when the workers may run short of records to start, else every POLL_EVERY_S
        (heartbeats do not depend on it: librdkafka sends them from its own thread).

        Each poll hands the GIL to the worker threads and waits to get it back; skipping polls
        while enough records are ready keeps the loop's share of the GIL for the records.
        """
        dispatcher = self._dispatcher
        if dispatcher.held < 2 * self.config.max_in_flight:
            return True
        since = time.monotonic() - self._last_poll
        if dispatcher.starving and dispatcher.ready < self.config.max_in_flight - self._in_flight:
            return since >= POLL_SHORT_S  # a partition holds nothing and workers are free
        return since >= POLL_EVERY_S

    def _poll(self) -> int:
        """Fetch a batch and offer each record to its partition; how many came."""
        assert self._consumer is not None
        busy = self._in_flight > 0
        messages = self._consumer.consume(self.config.poll_batch, 0.0 if busy else IDLE_POLL_S)
        self._last_poll = time.monotonic()
        if not messages:
            return 0
        now = time.monotonic()
        self._last_activity = now
        for msg in messages:
            err = msg.error()
            if err is not None:
                self._consumer_error(err, msg)
                continue
            state = self._states.get((msg.topic() or "", msg.partition() or 0))
            if state is None or self._stopping:
                continue  # not (or no longer) ours: the next owner reads it from the commit
            if state.backlog.kept:
                state.backlog.kept.append(msg)  # stay behind the records kept earlier
                continue
            try:
                self._offer(state, msg, now)
            except MessageRejected:
                state.backlog.kept.append(msg)
                self._pause(state)
        return len(messages)

    def _offer(self, state: PartitionState, msg: Message, now: float) -> None:
        """Hand one fetched record to its partition; MessageRejected when it is full."""
        self._flow.admit(state.tracker.pending)
        record = Record.from_message(msg)
        arrival = state.tracker.receive(record.offset, now)
        if arrival is Arrival.STALE:
            return
        state.last_timestamp_ms = record.timestamp_ms
        if arrival is Arrival.DONE_BEFORE:
            self._count(state, SKIPPED)
            return
        self._dispatcher.push(record)

    def _consumer_error(self, err: KafkaError, msg: Message) -> None:
        if err.fatal():
            raise ClusterError(f"consumer failed: {err.str()}")
        key = (err.code(), msg.topic())
        if key not in self._reported_errors:
            self._reported_errors.add(key)
            log.warning("consumer error on %s: %s", msg.topic(), err.str())

    # -- collect --------------------------------------------------------------------------

    def _collect(self, wait: float) -> None:
        """Handle every completion waiting (waiting up to ``wait`` s for the first)."""
        if self._dlq is not None:
            self._dlq.poll()
        try:
            item = (
                self._completions.get(timeout=wait) if wait > 0 else self._completions.get_nowait()
            )
        except Empty:
            return
        self._last_activity = time.monotonic()
        while True:
            if isinstance(item, Completion):
                self._completed(item)
            elif isinstance(item, DeadLettered):
                self._dead_lettered(item)
            try:
                item = self._completions.get_nowait()
            except Empty:
                return

    def _current(self, record: Record, epoch: int) -> PartitionState | None:
        """The state ``record`` belongs to, None if its partition was revoked or lost since."""
        state = self._states.get((record.topic, record.partition))
        return state if state is not None and state.epoch == epoch else None

    def _completed(self, done: Completion) -> None:
        self._in_flight -= 1
        record = done.record
        state = self._current(record, done.epoch)
        if state is not None:
            state.in_flight -= 1
            self._dispatcher.release(record)
        if done.fatal is not None:
            self._fail(LaglessError(f"worker failed on {record.coordinates}: {done.fatal}"))
            return
        outcome = done.outcome
        if state is None or outcome is None or outcome.aborted:
            return  # not ours any more, or given up because we stop: re-run by the next owner
        state.metrics.processing.observe(outcome.seconds)
        if outcome.ok:
            self._finish(state, record, outcome, OK)
        elif self._dlq is not None:
            state.dead_letters += 1
            self._dlq.publish(record, done.epoch, outcome)
        else:
            log.warning(
                "%s failed after %d attempts: %s: %s",
                record.coordinates, outcome.attempts, outcome.error_class, outcome.error_message,
            )  # fmt: skip
            if self.config.on_failure is OnFailure.SKIP:
                self._finish(state, record, outcome, SKIPPED)
            else:
                self._fail(
                    RecordError(
                        f"handler failed after {outcome.attempts} attempts: "
                        f"{outcome.error_class}: {outcome.error_message}",
                        record.coordinates,
                    )
                )

    def _dead_lettered(self, letter: DeadLettered) -> None:
        state = self._current(letter.record, letter.epoch)
        if state is None:
            return
        state.dead_letters -= 1
        if letter.error is not None:  # not dead-lettered: stop, the record uncommitted
            self._fail(
                RecordError(
                    f"cannot write the dead letter to {self.config.dlq_topic!r} "
                    f"({letter.error}) of a record that failed: "
                    f"{letter.outcome.error_class}: {letter.outcome.error_message}",
                    letter.record.coordinates,
                )
            )
            return
        self.metrics.dlq_records.labels(letter.record.topic).inc()
        self._finish(state, letter.record, letter.outcome, DLQ)

    def _finish(self, state: PartitionState, record: Record, outcome: Outcome, kind: str) -> None:
        state.tracker.complete(record.offset)
        self._count(state, kind)
        if record.timestamp_ms is not None:
            ms = outcome.finished_at * 1000.0 - record.timestamp_ms
            self._latency.add(ms)
            state.metrics.e2e.observe(max(ms, 0.0) / 1000.0)

    def _count(self, state: PartitionState, kind: str) -> None:
        self._counts[kind] += 1
        state.finished += 1
        state.metrics.finished[kind].inc()
        self._policy.finished()

    def _fail(self, failure: LaglessError) -> None:
        if self._failure is None:
            self._failure = failure

    # -- dispatch -------------------------------------------------------------------------

    def _dispatch(self) -> None:
        """Start ready records while fewer than max_in_flight run."""
        assert self._workers is not None
        limit = self.config.max_in_flight
        while self._in_flight < limit and not self._stopping:
            record = self._dispatcher.next_ready()
            if record is None:
                break
            state = self._states[(record.topic, record.partition)]
            state.in_flight += 1
            self._in_flight += 1
            self._workers.submit(record, state.epoch)
        self._max_in_flight_seen = max(self._max_in_flight_seen, self._in_flight)

    # -- commit ---------------------------------------------------------------------------

    def _commit_if_due(self) -> None:
        if self._policy.due(time.monotonic()):
            self._commit(list(self._states.values()), sync=False)

    def _commit(self, states: Iterable[PartitionState], *, sync: bool) -> None:
        """Commit each partition's first unfinished offset (+ offset map) that changed."""
        assert self._consumer is not None
        self._policy.committed(time.monotonic())
        offsets: list[TopicPartition] = []
        marks: list[tuple[PartitionState, tuple[int, str]]] = []
        for state in states:
            base = state.tracker.committable
            if base is None:
                continue
            meta = state.tracker.offset_map() if self._metadata_kept is not False else ""
            if state.last_commit == (base, meta):
                continue
            offsets.append(TopicPartition(*state.tp, base, metadata=meta))
            marks.append((state, (base, meta)))
        if not offsets:
            return
        verify = self._metadata_kept is None and any(tp.metadata for tp in offsets)
        try:
            if sync or verify:
                result = self._consumer.commit(offsets=offsets, asynchronous=False)
            else:
                self._consumer.commit(offsets=offsets, asynchronous=True)
                result = []
        except KafkaException as exc:
            log.warning("commit of %d partitions failed: %s", len(offsets), exc.args[0])
            return
        failed = {(tp.topic, tp.partition) for tp in result if tp.error is not None}
        if failed:
            log.warning("commit failed for %s", sorted(failed))
        for state, mark in marks:
            if state.tp not in failed:
                state.last_commit = mark
        self._commits += 1
        self.metrics.commits.inc()
        if verify:
            self._check_metadata(offsets)

    def _on_commit(self, err: KafkaError | None, partitions: list[TopicPartition]) -> None:
        """Asynchronous commit results: on failure the next commit sends them again."""
        failed = [tp for tp in partitions if err is not None or tp.error is not None]
        if not failed:
            return
        if err is not None and err.code() == KafkaError._NO_OFFSET:
            return
        log.warning("commit failed for %d partitions: %s", len(failed), err or failed[0].error)
        for tp in failed:
            state = self._states.get((tp.topic, tp.partition))
            if state is not None:
                state.last_commit = None

    def _check_metadata(self, sent: list[TopicPartition]) -> None:
        """Read the first offset map back: does this broker keep commit metadata?"""
        assert self._consumer is not None
        wanted = {(tp.topic, tp.partition): tp.metadata for tp in sent if tp.metadata}
        try:
            back = self._consumer.committed([TopicPartition(t, p) for t, p in wanted], timeout=10)
        except KafkaException as exc:
            log.info("cannot read commit metadata back: %s", exc.args[0])
            return
        self._metadata_kept = all(tp.metadata == wanted[(tp.topic, tp.partition)] for tp in back)
        if not self._metadata_kept:
            log.warning(
                "the broker drops commit metadata: the offset map is not kept, so records "
                "completed above a committed offset are re-run after a restart "
                "(commits stay correct)"
            )

    # -- flow control ---------------------------------------------------------------------

    def _pause(self, state: PartitionState) -> None:
        assert self._consumer is not None
        if state.backlog.paused:
            return
        self._consumer.pause([_tp(state.tp)])
        state.backlog.paused = True
        self._paused.add(state.tp)
        self._pauses += 1
        state.metrics.pauses.inc()
        self.metrics.paused_partitions.set(len(self._paused))

    def _resume(self, state: PartitionState) -> None:
        assert self._consumer is not None
        try:
            self._consumer.resume([_tp(state.tp)])
        except KafkaException as exc:
            log.debug("resume %s: %s", state.tp, exc)
        state.backlog.paused = False
        self._paused.discard(state.tp)
        self.metrics.paused_partitions.set(len(self._paused))

    def _flow_control(self) -> None:
        """Offer kept records again; resume paused partitions that drained."""
        now = time.monotonic()
        for key in list(self._paused):
            state = self._states[key]
            kept = state.backlog.kept
            while kept and not self._stopping:
                try:
                    self._offer(state, kept[0], now)
                except MessageRejected:
                    break
                kept.popleft()
            if self._flow.may_resume(state.tracker.pending, state.backlog):
                self._resume(state)

    # -- watch ----------------------------------------------------------------------------

    def _watch(self) -> None:
        """Gauges, lag, stalled records and progress, about twice a second."""
        now = time.monotonic()
        if now < self._next_watch:
            return
        self._next_watch = now + WATCH_EVERY_S
        self.metrics.in_flight.set(self._in_flight)
        lag = self._update_lag()
        stall_s = self.config.stall_seconds
        for state in self._states.values():
            oldest = state.tracker.oldest_unfinished()
            age = now - oldest[1] if oldest is not None else 0.0
            state.metrics.oldest_age.set(age)
            if oldest is not None and age >= stall_s and state.stall_logged != oldest[0]:
                state.stall_logged = oldest[0]
                log.warning(
                    "%s[%d]@%d unfinished for %.0f s", state.tp[0], state.tp[1], oldest[0], age
                )
        if self._on_progress is not None:
            self._on_progress(
                Progress(
                    processed=self.processed,
                    dlq=self._counts[DLQ],
                    in_flight=self._in_flight,
                    paused=len(self._paused),
                    assigned=len(self._states),
                    lag_records=lag,
                    seconds=round(now - self._started, 3),
                )
            )

    def _update_lag(self) -> int:
        """Per-partition lag and the total: cached high watermark minus the first unfinished
        offset (what a commit now would store, so the same lag ``lagless lag`` and Kafka's own
        tools show), or minus the fetch position before anything was received."""
        assert self._consumer is not None
        if not self._states:
            return 0
        states = list(self._states.values())
        try:
            positions = self._consumer.position([_tp(s.tp) for s in states])
        except KafkaException:
            return 0
        total = 0
        now_ms = time.time() * 1000.0
        for state, pos in zip(states, positions, strict=True):
            marks = self._consumer.get_watermark_offsets(_tp(state.tp), cached=True)
            position = state.tracker.committable
            if position is None and pos.offset >= 0:
                position = pos.offset
            if not marks or marks[1] < 0 or position is None:
                continue
            lag = max(0, marks[1] - position)
            total += lag
            state.metrics.lag_records.set(lag)
            last_ts = state.last_timestamp_ms
            behind = (now_ms - last_ts) / 1000.0 if lag and last_ts is not None else 0.0
            state.metrics.lag_seconds.set(max(0.0, behind))
        return total

    # -- rebalances -----------------------------------------------------------------------

    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        started = time.monotonic()
        self._rebalances += 1
        self.metrics.rebalances.labels("assign").inc()
        fresh = [tp for tp in partitions if (tp.topic, tp.partition) not in self._states]
        committed = self._committed(consumer, fresh)
        for tp in fresh:
            key = (tp.topic, tp.partition)
            base, completed = committed.get(key, (None, frozenset()))
            self._epoch += 1
            self._states[key] = PartitionState(
                key,
                self._epoch,
                PartitionTracker(base, completed),
                PartitionMetrics(self.metrics, tp.topic, tp.partition),
            )
            self._dispatcher.open(key)
        if fresh:
            log.info("assigned %s", ", ".join(f"{tp.topic}[{tp.partition}]" for tp in fresh))
        self.metrics.partitions_assigned.inc(len(fresh))
        self.metrics.rebalance_seconds.observe(time.monotonic() - started)
        self._last_activity = time.monotonic()

    def _committed(
        self, consumer: Consumer, partitions: list[TopicPartition]
    ) -> dict[PartitionKey, tuple[int, frozenset[int]]]:
        """Committed offsets and the offset maps stored with them."""
        if not partitions:
            return {}
        try:
            back = consumer.committed([TopicPartition(tp.topic, tp.partition) for tp in partitions])
        except KafkaException as exc:
            log.warning("cannot read committed offsets: %s", exc.args[0])
            return {}
        out: dict[PartitionKey, tuple[int, frozenset[int]]] = {}
        for tp in back:
            if tp.error is not None or tp.offset < 0:
                continue
            decoded = offset_map.decode(tp.metadata)
            completed = (
                decoded[1] if decoded is not None and decoded[0] == tp.offset else frozenset()
            )
            if completed:
                log.info(
                    "%s[%d]: %d records above offset %d were completed by an earlier run",
                    tp.topic, tp.partition, len(completed), tp.offset,
                )  # fmt: skip
            out[(tp.topic, tp.partition)] = (tp.offset, completed)
        return out

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        """Stop dispatching, wait for in-flight records up to the budget, commit, release."""
        started = time.monotonic()
        self.metrics.rebalances.labels("revoke").inc()
        states = self._release([(tp.topic, tp.partition) for tp in partitions])
        if states:
            log.info("revoked %s", ", ".join(f"{s.tp[0]}[{s.tp[1]}]" for s in states))
        if not self._closing:
            deadline = started + self.config.revoke_budget_s
            while any(s.busy for s in states) and time.monotonic() < deadline:
                self._collect(wait=0.02)
                self._dispatch()
            unfinished = sum(s.in_flight for s in states)
            if unfinished:
                log.warning("revoke: %d records still running after the budget", unfinished)
            self._commit(states, sync=True)
        self._drop(states)
        self._revoked += len(states)
        self.metrics.partitions_revoked.inc(len(states))
        self.metrics.rebalance_seconds.observe(time.monotonic() - started)

    def _on_lost(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        """Partitions lost (another member may own them already): drop without commit."""
        self.metrics.rebalances.labels("lost").inc()
        states = self._release([(tp.topic, tp.partition) for tp in partitions])
        self._drop(states)
        self._lost += len(states)
        self.metrics.partitions_lost.inc(len(states))
        if states:
            log.warning("lost %d partitions without commit", len(states))

    def _release(self, keys: list[PartitionKey]) -> list[PartitionState]:
        """Stop dispatching ``keys``; their states, still registered for completions."""
        states = [self._states[k] for k in keys if k in self._states]
        for state in states:
            self._dispatcher.close(state.tp)
            if state.backlog.paused:
                self._resume(state)  # leave librdkafka's pause flag clean for a later owner
        return states

    def _drop(self, states: list[PartitionState]) -> None:
        for state in states:
            self._states.pop(state.tp, None)
            state.metrics.clear_gauges()
            self._tally(state)

    def _tally(self, state: PartitionState) -> None:
        name = f"{state.tp[0]}[{state.tp[1]}]"
        self._per_partition[name] = self._per_partition.get(name, 0) + state.finished
        state.finished = 0

    # -- stop -----------------------------------------------------------------------------

    def _shutdown(self) -> None:
        """Stop taking records, let in-flight ones finish (up to the budget), commit."""
        assert self._consumer is not None and self._workers is not None
        self._stopping = True
        self._workers.abort()
        if self._states:
            try:
                self._consumer.pause([_tp(k) for k in self._states])
            except KafkaException as exc:
                log.debug("pause at shutdown: %s", exc)
        deadline = time.monotonic() + self.config.shutdown_budget_s
        while self._in_flight or any(s.busy for s in self._states.values()):
            if time.monotonic() >= deadline:
                log.warning("shutdown: %d records still running after the budget", self._in_flight)
                break
            self._consumer.consume(self.config.poll_batch, 0.0)  # serve callbacks only
            self._collect(wait=0.05)
        self._commit(list(self._states.values()), sync=True)

    def _close(self) -> None:
        if self._dlq is not None:  # dead letters delivered count before the last commit
            self._dlq.flush(10.0)
            self._collect(wait=0.0)
        if not self._stopping and self._consumer is not None:
            try:  # an error ended the loop: still commit what is safe
                self._commit(list(self._states.values()), sync=True)
            except Exception as exc:  # never mask the error that got us here
                log.warning("commit after failure: %s", exc)
        self._closing = True
        if self._workers is not None:
            self._workers.close(timeout=1.0)
        if self._dlq is not None:
            left = self._dlq.flush(10.0)
            if left:
                log.warning("%d dead letters undelivered at close", left)
        if self._consumer is not None:
            try:
                self._consumer.close()
            except (KafkaException, RuntimeError) as exc:
                log.warning("consumer close: %s", exc)
        self.metrics.in_flight.set(0)
        self.metrics.paused_partitions.set(0)

    def _summary(self) -> RunSummary:
        for state in self._states.values():
            self._tally(state)
        seconds = max(time.monotonic() - self._started, 1e-9)
        processed = self.processed
        return RunSummary(
            processed=processed,
            ok=self._counts[OK],
            dlq=self._counts[DLQ],
            skipped=self._counts[SKIPPED],
            seconds=round(seconds, 3),
            records_per_s=round(processed / seconds, 1),
            commits=self._commits,
            rebalances=self._rebalances,
            pauses=self._pauses,
            max_in_flight_seen=self._max_in_flight_seen,
            e2e_ms=self._latency.summary(),
            partitions_revoked=self._revoked,
            partitions_lost=self._lost,
            metadata_kept=self._metadata_kept,
            per_partition=dict(self._per_partition),
        )
