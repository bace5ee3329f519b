"""Typed accessors for confluent-kafka messages (whose getters are all Optional)."""

from __future__ import annotations

from confluent_kafka import Message

from lagless.errors import RecordCoordinates


def coordinates(msg: Message) -> RecordCoordinates:
    """Topic, partition and offset of a consumed record."""
    topic, partition, offset = msg.topic(), msg.partition(), msg.offset()
    if topic is None or partition is None or offset is None:
        raise ValueError("message has no coordinates (not a consumed record)")
    return RecordCoordinates(topic, partition, offset)


def header(msg: Message, name: str) -> bytes | None:
    """The first value of header ``name``, if any, as bytes."""
    raw = msg.headers() or []
    pairs = raw.items() if isinstance(raw, dict) else raw
    for key, value in pairs:
        if key == name:
            return value.encode() if isinstance(value, str) else value
    return None


def timestamp_ms(msg: Message) -> int | None:
    """The record's timestamp in ms since the epoch, None if it has none."""
    kind, ts = msg.timestamp()
    return ts if kind != 0 and ts >= 0 else None
