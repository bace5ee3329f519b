"""The events pipeline on Spark Structured Streaming: Kafka -> validate -> Parquet + DLQ,
and windowed aggregates.

Two streaming queries read the topic, each with its own checkpoint under ``checkpoint``:

``events``
    parses and validates every record (:mod:`lagless.spark.events`). In ``foreachBatch``:
    valid rows go to ``output/events/event_date=D/batch_id=N/`` (Parquet), invalid ones to the
    DLQ topic through the ``lagless-kafka`` sink, with why and where they came from.
``aggregates``
    per minute and country, the count and amount sum of valid events, emitted once the
    watermark closes the window, to ``output/aggregates/batch_id=N/``.

**Exactly-once Parquet, for every reader.** A batch's offsets are fixed in the checkpoint
before it runs, so a batch re-run after a crash reads the same records and produces the same
rows. Each batch writes only its own ``batch_id=N`` partitions, with dynamic partition
overwrite: a re-run replaces whatever a killed attempt left, instead of adding to it. Spark's
own file sink (``_spark_metadata``) is exactly-once only for readers that go through that log;
plain Parquet readers (pyarrow, DuckDB) would also see the files of a killed attempt. Here
any reader sees each valid row once (once the re-run finished). Spark and pyarrow skip the
``_temporary``/``.spark-staging`` folders a killed attempt leaves.

The DLQ is at-least-once (a re-run batch sends its dead letters again, tagged with the same
``lagless-batch-id``).

Progress: :mod:`lagless.spark.progress` commits processed offsets to ``group``, updates the
metrics and reports each batch.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from py4j.protocol import Py4JJavaError  # type: ignore[import-untyped]
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pyspark import StorageLevel
from pyspark.errors.exceptions.captured import CapturedException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F  # noqa: N812
from pyspark.sql.streaming.query import StreamingQuery

from lagless.errors import ConfigError, LaglessError
from lagless.kafka.admin import create_topic
from lagless.kafka.offsets import OffsetProbe
from lagless.observe.metrics import Metrics
from lagless.spark.datasource import FORMAT
from lagless.spark.events import (
    aggregates,
    dead_letters,
    parse_events,
    valid_events,
)
from lagless.spark.offsets import to_json
from lagless.spark.progress import (
    DLQ,
    OK,
    BatchCounts,
    BatchReport,
    PartitionCount,
    PipelineListener,
    ProgressTracker,
)
from lagless.spark.session import build_session, check_master

log = logging.getLogger(__name__)

KAFKA_PROVIDER = "org.apache.spark.sql.kafka010.KafkaSourceProvider"
DURATION_RE = re.compile(r"^[0-9]+ (millisecond|second|minute|hour|day)s?$")
TRIGGER_RE = re.compile(r"^processing-time=([0-9]+(?:\.[0-9]+)?)\s*(ms|s|m)?$")
POLL_S = 0.25

RawFactory = Callable[[SparkSession], DataFrame]


@dataclass(frozen=True)
class Trigger:
    """``available-now`` (process what is there, then stop) or a processing-time interval."""

    available_now: bool
    interval_s: float = 0.0

    @classmethod
    def parse(cls, text: str) -> Trigger:
        value = text.strip().lower()
        if value in {"available-now", "availablenow"}:
            return cls(available_now=True)
        match = TRIGGER_RE.match(value)
        if not match:
            raise ConfigError(
                f"--trigger {text!r} is not available-now or processing-time=N[ms|s|m]"
            )
        number, unit = float(match.group(1)), match.group(2) or "s"
        seconds = number / 1000 if unit == "ms" else number * 60 if unit == "m" else number
        if seconds <= 0:
            raise ConfigError("--trigger processing-time must be positive")
        return cls(available_now=False, interval_s=seconds)

    def apply(self, writer: Any) -> Any:
        if self.available_now:
            return writer.trigger(availableNow=True)
        return writer.trigger(processingTime=f"{int(self.interval_s * 1000)} milliseconds")


class PipelineConfig(BaseModel):
    """Everything a pipeline run needs, validated once (see :meth:`build`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    topic: str = Field(min_length=1)
    output: Path
    checkpoint: Path
    kafka: dict[str, Any]
    group: str | None = None
    master: str = "local[*]"
    trigger: str = "available-now"
    max_offsets_per_trigger: int | None = Field(default=None, ge=1)
    min_partitions: int | None = Field(default=None, ge=1)
    starting_offsets: Literal["earliest", "latest"] = "earliest"
    fail_on_data_loss: bool = True
    dlq_topic: str | None = None
    source: Literal["python", "jvm"] = "python"
    aggregates: bool = True
    window: str = "1 minute"
    watermark: str = "1 minute"

    @field_validator("trigger")
    @classmethod
    def _trigger(cls, value: str) -> str:
        Trigger.parse(value)
        return value

    @field_validator("window", "watermark")
    @classmethod
    def _duration(cls, value: str) -> str:
        if not DURATION_RE.match(value.strip()):
            raise ValueError(f"{value!r} is not like '1 minute' or '30 seconds'")
        return value.strip()

    @field_validator("master")
    @classmethod
    def _master(cls, value: str) -> str:
        return check_master(value)

    @field_validator("kafka")
    @classmethod
    def _kafka(cls, value: dict[str, Any]) -> dict[str, Any]:
        if not value.get("bootstrap.servers"):
            raise ValueError("kafka settings need bootstrap.servers")
        return value

    @classmethod
    def build(cls, **values: Any) -> PipelineConfig:
        """Validate; ConfigError with one line on bad input."""
        try:
            config = cls(**values)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "pipeline"
            message = str(first.get("ctx", {}).get("error", first["msg"]))
            raise ConfigError(f"invalid {where.replace('_', '-')}: {message}") from None
        if config.dlq_name == config.topic:
            raise ConfigError("--dlq-topic must differ from --topic")
        return config

    @property
    def dlq_name(self) -> str:
        return self.dlq_topic or f"{self.topic}-dlq"

    @property
    def parsed_trigger(self) -> Trigger:
        return Trigger.parse(self.trigger)

    @property
    def events_path(self) -> Path:
        return self.output / "events"

    @property
    def aggregates_path(self) -> Path:
        return self.output / "aggregates"

    def query_name(self, role: str) -> str:
        return f"lagless-{role}-{self.topic}"


@dataclass(frozen=True)
class PipelineSummary:
    """What one run did (counts are of this process's run, not of earlier ones)."""

    batches: int
    input_rows: int
    valid_rows: int
    dlq_rows: int
    seconds: float
    events_path: Path
    aggregates_path: Path | None
    dlq_topic: str
    group: str | None
    committed: dict[str, dict[str, int]] = field(default_factory=dict)

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


def jvm_kafka_options(kafka: Mapping[str, Any]) -> dict[str, str]:
    """librdkafka settings as Java client properties (the common subset)."""
    out = {"kafka.bootstrap.servers": str(kafka["bootstrap.servers"])}
    for key in ("security.protocol", "sasl.mechanism"):
        if key in kafka:
            out[f"kafka.{key}"] = str(kafka[key])
    if "sasl.username" in kafka:
        module = (
            "org.apache.kafka.common.security.scram.ScramLoginModule"
            if str(kafka.get("sasl.mechanism", "")).startswith("SCRAM")
            else "org.apache.kafka.common.security.plain.PlainLoginModule"
        )
        user, password = kafka["sasl.username"], kafka.get("sasl.password", "")
        out["kafka.sasl.jaas.config"] = (
            f'{module} required username="{user}" password="{password}";'
        )
    if "ssl.ca.location" in kafka:
        out["kafka.ssl.truststore.type"] = "PEM"
        out["kafka.ssl.truststore.location"] = str(kafka["ssl.ca.location"])
    return out


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
            options.update(jvm_kafka_options(config.kafka))
            fmt = "kafka"
        else:
            options.update({f"kafka.{k}": str(v) for k, v in config.kafka.items()})
            fmt = FORMAT
        return spark.readStream.format(fmt).options(**options).load()

    return raw


# -- foreachBatch writers ------------------------------------------------------------------


def write_batch_parquet(df: DataFrame, path: Path, partition_by: list[str]) -> None:
    """Write one batch's rows, replacing only the partitions this batch writes."""
    (
        df.write.mode("overwrite")
        .option("partitionOverwriteMode", "dynamic")
        .partitionBy(*partition_by)
        .parquet(str(path))
    )


class EventsWriter:
    """``foreachBatch`` of the events query: counts, valid rows to Parquet, DLQ to Kafka."""

    def __init__(self, config: PipelineConfig, tracker: ProgressTracker) -> None:
        self.config = config
        self.tracker = tracker
        self.sink_options = {f"kafka.{k}": str(v) for k, v in config.kafka.items()}

    def __call__(self, df: DataFrame, batch_id: int) -> None:
        t0 = time.monotonic()
        df.persist(StorageLevel.MEMORY_AND_DISK)
        try:
            counts = self.count(df)
            t1 = time.monotonic()
            if any(c.outcome == OK for c in counts):
                rows = valid_events(df).withColumn("batch_id", F.lit(batch_id))
                write_batch_parquet(rows, self.config.events_path, ["event_date", "batch_id"])
            t2 = time.monotonic()
            if any(c.outcome == DLQ for c in counts):
                (
                    dead_letters(df)
                    .write.format(FORMAT)
                    .mode("append")
                    .options(**self.sink_options)
                    .option("topic", self.config.dlq_name)
                    .option("batchId", str(batch_id))
                    .save()
                )
            t3 = time.monotonic()
        finally:
            df.unpersist()
        log.info(
            "batch %d: read+count %.2f s, parquet %.2f s, dlq %.2f s",
            batch_id,
            t1 - t0,
            t2 - t1,
            t3 - t2,
        )
        self.tracker.batch_written(BatchCounts(batch_id, tuple(counts)))

    @staticmethod
    def count(df: DataFrame) -> list[PartitionCount]:
        outcome = F.when(F.col("dlq_error_class").isNull(), OK).otherwise(DLQ)
        rows = (
            df.groupBy("kafka_topic", "kafka_partition", outcome.alias("outcome"))
            .agg(
                F.count(F.lit(1)).alias("rows"),
                (F.avg(F.unix_micros("kafka_timestamp")) / 1e6).alias("mean_ts"),
            )
            .collect()
        )
        return [
            PartitionCount(r.kafka_topic, r.kafka_partition, r.outcome, r.rows, r.mean_ts)
            for r in rows
        ]


class AggregatesWriter:
    """``foreachBatch`` of the aggregates query: the windows closed in this batch."""

    def __init__(self, config: PipelineConfig) -> None:
        self.path = config.aggregates_path

    def __call__(self, df: DataFrame, batch_id: int) -> None:
        write_batch_parquet(df.withColumn("batch_id", F.lit(batch_id)), self.path, ["batch_id"])


# -- running -------------------------------------------------------------------------------


def prepare_topics(config: PipelineConfig) -> int:
    """Check the input topic exists; create the DLQ topic (same partition count) if needed."""
    with OffsetProbe(config.kafka) as probe:
        partitions = len(probe.partitions(config.topic))
    create_topic(config.kafka, config.dlq_name, partitions, exist_ok=True)
    return partitions


def start_queries(
    spark: SparkSession, config: PipelineConfig, tracker: ProgressTracker, raw: RawFactory
) -> list[StreamingQuery]:
    trigger = config.parsed_trigger
    queries: list[StreamingQuery] = []
    events = parse_events(raw(spark))
    writer = (
        events.writeStream.queryName(config.query_name("events"))
        .option("checkpointLocation", str(config.checkpoint / "events"))
        .foreachBatch(EventsWriter(config, tracker))
    )
    queries.append(trigger.apply(writer).start())
    if config.aggregates:
        windows = aggregates(
            valid_events(parse_events(raw(spark))), config.window, config.watermark
        )
        writer = (
            windows.writeStream.queryName(config.query_name("aggregates"))
            .outputMode("append")
            .option("checkpointLocation", str(config.checkpoint / "aggregates"))
            .foreachBatch(AggregatesWriter(config))
        )
        queries.append(trigger.apply(writer).start())
    return queries


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
    return first[:400]


def wait(queries: list[StreamingQuery], stop: threading.Event | None) -> None:
    """Until every query ended (available-now), or ``stop`` / Ctrl-C; a failed query stops
    the others and raises LaglessError."""
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
        for q in queries:
            if q.isActive:
                q.stop()
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
    raw: RawFactory | None = None,
) -> PipelineSummary:
    """Run the events pipeline until the data available at start is processed
    (``available-now``) or until ``stop`` is set / Ctrl-C (processing-time trigger).

    ``spark``: a session to use (default: one is built for ``config.master`` and stopped at
    the end). ``raw``: another source of Kafka-shaped rows (benchmarks).
    """
    metrics = metrics or Metrics(group=config.group)
    prepare_topics(config)
    own_session = spark is None
    session = spark or build_session(config.master, app_name=f"lagless-pipeline-{config.topic}")
    try:
        if config.source == "jvm" and raw is None:
            require_jvm_kafka(session)
        names = [config.query_name("events")]
        if config.aggregates:
            names.append(config.query_name("aggregates"))
        tracker = ProgressTracker(
            metrics,
            names,
            main_query=names[0],
            kafka=config.kafka,
            group=config.group,
            dlq_topic=config.dlq_name,
            on_batch=on_batch,
        )
        listener = PipelineListener(tracker)
        session.streams.addListener(listener)
        try:
            started = time.monotonic()
            try:
                queries = start_queries(session, config, tracker, raw or kafka_stream(config))
            except (CapturedException, Py4JJavaError) as exc:
                raise LaglessError(f"cannot start the pipeline: {short_error(exc)}") from None
            wait(queries, stop)
            seconds = time.monotonic() - started
            for q in queries:
                if q.lastProgress is not None:
                    tracker.progress(q.lastProgress)
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
        events_path=config.events_path,
        aggregates_path=config.aggregates_path if config.aggregates else None,
        dlq_topic=config.dlq_name,
        group=config.group,
        committed=to_json(tracker.committed()),
    )
