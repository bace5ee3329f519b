"""Typed keys and values: turn a record's bytes into what a handler wants, and back.

A codec spec (the ``value=`` / ``key=`` of :meth:`lagless.App.handler`) is one of

* ``bytes`` (default): the raw bytes, untouched (``None`` for a null value);
* ``str``: UTF-8 text;
* ``"json"``: any JSON document (``json.loads``);
* a pydantic model class: the validated model (from its JSON);
* a container type or a typing generic (``dict``, ``list``, ``bool``, ``list[Order]``,
  ``dict[str, int]``, ``int | None``...), a dataclass, a TypedDict, a NamedTuple or ``Any``:
  JSON validated by pydantic into that type (calling ``bool(b"false")``, ``list(b"[1]")`` or
  a dataclass on the bytes would give silently wrong values);
* any other callable ``f(bytes | None) -> T`` (``int`` and ``float`` too): whatever it
  returns; it raises to reject;
* a Schema Registry deserializer from :mod:`lagless.app.registry` (an extra).

A value that cannot be decoded raises :class:`DecodeError` (the engine sends the record
straight to the DLQ, with the error as the reason: retrying cannot help).

:func:`encode` is the way back for outputs: bytes as is, ``str`` as UTF-8, a pydantic model as
its JSON, ``None`` as a null, anything else as strict JSON (a dataclass as its fields; no NaN
or Infinity; what is not JSON, e.g. a set, is an :class:`EncodeError`). :func:`encoder` turns an
output codec spec (``output_value=`` / ``output_key=``: ``None`` for :func:`encode`, a callable
``f(obj) -> bytes``, or a Schema Registry codec, which also needs the output topic) into an
:data:`Encoder`; an output that cannot be encoded raises :class:`EncodeError`.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
from collections.abc import Callable
from typing import Any, Protocol, get_origin, is_typeddict, runtime_checkable

from pydantic import BaseModel, PydanticUserError, TypeAdapter, ValidationError

from lagless.engine.handlers import DecodeError
from lagless.errors import ConfigError, LaglessError

Decoder = Callable[[bytes | None], Any]
CodecSpec = Any  # bytes | str | "json" | type[BaseModel] | Decoder
Encoder = Callable[[object, str], bytes | None]  # (an output key or value, its topic)
# types that calling on bytes would turn into nonsense: decoded as JSON of that type instead
JSON_TYPES = (dict, list, tuple, set, frozenset, bool)


class EncodeError(LaglessError):
    """An output key or value cannot be encoded (the input's attempt fails, with this reason)."""


@runtime_checkable
class TopicCodec(Protocol):
    """A codec with its own output encoder (a Schema Registry one: its subject is per topic);
    :meth:`output_encoder` raises ConfigError if this codec cannot encode (e.g. no schema)."""

    def output_encoder(self, what: str) -> Encoder: ...


def _raw(data: bytes | None) -> bytes | None:
    return data


def _text(data: bytes | None) -> str | None:
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DecodeError(f"not UTF-8 text: {exc}") from None


def _json(data: bytes | None) -> Any:
    if data is None:
        raise DecodeError("null, not JSON")
    try:
        return json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise DecodeError(f"not JSON: {exc}") from None


def one_line(exc: ValidationError) -> str:
    """The first validation error as ``field: message`` (+ how many more)."""
    errors = exc.errors()
    first = errors[0]
    where = ".".join(str(p) for p in first["loc"])
    more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{where + ': ' if where else ''}{first['msg']}{more}"


def _model(cls: type[BaseModel]) -> Decoder:
    def decode(data: bytes | None) -> BaseModel:
        if data is None:
            raise DecodeError(f"null, not a {cls.__name__}")
        try:
            return cls.model_validate_json(data)
        except ValidationError as exc:
            raise DecodeError(f"not a valid {cls.__name__}: {one_line(exc)}") from None

    return decode


def _typed_json(spec: Any, what: str) -> Decoder:
    try:
        adapter: TypeAdapter[Any] = TypeAdapter(spec)
    except PydanticUserError as exc:  # e.g. typing.TypedDict on Python < 3.12
        raise ConfigError(f"{what}={spec!r}: {str(exc).splitlines()[0]}") from None
    name = getattr(spec, "__name__", None) if get_origin(spec) is None else None
    name = name or str(spec).replace("typing.", "")

    def decode(data: bytes | None) -> Any:
        try:
            if data is None:  # a null: None where the type allows it (e.g. Order | None)
                return adapter.validate_python(None)
            return adapter.validate_json(data)
        except ValidationError as exc:
            if data is None:
                raise DecodeError(f"null, not a {name}") from None
            raise DecodeError(f"not a valid {name}: {one_line(exc)}") from None

    return decode


def _custom(func: Callable[[bytes | None], Any]) -> Decoder:
    name = getattr(func, "__name__", repr(func))

    def decode(data: bytes | None) -> Any:
        try:
            return func(data)
        except DecodeError:
            raise
        except ValidationError as exc:
            raise DecodeError(f"{name}: {one_line(exc)}") from None
        except Exception as exc:
            raise DecodeError(f"{name}: {type(exc).__name__}: {exc}") from None

    return decode


def _validated_json(spec: Any) -> bool:
    """A type to validate from JSON: a container (a subclass too: a NamedTuple), a typing
    generic, a dataclass, a TypedDict or ``Any``. Called on the bytes instead, a dataclass
    would hold them unvalidated in its first field and the others would refuse every record."""
    if spec is Any or get_origin(spec) is not None or is_typeddict(spec):
        return True
    if not isinstance(spec, type):
        return False
    return issubclass(spec, JSON_TYPES) or dataclasses.is_dataclass(spec)


def decoder(spec: CodecSpec, what: str = "value") -> Decoder:
    """The decoder for ``spec``; ConfigError (one line) for a spec that is none of the above."""
    if spec is bytes or spec is None:
        return _raw
    if spec is str:
        return _text
    if spec == "json" or spec is json:
        return _json
    if isinstance(spec, type) and issubclass(spec, BaseModel):
        return _model(spec)
    if _validated_json(spec):
        return _typed_json(spec, what)
    if inspect.iscoroutinefunction(spec):
        raise ConfigError(
            f"{what}={getattr(spec, '__name__', spec)}: an async def decoder would hand the "
            "handler a coroutine; decode synchronously (await in the handler)"
        )
    if callable(spec):  # a function, or a type such as int or float
        return _custom(spec)
    raise ConfigError(
        f"{what}={spec!r}: use bytes, str, 'json', a pydantic model class or a callable"
    )


def encode(obj: object) -> bytes | None:
    """An output key or value as bytes (see the module doc)."""
    if obj is None or isinstance(obj, bytes):
        return obj
    if isinstance(obj, bytearray | memoryview):
        return bytes(obj)
    try:
        if isinstance(obj, str):
            return obj.encode("utf-8")
        if isinstance(obj, BaseModel):
            return obj.model_dump_json().encode("utf-8")
        return json.dumps(
            obj, separators=(",", ":"), allow_nan=False, default=_dataclass_fields
        ).encode("utf-8")
    except (TypeError, ValueError) as exc:  # not JSON-able, NaN, a lone surrogate, ...
        raise EncodeError(
            f"cannot write {type(obj).__name__} as JSON: {exc} (write bytes, str, a pydantic "
            "model or JSON data: dict, list, str, a finite number, bool, None)"
        ) from None


def _dataclass_fields(obj: object) -> Any:
    """``json.dumps``' hook: a dataclass as its fields (what a dataclass codec decodes)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return dataclasses.asdict(obj)
    raise TypeError(f"Object of type {type(obj).__name__} is not JSON serializable")


def plain(obj: object, topic: str) -> bytes | None:
    """The default output encoder: :func:`encode` (the topic is not needed)."""
    return encode(obj)


def encoder(spec: object, what: str = "output_value") -> Encoder:
    """The output encoder for ``spec`` (see the module doc); ConfigError if it is none."""
    if spec is None:
        return plain
    if isinstance(spec, TopicCodec):
        return spec.output_encoder(what)
    if not callable(spec):
        raise ConfigError(f"{what}={spec!r}: use a callable f(obj) -> bytes or a registry codec")
    name = getattr(spec, "__name__", repr(spec))

    def custom(obj: object, topic: str) -> bytes | None:
        try:
            data = spec(obj)
        except Exception as exc:
            raise EncodeError(f"{what} {name} for {topic}: {type(exc).__name__}: {exc}") from None
        if data is not None and not isinstance(data, bytes):
            raise EncodeError(
                f"{what} {name} for {topic} returned {type(data).__name__}, not bytes"
            )
        return data

    return custom
