"""A SparkSession set up for lagless: local or standalone, quiet, data sources registered.

- Local masters: Python workers run this interpreter (``PYSPARK_PYTHON`` and
  ``spark.pyspark.python``), so lagless is importable; through a launcher that forks the
  ``lagless-kafka`` source's driver-side process from a warm one
  (:mod:`lagless.spark.connector.prefork`;
  ``LAGLESS_SPARK_PREFORK=0`` runs the interpreter directly).
- Cluster masters (``spark://``): the executors' Python is not forced to the driver's path
  (it rarely exists on the workers). It is what the user sets (``--conf
  spark.pyspark.python=...``, a packed environment through ``spark.archives``, or
  ``PYSPARK_PYTHON``), and it needs the dependencies lagless's executor code imports
  (pyarrow, pandas, confluent-kafka); lagless itself is shipped to the executors as a zip
  of its package (``SparkContext.addPyFile``), so it need not be installed there. The driver
  runs that same Python path for its own Python workers (a relative one from its current
  directory): :func:`check_driver_python`.
- Spark binds to 127.0.0.1 (``SPARK_LOCAL_IP``): the host name may resolve to an address
  Spark should not use.
- Few shuffle partitions, no UI, no console progress bar, UTC session time, Parquet
  timestamps as UTC microseconds, cached data not compressed (the pipeline's micro-batch
  cache lives for one batch). Any setting can be overridden with ``conf``
  (``lagless pipeline run --conf key=value``).
- Spark's own log goes to stderr at WARN (or the level given) through a small log4j2 file.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
import zipfile
from collections.abc import Mapping
from pathlib import Path

from pyspark.sql import SparkSession

from lagless.errors import ConfigError
from lagless.spark.connector import native_fetch, prefork

MASTER_RE = re.compile(
    r"^(local(\[(\*|[1-9][0-9]*)\])?|spark://[^\s:/]+:[0-9]+(,[^\s:/]+:[0-9]+)*)$"
)

LOG4J2 = """\
rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
logger.jetty.name = org.sparkproject.jetty
logger.jetty.level = error
logger.hadoop.name = org.apache.hadoop.util.NativeCodeLoader
logger.hadoop.level = error
logger.aqe.name = org.apache.spark.sql.execution.streaming.runtime.ResolveWriteToStream
logger.aqe.level = error
# "batch is falling behind" (every batch longer than the trigger interval): expected here.
logger.pte.name = org.apache.spark.sql.execution.streaming.runtime.ProcessingTimeExecutor
logger.pte.level = error
# "Failed to cancel job group" when an idle query is stopped (Ctrl-C).
logger.dag.name = org.apache.spark.scheduler.DAGScheduler
logger.dag.level = error
"""

# At the default level, failures are reported once, as one line, by whoever runs the query
# (lagless pipeline run): Spark's own stack traces of the same failure are left out. -v keeps them.
QUIET_LOG4J2 = """\
logger.mbe.name = org.apache.spark.sql.execution.streaming.runtime.MicroBatchExecution
logger.mbe.level = off
logger.executor.name = org.apache.spark.executor.Executor
logger.executor.level = off
logger.tasks.name = org.apache.spark.scheduler.TaskSetManager
logger.tasks.level = off
"""

DEFAULT_CONF: dict[str, str] = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.sql.session.timeZone": "UTC",
    # Parquet timestamps as int64 microseconds, UTC-adjusted: what pyarrow, DuckDB and pandas
    # read as timezone-aware UTC (Spark's default INT96 reads back as naive nanoseconds).
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    # Batches are small and the aggregates query is stateful (AQE would be turned off for it
    # with a warning anyway).
    "spark.sql.adaptive.enabled": "false",
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.sql.streaming.noDataMicroBatches.enabled": "true",
    "spark.python.worker.reuse": "true",
    # The pipeline caches each micro-batch for its outputs and drops it at the batch's end:
    # compressing it costs every column a dictionary/run-length pass per value (a hash look-up
    # per offset, timestamp and id) for memory held a few seconds (the cache spills to disk
    # if short). Spark's default is true; --conf can set it back.
    "spark.sql.inMemoryColumnarStorage.compressed": "false",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
}


def check_master(master: str) -> str:
    """``local``, ``local[N]``, ``local[*]`` or ``spark://HOST:PORT``; ConfigError otherwise."""
    if not MASTER_RE.match(master):
        raise ConfigError(
            f"--master {master!r} is not local, local[N], local[*] or spark://HOST:PORT"
        )
    return master


def is_local(master: str) -> bool:
    return master.startswith("local")


def python_env(master: str, conf: Mapping[str, str]) -> None:
    """The environment Spark's launcher and Python workers need (set before the JVM starts).

    PySpark takes the workers' Python from ``PYSPARK_PYTHON`` when the SparkContext starts
    (a ``spark.pyspark.python`` set on a session builder would be ignored), so a given
    ``spark.pyspark.python`` is put there, as ``spark-submit`` does."""
    if "spark.pyspark.python" in conf:
        os.environ["PYSPARK_PYTHON"] = check_driver_python(conf["spark.pyspark.python"])
    elif is_local(master):
        # this interpreter, its source runner forked from a warm process
        # (lagless.spark.connector.prefork)
        os.environ["PYSPARK_PYTHON"] = prefork.spark_python(sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")


def check_driver_python(python: str) -> str:
    """``spark.pyspark.python`` if the driver can run it too; ConfigError (one line) otherwise.

    The driver starts Python workers of its own with that same path, from its current
    directory: they plan the ``lagless-kafka`` source and sink. A relative path (a packed
    environment's ``./env/bin/python``, unpacked by Spark in each executor's directory)
    must therefore resolve from the directory lagless runs in as well."""
    if os.sep in python and not os.path.isabs(python) and not os.access(python, os.X_OK):
        raise ConfigError(
            f"spark.pyspark.python {python!r} is not an executable from {os.getcwd()}: the "
            "driver runs it too (to plan the lagless-kafka source and sink): unpack the "
            "environment there as well (e.g. mkdir env && tar -xzf env.tar.gz -C env)"
        )
    return python


def parse_conf(items: list[str], flag: str = "--conf") -> dict[str, str]:
    """``["key=value", ...]`` (``--conf``) -> a dict; ConfigError (one line) otherwise."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"{flag} {item!r} is not key=value")
        out[key.strip()] = value
    return out


def lagless_zip() -> Path:
    """The lagless package as a zip for executors (rebuilt when its files change)."""
    import lagless

    package = Path(lagless.__file__).parent
    files = sorted(p for p in package.rglob("*.py") if "__pycache__" not in p.parts)
    stamp = max(p.stat().st_mtime_ns for p in files)
    directory = Path(tempfile.gettempdir()) / "lagless-spark"
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / f"lagless-{stamp}.zip"
    if not target.exists():
        partial = target.with_suffix(f".{os.getpid()}.tmp")
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as archive:
            for path in files:
                archive.write(path, Path("lagless") / path.relative_to(package))
        partial.replace(target)
    return target


def log4j2_file(quiet: bool) -> Path:
    directory = Path(tempfile.gettempdir()) / "lagless-spark"
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"log4j2{'-quiet' if quiet else ''}.properties"
    text = LOG4J2 + (QUIET_LOG4J2 if quiet else "")
    if not path.exists() or path.read_text() != text:
        path.write_text(text)
    return path


def register(spark: SparkSession) -> None:
    """Register the ``lagless-kafka`` data source in ``spark`` (and let batch writes to it
    use Spark's default save mode, as with Spark's own sink:
    :mod:`lagless.spark.connector.save_mode`)."""
    from lagless.spark.connector import save_mode
    from lagless.spark.connector.datasource import LaglessKafkaDataSource

    spark.dataSource.register(LaglessKafkaDataSource)
    save_mode.install()


def build_session(
    master: str = "local[*]",
    app_name: str = "lagless",
    conf: Mapping[str, str] | None = None,
    log_level: str = "WARN",
) -> SparkSession:
    """Start (or reuse) the process's SparkSession, with lagless's data sources registered."""
    python_env(check_master(master), conf or {})
    if native_fetch.switch() and is_local(master):
        native_fetch.say_if_unavailable()
    log_conf = log4j2_file(quiet=log_level.upper() in {"WARN", "ERROR", "OFF"})
    java_opts = f"-Dlog4j2.configurationFile=file:{log_conf}"
    builder = SparkSession.builder.master(master).appName(app_name)
    settings = {
        **DEFAULT_CONF,
        "spark.pyspark.driver.python": sys.executable,
        "spark.driver.extraJavaOptions": java_opts,
        "spark.executor.extraJavaOptions": java_opts,
        "spark.executorEnv.SPARK_LOCAL_IP": "127.0.0.1",
    }
    if is_local(master):
        settings["spark.pyspark.python"] = os.environ["PYSPARK_PYTHON"]
    settings.update(conf or {})
    shipped = None if is_local(master) else str(lagless_zip())
    if shipped is not None:
        # The driver's own Python workers (data source planning) take PYTHONPATH from the JVM's
        # environment; executors get the zip through addPyFile.
        paths = [shipped, *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
        os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    if shipped is not None:
        spark.sparkContext.addPyFile(shipped)
    if log_level.upper() != "WARN":
        # Spark resets the root level of an interactive (PySpark) driver to WARN at start.
        spark.sparkContext.setLogLevel(log_level.upper())
    register(spark)
    return spark
