"""Avro values in the Schema Registry's wire format (magic byte 0, the schema id as 4 bytes
big-endian, the Avro binary), decoded by a Python UDF with ``fastavro`` (the
``schemaregistry`` extra). Spark's own ``from_avro`` is in a jar that is not on PySpark's
classpath.

The schemas are looked up once, on the driver, when the query starts: every version of the
subject (default ``TOPIC-value``), so a record written with any of them decodes; the latest is
the reader schema the Spark columns come from (older writers' records are resolved to it by
Avro's rules). The executors get the schemas with the UDF and never call the registry.
A value that is not in the wire format is rejected as ``broken_avro``, one with a schema id
not under the subject as ``unknown_schema``, one that does not decode as ``broken_avro``
with the decoder's message.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import types as T  # noqa: N812

from lagless.errors import ConfigError
from lagless.spark.pipeline.parse import Parsed
from lagless.spark.pipeline.registry import (
    HEADER,
    UNKNOWN_SCHEMA,
    decoded_parser,
    fetch_versions,
    framed_schema_id,
    registry_client,
)
from lagless.spark.pipeline.schemas import RecordSchema, check_names

BROKEN_AVRO = "broken_avro"
PRIMITIVE: dict[str, T.DataType] = {
    "string": T.StringType(),
    "int": T.IntegerType(),
    "long": T.LongType(),
    "float": T.FloatType(),
    "double": T.DoubleType(),
    "boolean": T.BooleanType(),
    "bytes": T.BinaryType(),
}
LOGICAL: dict[str, T.DataType] = {
    "timestamp-millis": T.TimestampType(),
    "timestamp-micros": T.TimestampType(),
    "date": T.DateType(),
}


def avro_type(node: Any, named: dict[str, T.DataType]) -> T.DataType:
    """The Spark type of an Avro schema node (named types resolved through ``named``)."""
    if isinstance(node, str):
        if node in PRIMITIVE:
            return PRIMITIVE[node]
        if node in named:
            return named[node]
        raise ConfigError(f"Avro type {node!r} is not supported")
    if isinstance(node, list):
        rest = [n for n in node if n != "null"]
        return avro_type(rest[0], named) if len(rest) == 1 else T.StringType()
    kind = node.get("type")
    logical = node.get("logicalType")
    if logical in LOGICAL:
        return LOGICAL[logical]
    if logical == "decimal":
        return T.DecimalType(int(node["precision"]), int(node.get("scale", 0)))
    if kind == "record":
        struct = T.StructType(
            [T.StructField(f["name"], avro_type(f["type"], named)) for f in node["fields"]]
        )
        named[node["name"]] = struct
        return struct
    if kind == "enum":
        named[node["name"]] = T.StringType()
        return T.StringType()
    if kind == "fixed":
        named[node["name"]] = T.BinaryType()
        return T.BinaryType()
    if kind == "array":
        return T.ArrayType(avro_type(node["items"], named))
    if kind == "map":
        return T.MapType(T.StringType(), avro_type(node["values"], named))
    return avro_type(kind, named)


def fetch_schemas(registry: Any, subject: str) -> tuple[dict[int, str], str]:
    """Every version's schema of ``subject`` by schema id, and the latest one's text."""
    found = fetch_versions(registry_client(registry, "--value avro"), subject, "AVRO")
    return {r.schema_id: r.schema.schema_str for r in found}, found[-1].schema.schema_str


def record_schema(reader: str, subject: str) -> RecordSchema:
    struct = avro_type(json.loads(reader), {})
    if not isinstance(struct, T.StructType):
        raise ConfigError(f"schema registry: subject {subject}: the schema is not a record")
    return check_names(RecordSchema(struct, (), None, f"subject {subject}"))


class AvroDecoder:
    """Picklable: parses the schemas on first use in each executor process."""

    def __init__(self, writers: dict[int, str], reader: str) -> None:
        self.writers = writers
        self.reader = reader
        self._parsed: tuple[dict[int, Any], Any] | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {"writers": self.writers, "reader": self.reader, "_parsed": None}

    def decode(self, value: bytes | None) -> tuple[Any, str | None, str | None]:
        import fastavro

        if self._parsed is None:
            writers = {i: fastavro.parse_schema(json.loads(s)) for i, s in self.writers.items()}
            self._parsed = writers, fastavro.parse_schema(json.loads(self.reader))
        writers, reader = self._parsed
        schema_id = framed_schema_id(value)
        if value is None or schema_id is None:
            return None, BROKEN_AVRO, "value is not in the Schema Registry's wire format"
        writer = writers.get(schema_id)
        if writer is None:
            return None, UNKNOWN_SCHEMA, f"schema id {schema_id} is not a version of the subject"
        try:
            record = fastavro.schemaless_reader(io.BytesIO(value[HEADER:]), writer, reader)
        except Exception as exc:
            return None, BROKEN_AVRO, f"cannot decode: {exc}"[:500]
        return record, None, None


def parse_avro(registry: Any, subject: str) -> tuple[RecordSchema, Callable[[DataFrame], Parsed]]:
    writers, reader = fetch_schemas(registry, subject)
    schema = record_schema(reader, subject)
    return schema, decoded_parser(schema, AvroDecoder(writers, reader).decode)
