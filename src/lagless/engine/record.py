"""The record a handler receives: an immutable, picklable copy of a consumed message.

For a per-record handler it is made once per record on the poll loop's hot path (a batch
handler's records are made only when touched: :mod:`lagless.engine.intake.messages`), so it is kept
lean: a named tuple (a frozen
dataclass cost ~2 µs to build, a tuple ~0.2 µs), and its headers are read from the message
only when first used (confluent-kafka parses them on ``Message.headers()``: ~3 µs a record,
more than all the rest; most handlers never look at them).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple, overload

from confluent_kafka import Message

from lagless.errors import RecordCoordinates
from lagless.kafka.records import HeaderNameError, header_pairs, timestamp_ms

_new = tuple.__new__
Header = tuple[str, bytes | None]  # a value None: a null header value


class LazyHeaders(Sequence[Header]):
    """A record's headers, ``(name, value)`` pairs (a null value as None), read from
    the consumed message on first use. Compares, hashes and pickles as a tuple."""

    __slots__ = ("_msg", "_pairs", "_unreadable")

    def __init__(self, msg: Message) -> None:
        self._msg: Message | None = msg
        self._pairs: tuple[Header, ...] = ()
        self._unreadable: HeaderNameError | None = None

    def _read(self) -> tuple[Header, ...]:
        msg = self._msg
        if msg is not None:
            self._msg = None  # read once: the pairs, or the error raised again at every read
            try:
                self._pairs = tuple(header_pairs(msg))
            except HeaderNameError as exc:
                self._unreadable = exc
        if self._unreadable is not None:  # the same error at every read
            raise HeaderNameError(self._unreadable.reason, self._unreadable.coordinates)
        return self._pairs

    @overload
    def __getitem__(self, index: int) -> Header: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[Header, ...]: ...
    def __getitem__(self, index: int | slice) -> Header | tuple[Header, ...]:
        return self._read()[index]

    def __len__(self) -> int:
        return len(self._read())

    def __iter__(self) -> Iterator[Header]:
        return iter(self._read())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, LazyHeaders):
            return self._read() == other._read()
        return self._read() == other

    def __hash__(self) -> int:
        return hash(self._read())

    def __repr__(self) -> str:
        return repr(self._read())

    def __reduce__(self) -> tuple[Any, ...]:
        try:
            return (tuple, (self._read(),))
        except HeaderNameError as exc:  # (to a handler process): raises there as here
            return (_unreadable, (exc.reason, exc.coordinates))


def _unreadable(reason: str, coordinates: RecordCoordinates) -> LazyHeaders:
    """Headers that raise ``HeaderNameError(reason, coordinates)`` when read."""
    headers = LazyHeaders.__new__(LazyHeaders)
    headers._msg = None
    headers._pairs = ()
    headers._unreadable = HeaderNameError(reason, coordinates)
    return headers


class Record(NamedTuple):
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp_ms: int | None
    headers: Sequence[Header] = ()  # a value None: a null header value

    @property
    def coordinates(self) -> RecordCoordinates:
        return RecordCoordinates(self.topic, self.partition, self.offset)

    def header(self, name: str) -> bytes | None:
        """The first value of header ``name``; None if absent or null."""
        for key, value in self.headers:
            if key == name:
                return value
        return None

    @classmethod
    def from_message(cls, msg: Message) -> Record:
        """A copy of a consumed message (on the poll loop's hot path: kept lean)."""
        topic, partition, offset = msg.topic(), msg.partition(), msg.offset()
        if topic is None or partition is None or offset is None:
            raise ValueError("message has no coordinates (not a consumed record)")
        fields = (
            topic, partition, offset, msg.key(), msg.value(), timestamp_ms(msg), LazyHeaders(msg)
        )  # fmt: skip
        return _new(cls, fields)
