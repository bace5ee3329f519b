"""Dead letters: the records parsing or validation rejected, with why and where they came from.

The parse (:mod:`lagless.spark.pipeline.parse`) keeps the original key, value and headers of
rejected rows only (under :data:`ORIGINAL`'s names) and says why in ``dlq_error_class`` /
``dlq_error``; :func:`dead_letters` turns them into records for the ``lagless-kafka`` sink.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F  # noqa: N812

DLQ_ID_HEADER = "lagless-dlq-id"
ERROR_CLASS = "dlq_error_class"
ERROR = "dlq_error"
SOURCE_COLUMNS = ("kafka_topic", "kafka_partition", "kafka_offset", "kafka_timestamp")
# The original key, value and headers of a rejected row (null on valid rows)
ORIGINAL = {"key": "_dlq_key", "value": "_dlq_value", "headers": "_dlq_headers"}
HEADERS_TYPE = "array<struct<key:string,value:binary>>"


def dlq_id(topic: Column, partition: Column, offset: Column) -> Column:
    """A dead letter's stable identity: ``topic/partition/offset`` of the source record.

    A micro-batch re-run after a crash sends its dead letters again (at-least-once), with the
    same identity: a DLQ consumer keeps one record per ``lagless-dlq-id``."""
    return F.concat_ws("/", topic, partition.cast("string"), offset.cast("string"))


def dlq_headers() -> dict[str, Column]:
    """Why and where a dead letter came from, under the engine's dead-letter header names
    (``lagless-dlq-*``), so one DLQ reader serves both, and its identity (:func:`dlq_id`)."""
    return {
        DLQ_ID_HEADER: dlq_id(*(F.col(c) for c in SOURCE_COLUMNS[:3])),
        "lagless-dlq-error-class": F.col(ERROR_CLASS),
        "lagless-dlq-error": F.col(ERROR),
        "lagless-dlq-topic": F.col("kafka_topic"),
        "lagless-dlq-partition": F.col("kafka_partition"),
        "lagless-dlq-offset": F.col("kafka_offset"),
        "lagless-dlq-timestamp": F.unix_millis("kafka_timestamp"),
    }


def dead_letters(parsed: DataFrame) -> DataFrame:
    """Rejected rows as DLQ records: original key, value and headers, plus :func:`dlq_headers`."""
    extra = [
        F.struct(F.lit(name).alias("key"), col.cast("string").cast("binary").alias("value"))
        for name, col in dlq_headers().items()
    ]
    empty = F.array().cast(HEADERS_TYPE)
    return parsed.filter(F.col(ERROR_CLASS).isNotNull()).select(
        F.col(ORIGINAL["key"]).alias("key"),
        F.col(ORIGINAL["value"]).alias("value"),
        F.concat(F.coalesce(F.col(ORIGINAL["headers"]), empty), F.array(*extra)).alias("headers"),
    )


def valid_rows(parsed: DataFrame) -> DataFrame:
    """The accepted rows, without the dead letters' columns."""
    drop = {*ORIGINAL.values(), ERROR_CLASS, ERROR}
    return parsed.filter(F.col(ERROR_CLASS).isNull()).select(
        *(c for c in parsed.columns if c not in drop)
    )
