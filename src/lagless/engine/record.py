"""The record a handler receives: an immutable, picklable copy of a consumed message.

A :class:`Record` is a named tuple (made once per record on the poll loop's hot path, where a
frozen dataclass cost ~2 µs and a tuple ~0.2 µs): fields by name, immutable, hashable.
"""

from __future__ import annotations

from typing import NamedTuple, cast

from confluent_kafka import Message

from lagless.errors import RecordCoordinates
from lagless.kafka.records import header_pairs, timestamp_ms

_new = tuple.__new__
Headers = tuple[tuple[str, bytes], ...]


class Record(NamedTuple):
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp_ms: int | None
    headers: Headers = ()

    @property
    def coordinates(self) -> RecordCoordinates:
        return RecordCoordinates(self.topic, self.partition, self.offset)

    def header(self, name: str) -> bytes | None:
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
        raw = msg.headers()
        headers: Headers = ()
        if raw:
            plain = type(raw) is list
            if plain:
                headers = cast(Headers, tuple(raw))
                for _name, value in headers:
                    if type(value) is not bytes:
                        plain = False
                        break
            if not plain:  # a dict, None or str values: normalise (rare)
                headers = tuple((k, v or b"") for k, v in header_pairs(msg))
        fields = (topic, partition, offset, msg.key(), msg.value(), timestamp_ms(msg), headers)
        return _new(cls, fields)
