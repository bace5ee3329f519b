"""Offsets by time: the earliest offset whose record timestamp is at or after a time.

The one algorithm lagless uses (the CLI's ``--to-datetime``/``--by-duration``/``--since``,
the Spark source's ``startingTimestamp`` and friends). Kafka's way is ``ListOffsets`` with a
timestamp (``offsets_for_times``), asked of the cluster where it answers it right. Where it
does not (see :mod:`lagless.kafka.compat`: the embedded Tansu answers with its write time at
batch granularity and 0 past the last write; the mock cluster answers -1), the offset is found
in the records: a binary search over ``[start, end)`` reading one record a step (about
log2(records) fetches a partition), assuming timestamps grow with offsets within a partition,
as a broker's time index does. Offsets missing inside the range (transaction markers,
compaction) are fine: a step reads the first record at or after its offset.

:func:`offsets_for_times` takes per partition a time and a range and answers None where no
record of the range is that recent; :func:`offsets_at_time` answers the end offset there.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from contextlib import closing
from typing import Any

from confluent_kafka import KafkaError, KafkaException, TopicPartition

from lagless.errors import ClusterError
from lagless.kafka.clients import make_consumer
from lagless.kafka.compat import Deviations, deviations_of
from lagless.kafka.offsets import OffsetProbe, PartitionKey, probe_conf

STEP_TIMEOUT_S = 10.0  # one step of the search: a record read, or the partition's end


class TimeSeek:
    """Offsets by time over one consumer (:meth:`close` it: ``with closing(TimeSeek(conf))``)."""

    def __init__(self, conf: Mapping[str, Any], timeout: float = STEP_TIMEOUT_S) -> None:
        self._consumer = make_consumer(probe_conf(conf))
        self._timeout = timeout
        self._deviations: Deviations | None = None

    def close(self) -> None:
        self._consumer.close()

    @property
    def deviations(self) -> Deviations:
        if self._deviations is None:
            self._deviations = deviations_of(self._consumer, self._timeout)
        return self._deviations

    def offset_for_time(self, key: PartitionKey, start: int, end: int, ts_ms: int) -> int | None:
        """The earliest offset in ``[start, end)`` whose record is at or after ``ts_ms``;
        None when there is none."""
        if start >= end:
            return None
        if self.deviations.list_offsets_by_time:
            return self._asked(key, start, end, ts_ms)
        low, high = start, end  # the answer lies in [low, high]; high: none in the range
        while low < high:
            middle = (low + high) // 2
            hit = self._in_range(key, middle, end)
            if hit is not None and hit[1] < ts_ms:
                low = hit[0] + 1
            else:
                high = middle
        found = self._in_range(key, low, end) if low < end else None
        return None if found is None else found[0]

    def _in_range(self, key: PartitionKey, offset: int, end: int) -> tuple[int, int] | None:
        """:meth:`record_from`, None past ``end``."""
        hit = self.record_from(key, offset)
        return hit if hit is not None and hit[0] < end else None

    def _asked(self, key: PartitionKey, start: int, end: int, ts_ms: int) -> int | None:
        """The cluster's own answer (``ListOffsets`` by timestamp), kept within the range."""
        try:
            (answer,) = self._consumer.offsets_for_times(
                [TopicPartition(key[0], key[1], ts_ms)], timeout=self._timeout
            )
        except KafkaException as exc:
            raise ClusterError(f"cannot look up offsets by time: {exc}") from None
        if answer.offset < 0 or answer.offset >= end:
            return None
        return max(answer.offset, start)

    def record_from(self, key: PartitionKey, offset: int) -> tuple[int, int] | None:
        """``(offset, timestamp ms)`` of the first record at or after ``offset``; None at the
        partition's end."""
        topic, partition = key
        consumer = self._consumer
        consumer.assign([TopicPartition(topic, partition, offset)])
        give_up = time.monotonic() + self._timeout
        try:
            while time.monotonic() < give_up:
                for msg in consumer.consume(1, timeout=0.1):
                    error = msg.error()
                    if error is None:
                        at: int = msg.offset()  # type: ignore[assignment]
                        if msg.partition() == partition and at >= offset:
                            return at, msg.timestamp()[1]
                    elif error.code() == KafkaError._PARTITION_EOF:
                        return None
                    elif error.fatal() or not error.retriable():
                        raise ClusterError(f"cannot fetch {topic}[{partition}]: {error}")
        finally:
            consumer.unassign()
        raise ClusterError(
            f"no record of {topic}[{partition}] from offset {offset} in {self._timeout:.0f} s"
        )


def offsets_for_times(
    conf: Mapping[str, Any],
    times: Mapping[PartitionKey, int],
    earliest: Mapping[PartitionKey, int],
    latest: Mapping[PartitionKey, int],
) -> dict[PartitionKey, int | None]:
    """Per partition, the earliest offset in ``[earliest, latest)`` whose record is at or
    after its time (ms); None where none is."""
    with closing(TimeSeek(conf)) as seek:
        return {
            key: seek.offset_for_time(key, earliest[key], latest[key], ts_ms)
            for key, ts_ms in sorted(times.items())
        }


def offsets_at_time(
    conf: Mapping[str, Any], partitions: list[PartitionKey], ts_ms: int, timeout: float = 30.0
) -> dict[PartitionKey, int]:
    """For each partition, the first offset whose record timestamp is ``>= ts_ms``; the end
    offset when every record is older."""
    with OffsetProbe(conf) as probe:
        ends = probe.end_offsets(partitions, timeout)
        starts = probe.start_offsets(partitions, timeout)
    found = offsets_for_times(conf, dict.fromkeys(partitions, ts_ms), starts, ends)
    return {key: ends[key] if offset is None else offset for key, offset in found.items()}
