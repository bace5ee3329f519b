"""What one sampling cycle saw: groups with their partitions, topics, instances.

Pure data (frozen dataclasses); the sampler fills it, the store keeps it, the API and the pages
read it. The figures are those of :mod:`lagless.observe.figures`: ``lag`` is committed lag in
records, ``lag_s`` lag in seconds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

MEMBERS_NOT_ANSWERED = "not answered"  # the broker's DescribeGroups gave no member list


@dataclass(frozen=True)
class PartitionSample:
    """One partition of one group: committed offset, log end, committed lag, lag seconds and
    the owners (client ids; two at once when instances both claim it)."""

    topic: str
    partition: int
    committed: int | None
    end: int
    lag: int
    lag_s: float | None
    owners: tuple[str, ...] = ()

    @property
    def key(self) -> tuple[str, int]:
        return (self.topic, self.partition)

    def to_json(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "committed": self.committed,
            "end": self.end,
            "lag": self.lag,
            "lag_s": self.lag_s,
            "owner": self.owners[0] if self.owners else None,
            "owners": list(self.owners),
        }


@dataclass(frozen=True)
class GroupSample:
    """A group as the cluster showed it in one cycle.

    ``members`` is the broker's member count, or, where the broker does not answer with members
    (Tansu), the live lagless instances of the group (``members_source`` says which); ``listed_as``
    is the id ListGroups returned when it differs from the real one (percent-encoded by Tansu).
    """

    group: str
    state: str
    protocol: str
    members: int
    members_source: str  # "broker", "instances" or MEMBERS_NOT_ANSWERED
    partitions: tuple[PartitionSample, ...]
    active: bool | None
    status: str = "OK"
    listed_as: str | None = None

    @property
    def lag(self) -> int:
        return sum(p.lag for p in self.partitions)

    @property
    def lag_s(self) -> float:
        return max((p.lag_s or 0.0 for p in self.partitions), default=0.0)

    def assignment(self) -> frozenset[tuple[str, str, int]]:
        """(owner, topic, partition) of every owned partition."""
        return frozenset((o, p.topic, p.partition) for p in self.partitions for o in p.owners)

    def to_json(self) -> dict[str, Any]:
        return {
            "group": self.group,
            "state": self.state,
            "protocol": self.protocol,
            "members": self.members,
            "members_source": self.members_source,
            "lag": self.lag,
            "lag_s": self.lag_s,
            "status": self.status,
        }


@dataclass(frozen=True)
class TopicSample:
    """A topic's partitions and their log ends (``rate``: records per second written, from the
    rise of the ends since the previous cycle; None on the first)."""

    topic: str
    ends: tuple[int, ...]
    rate: float | None = None

    @property
    def end(self) -> int:
        return sum(self.ends)

    def to_json(self) -> dict[str, Any]:
        return {"topic": self.topic, "partitions": len(self.ends), "end": self.end,
                "rate": self.rate}  # fmt: skip


@dataclass(frozen=True)
class Rebalance:
    """One rebalance of a group: a change of its assignment (or generation) seen by the sampler.

    ``at`` is the first cycle that saw it; ``duration_s`` (None while it lasts) runs until every
    partition of the group is owned again and the assignment held for one cycle, to the
    sampler's resolution; ``moved`` counts the partitions whose owners changed.
    """

    group: str
    at: float
    duration_s: float | None
    moved: int

    def to_json(self) -> dict[str, Any]:
        return {"at": self.at, "duration_s": self.duration_s, "moved": self.moved}


@dataclass(frozen=True)
class Snapshot:
    """One cycle: when, whether the cluster answered, what it showed."""

    t: float
    up: bool
    groups: tuple[GroupSample, ...] = ()
    topics: tuple[TopicSample, ...] = ()
    cycle_s: float = 0.0
    error: str | None = None
    down_since: float | None = None
    rebalances: tuple[Rebalance, ...] = field(default_factory=tuple)  # closed in this cycle

    def group(self, name: str) -> GroupSample | None:
        for g in self.groups:
            if g.group == name:
                return g
        return None
