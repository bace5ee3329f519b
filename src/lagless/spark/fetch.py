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
import logging
import time
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import pyarrow as pa
from confluent_kafka import OFFSET_BEGINNING, KafkaError, Message, TopicPartition

from lagless.errors import ClusterError, RecordCoordinates
from lagless.kafka.clients import make_consumer
from lagless.kafka.offsets import PartitionRange
from lagless.kafka.records import header_pairs
from lagless.spark.offsets import DataLossReporter

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
    committed to) or a fresh one."""
    return {
        **FETCH_DEFAULTS,
        "group.id": f"lagless-spark-reader-{uuid.uuid4().hex[:8]}",
        **kafka,
        **FETCH_REQUIRED,
    }


class BatchBuilder:
    """Collects records and cuts Arrow batches of Spark's Kafka schema.

    ``add`` only keeps the message; ``flush`` takes the columns apart with one comprehension
    each (a method call and five list appends per record were ~a quarter of a task's time)."""

    def __init__(self, schema: pa.Schema, topic: str, partition: int) -> None:
        self.schema = schema
        self.topic = topic
        self.partition = partition
        self.with_headers = "headers" in schema.names
        self.messages: list[Message] = []
        self.offsets: list[int] = []

    def __len__(self) -> int:
        return len(self.offsets)

    def add(self, msg: Message, offset: int) -> None:
        self.messages.append(msg)
        self.offsets.append(offset)

    def flush(self) -> pa.RecordBatch:
        """The collected records as one batch (then starts empty)."""
        msgs, n, s = self.messages, len(self.offsets), self.schema
        stamps = [m.timestamp() for m in msgs]
        # confluent-kafka: 0 none, 1 create time, 2 log-append time; Kafka/Spark: -1, 0, 1.
        columns: list[pa.Array] = [
            pa.array([m.key() for m in msgs], s.field("key").type),
            pa.array([m.value() for m in msgs], s.field("value").type),
            pa.repeat(pa.scalar(self.topic, s.field("topic").type), n),
            pa.repeat(pa.scalar(self.partition, s.field("partition").type), n),
            pa.array(self.offsets, s.field("offset").type),
            pa.array(
                [ts * 1000 if kind else None for kind, ts in stamps], s.field("timestamp").type
            ),
            pa.array([kind - 1 for kind, _ in stamps], s.field("timestampType").type),
        ]
        if self.with_headers:
            columns.append(self._headers([header_pairs(m) for m in msgs]))
        batch = pa.RecordBatch.from_arrays(columns, schema=s)
        self.messages, self.offsets = [], []
        return batch

    def _headers(self, per_record: list[list[tuple[str, bytes | None]]]) -> pa.Array:
        list_type = self.schema.field("headers").type
        struct_type = list_type.value_type
        starts = [0]
        for pairs in per_record:
            starts.append(starts[-1] + len(pairs))
        flat = [pair for pairs in per_record for pair in pairs]
        entries = pa.StructArray.from_arrays(
            [
                pa.array([k for k, _ in flat], struct_type.field("key").type),
                pa.array([v for _, v in flat], struct_type.field("value").type),
            ],
            fields=list(struct_type),
        )
        return pa.ListArray.from_arrays(
            pa.array(starts, pa.int32()),
            entries,
            type=list_type,
            mask=pa.array([not pairs for pairs in per_record], pa.bool_()),
        )


def read_range(
    kafka: Mapping[str, Any],
    rng: PartitionRange,
    schema: pa.Schema,
    report: DataLossReporter,
    poll_timeout_ms: int = 120_000,
    batch_rows: int = BATCH_ROWS,
) -> Iterator[pa.RecordBatch]:
    """Every record of ``rng`` as Arrow batches of ``schema`` (Spark's Kafka schema)."""
    consumer = make_consumer(fetch_conf(kafka))
    builder = BatchBuilder(schema, rng.topic, rng.partition)
    where = RecordCoordinates(rng.topic, rng.partition, rng.start)
    consumer.assign([TopicPartition(rng.topic, rng.partition, rng.start)])
    position = rng.start
    deadline = time.monotonic() + poll_timeout_ms / 1000
    try:
        while position < rng.end:
            # consume() waits for that many messages or the timeout: ask for no more than the
            # range still holds. With gaps fewer come; the EOF event then ends the range.
            wanted = min(CONSUME_BATCH, rng.end - position)
            messages = consumer.consume(wanted, timeout=CONSUME_TIMEOUT_S)
            if not messages:
                if time.monotonic() > deadline:
                    raise ClusterError(
                        f"no record of {where.topic}[{where.partition}] at offset {position} "
                        f"(reading up to {rng.end}) within {poll_timeout_ms} ms"
                    )
                continue
            deadline = time.monotonic() + poll_timeout_ms / 1000
            with gc_paused():
                position = _take(messages, builder, consumer, rng, position, report)
            if len(builder) >= batch_rows:
                yield _flush(builder)
        if len(builder):
            yield _flush(builder)
    finally:
        consumer.close()


def _flush(builder: BatchBuilder) -> pa.RecordBatch:
    with gc_paused():
        return builder.flush()


@contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic garbage collection while a batch of messages is taken apart.

    Each message's headers come as fresh lists of tuples; with thousands of messages alive at
    once, collections run over and over: reading with headers went from ~110k to ~400k
    records/s on the measuring machine. Nothing taken apart here forms a reference cycle.
    """
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
    for msg in messages:
        offset: int = msg.offset()  # type: ignore[assignment]
        if msg.error() is not None:
            position = _on_error(consumer, msg, rng, position, report)
        elif offset >= rng.end:
            position = rng.end
        else:
            builder.add(msg, offset)
            position = offset + 1
        if position >= rng.end:
            break
    return position


def _on_error(
    consumer: Any, msg: Message, rng: PartitionRange, position: int, report: DataLossReporter
) -> int:
    """The position after an error event: EOF may close a range whose last offsets are gaps."""
    err: KafkaError = msg.error()  # type: ignore[assignment]
    code = err.code()
    if code == KafkaError._PARTITION_EOF:
        high: int = msg.offset()  # type: ignore[assignment]
        if high >= rng.end:
            return rng.end
        log.debug("%s[%s] ends at %s, below %s: waiting", rng.topic, rng.partition, high, rng.end)
        return position
    if code == KafkaError._AUTO_OFFSET_RESET:
        report(f"{rng.topic}[{rng.partition}] offset {position} is no longer available ({err})")
        consumer.assign([TopicPartition(rng.topic, rng.partition, OFFSET_BEGINNING)])
        return position
    if err.fatal() or code in FATAL_CODES:
        raise ClusterError(f"cannot read {rng.topic}[{rng.partition}] at {position}: {err.str()}")
    # Transport errors and the like: librdkafka reconnects; the poll deadline bounds the wait.
    log.warning("error reading %s[%s], retrying: %s", rng.topic, rng.partition, err.str())
    return position
