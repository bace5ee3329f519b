"""The record schema a pipeline parses values with, from what the user gave.

- a Spark DDL string (``"id STRING NOT NULL, price DOUBLE, ts TIMESTAMP"``) or a
  ``StructType``: fields declared ``NOT NULL`` are required;
- a JSON Schema file (``*.json``) or a pydantic model (``module:Model``, or the class): the
  Spark schema is derived from the JSON Schema, and every record is also validated by the
  JSON Schema itself (:mod:`lagless.spark.pipeline.validate`);
- an Avro schema from a Schema Registry (:mod:`lagless.spark.pipeline.avro`);
- a Protobuf message from a Schema Registry (:mod:`lagless.spark.pipeline.protobuf`).
"""

from __future__ import annotations

import importlib
import json
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    DataType,
    DateType,
    DoubleType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from lagless.errors import ConfigError

TARGET_RE = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")
RESERVED = re.compile(r"^(kafka_\w+|dlq_error\w*|_dlq_\w+|_corrupt_record|batch_id)$")


@dataclass(frozen=True)
class RecordSchema:
    """The value's fields (all nullable, as Spark parses them), the required ones, and the
    JSON Schema every record is validated by (None: the Spark schema is the only check)."""

    struct: StructType
    required: tuple[str, ...] = ()
    json_schema: dict[str, Any] | None = None
    given: str = ""  # how the user gave it, for messages

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.struct.fieldNames())


def load_target(target: str, what: str) -> Any:
    """``module:name`` -> the object (ConfigError with one line if it cannot be imported)."""
    if not TARGET_RE.match(target):
        raise ConfigError(f"{what} {target!r} is not module:name")
    module_name, name = target.split(":")
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.insert(0, cwd)  # as `python -m` does: the user's module beside them
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        raise ConfigError(f"{what} {target}: cannot import {module_name}: {exc}") from None
    try:
        return getattr(module, name)
    except AttributeError:
        raise ConfigError(f"{what} {target}: {module_name} has no {name}") from None


def nullable(data_type: DataType) -> DataType:
    """The type with every nested field nullable (as ``from_json`` returns it)."""
    if isinstance(data_type, StructType):
        return StructType([StructField(f.name, nullable(f.dataType)) for f in data_type.fields])
    if isinstance(data_type, ArrayType):
        return ArrayType(nullable(data_type.elementType))
    return data_type


def from_struct(struct: StructType, given: str) -> RecordSchema:
    required = tuple(f.name for f in struct.fields if not f.nullable)
    checked = nullable(struct)
    assert isinstance(checked, StructType)
    return check_names(RecordSchema(checked, required, None, given))


def check_names(schema: RecordSchema) -> RecordSchema:
    if not schema.names:
        raise ConfigError(f"schema {schema.given}: no fields")
    for name in schema.names:
        if RESERVED.match(name):
            raise ConfigError(
                f"schema {schema.given}: field {name!r} is a name the pipeline adds itself "
                "(kafka_*, dlq_error*, batch_id)"
            )
    return schema


# -- JSON Schema -> Spark -------------------------------------------------------------------

SIMPLE: dict[str, DataType] = {
    "string": StringType(),
    "integer": LongType(),
    "number": DoubleType(),
    "boolean": BooleanType(),
}
FORMATS: dict[str, DataType] = {"date-time": TimestampType(), "date": DateType()}


def _resolve(node: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        target: Any = root
        for part in ref[2:].split("/"):
            target = target[part]
        return _resolve(target, root)
    return node


def _non_null(node: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    """``anyOf: [X, {"type": "null"}]`` (pydantic's Optional) and ``type: [X, "null"]`` -> X."""
    node = _resolve(node, root)
    for key in ("anyOf", "oneOf"):
        options = [o for o in node.get(key, []) if _resolve(o, root).get("type") != "null"]
        if len(options) == 1:
            return _non_null(options[0], root)
    kind = node.get("type")
    if isinstance(kind, list):
        rest = [k for k in kind if k != "null"]
        if len(rest) == 1:
            return {**node, "type": rest[0]}
    return node


def spark_type(node: dict[str, Any], root: dict[str, Any]) -> DataType:
    """The Spark type a JSON Schema node parses to (unknown shapes: the JSON text)."""
    node = _non_null(node, root)
    kind = node.get("type")
    if kind == "string" and node.get("format") in FORMATS:
        return FORMATS[node["format"]]
    if kind == "string" and node.get("contentEncoding") == "base64":
        return BinaryType()
    if isinstance(kind, str) and kind in SIMPLE:
        return SIMPLE[kind]
    if "enum" in node and all(isinstance(v, str) for v in node["enum"]):
        return StringType()
    if kind == "array":
        return ArrayType(spark_type(node.get("items", {}), root))
    if kind == "object" and node.get("properties"):
        return StructType(
            [StructField(k, spark_type(v, root)) for k, v in node["properties"].items()]
        )
    if kind == "object":
        return MapType(StringType(), StringType())
    return StringType()


def from_json_schema(doc: dict[str, Any], given: str) -> RecordSchema:
    root = _resolve(doc, doc)
    if root.get("type") != "object" or not root.get("properties"):
        raise ConfigError(
            f"schema {given}: the JSON Schema must describe an object with properties"
        )
    struct = spark_type(root, doc)
    assert isinstance(struct, StructType)
    required = tuple(str(r) for r in root.get("required", []))
    return check_names(RecordSchema(struct, required, doc, given))


def json_schema_of(target: Any, given: str) -> dict[str, Any]:
    schema_of = getattr(target, "model_json_schema", None)
    if not callable(schema_of):
        raise ConfigError(f"schema {given}: not a pydantic model nor a StructType")
    doc: dict[str, Any] = schema_of()
    return doc


# -- what the user gave -> RecordSchema -------------------------------------------------------


def resolve_schema(spec: Any, spark: SparkSession) -> RecordSchema:
    """A DDL string, ``StructType``, JSON Schema file, ``module:Model`` or a pydantic model
    class -> :class:`RecordSchema` (ConfigError with one line when it is none of them)."""
    if isinstance(spec, StructType):
        return from_struct(spec, "StructType")
    if isinstance(spec, type):
        name = f"{spec.__module__}:{spec.__qualname__}"
        return from_json_schema(json_schema_of(spec, name), name)
    if not isinstance(spec, str) or not spec.strip():
        raise ConfigError(
            f"schema {spec!r} is not a DDL string, a JSON Schema file or module:Model"
        )
    text = spec.strip()
    if text.endswith(".json") or Path(text).is_file():
        try:
            doc = json.loads(Path(text).read_text())
        except (OSError, ValueError) as exc:
            raise ConfigError(f"schema {text}: cannot read a JSON Schema: {exc}") from None
        return from_json_schema(doc, text)
    if TARGET_RE.match(text):
        target = load_target(text, "schema")
        if isinstance(target, StructType):
            return from_struct(target, text)
        return from_json_schema(json_schema_of(target, text), text)
    try:
        parsed = StructType.fromDDL(text) if spark is not None else None
    except Exception as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ConfigError(f"schema {text!r} is not a Spark DDL schema: {first}") from None
    if not isinstance(parsed, StructType):
        raise ConfigError(f"schema {text!r} is not a Spark DDL schema")
    return from_struct(parsed, repr(text))
