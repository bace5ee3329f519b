"""The tally: what a run did so far, in one place every part counts into.

Records finished by outcome (``ok``, ``dlq``, ``skipped``) and per partition, what is in flight
(records and tasks), and the run's counters (commits, rebalance callbacks, pauses, partitions
revoked and lost). The figures of :class:`lagless.engine.summary.RunSummary` come from here.
"""

from __future__ import annotations

import time

from lagless.engine.offsets.policy import CommitPolicy
from lagless.engine.partitions.state import DLQ, OK, SKIPPED, PartitionState
from lagless.engine.summary import Timing


class Tally:
    """Counts of one run (on the poll thread)."""

    def __init__(self, policy: CommitPolicy) -> None:
        self._policy = policy
        self.timing = Timing(time.monotonic())  # the run's figures: see Timing
        self.counts = {OK: 0, DLQ: 0, SKIPPED: 0}
        self.per_partition: dict[str, int] = {}
        self.in_flight = 0  # records dispatched, not finished
        self.tasks = 0  # tasks dispatched, not finished (handler calls running or queued)
        self.max_in_flight_seen = 0
        self.commits = 0
        self.rebalances = 0
        self.pauses = 0
        self.revoked = 0
        self.lost = 0

    @property
    def processed(self) -> int:
        return sum(self.counts.values())

    def count(
        self, state: PartitionState, kind: str, records: int = 1, *, metric: bool = True
    ) -> None:
        """``records`` of ``state``'s partition finished as ``kind``; ``metric=False``: their
        counter is published with their latencies (see :mod:`lagless.engine.results.publish`)."""
        self.counts[kind] += records
        state.finished += records
        if metric:
            state.metrics.finished[kind].inc(records)
        self._policy.finished(records)
        self.timing.last_finished = time.monotonic()

    def partition_done(self, state: PartitionState) -> None:
        """Move what finished in ``state``'s partition into the per-partition counts."""
        name = f"{state.tp[0]}[{state.tp[1]}]"
        self.per_partition[name] = self.per_partition.get(name, 0) + state.finished
        state.finished = 0
