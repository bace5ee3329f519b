"""A batch handler's records: a lazy sequence over the fetched messages of one partition.

The poll loop never builds a :class:`Record` per message in batch mode: a task is a
:class:`MessageBatch` over the consumed ``Message`` objects, and a record is made only when the
handler (or the DLQ, the ledger) touches it. It behaves as a list of records: ``len``,
indexing, slicing (a list), iteration, ``==`` against any sequence of records, ``repr``; it
pickles as a plain list of records (what crosses to ``--processes`` workers: one pickle a task).

Also here: :func:`partition_runs`, which splits a poll's messages into per-partition runs
(messages of one partition come in runs; a run ends where the partition changes) without a
Python object per message.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from itertools import groupby
from operator import itemgetter
from typing import Any, NamedTuple, overload

import numpy as np
from confluent_kafka import Message
from numpy.typing import NDArray

from lagless.engine.record import Record

PartitionKey = tuple[str, int]

_from_message = Record.from_message
_stamp = itemgetter(1)


class Access(NamedTuple):
    """A fetched message type's methods, unbound: mapped over a poll's messages they are
    C-level calls with no lookup per message. Of a consumed record, ``partition`` and
    ``offset`` are set."""

    error: Callable[[Any], Any]
    partition: Callable[[Any], int]
    offset: Callable[[Any], int]
    timestamp: Callable[[Any], tuple[int, int]]
    # the timestamps of a list of them at once (native int64 bytes), where the type has it
    stamps: Callable[[list[Any]], bytes] | None


_ACCESS: dict[type, Access] = {}


def access(message: Any) -> Access:
    """The accessors of ``message``'s type: confluent-kafka's ``Message``, or
    :mod:`lagless.kafka.fetcher`'s fetched message (the same calls)."""
    kind = type(message)
    found = _ACCESS.get(kind)
    if found is None:
        found = _ACCESS[kind] = Access(
            kind.error, kind.partition, kind.offset, kind.timestamp, getattr(kind, "stamps", None)
        )
    return found


def _topic_partition(msg: Message) -> tuple[str | None, int | None]:
    return msg.topic(), msg.partition()


def partition_runs(messages: list[Message], one_topic: bool) -> list[list[Message]]:
    """Split ``messages`` (no errors among them) into runs of one partition each, in order.

    ``one_topic``: every message is of one topic, so the partition number alone tells a run's
    end (one C-level call a message)."""
    if not messages:
        return []
    key = access(messages[0]).partition if one_topic else _topic_partition
    return [list(group) for _, group in groupby(messages, key)]


def stamps_ms(task: Sequence[Record]) -> NDArray[np.int64]:
    """The timestamps (ms since the epoch) of a task's records, -1 for a record without one
    (a batch reads them from its messages without making records)."""
    if isinstance(task, MessageBatch):
        return task.stamps_ms()
    # a list first: np.array of a list is about twice as fast as np.fromiter of a generator
    return np.array([-1 if r.timestamp_ms is None else r.timestamp_ms for r in task], np.int64)


def partition_of(task: Sequence[Record]) -> PartitionKey:
    """The partition of a task's records (a batch knows it without making a record)."""
    if isinstance(task, MessageBatch):
        return task.tp
    first = task[0]
    return first.topic, first.partition


class MessageBatch(Sequence[Record]):
    """Up to a batch's worth of consecutive fetched messages of one partition, seen as
    records (made on access, never cached: each access builds an equal record)."""

    __slots__ = ("messages", "tp")

    def __init__(self, messages: list[Message], tp: PartitionKey) -> None:
        self.messages = messages
        self.tp = tp

    @property
    def first_offset(self) -> int:
        offset = self.messages[0].offset()
        assert offset is not None
        return offset

    @property
    def last_offset(self) -> int:
        offset = self.messages[-1].offset()
        assert offset is not None
        return offset

    def offsets(self) -> list[int]:
        return list(map(access(self.messages[0]).offset, self.messages))

    def stamps_ms(self) -> NDArray[np.int64]:
        """The records' timestamps in ms since the epoch, -1 for a record without one
        (librdkafka's value for ``TIMESTAMP_NOT_AVAILABLE``)."""
        read = access(self.messages[0])
        if read.stamps is not None:
            return np.frombuffer(read.stamps(self.messages), np.int64)
        return np.fromiter(
            map(_stamp, map(read.timestamp, self.messages)),
            np.int64,
            len(self.messages),
        )

    def __len__(self) -> int:
        return len(self.messages)

    @overload
    def __getitem__(self, index: int) -> Record: ...
    @overload
    def __getitem__(self, index: slice) -> list[Record]: ...
    def __getitem__(self, index: int | slice) -> Record | list[Record]:
        if isinstance(index, slice):
            return list(map(_from_message, self.messages[index]))
        return _from_message(self.messages[index])

    def __iter__(self) -> Iterator[Record]:
        return map(_from_message, self.messages)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, str | bytes):  # a batch too
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # as a list: mutable content, no hash

    def __repr__(self) -> str:
        return repr(list(self))

    def __reduce__(self) -> tuple[Any, ...]:
        return (list, (list(self),))
