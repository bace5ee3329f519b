"""The console's reads of the cluster, batched for every group at once.

One :class:`ClusterReads` keeps its clients open across cycles (an admin client, an offset
probe and the head-record reader of :class:`lagless.observe.lag.LagReader`): one ListGroups, one
DescribeGroups for all groups, the groups' committed offsets (requests sent together, then
collected), one metadata request, the log ends of every partition in one probe
(:mod:`lagless.kafka.offsets`), start offsets in one ListOffsets(EARLIEST) and cached, and the
head timestamps of lagging partitions cached by position (a partition stuck at one offset costs
one fetch, not one a cycle). Where a topic deleted during a fetch crashes the client (Tansu),
the probe and the head-record reader run in a child process (:mod:`lagless.kafka.isolated`).

Group ids: Tansu lists a group whose id holds characters such as ``<`` percent-encoded (``%3C``)
while its offsets are stored under the real id; :meth:`ClusterReads.group_ids` maps each listed
id to the id its offsets are stored under, so every group shows once, under its real id.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import unquote

from confluent_kafka import ConsumerGroupTopicPartitions, KafkaException, TopicPartition
from confluent_kafka.admin import OffsetSpec  # type: ignore[attr-defined]

from lagless.errors import ClusterError
from lagless.kafka.admin import result_of
from lagless.kafka.clients import make_admin
from lagless.kafka.compat import deviations_of
from lagless.kafka.groups import GroupInfo, Member, state_name
from lagless.kafka.isolated import IsolatedReads
from lagless.kafka.offsets import OffsetProbe, PartitionKey
from lagless.observe.lag import LagReader

EARLIEST = OffsetSpec.earliest()  # type: ignore[no-untyped-call]
START_REFRESH_S = 300.0  # start offsets move only with retention: read them again this often
IN_FLIGHT = 100  # offset requests outstanding at once (one per group)
SAMPLER = "lagless-ui-sampler"  # the group id the head-record reader names


class ClusterReads:
    """Batched reads for the sampler; ClusterError (one line) when the cluster does not answer."""

    def __init__(self, conf: Mapping[str, Any], timeout: float = 5.0) -> None:
        self.conf = {**conf, "log_level": 0}
        self.timeout = timeout
        self._admin = make_admin(self.conf)
        self._probe: OffsetProbe | IsolatedReads | None = None
        self._heads: LagReader | IsolatedReads | None = None
        self._starts: dict[PartitionKey, int] = {}
        self._starts_at = 0.0
        self._head_ts: dict[tuple[str, int, int], int | None] = {}
        self._real_ids: dict[str, str] = {}

    def close(self) -> None:
        for reader in (self._probe, self._heads):
            if reader is not None:
                reader.close()

    def _fetchers(self) -> tuple[OffsetProbe | IsolatedReads, LagReader | IsolatedReads]:
        """The fetching readers, made on first use: in a child process where a topic deleted
        during a fetch crashes the client (:mod:`lagless.kafka.isolated`)."""
        if self._probe is None or self._heads is None:
            if deviations_of(self._admin, self.timeout).fetch_survives_delete:
                self._probe, self._heads = OffsetProbe(self.conf), LagReader(self.conf, SAMPLER)
            else:
                self._probe = self._heads = IsolatedReads(self.conf, SAMPLER)
        return self._probe, self._heads

    def listed(self) -> list[str]:
        future = self._admin.list_consumer_groups(request_timeout=self.timeout)
        result = result_of(future, "list consumer groups", self.timeout)
        return sorted({g.group_id for g in result.valid})

    def committed(self, groups: Iterable[str]) -> dict[str, dict[PartitionKey, int]]:
        """Each group's committed offsets: requests sent ``IN_FLIGHT`` at a time, then
        collected (every future is waited for, even after a failure, before the error)."""
        names = list(groups)
        out: dict[str, dict[PartitionKey, int]] = {}
        failure: ClusterError | None = None
        for start in range(0, len(names), IN_FLIGHT):
            futures = {
                g: self._admin.list_consumer_group_offsets(
                    [ConsumerGroupTopicPartitions(g)], request_timeout=self.timeout
                )[g]
                for g in names[start : start + IN_FLIGHT]
            }
            for group, future in futures.items():
                try:
                    result = result_of(future, f"read offsets of group {group!r}", self.timeout)
                except ClusterError as exc:
                    failure = failure or exc
                    continue
                out[group] = {
                    (tp.topic, tp.partition): tp.offset
                    for tp in result.topic_partitions or []
                    if tp.offset >= 0
                }
            if failure is not None:
                raise failure
        return out

    def group_ids(self, listed: list[str]) -> tuple[list[str], dict[str, str]]:
        """The real ids of the listed groups (sorted, each once) and ``{real: listed}`` for
        those listed under another (percent-encoded) id."""
        maybe = [g for g in listed if unquote(g) != g and g not in self._real_ids]
        if maybe:
            decoded = {g: unquote(g) for g in maybe}
            offsets = self.committed([*maybe, *decoded.values()])
            for g, real in decoded.items():
                found_real = bool(offsets.get(real)) and not offsets.get(g)
                self._real_ids[g] = real if found_real else g
        real_of = {g: self._real_ids.get(g, g) for g in listed}
        aliases = {real: g for g, real in real_of.items() if real != g}
        return sorted(set(real_of.values())), aliases

    def describe(self, groups: list[str]) -> dict[str, GroupInfo]:
        if not groups:
            return {}
        futures = self._admin.describe_consumer_groups(groups, request_timeout=self.timeout)
        out = {}
        for group in groups:
            desc = result_of(futures[group], f"describe group {group!r}", self.timeout)
            members = tuple(
                Member(
                    m.member_id, m.client_id, m.host,
                    tuple(sorted((tp.topic, tp.partition)
                                 for tp in m.assignment.topic_partitions or [])),
                )
                for m in desc.members or []
            )  # fmt: skip
            out[group] = GroupInfo(
                group, state_name(desc.state), desc.partition_assignor or "", members
            )
        return out

    def topics(self) -> dict[str, int]:
        """Partition count of every topic (internal ``__*`` topics left out)."""
        try:
            meta = self._admin.list_topics(timeout=self.timeout)
        except KafkaException as exc:
            raise ClusterError(f"cannot list topics: {exc.args[0].str()}") from None
        return {
            name: len(info.partitions)
            for name, info in meta.topics.items()
            if not name.startswith("__") and info.error is None
        }

    def ends(self, keys: list[PartitionKey]) -> dict[PartitionKey, int]:
        return self._fetchers()[0].end_offsets(keys, timeout=self.timeout)

    def starts(self, keys: list[PartitionKey]) -> dict[PartitionKey, int]:
        """Start offsets (ListOffsets EARLIEST in one request), cached ``START_REFRESH_S``."""
        now = time.monotonic()
        if now - self._starts_at > START_REFRESH_S:
            self._starts, self._starts_at = {}, now
        missing = [k for k in keys if k not in self._starts]
        if missing:
            request = {TopicPartition(t, p): EARLIEST for t, p in missing}
            futures = self._admin.list_offsets(request, request_timeout=self.timeout)
            for tp, future in futures.items():
                info = result_of(future, f"list offsets of {tp.topic}[{tp.partition}]",
                                 self.timeout)  # fmt: skip
                self._starts[(tp.topic, tp.partition)] = max(0, info.offset)
        return {k: self._starts[k] for k in keys}

    def head_timestamps(
        self, wanted: Iterable[tuple[str, int, int]]
    ) -> dict[tuple[str, int, int], int | None]:
        """The timestamp of the record at each (topic, partition, offset), cached."""
        wanted = set(wanted)
        todo = sorted(w for w in wanted if w not in self._head_ts)
        while todo:
            round_: dict[PartitionKey, int] = {}
            for topic, partition, offset in todo:
                round_.setdefault((topic, partition), offset)
            found = self._fetchers()[1].head_timestamps(round_, timeout=self.timeout)
            for (topic, partition), offset in round_.items():
                self._head_ts[(topic, partition, offset)] = found.get((topic, partition))
            todo = [w for w in todo if w not in self._head_ts]
        return {w: self._head_ts.get(w) for w in wanted}

    def forget_heads(self, keep: set[tuple[str, int, int]]) -> None:
        """Drop cached head timestamps of positions no group is at any more."""
        for key in [k for k in self._head_ts if k not in keep]:
            del self._head_ts[key]
