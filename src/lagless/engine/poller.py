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

The steps live in parts by concept (``core`` holds the shared state): poll in ``intake``,
collect in ``completions``, commit in ``committing``, the rebalance callbacks in
``rebalance``, watch in ``watch``; dispatch, flow control and stop are here.
"""

from __future__ import annotations

import logging
import threading
import time

from confluent_kafka import Consumer, KafkaException

from lagless.engine import carry
from lagless.engine.committing import Committing
from lagless.engine.completions import Completing
from lagless.engine.core import ProgressFn, topic_partition
from lagless.engine.dlq import FLUSH_S as DLQ_FLUSH_S
from lagless.engine.dlq import DeadLetterQueue
from lagless.engine.events import EventKind
from lagless.engine.idle import consumed_to_end
from lagless.engine.intake import Intake
from lagless.engine.messages import partition_of
from lagless.engine.partition import DLQ, OK, SKIPPED, PartitionState
from lagless.engine.rebalance import Rebalancing
from lagless.engine.retry import RetryPolicy
from lagless.engine.runs import RunDispatcher
from lagless.engine.settle import empty_floor_s
from lagless.engine.summary import RunSummary, Timing
from lagless.engine.topics import check_topics_exist
from lagless.engine.watch import Watching
from lagless.engine.workers import ThreadWorkers, Workers, make_workers
from lagless.errors import ClusterError
from lagless.kafka.clients import make_consumer

__all__ = ["Engine", "ProgressFn"]

log = logging.getLogger(__name__)

IDLE_POLL_S = 0.1  # poll timeout with nothing in flight
BUSY_WAIT_S = 0.005  # wait for a completion when a poll brought nothing
POLL_EVERY_S = 0.05  # poll at least this often, however much is buffered
POLL_SHORT_S = 0.005  # poll this often while a partition holds nothing and workers are free
MAX_TASK = 500  # records per task of a per-record handler, at most


# consumers left open on purpose (leave_group_on_close=False): never destroyed in this process
UNCLOSED: list[Consumer] = []


class Engine(Intake, Rebalancing, Completing, Committing, Watching):
    """One run of the consumer engine; :meth:`run` blocks until a stop condition.

    ``Engine(conf, config, handler, metrics=None, stop=None, on_progress=None)``.
    """

    # -- the loop -------------------------------------------------------------------------

    def run(self) -> RunSummary:
        """Consume until a stop condition; drain, commit and close. Raises on failure."""
        config = self.config
        self._poll_thread = threading.current_thread()
        self._timing = Timing(time.monotonic())
        self._workers = make_workers(
            config.processes,
            config.max_in_flight,
            self._handler,
            config.batch_size is not None,
            RetryPolicy(config.retries, config.retry_backoff_s, config.retry_backoff_max_s),
            self._completions,
            inline=config.inline,
        )
        self._chained = self._chain_batches(self._workers)
        try:
            if config.dlq_topic is not None:
                self._dlq = DeadLetterQueue(self._conf, config.dlq_topic, self._completions)
            consumer_conf = config.consumer_conf({**self._conf, "on_commit": self._on_commit})
            if config.until_idle_s is not None:  # the join state, from librdkafka's statistics
                consumer_conf = self._settling.conf(consumer_conf, config.until_idle_s)
            self._consumer = make_consumer(consumer_conf)
            check_topics_exist(self._consumer, config.topics, config.dlq_topic)
            self._consumer.subscribe(
                list(config.topics),
                on_assign=self._on_assign,
                on_revoke=self._on_revoke,
                on_lost=self._on_lost,
            )
            self._emit(EventKind.SUBSCRIBED)
            self._started = self._last_activity = time.monotonic()
            self._policy.start(self._started)
            while not self._should_stop():
                turn = time.monotonic()
                self.health.turned(turn)
                if not self._ready_emitted and self.health.is_ready(turn):
                    self._ready_emitted = True
                    self._emit(EventKind.READY)
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
        return self.summary()

    def _should_stop(self) -> bool:
        if self._failure is not None or self._stop.is_set():
            return True
        count = self.config.count
        if count is not None and self.processed >= count:
            return True
        idle_s = self.config.until_idle_s
        return idle_s is not None and self._idle(idle_s, time.monotonic())

    def _idle(self, idle_s: float, now: float) -> bool:
        """Idle for ``idle_s`` (see :mod:`lagless.engine.idle`): nothing held or running,
        settled in the group (:mod:`lagless.engine.settle`), and everything assigned consumed
        to its end; with nothing assigned, settled so for at least two heartbeats."""
        if self._in_flight or any(s.tracker.pending or s.busy for s in self._states.values()):
            return False
        settled = self._settling.steady_for(now)
        if not self._states:
            self._last_activity = now  # partitions that come count their idle time afresh
            return self._settling.joined and settled >= max(idle_s, empty_floor_s(self.config))
        if settled < idle_s or now - self._last_activity < idle_s:
            return False
        assert self._consumer is not None
        latest = self.config.auto_offset_reset == "latest"
        known = {key: state.tracker.committable for key, state in self._states.items()}
        if not consumed_to_end(self._consumer, known, latest):
            return False
        return not self._commits_unconfirmed(now)

    def _commits_unconfirmed(self, now: float) -> bool:
        """Whether a commit is owed or not acknowledged yet. Idle otherwise, a member whose
        commits the broker refused for the rejoin bound (session + heartbeat: a rebalance is
        over by then) sends them once more, synchronously; refused again, it fails the run:
        exit 1, never 0 with what ran not committed."""
        unconfirmed = [s for s in self._states.values() if s.commit_unconfirmed]
        since = self._commit_failing_since
        if (
            unconfirmed
            and since is not None
            and now - since >= carry.rejoin_bound_s(self.config)
            and all(s.last_commit is None for s in unconfirmed)  # refused, none on its way
        ):
            if not self._commit_retrying(unconfirmed, time.monotonic() + carry.REVOKE_RETRY_S):
                return False  # accepted now: idle at the next turn
            self._fail(
                ClusterError(
                    f"--until-idle: every record ran, but the broker has refused this "
                    f"member's commits for {now - since:.0f} s ({carry.name(self._commit_error)}); "
                    "what finished since the last commit runs again next time"
                )
            )
        return bool(unconfirmed)

    # -- poll -----------------------------------------------------------------------------

    def _wants_records(self) -> bool:
        """Poll when the workers may run short of records to start, else every POLL_EVERY_S
        (heartbeats do not depend on it: librdkafka sends them from its own thread).

        "Short": fewer records held and in flight than the larger of two per worker, one
        poll's worth and two tasks. Polling more would only fill the partitions' windows
        while the workers catch up, then pause them (a paused partition's prefetched records
        are dropped and fetched again). Each poll also hands the GIL to the worker threads and
        waits to get it back.
        """
        dispatcher = self._dispatcher
        limit, size = self.config.max_in_flight, self._task_size()
        enough = max(2 * limit, self.config.poll_batch, 2 * size)
        if dispatcher.held + self._in_flight < enough:
            return True
        since = time.monotonic() - self._last_poll
        if dispatcher.starving and dispatcher.ready < (limit - self._tasks) * size:
            return since >= POLL_SHORT_S  # a partition holds nothing and workers are free
        return since >= POLL_EVERY_S

    def _poll_timeout(self) -> float:
        """Do not wait in poll while records run or wait to start (``consume`` waits for a
        whole poll batch or the timeout), nor past a lingering batch's deadline."""
        if self._in_flight:
            return 0.0
        dispatcher = self._dispatcher
        due = dispatcher.lingering_until
        if due is not None:
            return min(IDLE_POLL_S, max(0.0, due - time.monotonic()))
        return 0.0 if dispatcher.ready else IDLE_POLL_S

    # -- dispatch -------------------------------------------------------------------------

    def _task_size(self) -> int:
        """Records per task: the batch size, or for a per-record handler as many as take
        about the workers' task time (``task_s``) at the handler's measured pace."""
        batch = self.config.batch_size
        if batch is not None:
            return batch
        assert self._workers is not None
        pace = self._record_s
        if pace is None:
            return 1
        return max(1, min(MAX_TASK, int(self._workers.task_s / max(pace, 1e-7))))

    def _chain_batches(self, workers: Workers) -> bool:
        """Whether a partition's next batch is handed out behind the running one (see
        :mod:`lagless.engine.runs`): batches in ``partition``/``key`` order, on threads."""
        dispatcher, size = self._dispatcher, self.config.batch_size
        if not isinstance(dispatcher, RunDispatcher) or size is None or not workers.chains:
            return False
        dispatcher.chain(size)
        return dispatcher.exclusive

    def _dispatch(self) -> None:
        """Start tasks while fewer than max_in_flight run (chained: each in its partition's
        lane, see :meth:`_chain_batches`)."""
        assert self._workers is not None
        limit = self.config.max_in_flight
        if self._tasks >= limit or self._stopping or self._failure is not None:
            return
        if self._revoke_due_until and time.monotonic() < self._revoke_due_until:
            return  # eager: a commit was refused, the revoke is coming (engine.carry)
        size = self._task_size()
        left: int | None = None
        count = self.config.count
        if count is not None:  # start no more than --count can still use: exactly N finish
            pending_letters = sum(s.dead_letters for s in self._states.values())
            left = count - self.processed - pending_letters - self._in_flight
        now = time.monotonic()
        workers = self._workers
        submit, next_task, states = workers.submit, self._dispatcher.next_task, self._states
        chained, inlined = self._chained, workers.inlined
        while self._tasks < limit:
            if left is not None:
                if left <= 0:
                    break
                size = min(size, left)
            records = next_task(size, now)
            if records is None:
                break
            key = partition_of(records)
            state = states[key]
            state.in_flight += len(records)
            self._in_flight += len(records)
            self._tasks += 1
            if left is not None:
                left -= len(records)
            submit(records, state.epoch, key if chained else None)
        self._max_in_flight_seen = max(self._max_in_flight_seen, self._tasks)
        if workers.inlined != inlined:  # batches ran here (engine.inline): done already
            self._collect(wait=0.0)

    # -- flow control ---------------------------------------------------------------------

    def _pause(self, state: PartitionState) -> None:
        assert self._consumer is not None
        if state.backlog.paused:
            return
        self._consumer.pause([topic_partition(state.tp)])
        state.backlog.paused = True
        self._paused.add(state.tp)
        self._pauses += 1
        state.metrics.pauses.inc()
        self.metrics.paused_partitions.set(len(self._paused))

    def _resume(self, state: PartitionState) -> None:
        assert self._consumer is not None
        try:
            self._consumer.resume([topic_partition(state.tp)])
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
            if kept and not self._stopping:
                room = min(len(kept), self._flow.room(state.tracker.pending))
                self._offer(state, [kept.popleft() for _ in range(room)], now)
            if self._flow.may_resume(state.tracker.pending, state.backlog):
                self._resume(state)

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
        (see :mod:`lagless.engine.inline`), it raises ``KeyboardInterrupt`` into that call,
        which the engine raises in turn after committing what finished: a call that hangs
        cannot hold the stop."""
        self._hurry = True
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
        return self._hurry

    def _shutdown(self) -> None:
        """Stop taking records, let in-flight ones finish (up to the budget), commit."""
        assert self._consumer is not None and self._workers is not None
        positions = self._positions()  # before any poll drops records (see _skip_gaps)
        self._begin_stopping()
        self._workers.abort()
        if self._states:
            try:
                self._consumer.pause([topic_partition(k) for k in self._states])
            except KafkaException as exc:
                log.debug("pause at shutdown: %s", exc)
        deadline = time.monotonic() + self.config.shutdown_budget_s
        while self._in_flight or any(s.busy for s in self._states.values()):
            if self._hurry:
                log.warning("stopping at once: %d records abandoned", self._in_flight)
                break
            if time.monotonic() >= deadline:
                log.warning("shutdown: %d records still running after the budget", self._in_flight)
                break
            self._consumer.consume(self.config.poll_batch, 0.0)  # serve callbacks only
            self._collect(wait=0.05)
        self._skip_gaps(positions)
        self._final_commit()
        self._next_watch = 0.0  # the gauges' last word is the drained state, not a stale look
        self._watch()

    def _begin_stopping(self) -> None:
        self._stopping = True
        self.health.stopping = True
        self._emit(EventKind.STOPPING)

    def _close(self) -> None:
        if self._dlq is not None:  # dead letters delivered count before the last commit
            self._dlq.flush(DLQ_FLUSH_S)
            self._collect(wait=0.0)
        if not self._stopping and self._consumer is not None:
            self._begin_stopping()
            try:  # an error ended the loop: what finished counts and is committed
                self._collect(wait=0.0)
            except Exception as exc:  # never mask the error that got us here
                log.warning("collect after failure: %s", exc)
            try:
                self._commit(list(self._states.values()), sync=True)
            except Exception as exc:
                log.warning("commit after failure: %s", exc)
        self._closing = True
        if self._workers is not None:
            self._workers.close(timeout=0.0 if self._hurry else 1.0)
        if self._dlq is not None:
            left = self._dlq.flush(DLQ_FLUSH_S)
            if left:
                log.warning("%d dead letters undelivered at close", left)
        if self._ledger is not None:
            self._ledger.flush()
        self._publish.flush()
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
            self._emit(EventKind.STOPPED, left_group=False)
            return
        try:
            consumer.close()
        except (KafkaException, RuntimeError) as exc:
            log.warning("consumer close: %s", exc)
        # static members (group.instance.id) do not leave on close: their session holds the place
        self._emit(EventKind.STOPPED, left_group=config.static_id is None)

    def summary(self) -> RunSummary:
        """What the run did so far (the value :meth:`run` returns; after a failure too)."""
        for state in self._states.values():
            self._tally(state)
        self._publish.flush()
        processed = self.processed
        return RunSummary(
            processed=processed,
            ok=self._counts[OK],
            dlq=self._counts[DLQ],
            skipped=self._counts[SKIPPED],
            **RunSummary.figures(processed, self._timing, time.monotonic()),
            commits=self._commits,
            rebalances=self._rebalances,
            pauses=self._pauses,
            max_in_flight_seen=self._max_in_flight_seen,
            inline_batches=0 if self._workers is None else self._workers.inlined,
            e2e_ms=self._latency.summary(),
            partitions_revoked=self._revoked,
            partitions_lost=self._lost,
            metadata_kept=self._metadata_kept,
            per_partition=dict(self._per_partition),
        )
