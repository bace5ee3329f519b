"""The pipeline on Spark Structured Streaming: Kafka -> parse and validate -> the user's
transformation -> Parquet (+ a Kafka topic) and a DLQ, and windowed aggregates, from **one**
streaming query (Kafka is read once per micro-batch).

Its ``foreachBatch`` (:mod:`lagless.spark.pipeline.batch_writer`) writes the valid rows,
transformed, to ``output/TABLE/[PARTITION-BY=.../]batch_id=N/`` (Parquet), rejected ones to
the DLQ topic through the ``lagless-kafka`` sink, with why and where they came from, and the
windows the watermark closes (:mod:`lagless.spark.pipeline.windows`) to
``output/aggregates/batch_id=N/``. ``output`` and ``checkpoint`` are local paths or URIs
(``file://``, ``hdfs://``, ``s3a://``).

**Exactly-once Parquet, for every reader.** A batch's offsets are fixed in the checkpoint
before it runs, so a batch re-run after a crash reads the same records and produces the same
rows. Each batch writes only its own ``batch_id=N`` partitions, with dynamic partition
overwrite: a re-run replaces whatever a killed attempt left, instead of adding to it. The
staging folders of killed attempts (``.spark-staging-*``, ``_temporary``), which readers that
list files themselves (DuckDB, a recursive glob) would read, are deleted before the query
starts. Spark's own file sink (``_spark_metadata``) would be exactly-once only for readers that
go through that log.

The DLQ and the output topic are at-least-once: a re-run batch sends its records again, dead
letters with the same ``lagless-dlq-id`` (source topic/partition/offset), output records with
the same ``lagless-batch-id``.

Progress: :mod:`lagless.spark.pipeline.progress` commits processed offsets to ``group``,
updates the metrics and reports each batch.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from py4j.protocol import Py4JJavaError  # type: ignore[import-untyped]
from pyspark.errors.exceptions.captured import CapturedException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming.query import StreamingQuery

from lagless.errors import ConfigError, LaglessError
from lagless.kafka.admin import create_topic
from lagless.kafka.offsets import OffsetProbe
from lagless.observe.metrics import Metrics
from lagless.spark.connector.datasource import FORMAT
from lagless.spark.connector.kafka_conf import java_options
from lagless.spark.connector.offsets import to_json
from lagless.spark.connector.schema import kafka_schema
from lagless.spark.connector.session import build_session
from lagless.spark.pipeline.avro import parse_avro
from lagless.spark.pipeline.batch_writer import Outputs, PipelineWriter
from lagless.spark.pipeline.config import PipelineConfig, Trigger
from lagless.spark.pipeline.dlq import valid_rows
from lagless.spark.pipeline.parse import Parsed, parse, parse_json, parse_raw
from lagless.spark.pipeline.progress import BatchReport, PipelineListener, ProgressTracker
from lagless.spark.pipeline.protobuf import parse_protobuf
from lagless.spark.pipeline.schemas import resolve_schema
from lagless.spark.pipeline.stopping import POLL_S, StopAware, stop_queries
from lagless.spark.pipeline.storage import (
    Storage,
    check_writable,
    child,
    remove_attempt_leftovers,
)
from lagless.spark.pipeline.windows import WindowAggregator

__all__ = ["PipelineConfig", "Trigger"]

log = logging.getLogger(__name__)

KAFKA_PROVIDER = "org.apache.spark.sql.kafka010.KafkaSourceProvider"
PYTHON_ERROR_RE = re.compile(r"^((?:\w+\.)*\w+(?:Error|Exception): .+)$", re.MULTILINE)

RawFactory = Callable[[SparkSession], DataFrame]


@dataclass(frozen=True)
class PipelineSummary:
    """What one run did (counts are of this process's run, not of earlier ones)."""

    batches: int
    input_rows: int
    valid_rows: int
    dlq_rows: int
    seconds: float
    table_path: str
    aggregates_path: str | None
    dlq_topic: str
    group: str | None
    committed: dict[str, dict[str, int]] = field(default_factory=dict)
    source_ms: tuple[int, ...] = ()  # progress.source_overhead_ms of each micro-batch
    trigger_ms: tuple[int, ...] = ()  # progress.trigger_ms of each micro-batch

    @property
    def records_per_s(self) -> float:
        return self.input_rows / self.seconds if self.seconds > 0 else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "batches": self.batches,
            "input_rows": self.input_rows,
            "valid_rows": self.valid_rows,
            "dlq_rows": self.dlq_rows,
            "seconds": round(self.seconds, 3),
            "records_per_s": round(self.records_per_s, 1),
        }


# -- sources -------------------------------------------------------------------------------


def require_jvm_kafka(spark: SparkSession) -> None:
    """LaglessError unless Spark's own Kafka connector is on the JVM classpath."""
    jvm: Any = spark.sparkContext._jvm
    try:
        loader = jvm.org.apache.spark.util.Utils.getContextOrSparkClassLoader()
        jvm.java.lang.Class.forName(KAFKA_PROVIDER, False, loader)
    except Exception:
        raise LaglessError(
            f"--source jvm needs Spark's Kafka connector (spark-sql-kafka-0-10_2.13:"
            f"{spark.version}) on the classpath; add it with --jars/--packages, "
            f"or use --source python"
        ) from None


def kafka_stream(config: PipelineConfig) -> RawFactory:
    """A factory of the raw Kafka stream (one source instance per query)."""

    def raw(spark: SparkSession) -> DataFrame:
        options: dict[str, str] = {
            "subscribe": config.topic,
            "startingOffsets": config.starting_offsets,
            "failOnDataLoss": str(config.fail_on_data_loss).lower(),
            "includeHeaders": "true",
        }
        if config.max_offsets_per_trigger is not None:
            options["maxOffsetsPerTrigger"] = str(config.max_offsets_per_trigger)
        if config.min_partitions is not None:
            options["minPartitions"] = str(config.min_partitions)
        if config.source == "jvm":
            options.update(java_options(config.kafka))
            fmt = "kafka"
        else:
            options.update({f"kafka.{k}": str(v) for k, v in config.kafka.items()})
            fmt = FORMAT
        options.update(config.source_options)
        return spark.readStream.format(fmt).options(**options).load()

    return raw


# -- running -------------------------------------------------------------------------------


def prepare_topics(config: PipelineConfig) -> int:
    """Check the input topics exist; create the DLQ topic (and the output topic) with the
    first input topic's partition count if needed."""
    with OffsetProbe(config.kafka) as probe:
        counts = [len(probe.partitions(topic)) for topic in config.topics]
    for topic in (config.dlq_name, config.output_topic):
        if topic is not None:
            create_topic(config.kafka, topic, counts[0], exist_ok=True)
    return counts[0]


def value_parser(config: PipelineConfig, spark: SparkSession) -> Callable[[DataFrame], Parsed]:
    """How values are parsed (the schema resolved: DDL needs the session, Avro and Protobuf
    the registry)."""
    if config.value == "avro":
        _, avro = parse_avro(config.registry, config.subject_name)
        return avro
    if config.value == "protobuf":
        _, protobuf = parse_protobuf(config.registry, config.subject_name, config.message)
        return protobuf
    if config.value == "raw":
        return parse_raw
    return parse_json(resolve_schema(config.value_schema, spark))


def parsed_stream(config: PipelineConfig, spark: SparkSession, raw: DataFrame) -> DataFrame:
    """The raw rows parsed and checked; the transformation, partition columns and aggregates
    are tried on an empty frame first (ConfigError with one line when they do not fit)."""
    values = value_parser(config, spark)
    empty = spark.createDataFrame([], kafka_schema(include_headers=True))
    rows = valid_rows(parse(empty, values, config.key, config.checks))
    transformation = config.transformation
    columns = rows.columns if transformation is None else transformation.check(rows)
    missing = [c for c in config.partition_by if c not in columns]
    if missing:
        raise ConfigError(
            f"--partition-by {', '.join(missing)}: not a column of the output "
            f"({', '.join(columns)})"
        )
    if config.windows is not None:
        config.windows.check(columns)
    return parse(raw, values, config.key, config.checks)


def start_query(
    spark: SparkSession,
    config: PipelineConfig,
    tracker: ProgressTracker,
    raw: RawFactory,
    stopping: threading.Event,
) -> StreamingQuery:
    """The pipeline's one streaming query: Kafka is read once per micro-batch, and every
    output (Parquet, output topic, DLQ, aggregates) is written from that batch."""
    storage = Storage(spark)
    check_writable(storage, config.output, "output")
    check_writable(storage, config.checkpoint, "checkpoint")
    for path in (config.table_path, config.aggregates_path):
        remove_attempt_leftovers(storage, path)
    windows = (
        WindowAggregator(storage, config.aggregates_state, config.windows)
        if config.windows is not None
        else None
    )
    outputs = Outputs(
        config.table_path,
        config.partition_by,
        config.dlq_name,
        config.kafka,
        config.output_topic,
        config.aggregates_path if windows is not None else None,
    )
    writer = PipelineWriter(outputs, tracker, config.transformation, windows)
    stream = (
        parsed_stream(config, spark, raw(spark))
        .writeStream.queryName(config.query_name(config.table))
        .option("checkpointLocation", child(config.checkpoint, config.table))
        .foreachBatch(StopAware(writer, stopping))
    )
    query: StreamingQuery = config.parsed_trigger.apply(stream).start()
    return query


def short_error(exc: BaseException) -> str:
    """One line from a (possibly long, JVM-wrapped) streaming query failure."""
    text = str(exc)
    found = re.findall(
        r"(?:lagless\.[\w.]+\.)?((?:DataLoss|Cluster|Config|Lagless|Record)Error): ([^\n]+)", text
    )
    if found:
        message: str = found[-1][1]
        return message.strip()
    first = next((line.strip() for line in text.splitlines() if line.strip()), repr(exc))
    python = PYTHON_ERROR_RE.findall(text)
    if python and "Traceback" in first:
        first = f"{first.split('Traceback')[0].strip()} {python[-1].strip()}"
    return first[:400]


def wait(
    queries: list[StreamingQuery],
    stop: threading.Event | None,
    stop_now: threading.Event | None,
    stopping: threading.Event,
) -> None:
    """Until every query ended (available-now), or ``stop`` / Ctrl-C (then each query stops
    after its batch in progress, or at once on ``stop_now``:
    :func:`~lagless.spark.pipeline.stopping.stop_queries`); a failed query stops the others and
    raises
    LaglessError."""
    try:
        while any(q.isActive for q in queries):
            for q in queries:
                failure = None if q.isActive else q.exception()
                if failure is not None:
                    raise LaglessError(f"query {q.name} failed: {short_error(failure)}")
            if stop is not None and stop.is_set():
                break
            time.sleep(POLL_S)
    except KeyboardInterrupt:
        log.info("interrupted: stopping the queries")
    finally:
        stop_queries(queries, stopping, stop_now)
    for q in queries:
        failure = q.exception()
        if failure is not None:
            raise LaglessError(f"query {q.name} failed: {short_error(failure)}")


def run_pipeline(
    config: PipelineConfig,
    *,
    spark: SparkSession | None = None,
    metrics: Metrics | None = None,
    on_batch: Callable[[BatchReport], None] | None = None,
    stop: threading.Event | None = None,
    stop_now: threading.Event | None = None,
    raw: RawFactory | None = None,
) -> PipelineSummary:
    """Run the pipeline until the data available at start is processed
    (``available-now``) or until ``stop`` is set / Ctrl-C (processing-time trigger; either
    lets the batch in progress finish; ``stop_now`` set meanwhile, or a second Ctrl-C,
    interrupts it: it runs again at the next start).

    ``spark``: a session to use (default: one is built for ``config.master`` and stopped at
    the end). ``raw``: another source of Kafka-shaped rows (benchmarks).
    """
    metrics = metrics or Metrics(group=config.group)
    prepare_topics(config)
    own_session = spark is None
    session = spark or build_session(
        config.master, app_name=f"lagless-pipeline-{config.topic}", conf=config.spark_conf
    )
    try:
        if config.source == "jvm" and raw is None:
            require_jvm_kafka(session)
        name = config.query_name(config.table)
        tracker = ProgressTracker(
            metrics,
            [name],
            main_query=name,
            kafka=config.kafka,
            group=config.group,
            dlq_topic=config.dlq_name,
            on_batch=on_batch,
        )
        listener = PipelineListener(tracker)
        stopping = threading.Event()
        session.streams.addListener(listener)
        try:
            started = time.monotonic()
            try:
                source = raw or kafka_stream(config)
                queries = [start_query(session, config, tracker, source, stopping)]
            except (CapturedException, Py4JJavaError) as exc:
                raise LaglessError(f"cannot start the pipeline: {short_error(exc)}") from None
            wait(queries, stop, stop_now, stopping)
            seconds = time.monotonic() - started
            for q in queries:  # the listener bus may not have delivered every event yet
                for progress in q.recentProgress:
                    tracker.progress(progress)  # idempotent: each batch is reported once
        finally:
            session.streams.removeListener(listener)
    finally:
        if own_session:
            session.stop()
    totals = tracker.totals()
    return PipelineSummary(
        batches=totals.batches,
        input_rows=totals.input_rows,
        valid_rows=totals.valid_rows,
        dlq_rows=totals.dlq_rows,
        seconds=seconds,
        table_path=config.table_path,
        aggregates_path=config.aggregates_path if config.windows is not None else None,
        dlq_topic=config.dlq_name,
        group=config.group,
        committed=to_json(tracker.committed()),
        source_ms=tuple(tracker.source_ms()),
        trigger_ms=tuple(tracker.trigger_ms()),
    )
