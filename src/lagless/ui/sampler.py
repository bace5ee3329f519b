"""The console's sampler: every ``interval`` seconds, every group and topic of the cluster.

One cycle reads (through :class:`lagless.ui.cluster.ClusterReads`) the groups, their state,
protocol and members, their committed offsets and every partition's log end, and computes per
group and partition the figures of :mod:`lagless.observe.figures`: committed lag (records) as
:mod:`lagless.observe.lag` defines it (its ``position``: commit, else the start offset, clamped)
and lag in seconds (:func:`lagless.observe.lagtime.lag_seconds`). Per group it keeps the Burrow
status (:func:`lagless.observe.status.evaluate` over a sliding window) and turns changes of the
assignment into rebalance events (:class:`lagless.ui.rebalances.RebalanceTracker`).

Owners come from the broker's member list, else from the lagless instances that publish their
status (:mod:`lagless.observe.instance`): Tansu does not answer DescribeGroups with members.
A cycle the cluster does not answer marks it unreachable (since when) and keeps the last good
figures; the next cycle that succeeds resumes.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any

from confluent_kafka import KafkaException

from lagless.errors import ClusterError
from lagless.kafka.groups import GroupInfo
from lagless.kafka.offsets import PartitionKey
from lagless.observe.lag import activity, position
from lagless.observe.lagtime import lag_seconds
from lagless.observe.status import Observation, Status, evaluate, worst
from lagless.ui.cluster import ClusterReads
from lagless.ui.model import (
    MEMBERS_NOT_ANSWERED,
    GroupSample,
    PartitionSample,
    Rebalance,
    Snapshot,
    TopicSample,
)
from lagless.ui.rebalances import RebalanceTracker

log = logging.getLogger(__name__)

InstancesFn = Callable[[], list[dict[str, Any]]]
SnapshotSink = Callable[[Snapshot], None]
STATUS_WINDOW_S = 30.0
SAMPLING_FAILED = "sampling failed"  # a cycle's error that is no cluster error (logged once)


def instance_owners(
    instances: Iterable[Mapping[str, Any]],
) -> dict[str, dict[PartitionKey, list[str]]]:
    """``{group: {(topic, partition): [client ids]}}`` from the instances' published status."""
    out: dict[str, dict[PartitionKey, list[str]]] = defaultdict(lambda: defaultdict(list))
    for doc in instances:
        for part in doc.get("partitions", []):
            key = (str(part["topic"]), int(part["partition"]))
            out[str(doc["group"])][key].append(str(doc["client_id"]))
    return out


def members_of(info: GroupInfo | None, owners: Mapping[PartitionKey, list[str]]) -> tuple[int, str]:
    """The member count and where it comes from: the broker, the instances, or not answered."""
    if info is not None and info.members:
        return len(info.members), "broker"
    clients = {c for held in owners.values() for c in held}
    if clients:
        return len(clients), "instances"
    if info is not None and info.state in ("Empty", "Dead"):
        return 0, "broker"
    return 0, MEMBERS_NOT_ANSWERED


def protocol_of(info: GroupInfo | None) -> str:
    """The group's assignment protocol, as the broker answered it with its members. Without
    members it is not trusted: Tansu 0.6 answers a member id there (measured), so it is shown as
    not answered."""
    if info is None or info.state in ("Empty", "Dead"):
        return ""
    return info.protocol if info.members else MEMBERS_NOT_ANSWERED


class Sampler:
    """Samples the cluster in a daemon thread; :attr:`latest` is the last snapshot."""

    def __init__(
        self,
        reads: ClusterReads,
        interval: float = 1.0,
        instances: InstancesFn | None = None,
        sink: SnapshotSink | None = None,
        window: float = STATUS_WINDOW_S,
    ) -> None:
        self.reads = reads
        self.interval = interval
        self.window = window
        self._instances = instances or (lambda: [])
        self._sink = sink
        self.rebalances = RebalanceTracker()
        self.latest = Snapshot(time.time(), up=False, error="not sampled yet")
        self._history: dict[tuple[str, str, int], deque[Observation]] = {}
        self._down_since: float | None = None
        self._failed: str | None = None  # the last unexpected failure logged (once)
        self._instanced: set[str] = set()  # groups whose lagless instances were seen
        self._previous_ends: tuple[float, dict[PartitionKey, int]] | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="lagless-ui-sampler", daemon=True)

    def start(self) -> Sampler:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=15.0)

    def _run(self) -> None:
        while not self._stop.is_set():
            began = time.monotonic()
            self.cycle()
            self._stop.wait(max(0.0, self.interval - (time.monotonic() - began)))

    def cycle(self) -> Snapshot:
        """One look at the cluster (never raises: a failure is a snapshot with ``up=False``
        and its error; an unexpected one is logged with its traceback once)."""
        began = time.monotonic()
        now = time.time()
        try:
            snap = self.read(now)
            self._down_since = None
        except (ClusterError, KafkaException) as exc:
            reason = str(exc.args[0]) if exc.args else str(exc)
            if self._down_since is None:
                self._down_since = now
                log.warning("cluster unreachable: %s", reason)
            last = self.latest
            snap = Snapshot(now, False, last.groups, last.topics, error=reason,
                            down_since=self._down_since)  # fmt: skip
        except Exception as exc:  # a bug or a bad input must not end the sampling for good
            reason = f"{SAMPLING_FAILED}: {type(exc).__name__}: {exc}"
            if reason != self._failed:
                log.exception("sampling cycle failed")
            self._failed = reason
            if self._down_since is None:
                self._down_since = now
            last = self.latest
            snap = Snapshot(now, False, last.groups, last.topics, error=reason,
                            down_since=self._down_since)  # fmt: skip
        else:
            self._failed = None
        snap = replace(snap, cycle_s=time.monotonic() - began)
        self.latest = snap
        if self._sink is not None:
            self._sink(snap)
        return snap

    def read(self, now: float) -> Snapshot:
        reads = self.reads
        groups, aliases = reads.group_ids(reads.listed())
        infos = reads.describe(groups)
        commits = reads.committed(groups)
        partition_counts = reads.topics()
        owners = instance_owners(self._instances())
        by_topic = {t: [(t, p) for p in range(n)] for t, n in sorted(partition_counts.items())}
        all_keys = [k for keys in by_topic.values() for k in keys]
        ends = reads.ends(all_keys)
        topics = self._topics(now, partition_counts, ends)
        wanted: dict[str, list[PartitionKey]] = {}
        for group in groups:
            held = owners.get(group, {})
            info = infos.get(group)
            assigned = {t for m in info.members for t, _ in m.partitions} if info else set()
            names = {t for t, _ in commits.get(group, {})} | assigned | {t for t, _ in held}
            wanted[group] = [k for t in sorted(names) for k in by_topic.get(t, ())]
        for group in set(owners) - set(groups):  # instances of a group not listed yet
            groups.append(group)
            names = {t for t, _ in owners[group]}
            wanted[group] = [k for t in sorted(names) for k in by_topic.get(t, ())]
        starts = reads.starts(sorted({k for keys in wanted.values() for k in keys}))
        positions = {
            g: {k: position(commits.get(g, {}).get(k), starts[k], ends[k]) for k in keys}
            for g, keys in wanted.items()
        }
        heads = reads.head_timestamps(
            (t, p, pos) for g in positions for (t, p), pos in positions[g].items()
            if ends[(t, p)] > pos
        )  # fmt: skip
        reads.forget_heads(set(heads))
        now_ms = int(now * 1000)
        samples: list[GroupSample] = []
        done: list[Rebalance] = []
        for group in sorted(groups):
            info = infos.get(group)
            held = owners.get(group, {})
            members, source = members_of(info, held)
            parts = []
            for key in wanted[group]:
                pos = positions[group][key]
                lag = ends[key] - pos
                who = tuple(held.get(key, ()))
                if info is not None and not who and (m := info.owner(key)) is not None:
                    who = (m.client_id,)
                seconds = lag_seconds(now_ms, heads.get((key[0], key[1], pos)), lag)
                committed = commits.get(group, {}).get(key)
                parts.append(
                    PartitionSample(key[0], key[1], committed, ends[key], lag, seconds, who)
                )
            active = activity(info)
            if held:
                active = True
                self._instanced.add(group)
            elif active and group in self._instanced and (info is None or not info.members):
                # the broker lists no member (Tansu keeps a killed group Stable) and every
                # instance of the group the console saw is gone: no live member
                active = False
            sample = GroupSample(
                group, info.state if info else "Unknown", protocol_of(info),
                members, source, tuple(parts), active, listed_as=aliases.get(group),
            )  # fmt: skip
            sample = replace(sample, status=self._status(sample, now))
            if (closed := self.rebalances.observe(sample, now)) is not None:
                done.append(closed)
            samples.append(sample)
        self._forget(samples)
        return Snapshot(now, True, tuple(samples), topics, rebalances=tuple(done))

    def _topics(
        self, now: float, counts: Mapping[str, int], ends: Mapping[PartitionKey, int]
    ) -> tuple[TopicSample, ...]:
        prev = self._previous_ends
        self._previous_ends = (now, dict(ends))
        out = []
        for topic in sorted(counts):
            mine = [ends[(topic, p)] for p in range(counts[topic])]
            rate = None
            if prev is not None and now > prev[0]:
                before = [prev[1].get((topic, p)) for p in range(counts[topic])]
                if all(b is not None for b in before):
                    rise = sum(mine) - sum(b for b in before if b is not None)
                    rate = round(max(0, rise) / (now - prev[0]), 1)
            out.append(TopicSample(topic, tuple(mine), rate))
        return tuple(out)

    def _status(self, group: GroupSample, now: float) -> str:
        statuses = []
        for part in group.partitions:
            key = (group.group, part.topic, part.partition)
            seen = self._history.setdefault(key, deque())
            seen.append(Observation(now, part.end - part.lag, part.end))
            while len(seen) > 2 and seen[1].t <= now - self.window:
                seen.popleft()
            statuses.append(evaluate(list(seen), self.window, now, group.active))
        return str(worst(statuses) if statuses else Status.OK)

    def _forget(self, groups: Iterable[GroupSample]) -> None:
        """Drop the history of groups and partitions that are gone (deleted)."""
        keep = {(g.group, p.topic, p.partition) for g in groups for p in g.partitions}
        for key in [k for k in self._history if k not in keep]:
            del self._history[key]
        names = {g.group for g in groups}
        self.rebalances.forget(names)
        self._instanced &= names
