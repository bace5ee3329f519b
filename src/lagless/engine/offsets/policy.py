"""The commit policy: when the poll loop commits what is safe (after arroyo's CommitPolicy).

A commit is due after ``interval_s`` seconds or ``every`` finished records since the last one,
whichever comes first. Revokes and shutdown always commit, whatever the policy says.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class CommitPolicy:
    """Commit every ``interval_s`` seconds or ``every`` finished records."""

    interval_s: float
    every: int
    _last: float = field(default=0.0, init=False)
    _finished: int = field(default=0, init=False)

    def start(self, now: float) -> None:
        self._last = now
        self._finished = 0

    def finished(self, records: int = 1) -> None:
        """Count records finished since the last commit."""
        self._finished += records

    def due(self, now: float) -> bool:
        if not self._finished:
            return False
        return self._finished >= self.every or now - self._last >= self.interval_s

    def committed(self, now: float) -> None:
        self.start(now)

    def elapsed(self, now: float) -> bool:
        """The interval passed: time to send again what a failed commit did not store."""
        return now - self._last >= self.interval_s
