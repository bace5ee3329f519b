"""The one place partition start and end offsets come from.

Ends are ``ListOffsets(LATEST)`` where the cluster answers it right; where it does not (see
:mod:`lagless.kafka.compat`: the embedded Tansu answers the base offset of the last written
batch + 1, short by the records of that batch), they are read from fetch responses, which
carry the true high watermark on every broker, empty ones too: the probe assigns each
partition at the broker's idea of LATEST (at or below the true end) and takes the high
watermark of the first fetch answered for it (on Tansu, a fetch of a partition of many small
batches answers empty when it takes longer than the probe's short fetch wait, yet with the
right watermark). Start offsets come from ``ListOffsets(EARLIEST)``, which every broker answers
right.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from confluent_kafka import OFFSET_END, Consumer, KafkaException, TopicPartition

from lagless.errors import ClusterError
from lagless.kafka.clients import make_consumer
from lagless.kafka.compat import Deviations, deviations_of
from lagless.kafka.records import data_only

PartitionKey = tuple[str, int]
LOOK_S = 0.005  # between looks at the watermarks librdkafka caches from fetches
# A probe's fetch wait: short for ends (a partition at its end answers after the wait); for
# reading records known to be there, the librdkafka default (Tansu answers empty when finding
# the offset in a partition of many small batches takes longer than the wait, over and over).
ENDS_WAIT_MS = 10
READ_WAIT_MS = 500


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


def probe_conf(
    conf: Mapping[str, Any], isolation: str = "read_uncommitted", wait_ms: int = ENDS_WAIT_MS
) -> dict[str, Any]:
    """Consumer properties for a probe that never joins a group nor commits; ``wait_ms`` its
    ``fetch.wait.max.ms`` (:data:`READ_WAIT_MS` to read records known to be there)."""
    out = dict(conf)
    out.update(
        {
            "group.id": f"lagless-offset-probe-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "enable.partition.eof": True,
            "fetch.wait.max.ms": wait_ms,
            "fetch.queue.backoff.ms": 5,
            "isolation.level": isolation,
        }
    )
    return out


def partitions_text(keys: list[PartitionKey], first: int = 3) -> str:
    """``keys`` in a line of bounded length: a count of partitions and topics and the first few
    (``600 partitions of 3 topics (a[0], a[1], a[2], ...)``)."""
    shown = ", ".join(f"{t}[{p}]" for t, p in keys[:first])
    if len(keys) <= first:
        return shown
    topics = len({t for t, _ in keys})
    return f"{len(keys)} partitions of {topics} topic{'s' if topics > 1 else ''} ({shown}, ...)"


def topic_partitions(consumer: Consumer, topic: str, timeout: float) -> list[int]:
    """Partition ids of ``topic`` from ``consumer``'s metadata; ClusterError if it does not
    exist."""
    try:
        meta = consumer.list_topics(topic, timeout=timeout)
    except KafkaException as exc:
        raise ClusterError(f"cannot read metadata of topic {topic!r}: {exc}") from None
    info = meta.topics.get(topic)
    if info is None or info.error is not None:
        raise ClusterError(f"topic {topic!r} does not exist")
    return sorted(info.partitions)


class OffsetProbe:
    """A reusable probe for partition ends (high watermarks) and starts.

    One probe keeps one consumer; create it where it is used (a Spark driver keeps one for the
    whole query; executors never need it). Call :meth:`close` when done.
    """

    def __init__(self, conf: Mapping[str, Any], isolation: str = "read_uncommitted") -> None:
        self._conf = probe_conf(conf, isolation)
        self._consumer = make_consumer(self._conf)
        self._deviations: Deviations | None = None

    @property
    def deviations(self) -> Deviations:
        """What the cluster does differently from Apache Kafka (asked once)."""
        if self._deviations is None:
            self._deviations = deviations_of(self._consumer)
        return self._deviations

    def close(self) -> None:
        self._consumer.close()

    def __enter__(self) -> OffsetProbe:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def partitions(self, topic: str, timeout: float = 10.0) -> list[int]:
        """Partition ids of ``topic``; ClusterError if it does not exist."""
        return topic_partitions(self._consumer, topic, timeout)

    def end_offsets(
        self, partitions: Iterable[PartitionKey], timeout: float = 10.0
    ) -> dict[PartitionKey, int]:
        """The true end offset (high watermark) of each partition."""
        wanted = list(dict.fromkeys(partitions))
        if not wanted:
            return {}
        if self.deviations.list_offsets_end:
            return {key: self._listed(key, timeout)[1] for key in wanted}
        return self._fetched_ends(wanted, timeout)

    def _fetched_ends(self, wanted: list[PartitionKey], timeout: float) -> dict[PartitionKey, int]:
        """The high watermark of the first fetch answered for each partition (for a cluster
        whose ListOffsets is short). A consumer of this call's own: the watermarks it caches
        are all from fetches after this assignment (a reused one would still hold the last
        call's)."""
        consumer = make_consumer(self._conf)
        deadline = time.monotonic() + timeout
        try:
            for topic in dict.fromkeys(t for t, _ in wanted):  # the leaders known before the
                held = set(topic_partitions(consumer, topic, timeout))  # assignment (0.5 s else)
                missing = [(t, p) for t, p in wanted if t == topic and p not in held]
                if missing:
                    raise ClusterError(f"no such partition: {partitions_text(missing)}")
            consumer.incremental_assign([TopicPartition(t, p, OFFSET_END) for t, p in wanted])
            ends: dict[PartitionKey, int] = {}
            while len(ends) < len(wanted):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    left = sorted(set(wanted) - set(ends))
                    raise ClusterError(
                        f"no end offset within {timeout:.0f} s for {partitions_text(left)}"
                    )
                # consume() waits for all 500 or the timeout: a short one looks again soon
                for _ in data_only(consumer.consume(500, timeout=min(remaining, LOOK_S))):
                    pass  # records are not wanted here: only an error is
                done = []
                for key in wanted:
                    if key not in ends:
                        _, high = consumer.get_watermark_offsets(TopicPartition(*key), cached=True)
                        if high >= 0:
                            ends[key] = int(high)
                            done.append(TopicPartition(*key))
                if done:  # fetched no more: later fetches carry only the partitions still wanted
                    consumer.incremental_unassign(done)
            return {key: ends[key] for key in wanted}  # in the order asked
        except KafkaException as exc:
            raise ClusterError(f"cannot fetch end offsets: {exc}") from None
        finally:
            consumer.close()

    def start_offsets(
        self, partitions: Iterable[PartitionKey], timeout: float = 10.0
    ) -> dict[PartitionKey, int]:
        """The first offset still held by each partition (ListOffsets EARLIEST)."""
        return {key: self._listed(key, timeout)[0] for key in partitions}

    def _listed(self, key: PartitionKey, timeout: float) -> tuple[int, int]:
        """``ListOffsets`` EARLIEST and LATEST of one partition."""
        topic, partition = key
        try:
            marks = self._consumer.get_watermark_offsets(
                TopicPartition(topic, partition), timeout=timeout
            )
        except KafkaException as exc:
            raise ClusterError(f"cannot list offsets of {topic}[{partition}]: {exc}") from None
        if marks is None:
            raise ClusterError(f"cannot list offsets of {topic}[{partition}]: no answer")
        return int(marks[0]), int(marks[1])

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


class LatestStarts:
    """Where partitions without a committed offset start under ``auto.offset.reset=latest``,
    where librdkafka's own reset would start them wrong: it asks ``ListOffsets(LATEST)``, which
    a cluster whose answer is short (:attr:`Deviations.list_offsets_end` false: the embedded
    Tansu) answers inside the last batch, so records written before the consumer came would be
    read. There, :meth:`__call__` gives each partition's true end (from fetches); elsewhere
    nothing, and librdkafka resets as Kafka does. The cluster is asked what it is once."""

    def __init__(self, conf: Mapping[str, Any]) -> None:
        self._conf = dict(conf)
        self._needed: bool | None = None

    def __call__(
        self, partitions: list[PartitionKey], timeout: float = 5.0
    ) -> dict[PartitionKey, int]:
        """The true ends of ``partitions`` where they must be given, else {} (ClusterError
        when the cluster does not answer within ``timeout`` s: this runs in a rebalance)."""
        if not partitions or self._needed is False:
            return {}
        with OffsetProbe(self._conf) as probe:
            self._needed = not probe.deviations.list_offsets_end
            return probe.end_offsets(partitions, timeout) if self._needed else {}
