"""What a run reports: a progress snapshot while it runs, a :class:`RunSummary` at the end."""

from __future__ import annotations

import random
from array import array
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class Progress:
    """A snapshot the poll loop hands to ``on_progress`` about twice a second."""

    processed: int
    dlq: int
    in_flight: int
    paused: int
    assigned: int
    lag_records: int
    seconds: float


@dataclass(frozen=True)
class Latency:
    """End-to-end latency (record timestamp -> handler done) in milliseconds."""

    p50: float | None
    p99: float | None
    max: float | None


class LatencyLog:
    """End-to-end latencies of a run for percentiles: every one up to ``capacity`` (8 bytes
    each, so exact for runs up to a million records), then a uniform reservoir sample of that
    size (Algorithm R) so a long-running consumer does not grow; the max stays exact."""

    def __init__(self, capacity: int = 1_000_000) -> None:
        self._ms = array("d")
        self._capacity = capacity
        self._seen = 0
        self._max: float | None = None
        self._rng = random.Random(0)

    def add(self, ms: float) -> None:
        self._seen += 1
        if self._max is None or ms > self._max:
            self._max = ms
        if len(self._ms) < self._capacity:
            self._ms.append(ms)
            return
        slot = self._rng.randrange(self._seen)
        if slot < self._capacity:
            self._ms[slot] = ms

    def add_many(self, values: list[float]) -> None:
        top = max(values)
        if self._max is None or top > self._max:
            self._max = top
        room = self._capacity - len(self._ms)
        if len(values) <= room:
            self._seen += len(values)
            self._ms.extend(values)
            return
        for ms in values:
            self.add(ms)

    def summary(self) -> Latency:
        if not self._ms or self._max is None:
            return Latency(None, None, None)
        ordered = sorted(self._ms)

        def at(q: float) -> float:
            return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 1)

        return Latency(at(0.50), at(0.99), round(self._max, 1))


@dataclass(frozen=True)
class RunSummary:
    """The outcome of :func:`lagless.engine.run_engine`.

    ``processed`` counts every record finished: ``ok`` + ``dlq`` + ``skipped`` (failed with
    ``on_failure=skip``, or completed by an earlier run per the offset map).
    ``per_partition`` maps ``"topic[partition]"`` to the records finished there.
    """

    processed: int
    ok: int
    dlq: int
    skipped: int
    seconds: float
    records_per_s: float
    commits: int
    rebalances: int
    pauses: int
    max_in_flight_seen: int
    e2e_ms: Latency
    partitions_revoked: int = 0
    partitions_lost: int = 0
    metadata_kept: bool | None = None  # None: never checked (no offset map was committed)
    per_partition: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The object ``lagless consume --json`` prints."""
        return {
            "processed": self.processed,
            "dlq": self.dlq,
            "seconds": self.seconds,
            "records_per_s": self.records_per_s,
            "commits": self.commits,
            "rebalances": self.rebalances,
            "pauses": self.pauses,
            "max_in_flight_seen": self.max_in_flight_seen,
            "e2e_ms": asdict(self.e2e_ms),
        }
