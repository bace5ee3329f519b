"""Offsets by time: the first offset whose record timestamp is at or after a time.

``offsets_for_times`` (ListOffsets by timestamp) is the Kafka way, and what this asks first.
Two deviations of the embedded broker (Tansu 0.6) are corrected by reading records: it answers
at batch granularity with the broker's write time (the batch may start with older records), and
for a time after the last write it answers 0 instead of "end". So the answer is verified: a time
after the partition's last record maps to the end offset, and from the broker's offset the
records are scanned forward to the first one at or after the time. On Apache Kafka the scan
reads one record per partition.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from confluent_kafka import Consumer, KafkaException, Message, TopicPartition

from lagless.errors import ClusterError
from lagless.kafka.clients import make_consumer
from lagless.kafka.offsets import OffsetProbe, PartitionKey, probe_conf
from lagless.kafka.records import coordinates, data_only, timestamp_ms


def scan(
    consumer: Consumer,
    positions: Mapping[PartitionKey, int],
    ends: Mapping[PartitionKey, int],
    found: Callable[[Message], bool],
    timeout: float = 30.0,
) -> dict[PartitionKey, Message | None]:
    """Per partition, the first record from ``positions`` (below ``ends``) for which ``found``
    is true; None when none is before the end."""
    todo = {k: o for k, o in positions.items() if o < ends[k]}
    out: dict[PartitionKey, Message | None] = {k: None for k in positions if k not in todo}
    if not todo:
        return out
    consumer.assign([TopicPartition(t, p, o) for (t, p), o in todo.items()])
    deadline = time.monotonic() + timeout
    try:
        while todo:
            if time.monotonic() > deadline:
                raise ClusterError(f"no answer within {timeout:.0f} s reading {sorted(todo)}")
            for msg in data_only(consumer.consume(500, timeout=0.5)):
                where = coordinates(msg)
                key = (where.topic, where.partition)
                if key not in todo or where.offset < todo[key]:
                    continue
                if found(msg):
                    out[key] = msg
                elif where.offset + 1 < ends[key]:
                    continue
                else:
                    out[key] = None
                del todo[key]
                consumer.pause([TopicPartition(where.topic, where.partition)])
    except KafkaException as exc:
        raise ClusterError(f"cannot fetch records: {exc}") from None
    finally:
        # librdkafka keeps a partition's pause flag across assignments: clear it first
        consumer.resume([TopicPartition(t, p) for t, p in positions])
        consumer.unassign()
    return out


def offsets_at_time(
    conf: Mapping[str, Any], partitions: list[PartitionKey], ts_ms: int, timeout: float = 30.0
) -> dict[PartitionKey, int]:
    """For each partition, the first offset whose record timestamp is ``>= ts_ms``; the end
    offset when every record is older."""
    with OffsetProbe(conf) as probe:
        ends = probe.end_offsets(partitions, timeout)
        starts = probe.start_offsets(partitions, timeout)
    consumer = make_consumer(probe_conf(conf))
    try:
        asked = [TopicPartition(t, p, ts_ms) for t, p in partitions]
        try:
            answers = consumer.offsets_for_times(asked, timeout=timeout)
        except KafkaException as exc:
            raise ClusterError(f"cannot look up offsets by time: {exc}") from None
        broker = {(tp.topic, tp.partition): tp.offset for tp in answers}
        last = {k: ends[k] - 1 for k in partitions if ends[k] > starts[k]}
        newest = scan(consumer, last, ends, lambda m: True, timeout)
        from_: dict[PartitionKey, int] = {}
        out: dict[PartitionKey, int] = {}
        for key in partitions:
            record = newest.get(key)
            if record is None or (timestamp_ms(record) or 0) < ts_ms:
                out[key] = ends[key]  # empty, or every record is older than the time
                continue
            answer = broker.get(key, -1)
            from_[key] = min(max(answer if answer >= 0 else starts[key], starts[key]), ends[key])
        first = scan(consumer, from_, ends, lambda m: (timestamp_ms(m) or 0) >= ts_ms, timeout)
        for key, msg in first.items():
            out[key] = ends[key] if msg is None else coordinates(msg).offset
        return out
    finally:
        consumer.close()
