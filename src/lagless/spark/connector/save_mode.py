"""Spark's default save mode for batch writes to ``lagless-kafka``.

``df.write.format("kafka").save()`` works with Spark's own sink: its default mode
(``ErrorIfExists``) means "append" for Kafka. Spark refuses that mode for every Python data
source (``UNSUPPORTED_DATA_SOURCE_SAVE_MODE``, decided in the JVM before the source is asked;
PySpark 4.3's ``DataSource.writer(schema, overwrite)`` has no say in it), so :func:`install`
wraps PySpark's ``DataFrameWriter.save`` once: a save to ``lagless-kafka`` in ``ErrorIfExists``
runs as ``append``. Other formats and modes are untouched: ``overwrite`` and ``ignore`` stay
refused, as Spark's sink refuses them.

What the save targets is read from the JVM writer, which holds what ``format()`` and
``mode()`` set, in whatever order, whenever (also on a writer made before :func:`install`),
with ``spark.sql.sources.default`` when no format was given; the data source name is compared
case-insensitively, as Spark looks data sources up (``"LAGLESS-KAFKA"`` writes to
lagless-kafka). ``saveAsTable``/``insertInto`` go through the catalog and are not wrapped
(``saveAsTable`` creates the table in ``ErrorIfExists``, which Spark accepts). Spark Connect's
``DataFrameWriter`` is a different class and is not wrapped: on Connect, give
``.mode("append")``.
"""

from __future__ import annotations

import functools
import threading
from typing import Any

from py4j.protocol import Py4JError  # type: ignore[import-untyped]
from pyspark.sql.readwriter import DataFrameWriter

FORMAT = "lagless-kafka"
_MARK = "_lagless_save_mode"
_LOCK = threading.Lock()


def kafka_default_mode(writer: DataFrameWriter) -> bool:
    """True when ``writer`` (its JVM side) targets lagless-kafka in Spark's default mode."""
    jwrite = writer._jwrite
    try:
        source = str(jwrite.source())
        mode = str(jwrite.curmode().name())
    except Py4JError:  # another Spark without these accessors: Spark decides, as without us
        return False
    return source.lower() == FORMAT and mode == "ErrorIfExists"


def install() -> None:
    """Wrap ``DataFrameWriter.save`` (once per process, whichever thread calls first)."""
    with _LOCK:
        if getattr(DataFrameWriter, _MARK, False):
            return
        original_save = DataFrameWriter.save

        @functools.wraps(original_save)
        def save(
            self: DataFrameWriter,
            path: str | None = None,
            format: str | None = None,
            mode: str | None = None,
            partitionBy: Any = None,  # noqa: N803
            **options: Any,
        ) -> None:
            # what PySpark's save applies before saving, applied first so the JVM writer
            # knows the target (and parses the mode, refusing a bad one as Spark does)
            if format is not None:
                self.format(format)
            if mode is not None:
                self.mode(mode)
            if kafka_default_mode(self):
                mode = "append"
            original_save(self, path, format, mode, partitionBy, **options)

        DataFrameWriter.save = save  # type: ignore[method-assign]
        setattr(DataFrameWriter, _MARK, True)
