"""Schema Registry values (an extra: ``pip install 'lagless[schemaregistry]'``).

::

    from lagless.app import registry

    @app.handler("orders", value=registry.avro("http://registry:8081", model=Order), ...)

:func:`avro` is a codec spec for ``value=`` / ``key=``: confluent-kafka's ``AvroDeserializer``
reads the Confluent wire format (magic byte, schema id) and fetches the writer's schema from
the registry; the handler gets the decoded record as a dict, or as ``model`` validated from it.
Bytes that are not in the wire format, an unknown schema id or a failed validation raise
:class:`~lagless.engine.handlers.DecodeError` (straight to the DLQ, with the reason).

``registry`` is a URL (``http(s)://...``; ``mock://NAME`` is confluent-kafka's in-memory
registry) or a ready ``SchemaRegistryClient`` (to share one, or to pass credentials).
JSON Schema and Protobuf work the same way through a callable: ``value=lambda b:
deserializer(b, ctx)`` (their own extra packages: ``jsonschema``, ``protobuf``).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError

from lagless.app.codecs import one_line
from lagless.engine.handlers import DecodeError
from lagless.errors import ConfigError

EXTRA = "pip install 'lagless[schemaregistry]'"


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


def avro(registry: Any, model: type[BaseModel] | None = None, field: str = "value") -> Any:
    """A decoder of Confluent-framed Avro ``field`` ("value" or "key") values."""
    if field not in ("value", "key"):
        raise ConfigError(f"field={field!r}: value or key")
    registry_client = client(registry)
    try:
        from confluent_kafka.schema_registry.avro import AvroDeserializer
    except ImportError as exc:
        raise ConfigError(f"Avro support needs the extra ({EXTRA}): {exc}") from None
    from confluent_kafka.serialization import MessageField, SerializationContext

    deserializer = AvroDeserializer(registry_client)
    context = SerializationContext("", MessageField.VALUE if field == "value" else MessageField.KEY)

    def decode(data: bytes | None) -> Any:
        if data is None:
            raise DecodeError("null, not an Avro record")
        try:
            doc = deserializer(data, context)
        except Exception as exc:  # confluent raises SerializationError, registry errors, ...
            raise DecodeError(f"not Avro from the registry: {exc}") from None
        if model is None:
            return doc
        try:
            return model.model_validate(doc)
        except ValidationError as exc:
            raise DecodeError(f"not a valid {model.__name__}: {one_line(exc)}") from None

    decode.__name__ = "avro"
    return decode
