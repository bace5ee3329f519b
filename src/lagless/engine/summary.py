"""What a run reports: a progress snapshot while it runs, a :class:`RunSummary` at the end."""

from __future__ import annotations

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
    """Every end-to-end latency of a run (8 bytes a record), for exact percentiles."""

    def __init__(self) -> None:
        self._ms = array("d")

    def add(self, ms: float) -> None:
        self._ms.append(ms)

    def summary(self) -> Latency:
        if not self._ms:
            return Latency(None, None, None)
        ordered = sorted(self._ms)

        def at(q: float) -> float:
            return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 1)

        return Latency(at(0.50), at(0.99), round(ordered[-1], 1))


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
