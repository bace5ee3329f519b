"""Watch: gauges, lag, stalled records and progress, about twice a second."""

from __future__ import annotations

import logging
import time

from confluent_kafka import Consumer, KafkaException, TopicPartition

from lagless.engine.config import EngineConfig, OffsetReset
from lagless.engine.lifecycle import Lifecycle
from lagless.engine.partitions.owned import Owned
from lagless.engine.partitions.state import DLQ, PartitionState
from lagless.engine.results.publish import Publisher
from lagless.engine.summary import Progress, ProgressFn
from lagless.engine.tally import Tally
from lagless.engine.watch.ends import PausedEnds
from lagless.observe.lagtime import lag_seconds
from lagless.observe.metrics import Metrics

log = logging.getLogger(__name__)

WATCH_EVERY_S = 0.5
NEVER_ASSIGNED_WARN_S = 30.0  # say it when nothing was assigned for this long


def first_to_read(committed: int | None, marks: tuple[int, int] | None, reset: OffsetReset) -> int:
    """The offset a consumer's first poll of a partition returns, where librdkafka's position
    is not known yet (nothing returned since the assignment): the committed offset if it lies in
    the log, otherwise where ``auto.offset.reset`` puts it; -1 before the watermarks are known.
    An empty partition, or one read to its end before, keeps no position in librdkafka until a
    record arrives, yet its consumer is at its end: position lag 0, not no figure."""
    if not marks or marks[0] < 0 or marks[1] < 0:
        return -1
    low, high = marks
    if committed is not None and low <= committed <= high:
        return committed
    return low if reset == "earliest" else high


class Watch:
    """The watch step of the loop (on the poll thread)."""

    def __init__(
        self,
        config: EngineConfig,
        metrics: Metrics,
        owned: Owned,
        tally: Tally,
        lifecycle: Lifecycle,
        publisher: Publisher,
        on_progress: ProgressFn | None,
        ends: PausedEnds,
    ) -> None:
        self._config = config
        self._ends = ends  # paused partitions' log ends: their cached ones stop
        self._metrics = metrics
        self._owned = owned
        self._tally = tally
        self._lifecycle = lifecycle
        self._publish = publisher
        self._on_progress = on_progress
        self.consumer: Consumer | None = None  # set when the run starts
        self._next = time.monotonic()
        self._never_assigned_warned = False

    def close(self, wait: float) -> None:
        """Stop the background questions (see :class:`PausedEnds`)."""
        self._ends.close(wait)

    def soon(self) -> None:
        """Look at the next turn (not in up to half a second)."""
        self._next = 0.0

    def _warn_if_never_assigned(self, now: float) -> None:
        """Say once when the group has given this member nothing for a long while: a broker
        without KIP-848 never answers ``group.protocol=consumer``, a topic may have fewer
        partitions than the group has members."""
        if self._tally.rebalances or self._never_assigned_warned:
            return
        config = self._config
        waited = now - self._lifecycle.started
        limit = NEVER_ASSIGNED_WARN_S
        if config.group_protocol == "classic":
            limit = max(limit, 2.0 * config.session_timeout_ms / 1000.0)
        if waited < limit:
            return
        self._never_assigned_warned = True
        hint = (
            " (group.protocol=consumer: does the broker support KIP-848?)"
            if config.group_protocol == "consumer"
            else ""
        )
        log.warning("no partition assigned after %.0f s in group %s%s", waited, config.group, hint)

    def watch(self) -> None:
        """Gauges, lag, stalled records and progress, about twice a second."""
        now = time.monotonic()
        if now < self._next:
            return
        self._next = now + WATCH_EVERY_S
        self._publish.flush()
        self._warn_if_never_assigned(now)
        tally = self._tally
        self._metrics.in_flight.set(tally.in_flight)
        self._ends.want(frozenset(self._owned.paused))
        lag = self._update_lag()
        stall_s = self._config.stall_seconds
        for state in self._owned.states.values():
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
                    processed=tally.processed,
                    dlq=tally.counts[DLQ],
                    in_flight=tally.in_flight,
                    paused=len(self._owned.paused),
                    assigned=len(self._owned.states),
                    lag_records=lag,
                    seconds=round(now - self._lifecycle.started, 3),
                    records_per_s=self._live_rate(now),
                )
            )

    def _live_rate(self, now: float) -> float:
        """Records per second of processing so far (the live ``RunSummary.records_per_s``)."""
        first = self._tally.timing.first_received
        if first is None or now <= first:
            return 0.0
        return round(self._tally.processed / (now - first), 1)

    def _update_lag(self) -> int:
        """Per-partition lag and the total: cached high watermark minus the first unfinished
        offset (what a commit now would store, so the same lag ``lagless lag`` and Kafka's own
        tools show), or minus the fetch position before anything was received (where the
        first poll starts, :func:`first_to_read`, before that)."""
        consumer = self.consumer
        assert consumer is not None
        if not self._owned.states:
            return 0
        states = list(self._owned.states.values())
        try:
            positions = consumer.position([TopicPartition(*s.tp) for s in states])
        except KafkaException:
            return 0
        total = 0
        now_ms = time.time() * 1000.0
        for state, pos in zip(states, positions, strict=True):
            marks = self._log_marks(consumer, state)
            next_offset = pos.offset
            if next_offset < 0 and not state.consuming:  # nothing returned since assigned
                next_offset = first_to_read(
                    state.tracker.committable, marks, self._config.auto_offset_reset
                )
            state.metrics.note_position(marks, next_offset)
            if pos.offset >= 0:
                state.position = pos.offset  # for status(), read from any thread
            position = state.tracker.committable
            if position is None and next_offset >= 0:  # nothing fetched: where it starts
                position = next_offset
            if not marks or marks[1] < 0:
                continue
            state.metrics.end_offset.set(marks[1])
            if position is None:
                continue
            lag = max(0, marks[1] - position)
            total += lag
            state.metrics.lag_records.set(lag)
            head_ts = state.tracker.first_uncommitted_timestamp_ms()
            seconds = lag_seconds(int(now_ms), head_ts, lag)
            if seconds is not None:  # None: the next record is not fetched yet; keep the last
                state.metrics.lag_seconds.set(seconds)
        return total

    def _log_marks(self, consumer: Consumer, state: PartitionState) -> tuple[int, int] | None:
        """(low, high) watermarks of a partition as librdkafka caches them from fetches; for a
        paused one (not fetched), or one resumed a moment ago (not fetched yet), the high one
        is the cluster's latest answer where that is higher."""
        marks: tuple[int, int] | None = consumer.get_watermark_offsets(
            TopicPartition(*state.tp), cached=True
        )
        asked = self._ends.end(state.tp)
        if asked is not None and marks and asked > marks[1]:
            return marks[0], asked
        return marks
