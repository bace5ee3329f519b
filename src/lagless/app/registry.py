"""Schema Registry keys and values (an extra: ``pip install 'lagless[schemaregistry]'``).

::

    from lagless.app import registry

    orders = registry.avro("http://registry:8081", model=Order)
    enriched = registry.json_schema("http://registry:8081", model=Enriched)

    @app.handler("orders", value=orders, output="orders-enriched", output_value=enriched, ...)

:func:`avro`, :func:`json_schema` and :func:`protobuf` make a :class:`RegistryCodec`: a codec
spec for ``value=`` / ``key=`` (confluent-kafka's deserializer reads the Confluent wire format —
magic byte, schema id — and the writer's schema from the registry) and for ``output_value=`` /
``output_key=`` (its serializer registers the schema under the output topic's subject,
``TOPIC-value`` / ``TOPIC-key``, and frames the record). Avro and JSON Schema decode into a
dict, or into ``model`` validated from it; Protobuf into the message class. Bytes not in the
wire format, an unknown schema id, a document that fails its schema or the model raise
:class:`~lagless.engine.handlers.DecodeError` (straight to the DLQ, with the reason).

``registry`` is a URL (``http(s)://...``; ``mock://NAME`` is confluent-kafka's in-memory
registry) or a ready ``SchemaRegistryClient`` (to share one, or to pass credentials).
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ValidationError

from lagless.app.codecs import EncodeError, Encoder, one_line
from lagless.engine.handlers import DecodeError
from lagless.errors import ConfigError

EXTRA = "pip install 'lagless[schemaregistry]'"
FIELDS = ("value", "key")


def client(registry: Any) -> Any:
    """A ``SchemaRegistryClient`` for a URL (or ``registry`` itself if it is one)."""
    try:
        from confluent_kafka.schema_registry import SchemaRegistryClient
    except ImportError as exc:
        raise ConfigError(f"Schema Registry support needs its extra ({EXTRA}): {exc}") from None
    if not isinstance(registry, str):
        return registry
    if not registry.startswith(("http://", "https://", "mock://")):
        raise ConfigError(f"Schema Registry URL {registry!r}: use http(s)://HOST:PORT")
    return SchemaRegistryClient.new_client({"url": registry})


def _context(topic: str, field: str) -> Any:
    from confluent_kafka.serialization import MessageField, SerializationContext

    return SerializationContext(topic, MessageField.VALUE if field == "value" else MessageField.KEY)


class RegistryCodec:
    """A Schema Registry format as a codec spec (see the module doc): called with bytes it
    decodes; :meth:`output_encoder` gives the encoder of outputs (ConfigError without a
    serializer, i.e. without the writer's schema)."""

    def __init__(
        self,
        fmt: str,
        field: str,
        deserialize: Callable[[bytes, Any], Any],
        serialize: Callable[[Any, Any], bytes | None] | None,
        model: type[BaseModel] | None = None,
        to_doc: Callable[[Any], Any] = lambda obj: obj,
    ) -> None:
        self.__name__ = fmt.replace(" ", "_").lower()
        self.fmt = fmt
        self.field = field
        self._deserialize = deserialize
        self._serialize = serialize
        self._model = model
        self._to_doc = to_doc
        self._read_context = _context("", field)

    def __call__(self, data: bytes | None) -> Any:
        if data is None:
            raise DecodeError(f"null: no {self.fmt} record")
        try:
            doc = self._deserialize(data, self._read_context)
        except Exception as exc:  # SerializationError, registry errors, ...
            raise DecodeError(f"not {self.fmt} from the registry: {exc}") from None
        if self._model is None:
            return doc
        try:
            return self._model.model_validate(doc)
        except ValidationError as exc:
            raise DecodeError(f"not a valid {self._model.__name__}: {one_line(exc)}") from None

    def output_encoder(self, what: str) -> Encoder:
        serialize = self._serialize
        if serialize is None:
            raise ConfigError(
                f"{what}=registry.{self.__name__}(...): give the schema to write outputs with"
            )

        def encode(obj: object, topic: str) -> bytes | None:
            if obj is None or isinstance(obj, bytes):  # a null, or bytes already framed
                return obj
            try:
                return serialize(self._to_doc(obj), _context(topic, self.field))
            except Exception as exc:
                raise EncodeError(f"cannot write {self.fmt} to {topic}: {exc}") from None

        return encode


def _check_field(field: str) -> None:
    if field not in FIELDS:
        raise ConfigError(f"field={field!r}: value or key")


def _import(fmt: str, module: str) -> Any:
    try:
        return importlib.import_module(f"confluent_kafka.schema_registry.{module}")
    except ImportError as exc:
        raise ConfigError(f"{fmt} support needs the extra ({EXTRA}): {exc}") from None


def _python_doc(obj: object) -> object:
    return obj.model_dump() if isinstance(obj, BaseModel) else obj


def _json_doc(obj: object) -> object:
    return obj.model_dump(mode="json") if isinstance(obj, BaseModel) else obj


def avro(
    registry: Any,
    model: type[BaseModel] | None = None,
    field: str = "value",
    schema: str | None = None,
) -> RegistryCodec:
    """Confluent-framed Avro: decoded with the writer's schema (``schema`` as the reader's
    schema if given), into a dict or ``model``; outputs written with ``schema`` (a dict or a
    model, as its fields)."""
    _check_field(field)
    registry_client = client(registry)
    mod = _import("Avro", "avro")
    deserializer = mod.AvroDeserializer(registry_client, schema)
    serializer = None if schema is None else mod.AvroSerializer(registry_client, schema)
    return RegistryCodec("Avro", field, deserializer, serializer, model, _python_doc)


def json_schema(
    registry: Any,
    model: type[BaseModel] | None = None,
    field: str = "value",
    schema: str | None = None,
) -> RegistryCodec:
    """Confluent-framed JSON validated against its schema (the writer's from the registry, or
    ``schema``), into a dict or ``model``. Outputs are validated and written with ``schema``,
    else with ``model``'s JSON Schema."""
    _check_field(field)
    registry_client = client(registry)
    mod = _import("JSON Schema", "json_schema")
    deserializer = mod.JSONDeserializer(schema, schema_registry_client=registry_client)
    writer = schema or (json.dumps(model.model_json_schema()) if model is not None else None)
    serializer = None if writer is None else mod.JSONSerializer(writer, registry_client)
    return RegistryCodec("JSON Schema", field, deserializer, serializer, model, _json_doc)


def protobuf(registry: Any, message_type: type[Any], field: str = "value") -> RegistryCodec:
    """Confluent-framed Protobuf into ``message_type`` (a generated message class); outputs
    are messages of that class (or dicts or models, parsed into one)."""
    _check_field(field)
    registry_client = client(registry)
    mod = _import("Protobuf", "protobuf")
    conf = {"use.deprecated.format": False}
    deserializer = mod.ProtobufDeserializer(
        message_type, conf, schema_registry_client=registry_client
    )
    serializer = mod.ProtobufSerializer(message_type, registry_client, conf)

    def to_message(obj: object) -> object:
        if isinstance(obj, message_type):
            return obj
        from google.protobuf import json_format

        return json_format.ParseDict(_json_doc(obj), message_type())

    return RegistryCodec("Protobuf", field, deserializer, serializer, None, to_message)
