"""Per-partition completion tracking: what is safe to commit, what is done above it.

Records of a partition arrive in offset order and may finish in any order. The tracker keeps
the *window*: every offset received from the first unfinished one on. Its front is the
committable offset (Kafka's "next offset to read"); the finished offsets inside it form the
offset map written into the commit metadata. Offsets completed by an earlier run (read back
from that metadata on assignment) are recognised on arrival and skipped.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Iterable, Sequence
from enum import Enum
from itertools import repeat

from lagless.engine.offsets import offset_map
from lagless.engine.record import Record

log = logging.getLogger(__name__)


class Arrival(Enum):
    """What to do with a record the consumer just returned."""

    NEW = "new"  # process it
    DONE_BEFORE = "done_before"  # completed by an earlier run (offset map): skip it
    STALE = "stale"  # at or below an offset already received: a re-delivery, ignore it


class TrackerBase(ABC):
    """What every tracker keeps beside its window: the committable offset once the window is
    empty, the last offset received, the offsets an earlier run completed (skipped on
    arrival) and the offset resets followed."""

    def __init__(self, committed: int | None = None, completed: Iterable[int] = ()) -> None:
        floor = committed if committed is not None else -1
        self._earlier: set[int] = {o for o in completed if o > floor}
        self._next = committed
        self._last_received: int | None = None
        self.resets = 0  # offset resets followed (see _follow_reset)

    @property
    @abstractmethod
    def committable(self) -> int | None:
        """The offset to commit: the first unfinished one (None before anything is known)."""

    @abstractmethod
    def _done_above(self) -> Iterable[int]:
        """Offsets finished by this run inside the window (above the committable one)."""

    def _arrive(self, offset: int) -> bool:
        """Whether a fetched ``offset`` is new (not a re-delivery), following an offset
        reset; a new one is the last received from now on."""
        if self._next is not None and offset < self._next and not self.pending:
            self._follow_reset(offset)
        if self._last_received is not None and offset <= self._last_received:
            return False
        if self._next is not None and offset < self._next:
            return False
        self._last_received = offset
        return True

    @property
    @abstractmethod
    def pending(self) -> int:
        """Records held from the first unfinished on (unfinished, or done above it)."""

    def _all_new(self, first: int, last: int) -> bool:
        """Whether a fetched run of offsets ``first..last`` is wholly new (the common case):
        nothing in it at or below the last offset received or below the committable one, and
        no offset an earlier run completed inside it."""
        received = self._last_received
        return (
            (not self._earlier or self._none_earlier_in(first, last))
            and (received is None or first > received)
            and (self._next is None or first >= self._next)
        )

    def _none_earlier_in(self, first: int, last: int) -> bool:
        """Whether no offset an earlier run completed lies in ``first..last``. Those below
        ``first`` never came (offsets arrive in order: compacted away) and are forgotten, so a
        missing one does not hold every later run to the record-by-record path."""
        earlier = self._earlier
        if min(earlier) < first:
            earlier.difference_update([o for o in earlier if o < first])
        return not earlier or min(earlier) > last

    def _stale_up_to(self, last: int) -> int | None:
        """For a fetched run ending at ``last`` that is not wholly new: the offset up to which
        its records are re-deliveries, if any. A fetch that starts at or below the last offset
        received and goes past it re-delivers the records below (stale); it is not an offset
        reset (which lands wholly below: see :meth:`_arrive`)."""
        received = self._last_received
        return received if received is not None and last > received else None

    def _done_before(self, offset: int) -> bool:
        """Whether an earlier run completed ``offset`` (told once: it is forgotten here)."""
        if offset in self._earlier:
            self._earlier.discard(offset)
            return True
        return False

    def _follow_reset(self, offset: int) -> None:
        """The consumer's position moved below what this tracker expected with nothing held
        (``auto.offset.reset`` after OFFSET_OUT_OF_RANGE, e.g. a topic recreated): follow
        the consumer, whose position is the truth; the records from ``offset`` on are new
        and the offset map of the old log no longer applies."""
        log.warning(
            "partition position moved back from offset %s to %d (offset reset): "
            "following it; records from %d on are processed",
            self._next,
            offset,
            offset,
        )
        self._next = offset
        self._last_received = None
        self._earlier.clear()
        self.resets += 1

    def skip_gap(self, position: int) -> None:
        """The consumer's position is ``position`` and every record below it was received
        here: with nothing held, the offsets between the last one finished and ``position``
        hold no record (transaction markers): the committable offset moves there."""
        if not self.pending and self._next is not None and position > self._next:
            self._next = position

    @abstractmethod
    def complete_records(self, records: Sequence[Record]) -> None:
        """Mark a task's ``records`` (ascending offsets) finished."""

    @abstractmethod
    def first_uncommitted_timestamp_ms(self) -> int | None:
        """Timestamp of the record at the committable offset, if it was fetched (the input
        of :func:`lagless.observe.lagtime.lag_seconds`)."""

    @abstractmethod
    def oldest_unfinished(self) -> tuple[int, float] | None:
        """(offset, time received) of the first unfinished record, None if all are done."""

    def completed_above(self) -> list[int]:
        """Finished offsets above the committable one (this run's and an earlier run's)."""
        base = self.committable
        above = self._earlier.union(self._done_above())
        return sorted(o for o in above if base is None or o > base)

    def offset_map(self, limit: int = offset_map.LIMIT) -> str:
        """Commit metadata for the committable offset ('' when nothing is done above it)."""
        base = self.committable
        if base is None:
            return ""
        return offset_map.encode(base, self.completed_above(), limit)


class PartitionTracker(TrackerBase):
    """Completion state of one partition's records from the first unfinished one on."""

    def __init__(self, committed: int | None = None, completed: Iterable[int] = ()) -> None:
        super().__init__(committed, completed)
        self._window: deque[int] = deque()
        self._since: deque[float] = deque()
        self._stamps: deque[int | None] = deque()  # record timestamps (ms), beside the window
        self._done: set[int] = set()

    @property
    def committable(self) -> int | None:
        """The offset to commit: the first unfinished one (None before anything is known)."""
        return self._window[0] if self._window else self._next

    @property
    def pending(self) -> int:
        """Records held from the first unfinished on (unfinished, or done above it)."""
        return len(self._window)

    def _done_above(self) -> Iterable[int]:
        return self._done

    def receive(self, offset: int, now: float, timestamp_ms: int | None = None) -> Arrival:
        """Register a fetched record and its timestamp (offsets grow, except after an offset
        reset)."""
        if not self._arrive(offset):
            return Arrival.STALE
        self._window.append(offset)
        self._since.append(now)
        self._stamps.append(timestamp_ms)
        if self._done_before(offset):
            self.complete(offset)
            return Arrival.DONE_BEFORE
        return Arrival.NEW

    def receive_many(
        self, offsets: list[int], now: float, stamps: list[int | None] | None = None
    ) -> tuple[list[bool] | None, int]:
        """Register fetched records (ascending offsets) and their timestamps (ms; unknown if
        not given). Returns (None, 0) when all are new (the common case: one extend), else
        (for each, whether to process it; how many were completed by an earlier run and are
        skipped)."""
        if stamps is None:
            stamps = [None] * len(offsets)
        if self._all_new(offsets[0], offsets[-1]):
            self._window.extend(offsets)
            self._since.extend(repeat(now, len(offsets)))
            self._stamps.extend(stamps)
            self._last_received = offsets[-1]
            return None, 0
        stale = self._stale_up_to(offsets[-1])
        arrivals = [
            Arrival.STALE if stale is not None and o <= stale else self.receive(o, now, t)
            for o, t in zip(offsets, stamps, strict=True)
        ]
        fresh = [a is Arrival.NEW for a in arrivals]
        return fresh, sum(a is Arrival.DONE_BEFORE for a in arrivals)

    def passes(self, first: int, last: int) -> bool:
        """Whether a fetched run ``first..last`` may run through at once (see :meth:`passed`):
        nothing held, and the run wholly new."""
        return not self._window and self._all_new(first, last)

    def passed(self, last: int) -> None:
        """The records of a run that :meth:`passes` up to offset ``last`` were received and
        finished at once (the fast path: :mod:`lagless.engine.dispatch.fast_path`); the
        committable offset moves past them, the window stays empty."""
        self._last_received = last
        self._next = last + 1

    def complete(self, offset: int) -> None:
        """Mark ``offset`` finished; the committable offset moves past finished records."""
        self._done.add(offset)
        window = self._window
        while window and window[0] in self._done:
            first = window.popleft()
            self._since.popleft()
            self._stamps.popleft()
            self._done.discard(first)
            self._next = first + 1

    def complete_many(self, offsets: list[int]) -> None:
        """Mark ``offsets`` (ascending) finished; a task's records usually are the window's
        front in order, which pops them without touching the set of done offsets."""
        window, since, stamps = self._window, self._since, self._stamps
        index = 0
        if not self._done:
            count = len(offsets)
            while index < count and window and window[0] == offsets[index]:
                window.popleft()
                since.popleft()
                stamps.popleft()
                index += 1
            if index:
                self._next = offsets[index - 1] + 1
            if index == count:
                return
        self._done.update(offsets[index:] if index else offsets)
        done = self._done
        while window and window[0] in done:
            first = window.popleft()
            since.popleft()
            stamps.popleft()
            done.discard(first)
            self._next = first + 1

    def first_uncommitted_timestamp_ms(self) -> int | None:
        """Timestamp of the record at the committable offset, if it was fetched (the input
        of :func:`lagless.observe.lagtime.lag_seconds`)."""
        return self._stamps[0] if self._stamps else None

    def oldest_unfinished(self) -> tuple[int, float] | None:
        """(offset, time received) of the first unfinished record, None if all are done."""
        if not self._window:
            return None
        return self._window[0], self._since[0]

    def complete_records(self, records: Sequence[Record]) -> None:
        """Mark a task's ``records`` (ascending offsets) finished."""
        self.complete_many([r.offset for r in records])
