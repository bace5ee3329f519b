"""The ``lagless-kafka`` sink: write a DataFrame to a topic, streaming or batch.

Columns, as for Spark's own Kafka sink: ``value`` (binary or string, required), ``key``
(binary or string), ``headers`` (``array<struct<key string, value binary>>``), ``topic``
(string, when the ``topic`` option is not given) and ``partition`` (int).

**At-least-once.** A task produces its rows and waits for every delivery (acks=all); a failed
delivery fails the task. The producer is not idempotent by default (starting an idempotent
producer costs a round trip per task, 0.5 s on the embedded broker): a retried request may
duplicate a record; set ``kafka.enable.idempotence=true`` to rule that out. Kafka has no
transaction Spark can join, so a micro-batch that is re-run after a crash produces its records
again. Every record
carries a ``lagless-batch-id`` header with its micro-batch id, so a consumer can drop
replays: for a given batch id, the records of the latest attempt are all there.
The batch id comes from Spark (streaming writes) or the ``batchId`` option (batch writes,
e.g. inside ``foreachBatch``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import BinaryType, IntegerType, StringType, StructType

from lagless.errors import ClusterError, ConfigError
from lagless.kafka.clients import make_producer
from lagless.produce.producer import DeliveryStats
from lagless.spark.connector.options import SinkOptions
from lagless.spark.connector.schema import HEADER_TYPE
from lagless.spark.connector.worker import freeze_imports

BATCH_ID_HEADER = "lagless-batch-id"
PRODUCER_DEFAULTS: dict[str, Any] = {
    "acks": "all",
    "enable.idempotence": False,
    "linger.ms": 5,
    "batch.size": 1_048_576,
    "compression.type": "lz4",
}
BATCH_ID_PROPERTY = "streaming.sql.batchId"
FLUSH_TIMEOUT_S = 120.0


@dataclass
class KafkaCommitMessage(WriterCommitMessage):
    """What one task wrote."""

    records: int
    batch_id: int | None


def check_columns(schema: StructType, topic_option: str | None) -> None:
    """ConfigError when the DataFrame cannot be written to Kafka."""
    types = {f.name: f.dataType for f in schema.fields}
    if "value" not in types:
        raise ConfigError("the lagless-kafka sink needs a value column")
    for name in ("key", "value"):
        if name in types and not isinstance(types[name], BinaryType | StringType):
            raise ConfigError(f"column {name} must be binary or string, not {types[name]}")
    if (
        "headers" in types
        and types["headers"].simpleString() != f"array<{HEADER_TYPE.simpleString()}>"
    ):
        raise ConfigError(f"column headers must be array<{HEADER_TYPE.simpleString()}>")
    if "partition" in types and not isinstance(types["partition"], IntegerType):
        raise ConfigError("column partition must be int")
    if topic_option is None and not isinstance(types.get("topic"), StringType):
        raise ConfigError("give the topic option or a string topic column")


def produce_batches(
    options: SinkOptions, batches: Iterator[pa.RecordBatch], batch_id: int | None
) -> KafkaCommitMessage:
    """Produce every row of ``batches``; raise ClusterError unless all were delivered."""
    producer = make_producer({**PRODUCER_DEFAULTS, **options.kafka})
    stats = DeliveryStats()
    tag = [(BATCH_ID_HEADER, str(batch_id).encode())] if batch_id is not None else []
    sent = 0
    for batch in batches:
        cols = {name: batch.column(name).to_pylist() for name in batch.schema.names}
        values = cols["value"]
        keys = cols.get("key") or [None] * len(values)
        headers = cols.get("headers") or [None] * len(values)
        topics = cols.get("topic") or [None] * len(values)
        parts = cols.get("partition") or [None] * len(values)
        for value, key, hdrs, topic, part in zip(values, keys, headers, topics, parts, strict=True):
            kwargs: dict[str, Any] = {
                "key": key,
                "headers": [(h["key"], h["value"]) for h in hdrs or []] + tag,
                "on_delivery": stats.on_delivery,
            }
            if part is not None:
                kwargs["partition"] = part
            target = options.topic or topic
            if target is None:
                raise ConfigError("a row has no topic (null topic column and no topic option)")
            while True:
                try:
                    producer.produce(target, value, **kwargs)
                    break
                except BufferError:
                    producer.poll(0.05)
            sent += 1
        producer.poll(0)
    left = producer.flush(FLUSH_TIMEOUT_S)
    if left or stats.failed:
        raise ClusterError(
            f"{stats.failed + left} of {sent} records were not delivered: {stats.first_error}"
        )
    freeze_imports()
    return KafkaCommitMessage(records=stats.delivered, batch_id=batch_id)


def task_batch_id() -> int | None:
    """The micro-batch id Spark sets on the tasks of a streaming write."""
    context = TaskContext.get()
    raw = context.getLocalProperty(BATCH_ID_PROPERTY) if context is not None else None
    return int(raw) if raw else None


class KafkaStreamWriter(DataSourceStreamArrowWriter):
    """``writeStream.format("lagless-kafka")``."""

    def __init__(self, options: SinkOptions, schema: StructType) -> None:
        check_columns(schema, options.topic)
        self.options = options

    def write(self, iterator: Iterator[pa.RecordBatch]) -> KafkaCommitMessage:
        return produce_batches(self.options, iterator, task_batch_id())

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803
        """Nothing to do: every record was delivered before its task finished."""

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803
        """Nothing to undo: delivered records stay (at-least-once)."""


class KafkaBatchWriter(DataSourceArrowWriter):
    """``df.write.format("lagless-kafka")``; tag records with the ``batchId`` option."""

    def __init__(self, options: SinkOptions, schema: StructType) -> None:
        check_columns(schema, options.topic)
        self.options = options

    def write(self, iterator: Iterator[pa.RecordBatch]) -> KafkaCommitMessage:
        batch_id = self.options.batch_id if self.options.batch_id is not None else task_batch_id()
        return produce_batches(self.options, iterator, batch_id)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        """Nothing to do: every record was delivered before its task finished."""

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        """Nothing to undo: delivered records stay (at-least-once)."""
