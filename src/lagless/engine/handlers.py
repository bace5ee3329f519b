"""Handlers: what the engine runs per record, or per batch.

A handler is ``Callable[[Record], object]``; an exception means the record failed (it is
retried, then dead-lettered). :class:`DecodeError` means the record can never succeed: it
goes straight to the dead-letter topic. A batch handler (``batch_size`` set) is
``Callable[[Sequence[Record]], object]``: see :mod:`lagless.engine.workers.batch` for what its
result and its exceptions mean. An ``async def`` handler (per record or per batch) runs on the
engine's event loop (:mod:`lagless.engine.workers.aio`). Built-ins, each per record and per batch:
``sleep`` (the jobs workload: sleeps the record's ``sleep_ms``; a batch sleeps their sum and
names the records it cannot decode as failed) and ``noop``; anything else is
``module:function``, imported from the current directory first, as ``python -m`` does.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from lagless.engine.record import Record
from lagless.errors import ConfigError

Handler = Callable[[Record], object]
BatchHandler = Callable[[Sequence[Record]], object]


class DecodeError(ValueError):
    """The record's bytes cannot be decoded: retrying cannot help."""


def decode_json(record: Record) -> dict[str, Any]:
    """The record's value as a JSON object, or DecodeError."""
    try:
        doc = json.loads(record.value or b"")
    except (ValueError, UnicodeDecodeError) as exc:
        raise DecodeError(f"value is not JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise DecodeError("value is not a JSON object")
    return doc


def noop(record: Record) -> None:
    """Do nothing (measures the engine's own overhead)."""


def sleep_ms(record: Record) -> float:
    """A jobs record's ``sleep_ms``, or DecodeError."""
    ms = decode_json(record).get("sleep_ms")
    if not isinstance(ms, int | float) or isinstance(ms, bool) or ms < 0:
        raise DecodeError(f"sleep_ms is {ms!r}, not a non-negative number")
    return float(ms)


def sleep(record: Record) -> None:
    """The jobs workload: sleep ``sleep_ms`` milliseconds."""
    time.sleep(sleep_ms(record) / 1000.0)


def noop_batch(records: Sequence[Record]) -> None:
    """Do nothing with a batch."""


def sleep_batch(records: Sequence[Record]) -> dict[Record, Exception]:
    """The jobs workload in batches: sleep the records' total ``sleep_ms``; the records that
    cannot be decoded are returned as failed (the others succeed)."""
    total = 0.0
    failed: dict[Record, Exception] = {}
    for record in records:
        try:
            total += sleep_ms(record)
        except DecodeError as exc:
            failed[record] = exc
    time.sleep(total / 1000.0)
    return failed


BUILTINS: dict[str, Handler] = {"noop": noop, "sleep": sleep}
BATCH_BUILTINS: dict[str, BatchHandler] = {"noop": noop_batch, "sleep": sleep_batch}


def load_handler(spec: str, batch: bool = False) -> Any:
    """A built-in name or ``module:function``; ConfigError if it cannot be loaded.

    With ``batch`` a built-in name gives its batch form (a function must take a sequence).
    """
    if spec in BUILTINS:
        return BATCH_BUILTINS[spec] if batch else BUILTINS[spec]
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ConfigError(
            f"handler {spec!r} is not a built-in ({', '.join(BUILTINS)}) nor module:function"
        )
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.insert(0, cwd)  # as `python -m` does: the user's module beside them
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"cannot import handler module {module_name!r}: {exc}") from None
    except Exception as exc:  # the module itself raised: one line, not its traceback
        where = _raised_at(exc)
        raise ConfigError(
            f"handler module {module_name!r} raised at import{where}: {type(exc).__name__}: {exc}"
        ) from None
    func = getattr(module, attr, None)
    if not callable(func):
        raise ConfigError(f"{module_name!r} has no callable {attr!r}")
    return func


def _raised_at(exc: BaseException) -> str:
    """`` (file:line)`` of the innermost frame of the traceback, '' if there is none."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is None:
        return ""
    return f" ({tb.tb_frame.f_code.co_filename}:{tb.tb_lineno})"
