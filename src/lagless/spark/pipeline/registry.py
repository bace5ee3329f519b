"""What the Schema Registry formats (Avro, Protobuf) share: the client, every version of a
subject looked up once on the driver, and the parse step around a decoding Python UDF.

A decoder is a picklable object whose ``decode(value)`` returns ``(record, cls, msg)``: the
record as a dict of the schema's fields, or the DLQ class and reason when the value does not
decode. The executors get the schemas with the UDF and never call the registry."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F  # noqa: N812
from pyspark.sql import types as T  # noqa: N812

from lagless.errors import ConfigError
from lagless.spark.pipeline.parse import Parsed
from lagless.spark.pipeline.schemas import RecordSchema

UNKNOWN_SCHEMA = "unknown_schema"
MAGIC = 0
HEADER = 5  # the magic byte and the schema id (4 bytes, big-endian)


def registry_client(registry: Any, flag: str) -> Any:
    if not isinstance(registry, str):
        return registry  # a SchemaRegistryClient (or confluent-kafka's mock) given in Python
    try:
        from confluent_kafka.schema_registry import SchemaRegistryClient
    except ImportError as exc:
        raise ConfigError(f"{flag} needs the schemaregistry extra: {exc}") from None
    try:
        return SchemaRegistryClient.new_client({"url": registry})
    except Exception as exc:
        raise ConfigError(f"--registry {registry!r}: {exc}") from None


def fetch_versions(
    client: Any, subject: str, schema_type: str, fmt: str | None = None
) -> list[Any]:
    """Every version of ``subject`` (``RegisteredSchema``s, oldest first); ConfigError with one
    line when the registry cannot give them or one is of another type than ``schema_type``."""
    try:
        versions = sorted(client.get_versions(subject))
        ask: dict[str, Any] = {} if fmt is None else {"fmt": fmt}
        found = [client.get_version(subject, v, **ask) for v in versions]
    except Exception as exc:
        raise ConfigError(f"schema registry: subject {subject}: {exc}") from None
    if not found:
        raise ConfigError(f"schema registry: subject {subject} has no versions")
    for registered in found:
        if (registered.schema.schema_type or "AVRO") != schema_type:
            raise ConfigError(
                f"schema registry: subject {subject} is not {schema_type.capitalize()} "
                f"(version {registered.version} is {registered.schema.schema_type or 'AVRO'})"
            )
    return found


def framed_schema_id(value: bytes | None) -> int | None:
    """The schema id of a value in the registry's wire format; None when it is not framed."""
    if value is None or len(value) < HEADER or value[0] != MAGIC:
        return None
    return int.from_bytes(value[1:HEADER], "big")


def decoded_parser(
    schema: RecordSchema, decode: Callable[[bytes | None], tuple[Any, str | None, str | None]]
) -> Callable[[DataFrame], Parsed]:
    """The parse step: ``decode`` as a Python UDF over ``value``; its reason rejects the row."""
    result = T.StructType(
        [
            T.StructField("data", schema.struct),
            T.StructField("cls", T.StringType()),
            T.StructField("msg", T.StringType()),
        ]
    )
    udf = F.udf(decode, result, useArrow=False)

    def parse(raw: DataFrame) -> Parsed:
        d = udf(F.col("value"))
        reason = F.when(
            d["cls"].isNotNull(), F.struct(d["cls"].alias("cls"), d["msg"].alias("msg"))
        )
        return Parsed({name: d["data"][name] for name in schema.names}, (reason,))

    return parse
