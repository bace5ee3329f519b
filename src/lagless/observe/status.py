"""Partition lag status over a sliding window, after Burrow's evaluation rules.

``lagless lag --watch`` observes each partition once per interval: the group's committed offset
and the partition's end offset. Over the last ``window`` seconds of observations a partition is:

``OK``
    the lag was zero at least once in the window (Burrow rule 1), or the lag went down at
    least once while the commits moved, or there is not a full window of history yet.
``WARN``
    commits move but the lag never went down over the window: the consumer is alive but
    slower than the producers (Burrow rule 5, "lag not decreasing").
``STALL``
    the committed offset did not move over the whole window while lag existed, and the group
    still has active members: a consumer is there but stuck (Burrow rule 4).
``STOP``
    the group has no active member and the committed offset did not move while the partition
    lagged: nobody consumes it (Burrow rule 3). Reported at once, without waiting for a full
    window, so a group nobody consumes is never ``OK`` while behind.

Burrow reads every commit (with its timestamp) from ``__consumer_offsets``; a client only sees
the committed offset when it asks, so a commit of an unchanged offset is invisible. Whether the
group has live members (DescribeGroups) stands in for "still committing": when it is not known
a frozen partition is reported ``STALL``. The rules are a pure function: :func:`evaluate`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from itertools import pairwise


class Status(StrEnum):
    OK = "OK"
    WARN = "WARN"
    STALL = "STALL"
    STOP = "STOP"


@dataclass(frozen=True)
class Observation:
    """One look at a partition at time ``t`` (seconds): committed position and end offset."""

    t: float
    committed: int
    end: int

    @property
    def lag(self) -> int:
        return max(0, self.end - self.committed)


def in_window(observations: Sequence[Observation], window: float, now: float) -> list[Observation]:
    """The observations of the last ``window`` seconds, led by the last one at or before its
    start (the anchor that shows whether the window is fully covered)."""
    start = now - window
    anchor = 0
    for i, obs in enumerate(observations):
        if obs.t <= start:
            anchor = i
    return [o for o in observations[anchor:] if o.t <= now]


def coverage(observations: Sequence[Observation], window: float, now: float) -> float:
    """How much of the window the history covers, 0..1."""
    if not observations or window <= 0:
        return 1.0 if observations else 0.0
    return max(0.0, min(1.0, (now - observations[0].t) / window))


def evaluate(
    observations: Sequence[Observation],
    window: float,
    now: float | None = None,
    active: bool | None = None,
) -> Status:
    """The status of one partition from its time-ordered ``observations``.

    ``active`` says whether the group has live members (None: unknown).
    """
    if not observations:
        return Status.OK
    now = observations[-1].t if now is None else now
    seen = in_window(observations, window, now)
    if not seen or any(o.lag == 0 for o in seen):
        return Status.OK
    frozen = all(o.committed == seen[0].committed for o in seen)
    if active is False and frozen:
        return Status.STOP  # behind and nobody consumes: no full window needed to say so
    if coverage(seen, window, now) < 1.0 or len(seen) < 2:
        return Status.OK
    if frozen:
        return Status.STALL
    if all(b.lag >= a.lag for a, b in pairwise(seen)):
        return Status.WARN
    return Status.OK


def worst(statuses: Sequence[Status]) -> Status:
    """The most severe status (the group's status is its worst partition's)."""
    order = list(Status)
    return max(statuses, key=order.index, default=Status.OK)
