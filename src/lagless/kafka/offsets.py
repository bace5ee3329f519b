"""The one place partition start and end offsets come from.

Why not ``ListOffsets(LATEST)`` (``Consumer.get_watermark_offsets(cached=False)``)? Some
Kafka-compatible brokers (Tansu 0.6, our embedded broker) answer it with the base offset of
the last written batch + 1, short by the records of that batch. Fetch responses carry the
true high watermark on every broker, and ``PARTITION_EOF`` reports it. So the probe assigns
each partition at the broker's idea of LATEST (at or below the true end), fetches until EOF,
and takes the EOF offset: on Apache Kafka that is one empty fetch; on Tansu it reads at most
one batch. Start offsets come from ``ListOffsets(EARLIEST)``, which every broker answers right.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from confluent_kafka import OFFSET_END, KafkaError, KafkaException, TopicPartition

from lagless.errors import ClusterError
from lagless.kafka.clients import make_consumer
from lagless.kafka.records import coordinates

PartitionKey = tuple[str, int]
EOF_WAIT_S = 0.005


@dataclass(frozen=True)
class PartitionRange:
    """The offsets a partition holds: ``start`` (first) to ``end`` (next to be written)."""

    topic: str
    partition: int
    start: int
    end: int

    @property
    def records(self) -> int:
        return self.end - self.start


def probe_conf(conf: Mapping[str, Any], isolation: str = "read_uncommitted") -> dict[str, Any]:
    """Consumer properties for a probe that never joins a group nor commits."""
    out = dict(conf)
    out.update(
        {
            "group.id": f"lagless-offset-probe-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "enable.partition.eof": True,
            "fetch.wait.max.ms": 10,
            "fetch.queue.backoff.ms": 5,
            "isolation.level": isolation,
        }
    )
    return out


class OffsetProbe:
    """A reusable probe for partition ends (high watermarks) and starts.

    One probe keeps one consumer; create it where it is used (a Spark driver keeps one for the
    whole query; executors never need it). Call :meth:`close` when done.
    """

    def __init__(self, conf: Mapping[str, Any], isolation: str = "read_uncommitted") -> None:
        self._consumer = make_consumer(probe_conf(conf, isolation))

    def close(self) -> None:
        self._consumer.close()

    def __enter__(self) -> OffsetProbe:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def partitions(self, topic: str, timeout: float = 10.0) -> list[int]:
        """Partition ids of ``topic``; ClusterError if it does not exist."""
        try:
            meta = self._consumer.list_topics(topic, timeout=timeout)
        except KafkaException as exc:
            raise ClusterError(f"cannot read metadata of topic {topic!r}: {exc}") from None
        info = meta.topics.get(topic)
        if info is None or info.error is not None:
            raise ClusterError(f"topic {topic!r} does not exist")
        return sorted(info.partitions)

    def end_offsets(
        self, partitions: Iterable[PartitionKey], timeout: float = 10.0
    ) -> dict[PartitionKey, int]:
        """The true end offset (high watermark) of each partition."""
        wanted = list(partitions)
        if not wanted:
            return {}
        self._consumer.assign([TopicPartition(t, p, OFFSET_END) for t, p in wanted])
        ends: dict[PartitionKey, int] = {}
        deadline = time.monotonic() + timeout
        try:
            while len(ends) < len(wanted):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    missing = sorted(set(wanted) - set(ends))
                    raise ClusterError(f"no end offset within {timeout:.0f} s for {missing}")
                # consume() waits for all 500 or the timeout: a short one returns as soon as
                # the last EOF is in (a fixed 0.5 s cost every call otherwise).
                for msg in self._consumer.consume(500, timeout=min(remaining, EOF_WAIT_S)):
                    err = msg.error()
                    if err is None:
                        continue
                    if err.code() == KafkaError._PARTITION_EOF:
                        where = coordinates(msg)
                        ends[(where.topic, where.partition)] = where.offset
                    elif err.fatal() or not err.retriable():
                        raise ClusterError(f"cannot fetch {msg.topic()}[{msg.partition()}]: {err}")
        finally:
            self._consumer.unassign()
        return ends

    def start_offsets(
        self, partitions: Iterable[PartitionKey], timeout: float = 10.0
    ) -> dict[PartitionKey, int]:
        """The first offset still held by each partition (ListOffsets EARLIEST)."""
        out: dict[PartitionKey, int] = {}
        for topic, partition in partitions:
            try:
                low, _high = self._consumer.get_watermark_offsets(
                    TopicPartition(topic, partition), timeout=timeout
                )
            except KafkaException as exc:
                raise ClusterError(f"cannot list offsets of {topic}[{partition}]: {exc}") from None
            out[(topic, partition)] = low
        return out

    def ranges(self, topic: str, timeout: float = 10.0) -> list[PartitionRange]:
        """Start and end offsets of every partition of ``topic``."""
        keys = [(topic, p) for p in self.partitions(topic, timeout)]
        ends = self.end_offsets(keys, timeout)
        starts = self.start_offsets(keys, timeout)
        return [PartitionRange(t, p, starts[(t, p)], ends[(t, p)]) for t, p in keys]


def end_offsets(
    conf: Mapping[str, Any], partitions: Iterable[PartitionKey], timeout: float = 10.0
) -> dict[PartitionKey, int]:
    """One-shot form of :meth:`OffsetProbe.end_offsets`."""
    with OffsetProbe(conf) as probe:
        return probe.end_offsets(partitions, timeout)


def topic_ranges(
    conf: Mapping[str, Any], topic: str, timeout: float = 10.0
) -> list[PartitionRange]:
    """One-shot form of :meth:`OffsetProbe.ranges`."""
    with OffsetProbe(conf) as probe:
        return probe.ranges(topic, timeout)
