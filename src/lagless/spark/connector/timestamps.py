"""Offsets for timestamps (``startingTimestamp``, ``startingOffsetsByTimestamp``,
``endingTimestamp``, ``endingOffsetsByTimestamp``), right on every broker.

Kafka's meaning: the earliest offset whose record timestamp is at or after ``T`` (or none, when
every record is older). The broker's own lookup (``ListOffsets`` with a timestamp,
``offsets_for_times``) is not used: some brokers answer it wrong (the embedded Tansu uses its
write time, at batch granularity, and answers "0" for a time after the last record). Instead
the offset is found by a binary search over ``[earliest, end)`` that fetches one record per
step (about log2(records) fetches per partition), assuming timestamps grow with offsets in a
partition, as the broker's time index also does. Offsets missing inside a range (transaction
markers, compaction) are handled: a step reads the first record at or after its offset.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from confluent_kafka import KafkaError, TopicPartition

from lagless.errors import ClusterError
from lagless.kafka.clients import make_consumer
from lagless.kafka.offsets import PartitionKey, probe_conf

NO_MATCH = None
READ_TIMEOUT_S = 10.0


class TimestampLookup:
    """Binary search of offsets by record timestamp, with one consumer (driver side)."""

    def __init__(self, conf: Mapping[str, Any]) -> None:
        self._consumer = make_consumer(probe_conf(conf))

    def close(self) -> None:
        self._consumer.close()

    def __enter__(self) -> TimestampLookup:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def first_at_or_after(self, key: PartitionKey, offset: int) -> tuple[int, int] | None:
        """``(offset, timestamp ms)`` of the first record at or after ``offset``; None at the
        partition's end."""
        topic, partition = key
        self._consumer.assign([TopicPartition(topic, partition, offset)])
        deadline = time.monotonic() + READ_TIMEOUT_S
        try:
            while time.monotonic() < deadline:
                for msg in self._consumer.consume(1, timeout=0.1):
                    err = msg.error()
                    if err is not None:
                        if err.code() == KafkaError._PARTITION_EOF:
                            return None
                        if err.fatal() or not err.retriable():
                            raise ClusterError(f"cannot fetch {topic}[{partition}]: {err}")
                        continue
                    found: int = msg.offset()  # type: ignore[assignment]
                    if msg.partition() == partition and found >= offset:
                        return found, msg.timestamp()[1]
        finally:
            self._consumer.unassign()
        raise ClusterError(f"no record of {topic}[{partition}] at {offset} in {READ_TIMEOUT_S} s")

    def offset_for_time(self, key: PartitionKey, start: int, end: int, ts_ms: int) -> int | None:
        """The earliest offset in ``[start, end)`` whose record's timestamp is >= ``ts_ms``."""
        lo, hi = start, end
        while lo < hi:
            mid = (lo + hi) // 2
            found = self.first_at_or_after(key, mid)
            if found is None or found[0] >= end or found[1] >= ts_ms:
                hi = mid
            else:
                lo = found[0] + 1
        if lo >= end:
            return NO_MATCH
        found = self.first_at_or_after(key, lo)
        return None if found is None or found[0] >= end else found[0]


def offsets_for_times(
    conf: Mapping[str, Any],
    times: Mapping[PartitionKey, int],
    earliest: Mapping[PartitionKey, int],
    latest: Mapping[PartitionKey, int],
) -> dict[PartitionKey, int | None]:
    """For each partition, the earliest offset whose timestamp >= its time (None: no match)."""
    with TimestampLookup(conf) as lookup:
        return {
            key: lookup.offset_for_time(key, earliest[key], latest[key], ts)
            for key, ts in sorted(times.items())
        }
