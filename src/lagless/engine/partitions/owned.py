"""The partitions this member owns: their states by key, and which of them are paused.

One :class:`Owned` per run, made by the engine and handed to every part that reads or changes
per-partition state; the rebalance callbacks (:mod:`.rebalance`) add and drop states, intake
pauses and resumes them.
"""

from __future__ import annotations

from lagless.engine.partitions.state import PartitionKey, PartitionState


class Owned:
    """The owned partitions' states (``states``) and the paused ones' keys (``paused``)."""

    def __init__(self) -> None:
        self.states: dict[PartitionKey, PartitionState] = {}
        self.paused: set[PartitionKey] = set()
        self.epoch = 0  # the last assignment's number: unique per partition assignment

    def next_epoch(self) -> int:
        self.epoch += 1
        return self.epoch

    def busy(self) -> bool:
        """Records of an owned partition are running or their dead letters on their way."""
        return any(s.busy for s in self.states.values())

    def holding(self) -> bool:
        """An owned partition holds records (tracked, unfinished) or is busy."""
        return any(s.tracker.pending or s.busy for s in self.states.values())
