"""Poll intake: fetched messages become per-partition runs, offered to their partitions.

A poll's messages are split into runs of one partition (:func:`partition_runs`: one C-level
call a message, no Python object per message). A run is offered to its partition as far as the
partition has room (:mod:`backpressure`); what does not fit is kept and the partition paused.

Per-record handlers get :class:`Record` copies, tracked offset by offset
(:class:`PartitionTracker`) and queued in lanes (:class:`Dispatcher`). Batch handlers keep the
messages themselves: a run is one range of the :class:`RangeTracker` and one entry of its
partition's :class:`RunDispatcher` queue, and a batch is a :class:`MessageBatch` over them.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from confluent_kafka import KafkaError, Message

from lagless.engine.core import EngineCore, topic_partition
from lagless.engine.events import EventKind
from lagless.engine.messages import partition_runs
from lagless.engine.ordering import Dispatcher
from lagless.engine.partition import SKIPPED, PartitionState
from lagless.engine.ranges import RangeTracker
from lagless.engine.record import Record
from lagless.engine.runs import RunDispatcher
from lagless.engine.tracker import PartitionTracker
from lagless.errors import ClusterError
from lagless.kafka.records import timestamp_ms

log = logging.getLogger(__name__)

_error = Message.error
_from_message = Record.from_message


class Intake(EngineCore):
    """The poll step of the loop: fetch, split into runs, offer."""

    def _poll_timeout(self) -> float:
        raise NotImplementedError

    def _pause(self, state: PartitionState) -> None:
        raise NotImplementedError

    def _poll(self) -> int:
        """Fetch a batch and offer each run to its partition; how many messages came."""
        assert self._consumer is not None
        messages = self._consumer.consume(self.config.poll_batch, self._poll_timeout())
        self._last_poll = time.monotonic()
        if not messages:
            return 0
        now = time.monotonic()
        self._last_activity = now
        if self._stopping:
            return len(messages)  # no longer ours: the next owner reads them from the commit
        count = len(messages)
        if any(map(_error, messages)):
            messages = self._without_errors(messages)
        batching = self._batching
        for run in partition_runs(messages, len(self.config.topics) == 1):
            head = run[0]
            state = self._states.get((head.topic(), head.partition()))  # type: ignore[arg-type]
            if state is None:
                continue  # not ours (any more): the next owner reads them from the commit
            if not state.consuming:
                self._first_record(state)
            marks = self._consumer.get_watermark_offsets(topic_partition(state.tp), cached=True)
            state.metrics.note_position(marks, (run[-1].offset() or 0) + 1)
            items: list[Any] = run if batching else list(map(_from_message, run))
            if state.backlog.kept:
                state.backlog.kept.extend(items)  # stay behind the records kept earlier
                continue
            admitted = self._offer(state, items, now)
            if admitted < len(items):
                state.backlog.kept.extend(items[admitted:])
                self._pause(state)
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
        self._next_watch = 0.0  # gauges now: the backlog found at assignment shows in short runs
        self.health.received()
        self._emit(EventKind.CONSUMING, (state.tp,))

    def _offer(self, state: PartitionState, items: list[Any], now: float) -> int:
        """Hand fetched records (messages, with a batch handler) to their partition, as many
        as it has room for (see :mod:`backpressure`); how many it took."""
        room = self._flow.room(state.tracker.pending)
        if room < len(items):
            items = items[:room]
        if not items:
            return 0
        if self._batching:
            skipped, last_ms = self._offer_run(state, items, now), timestamp_ms(items[-1])
        else:
            skipped, last_ms = self._offer_records(state, items, now), items[-1].timestamp_ms
        if self._timing.first_received is None:
            self._timing.first_received = now
        state.last_timestamp_ms = last_ms
        if skipped:
            self._count(state, SKIPPED, skipped)
        return len(items)

    def _offer_records(self, state: PartitionState, records: list[Record], now: float) -> int:
        """Track and queue records for a per-record handler; how many were skipped."""
        tracker, dispatcher = state.tracker, self._dispatcher
        assert isinstance(tracker, PartitionTracker) and isinstance(dispatcher, Dispatcher)
        fresh, skipped = tracker.receive_many(
            [r.offset for r in records], now, [r.timestamp_ms for r in records]
        )
        if fresh is None:
            dispatcher.push_many(records, now)
        elif any(fresh):  # else all stale: re-deliveries, ignored
            dispatcher.push_many([r for r, new in zip(records, fresh, strict=True) if new], now)
        return skipped

    def _offer_run(self, state: PartitionState, messages: list[Message], now: float) -> int:
        """Track and queue a run for a batch handler; how many were skipped."""
        tracker, dispatcher = state.tracker, self._dispatcher
        assert isinstance(tracker, RangeTracker) and isinstance(dispatcher, RunDispatcher)
        if tracker.receive_run(messages, now):
            dispatcher.push_run(state.tp, messages, now)
            return 0
        fresh, skipped = tracker.receive_each(messages, now)
        dispatcher.push_run(state.tp, fresh, now)
        return skipped

    def _consumer_error(self, err: KafkaError, msg: Message) -> None:
        if err.fatal():
            raise ClusterError(f"consumer failed: {err.str()}")
        key = (err.code(), msg.topic())
        if key not in self._reported_errors:
            self._reported_errors.add(key)
            log.warning("consumer error on %s: %s", msg.topic(), err.str())
