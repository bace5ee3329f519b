"""The general pipeline's pure parts: schemas from JSON Schema / pydantic / Avro, per-record
JSON Schema validation, Avro decoding, aggregations and windows specs."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime
from enum import StrEnum

import fastavro
import pytest
from pydantic import BaseModel, Field
from pyspark.sql.types import (
    ArrayType,
    DoubleType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from lagless.errors import ConfigError
from lagless.spark.pipeline.avro import BROKEN_AVRO, UNKNOWN_SCHEMA, AvroDecoder, record_schema
from lagless.spark.pipeline.schemas import from_struct, resolve_schema
from lagless.spark.pipeline.validate import RecordValidator
from lagless.spark.pipeline.windows import Aggregation, WindowSpec


class Currency(StrEnum):
    EUR = "EUR"
    USD = "USD"


class Line(BaseModel):
    sku: str
    qty: int


class Payment(BaseModel):
    id: str
    amount: float = Field(ge=0)
    currency: Currency
    ts: datetime
    note: str | None = None
    lines: list[Line] = []


def test_a_pydantic_model_gives_its_spark_schema_required_fields_and_json_schema() -> None:
    schema = resolve_schema(Payment, None)  # type: ignore[arg-type]  # no session needed
    assert schema.struct == StructType(
        [
            StructField("id", StringType()),
            StructField("amount", DoubleType()),
            StructField("currency", StringType()),
            StructField("ts", TimestampType()),
            StructField("note", StringType()),
            StructField(
                "lines",
                ArrayType(
                    StructType([StructField("sku", StringType()), StructField("qty", LongType())])
                ),
            ),
        ]
    )
    assert schema.required == ("id", "amount", "currency", "ts")
    validator = RecordValidator(schema.json_schema or {})
    good = {"id": "p1", "amount": 1.5, "currency": "EUR", "ts": "2026-01-01T00:00:00Z"}
    assert validator.reason(json.dumps(good)) is None
    assert validator.reason(json.dumps({**good, "amount": -1})) == (
        "schema_violation",
        "amount: -1 is less than the minimum of 0",
    )
    cls, msg = validator.reason(json.dumps({**good, "currency": "XXX"})) or ("", "")
    assert cls == "schema_violation" and msg.startswith("currency: 'XXX' is not one of")
    assert validator.reason("{broken") is None  # the parse says broken_json


def test_struct_types_keep_not_null_as_required_and_reserved_names_are_refused() -> None:
    struct = StructType(
        [StructField("id", StringType(), False), StructField("n", LongType(), True)]
    )
    schema = from_struct(struct, "StructType")
    assert schema.required == ("id",)
    assert all(f.nullable for f in schema.struct.fields)
    for name in ("kafka_offset", "batch_id", "dlq_error"):
        with pytest.raises(ConfigError, match="the pipeline adds itself"):
            from_struct(StructType([StructField(name, StringType())]), "StructType")
    with pytest.raises(ConfigError, match="not a DDL string"):
        resolve_schema(42, None)  # type: ignore[arg-type]


AVRO = {
    "type": "record",
    "name": "P",
    "fields": [
        {"name": "id", "type": "string"},
        {"name": "amount", "type": ["null", "double"], "default": None},
        {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    ],
}


def wire(schema_id: int, record: dict[str, object]) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(AVRO), record)
    return b"\x00" + schema_id.to_bytes(4, "big") + out.getvalue()


def test_avro_values_decode_by_their_writer_schema_or_say_why_not() -> None:
    text = json.dumps(AVRO)
    schema = record_schema(text, "p-value")
    assert schema.struct.fieldNames() == ["id", "amount", "ts"]
    assert schema.struct["ts"].dataType == TimestampType()
    decoder = AvroDecoder({7: text}, text)
    ts = datetime(2026, 1, 1, tzinfo=UTC)
    record, cls, _ = decoder.decode(wire(7, {"id": "a", "amount": 2.0, "ts": ts}))
    assert (record, cls) == ({"id": "a", "amount": 2.0, "ts": ts}, None)
    assert decoder.decode(b"{json}")[1] == BROKEN_AVRO
    assert decoder.decode(wire(8, {"id": "a", "amount": None, "ts": ts}))[1:] == (
        UNKNOWN_SCHEMA,
        "schema id 8 is not a version of the subject",
    )
    assert decoder.decode(b"\x00\x00\x00\x00\x07\xff")[1] == BROKEN_AVRO


def test_aggregations_and_window_specs_are_checked() -> None:
    assert Aggregation.parse("n=count(*)") == Aggregation("n", "count", None)
    assert Aggregation.parse(" total = sum( amount ) ") == Aggregation("total", "sum", "amount")
    for bad in ("n=avg(x)", "n=sum(*)", "count(*)", "n=count(a b)"):
        with pytest.raises(ConfigError, match="--agg"):
            Aggregation.parse(bad)
    with pytest.raises(ConfigError, match="--window"):
        WindowSpec("ts", "a while")
    with pytest.raises(ConfigError, match="distinct names"):
        WindowSpec("ts", aggregations=(Aggregation("n", "count", None),) * 2)
    spec = WindowSpec("ts", group_by=("currency",))
    with pytest.raises(ConfigError, match="no column currency"):
        spec.check(["ts", "amount"])
