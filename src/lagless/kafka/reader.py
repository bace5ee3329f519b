"""Read a topic from its start to its current end (for checks, demos and tests)."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from typing import Any

from confluent_kafka import KafkaError, Message, TopicPartition

from lagless.errors import ClusterError
from lagless.kafka.clients import make_consumer
from lagless.kafka.offsets import READ_WAIT_MS, OffsetProbe, probe_conf
from lagless.kafka.records import coordinates


def read_all(conf: Mapping[str, Any], topic: str, timeout: float = 60.0) -> Iterator[Message]:
    """Every record of ``topic`` between the start and end offsets seen on entry."""
    with OffsetProbe(conf) as probe:
        ranges = [r for r in probe.ranges(topic) if r.records > 0]
    if not ranges:
        return
    consumer = make_consumer(probe_conf(conf, wait_ms=READ_WAIT_MS))
    consumer.assign([TopicPartition(topic, r.partition, r.start) for r in ranges])
    remaining = {r.partition: r.end for r in ranges}
    deadline = time.monotonic() + timeout
    try:
        while remaining:
            if time.monotonic() > deadline:
                raise ClusterError(f"reading {topic!r} took over {timeout:.0f} s")
            for msg in consumer.consume(1000, timeout=0.5):
                err = msg.error()
                if err is not None:
                    if err.code() != KafkaError._PARTITION_EOF:
                        raise ClusterError(f"cannot read {topic}[{msg.partition()}]: {err}")
                    continue
                where = coordinates(msg)
                end = remaining.get(where.partition)
                if end is None or where.offset >= end:
                    continue
                yield msg
                if where.offset + 1 >= end:
                    del remaining[where.partition]
    finally:
        consumer.close()
