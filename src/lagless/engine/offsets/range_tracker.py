"""Completion tracking in ranges, for batch handlers: one object per run of messages, not per
record.

A *range* is a run of consecutive fetched messages of one partition (as the poll split them,
see :func:`lagless.engine.intake.messages.partition_runs`): its first and last offset, the messages
themselves (a slice ``lo:hi`` of the run's list), when it was received, and whether it is done.
Receiving a run appends one range; a finished task completes its offsets ``first..last``,
which splits a range where a task ends inside it (the exact offsets and timestamps are read
from the messages, so offset gaps of compaction or transaction markers need no guess). The
front range is the first unfinished one: the committable offset is its first offset, and once
everything is done the last finished offset + 1. The offsets of done ranges above the front,
and those an earlier run completed, form the offset map of the commit.

It keeps :class:`~lagless.engine.offsets.tracker.PartitionTracker`'s contract: re-deliveries are
stale, an offset reset is followed, offsets an earlier run completed are skipped on arrival
(the run is then received message by message: ranges of one), the lag timestamp is that of
the first uncommitted record, ``oldest_unfinished`` feeds the stuck-record watch.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import deque
from collections.abc import Iterable, Iterator, Sequence

from confluent_kafka import Message

from lagless.engine.intake.messages import MessageBatch, access
from lagless.engine.offsets.tracker import Arrival, TrackerBase
from lagless.engine.record import Record
from lagless.kafka.records import timestamp_ms


class _Range:
    """Messages ``messages[lo:hi]`` (ascending offsets ``first..last``), received ``since``."""

    __slots__ = ("done", "first", "hi", "last", "lo", "messages", "since")

    def __init__(
        self, messages: list[Message], lo: int, hi: int, since: float, done: bool = False
    ) -> None:
        self.messages = messages
        self.lo = lo
        self.hi = hi
        self.first: int = messages[lo].offset()  # type: ignore[assignment]
        self.last: int = messages[hi - 1].offset()  # type: ignore[assignment]
        self.since = since
        self.done = done

    def offsets(self) -> Iterator[int]:
        return map(access(self.messages[self.lo]).offset, self.messages[self.lo : self.hi])


class RangeTracker(TrackerBase):
    """Completion state of one partition's messages from the first unfinished one on."""

    def __init__(self, committed: int | None = None, completed: Iterable[int] = ()) -> None:
        super().__init__(committed, completed)
        self._ranges: deque[_Range] = deque()
        self._pending = 0

    @property
    def committable(self) -> int | None:
        """The offset to commit: the first unfinished one (None before anything is known)."""
        return self._ranges[0].first if self._ranges else self._next

    @property
    def pending(self) -> int:
        """Messages held from the first unfinished on (unfinished, or done above it)."""
        return self._pending

    def _done_above(self) -> Iterable[int]:
        return [o for r in self._ranges if r.done for o in r.offsets()]

    def receive_run(self, messages: list[Message], now: float) -> bool:
        """Register a fetched run (ascending offsets) as one range when every message is new
        (the common case); False, registering nothing, when some may not be: then
        :meth:`receive` them one by one."""
        first, last = messages[0].offset(), messages[-1].offset()
        assert first is not None and last is not None
        if not self._all_new(first, last):
            return False
        self._ranges.append(_Range(messages, 0, len(messages), now))
        self._pending += len(messages)
        self._last_received = last
        return True

    def receive_each(self, messages: list[Message], now: float) -> tuple[list[Message], int]:
        """Register fetched messages one by one (after :meth:`receive_run` said no): those to
        process, and how many an earlier run completed (skipped)."""
        stale = self._stale_up_to(messages[-1].offset() or 0)
        fresh: list[Message] = []
        skipped = 0
        for message in messages:
            if stale is not None and (message.offset() or 0) <= stale:
                continue
            arrival = self.receive(message, now)
            if arrival is Arrival.NEW:
                fresh.append(message)
            elif arrival is Arrival.DONE_BEFORE:
                skipped += 1
        return fresh, skipped

    def receive(self, message: Message, now: float) -> Arrival:
        """Register one fetched message (see :meth:`PartitionTracker.receive`)."""
        offset = message.offset()
        assert offset is not None
        if not self._arrive(offset):
            return Arrival.STALE
        self._ranges.append(_Range([message], 0, 1, now))
        self._pending += 1
        if self._done_before(offset):
            self.complete_span(offset, offset)
            return Arrival.DONE_BEFORE
        return Arrival.NEW

    def complete_records(self, records: Sequence[Record]) -> None:
        """Mark a task's records finished: a whole batch as one span; records named one by
        one (the rest of a batch some of whose records failed) each alone."""
        if isinstance(records, MessageBatch):
            self.complete_span(records.first_offset, records.last_offset)
            return
        for record in records:
            self.complete_span(record.offset, record.offset)

    def complete_span(self, first: int, last: int) -> None:
        """Mark the messages with offsets ``first..last`` finished (those received: a span
        may cover offset gaps); the committable offset moves past finished ranges."""
        ranges = self._ranges
        index = next((i for i, r in enumerate(ranges) if r.last >= first), None)
        if index is None:
            return  # nothing received there (completed already)
        if ranges[index].first < first:
            self._split(index, first)
            index += 1
        while index < len(ranges):
            current = ranges[index]
            if current.first > last:
                break
            if current.last > last:
                self._split(index, last + 1)
                ranges[index].done = True
                break
            current.done = True
            index += 1
        while ranges and ranges[0].done:
            front = ranges.popleft()
            self._pending -= front.hi - front.lo
            self._next = front.last + 1

    def _split(self, index: int, offset: int) -> None:
        """Cut range ``index`` before its first message at or above ``offset``."""
        whole = self._ranges[index]
        at = access(whole.messages[whole.lo]).offset
        cut = bisect_left(whole.messages, offset, whole.lo, whole.hi, key=at)
        head = _Range(whole.messages, whole.lo, cut, whole.since, whole.done)
        whole.lo = cut
        whole.first = whole.messages[cut].offset()  # type: ignore[assignment]
        self._ranges.insert(index, head)

    def first_uncommitted_timestamp_ms(self) -> int | None:
        """Timestamp of the record at the committable offset, if it was fetched."""
        if not self._ranges:
            return None
        front = self._ranges[0]
        return timestamp_ms(front.messages[front.lo])

    def oldest_unfinished(self) -> tuple[int, float] | None:
        """(offset, time received) of the first unfinished record, None if all are done."""
        if not self._ranges:
            return None
        return self._ranges[0].first, self._ranges[0].since
