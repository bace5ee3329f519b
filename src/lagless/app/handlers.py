"""From a user's function to an engine handler.

:class:`HandlerSpec` is what ``@app.handler(...)`` registers. :func:`engine_handler` wraps it
into what the engine runs per record: decode the key and value (failure: ``DecodeError``,
straight to the DLQ with the reason), call the function, produce what it returned and return
only once every output is acknowledged. Coroutine functions get an ``async def`` wrapper,
which the engine runs as a task on its own event loop (:mod:`lagless.engine.workers.aio`). A handler
registered with ``batch_size`` is a batch handler: :mod:`lagless.app.batch` wraps it.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from typing import Any

from lagless.app.codecs import Decoder, decoder, encoder
from lagless.app.outputs import OutputProducer, Target, outgoing
from lagless.engine import EngineConfig, Handler, Record
from lagless.errors import ConfigError
from lagless.kafka.names import check_topic

AsyncHandler = Callable[[Record], Coroutine[Any, Any, None]]
BATCH_OPTIONS = ("batch_size", "batch_linger_ms")


@dataclass(frozen=True)
class Codecs:
    """A handler's codec specs as given to ``@app.handler``: ``value``/``key`` decode the input,
    ``output_value``/``output_key`` encode the outputs (None: the default encoding)."""

    value: Any = bytes
    key: Any = bytes
    output_value: Any = None
    output_key: Any = None


@dataclass(frozen=True)
class HandlerSpec:
    """One registered handler: its function, its topics, its codecs and engine options."""

    name: str
    func: Callable[..., Any]
    topics: tuple[str, ...]
    value: Decoder
    key: Decoder
    decode_key: bool  # a key codec other than bytes was given: bad keys go to the DLQ
    target: Target  # the output topic and encoders
    options: dict[str, Any] = field(default_factory=dict)  # EngineConfig keyword values
    output_conf: dict[str, Any] = field(default_factory=dict)  # librdkafka, for the outputs
    is_async: bool = False
    pass_record: bool = False
    pass_key: bool = False  # a parameter named ``key`` (``keys`` for a batch handler)
    batch: bool = False  # registered with batch_size: called with a batch of values

    @classmethod
    def make(
        cls,
        func: Callable[..., Any],
        topics: tuple[str, ...],
        codecs: Codecs,
        output: str | None,
        options: dict[str, Any],
        output_conf: dict[str, Any] | None = None,
    ) -> HandlerSpec:
        name = getattr(func, "__name__", None) or type(func).__name__
        batch = options.get("batch_size") is not None
        key_param = "keys" if batch else "key"
        params = _positional(func, name, key_param)
        if not 1 <= len(params) <= 2:
            takes = "(values) or (values, records)" if batch else "(value) or (value, record)"
            raise ConfigError(f"handler {name}: takes {takes}, not {len(params)} arguments")
        pass_key = key_param in inspect.signature(func).parameters
        _check_callable(func, name, len(params), key_param if pass_key else None)
        target = Target(
            name,
            _output_topic(output, name, topics),
            encoder(codecs.output_value, "output_value"),
            encoder(codecs.output_key, "output_key"),
        )
        return cls(
            name=name,
            func=func,
            topics=topics,
            value=decoder(codecs.value, "value"),
            key=decoder(codecs.key, "key"),
            decode_key=codecs.key is not bytes and codecs.key is not None,
            target=target,
            options=options,
            output_conf=dict(output_conf or {}),
            is_async=_is_async(func),
            pass_record=len(params) == 2,
            pass_key=pass_key,
            batch=batch,
        )

    @property
    def output(self) -> str | None:
        """The handler's output topic (None: only ``Out(topic=...)`` outputs)."""
        return self.target.topic

    def engine_config(self, app_group: str, /, **overrides: Any) -> EngineConfig:
        """This handler's engine options (``overrides`` win); ConfigError if invalid."""
        given = {k: v for k, v in overrides.items() if v is not None}
        batch_only = [k for k in BATCH_OPTIONS if k in given]
        if not self.batch and batch_only:
            raise ConfigError(
                f"handler {self.name}: takes one record at a time; {', '.join(batch_only)} "
                "applies to batch handlers (registered with @app.handler(..., batch_size=N))"
            )
        values = layered(self.options, given)
        values.setdefault("group", app_group)
        try:
            config = EngineConfig.build(topics=self.topics, **values)
        except ConfigError as exc:
            raise ConfigError(f"handler {self.name}: {exc}") from None
        if config.processes:
            raise ConfigError(
                f"handler {self.name}: processes={config.processes}: an App handler runs in "
                "threads (its wrapper does not pickle into a process); keep the default "
                "threads, or write an async def handler for many awaits at once"
            )
        return config

    def decode(self, record: Record) -> tuple[Any, Any]:
        """The record's decoded value and key (DecodeError if either fails)."""
        value = self.value(record.value)
        key = self.key(record.key) if self.decode_key or self.pass_key else record.key
        return value, key

    def arguments(self, record: Record) -> tuple[tuple[Any, ...], dict[str, Any]]:
        value, key = self.decode(record)
        args = (value, record) if self.pass_record else (value,)
        return args, ({"key": key} if self.pass_key else {})


def _positional(func: Callable[..., Any], name: str, key_param: str) -> list[inspect.Parameter]:
    """The parameters ``func`` is called with by position; ConfigError for a function the
    wrapper cannot call (a generator function, a keyword-only parameter without a default)."""
    if inspect.isgeneratorfunction(func) or inspect.isasyncgenfunction(func):
        raise ConfigError(
            f"handler {name}: a generator function never runs as a handler (its body waits "
            "for a consumer): return a list of outputs instead of yielding them"
        )
    params = list(inspect.signature(func).parameters.values())
    misnamed = "key" if key_param == "keys" else "keys"
    if any(p.name == misnamed for p in params):  # it would get the record(s) instead
        kind = "a batch handler gets its keys" if key_param == "keys" else "a handler gets its key"
        raise ConfigError(f"handler {name}: {kind} as {key_param!r}, not {misnamed!r}")
    for p in params:
        if p.kind is p.KEYWORD_ONLY and p.default is p.empty and p.name != key_param:
            raise ConfigError(
                f"handler {name}: keyword-only parameter {p.name!r} has no default (the "
                f"handler is called with its value, its record and {key_param}= only)"
            )
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return [p for p in params if p.kind in positional and p.name != key_param]


def _check_callable(
    func: Callable[..., Any], name: str, positional: int, key_param: str | None
) -> None:
    """ConfigError if ``func`` cannot take the call the wrapper makes: ``positional`` arguments
    and ``key_param`` by name (e.g. ``def h(key, value)``: the value would fill ``key``)."""
    try:
        inspect.signature(func).bind(*range(positional), **({key_param: None} if key_param else {}))
    except TypeError as exc:
        how = f" and {key_param}= by name ({key_param} goes after them)" if key_param else ""
        raise ConfigError(
            f"handler {name}: cannot be called with {positional} argument(s) by position{how}: "
            f"{exc}"
        ) from None


def _output_topic(output: object, name: str, topics: tuple[str, ...]) -> str | None:
    """``output=``: None or one topic name other than ``topics``; ConfigError naming the
    handler otherwise (an empty name would fall through to a failure per record, a list to a
    TypeError at start, a consumed topic to a loop that never goes idle)."""
    if output is None:
        return None
    if not isinstance(output, str):
        raise ConfigError(
            f"handler {name}: output={output!r}: give one topic name (return "
            "Out(..., topic=...) to write to several)"
        )
    try:
        check_topic(output)
    except ValueError as exc:
        raise ConfigError(f"handler {name}: output={output!r}: {exc}") from None
    if output in topics:
        raise ConfigError(
            f"handler {name}: output={output!r} is a topic it consumes: every output would be "
            "consumed again, without end (return Out(..., topic=...) to write some back)"
        )
    return output


def _is_async(func: Callable[..., Any]) -> bool:
    """An ``async def`` function, or an object whose ``__call__`` is one."""
    if inspect.iscoroutinefunction(func):
        return True
    return not inspect.isroutine(func) and inspect.iscoroutinefunction(type(func).__call__)


def _dlq_named(options: Mapping[str, Any]) -> dict[str, Any]:
    """``dlq`` (the short name) as EngineConfig's ``dlq_topic``."""
    out = dict(options)
    if "dlq" in out:
        out["dlq_topic"] = out.pop("dlq")
    return out


def layered(base: Mapping[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    """Engine options ``top`` over ``base`` (``dlq`` named ``dlq_topic``). A failure choice in
    ``top`` replaces ``base``'s: a DLQ topic drops its ``on_failure``, an ``on_failure`` its
    DLQ topic (the engine takes one or the other)."""
    values, given = _dlq_named(base), _dlq_named(top)
    if given.get("dlq_topic") is not None:
        values.pop("on_failure", None)
    if given.get("on_failure") is not None:
        values.pop("dlq_topic", None)
    return {**values, **given}


def engine_handler(spec: HandlerSpec, producer: OutputProducer) -> Handler:
    """The engine handler of a sync ``spec``."""

    def handle(record: Record) -> None:
        args, kwargs = spec.arguments(record)
        result = spec.func(*args, **kwargs)
        producer.send(outgoing(result, record.key, spec.target), str(record.coordinates))

    return handle


def async_engine_handler(spec: HandlerSpec, producer: OutputProducer) -> AsyncHandler:
    """The coroutine handler of an ``async def`` ``spec``."""

    async def handle(record: Record) -> None:
        args, kwargs = spec.arguments(record)
        result = await spec.func(*args, **kwargs)
        where = str(record.coordinates)
        await producer.send_async(outgoing(result, record.key, spec.target), where)

    return handle
