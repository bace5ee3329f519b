"""Ordering: which buffered records may start now, per partition, per key, or unordered.

Each partition has its own :class:`PartitionQueue`. Inside it, records are grouped in *lanes*:
a lane's records run one after another, in offset order. ``partition`` ordering has one lane
per partition, ``key`` ordering one lane per key (keyless records need no lane), ``unordered``
none. A record whose lane is free is *ready*.

Records start in *tasks*: up to ``size`` records of one partition handed to one worker, which
runs them one after another (or, with a batch handler, as one batch). A task takes ready
records and, behind each, the records waiting in its lane, so it holds each lane's records
consecutively and in offset order; a lane stays busy until its task finished. So ``partition``
tasks are consecutive records of one partition, one task in flight per partition; ``key`` tasks
never share a key with another task in flight; ``unordered`` tasks take any records.

The :class:`Dispatcher` hands out tasks round-robin over partitions, so a slow record holds
back only its own lane: there is no single queue every partition waits in. With a *linger*
(batch handlers), a partition holding fewer than ``size`` records waits until its oldest held
record waited ``linger_s`` before its task goes.

A task still running when its partition is closed (revoked past ``--revoke-budget``, or
lost) keeps all its lanes busy: if the partition comes back before it ends, the new
assignment's records of those lanes (the whole partition with ``partition`` ordering) wait for
it (:meth:`Dispatcher.release_orphan`), so no key runs twice at once.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable, Sequence
from operator import attrgetter

from lagless.engine.config import Ordering
from lagless.engine.dispatch.turns import PartitionKey, Turns
from lagless.engine.record import Record

_WHOLE_PARTITION = "partition"
_by_offset = attrgetter("offset")


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
        self.since = 0.0  # when the oldest record held arrived (approximately: see take)
        self._laned = ordering is not Ordering.UNORDERED
        self._lanes: dict[Hashable, deque[Record]] = {}  # a lane is busy while present

    @property
    def lanes(self) -> int:
        """Lanes present (busy, or with their head record ready)."""
        return len(self._lanes)

    def push(self, record: Record, now: float) -> bool:
        """Hold ``record``; True if it is ready at once."""
        if not self.held:
            self.since = now
        self.held += 1
        if not self._laned:
            self.ready.append(record)
            return True
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

    def push_many(self, records: list[Record], now: float) -> int:
        """Hold ``records``; how many of them are ready at once."""
        if self._laned:
            return sum(self.push(record, now) for record in records)
        if not self.held:
            self.since = now
        self.held += len(records)
        self.ready.extend(records)
        return len(records)

    def occupy(self, lane: Hashable) -> None:
        """Mark ``lane`` busy (its task runs elsewhere) until released."""
        self._lanes.setdefault(lane, deque())

    def busy_lanes(self) -> set[Hashable]:
        """Lanes with a task running (a lane is present while its head record is ready or its
        task runs; a ready one has not started)."""
        return set(self._lanes) - {lane_of(r, self.ordering) for r in self.ready}

    def take(self, size: int) -> list[Record]:
        """Start up to ``size`` records: ready ones, each followed by its lane's waiting ones.

        ``since`` is kept when records stay held, so they never wait longer for a batch.
        """
        ready = self.ready
        if not self._laned:
            out = [ready.popleft() for _ in range(min(size, len(ready)))]
        else:
            out = []
            lanes, ordering = self._lanes, self.ordering
            while ready and len(out) < size:
                record = ready.popleft()
                out.append(record)
                lane = lane_of(record, ordering)
                waiting = lanes.get(lane) if lane is not None else None
                while waiting and len(out) < size:
                    out.append(waiting.popleft())
            if ordering is Ordering.KEY and len(out) > 1:
                out.sort(key=_by_offset)  # keeps each lane's order: lanes are offset-ordered
        self.held -= len(out)
        return out

    def release(self, records: Sequence[Record]) -> int:
        """A task finished: free its lanes; how many records that made ready."""
        if not self._laned:
            return 0
        freed = 0
        lanes, ordering = self._lanes, self.ordering
        seen: set[Hashable] = set()
        for record in records:
            lane = lane_of(record, ordering)
            if lane is None or lane in seen:
                continue
            seen.add(lane)
            waiting = lanes.get(lane)
            if waiting:
                self.ready.append(waiting.popleft())
                freed += 1
            else:
                lanes.pop(lane, None)
        return freed


class Dispatcher(Turns):
    """Per-partition queues and the round-robin turn over partitions with ready records."""

    def __init__(self, ordering: Ordering, linger_s: float = 0.0) -> None:
        super().__init__(ordering, linger_s)
        self._queues: dict[PartitionKey, PartitionQueue] = {}
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
        return self._dropped(queue.held, len(queue.ready))

    def quiet(self, tp: PartitionKey) -> bool:
        """Whether open partition ``tp`` holds no record and no lane of it is busy (a task of
        it runs, or of an earlier assignment of it)."""
        queue = self._queues.get(tp)
        return queue is not None and not queue.held and not queue.lanes and tp not in self._orphans

    def occupy(self, record: Record) -> None:
        """Keep ``record``'s lane busy: it runs outside a task of this dispatcher (the rest of
        a record that started on the poll thread) until :meth:`release`."""
        lane = lane_of(record, self.ordering)
        if lane is not None:
            self._queues[(record.topic, record.partition)].occupy(lane)

    def push(self, record: Record, now: float = 0.0) -> None:
        tp = (record.topic, record.partition)
        queue = self._queues[tp]
        if not queue.held:
            self.starving -= 1
        self.held += 1
        if queue.push(record, now):
            self.ready += 1
            self._schedule(tp)

    def push_many(self, records: list[Record], now: float) -> None:
        """Hold records of one partition, in offset order."""
        if not records:
            return
        first = records[0]
        tp = (first.topic, first.partition)
        queue = self._queues[tp]
        if not queue.held:
            self.starving -= 1
        ready = queue.push_many(records, now)
        self.held += len(records)
        if ready:
            self.ready += ready
            self._schedule(tp)

    def release(self, records: Sequence[Record]) -> None:
        """A dispatched task finished: its lanes may let the next records go."""
        first = records[0]
        tp = (first.topic, first.partition)
        queue = self._queues.get(tp)
        if queue is None:  # closed while it ran (a revoke waiting out its budget)
            self.release_orphan(records)
            return
        freed = queue.release(records)
        if freed:
            self.ready += freed
            self._schedule(tp)

    def release_orphan(self, records: Sequence[Record]) -> None:
        """A task of a closed assignment of its partition ended: free its lanes (in the
        partition's current queue, if the partition came back)."""
        first = records[0]
        tp = (first.topic, first.partition)
        lanes = self._orphans.get(tp)
        if lanes is None:
            return
        ordering = self.ordering
        ended = {lane_of(record, ordering) for record in records} & lanes
        if not ended:
            return
        lanes -= ended
        if not lanes:
            del self._orphans[tp]
        queue = self._queues.get(tp)
        if queue is None:
            return
        freed = queue.release([r for r in records if lane_of(r, ordering) in ended])
        if freed:
            self.ready += freed
            self._schedule(tp)

    def next_task(self, size: int, now: float = 0.0) -> list[Record] | None:
        """The next task (up to ``size`` records of one partition), taking partitions in turn;
        None if none may start now (nothing ready, or every partition lingers)."""
        self.lingering_until = None
        for _ in range(len(self._turn)):
            tp = self._turn.popleft()
            queue = self._queues.get(tp)
            if queue is None or not queue.ready:
                self._scheduled.discard(tp)
                continue
            if self._lingers(tp, queue.held, queue.since, size, now):
                continue
            before = len(queue.ready)
            records = queue.take(size)
            self.held -= len(records)
            self.ready -= before - len(queue.ready)
            if not queue.held:
                self.starving += 1
            if queue.ready:
                self._turn.append(tp)
            else:
                self._scheduled.discard(tp)
            return records
        return None
