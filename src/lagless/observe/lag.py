"""Consumer-group lag per partition, in records and in seconds.

Lag in records is ``end - position``: the end offset comes from :mod:`lagless.kafka.offsets`
(fetch high watermarks, never ListOffsets(LATEST)); the position is the group's committed
offset, or the partition's start offset when the group has not committed it (a new consumer
with ``auto.offset.reset=earliest`` would start there), and never below the start offset (records
already deleted cannot be consumed). Lag in seconds is defined once, in
:func:`lagless.observe.lagtime.lag_seconds`: now minus the timestamp of the record at the
position (the first one not committed), fetched once per lagging partition; 0 when there is no
lag.

Which partitions: every partition of ``--topic``, or of every topic the group has committed
offsets for or is assigned. A group with no committed offsets, no members joining (DescribeGroups
neither Empty nor Dead) and that the cluster does not list is unknown; one whose members joined
but never committed exists (Tansu lists a group only after its first commit).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from lagless.errors import ClusterError, LaglessError
from lagless.kafka.admin import committed_offsets
from lagless.kafka.clients import make_consumer
from lagless.kafka.groups import GroupInfo, describe_group, group_ids
from lagless.kafka.offsets import (
    READ_WAIT_MS,
    OffsetProbe,
    PartitionKey,
    partitions_text,
    probe_conf,
)
from lagless.kafka.records import coordinates, timestamp_ms
from lagless.observe.lagtime import lag_seconds

log = logging.getLogger(__name__)

FETCH_S = 10.0  # one fetch of the partitions' ends, or of their head records


@dataclass(frozen=True)
class PartitionLag:
    """The lag of one partition for one group."""

    topic: str
    partition: int
    committed: int | None
    start: int
    end: int
    lag: int
    lag_seconds: float | None

    @property
    def key(self) -> PartitionKey:
        return (self.topic, self.partition)

    @property
    def position(self) -> int:
        """Where the group resumes: its commit, or the start offset, clamped to start..end."""
        return position(self.committed, self.start, self.end)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def position(committed: int | None, start: int, end: int) -> int:
    resume = start if committed is None else max(committed, start)
    return min(resume, end)


class Fetches(Protocol):
    """The reads of a lag measure that fetch records: partition ends and head timestamps."""

    def end_offsets(self, keys: list[PartitionKey], timeout: float) -> dict[PartitionKey, int]: ...

    def head_timestamps(
        self, positions: Mapping[PartitionKey, int], timeout: float
    ) -> dict[PartitionKey, int | None]: ...

    def close(self) -> None: ...


class LagReader:
    """Measures a group's lag; keeps its clients open across calls (``--watch``). Its fetches
    run in this process, or through ``fetches`` (owned: closed with the reader), e.g. in a
    child process (:func:`lagless.kafka.isolated.isolated_reads`)."""

    def __init__(
        self,
        conf: Mapping[str, Any],
        group: str,
        topic: str | None = None,
        fetches: Fetches | None = None,
    ) -> None:
        self.conf = dict(conf)
        self.group = group
        self.topic = topic
        self._probe = OffsetProbe(conf)
        self._head: Consumer | None = None  # made on the first in-process head fetch
        self._fetches = fetches

    def close(self) -> None:
        self._probe.close()
        if self._head is not None:
            self._head.close()
        if self._fetches is not None:
            self._fetches.close()

    def __enter__(self) -> LagReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def check(self) -> bool:
        """Raise a one-line LaglessError when the topic or the group does not exist; False
        when the group exists but has committed nothing yet (its consumers are joining)."""
        if self.topic is not None:
            self._probe.partitions(self.topic)
        if committed_offsets(self.conf, self.group):
            return True
        info = self.describe()  # some brokers (Tansu) list a group only once it committed
        joining = info is not None and info.state not in ("Empty", "Dead")
        if not joining and self.group not in group_ids(self.conf):
            raise LaglessError(
                f"consumer group {self.group!r} not found (no committed offsets, not listed)"
            )
        return False

    def measure(self, assigned: Iterable[str] = ()) -> list[PartitionLag]:
        """The lag of every partition, sorted by topic and partition: of ``--topic``, else of
        every topic the group committed or is ``assigned``."""
        topics = [self.topic] if self.topic is not None else None
        commits = committed_offsets(self.conf, self.group, topics)
        keys: list[PartitionKey] = []
        for topic in sorted(set(topics or [*(t for t, _ in commits), *assigned])):
            try:
                keys.extend((topic, p) for p in self._probe.partitions(topic))
            except ClusterError:
                if self.topic is not None:
                    raise
                log.warning(
                    "group %s has offsets for %s, which no longer exists", self.group, topic
                )
        ends = (self._fetches or self._probe).end_offsets(keys, FETCH_S)
        starts = self._probe.start_offsets(keys)
        now_ms = int(time.time() * 1000)
        positions = {k: position(commits.get(k), starts[k], ends[k]) for k in keys}
        lagging = {k: pos for k, pos in positions.items() if ends[k] > pos}
        heads = (self._fetches or self).head_timestamps(lagging, FETCH_S)
        out = []
        for key in keys:
            lag = ends[key] - positions[key]
            seconds = lag_seconds(now_ms, heads.get(key), lag)
            out.append(
                PartitionLag(key[0], key[1], commits.get(key), starts[key], ends[key], lag, seconds)
            )
        return out

    def head_timestamps(
        self, positions: Mapping[PartitionKey, int], timeout: float = FETCH_S
    ) -> dict[PartitionKey, int | None]:
        """The timestamp of the first record at or after each position (None: none found)."""
        if not positions:
            return {}
        if self._head is None:
            self._head = make_consumer(probe_conf(self.conf, wait_ms=READ_WAIT_MS))
        head = self._head
        head.assign([TopicPartition(t, p, o) for (t, p), o in positions.items()])
        found: dict[PartitionKey, int | None] = {}
        deadline = time.monotonic() + timeout
        try:
            while len(found) < len(positions) and time.monotonic() < deadline:
                for msg in head.consume(100, timeout=0.5):
                    err = msg.error()
                    if err is not None:
                        if err.code() == KafkaError._PARTITION_EOF:
                            eof = coordinates(msg)
                            found.setdefault((eof.topic, eof.partition), None)
                        elif err.fatal() or not err.retriable():
                            raise ClusterError(
                                f"cannot fetch {msg.topic()}[{msg.partition()}]: {err}"
                            )
                        continue
                    where = coordinates(msg)
                    key = (where.topic, where.partition)
                    if key not in found and where.offset >= positions[key]:
                        found[key] = timestamp_ms(msg)
                        head.pause([TopicPartition(where.topic, where.partition)])
        except KafkaException as exc:
            raise ClusterError(f"cannot fetch records of group {self.group!r}: {exc}") from None
        finally:
            head.resume([TopicPartition(t, p) for t, p in positions])
            head.unassign()
        missing = sorted(set(positions) - set(found))
        if missing:
            log.warning("no record fetched within %.0f s for %s", timeout, partitions_text(missing))
        return found

    def describe(self) -> GroupInfo | None:
        """The group's state and members; None when the cluster does not answer."""
        try:
            return describe_group(self.conf, self.group)
        except ClusterError as exc:
            log.info("cannot describe group %s: %s", self.group, exc)
            return None


def activity(info: GroupInfo | None) -> bool | None:
    """Whether a described group has live members; None when its state is not known."""
    if info is None or info.state == "Unknown":
        return None
    return info.active


def measure_lag(
    conf: Mapping[str, Any], group: str, topic: str | None = None
) -> list[PartitionLag]:
    """One-shot lag of ``group`` (checked to exist), optionally limited to ``topic``."""
    with LagReader(conf, group, topic) as reader:
        if not reader.check() and topic is None:
            raise LaglessError(
                f"consumer group {group!r} has not committed offsets yet (its consumers may be "
                "joining): use --watch to wait for them, or --topic to measure from the start"
            )
        return reader.measure()


def totals(rows: Iterable[PartitionLag]) -> dict[str, Any]:
    """Group totals: lag in records summed, lag in seconds the largest known (None when no
    lagging partition's is known: not 0, which would say caught up)."""
    rows = list(rows)
    seconds = [r.lag_seconds for r in rows if r.lag_seconds is not None]
    lagging = [r.lag_seconds for r in rows if r.lag > 0]
    unknown = bool(lagging) and all(s is None for s in lagging)
    return {
        "total_lag": sum(r.lag for r in rows),
        "max_lag_seconds": None if unknown else max(seconds, default=0.0),
        "partition_count": len(rows),
    }
