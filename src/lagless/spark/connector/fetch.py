"""Read one partition's offset range ``[start, end)`` into Arrow record batches.

This runs inside a Spark task (``DataSourceStreamReader.read``): it makes its own consumer
(never a group member, never committing), reads exactly the range and stops.

Offsets inside a range may be missing: transaction markers take an offset no consumer sees,
compaction removes records. So the reader never waits for offset ``end - 1`` itself; it stops
at the first record at or past ``end``, or when the broker reports the partition's end
(``PARTITION_EOF``, which carries the high watermark) at or past ``end``.
"""

from __future__ import annotations

import gc
import itertools
import logging
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from confluent_kafka import OFFSET_BEGINNING, KafkaError, KafkaException, Message, TopicPartition

from lagless.errors import ClusterError, ConfigError, RecordCoordinates, RecordError
from lagless.kafka.clients import make_consumer
from lagless.kafka.offsets import PartitionRange
from lagless.kafka.records import message_headers
from lagless.spark.connector.offsets import DataLossReporter

log = logging.getLogger(__name__)

BATCH_ROWS = 20_000
CONSUME_BATCH = 5_000
CONSUME_TIMEOUT_S = 0.1

FATAL_CODES = frozenset(
    {
        KafkaError.UNKNOWN_TOPIC_OR_PART,
        KafkaError._UNKNOWN_PARTITION,
        KafkaError._UNKNOWN_TOPIC,
        KafkaError.TOPIC_AUTHORIZATION_FAILED,
        KafkaError._AUTHENTICATION,
        KafkaError._SSL,
    }
)

# Defaults a user's kafka.* options may override (tuned for reading known ranges fast).
FETCH_DEFAULTS: dict[str, Any] = {
    "fetch.queue.backoff.ms": 5,
    "fetch.wait.max.ms": 50,
    "queued.min.messages": 200_000,
    "max.partition.fetch.bytes": 8 * 1024 * 1024,
}
# What a range reader must be, whatever the user gives.
FETCH_REQUIRED: dict[str, Any] = {
    "enable.auto.commit": False,
    "enable.auto.offset.store": False,
    "enable.partition.eof": True,
    "auto.offset.reset": "error",
}


def fetch_conf(kafka: Mapping[str, Any]) -> dict[str, Any]:
    """Consumer properties for a range reader: the given group id (never joined, never
    committed to) or a fresh one. ConfigError for a property no client takes (a name that
    is not a string, a None value, a NUL character)."""
    for name, value in kafka.items():
        if not isinstance(name, str) or "\0" in name:
            raise ConfigError(f"Kafka client property {name!r}: not a property name")
        if value is None or (isinstance(value, str) and "\0" in value):
            raise ConfigError(f"Kafka client property {name}: {value!r} is not a value")
    return {
        **FETCH_DEFAULTS,
        "group.id": f"lagless-spark-reader-{uuid.uuid4().hex[:8]}",
        **kafka,
        **FETCH_REQUIRED,
    }


class BatchBuilder:
    """Collects messages and cuts Arrow batches of Spark's Kafka schema.

    Messages are only kept until ``flush``, which takes them apart one column at a time:
    ``map`` of a ``Message`` method per column (a C-level loop, no Python frame per record),
    then Arrow does the rest: the header lists are converted by Arrow itself, the (type, ms)
    timestamp pairs split by numpy, timestamps and types made by vectorised kernels."""

    def __init__(self, schema: pa.Schema, topic: str, partition: int) -> None:
        self.schema = schema
        self.topic = topic
        self.partition = partition
        self.with_headers = "headers" in schema.names
        self.messages: list[Message] = []
        # False once a message came with an offset not above the previous one's (a consumer
        # reset to an earlier offset): the offsets are then taken one by one
        self.ascending = True

    def __len__(self) -> int:
        return len(self.messages)

    def add(self, msg: Message) -> None:
        self.extend([msg])

    def extend(self, msgs: list[Message]) -> None:
        """Messages of the builder's partition, in the order one consumer delivered them
        (a consumer's chunk of one partition has growing offsets)."""
        if msgs and self.messages and self.ascending:
            self.ascending = _offset(msgs[0]) > _offset(self.messages[-1])
        self.messages.extend(msgs)

    def flush(self) -> pa.RecordBatch:
        """The collected records as one batch (then starts empty)."""
        msgs, s = self.messages, self.schema
        n = len(msgs)
        if not n:
            return pa.RecordBatch.from_pylist([], schema=s)
        # map() over the methods: one C-level pass per column, no Python frame per record
        kinds, millis = _stamp_pairs(msgs)
        columns: list[pa.Array] = [
            pa.array(list(map(Message.key, msgs)), s.field("key").type),
            pa.array(list(map(Message.value, msgs)), s.field("value").type),
            pa.repeat(pa.scalar(self.topic, s.field("topic").type), n),
            pa.repeat(pa.scalar(self.partition, s.field("partition").type), n),
            _offsets(msgs, s.field("offset").type, self.ascending),
            *_timestamps(kinds, millis, s.field("timestamp").type, s.field("timestampType").type),
        ]
        if self.with_headers:
            lists = _header_lists(msgs, self.topic, self.partition)
            columns.append(_headers(lists, s.field("headers").type))
        batch = pa.RecordBatch.from_arrays(columns, schema=s)
        self.messages = []
        self.ascending = True
        return batch


NOT_UTF8 = (
    "a header key that is not UTF-8, which confluent-kafka cannot read (lagless's C reader "
    "replaces such bytes with U+FFFD, as Spark's Kafka source does)"
)


def _header_lists(msgs: list[Message], topic: str, partition: int) -> list[Any]:
    """``Message.headers()`` of each message; a RecordError when confluent-kafka cannot decode
    one's headers (called through :data:`lagless.kafka.records.message_headers`, so the error
    is raised at that message, never left set for a later step)."""
    lists = []
    try:
        for msg in msgs:
            lists.append(message_headers(msg))
    except (SystemError, UnicodeDecodeError):
        raise RecordError(NOT_UTF8, RecordCoordinates(topic, partition, _offset(msg))) from None
    return lists


def _offset(msg: Message) -> int:
    offset: int = msg.offset()  # type: ignore[assignment]
    return offset


def _offsets(msgs: list[Message], offset_type: pa.DataType, ascending: bool) -> pa.Array:
    """The records' offsets. When they grow (``ascending``) and the last is the first plus
    ``n - 1``, they are every offset in between: a range, made without asking each message
    (gaps from compaction or transaction markers take the per-message path)."""
    first, last = _offset(msgs[0]), _offset(msgs[-1])
    if ascending and last - first == len(msgs) - 1:
        return pa.array(np.arange(first, last + 1, dtype=np.int64), offset_type)
    return pa.array(list(map(Message.offset, msgs)), offset_type)


def _stamp_pairs(msgs: list[Message]) -> tuple[pa.Array, pa.Array]:
    """The (type, ms) pairs of ``Message.timestamp()`` as two int64 arrays: the pairs chained
    into one flat array by numpy (a C-level pass), then split by stride; about half the cost
    of Arrow converting the pairs as structs."""
    flat = np.fromiter(
        itertools.chain.from_iterable(map(Message.timestamp, msgs)), np.int64, 2 * len(msgs)
    )
    return pa.array(flat[0::2]), pa.array(flat[1::2])


def _timestamps(
    kinds: pa.Array, millis: pa.Array, ts_type: pa.DataType, kind_type: pa.DataType
) -> tuple[pa.Array, pa.Array]:
    """Kafka's (type, ms) pairs as Spark's ``timestamp`` and ``timestampType`` columns.

    confluent-kafka: 0 none, 1 create time, 2 log-append time; Kafka/Spark: -1, 0, 1. A record
    without a timestamp has a null ``timestamp``."""
    micros = pc.multiply(millis, 1000).cast(ts_type)
    none = pc.equal(kinds, 0)
    if pc.any(none).as_py():
        micros = pc.if_else(none, pa.scalar(None, ts_type), micros)
    return micros, pc.subtract(kinds, 1).cast(kind_type)


def _headers(per_record: list[Any], list_type: pa.DataType) -> pa.Array:
    """``Message.headers()`` of each record (a list of ``(key, value)`` pairs, or None) as
    Spark's ``array<struct<key string, value binary>>``; null for a record without headers.
    Arrow converts the pairs itself (str values become their UTF-8 bytes, as a producer may
    hand them); an empty list (not something a consumed record has) becomes null too."""
    headers = pa.array(per_record, list_type)
    empty = pc.equal(pc.list_value_length(headers), 0)
    if pc.any(empty).as_py():
        headers = pc.if_else(empty, pa.scalar(None, list_type), headers)
    return headers


def read_range(
    kafka: Mapping[str, Any],
    rng: PartitionRange,
    schema: pa.Schema,
    report: DataLossReporter,
    poll_timeout_ms: int = 120_000,
    batch_rows: int = BATCH_ROWS,
) -> Iterator[pa.RecordBatch]:
    """Every record of ``rng`` as Arrow batches of ``schema`` (Spark's Kafka schema).

    Read by the C reader (:mod:`lagless.spark.connector.native_fetch`) where it can be used,
    else with confluent-kafka's Python API; both give the same batches."""
    from lagless.spark.connector import native_fetch  # (it imports this module)

    if rng.start < 0:
        raise ConfigError(f"{rng.topic}[{rng.partition}]: start offset {rng.start} is negative")
    conf = fetch_conf(kafka)
    reader = native_fetch.open_reader(conf, rng, headers="headers" in schema.names)
    if reader is not None:
        yield from native_fetch.batches(reader, rng, schema, report, poll_timeout_ms, batch_rows)
        return
    try:
        consumer = make_consumer(conf)
    except KafkaException as exc:
        raise ConfigError(f"Kafka client configuration: {exc.args[0].str()}") from None
    consumer.assign([TopicPartition(rng.topic, rng.partition, rng.start)])
    try:
        with gc_paused():
            yield from _batches(consumer, rng, schema, report, poll_timeout_ms, batch_rows)
    finally:
        consumer.close()


def _batches(
    consumer: Any,
    rng: PartitionRange,
    schema: pa.Schema,
    report: DataLossReporter,
    poll_timeout_ms: int,
    batch_rows: int,
) -> Iterator[pa.RecordBatch]:
    builder = BatchBuilder(schema, rng.topic, rng.partition)
    position = rng.start
    waiting = Waiting(rng, poll_timeout_ms)
    while position < rng.end:
        # consume() waits for that many messages or the timeout: ask for no more than the
        # range still holds. With gaps fewer come; the EOF event then ends the range.
        wanted = min(CONSUME_BATCH, batch_rows, rng.end - position)
        messages = consumer.consume(wanted, timeout=CONSUME_TIMEOUT_S)
        if not waiting.got(bool(messages), position):
            continue
        position = _take(messages, builder, consumer, rng, position, report)
        if len(builder) >= batch_rows:
            yield builder.flush()
    if len(builder):
        yield builder.flush()


class Waiting:
    """How long a range reader waits for its next record: ``poll_timeout_ms`` from the last
    one (or the start), then a :class:`ClusterError` naming the partition and offset."""

    def __init__(self, rng: PartitionRange, poll_timeout_ms: int) -> None:
        self.rng = rng
        self.timeout_ms = poll_timeout_ms
        self.deadline = time.monotonic() + poll_timeout_ms / 1000

    def got(self, anything: bool, position: int) -> bool:
        """Whether a poll brought anything (then the wait starts again); raises past the
        deadline."""
        if anything:
            self.deadline = time.monotonic() + self.timeout_ms / 1000
            return True
        if time.monotonic() > self.deadline:
            rng = self.rng
            raise ClusterError(
                f"no record of {rng.topic}[{rng.partition}] at offset {position} "
                f"(reading up to {rng.end}) within {self.timeout_ms} ms"
            )
        return False


@contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic garbage collection while a range is read (restored at its end).

    Every consumed message and its header list is a fresh container object; with thousands
    alive at once, collections run over and over without finding anything: nothing made here
    forms a reference cycle (everything is freed by reference counting at each flush). Paused
    for the whole range rather than around each step only: ~390k -> ~500k+ records/s per
    core, measured outside Spark with headers."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _take(
    messages: list[Message],
    builder: BatchBuilder,
    consumer: Any,
    rng: PartitionRange,
    position: int,
    report: DataLossReporter,
) -> int:
    """Add the messages inside the range to ``builder``; the position after them."""
    if not any(map(Message.error, messages)):  # (a KafkaError is always true)
        # Records only (error events, whose offset may be None, take the loop below; a
        # KafkaError cannot even be compared with None).
        last_offset: int = messages[-1].offset()  # type: ignore[assignment]
        first_offset: int = messages[0].offset()  # type: ignore[assignment]
        if rng.start <= first_offset and last_offset < rng.end:  # all inside: offsets grow
            builder.extend(messages)
            return last_offset + 1
    for msg in messages:
        offset: int = msg.offset()  # type: ignore[assignment]
        if msg.error() is not None:
            position = _on_error(consumer, msg, rng, position, report)
        elif offset >= rng.end:
            position = rng.end
        elif offset < rng.start:  # below the range: read after a rewind to the start
            continue
        else:
            builder.add(msg)
            position = offset + 1
        if position >= rng.end:
            break
    return position


def _on_error(
    consumer: Any, msg: Message, rng: PartitionRange, position: int, report: DataLossReporter
) -> int:
    err: KafkaError = msg.error()  # type: ignore[assignment]
    event = ErrorEvent(err.code(), msg.offset(), err.str(), err.fatal())  # type: ignore[arg-type]
    return on_error(
        event,
        rng,
        position,
        report,
        rewind=lambda: consumer.assign(
            [TopicPartition(rng.topic, rng.partition, OFFSET_BEGINNING)]
        ),
    )


class ErrorEvent(NamedTuple):
    """An error event of a range read: librdkafka's code, the event's offset (for EOF: the
    partition's end), its text, and whether the client is now unusable."""

    code: int
    offset: int
    text: str
    fatal: bool


def on_error(
    event: ErrorEvent,
    rng: PartitionRange,
    position: int,
    report: DataLossReporter,
    rewind: Callable[[], None],
) -> int:
    """The position after an error event: EOF may close a range whose last offsets are gaps;
    a position no longer on the broker is reported, then read from the partition's start
    (``rewind``)."""
    code = event.code
    if code == KafkaError._PARTITION_EOF:
        if event.offset >= rng.end:
            return rng.end
        log.debug(
            "%s[%s] ends at %s, below %s: waiting", rng.topic, rng.partition, event.offset, rng.end
        )
        return position
    if code == KafkaError._AUTO_OFFSET_RESET:
        report(
            f"{rng.topic}[{rng.partition}] offset {position} is no longer available ({event.text})"
        )
        rewind()
        return position
    if event.fatal or code in FATAL_CODES:
        raise ClusterError(f"cannot read {rng.topic}[{rng.partition}] at {position}: {event.text}")
    # Transport errors and the like: librdkafka reconnects; the poll deadline bounds the wait.
    log.warning("error reading %s[%s], retrying: %s", rng.topic, rng.partition, event.text)
    return position
