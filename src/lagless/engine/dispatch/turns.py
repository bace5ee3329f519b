"""Turns: the round-robin over partitions that may start a task, shared by both dispatchers
(:mod:`.lanes` per record, :mod:`.runs` per batch), with the counts the poll loop reads and
the linger that lets a partition's task fill."""

from __future__ import annotations

from collections import deque

from lagless.engine.config import Ordering

PartitionKey = tuple[str, int]


class Turns:
    """The round-robin turn over partitions that may start a task, the counts the poll loop
    reads (held, ready, starving) and the linger, shared by both dispatchers."""

    def __init__(self, ordering: Ordering, linger_s: float = 0.0) -> None:
        self.ordering = ordering
        self.linger_s = linger_s
        self._turn: deque[PartitionKey] = deque()
        self._scheduled: set[PartitionKey] = set()
        self.held = 0  # records pushed and not started, over all partitions
        self.ready = 0  # of which ready to start now
        self.starving = 0  # open partitions holding no record
        self.lingering_until: float | None = None  # the next time a lingering task is due

    def _lingers(self, tp: PartitionKey, held: int, since: float, size: int, now: float) -> bool:
        """Whether partition ``tp`` (holding ``held`` records since ``since``) waits for its
        task to fill; if so it keeps its turn and ``lingering_until`` says when it is due."""
        linger = self.linger_s
        if not linger or held >= size or now - since >= linger:
            return False
        self._turn.append(tp)
        due = since + linger
        if self.lingering_until is None or due < self.lingering_until:
            self.lingering_until = due
        return True

    def _dropped(self, held: int, ready: int) -> int:
        """A closed partition's ``held`` records (``ready`` of them ready) leave the counts;
        returns ``held``."""
        self.held -= held
        self.ready -= ready
        if not held:
            self.starving -= 1
        return held

    def _schedule(self, tp: PartitionKey) -> None:
        if tp not in self._scheduled:
            self._scheduled.add(tp)
            self._turn.append(tp)
