"""Typed accessors for confluent-kafka messages (whose getters are all Optional)."""

from __future__ import annotations

import operator
from collections.abc import Iterable, Iterator

from confluent_kafka import KafkaError, Message

from lagless.errors import ClusterError, RecordCoordinates, RecordError


def coordinates(msg: Message) -> RecordCoordinates:
    """Topic, partition and offset of a consumed record."""
    topic, partition, offset = msg.topic(), msg.partition(), msg.offset()
    if topic is None or partition is None or offset is None:
        raise ValueError("message has no coordinates (not a consumed record)")
    return RecordCoordinates(topic, partition, offset)


class HeaderNameError(RecordError):
    """A record whose header names confluent-kafka cannot read (a name that is not UTF-8)."""


# ``Message.headers()`` called from C, where the interpreter always checks a C function's
# result: on a header name that is not UTF-8 confluent-kafka returns a list holding a NULL name
# *and* sets an error, which a call site the interpreter has specialised (a hot loop) does not
# check on release builds of CPython 3.11: the broken list is returned and crashes the process.
# Through this the error is raised at the message, every time.
message_headers = operator.methodcaller("headers")

# What a message whose headers() failed holds in their place (see header_pairs): after such a
# failure confluent-kafka's Message keeps the broken list, which crashes the process the next
# time any code reads it.
_UNREADABLE: list[tuple[str, str | bytes | None]] = [("lagless: header names not UTF-8", None)]


def header_pairs(msg: Message) -> list[tuple[str, bytes | None]]:
    """The record's headers in order, values as bytes (confluent-kafka may hand a dict or
    str values); empty when it has none. HeaderNameError when a header name is not UTF-8
    (confluent-kafka's ``headers()`` fails on it), at every call for that message."""
    try:
        raw = message_headers(msg)
    except (SystemError, UnicodeDecodeError):
        replace = getattr(msg, "set_headers", None)  # confluent-kafka's: drop its broken list
        if replace is not None:
            replace(_UNREADABLE)
        raw = _UNREADABLE
    if raw is _UNREADABLE:
        raise HeaderNameError(
            "a header name is not UTF-8 (confluent-kafka cannot read its headers)",
            coordinates(msg),
        )
    if not raw:
        return []
    pairs = raw.items() if isinstance(raw, dict) else raw
    return [(k, v.encode() if isinstance(v, str) else v) for k, v in pairs]


def header(msg: Message, name: str) -> bytes | None:
    """The first value of header ``name``, if any, as bytes."""
    for key, value in header_pairs(msg):
        if key == name:
            return value
    return None


def timestamp_ms(msg: Message) -> int | None:
    """The record's timestamp in ms since the epoch, None if it has none."""
    kind, ts = msg.timestamp()
    return ts if kind != 0 and ts >= 0 else None


def data_only(batch: Iterable[Message]) -> Iterator[Message]:
    """The records of a consumed batch: end-of-partition events and retriable errors are
    skipped, any other (or fatal) error is a ClusterError naming the partition."""
    for msg in batch:
        err = msg.error()
        if err is None:
            yield msg
        elif err.fatal() or (err.code() != KafkaError._PARTITION_EOF and not err.retriable()):
            raise ClusterError(f"cannot fetch {msg.topic()}[{msg.partition()}]: {err}")
