"""The ``foreachBatch`` writer of the events pipeline: one micro-batch, read once from Kafka,
to every output.

Per batch ``N`` the rows are cached, then:

1. counted per partition and outcome (the job that reads Kafka and fills the cache);
2. valid rows to ``OUTPUT/events/event_date=D/batch_id=N/`` (Parquet, dynamic partition
   overwrite: a re-run replaces what a killed attempt of ``N`` left);
3. invalid rows to the DLQ topic (``lagless-kafka`` sink, each with its ``lagless-dlq-id``);
4. the windows closed by this batch to ``OUTPUT/aggregates/batch_id=N/``
   (:mod:`lagless.spark.pipeline.windows`).
"""

from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Mapping
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame
from pyspark.sql import functions as F  # noqa: N812

from lagless.spark.connector.datasource import FORMAT
from lagless.spark.examples.events import dead_letters, valid_events
from lagless.spark.pipeline.progress import DLQ, OK, BatchCounts, PartitionCount, ProgressTracker
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
        PartitionCount(r.kafka_topic, r.kafka_partition, r.outcome, r.rows, r.mean_ts) for r in rows
    ]


class EventsWriter:
    """``foreachBatch`` of the pipeline's query: counts, Parquet, DLQ, aggregates."""

    def __init__(
        self,
        events_path: str,
        dlq_topic: str,
        kafka: Mapping[str, Any],
        tracker: ProgressTracker,
        windows: WindowAggregator | None = None,
        aggregates_path: str | None = None,
    ) -> None:
        self.events_path = events_path
        self.dlq_topic = dlq_topic
        self.sink_options = {f"kafka.{k}": str(v) for k, v in kafka.items()}
        self.tracker = tracker
        self.windows = windows
        self.aggregates_path = aggregates_path

    def __call__(self, df: DataFrame, batch_id: int) -> None:
        marks = [time.monotonic()]
        # Deserialized (as DataFrame.cache()): PySpark's MEMORY_AND_DISK is the JVM's
        # serialized level, so every job over the batch would Java-deserialize its blocks.
        df.persist(StorageLevel.MEMORY_AND_DISK_DESER)
        try:
            counts = count_outcomes(df)
            marks.append(time.monotonic())
            valid = valid_events(df)
            if any(c.outcome == OK for c in counts):
                rows = valid.withColumn("batch_id", F.lit(batch_id))
                write_batch_parquet(rows, self.events_path, ["event_date", "batch_id"])
            marks.append(time.monotonic())
            if any(c.outcome == DLQ for c in counts):
                self.write_dlq(df, batch_id)
            marks.append(time.monotonic())
            path, windows = self.aggregates_path, self.windows
            if windows is not None and path is not None and any(c.outcome == OK for c in counts):
                windows.run(valid, batch_id, lambda w: write_windows(w, path, batch_id))
            marks.append(time.monotonic())
        finally:
            df.unpersist()
        steps = [round(b - a, 2) for a, b in itertools.pairwise(marks)]
        log.info("batch %d: read+count, parquet, dlq, aggregates: %s s", batch_id, steps)
        self.tracker.batch_written(BatchCounts(batch_id, tuple(counts)))

    def write_dlq(self, df: DataFrame, batch_id: int) -> None:
        (
            dead_letters(df)
            .write.format(FORMAT)
            .mode("append")
            .options(**self.sink_options)
            .option("topic", self.dlq_topic)
            .option("batchId", str(batch_id))
            .save()
        )


def write_windows(windows: DataFrame, path: str, batch_id: int) -> None:
    write_batch_parquet(windows.withColumn("batch_id", F.lit(batch_id)), path, ["batch_id"])
