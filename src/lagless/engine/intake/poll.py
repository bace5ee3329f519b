"""Intake: poll, split what came into per-partition runs, offer them; pause and resume.

A poll's messages are split into runs of one partition (:func:`partition_runs`: one C-level
call a message, no Python object per message). A run is offered to its partition as far as the
partition has room (:mod:`.backpressure`); a fast per-record handler runs what it can of it at
once (:mod:`lagless.engine.dispatch.fast_path`); what the dispatch strategy makes of the rest
(:mod:`lagless.engine.dispatch.strategy`: records for a per-record handler, the messages
themselves for a batch handler) is tracked and queued; what does not fit is kept and the
partition paused. Kept records are offered again, and paused partitions resumed, once they
drained (:meth:`Intake.flow_control`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition

from lagless.engine.config import EngineConfig
from lagless.engine.dispatch.fast_path import FastPath
from lagless.engine.dispatch.strategy import Strategy
from lagless.engine.events import EventKind
from lagless.engine.intake.backpressure import FlowControl
from lagless.engine.intake.messages import access, partition_runs
from lagless.engine.lifecycle import Lifecycle
from lagless.engine.partitions.owned import Owned
from lagless.engine.partitions.state import SKIPPED, PartitionState
from lagless.engine.tally import Tally
from lagless.errors import ClusterError
from lagless.observe.metrics import Metrics

log = logging.getLogger(__name__)


class Intake:
    """The poll step of the loop and the partitions' flow control (on the poll thread)."""

    def __init__(
        self,
        config: EngineConfig,
        metrics: Metrics,
        owned: Owned,
        strategy: Strategy,
        tally: Tally,
        lifecycle: Lifecycle,
        first_record: Callable[[], None],
    ) -> None:
        self._config = config
        self._metrics = metrics
        self._owned = owned
        self._strategy = strategy
        self._tally = tally
        self._lifecycle = lifecycle
        self._first_record_seen = first_record  # a partition's first record: gauges now
        self.flow = FlowControl(config.max_pending)
        self.consumer: Consumer | None = None  # set when the run starts
        self.fast_path: FastPath | None = None  # set when the run starts, if it applies
        self.last_poll = time.monotonic()
        self._reported_errors: set[tuple[int, str | None]] = set()

    def poll(self, timeout: float) -> int:
        """Fetch a batch and offer each run to its partition; how many messages came."""
        assert self.consumer is not None
        messages = self.consumer.consume(self._config.poll_batch, timeout)
        self.last_poll = time.monotonic()
        if not messages:
            return 0
        now = time.monotonic()
        self._lifecycle.last_activity = now
        if self._lifecycle.stopping:
            return len(messages)  # no longer ours: the next owner reads them from the commit
        count = len(messages)
        if any(map(access(messages[0]).error, messages)):
            messages = self._without_errors(messages)
        states, items_of = self._owned.states, self._strategy.items
        for run in partition_runs(messages, len(self._config.topics) == 1):
            head = run[0]
            state = states.get((head.topic(), head.partition()))  # type: ignore[arg-type]
            if state is None:
                continue  # not ours (any more): the next owner reads them from the commit
            if not state.consuming:
                self._first_record(state)
            state.position = (run[-1].offset() or 0) + 1
            marks = self.consumer.get_watermark_offsets(TopicPartition(*state.tp), cached=True)
            state.metrics.note_position(marks, state.position)  # position lag
            items = items_of(run)
            if state.backlog.kept:
                state.backlog.kept.extend(items)  # stay behind the records kept earlier
                continue
            admitted = self.offer(state, items, now)
            if admitted < len(items):
                state.backlog.kept.extend(items[admitted:])
                self.pause(state)
        return count

    def _without_errors(self, messages: list[Message]) -> list[Message]:
        """The records of a poll; errors reported (a fatal one raises)."""
        kept = []
        for msg in messages:
            err = msg.error()
            if err is None:
                kept.append(msg)
            else:
                self._consumer_error(err, msg)
        return kept

    def _first_record(self, state: PartitionState) -> None:
        """The first record of ``state``'s partition since it was assigned here."""
        state.consuming = True
        self._first_record_seen()  # the backlog found at assignment shows in short runs
        self._lifecycle.health.received()
        self._lifecycle.emit(EventKind.CONSUMING, (state.tp,))

    def offer(self, state: PartitionState, items: list[Any], now: float) -> int:
        """Hand fetched records (messages, with a batch handler) to their partition, as many
        as it has room for (see :mod:`.backpressure`); how many it took."""
        room = self.flow.room(state.tracker.pending)
        if room < len(items):
            items = items[:room]
        if not items:
            return 0
        timing = self._tally.timing
        if timing.first_received is None:
            timing.first_received = now
        taken = len(items)
        if self.fast_path is not None:  # a fast handler: on this thread at once
            rest: list[Any] = self.fast_path.run(state, items, now)
            if not rest:
                return taken
            items = rest
        skipped = self._strategy.offer(state, items, now)
        if skipped:
            self._tally.count(state, SKIPPED, skipped)
        return taken

    def _consumer_error(self, err: KafkaError, msg: Message) -> None:
        if err.fatal():
            raise ClusterError(f"consumer failed: {err.str()}")
        key = (err.code(), msg.topic())
        if key not in self._reported_errors:
            self._reported_errors.add(key)
            log.warning("consumer error on %s: %s", msg.topic(), err.str())

    # -- flow control ---------------------------------------------------------------------

    def pause(self, state: PartitionState) -> None:
        assert self.consumer is not None
        if state.backlog.paused:
            return
        self.consumer.pause([TopicPartition(*state.tp)])
        state.backlog.paused = True
        self._owned.paused.add(state.tp)
        self._tally.pauses += 1
        state.metrics.pauses.inc()
        self._metrics.paused_partitions.set(len(self._owned.paused))

    def resume(self, state: PartitionState) -> None:
        assert self.consumer is not None
        try:
            self.consumer.resume([TopicPartition(*state.tp)])
        except KafkaException as exc:
            log.debug("resume %s: %s", state.tp, exc)
        state.backlog.paused = False
        self._owned.paused.discard(state.tp)
        self._metrics.paused_partitions.set(len(self._owned.paused))

    def flow_control(self) -> None:
        """Offer kept records again; resume paused partitions that drained."""
        now = time.monotonic()
        states, flow = self._owned.states, self.flow
        for key in list(self._owned.paused):
            state = states[key]
            kept = state.backlog.kept
            if kept and not self._lifecycle.stopping:
                room = min(len(kept), flow.room(state.tracker.pending))
                self.offer(state, [kept.popleft() for _ in range(room)], now)
            if flow.may_resume(state.tracker.pending, state.backlog):
                self.resume(state)
