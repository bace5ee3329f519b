"""lagless: Kafka pipelines that keep consumer lag near zero.

``lagless.App`` builds consumer services on the engine (docs/app.md); ``lagless.Record`` is
the record a handler receives, ``lagless.Out`` an output record, ``lagless.BatchResult`` what a
batch handler returns to write outputs and name failed records, ``lagless.DecodeError`` a
record that can never succeed (it goes straight to the DLQ). They load on first use, so
``import lagless.config`` (the CLI, Spark workers) stays light.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lagless.app import App, BatchResult, Out, OutputError
    from lagless.engine.handlers import DecodeError
    from lagless.engine.record import Record
    from lagless.engine.summary import RunSummary

__version__ = "0.1.0"

_EXPORTS = {
    "App": "lagless.app",
    "BatchResult": "lagless.app",
    "Out": "lagless.app",
    "OutputError": "lagless.app",
    "DecodeError": "lagless.engine.handlers",
    "Record": "lagless.engine.record",
    "RunSummary": "lagless.engine.summary",
}

__all__ = [
    "App", "BatchResult", "DecodeError", "Out", "OutputError", "Record", "RunSummary", "__version__"
]  # fmt: skip


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'lagless' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
