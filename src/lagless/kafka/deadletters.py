"""Dead letters back to work: count a DLQ topic's records by why and where they failed, and
replay them to their source topic (or another).

A dead letter is the failed record itself (key, value, headers) plus the ``lagless-dlq-*``
headers the engine adds (:mod:`lagless.engine.results.dlq`). A replay sends the original key,
value and headers (the ``lagless-dlq-*`` ones left out) to the source topic the dead letter
names (or ``to``), with ``lagless-replayed-from: DLQ_TOPIC:PARTITION:OFFSET`` added; every
delivery is checked (durability profile: acks=all, idempotent).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Message

from lagless.engine.results.dlq import H_ERROR_CLASS, H_TOPIC
from lagless.errors import ConfigError
from lagless.kafka.records import coordinates, header_pairs
from lagless.kafka.tail import TailSpec, tail
from lagless.produce.producer import AccountedProducer, ProduceResult
from lagless.produce.profiles import Profile

DLQ_PREFIX = "lagless-dlq-"
REPLAYED_FROM = "lagless-replayed-from"
UNKNOWN = "?"  # a record without the header: not a lagless dead letter


def _header(msg: Message, name: str) -> str:
    for key, value in header_pairs(msg):
        if key == name and value is not None:
            return value.decode("utf-8", "replace")
    return UNKNOWN


def error_class(msg: Message) -> str:
    return _header(msg, H_ERROR_CLASS)


def source_topic(msg: Message) -> str:
    return _header(msg, H_TOPIC)


def dead_letters(conf: Mapping[str, Any], dlq_topic: str) -> Iterable[Message]:
    """Every record of ``dlq_topic``, from its start to its end now."""
    return tail(conf, TailSpec(dlq_topic))


def count_by_kind(letters: Iterable[Message]) -> Counter[tuple[str, str]]:
    """Dead letters by (error class, source topic)."""
    return Counter((error_class(m), source_topic(m)) for m in letters)


@dataclass(frozen=True)
class Replayed:
    """What a replay sent: per target topic the records, and the delivery result."""

    chosen: int  # dead letters that matched
    targets: Counter[str]
    result: ProduceResult


def replay(
    conf: Mapping[str, Any],
    dlq_topic: str,
    error: str | None = None,
    to: str | None = None,
    flush_timeout: float = 120.0,
) -> Replayed:
    """Re-produce the dead letters of ``dlq_topic`` (those of class ``error`` if given) to
    their source topic, or ``to``; ConfigError for a dead letter that names no source topic
    when ``to`` is not given (nothing is sent then)."""
    chosen = [m for m in dead_letters(conf, dlq_topic) if error is None or error_class(m) == error]
    if to is None:
        nameless = [m for m in chosen if source_topic(m) == UNKNOWN]
        if nameless:
            where = coordinates(nameless[0])
            raise ConfigError(
                f"{len(nameless)} records of {dlq_topic} name no source topic (no "
                f"{H_TOPIC} header; the first at {where}): give --to TOPIC"
            )
    producer = AccountedProducer(conf, Profile.DURABILITY)
    started = time.monotonic()
    targets: Counter[str] = Counter()
    for msg in chosen:
        target = to or source_topic(msg)
        where = coordinates(msg)
        headers = [(k, v) for k, v in header_pairs(msg) if not k.startswith(DLQ_PREFIX)]
        origin = f"{where.topic}:{where.partition}:{where.offset}".encode()
        producer.send_raw(target, msg.value(), msg.key(), [*headers, (REPLAYED_FROM, origin)])
        targets[target] += 1
    producer.flush(flush_timeout)
    result = producer.result(to or dlq_topic, len(chosen), started)
    return Replayed(len(chosen), targets, result)
