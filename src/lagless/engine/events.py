"""Group-life events of one engine, as JSON lines: what the rebalance lab and audits read.

An engine given an :class:`EventLog` (``lagless consume --record DIR`` writes
``DIR/events.jsonl``) appends one line per event, flushed at once so a killed process keeps what
it wrote::

    {"ts": 1732370000.123, "instance": "s0-g1", "kind": "assigned", "partitions": [["t", 0]]}

``ts`` is the wall clock (``time.time()``). The kinds, in the order they usually come:

* ``subscribed`` — the consumer subscribed: it is joining the group;
* ``assigned`` — partitions given to it (stamped as the callback starts; may be empty: a
  cooperative rebalance that gives this member nothing new);
* ``consuming`` — the first record of these partitions since their assignment arrived;
* ``ready`` — it owns partitions and consumes (what ``/readyz`` answers, see
  :mod:`lagless.engine.watch.health`);
* ``revoked`` — partitions taken back (stamped once released: after the final commit);
* ``lost`` — partitions lost without a commit (session expired, fenced);
* ``stopping`` — it stopped taking records (shutdown began);
* ``stopped`` — it committed and closed; ``left_group`` says whether it left the group.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable
from enum import StrEnum
from pathlib import Path
from typing import IO, Any

EVENTS_FILE = "events.jsonl"


class EventKind(StrEnum):
    SUBSCRIBED = "subscribed"
    ASSIGNED = "assigned"
    CONSUMING = "consuming"
    READY = "ready"
    REVOKED = "revoked"
    LOST = "lost"
    STOPPING = "stopping"
    STOPPED = "stopped"


class EventLog:
    """Appends events to a JSON-lines file (thread-safe; each line flushed)."""

    def __init__(self, path: Path, instance: str) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.instance = instance
        self._fh: IO[str] | None = path.open("w", encoding="utf-8")
        self._lock = threading.Lock()

    def emit(
        self,
        kind: EventKind,
        partitions: Iterable[tuple[str, int]] = (),
        **extra: Any,
    ) -> None:
        doc: dict[str, Any] = {"ts": time.time(), "instance": self.instance, "kind": str(kind)}
        parts = [[topic, partition] for topic, partition in partitions]
        if parts or kind in (EventKind.ASSIGNED, EventKind.REVOKED, EventKind.LOST):
            doc["partitions"] = parts
        doc.update(extra)
        line = json.dumps(doc) + "\n"
        with self._lock:
            if self._fh is not None:
                self._fh.write(line)
                self._fh.flush()

    def close(self) -> None:
        with self._lock:
            if self._fh is not None:
                self._fh.close()
                self._fh = None
