"""What a run reports: a progress snapshot while it runs, a :class:`RunSummary` at the end."""

from __future__ import annotations

from array import array
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray


@dataclass(frozen=True)
class Progress:
    """A snapshot the poll loop hands to ``on_progress`` about twice a second."""

    processed: int
    dlq: int
    in_flight: int
    paused: int
    assigned: int
    lag_records: int
    seconds: float  # since the run started (group join included)
    records_per_s: float = 0.0  # processed / time since the first record received (Timing)


ProgressFn = Callable[[Progress], None]


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
        self._rng = np.random.default_rng(0)

    def add(self, ms: float) -> None:
        self.add_many([ms])

    def add_many(self, values: list[float] | NDArray[np.floating[Any]]) -> None:
        """Add ``values``: kept while there is room, then sampled (:meth:`_sample`)."""
        if not len(values):
            return
        array = np.asarray(values, dtype=np.float64)
        top = float(array.max())
        if self._max is None or top > self._max:
            self._max = top
        room = self._capacity - len(self._ms)
        if room > 0:
            self._ms.frombytes(array[:room].tobytes())
            self._seen += min(room, len(array))
            array = array[room:]
        if len(array):
            self._sample(array)

    def _sample(self, array: NDArray[np.float64]) -> None:
        """Algorithm R for many values at once (the log is full): the i-th value seen
        replaces a uniformly drawn slot of ``range(seen_i)`` if that slot is a kept one."""
        seen = self._seen + np.arange(1, len(array) + 1, dtype=np.float64)
        slots = (self._rng.random(len(array)) * seen).astype(np.int64)
        keep = slots < self._capacity
        self._seen += len(array)
        if keep.any():
            kept = np.frombuffer(self._ms, dtype=np.float64)  # a view: writes go to the log
            kept[slots[keep]] = array[keep]  # a slot drawn twice keeps the later value

    def summary(self) -> Latency:
        if not self._ms or self._max is None:
            return Latency(None, None, None)
        ordered = np.sort(np.frombuffer(self._ms, dtype=np.float64))  # 1M values: ~0.1 s

        def at(q: float) -> float:
            return round(float(ordered[min(len(ordered) - 1, int(q * len(ordered)))]), 1)

        return Latency(at(0.50), at(0.99), round(self._max, 1))


@dataclass(slots=True)
class Timing:
    """Where a run's time went; the one definition of the engine's figures, in seconds.

    * ``seconds``: the **processing span**, from the first record received (polled from the
      broker) to the last record finished; 0.0 when nothing was finished. Joining the group
      and waiting for ``--until-idle`` after the last record are not in it, so
      ``records_per_s = processed / seconds`` is the engine's own rate.
    * ``join_s``: from the start of the run to the first partition assignment (the group
      join; None if nothing was ever assigned).
    * ``wall_s``: the whole run, start to return (join, processing, idle wait, shutdown).
    """

    started: float  # monotonic clock
    first_assigned: float | None = None
    first_received: float | None = None
    last_finished: float | None = None

    def seconds(self) -> float:
        if self.first_received is None or self.last_finished is None:
            return 0.0
        return max(0.0, self.last_finished - self.first_received)

    def join_s(self) -> float | None:
        return None if self.first_assigned is None else self.first_assigned - self.started


@dataclass(frozen=True)
class RunSummary:
    """The outcome of :func:`lagless.engine.run_engine`.

    ``processed`` counts every record finished: ``ok`` + ``dlq`` + ``skipped`` (failed with
    ``on_failure=skip``, or completed by an earlier run per the offset map).
    ``seconds``, ``join_s`` and ``wall_s`` are defined in :class:`Timing`;
    ``records_per_s`` is ``processed / seconds`` (0.0 when nothing was processed).
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
    inline_batches: int = 0  # batches whose first call ran on the poll thread (engine.inline)
    join_s: float | None = None
    wall_s: float = 0.0
    partitions_revoked: int = 0
    partitions_lost: int = 0
    metadata_kept: bool | None = None  # None: never checked (no offset map was committed)
    per_partition: dict[str, int] = field(default_factory=dict)

    @staticmethod
    def figures(processed: int, timing: Timing, ended: float) -> dict[str, Any]:
        """``seconds``, ``records_per_s``, ``join_s`` and ``wall_s`` of a run (rounded)."""
        seconds = timing.seconds()
        join_s = timing.join_s()
        return {
            "seconds": round(seconds, 3),
            "records_per_s": round(processed / seconds, 1) if seconds > 0 else 0.0,
            "join_s": None if join_s is None else round(join_s, 3),
            "wall_s": round(ended - timing.started, 3),
        }

    def to_json(self) -> dict[str, Any]:
        """The object ``lagless consume --json`` prints."""
        return {
            "processed": self.processed,
            "dlq": self.dlq,
            "seconds": self.seconds,
            "records_per_s": self.records_per_s,
            "join_s": self.join_s,
            "wall_s": self.wall_s,
            "commits": self.commits,
            "rebalances": self.rebalances,
            "pauses": self.pauses,
            "max_in_flight_seen": self.max_in_flight_seen,
            "inline_batches": self.inline_batches,
            "e2e_ms": asdict(self.e2e_ms),
        }
