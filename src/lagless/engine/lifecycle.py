"""The run's lifecycle: whether it failed or stops, when something last happened, and the
group-life events and health it reports (shared by the engine's parts, on the poll thread)."""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from lagless.engine.events import EventKind, EventLog
from lagless.engine.partitions.state import PartitionKey
from lagless.engine.watch.health import Health
from lagless.errors import LaglessError


class Lifecycle:
    """Failure and stop flags, the activity clock, events and health of one run."""

    def __init__(self, events: EventLog | None, health: Health) -> None:
        self.health = health
        self._events = events
        self.failure: LaglessError | None = None
        self.stopping = False  # no more records taken: draining, committing, closing
        self.hurry = False  # stop at once: no drain, commit what is safe (a second Ctrl-C)
        self.closing = False  # the consumer closes: revokes commit nothing more
        self.started = time.monotonic()
        self.last_activity = self.started  # records came or finished, partitions changed
        self.ready_emitted = False  # READY was emitted for the current assignment

    def fail(self, failure: LaglessError) -> None:
        """The run fails with ``failure`` (the first one stands)."""
        if self.failure is None:
            self.failure = failure

    def emit(self, kind: EventKind, keys: Iterable[PartitionKey] = (), **extra: Any) -> None:
        if self._events is not None:
            self._events.emit(kind, keys, **extra)

    def owned_changed(self, owned: int) -> None:
        """The set of owned partitions changed (now ``owned``): readiness starts over."""
        self.health.assignment(owned, time.monotonic())
        self.ready_emitted = False
