"""Ordering: which buffered records may start now, per partition, per key, or unordered.

Each partition has its own :class:`PartitionQueue`. Inside it, records are grouped in *lanes*:
a lane runs one record at a time, in offset order. ``partition`` ordering has one lane per
partition, ``key`` ordering one lane per key (keyless records need no lane), ``unordered``
none. A record whose lane is free is *ready*. The :class:`Dispatcher` hands out ready records
round-robin over partitions, so a slow record holds back only its own lane: there is no
single queue every partition waits in.

A record still running when its partition is closed (revoked past ``--revoke-budget``, or
lost) keeps its lane busy: if the partition comes back before it ends, the new assignment's
records of that lane (the whole partition with ``partition`` ordering) wait for it
(:meth:`Dispatcher.release_orphan`), so no key runs twice at once.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable

from lagless.engine.config import Ordering
from lagless.engine.record import Record

PartitionKey = tuple[str, int]
_WHOLE_PARTITION = "partition"


def lane_of(record: Record, ordering: Ordering) -> Hashable | None:
    """The lane ``record`` must wait in; None when it may run beside anything."""
    if ordering is Ordering.PARTITION:
        return _WHOLE_PARTITION
    if ordering is Ordering.KEY:
        return record.key
    return None


class PartitionQueue:
    """The records of one partition held but not started, and which of them are ready."""

    def __init__(self, ordering: Ordering) -> None:
        self.ordering = ordering
        self.ready: deque[Record] = deque()
        self.held = 0  # records held and not started (ready or behind a busy lane)
        self._lanes: dict[Hashable, deque[Record]] = {}  # a lane is busy while present

    def push(self, record: Record) -> bool:
        """Hold ``record``; True if it is ready at once."""
        self.held += 1
        lane = lane_of(record, self.ordering)
        if lane is None:
            self.ready.append(record)
            return True
        waiting = self._lanes.get(lane)
        if waiting is not None:
            waiting.append(record)
            return False
        self._lanes[lane] = deque()
        self.ready.append(record)
        return True

    def release(self, record: Record) -> bool:
        """``record`` finished: free its lane; True if that made another record ready."""
        lane = lane_of(record, self.ordering)
        if lane is None:
            return False
        waiting = self._lanes.get(lane)
        if waiting:
            self.ready.append(waiting.popleft())
            return True
        self._lanes.pop(lane, None)
        return False

    def occupy(self, lane: Hashable) -> None:
        """Mark ``lane`` busy (its record runs elsewhere) until released."""
        self._lanes.setdefault(lane, deque())

    def busy_lanes(self) -> set[Hashable]:
        """Lanes with a record running (a lane is present while its record is ready or
        runs; a ready one has not started)."""
        return set(self._lanes) - {lane_of(r, self.ordering) for r in self.ready}

    def take(self) -> Record:
        """Start the first ready record."""
        self.held -= 1
        return self.ready.popleft()


class Dispatcher:
    """Per-partition queues and the round-robin turn over partitions with ready records."""

    def __init__(self, ordering: Ordering) -> None:
        self.ordering = ordering
        self._queues: dict[PartitionKey, PartitionQueue] = {}
        self._turn: deque[PartitionKey] = deque()
        self._scheduled: set[PartitionKey] = set()
        self.held = 0  # records pushed and not started, over all partitions
        self.ready = 0  # of which ready to start now
        self.starving = 0  # open partitions holding no record
        self._orphans: dict[PartitionKey, set[Hashable]] = {}  # lanes busy from a closed queue

    def open(self, tp: PartitionKey) -> None:
        if tp not in self._queues:
            queue = PartitionQueue(self.ordering)
            for lane in self._orphans.get(tp, ()):
                queue.occupy(lane)  # a record of an earlier assignment still runs there
            self._queues[tp] = queue
            self.starving += 1

    def close(self, tp: PartitionKey) -> int:
        """Stop dispatching ``tp``; its records not started are dropped. Returns how many.
        The lanes of its records still running stay busy until :meth:`release_orphan`."""
        queue = self._queues.pop(tp, None)
        if queue is None:
            return 0
        busy = queue.busy_lanes()
        if busy:
            self._orphans[tp] = busy
        self.held -= queue.held
        self.ready -= len(queue.ready)
        if not queue.held:
            self.starving -= 1
        return queue.held

    def push(self, record: Record) -> None:
        tp = (record.topic, record.partition)
        queue = self._queues[tp]
        if not queue.held:
            self.starving -= 1
        self.held += 1
        if queue.push(record):
            self.ready += 1
            self._schedule(tp)

    def release(self, record: Record) -> None:
        """A dispatched record finished: its lane may let the next one go."""
        tp = (record.topic, record.partition)
        queue = self._queues.get(tp)
        if queue is None:  # closed while it ran (a revoke waiting out its budget)
            self.release_orphan(record)
        elif queue.release(record):
            self.ready += 1
            self._schedule(tp)

    def release_orphan(self, record: Record) -> None:
        """A record of a closed assignment of its partition ended: free its lane (in the
        partition's current queue, if the partition came back)."""
        tp = (record.topic, record.partition)
        lanes = self._orphans.get(tp)
        lane = lane_of(record, self.ordering)
        if lanes is None or lane not in lanes:
            return
        lanes.discard(lane)
        if not lanes:
            del self._orphans[tp]
        queue = self._queues.get(tp)
        if queue is not None and queue.release(record):
            self.ready += 1
            self._schedule(tp)

    def next_ready(self) -> Record | None:
        """The next record to start, taking partitions in turn; None if none is ready."""
        while self._turn:
            tp = self._turn.popleft()
            queue = self._queues.get(tp)
            if queue is None or not queue.ready:
                self._scheduled.discard(tp)
                continue
            record = queue.take()
            self.held -= 1
            self.ready -= 1
            if not queue.held:
                self.starving += 1
            if queue.ready:
                self._turn.append(tp)
            else:
                self._scheduled.discard(tp)
            return record
        return None

    def _schedule(self, tp: PartitionKey) -> None:
        if tp not in self._scheduled:
            self._scheduled.add(tp)
            self._turn.append(tp)
