"""Spark's default save mode for batch writes to ``lagless-kafka``.

``df.write.format("kafka").save()`` works with Spark's own sink: its default mode
(``ErrorIfExists``) means "append" for Kafka. Spark refuses that mode for every Python data
source (``UNSUPPORTED_DATA_SOURCE_SAVE_MODE``, decided in the JVM before the source is asked),
so :func:`install` wraps PySpark's ``DataFrameWriter`` once: a write to ``lagless-kafka`` whose
mode is unset or ``error``/``errorifexists``/``default`` runs as ``append``. Other formats are
untouched. ``overwrite`` and ``ignore`` stay refused, as Spark's sink refuses them.
"""

from __future__ import annotations

import functools
from typing import Any

from pyspark.sql.readwriter import DataFrameWriter

FORMAT = "lagless-kafka"
DEFAULT_MODES = {"error", "errorifexists", "default"}
_MARK = "_lagless_save_mode"


def _kafka_mode(writer: Any, format: str | None, mode: str | None) -> bool:
    """True when this write targets lagless-kafka in Spark's default mode."""
    target = format or getattr(writer, "_lagless_format", None)
    chosen = mode if mode is not None else getattr(writer, "_lagless_mode", None)
    return target == FORMAT and (chosen is None or chosen.lower() in DEFAULT_MODES)


def install() -> None:
    """Wrap ``DataFrameWriter.format``, ``mode`` and ``save`` (once per process)."""
    if getattr(DataFrameWriter, _MARK, False):
        return
    original_format = DataFrameWriter.format
    original_mode = DataFrameWriter.mode
    original_save = DataFrameWriter.save

    @functools.wraps(original_format)
    def format(self: Any, source: str) -> Any:
        self._lagless_format = source
        return original_format(self, source)

    @functools.wraps(original_mode)
    def mode(self: Any, saveMode: str | None) -> Any:  # noqa: N803
        if saveMode is not None:
            self._lagless_mode = saveMode
        return original_mode(self, saveMode)

    @functools.wraps(original_save)
    def save(
        self: Any,
        path: str | None = None,
        format: str | None = None,
        mode: str | None = None,
        partitionBy: Any = None,  # noqa: N803
        **options: Any,
    ) -> None:
        if _kafka_mode(self, format, mode):
            mode = "append"
        original_save(self, path, format, mode, partitionBy, **options)

    DataFrameWriter.format = format  # type: ignore[method-assign]
    DataFrameWriter.mode = mode  # type: ignore[method-assign]
    DataFrameWriter.save = save  # type: ignore[method-assign]
    setattr(DataFrameWriter, _MARK, True)
