"""The ``lagless-kafka`` readers: a streaming reader (with admission control and
``Trigger.AvailableNow``) and a batch reader.

Where each method runs:

- ``initialOffset``, ``latestOffset``, ``prepareForTriggerAvailableNow``, ``partitions``,
  ``reportLatestOffset``, ``commit`` and ``stop`` run on the driver, in one long-lived Python
  process per query: the reader keeps one :class:`~lagless.kafka.offsets.OffsetProbe` there
  (created on first use) and the AvailableNow target.
- ``read`` runs in Spark tasks on a copy of the reader on which only ``__init__`` ran, so
  ``__init__`` holds nothing but options and opens no connection; ``read`` makes its own
  consumer (:func:`lagless.spark.connector.fetch.read_range`).

End offsets come only from the probe (fetch high watermarks), never from
``ListOffsets(LATEST)``. Offsets are returned in the canonical JSON form of
:mod:`lagless.spark.connector.offsets`. The source commits nothing to Kafka: Spark's checkpoint is
the
source of truth; the pipeline's listener mirrors progress into a consumer group for lag tools.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, TypeVar

import pyarrow as pa
from confluent_kafka import KafkaException
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

from lagless.errors import ClusterError, ConfigError, LaglessError
from lagless.kafka.offsets import OffsetProbe, PartitionKey, PartitionRange
from lagless.kafka.seek import offsets_for_times
from lagless.spark.connector.offsets import (
    LATEST,
    OffsetJson,
    PartitionOffsets,
    cap_ranges,
    data_loss_handler,
    from_json,
    next_end,
    plan_ranges,
    resolve_start,
    split_ranges,
    to_json,
)
from lagless.spark.connector.options import Position, SourceOptions
from lagless.spark.connector.schema import arrow_schema

log = logging.getLogger(__name__)
T = TypeVar("T")


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

    def retried(self, what: str, call: Callable[[], T]) -> T:
        """``call()``, tried ``fetchOffset.numRetries`` times ``fetchOffset.retryIntervalMs``
        apart on cluster errors (with a fresh probe); the last error names the attempts."""
        attempts = self.options.fetch_offset_retries
        for attempt in range(1, attempts + 1):
            try:
                return call()
            except (ClusterError, KafkaException) as exc:
                if attempt == attempts:
                    raise ClusterError(
                        f"{what} failed {attempts} times (fetchOffset.numRetries={attempts}): {exc}"
                    ) from None
                log.warning("%s failed (attempt %d of %d): %s", what, attempt, attempts, exc)
                self.close_probe()
                time.sleep(self.options.fetch_offset_retry_interval_ms / 1000)
        raise AssertionError("unreachable")

    def current_partitions(self) -> list[PartitionKey]:
        return [(t, p) for t in self.options.topics for p in self.probe.partitions(t)]

    def latest(self) -> PartitionOffsets:
        """The true end offset of every partition the subscribed topics have now."""
        return self.retried(
            "fetching end offsets", lambda: self.probe.end_offsets(self.current_partitions())
        )

    def earliest(self, keys: Iterable[PartitionKey]) -> PartitionOffsets:
        wanted = list(keys)
        return self.retried("fetching start offsets", lambda: self.probe.start_offsets(wanted))

    def for_times(
        self, times: int | dict[str, dict[str, int]], latest: PartitionOffsets
    ) -> dict[PartitionKey, int | None]:
        """Offsets of the first records at or after the given times (None: no match)."""
        if isinstance(times, int):
            wanted = dict.fromkeys(latest, times)
        else:
            wanted = from_json(times)
            missing = sorted(set(latest) - set(wanted))
            if missing:
                raise ConfigError(
                    f"offsets by timestamp must name every partition; missing: {missing}"
                )
        earliest = self.earliest(latest)
        return self.retried(
            "looking up offsets by timestamp",
            lambda: offsets_for_times(self.options.kafka, wanted, earliest, latest),
        )

    def starting(self, latest: PartitionOffsets, default: Position) -> PartitionOffsets:
        times = self.options.starting_times()
        if times is None:
            wanted = self.options.start_position(default)
            return resolve_start(wanted, self.earliest(latest), latest)
        found = self.for_times(times, latest)
        lost = sorted(k for k, o in found.items() if o is None)
        if lost and self.options.timestamp_strategy == "error":
            raise LaglessError(
                f"no record at or after the starting timestamp in {lost}; set "
                f"startingOffsetsByTimestampStrategy=latest to start those at the end"
            )
        return {k: latest[k] if o is None else o for k, o in found.items()}

    def ending(self, latest: PartitionOffsets) -> PartitionOffsets:
        times = self.options.ending_times()
        if times is not None:
            found = self.for_times(times, latest)
            return {k: latest[k] if o is None else o for k, o in found.items()}
        ending = self.options.ending_offsets() or {}
        return {k: latest[k] if ending.get(k, LATEST) == LATEST else ending[k] for k in latest}

    def plan(self, start: PartitionOffsets, end: PartitionOffsets) -> list[KafkaInputPartition]:
        report = data_loss_handler(self.options.fail_on_data_loss)
        # Only partitions new since ``start`` need their earliest offset (one round trip
        # each); records deleted under a known partition are found when it is read
        # (auto.offset.reset=error), as Spark's own source finds them.
        new = [key for key in end if key not in start]
        ranges = plan_ranges(start, end, self.earliest(new) if new else {}, report)
        ranges = split_ranges(ranges, self.options.min_partitions)
        ranges = cap_ranges(ranges, self.options.max_records_per_partition)
        log.debug("planned %d ranges: %s", len(ranges), ranges)
        return [KafkaInputPartition(r) for r in ranges]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, KafkaInputPartition):
            if getattr(partition, "value", None) is None:
                # A batch read with nothing to read: Spark replaces an empty partition list
                # with one InputPartition(None).
                return iter(())
            raise TypeError(f"not a lagless-kafka partition: {partition!r}")
        from lagless.spark.connector.fetch import (
            read_range,  # tasks only: not in the driver's runner
        )
        from lagless.spark.connector.worker import freezing_after

        return freezing_after(
            read_range(
                self.options.reader_conf(),
                partition.range,
                arrow_schema(self.schema),
                data_loss_handler(self.options.fail_on_data_loss),
                self.options.poll_timeout_ms,
            )
        )


class KafkaStreamReader(_KafkaReading, DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batches over the subscribed topics."""

    def __init__(self, options: SourceOptions, schema: StructType) -> None:
        options.check_streaming()
        super().__init__(options, schema)
        self._target: PartitionOffsets | None = None
        self._latest_seen: PartitionOffsets | None = None
        self._last_trigger: float | None = None
        self._initial: OffsetJson | None = None

    def initialOffset(self) -> OffsetJson:  # noqa: N802
        """Where a new query starts, worked out once: Spark asks more than once while it
        starts a query (each answer would cost the broker round trips again). With
        AvailableNow the ends just fixed as the target are the latest offsets (Spark fixes
        the target first): no second look-up."""
        if self._initial is None:
            latest = self._target if self._target is not None else self.latest()
            self._initial = to_json(self.starting(latest, "latest"))
        return self._initial

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
        if self.delayed(begin, latest):
            return to_json(begin)
        max_rows = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        end = next_end(
            begin,
            latest,
            self.earliest,
            max_rows,
            data_loss_handler(self.options.fail_on_data_loss),
        )
        return to_json(end)

    def delayed(self, begin: PartitionOffsets, latest: PartitionOffsets) -> bool:
        """``minOffsetsPerTrigger``: wait while fewer records are there, unless
        ``maxTriggerDelay`` has passed since the last batch (never with AvailableNow)."""
        minimum = self.options.min_offsets_per_trigger
        if minimum is None or self._target is not None:
            return False
        now = time.monotonic()
        available = sum(max(0, end - begin.get(key, end)) for key, end in latest.items())
        waited_ms = None if self._last_trigger is None else (now - self._last_trigger) * 1000
        if (
            available < minimum
            and waited_ms is not None
            and waited_ms < self.options.max_trigger_delay_ms
        ):
            log.debug("%d records < minOffsetsPerTrigger %d: waiting", available, minimum)
            return True
        self._last_trigger = now
        return False

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
            return self.plan(self.starting(latest, "earliest"), self.ending(latest))
        finally:
            self.close_probe()
