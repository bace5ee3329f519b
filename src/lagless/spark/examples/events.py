"""The events transformation: Kafka rows -> parsed, validated order events.

The input has Spark's Kafka columns (``key``, ``value``, ``topic``, ``partition``, ``offset``,
``timestamp``, optionally ``headers``), from ``lagless-kafka``, Spark's ``kafka`` source, or
anything shaped like them (the benchmark feeds JSON files through the same functions).

``value`` is parsed with an explicit schema (``from_json``, PERMISSIVE, keeping the raw text of
rows that do not fit). A row is invalid, with ``dlq_error_class`` and ``dlq_error`` saying why:

| class | when |
|---|---|
| broken_json | not a JSON object (or an empty value) |
| missing_field | a field is absent (or null) |
| wrong_type | a field holds a value of the wrong type (e.g. a string amount, a bad timestamp) |
| negative_amount | ``amount`` < 0 |

The classes are the names of :class:`lagless.ids.Malformation`.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F  # noqa: N812
from pyspark.sql.types import DoubleType, StringType, StructField, StructType, TimestampType

from lagless.ids import Malformation

CORRUPT = "_corrupt_record"
EVENT_FIELDS = (
    StructField("order_id", StringType()),
    StructField("user_id", StringType()),
    StructField("amount", DoubleType()),
    StructField("currency", StringType()),
    StructField("country", StringType()),
    StructField("event_ts", TimestampType()),
)
EVENT_COLUMNS = tuple(f.name for f in EVENT_FIELDS)
EVENT_SCHEMA = StructType([*EVENT_FIELDS, StructField(CORRUPT, StringType())])
PARSE_OPTIONS = {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": CORRUPT}
SOURCE_COLUMNS = ("kafka_topic", "kafka_partition", "kafka_offset", "kafka_timestamp")


def _error(kind: Malformation, detail: Column | str) -> Column:
    text = detail if isinstance(detail, Column) else F.lit(detail)
    return F.struct(F.lit(kind.value).alias("cls"), text.alias("msg"))


def invalid_reason(e: Column, value: Column) -> Column:
    """A struct ``(cls, msg)`` saying why the parsed event ``e`` is invalid; null if valid."""
    corrupt = e[CORRUPT]
    all_null = F.lit(True)
    for name in EVENT_COLUMNS:
        all_null = all_null & e[name].isNull()
    reason = F.when(
        value.isNull() | all_null,
        _error(Malformation.BROKEN_JSON, "value is not a JSON object"),
    )
    for name in EVENT_COLUMNS:
        present = corrupt.isNotNull() & F.get_json_object(corrupt, f"$.{name}").isNotNull()
        reason = reason.when(
            e[name].isNull() & present,
            _error(Malformation.WRONG_TYPE, f"field {name} has the wrong type"),
        ).when(e[name].isNull(), _error(Malformation.MISSING_FIELD, f"field {name} is missing"))
    reason = reason.when(
        e["amount"] < 0,
        _error(
            Malformation.NEGATIVE_AMOUNT,
            F.concat(F.lit("amount "), e["amount"].cast("string"), F.lit(" is negative")),
        ),
    )
    return reason


def parse_events(raw: DataFrame) -> DataFrame:
    """Kafka rows -> event columns, source coordinates, ``dlq_error_class``/``dlq_error``
    (null for valid rows), and the original ``key``, ``value`` and ``headers`` of invalid rows
    (null on valid rows, which do not need them).

    One projection over the raw rows, ``from_json`` in it as a common subexpression: Spark
    keeps ``from_json`` out of whole-stage code generation, so a projection of its own would
    first copy the parsed event and every raw column (every record's header array included)
    into an intermediate row, though only dead letters keep key, value and headers."""
    parsed = F.from_json(F.col("value").cast("string"), EVENT_SCHEMA, PARSE_OPTIONS)
    headers = F.col("headers") if "headers" in raw.columns else F.lit(None)
    originals = {
        "key": F.col("key"),
        "value": F.col("value"),
        "headers": headers.cast("array<struct<key:string,value:binary>>"),
    }
    reason = invalid_reason(parsed, F.col("value"))
    # Only dead letters carry their key, value and headers on: valid rows are written from
    # their parsed fields, and the batch is cached (the value is most of a row's bytes).
    dead = reason.isNotNull()
    return raw.select(
        *(F.when(dead, column).alias(name) for name, column in originals.items()),
        F.col("topic").alias("kafka_topic"),
        F.col("partition").alias("kafka_partition"),
        F.col("offset").alias("kafka_offset"),
        F.col("timestamp").alias("kafka_timestamp"),
        *(parsed[name].alias(name) for name in EVENT_COLUMNS),
        reason["cls"].alias("dlq_error_class"),
        reason["msg"].alias("dlq_error"),
    )


def valid_events(parsed: DataFrame) -> DataFrame:
    """Valid rows: the event, its source coordinates and ``event_date`` (UTC)."""
    return parsed.filter(F.col("dlq_error_class").isNull()).select(
        *EVENT_COLUMNS, *SOURCE_COLUMNS, F.to_date("event_ts").alias("event_date")
    )


DLQ_ID_HEADER = "lagless-dlq-id"


def dlq_id(topic: Column, partition: Column, offset: Column) -> Column:
    """A dead letter's stable identity: ``topic/partition/offset`` of the source record.

    A micro-batch re-run after a crash sends its dead letters again (at-least-once), with the
    same identity: a DLQ consumer keeps one record per ``lagless-dlq-id``."""
    return F.concat_ws("/", topic, partition.cast("string"), offset.cast("string"))


def dlq_headers() -> dict[str, Column]:
    """Why and where a dead letter came from, under the engine's header names
    (``lagless-dlq-*``, as in :mod:`lagless.engine.dlq`), so one DLQ reader serves both, and
    its identity (:func:`dlq_id`)."""
    return {
        DLQ_ID_HEADER: dlq_id(*(F.col(c) for c in SOURCE_COLUMNS[:3])),
        "lagless-dlq-error-class": F.col("dlq_error_class"),
        "lagless-dlq-error": F.col("dlq_error"),
        "lagless-dlq-topic": F.col("kafka_topic"),
        "lagless-dlq-partition": F.col("kafka_partition"),
        "lagless-dlq-offset": F.col("kafka_offset"),
        "lagless-dlq-timestamp": F.unix_millis("kafka_timestamp"),
    }


def dead_letters(parsed: DataFrame) -> DataFrame:
    """Invalid rows as DLQ records: original key, value and headers, plus :func:`dlq_headers`."""
    extra = [
        F.struct(F.lit(name).alias("key"), col.cast("string").cast("binary").alias("value"))
        for name, col in dlq_headers().items()
    ]
    empty = F.array().cast("array<struct<key:string,value:binary>>")
    return parsed.filter(F.col("dlq_error_class").isNotNull()).select(
        "key",
        "value",
        F.concat(F.coalesce(F.col("headers"), empty), F.array(*extra)).alias("headers"),
    )
