"""Backpressure: bound what each partition holds; pause it when full, resume when drained.

A partition *holds* every record from its first unfinished one to the last fetched
(:attr:`PartitionTracker.pending`): buffered, in flight, and done above the first unfinished.
A partition takes fetched records while it has room; a record offered to a full partition is
rejected (:class:`MessageRejected`, after arroyo): the poll loop keeps it, pauses the partition
and goes on polling, so heartbeats continue and
``max.poll.interval.ms`` is never breached however long a handler runs. When the partition has
drained to half its bound the kept records are offered again and the partition resumed.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any


class MessageRejected(Exception):  # noqa: N818 (arroyo's name)
    """The partition holds as many records as it may: offer this one again later."""


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

    def admit(self, pending: int) -> None:
        """Raise MessageRejected when a partition holding ``pending`` records is full."""
        if pending >= self.bound:
            raise MessageRejected

    def room(self, pending: int) -> int:
        """How many more records a partition holding ``pending`` records may take."""
        return max(0, self.bound - pending)

    def may_resume(self, pending: int, backlog: Backlog) -> bool:
        """A paused partition may be resumed once its kept records are in and it drained."""
        return backlog.paused and not backlog.kept and pending <= self.resume_at
