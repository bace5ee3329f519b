"""The record a handler receives: a frozen, picklable copy of a consumed message."""

from __future__ import annotations

from dataclasses import dataclass, field

from confluent_kafka import Message

from lagless.errors import RecordCoordinates
from lagless.kafka.records import header_pairs, timestamp_ms


@dataclass(frozen=True, slots=True)
class Record:
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp_ms: int | None
    headers: tuple[tuple[str, bytes | None], ...] = field(default=())  # None: a null value

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
        headers = tuple(header_pairs(msg))
        return cls(
            topic, partition, offset, msg.key(), msg.value(),
            timestamp_ms(msg), headers,
        )  # fmt: skip
