"""Output and checkpoint locations as Spark sees them: local paths or URIs (``file://``,
``hdfs://``, ``s3a://``, ...), handled through Hadoop's ``FileSystem`` of the session, so what
works for Spark's writers works here too.

- :func:`location` checks and normalises a location given by a user (a ``pathlib.Path`` would
  turn ``s3a://bucket/lake`` into ``s3a:/bucket/lake``).
- :func:`child` joins a name to a location.
- :class:`Storage` lists, deletes and probes locations on the driver.
- :func:`remove_attempt_leftovers` deletes what killed write attempts left in an output folder
  (``.spark-staging-*``, ``_temporary``): Spark and pyarrow skip them, but a reader that lists
  files itself (DuckDB's ``read_parquet('out/**/*.parquet')``, a recursive glob) reads them.
"""

from __future__ import annotations

import logging
import re
import uuid
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from lagless.errors import ConfigError, LaglessError

log = logging.getLogger(__name__)

URI_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
LEFTOVER_GLOBS = (".spark-staging-*", "_temporary")


def location(value: str | Path) -> str:
    """A location as Spark takes it: a URI kept as written, a local path as a string."""
    text = str(value).strip()
    if not text:
        raise ConfigError("a location must not be empty")
    if URI_RE.match(text):
        scheme, _, rest = text.partition("://")
        if not rest.strip("/") and scheme.lower() != "file":
            raise ConfigError(f"{text!r} names no bucket, host or path")
        return text.rstrip("/") if rest.strip("/") else text
    if isinstance(value, Path):
        return str(value)
    return str(Path(text))


def child(base: str, name: str) -> str:
    """``base/name`` for a path or a URI."""
    return f"{base.rstrip('/')}/{name}"


class Storage:
    """Hadoop ``FileSystem`` operations on the driver, for any scheme Spark is set up for."""

    def __init__(self, spark: SparkSession) -> None:
        self._jvm: Any = spark.sparkContext._jvm
        self._conf: Any = spark.sparkContext._jsc.hadoopConfiguration()

    def _fs(self, where: str) -> tuple[Any, Any]:
        path = self._jvm.org.apache.hadoop.fs.Path(where)
        return path.getFileSystem(self._conf), path

    def exists(self, where: str) -> bool:
        fs, path = self._fs(where)
        return bool(fs.exists(path))

    def glob(self, pattern: str) -> list[str]:
        fs, path = self._fs(pattern)
        found = fs.globStatus(path)
        return [] if found is None else sorted(str(s.getPath().toString()) for s in found)

    def children(self, where: str) -> list[str]:
        """Names in a folder (none if it does not exist)."""
        fs, path = self._fs(where)
        if not fs.exists(path):
            return []
        return sorted(str(s.getPath().getName()) for s in fs.listStatus(path))

    def delete(self, where: str) -> bool:
        fs, path = self._fs(where)
        return bool(fs.delete(path, True))

    def write_text(self, where: str, text: str) -> None:
        """Create (or replace) a small file."""
        fs, path = self._fs(where)
        stream = fs.create(path, True)
        try:
            stream.write(bytearray(text.encode()))
        finally:
            stream.close()

    def read_text(self, where: str) -> str:
        fs, path = self._fs(where)
        stream = fs.open(path)
        try:
            reader = self._jvm.java.io.BufferedReader(self._jvm.java.io.InputStreamReader(stream))
            lines = []
            while (line := reader.readLine()) is not None:
                lines.append(str(line))
            return "\n".join(lines)
        finally:
            stream.close()


def java_message(exc: BaseException) -> str:
    """The JVM exception's own message (``Py4JJavaError`` prints a whole Java trace)."""
    java = getattr(exc, "java_exception", None)
    if java is not None:
        text = str(java.toString())
        return text.split("\n", 1)[0]
    return str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)


def check_writable(storage: Storage, where: str, what: str) -> None:
    """LaglessError (one line, naming the cause) unless a folder can be created at ``where``
    and a file written and deleted in it."""
    probe = child(where, f"_lagless_write_check_{uuid.uuid4().hex[:8]}")
    try:
        storage.write_text(probe, "")
        storage.delete(probe)
    except Exception as exc:  # Py4JJavaError from any Hadoop FileSystem
        raise LaglessError(f"{what} {where} is not writable: {java_message(exc)}") from None


def remove_attempt_leftovers(storage: Storage, output: str) -> list[str]:
    """Delete the staging folders killed write attempts left under ``output``; their paths.

    Only safe while nothing writes to ``output`` (before the pipeline's queries start).
    """
    removed: list[str] = []
    for pattern in LEFTOVER_GLOBS:
        for found in storage.glob(child(output, pattern)):
            if storage.delete(found):
                removed.append(found)
    if removed:
        log.warning("removed %d folders left by killed write attempts: %s", len(removed), removed)
    return removed
