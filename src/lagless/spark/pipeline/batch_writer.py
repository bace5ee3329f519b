"""The pipeline's ``foreachBatch``: one micro-batch, read once from Kafka, to every output.

Per batch ``N`` the parsed rows are cached, then:

1. counted per partition and outcome (the job that reads Kafka and fills the cache);
2. the valid rows, through the user's transformation, to
   ``OUTPUT/TABLE/[PARTITION-BY=.../]batch_id=N/`` (Parquet, dynamic partition overwrite: a
   re-run replaces what a killed attempt of ``N`` left), and to the output topic if any
   (``lagless-kafka`` sink, at-least-once, each record with its ``lagless-batch-id``);
3. rejected rows to the DLQ topic (each with its ``lagless-dlq-id``);
4. the windows closed by this batch to ``OUTPUT/aggregates/batch_id=N/``
   (:mod:`lagless.spark.pipeline.windows`).
"""

from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from py4j.protocol import Py4JJavaError  # type: ignore[import-untyped]
from pyspark import StorageLevel
from pyspark.errors.exceptions.captured import CapturedException
from pyspark.sql import DataFrame
from pyspark.sql import functions as F  # noqa: N812

from lagless.errors import LaglessError
from lagless.spark.connector.datasource import FORMAT
from lagless.spark.pipeline.dlq import ERROR_CLASS, dead_letters, valid_rows
from lagless.spark.pipeline.progress import DLQ, OK, BatchCounts, PartitionCount, ProgressTracker
from lagless.spark.pipeline.transform import Transformation, one_line
from lagless.spark.pipeline.windows import WindowAggregator

log = logging.getLogger(__name__)


def write_batch_parquet(df: DataFrame, path: str, partition_by: list[str]) -> None:
    """Write one batch's rows, replacing only the partitions this batch writes."""
    (
        df.write.mode("overwrite")
        .option("partitionOverwriteMode", "dynamic")
        .partitionBy(*partition_by)
        .parquet(path)
    )


def count_outcomes(df: DataFrame) -> list[PartitionCount]:
    """Rows per source partition and outcome (ok / dlq), with their mean Kafka timestamp."""
    outcome = F.when(F.col(ERROR_CLASS).isNull(), OK).otherwise(DLQ)
    rows = (
        df.groupBy("kafka_topic", "kafka_partition", outcome.alias("outcome"))
        .agg(
            F.count(F.lit(1)).alias("rows"),
            (F.avg(F.unix_micros("kafka_timestamp")) / 1e6).alias("mean_ts"),
        )
        .collect()
    )
    return [
        PartitionCount(r.kafka_topic, r.kafka_partition, r.outcome, r.rows, r.mean_ts) for r in rows
    ]


def as_records(rows: DataFrame) -> DataFrame:
    """Output rows as Kafka records: the row as a JSON object, keyed by ``kafka_key``."""
    columns = [c for c in rows.columns if c != "kafka_key"]
    key = F.col("kafka_key").cast("binary") if "kafka_key" in rows.columns else F.lit(None)
    return rows.select(
        key.cast("binary").alias("key"),
        F.to_json(F.struct(*columns)).cast("binary").alias("value"),
    )


@dataclass(frozen=True)
class Outputs:
    """Where a batch goes."""

    table_path: str
    partition_by: tuple[str, ...]
    dlq_topic: str
    kafka: Mapping[str, Any]
    output_topic: str | None = None
    aggregates_path: str | None = None

    def sink(self, df: DataFrame, topic: str, batch_id: int) -> None:
        (
            df.write.format(FORMAT)
            .mode("append")
            .options(**{f"kafka.{k}": str(v) for k, v in self.kafka.items()})
            .option("topic", topic)
            .option("batchId", str(batch_id))
            .save()
        )


class PipelineWriter:
    """``foreachBatch`` of the pipeline's query: counts, Parquet (+ topic), DLQ, aggregates."""

    def __init__(
        self,
        outputs: Outputs,
        tracker: ProgressTracker,
        transformation: Transformation | None = None,
        windows: WindowAggregator | None = None,
    ) -> None:
        self.outputs = outputs
        self.tracker = tracker
        self.transformation = transformation
        self.windows = windows

    def __call__(self, df: DataFrame, batch_id: int) -> None:
        marks = [time.monotonic()]
        out = self.outputs
        # Deserialized (as DataFrame.cache()): PySpark's MEMORY_AND_DISK is the JVM's
        # serialized level, so every job over the batch would Java-deserialize its blocks.
        df.persist(StorageLevel.MEMORY_AND_DISK_DESER)
        try:
            counts = count_outcomes(df)
            marks.append(time.monotonic())
            valid = any(c.outcome == OK for c in counts)
            rows = self.transform(valid_rows(df)) if valid else None
            if rows is not None:
                self.write_rows(rows, batch_id)
            marks.append(time.monotonic())
            if any(c.outcome == DLQ for c in counts):
                out.sink(dead_letters(df), out.dlq_topic, batch_id)
            marks.append(time.monotonic())
            path, windows = out.aggregates_path, self.windows
            if windows is not None and path is not None and rows is not None:
                windows.run(rows, batch_id, lambda w: write_windows(w, path, batch_id))
            marks.append(time.monotonic())
        finally:
            df.unpersist()
        steps = [round(b - a, 2) for a, b in itertools.pairwise(marks)]
        log.info("batch %d: read+count, output, dlq, aggregates: %s s", batch_id, steps)
        self.tracker.batch_written(BatchCounts(batch_id, tuple(counts)))

    def transform(self, valid: DataFrame) -> DataFrame:
        return valid if self.transformation is None else self.transformation(valid)

    def write_rows(self, rows: DataFrame, batch_id: int) -> None:
        out = self.outputs
        try:
            tagged = rows.withColumn("batch_id", F.lit(batch_id))
            write_batch_parquet(tagged, out.table_path, [*out.partition_by, "batch_id"])
            if out.output_topic is not None:
                out.sink(as_records(rows), out.output_topic, batch_id)
        except (CapturedException, Py4JJavaError) as exc:
            if self.transformation is None:
                raise
            raise LaglessError(
                f"transformation {self.transformation.name} failed in batch {batch_id}: "
                f"{one_line(exc)}"
            ) from None


def write_windows(windows: DataFrame, path: str, batch_id: int) -> None:
    write_batch_parquet(windows.withColumn("batch_id", F.lit(batch_id)), path, ["batch_id"])
