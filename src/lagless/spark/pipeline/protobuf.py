"""Protobuf values in the Schema Registry's wire format (magic byte 0, the schema id as 4 bytes
big-endian, the message indexes, the Protobuf binary), decoded by a Python UDF with
``protobuf`` (the ``schemaregistry`` extra).

The schemas are looked up once, on the driver, when the query starts, in the registry's
serialized form (``FileDescriptorProto``, what confluent-kafka's ``ProtobufSerializer``
registers): every version of the subject (default ``TOPIC-value``), so a record written with
any of them decodes; the latest, with its references, is the reader schema the Spark columns
come from (its record message: ``message``, default the file's first). A record is parsed
with the reader's message, as Protobuf's evolution rules intend (fields by number; unknown
ones skipped, absent ones at their default). The executors get the schemas with the UDF, build
the descriptors once per Python worker and never call the registry.

A value not in the wire format, with message indexes that do not parse or point to no message
of its schema, or to another message than the record's, or that does not decode is rejected as
``broken_protobuf``; one with a schema id that is no version of the subject as
``unknown_schema``.
"""

from __future__ import annotations

import base64
import importlib
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import types as T  # noqa: N812

from lagless.errors import ConfigError
from lagless.spark.pipeline import registry as sr
from lagless.spark.pipeline.parse import Parsed
from lagless.spark.pipeline.schemas import RecordSchema, check_names

BROKEN_PROTOBUF = "broken_protobuf"
MAX_INDEXES = 100  # message nesting deeper than this is no schema's
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
TIMESTAMP = "google.protobuf.Timestamp"
WRAPPERS = {
    f"google.protobuf.{n}Value"
    for n in ("Double", "Float", "Int64", "UInt64", "Int32", "UInt32", "Bool", "String", "Bytes")
}
# the modules the registry's built-in files come from (not registered as references)
BUILTIN_MODULES = {
    "google/protobuf/": "google.protobuf.",
    "google/type/": "google.type.",
    "confluent/": "confluent_kafka.schema_registry.confluent.",
}
Convert = Callable[[Any], Any]
MessageNames = dict[tuple[int, ...], str]  # message indexes -> the message's full name


# -- the wire format ------------------------------------------------------------------------


def read_varint(data: bytes, pos: int) -> tuple[int, int]:
    """An unsigned varint at ``pos``: (value, position after it); ValueError if truncated."""
    result = shift = 0
    while True:
        if pos >= len(data):
            raise ValueError("truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ValueError("varint longer than 10 bytes")


def zigzag(value: int) -> int:
    return (value >> 1) ^ -(value & 1)


def message_indexes(data: bytes, pos: int = sr.HEADER) -> tuple[list[int], int]:
    """The message indexes at ``pos`` (a zigzag varint count, then that many zigzag varints; a
    count of 0 means ``[0]``, the first message): (indexes, where the payload starts)."""
    raw, pos = read_varint(data, pos)
    count = zigzag(raw)
    if count == 0:
        return [0], pos
    if not 0 < count <= MAX_INDEXES:
        raise ValueError(f"message index count {count} is out of range")
    indexes = []
    for _ in range(count):
        raw, pos = read_varint(data, pos)
        indexes.append(zigzag(raw))
    return indexes, pos


# -- descriptors ----------------------------------------------------------------------------


def file_proto(data: bytes, name: str | None = None) -> Any:
    from google.protobuf import descriptor_pb2

    proto = descriptor_pb2.FileDescriptorProto.FromString(data)
    if name is not None:
        proto.name = name
    return proto


def builtin_file(name: str) -> bytes:
    """A built-in file (``google/protobuf/*``, ``google/type/*``, ``confluent/*``): the registry
    leaves them out of the references; they come from the installed packages."""
    for prefix, package in BUILTIN_MODULES.items():
        if name.startswith(prefix) and name.endswith(".proto"):
            module = package + name[len(prefix) : -len(".proto")].replace("/", ".") + "_pb2"
            try:
                data: bytes = importlib.import_module(module).DESCRIPTOR.serialized_pb
            except ImportError:
                break
            return data
    raise ValueError(f"import {name!r} is neither a reference of the schema nor a built-in file")


def build_pool(files: tuple[bytes, ...]) -> Any:
    """A descriptor pool of ``files`` (the schema's own file last, its references before) and
    the built-in files they import."""
    from google.protobuf import descriptor_pool

    pool = descriptor_pool.DescriptorPool()
    protos = {p.name: p for p in (file_proto(f) for f in files)}
    added: set[str] = set()

    def add(name: str) -> None:
        if name in added:
            return
        proto = protos.get(name) or file_proto(builtin_file(name))
        added.add(name)
        for dependency in proto.dependency:
            add(dependency)
        pool.Add(proto)

    for name in protos:
        add(name)
    return pool


def message_names(proto: Any) -> MessageNames:
    """Every message of a file by its message indexes (``(0,)`` the first top-level one)."""
    names: MessageNames = {}

    def walk(messages: Iterable[Any], prefix: str, at: tuple[int, ...]) -> None:
        for i, message in enumerate(messages):
            name = f"{prefix}{message.name}"
            names[(*at, i)] = name
            walk(message.nested_type, f"{name}.", (*at, i))

    walk(proto.message_type, f"{proto.package}." if proto.package else "", ())
    return names


def record_message(proto: Any, message: str | None, subject: str) -> str:
    """The record message's full name: ``message`` (full, or within the file's package), by
    default the file's first message."""
    names = message_names(proto)
    if message is None:
        if (0,) not in names:
            raise ConfigError(f"schema registry: subject {subject}: the schema has no message")
        return names[(0,)]
    package = f"{proto.package}." if proto.package else ""
    for candidate in (message, f"{package}{message}"):
        if candidate in names.values():
            return candidate
    raise ConfigError(
        f"schema registry: subject {subject}: no message {message!r} in the schema "
        f"({', '.join(sorted(names.values()))})"
    )


# -- descriptor -> Spark type, and message -> row -------------------------------------------


class UnsupportedError(ValueError):
    """A field of a type the pipeline does not map (one line naming the field)."""


def scalar_plans() -> dict[int, tuple[T.DataType, Convert]]:
    from google.protobuf.descriptor import FieldDescriptor as FD  # noqa: N817

    same: Convert = _same
    wide = (T.DecimalType(20, 0), Decimal)  # uint64 does not fit a long
    return {
        FD.TYPE_DOUBLE: (T.DoubleType(), same),
        FD.TYPE_FLOAT: (T.FloatType(), same),
        FD.TYPE_INT64: (T.LongType(), same),
        FD.TYPE_SINT64: (T.LongType(), same),
        FD.TYPE_SFIXED64: (T.LongType(), same),
        FD.TYPE_UINT64: wide,
        FD.TYPE_FIXED64: wide,
        FD.TYPE_INT32: (T.IntegerType(), same),
        FD.TYPE_SINT32: (T.IntegerType(), same),
        FD.TYPE_SFIXED32: (T.IntegerType(), same),
        FD.TYPE_UINT32: (T.LongType(), same),
        FD.TYPE_FIXED32: (T.LongType(), same),
        FD.TYPE_BOOL: (T.BooleanType(), same),
        FD.TYPE_STRING: (T.StringType(), same),
        FD.TYPE_BYTES: (T.BinaryType(), bytes),
    }


def _same(value: Any) -> Any:
    return value


def _timestamp(value: Any) -> datetime:
    return EPOCH + timedelta(seconds=value.seconds, microseconds=value.nanos // 1000)


def value_plan(field: Any, where: str, seen: frozenset[str]) -> tuple[T.DataType, Convert]:
    """The Spark type of one value of ``field`` and how a Python value becomes it."""
    from google.protobuf.descriptor import FieldDescriptor as FD  # noqa: N817

    if field.type == FD.TYPE_ENUM:
        labels = {v.number: v.name for v in field.enum_type.values}
        return T.StringType(), lambda v: labels.get(v, str(v))
    if field.type in (FD.TYPE_MESSAGE, FD.TYPE_GROUP):
        name = field.message_type.full_name
        if name == TIMESTAMP:
            return T.TimestampType(), _timestamp
        if name in WRAPPERS:
            inner, convert = value_plan(field.message_type.fields_by_name["value"], where, seen)
            return inner, lambda v: convert(v.value)
        if name.startswith("google.protobuf."):
            raise UnsupportedError(f"field {where} ({name}) is not supported")
        if name in seen:
            raise UnsupportedError(f"field {where} ({name}) is recursive, which Spark cannot hold")
        return message_plan(field.message_type, where, seen)
    plans = scalar_plans()
    if field.type not in plans:
        raise UnsupportedError(f"field {where} (type {field.type}) is not supported")
    return plans[field.type]


def field_plan(field: Any, where: str, seen: frozenset[str]) -> tuple[T.DataType, Convert]:
    """The Spark type of ``field`` and how it is read from its message (None when unset)."""
    name = field.name
    entry = field.message_type
    if field.is_repeated and entry is not None and entry.GetOptions().map_entry:
        key_type, key = value_plan(entry.fields_by_name["key"], f"{where}.key", seen)
        val_type, val = value_plan(entry.fields_by_name["value"], f"{where}.value", seen)
        return T.MapType(key_type, val_type), lambda m: {
            key(k): val(v) for k, v in getattr(m, name).items()
        }
    data_type, convert = value_plan(field, where, seen)
    if field.is_repeated:
        return T.ArrayType(data_type), lambda m: [convert(v) for v in getattr(m, name)]
    if field.has_presence:
        return data_type, lambda m: convert(getattr(m, name)) if m.HasField(name) else None
    return data_type, lambda m: convert(getattr(m, name))


def message_plan(
    descriptor: Any, where: str = "", seen: frozenset[str] = frozenset()
) -> tuple[T.StructType, Convert]:
    """A message's struct type and its message -> dict (by field name) conversion."""
    inside = seen | {descriptor.full_name}
    names: list[str] = []
    readers: list[Convert] = []
    fields: list[T.StructField] = []
    for field in descriptor.fields:
        path = f"{where}.{field.name}" if where else field.name
        data_type, read = field_plan(field, path, inside)
        names.append(field.name)
        readers.append(read)
        fields.append(T.StructField(field.name, data_type))
    pairs = list(zip(names, readers, strict=True))
    return T.StructType(fields), lambda m: {n: read(m) for n, read in pairs}


# -- the registry -> schema and decoder -------------------------------------------------------


def version_proto(registered: Any, subject: str) -> Any:
    text = registered.schema.schema_str or ""
    try:
        return file_proto(base64.b64decode(text, validate=True))
    except Exception:
        raise ConfigError(
            f"schema registry: subject {subject} version {registered.version}: not a "
            "serialized FileDescriptorProto (the registry did not answer format=serialized)"
        ) from None


def reference_files(client: Any, schema: Any, found: dict[str, bytes]) -> None:
    """The schema's references (not the built-in files), recursively, by import name."""
    for ref in schema.references or ():
        if ref.name in found or any(ref.name.startswith(p) for p in BUILTIN_MODULES):
            continue
        registered = client.get_version(ref.subject, ref.version, fmt="serialized")
        found[ref.name] = b""  # visited
        reference_files(client, registered.schema, found)
        proto = version_proto(registered, ref.subject)
        found[ref.name] = file_proto(proto.SerializeToString(), ref.name).SerializeToString()


class ProtobufSchemas:
    """What the executors need (picklable): each version's message names by schema id, the
    reader's files (references first) and its record message."""

    def __init__(self, writers: dict[int, MessageNames], files: tuple[bytes, ...], message: str):
        self.writers = writers
        self.files = files
        self.message = message


def fetch_schemas(registry: Any, subject: str, message: str | None) -> ProtobufSchemas:
    client = sr.registry_client(registry, "--value protobuf")
    found = sr.fetch_versions(client, subject, "PROTOBUF", fmt="serialized")
    writers = {r.schema_id: message_names(version_proto(r, subject)) for r in found}
    latest = found[-1]
    reader = version_proto(latest, subject)
    references: dict[str, bytes] = {}
    try:
        reference_files(client, latest.schema, references)
    except ConfigError:
        raise
    except Exception as exc:
        raise ConfigError(f"schema registry: subject {subject}: references: {exc}") from None
    files = (*references.values(), reader.SerializeToString())
    return ProtobufSchemas(writers, files, record_message(reader, message, subject))


def record_schema(schemas: ProtobufSchemas, subject: str) -> tuple[RecordSchema, Convert]:
    """The Spark schema of the record message and its conversion (ConfigError, one line)."""
    try:
        descriptor = build_pool(schemas.files).FindMessageTypeByName(schemas.message)
        struct, convert = message_plan(descriptor)
    except UnsupportedError as exc:
        raise ConfigError(f"--value protobuf: subject {subject}: {exc}") from None
    except Exception as exc:
        raise ConfigError(f"schema registry: subject {subject}: {exc}") from None
    return check_names(RecordSchema(struct, (), None, f"subject {subject}")), convert


READERS: dict[tuple[tuple[bytes, ...], str], tuple[Any, Convert]] = {}  # per Python worker


class ProtobufDecoder:
    """Picklable: builds the reader's message class on first use in each Python worker."""

    def __init__(self, schemas: ProtobufSchemas) -> None:
        self.schemas = schemas

    def reader(self) -> tuple[Any, Convert]:
        key = (self.schemas.files, self.schemas.message)
        if key not in READERS:
            from google.protobuf import message_factory

            pool = build_pool(self.schemas.files)
            descriptor = pool.FindMessageTypeByName(self.schemas.message)
            READERS[key] = message_factory.GetMessageClass(descriptor), message_plan(descriptor)[1]
        return READERS[key]

    def payload_start(self, value: bytes | None) -> int | tuple[None, str, str]:
        """Where the record message's payload starts, or why the value is rejected."""
        schema_id = sr.framed_schema_id(value)
        if value is None or schema_id is None:
            return None, BROKEN_PROTOBUF, "value is not in the Schema Registry's wire format"
        names = self.schemas.writers.get(schema_id)
        if names is None:
            return None, sr.UNKNOWN_SCHEMA, f"schema id {schema_id} is not a version of the subject"
        try:
            indexes, start = message_indexes(value)
        except ValueError as exc:
            return None, BROKEN_PROTOBUF, f"message indexes: {exc}"
        name, expected = names.get(tuple(indexes)), self.schemas.message
        if name is None:
            return None, BROKEN_PROTOBUF, f"message index {indexes} is no message of the schema"
        if name != expected:
            return None, BROKEN_PROTOBUF, f"message {name} is not the record's ({expected})"
        return start

    def decode(self, value: bytes | None) -> tuple[Any, str | None, str | None]:
        start = self.payload_start(value)
        if isinstance(start, tuple) or value is None:
            return start if isinstance(start, tuple) else (None, BROKEN_PROTOBUF, "no value")
        message_class, convert = self.reader()
        try:
            message = message_class.FromString(value[start:])
            if not message.IsInitialized():
                missing = ", ".join(message.FindInitializationErrors())
                return None, BROKEN_PROTOBUF, f"required fields missing: {missing}"[:500]
            return convert(message), None, None
        except Exception as exc:
            return None, BROKEN_PROTOBUF, f"cannot decode: {exc}"[:500]


def parse_protobuf(
    registry: Any, subject: str, message: str | None = None
) -> tuple[RecordSchema, Callable[[DataFrame], Parsed]]:
    schemas = fetch_schemas(registry, subject, message)
    schema, _ = record_schema(schemas, subject)
    return schema, sr.decoded_parser(schema, ProtobufDecoder(schemas).decode)
