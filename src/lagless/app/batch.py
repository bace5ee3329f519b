"""Batch handlers in an App: a function called with a batch of decoded values.

``@app.handler(topic, batch_size=N, batch_linger_ms=L, value=Order, ...)`` registers a function
``f(values)`` or ``f(values, records)`` (a parameter named ``keys`` gets the decoded keys). The
engine hands the wrapper a sequence of records (:mod:`lagless.engine.workers.batch`); the wrapper

1. decodes each record: one that fails (value or key) is not passed to the function but named
   as failed with its :class:`~lagless.engine.handlers.DecodeError` (straight to the DLQ, with
   the reason); the function gets the others, ``values[i]`` decoded from ``records[i]``;
2. calls the function (not at all if no record decoded) and reads what it returned:

   * ``None``: every record succeeded, nothing is written;
   * a list or tuple: outputs (values or ``Out``; ``None`` skipped), every record succeeded;
   * a mapping ``{record or position: exception}``: exactly those records failed (the engine's
     partial results: they are retried, then dead-lettered), nothing is written;
   * :class:`BatchResult` ``(outputs, failed)``: both;
   * anything else: one output value (a bare dict is not: wrap it in a list or an ``Out``);

3. produces the outputs and returns only once the broker acknowledged all of them, so no offset
   of the batch becomes committable before its outputs are written. An output without a key
   is keyless (a batch has no one input key): give ``Out(key=...)`` to key it.

Raising fails the whole call: the engine retries the batch, then splits it to find the records
that fail (docs/engine.md, "Batch handlers").
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from lagless.app.handlers import HandlerSpec
from lagless.app.outputs import Outgoing, OutputProducer, outgoing
from lagless.engine.handlers import BatchHandler, DecodeError
from lagless.engine.record import Record
from lagless.engine.workers.retry import check_result

Failed = dict[Record, BaseException]
AsyncBatchHandler = Callable[[Sequence[Record]], Coroutine[Any, Any, Failed | None]]


@dataclass(frozen=True, slots=True)
class BatchResult:
    """What a batch handler returns to write ``outputs`` and name the records that ``failed``
    (keyed by the record, or by its position in the values the function got)."""

    outputs: Sequence[object] = ()
    failed: Mapping[Record | int, BaseException] = field(default_factory=dict)


@dataclass(slots=True)
class Decoded:
    """A batch after decoding: the records that decoded with their values and keys (in batch
    order), and those that did not, with their DecodeError."""

    records: list[Record] = field(default_factory=list)
    values: list[Any] = field(default_factory=list)
    keys: list[Any] = field(default_factory=list)
    failed: Failed = field(default_factory=dict)


def decode_batch(spec: HandlerSpec, batch: Sequence[Record]) -> Decoded:
    """Every record of ``batch`` decoded by ``spec``'s codecs (see the module doc, 1)."""
    decoded = Decoded()
    for record in batch:
        try:
            value, key = spec.decode(record)
        except DecodeError as exc:
            decoded.failed[record] = exc
            continue
        decoded.records.append(record)
        decoded.values.append(value)
        decoded.keys.append(key)
    return decoded


def _arguments(spec: HandlerSpec, decoded: Decoded) -> tuple[tuple[Any, ...], dict[str, Any]]:
    args = (decoded.values, decoded.records) if spec.pass_record else (decoded.values,)
    return args, ({"keys": decoded.keys} if spec.pass_key else {})


def _is_failures(result: Mapping[Any, Any]) -> bool:
    return all(isinstance(k, Record | int) and not isinstance(k, bool) for k in result)


def _named(failed: Mapping[Any, Any], decoded: Decoded, name: str) -> Failed:
    """The records a result names as failed, keyed by the engine's record objects."""
    mine = {id(r): r for r in decoded.records}
    out: Failed = {}
    for which, exc in failed.items():
        if isinstance(which, int) and not isinstance(which, bool):
            if not 0 <= which < len(decoded.records):
                raise TypeError(
                    f"batch handler {name} named position {which} as failed: it got "
                    f"{len(decoded.records)} values"
                )
            record = decoded.records[which]
        elif isinstance(which, Record) and id(which) in mine:
            record = which
        else:
            raise TypeError(
                f"batch handler {name} named as failed what is not a record of its batch: "
                f"{which!r:.200}"
            )
        out[record] = exc if isinstance(exc, BaseException) else RuntimeError(str(exc))
    return out


def interpret(result: object, decoded: Decoded, name: str) -> tuple[object, Failed]:
    """The outputs and the failed records a batch function's result asks for (module doc, 2)."""
    check_result(result)
    if isinstance(result, BatchResult):
        return list(result.outputs), _named(result.failed, decoded, name)
    if isinstance(result, Mapping):
        if not _is_failures(result):
            raise TypeError(
                f"batch handler {name} returned a mapping that is not {{record: exception}}: "
                "to write a JSON object, return it in a list or as Out(value=...)"
            )
        return None, _named(result, decoded, name)
    return result, {}


def _label(decoded: Decoded) -> str:
    first = decoded.records[0].coordinates
    more = len(decoded.records) - 1
    return f"the batch of {first}" + (f" and {more} more records" if more else "")


def _outputs(spec: HandlerSpec, decoded: Decoded, result: object) -> tuple[list[Outgoing], Failed]:
    wanted, failed = interpret(result, decoded, spec.name)
    return outgoing(wanted, None, spec.target), {**decoded.failed, **failed}


def batch_engine_handler(spec: HandlerSpec, producer: OutputProducer) -> BatchHandler:
    """The engine's batch handler of a sync batch ``spec``."""

    def handle(batch: Sequence[Record]) -> Failed | None:
        decoded = decode_batch(spec, batch)
        if not decoded.records:
            return decoded.failed or None
        args, kwargs = _arguments(spec, decoded)
        records, failed = _outputs(spec, decoded, spec.func(*args, **kwargs))
        producer.send(records, _label(decoded))
        return failed or None

    return handle


def async_batch_engine_handler(spec: HandlerSpec, producer: OutputProducer) -> AsyncBatchHandler:
    """The coroutine batch handler of an ``async def`` batch ``spec``."""

    async def handle(batch: Sequence[Record]) -> Failed | None:
        decoded = decode_batch(spec, batch)
        if not decoded.records:
            return decoded.failed or None
        args, kwargs = _arguments(spec, decoded)
        records, failed = _outputs(spec, decoded, await spec.func(*args, **kwargs))
        await producer.send_async(records, _label(decoded))
        return failed or None

    return handle
