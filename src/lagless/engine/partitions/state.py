"""What the poll loop knows about one assigned partition, and its metric children."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import Gauge

from lagless.engine.intake.backpressure import Backlog
from lagless.engine.offsets.tracker import TrackerBase
from lagless.observe.metrics import Metrics

PartitionKey = tuple[str, int]

OK = "ok"
DLQ = "dlq"
SKIPPED = "skipped"


class PartitionGauge:
    """One partition's child of a gauge, made at its first value and removed when the
    partition leaves this consumer: absent while unknown or not ours, never a made-up 0."""

    __slots__ = ("_child", "_gauge", "_labels")

    def __init__(self, gauge: Gauge, labels: tuple[str, str]) -> None:
        self._gauge, self._labels = gauge, labels
        self._child: Any = None

    def set(self, value: float) -> None:
        child = self._child
        if child is None:
            child = self._child = self._gauge.labels(*self._labels)
        child.set(value)

    def remove(self) -> None:
        if self._child is not None:
            self._child = None
            with contextlib.suppress(KeyError):
                self._gauge.remove(*self._labels)


class PartitionMetrics:
    """The labelled metric children of one partition, looked up once."""

    def __init__(self, metrics: Metrics, topic: str, partition: int) -> None:
        labels = (topic, str(partition))
        self.finished = {
            outcome: metrics.records_processed.labels(*labels, outcome)
            for outcome in (OK, DLQ, SKIPPED)
        }
        self.pauses = metrics.pause_events.labels(*labels)
        self.lag_records = PartitionGauge(metrics.lag_records, labels)
        self.lag_seconds = PartitionGauge(metrics.lag_seconds, labels)
        self.oldest_age = PartitionGauge(metrics.oldest_unfinished_age, labels)
        self.end_offset = PartitionGauge(metrics.end_offset, labels)
        self.position_lag = PartitionGauge(metrics.position_lag_records, labels)
        self.e2e: Any = metrics.e2e_latency.labels(topic)
        self.processing: Any = metrics.processing_time.labels(topic)

    def clear_gauges(self) -> None:
        """The partition left this consumer: its gauges no longer apply (removed, not 0)."""
        for gauge in (
            self.lag_records, self.lag_seconds, self.oldest_age, self.end_offset,
            self.position_lag,
        ):  # fmt: skip
            gauge.remove()

    def note_position(self, marks: tuple[int, int] | None, position: int) -> None:
        """Position lag = log end (the high watermark ``marks[1]``: librdkafka's cached one, or
        the end asked of the cluster for a paused partition) - ``position`` (the offset the next
        poll returns), as Kafka's records-lag."""
        if marks and marks[1] >= 0 and position >= 0:
            self.position_lag.set(max(0, marks[1] - position))


@dataclass
class PartitionState:
    """One assigned partition: its tracker, flow state and counters.

    ``epoch`` is unique per assignment: a completion from an earlier assignment of the same
    partition (revoked, then assigned again) carries an older epoch and is ignored.
    """

    tp: PartitionKey
    epoch: int
    tracker: TrackerBase  # a PartitionTracker, or a RangeTracker for a batch handler
    metrics: PartitionMetrics
    backlog: Backlog = field(default_factory=Backlog)
    in_flight: int = 0
    dead_letters: int = 0  # dead letters sent, not yet acknowledged
    finished: int = 0
    last_commit: tuple[int, str] | None = None  # the last commit sent
    acked: tuple[int, str] | None = None  # the last commit the broker acknowledged
    last_timestamp_ms: int | None = None
    stall_logged: int | None = None
    consuming: bool = False  # a record arrived since the assignment
    carried: bool = False  # starts at an offset the group refused to commit: owed at once
    assigned_at: float = 0.0  # when it was assigned here (wall clock, seconds)
    position: int | None = None  # the consumer's position as the poll thread last saw it

    @property
    def busy(self) -> bool:
        """Records of this partition are running or their dead letters are on their way."""
        return self.in_flight > 0 or self.dead_letters > 0

    @property
    def commit_owed(self) -> bool:
        """Records finished here past the last commit sent (or read at the assignment), or
        that commit failed. A partition where nothing finished yet owes nothing (its first
        offset is not committed before a record of it finished), unless it starts at an
        offset carried from a commit the group refused (records of it finished before)."""
        base = self.tracker.committable
        if base is None:
            return False
        if self.last_commit is None:
            return self.finished > 0 or self.carried
        return self.last_commit[0] != base

    @property
    def commit_unconfirmed(self) -> bool:
        """A commit is owed, or the last one sent is not acknowledged yet (an asynchronous
        commit on its way, or one whose failure has not come back yet)."""
        return self.commit_owed or (self.last_commit is not None and self.last_commit != self.acked)

    @property
    def holds_nothing(self) -> bool:
        """Every record fetched here finished: none held by the tracker, kept back, running,
        or with its dead letter on the way."""
        return not self.tracker.pending and not self.backlog.kept and not self.busy
