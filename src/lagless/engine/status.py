"""An instance's status: a snapshot of what the engine owns and does, for consoles and probes.

:meth:`lagless.engine.Engine.status` composes it from the engine's parts: per owned partition
its assignment (epoch: unique per assignment here; since when), the consumer's position (the
offset the next fetch returns), the first unfinished offset (what a commit now stores), the
records in flight and whether it is paused; and the run's counts. It takes no lock and never
calls the consumer: called from another thread it may mix two turns of the loop, each figure
being right for one of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lagless.engine.lifecycle import Lifecycle
from lagless.engine.partitions.owned import Owned
from lagless.engine.tally import Tally


@dataclass(frozen=True)
class PartitionStatus:
    topic: str
    partition: int
    epoch: int  # this instance's assignment number of the partition
    assigned_at: float  # wall clock, seconds
    position: int | None  # the offset the next fetch returns; None: not known yet
    first_unfinished: int | None  # the committable offset; None: nothing known yet
    in_flight: int
    paused: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "epoch": self.epoch,
            "assigned_at": self.assigned_at,
            "position": self.position,
            "first_unfinished": self.first_unfinished,
            "in_flight": self.in_flight,
            "paused": self.paused,
        }


@dataclass(frozen=True)
class InstanceStatus:
    partitions: tuple[PartitionStatus, ...]
    processed: int
    in_flight: int
    stopping: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "partitions": [p.to_json() for p in self.partitions],
            "processed": self.processed,
            "in_flight": self.in_flight,
            "stopping": self.stopping,
        }


def snapshot(owned: Owned, tally: Tally, lifecycle: Lifecycle) -> InstanceStatus:
    """The status now (see the module doc). It never calls the consumer: a confluent-kafka
    consumer called from another thread waits for the poll thread's ``consume`` (measured: it
    can wait for as long as the loop polls), so positions are the ones the poll thread last
    saw (at each poll of the partition, and by the watch twice a second)."""
    states = sorted(list(owned.states.values()), key=lambda s: s.tp)
    paused = set(owned.paused)
    return InstanceStatus(
        partitions=tuple(
            PartitionStatus(
                topic=s.tp[0],
                partition=s.tp[1],
                epoch=s.epoch,
                assigned_at=s.assigned_at,
                position=s.position,
                first_unfinished=s.tracker.committable,
                in_flight=s.in_flight,
                paused=s.tp in paused,
            )
            for s in states
        ),
        processed=tally.processed,
        in_flight=tally.in_flight,
        stopping=lifecycle.stopping,
    )
