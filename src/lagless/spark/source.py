"""The ``lagless-kafka`` readers: a streaming reader (with admission control and
``Trigger.AvailableNow``) and a batch reader.

Where each method runs:

- ``initialOffset``, ``latestOffset``, ``prepareForTriggerAvailableNow``, ``partitions``,
  ``reportLatestOffset``, ``commit`` and ``stop`` run on the driver, in one long-lived Python
  process per query: the reader keeps one :class:`~lagless.kafka.offsets.OffsetProbe` there
  (created on first use) and the AvailableNow target.
- ``read`` runs in Spark tasks on a copy of the reader on which only ``__init__`` ran, so
  ``__init__`` holds nothing but options and opens no connection; ``read`` makes its own
  consumer (:func:`lagless.spark.fetch.read_range`).

End offsets come only from the probe (fetch high watermarks), never from
``ListOffsets(LATEST)``. Offsets are returned in the canonical JSON form of
:mod:`lagless.spark.offsets`. The source commits nothing to Kafka: Spark's checkpoint is the
source of truth; the pipeline's listener mirrors progress into a consumer group for lag tools.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSourceReader,
    DataSourceStreamReader,
    InputPartition,
)
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from lagless.errors import ConfigError
from lagless.kafka.offsets import OffsetProbe, PartitionKey, PartitionRange
from lagless.spark.fetch import read_range
from lagless.spark.offsets import (
    LATEST,
    OffsetJson,
    PartitionOffsets,
    data_loss_handler,
    from_json,
    next_end,
    plan_ranges,
    resolve_start,
    split_ranges,
    to_json,
)
from lagless.spark.options import Position, SourceOptions
from lagless.spark.schema import arrow_schema

log = logging.getLogger(__name__)


class KafkaInputPartition(InputPartition):
    """One Spark task: offsets ``[start, end)`` of one Kafka partition (picklable)."""

    def __init__(self, rng: PartitionRange) -> None:
        super().__init__(rng)
        self.range = rng


class _KafkaReading:
    """What both readers share: options, the driver-side probe, planning and ``read``."""

    def __init__(self, options: SourceOptions, schema: StructType) -> None:
        self.options = options
        self.schema = schema
        self._probe: OffsetProbe | None = None

    @property
    def probe(self) -> OffsetProbe:
        """The driver's probe, opened on first use (never in a task)."""
        if self._probe is None:
            self._probe = OffsetProbe(self.options.kafka)
        return self._probe

    def close_probe(self) -> None:
        if self._probe is not None:
            self._probe.close()
            self._probe = None

    def current_partitions(self) -> list[PartitionKey]:
        return [(t, p) for t in self.options.topics for p in self.probe.partitions(t)]

    def latest(self) -> PartitionOffsets:
        """The true end offset of every partition the subscribed topics have now."""
        return self.probe.end_offsets(self.current_partitions())

    def earliest(self, keys: Iterable[PartitionKey]) -> PartitionOffsets:
        return self.probe.start_offsets(keys)

    def starting(self, latest: PartitionOffsets, default: Position) -> PartitionOffsets:
        wanted = self.options.start_position(default)
        return resolve_start(wanted, self.earliest(latest), latest)

    def plan(self, start: PartitionOffsets, end: PartitionOffsets) -> list[KafkaInputPartition]:
        report = data_loss_handler(self.options.fail_on_data_loss)
        ranges = plan_ranges(start, end, self.earliest(end), report)
        ranges = split_ranges(ranges, self.options.min_partitions)
        log.debug("planned %d ranges: %s", len(ranges), ranges)
        return [KafkaInputPartition(r) for r in ranges]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, KafkaInputPartition):
            if getattr(partition, "value", None) is None:
                # A batch read with nothing to read: Spark replaces an empty partition list
                # with one InputPartition(None).
                return iter(())
            raise TypeError(f"not a lagless-kafka partition: {partition!r}")
        return read_range(
            self.options.kafka,
            partition.range,
            arrow_schema(self.schema),
            data_loss_handler(self.options.fail_on_data_loss),
            self.options.poll_timeout_ms,
        )


class KafkaStreamReader(_KafkaReading, DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batches over the subscribed topics."""

    def __init__(self, options: SourceOptions, schema: StructType) -> None:
        super().__init__(options, schema)
        self._target: PartitionOffsets | None = None
        self._latest_seen: PartitionOffsets | None = None

    def initialOffset(self) -> OffsetJson:  # noqa: N802
        return to_json(self.starting(self.latest(), "latest"))

    def getDefaultReadLimit(self) -> ReadLimit:  # noqa: N802
        limit = self.options.max_offsets_per_trigger
        return ReadMaxRows(limit) if limit is not None else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:  # noqa: N802
        """Fix the target: everything up to the ends seen now, nothing written later."""
        self._target = self.latest()
        log.info("available-now target: %s", to_json(self._target))

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> OffsetJson:  # noqa: N802
        begin = from_json(start)
        stray = sorted({t for t, _ in begin} - set(self.options.topics))
        if stray:
            raise ConfigError(
                f"the checkpoint holds offsets of topics {stray} that this query does not "
                f"subscribe to: use a new checkpoint for a new topic"
            )
        latest = self._target if self._target is not None else self.latest()
        self._latest_seen = latest
        max_rows = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        end = next_end(
            begin,
            latest,
            self.earliest,
            max_rows,
            data_loss_handler(self.options.fail_on_data_loss),
        )
        return to_json(end)

    def reportLatestOffset(self) -> OffsetJson | None:  # noqa: N802
        return to_json(self._latest_seen) if self._latest_seen is not None else None

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        return self.plan(from_json(start), from_json(end))

    def commit(self, end: dict[str, Any]) -> None:
        log.debug("batch up to %s committed to the checkpoint", end)

    def stop(self) -> None:
        self.close_probe()


class KafkaBatchReader(_KafkaReading, DataSourceReader):
    """``spark.read.format("lagless-kafka")``: startingOffsets (default earliest) to
    endingOffsets (default latest), planned once on the driver."""

    def partitions(self) -> Sequence[InputPartition]:
        try:
            latest = self.latest()
            start = self.starting(latest, "earliest")
            ending = self.options.ending_offsets() or {}
            end = {k: latest[k] if ending.get(k, LATEST) == LATEST else ending[k] for k in latest}
            return self.plan(start, end)
        finally:
            self.close_probe()
