"""Following a pipeline's queries: progress lines, consumer-group commits, metrics.

Spark reports a finished micro-batch with ``onQueryProgress``; its source ``endOffset`` is what
the batch processed. The :class:`ProgressTracker` mirrors that into a Kafka consumer group
(``alter_consumer_group_offsets``; the group never has members), so ``lagless lag`` and any
Kafka lag tool see the pipeline's lag. The pipeline runs one query; given several queries over
the same topic, the group gets the per-partition minimum: an offset is committed once every
query has processed it. The checkpoint stays the source of truth: a failed commit is logged,
never fatal, and a restarted pipeline ignores the group.

The ``foreachBatch`` writer tells the tracker what each batch held (rows per partition, valid or
dead-lettered); the tracker updates :class:`~lagless.observe.metrics.Metrics` and hands a
:class:`BatchReport` to whoever prints progress.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql.streaming.listener import StreamingQueryListener

from lagless.errors import LaglessError
from lagless.kafka.admin import alter_committed_offsets
from lagless.kafka.offsets import PartitionKey
from lagless.observe.metrics import Metrics
from lagless.spark.connector.offsets import PartitionOffsets, from_json

log = logging.getLogger(__name__)

OK = "ok"
DLQ = "dlq"


@dataclass(frozen=True)
class PartitionCount:
    """Rows of one partition in one batch, by outcome, with their mean record time."""

    topic: str
    partition: int
    outcome: str
    rows: int
    mean_timestamp: float | None


@dataclass(frozen=True)
class BatchCounts:
    """What the ``foreachBatch`` writer saw in one micro-batch."""

    batch_id: int
    counts: tuple[PartitionCount, ...]
    written_at: float = field(default_factory=time.time)

    def rows(self, outcome: str | None = None) -> int:
        return sum(c.rows for c in self.counts if outcome is None or c.outcome == outcome)


@dataclass(frozen=True)
class BatchReport:
    """One finished micro-batch of the pipeline's query, for a progress line."""

    batch_id: int
    input_rows: int
    valid_rows: int
    dlq_rows: int
    duration_ms: int
    rows_per_s: float
    lag: int | None

    def line(self) -> str:
        lag = "?" if self.lag is None else f"{self.lag:,}"
        return (
            f"batch {self.batch_id}: {self.input_rows:,} rows ({self.valid_rows:,} valid, "
            f"{self.dlq_rows:,} to DLQ) in {self.duration_ms / 1000:.1f} s, "
            f"{self.rows_per_s:,.0f} rows/s, lag {lag}"
        )


@dataclass(frozen=True)
class Totals:
    batches: int
    input_rows: int
    valid_rows: int
    dlq_rows: int


def _offsets(text: Any) -> PartitionOffsets | None:
    """Offsets from a progress's JSON text (None when absent or not Kafka-shaped)."""
    if not text or text in {"None", "null"}:
        return None
    try:
        doc = json.loads(text) if isinstance(text, str) else text
        return from_json(doc)
    except (ValueError, TypeError, AttributeError):
        return None


def source_overhead_ms(progress: Any) -> int:
    """What a trigger spent in the source before any record was read: Spark's
    ``durationMs.latestOffset`` (the source's ``latestOffset``) + ``durationMs.getBatch``
    (planning the batch's partitions)."""
    durations = getattr(progress, "durationMs", None) or {}
    return int(durations.get("latestOffset", 0)) + int(durations.get("getBatch", 0))


def trigger_ms(progress: Any) -> int:
    """The whole trigger: Spark's ``durationMs.triggerExecution`` (from asking the source for
    offsets to the batch's commit). A run's time outside its triggers is what starting and
    stopping the query cost (Spark starting a Python source's runner, for one)."""
    durations = getattr(progress, "durationMs", None) or {}
    return int(durations.get("triggerExecution", 0))


class ProgressTracker:
    """Shared by the listener thread and the ``foreachBatch`` thread (hence the lock).

    :meth:`progress` runs whole under a second lock: the run's last pass over
    ``recentProgress`` must not return while the listener thread, having claimed a batch's
    report, has not yet handed it to ``on_batch``.
    """

    def __init__(
        self,
        metrics: Metrics,
        queries: Iterable[str],
        main_query: str,
        kafka: Mapping[str, Any],
        group: str | None = None,
        dlq_topic: str | None = None,
        on_batch: Callable[[BatchReport], None] | None = None,
    ) -> None:
        self.metrics = metrics
        self.queries = frozenset(queries)
        self.main_query = main_query
        self.kafka = dict(kafka)
        self.group = group
        self.dlq_topic = dlq_topic
        self.on_batch = on_batch
        self._lock = threading.Lock()
        self._progress_lock = threading.Lock()
        self._batches: dict[int, BatchCounts] = {}
        self._reported: set[int] = set()
        self._ends: dict[str, PartitionOffsets] = {}
        self._latest: PartitionOffsets = {}
        self._committed: PartitionOffsets = {}
        self._totals = Totals(0, 0, 0, 0)
        self._source_ms: dict[int, int] = {}
        self._trigger_ms: dict[int, int] = {}

    # -- from the foreachBatch writer -------------------------------------------------------
    def batch_written(self, counts: BatchCounts) -> None:
        m = self.metrics
        with self._lock:
            replay = counts.batch_id in self._batches
            self._batches[counts.batch_id] = counts
            if not replay:
                t = self._totals
                self._totals = Totals(
                    t.batches + 1,
                    t.input_rows + counts.rows(),
                    t.valid_rows + counts.rows(OK),
                    t.dlq_rows + counts.rows(DLQ),
                )
        for c in counts.counts:
            m.records_processed.labels(c.topic, str(c.partition), c.outcome).inc(c.rows)
            if c.outcome == DLQ and self.dlq_topic is not None:
                m.dlq_records.labels(c.topic).inc(c.rows)  # the source topic, as in the engine
            if c.mean_timestamp is not None:
                m.e2e_latency.labels(c.topic).observe(
                    max(0.0, counts.written_at - c.mean_timestamp)
                )

    def totals(self) -> Totals:
        with self._lock:
            return self._totals

    # -- from the listener (and once more at the end) ----------------------------------------
    def progress(self, progress: Any) -> None:
        """Handle a ``StreamingQueryProgress`` of one of the pipeline's queries."""
        if progress.name not in self.queries:
            return
        with self._progress_lock:
            self._progress(progress)

    def _progress(self, progress: Any) -> None:
        name = progress.name
        ends: PartitionOffsets = {}
        latest: PartitionOffsets = {}
        for source in progress.sources:
            ends.update(_offsets(source.endOffset) or {})
            latest.update(_offsets(source.latestOffset) or {})
        report: BatchReport | None = None
        with self._lock:
            if ends:
                # Progress events may arrive late (listener bus): never move backwards.
                known = self._ends.get(name, {})
                self._ends[name] = {k: max(v, known.get(k, v)) for k, v in ends.items()}
            for key, offset in latest.items():
                self._latest[key] = max(offset, self._latest.get(key, offset))
                self.metrics.end_offset.labels(key[0], str(key[1])).set(self._latest[key])
            commit = self._to_commit()
            lag = self._lag(commit or self._committed)
            if name == self.main_query:
                self._source_ms[int(progress.batchId)] = source_overhead_ms(progress)
                self._trigger_ms[int(progress.batchId)] = trigger_ms(progress)
                report = self._report(progress, lag)
        if commit:
            self._commit(commit)
        if report is not None and self.on_batch is not None:
            self.on_batch(report)

    def _to_commit(self) -> PartitionOffsets | None:
        """Per-partition minimum over all queries, if every query reported and it moved."""
        if set(self._ends) != self.queries:
            return None
        keys = set.intersection(*(set(ends) for ends in self._ends.values()))
        target = {k: min(ends[k] for ends in self._ends.values()) for k in sorted(keys)}
        moved = any(offset > self._committed.get(k, -1) for k, offset in target.items())
        if not moved:
            return None
        target = {k: max(offset, self._committed.get(k, offset)) for k, offset in target.items()}
        self._committed = target
        return target

    def _lag(self, committed: Mapping[PartitionKey, int]) -> int | None:
        if not committed:
            return None
        total = 0
        for key, end in committed.items():
            lag = max(0, self._latest.get(key, end) - end)
            self.metrics.lag_records.labels(key[0], str(key[1])).set(lag)
            total += lag
        return total

    def _report(self, progress: Any, lag: int | None) -> BatchReport | None:
        batch_id = int(progress.batchId)
        counts = self._batches.get(batch_id)
        if counts is None or batch_id in self._reported:
            return None
        self._reported.add(batch_id)
        self.metrics.batches.inc()
        self.metrics.batch_seconds.set(float(progress.batchDuration) / 1000.0)
        return BatchReport(
            batch_id=batch_id,
            input_rows=counts.rows(),
            valid_rows=counts.rows(OK),
            dlq_rows=counts.rows(DLQ),
            duration_ms=int(progress.batchDuration),
            rows_per_s=float(progress.processedRowsPerSecond or 0.0),
            lag=lag,
        )

    def _commit(self, offsets: PartitionOffsets) -> None:
        if self.group is None:
            return
        try:
            alter_committed_offsets(self.kafka, self.group, offsets)
        except LaglessError as exc:
            log.warning("could not commit offsets to group %s: %s", self.group, exc)
            return
        self.metrics.commits.inc()
        log.debug("group %s committed %s", self.group, offsets)

    def source_ms(self) -> list[int]:
        """:func:`source_overhead_ms` of each micro-batch of the main query, in batch order."""
        with self._lock:
            return [self._source_ms[k] for k in sorted(self._source_ms)]

    def trigger_ms(self) -> list[int]:
        """:func:`trigger_ms` of each micro-batch of the main query, in batch order."""
        with self._lock:
            return [self._trigger_ms[k] for k in sorted(self._trigger_ms)]

    def committed(self) -> PartitionOffsets:
        with self._lock:
            return dict(self._committed)


class PipelineListener(StreamingQueryListener):
    """Forwards query progress to a :class:`ProgressTracker` (errors are logged, not raised:
    a listener must not break the query)."""

    def __init__(self, tracker: ProgressTracker) -> None:
        self.tracker = tracker

    def onQueryStarted(self, event: Any) -> None:  # noqa: N802
        log.debug("query %s started", event.name)

    def onQueryProgress(self, event: Any) -> None:  # noqa: N802
        try:
            self.tracker.progress(event.progress)
        except Exception:
            log.exception("progress handling failed")

    def onQueryIdle(self, event: Any) -> None:  # noqa: N802
        """Nothing new: no batch, nothing to commit."""

    def onQueryTerminated(self, event: Any) -> None:  # noqa: N802
        log.debug("query %s terminated", event.id)
