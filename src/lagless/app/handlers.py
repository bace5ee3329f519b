"""From a user's function to an engine handler.

:class:`HandlerSpec` is what ``@app.handler(...)`` registers. :func:`engine_handler` wraps it
into what the engine runs per record: decode the key and value (failure: ``DecodeError``,
straight to the DLQ with the reason), call the function, produce what it returned and return
only once every output is acknowledged. Coroutine functions get an ``async def`` wrapper,
which the engine runs as a task on its own event loop (:mod:`lagless.engine.aio`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from lagless.app.codecs import Decoder, decoder
from lagless.app.outputs import OutputProducer, outgoing
from lagless.engine import EngineConfig, Handler, Record
from lagless.errors import ConfigError

AsyncHandler = Callable[[Record], Coroutine[Any, Any, None]]


@dataclass(frozen=True)
class HandlerSpec:
    """One registered handler: its function, its topics, its codecs and engine options."""

    name: str
    func: Callable[..., Any]
    topics: tuple[str, ...]
    value: Decoder
    key: Decoder
    decode_key: bool  # a key codec other than bytes was given: bad keys go to the DLQ
    output: str | None
    options: dict[str, Any] = field(default_factory=dict)  # EngineConfig keyword values
    output_conf: dict[str, Any] = field(default_factory=dict)  # librdkafka, for the outputs
    is_async: bool = False
    pass_record: bool = False
    pass_key: bool = False

    @classmethod
    def make(
        cls,
        func: Callable[..., Any],
        topics: tuple[str, ...],
        value: Any,
        key: Any,
        output: str | None,
        options: dict[str, Any],
        output_conf: dict[str, Any] | None = None,
    ) -> HandlerSpec:
        name = getattr(func, "__name__", None) or repr(func)
        params = [
            p
            for p in inspect.signature(func).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.name != "key"
        ]
        if not 1 <= len(params) <= 2:
            raise ConfigError(
                f"handler {name}: takes (value) or (value, record), not {len(params)} arguments"
            )
        return cls(
            name=name,
            func=func,
            topics=topics,
            value=decoder(value, "value"),
            key=decoder(key, "key"),
            decode_key=key is not bytes and key is not None,
            output=output,
            options=options,
            output_conf=dict(output_conf or {}),
            is_async=inspect.iscoroutinefunction(func),
            pass_record=len(params) == 2,
            pass_key="key" in inspect.signature(func).parameters,
        )

    def engine_config(self, app_group: str, /, **overrides: Any) -> EngineConfig:
        """This handler's engine options (``overrides`` win); ConfigError if invalid."""
        values = _dlq_named(self.options)
        given = _dlq_named({k: v for k, v in overrides.items() if v is not None})
        if "dlq_topic" in given:  # a DLQ given now replaces the handler's failure choice
            values.pop("on_failure", None)
        if "on_failure" in given:
            values.pop("dlq_topic", None)
        values.update(given)
        values.setdefault("group", app_group)
        try:
            return EngineConfig.build(topics=self.topics, **values)
        except ConfigError as exc:
            raise ConfigError(f"handler {self.name}: {exc}") from None

    def arguments(self, record: Record) -> tuple[tuple[Any, ...], dict[str, Any]]:
        value = self.value(record.value)
        key = self.key(record.key) if self.decode_key or self.pass_key else record.key
        args = (value, record) if self.pass_record else (value,)
        return args, ({"key": key} if self.pass_key else {})


def _dlq_named(options: dict[str, Any]) -> dict[str, Any]:
    """``dlq`` (the short name) as EngineConfig's ``dlq_topic``."""
    out = dict(options)
    if "dlq" in out:
        out["dlq_topic"] = out.pop("dlq")
    return out


def engine_handler(spec: HandlerSpec, producer: OutputProducer) -> Handler:
    """The engine handler of a sync ``spec``."""

    def handle(record: Record) -> None:
        args, kwargs = spec.arguments(record)
        result = spec.func(*args, **kwargs)
        producer.send(outgoing(result, record, spec.output), record)

    return handle


def async_engine_handler(spec: HandlerSpec, producer: OutputProducer) -> AsyncHandler:
    """The coroutine handler of an ``async def`` ``spec``."""

    async def handle(record: Record) -> None:
        args, kwargs = spec.arguments(record)
        result = await spec.func(*args, **kwargs)
        await producer.send_async(outgoing(result, record, spec.output), record)

    return handle
