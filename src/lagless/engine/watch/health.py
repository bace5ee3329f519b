"""Liveness and readiness of one engine: what ``/healthz`` and ``/readyz`` answer.

* **alive** — the poll loop turned within the last ``alive_within_s`` seconds (a hung loop, e.g. a
  rebalance callback stuck on the coordinator, turns it false);
* **ready** — the engine joined its group, owns at least one partition and consumes: a record
  arrived since the latest assignment, or the loop has polled for ``settle_s`` since it (an idle
  topic has nothing to deliver). Not ready while joining, during an eager rebalance (nothing
  owned) and once stopping.

The poll thread updates it (plain attribute writes); any thread may read :meth:`status`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

ALIVE_WITHIN_S = 10.0
SETTLE_S = 1.0


@dataclass(frozen=True)
class HealthStatus:
    alive: bool
    ready: bool
    assigned: int
    stopping: bool
    since_turn_s: float

    def to_json(self) -> dict[str, Any]:
        return {
            "alive": self.alive,
            "ready": self.ready,
            "assigned": self.assigned,
            "stopping": self.stopping,
            "since_turn_s": round(self.since_turn_s, 3),
        }


class Health:
    def __init__(self, alive_within_s: float = ALIVE_WITHIN_S, settle_s: float = SETTLE_S) -> None:
        self.alive_within_s = alive_within_s
        self.settle_s = settle_s
        self.last_turn = time.monotonic()
        self.assigned = 0
        self.assigned_at: float | None = None
        self.received_since_assign = False
        self.stopping = False

    def turned(self, now: float) -> None:
        self.last_turn = now

    def assignment(self, owned: int, now: float) -> None:
        """The set of owned partitions changed (assigned, revoked or lost)."""
        self.assigned = owned
        self.assigned_at = now
        self.received_since_assign = False

    def received(self) -> None:
        self.received_since_assign = True

    def is_ready(self, now: float) -> bool:
        if self.stopping or self.assigned == 0 or self.assigned_at is None:
            return False
        return self.received_since_assign or now - self.assigned_at >= self.settle_s

    def status(self) -> HealthStatus:
        now = time.monotonic()
        since = now - self.last_turn
        return HealthStatus(
            alive=since <= self.alive_within_s,
            ready=self.is_ready(now),
            assigned=self.assigned,
            stopping=self.stopping,
            since_turn_s=since,
        )
