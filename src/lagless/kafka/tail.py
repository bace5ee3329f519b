"""Read a topic like ``kcat -C``: from a start (earliest, latest, an offset, a time) to the
end offsets seen when it starts, or on and on (``follow``). It never joins a group nor commits.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer, KafkaException, Message, TopicPartition

from lagless.errors import ClusterError, ConfigError
from lagless.kafka.clients import make_consumer
from lagless.kafka.offsets import OffsetProbe, PartitionKey, probe_conf
from lagless.kafka.records import coordinates, data_only
from lagless.kafka.reset import parse_time
from lagless.kafka.seek import offsets_at_time

QUIET_CHECK_S = 2.0  # a bounded read that got nothing this long checks where it stands


@dataclass(frozen=True)
class TailSpec:
    """What to read: ``start`` is ``earliest``, ``latest``, an offset (negative: that many
    records before the end) or an ISO time."""

    topic: str
    start: str = "earliest"
    partitions: tuple[int, ...] = ()
    count: int | None = None
    follow: bool = False

    def __post_init__(self) -> None:
        if self.count is not None and self.count < 1:
            raise ConfigError("--count must be at least 1")


def start_offsets(
    conf: Mapping[str, Any], spec: TailSpec
) -> tuple[dict[PartitionKey, int], dict[PartitionKey, int]]:
    """Where to begin in each chosen partition, and the end offsets now."""
    with OffsetProbe(conf) as probe:
        existing = probe.partitions(spec.topic)
        missing = sorted(set(spec.partitions) - set(existing))
        if missing:
            raise ConfigError(f"topic {spec.topic!r} has no partition {missing[0]}")
        keys = [(spec.topic, p) for p in (spec.partitions or existing)]
        ends = probe.end_offsets(keys)
        starts = probe.start_offsets(keys)
    text = spec.start.strip()
    if text == "earliest":
        begin = dict(starts)
    elif text == "latest":
        begin = dict(ends)
    elif text.lstrip("-").isdigit():
        offset = int(text)
        begin = {k: ends[k] + offset if offset < 0 else offset for k in keys}
    else:
        begin = offsets_at_time(conf, keys, parse_time(text))
    return {k: min(max(o, starts[k]), ends[k]) for k, o in begin.items()}, ends


def tail(conf: Mapping[str, Any], spec: TailSpec, poll: float = 0.5) -> Iterator[Message]:
    """The records of ``spec`` in fetch order (per partition in offset order)."""
    begin, ends = start_offsets(conf, spec)
    todo = {k for k in begin if spec.follow or begin[k] < ends[k]}
    if not todo or spec.count == 0:
        return
    consumer = make_consumer(probe_conf(conf))
    consumer.assign([TopicPartition(t, p, begin[(t, p)]) for t, p in sorted(todo)])
    sent = 0
    quiet_since = time.monotonic()
    try:
        while todo:
            batch = consumer.consume(500, timeout=poll)
            if batch:
                quiet_since = time.monotonic()
            elif not spec.follow and time.monotonic() - quiet_since >= QUIET_CHECK_S:
                todo -= read_through(consumer, todo, ends, spec.topic)
                quiet_since = time.monotonic()
            for msg in data_only(batch):
                where = coordinates(msg)
                key = (where.topic, where.partition)
                if key not in todo:
                    continue
                if not spec.follow and where.offset >= ends[key]:
                    todo.discard(key)
                    continue
                yield msg
                sent += 1
                if spec.count is not None and sent >= spec.count:
                    return
                if not spec.follow and where.offset + 1 >= ends[key]:
                    todo.discard(key)
    except KafkaException as exc:
        raise ClusterError(f"cannot read {spec.topic!r}: {exc}") from None
    finally:
        consumer.close()


def read_through(
    consumer: Consumer, todo: set[PartitionKey], ends: Mapping[PartitionKey, int], topic: str
) -> set[PartitionKey]:
    """Of a bounded read that got nothing for a while: the partitions read to their end
    (:func:`at_end`), or ClusterError if the topic was deleted meanwhile (a fetch of it would
    wait forever)."""
    if topic not in consumer.list_topics(timeout=10.0).topics:
        raise ClusterError(f"cannot read {topic!r}: it was deleted while it was read")
    return at_end(consumer, todo, ends)


def at_end(
    consumer: Consumer, keys: set[PartitionKey], ends: Mapping[PartitionKey, int]
) -> set[PartitionKey]:
    """Those of ``keys`` whose position reached ``ends``: read to their end, also without a
    record at it (the last offsets are transaction markers)."""
    positions = consumer.position([TopicPartition(t, p) for t, p in keys])
    return {(tp.topic, tp.partition) for tp in positions
            if tp.offset >= ends[(tp.topic, tp.partition)]}  # fmt: skip


def partitions_arg(values: Sequence[int] | None) -> tuple[int, ...]:
    return tuple(sorted(set(values or ())))
