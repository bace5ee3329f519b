"""Handlers: what the engine runs per record.

A handler is ``Callable[[Record], object]``; an exception means the record failed (it is
retried, then dead-lettered). :class:`DecodeError` means the record can never succeed: it
goes straight to the dead-letter topic. An ``async def`` handler runs on the engine's event
loop (:mod:`lagless.engine.aio`). Built-ins: ``sleep`` (the jobs workload: sleeps the
record's ``sleep_ms``) and ``noop``; anything else is ``module:function``, imported from the
current directory first, as ``python -m`` does.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import time
from collections.abc import Callable
from typing import Any

from lagless.engine.record import Record
from lagless.errors import ConfigError

Handler = Callable[[Record], object]


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


def sleep(record: Record) -> None:
    """The jobs workload: sleep ``sleep_ms`` milliseconds."""
    doc = decode_json(record)
    ms = doc.get("sleep_ms")
    if not isinstance(ms, int | float) or isinstance(ms, bool) or ms < 0:
        raise DecodeError(f"sleep_ms is {ms!r}, not a non-negative number")
    time.sleep(ms / 1000.0)


BUILTINS: dict[str, Handler] = {"noop": noop, "sleep": sleep}


def load_handler(spec: str) -> Handler:
    """A built-in name or ``module:function``; ConfigError if it cannot be loaded."""
    if spec in BUILTINS:
        return BUILTINS[spec]
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
    handler: Handler = func
    return handler


def _raised_at(exc: BaseException) -> str:
    """`` (file:line)`` of the innermost frame of the traceback, '' if there is none."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is None:
        return ""
    return f" ({tb.tb_frame.f_code.co_filename}:{tb.tb_lineno})"
