"""Backpressure: bound what each partition holds; pause it when full, resume when drained.

A partition *holds* every record from its first unfinished one to the last fetched
(:attr:`PartitionTracker.pending`): buffered, in flight, and done above the first unfinished.
A partition takes fetched records while it has room (:meth:`FlowControl.room`); what a full
partition has no room for is kept, the partition paused and polling goes on, so heartbeats
continue and ``max.poll.interval.ms`` is never breached however long a handler runs. When the
partition has drained to half its bound the kept records are offered again and it is resumed.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Backlog:
    """A partition's flow state: paused or not, and the records fetched but not admitted."""

    paused: bool = False
    kept: deque[Any] = field(default_factory=deque)  # records (messages: a batch handler)


class FlowControl:
    """The per-partition bound and the pause/resume decisions."""

    def __init__(self, bound: int) -> None:
        self.bound = bound
        self.resume_at = max(0, bound // 2)

    def room(self, pending: int) -> int:
        """How many more records a partition holding ``pending`` records may take."""
        return max(0, self.bound - pending)

    def may_resume(self, pending: int, backlog: Backlog) -> bool:
        """A paused partition may be resumed once its kept records are in and it drained."""
        return backlog.paused and not backlog.kept and pending <= self.resume_at
