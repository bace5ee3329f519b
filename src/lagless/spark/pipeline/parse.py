"""Kafka rows -> the record's fields, its source coordinates and why it is rejected, if it is.

One projection over the raw rows (Spark keeps ``from_json`` out of whole-stage code
generation: a projection of its own would first copy the parsed record and every raw column,
each record's header array included, into an intermediate row). A row is rejected, with
``dlq_error_class`` and ``dlq_error`` saying why, at the first of:

| class | when |
|---|---|
| ``broken_json`` | the value is not a JSON object (or is empty) |
| ``wrong_type`` | a field holds a value of another type than the schema's |
| ``missing_field`` | a required field is absent or null |
| ``schema_violation`` | the JSON Schema (a file's, a model's) rejects the record |
| ``broken_avro``, ``unknown_schema`` | Avro values: see :mod:`lagless.spark.pipeline.avro` |
| ``broken_protobuf``, ``unknown_schema`` | Protobuf: see :mod:`lagless.spark.pipeline.protobuf` |
| a check's name | a :class:`Check` does not hold |

Only rejected rows keep their original key, value and headers (:data:`~.dlq.ORIGINAL`):
valid rows are written from their fields, and the batch is cached.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F  # noqa: N812
from pyspark.sql.types import StringType, StructField, StructType

from lagless.ids import Malformation
from lagless.spark.pipeline.dlq import ERROR, ERROR_CLASS, HEADERS_TYPE, ORIGINAL
from lagless.spark.pipeline.schemas import RecordSchema
from lagless.spark.pipeline.validate import schema_reason

CORRUPT = "_corrupt_record"
PARSE_OPTIONS = {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": CORRUPT}
KeyFormat = Literal["none", "string", "binary"]
Fields = Callable[[str], Column]  # a field's name -> its parsed column
Rule = str | Callable[[Fields], Column]


@dataclass(frozen=True)
class Check:
    """A rule every record must satisfy, else it goes to the DLQ with class ``name``.

    ``condition``: a SQL expression over the record's fields (``"price >= 0"``), or a
    function of the fields giving a Column; a row passes when it is true (null fails it).
    ``message``: the same kinds, the DLQ reason (default ``check NAME failed: CONDITION``).
    SQL checks run in a second projection over the parsed rows; functions in the parse's own."""

    name: str
    condition: Rule
    message: Rule | None = None

    def reason(self, fields: Fields) -> Column:
        holds = self.condition if isinstance(self.condition, str) else None
        cond = F.expr(holds) if holds is not None else self._build(self.condition, fields)
        if self.message is None:
            text = F.lit(f"check {self.name} failed" + (f": {holds}" if holds else ""))
        else:
            text = self._build(self.message, fields).cast("string")
        return F.when(~F.coalesce(cond, F.lit(False)), error(self.name, text))

    @staticmethod
    def _build(rule: Rule, fields: Fields) -> Column:
        return F.expr(rule) if isinstance(rule, str) else rule(fields)


def error(kind: str, detail: Column | str) -> Column:
    text = detail if isinstance(detail, Column) else F.lit(detail)
    return F.struct(F.lit(str(kind)).alias("cls"), text.alias("msg"))


def json_reason(e: Column, value: Column, schema: RecordSchema) -> Column:
    """Why the parsed record ``e`` (``from_json`` of ``value``) is rejected; null if valid."""
    corrupt = e[CORRUPT]
    all_null = F.lit(True)
    for name in schema.names:
        all_null = all_null & e[name].isNull()
    not_object = ~F.ltrim(value.cast("string")).startswith("{")
    reason = F.when(
        value.isNull() | (all_null & (corrupt.isNotNull() | not_object)),
        error(Malformation.BROKEN_JSON, "value is not a JSON object"),
    )
    for name in schema.names:
        quoted = name.replace("'", "\\'")
        present = corrupt.isNotNull() & F.get_json_object(corrupt, f"$['{quoted}']").isNotNull()
        reason = reason.when(
            e[name].isNull() & present,
            error(Malformation.WRONG_TYPE, f"field {name} has the wrong type"),
        )
        if name in schema.required:
            reason = reason.when(
                e[name].isNull(), error(Malformation.MISSING_FIELD, f"field {name} is missing")
            )
    return reason.when(
        corrupt.isNotNull(), error(Malformation.WRONG_TYPE, "value does not fit the schema")
    )


@dataclass(frozen=True)
class Parsed:
    """A value format's result: each field's column, and why a value is rejected (or None)."""

    fields: dict[str, Column]
    reasons: tuple[Column, ...] = ()


def parse_json(schema: RecordSchema) -> Callable[[DataFrame], Parsed]:
    struct = StructType([*schema.struct.fields, StructField(CORRUPT, StringType())])
    built: list[Parsed] = []

    def parse(raw: DataFrame) -> Parsed:
        # The columns name ``value``, not a frame's column: built once (each a py4j call),
        # they serve the empty frame of the pre-start check and the stream alike.
        if not built:
            text = F.col("value").cast("string")
            e = F.from_json(text, struct, PARSE_OPTIONS)
            reasons = [json_reason(e, F.col("value"), schema)]
            if schema.json_schema is not None:
                reasons.append(schema_reason(text, schema.json_schema))
            built.append(Parsed({name: e[name] for name in schema.names}, tuple(reasons)))
        return built[0]

    return parse


def parse_raw(raw: DataFrame) -> Parsed:
    return Parsed({"value": F.col("value")})


def parse(
    raw: DataFrame,
    value: Callable[[DataFrame], Parsed],
    key: KeyFormat = "none",
    checks: Sequence[Check] = (),
) -> DataFrame:
    """Kafka rows -> ``_dlq_key/_dlq_value/_dlq_headers`` (rejected rows only), the fields,
    ``kafka_key`` (unless ``key`` is none), ``kafka_topic/partition/offset/timestamp``,
    ``dlq_error_class``, ``dlq_error``."""
    parsed = value(raw)
    fields = parsed.fields
    inline = [c for c in checks if not isinstance(c.condition, str)]
    later = [c for c in checks if isinstance(c.condition, str)]
    reasons = [*parsed.reasons, *(c.reason(lambda n: fields[n]) for c in inline)]
    reason = F.coalesce(*reasons) if len(reasons) > 1 else reasons[0] if reasons else None
    headers = F.col("headers") if "headers" in raw.columns else F.lit(None)
    originals = {
        "key": F.col("key"),
        "value": F.col("value"),
        "headers": headers.cast(HEADERS_TYPE),
    }
    keep = F.lit(True) if later or reason is None else reason.isNotNull()
    keys = {"string": [F.col("key").cast("string")], "binary": [F.col("key")], "none": []}[key]
    out = raw.select(
        *(F.when(keep, column).alias(ORIGINAL[name]) for name, column in originals.items()),
        *(column.alias(name) for name, column in fields.items()),
        *(k.alias("kafka_key") for k in keys),
        F.col("topic").alias("kafka_topic"),
        F.col("partition").alias("kafka_partition"),
        F.col("offset").alias("kafka_offset"),
        F.col("timestamp").alias("kafka_timestamp"),
        (reason["cls"] if reason is not None else F.lit(None).cast("string")).alias(ERROR_CLASS),
        (reason["msg"] if reason is not None else F.lit(None).cast("string")).alias(ERROR),
    )
    return apply_sql_checks(out, later) if later else out


def apply_sql_checks(parsed: DataFrame, checks: Sequence[Check]) -> DataFrame:
    """SQL checks over the parsed rows' fields; rows still valid after them drop their
    originals."""
    found = F.coalesce(*(c.reason(F.col) for c in checks))
    reason = F.when(F.col(ERROR_CLASS).isNull(), found)
    dead = F.col(ERROR_CLASS).isNotNull() | reason.isNotNull()
    replaced = {
        ERROR_CLASS: F.coalesce(F.col(ERROR_CLASS), reason["cls"]),
        ERROR: F.coalesce(F.col(ERROR), reason["msg"]),
        **{name: F.when(dead, F.col(name)) for name in ORIGINAL.values()},
    }
    return parsed.select(
        *(replaced[c].alias(c) if c in replaced else F.col(c) for c in parsed.columns)
    )
