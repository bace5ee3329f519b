"""The lagless-kafka source and sink in a real local SparkSession against the real broker."""

from __future__ import annotations

import json
import math
import time
import uuid
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming.datasource import ReadAllAvailable

from lagless.errors import LaglessError
from lagless.ids import ID_HEADER
from lagless.kafka.offsets import OffsetProbe, PartitionRange
from lagless.kafka.reader import read_all
from lagless.kafka.records import header
from lagless.spark.connector.fetch import read_range
from lagless.spark.connector.offsets import data_loss_handler
from lagless.spark.connector.options import SourceOptions
from lagless.spark.connector.schema import arrow_schema, kafka_schema
from lagless.spark.connector.sink import BATCH_ID_HEADER
from lagless.spark.connector.source import KafkaStreamReader
from lagless.spark.pipeline import require_jvm_kafka
from tests.conftest import Cluster
from tests.integration.spark_helpers import EDGE_HEADERS, produce_events, spark

pytestmark = [pytest.mark.integration, pytest.mark.spark]
__all__ = ["spark"]


def with_options(reader: Any, cluster: Cluster, topic: str, options: dict[str, Any]) -> DataFrame:
    """``reader`` (``spark.read`` or ``spark.readStream``) of lagless-kafka on ``topic``."""
    reader = (
        reader.format("lagless-kafka")
        .option("kafka.bootstrap.servers", cluster.bootstrap)
        .option("subscribe", topic)
    )
    for key, value in options.items():
        reader = reader.option(key, str(value))
    result: DataFrame = reader.load()
    return result


def source(spark: SparkSession, cluster: Cluster, topic: str, **options: Any) -> DataFrame:
    return with_options(spark.readStream, cluster, topic, options)


def run_available_now(df: DataFrame, checkpoint: Path) -> list[list[tuple[int, int, str]]]:
    """Run to the end; each batch's (partition, offset, id) rows."""
    batches: dict[int, list[tuple[int, int, str]]] = {}

    def collect(batch: DataFrame, batch_id: int) -> None:
        rows = batch.selectExpr(
            "partition",
            "offset",
            f"cast(filter(headers, h -> h.key = '{ID_HEADER}')[0].value as string) as id",
        ).collect()
        batches[batch_id] = [(r.partition, r.offset, r.id) for r in rows]

    query = (
        df.writeStream.foreachBatch(collect)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(240)
    assert not query.isActive and query.exception() is None
    return [batches[k] for k in sorted(batches)]


def test_read_range_stops_at_a_gap_at_the_end(cluster: Cluster, make_topic: Callable[..., str]):
    """A transaction's commit marker takes the last offset; no consumer ever sees it."""
    topic = make_topic(partitions=1)
    producer = Producer({**cluster.conf, "transactional.id": f"tx-{uuid.uuid4().hex[:8]}"})
    producer.init_transactions(15)
    producer.begin_transaction()
    for i in range(20):
        producer.produce(topic, f"v{i}".encode(), partition=0, headers=[("h", b"x")])
    producer.commit_transaction(15)
    with OffsetProbe(cluster.conf) as probe:
        end = probe.end_offsets([(topic, 0)])[(topic, 0)]
    assert end == 21  # 20 records + the marker
    schema = arrow_schema(kafka_schema(include_headers=True))
    rng = PartitionRange(topic, 0, 0, end)
    batches = list(read_range(cluster.conf, rng, schema, data_loss_handler(True), 20_000))
    assert all(b.schema.equals(schema) for b in batches)
    offsets = [o for b in batches for o in b.column("offset").to_pylist()]
    assert offsets == list(range(20))
    # a range ending inside the data stops there, without waiting
    part = list(
        read_range(cluster.conf, PartitionRange(topic, 0, 5, 9), schema, data_loss_handler(True))
    )
    assert [o for b in part for o in b.column("offset").to_pylist()] == [5, 6, 7, 8]


def test_max_offsets_per_trigger_splits_the_backlog(
    spark: SparkSession, cluster: Cluster, make_topic: Callable[..., str], tmp_path: Path
) -> None:
    topic = make_topic(partitions=3)
    produced = produce_events(cluster.conf, topic, 1000, bad_fraction=0.0)
    df = source(
        spark,
        cluster,
        topic,
        startingOffsets="earliest",
        maxOffsetsPerTrigger=300,
        includeHeaders="true",
    )
    batches = run_available_now(df, tmp_path / "ck")
    assert [len(b) for b in batches] == [300, 300, 300, 100]
    assert len(batches) == math.ceil(1000 / 300)
    rows = [r for b in batches for r in b]
    assert len({(p, o) for p, o, _ in rows}) == 1000
    assert {i for _, _, i in rows} == produced.valid
    # each batch takes from every partition in proportion to its backlog
    first = Counter(p for p, _, _ in batches[0])
    assert set(first) == {0, 1, 2} and min(first.values()) >= 60


def test_starting_offsets_latest_reads_only_new_records(
    spark: SparkSession, cluster: Cluster, make_topic: Callable[..., str], tmp_path: Path
) -> None:
    topic = make_topic(partitions=2)
    produce_events(cluster.conf, topic, 50, bad_fraction=0.0, prefix="old")
    checkpoint = tmp_path / "ck"
    df = source(spark, cluster, topic, startingOffsets="latest", includeHeaders="true")
    # as with Spark's own source, the first batch may run, empty, to record the start
    assert [r for b in run_available_now(df, checkpoint) for r in b] == []
    new = produce_events(cluster.conf, topic, 30, bad_fraction=0.0, prefix="new")
    df = source(spark, cluster, topic, startingOffsets="latest", includeHeaders="true")
    rows = [r for b in run_available_now(df, checkpoint) for r in b]
    assert sorted(i for _, _, i in rows) == sorted(new.valid)


def test_batch_read_with_min_partitions(
    spark: SparkSession, cluster: Cluster, make_topic: Callable[..., str]
) -> None:
    topic = make_topic(partitions=2)
    produced = produce_events(cluster.conf, topic, 400, bad_fraction=0.0)
    df = (
        spark.read.format("lagless-kafka")
        .option("kafka.bootstrap.servers", cluster.bootstrap)
        .option("subscribe", topic)
        .option("minPartitions", "6")
        .option("includeHeaders", "true")
        .load()
    )
    assert df.rdd.getNumPartitions() >= 6
    assert df.schema == kafka_schema(include_headers=True)
    rows = df.selectExpr("partition", "offset", "cast(headers[0].value as string) as id").collect()
    assert len(rows) == 400
    assert {r.id for r in rows} == produced.valid
    assert len({(r.partition, r.offset) for r in rows}) == 400


def test_sink_writes_every_row_tagged_with_its_batch(
    spark: SparkSession, cluster: Cluster, make_topic: Callable[..., str], tmp_path: Path
) -> None:
    topic, out = make_topic(partitions=2), make_topic(partitions=2)
    produced = produce_events(cluster.conf, topic, 300, bad_fraction=0.0)
    df = source(
        spark,
        cluster,
        topic,
        startingOffsets="earliest",
        maxOffsetsPerTrigger=200,
        includeHeaders="true",
    )
    query = (
        df.select("key", "value", "headers")
        .writeStream.format("lagless-kafka")
        .option("kafka.bootstrap.servers", cluster.bootstrap)
        .option("topic", out)
        .option("checkpointLocation", str(tmp_path / "ck"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(240)
    assert query.exception() is None
    batch_of: dict[str, str] = {}
    for msg in read_all(cluster.conf, out):
        rid = (header(msg, ID_HEADER) or b"").decode()
        assert rid not in batch_of
        batch_of[rid] = (header(msg, BATCH_ID_HEADER) or b"").decode()
    assert set(batch_of) == produced.valid
    assert Counter(batch_of.values()) == {"0": 200, "1": 100}


def test_jvm_kafka_source_missing_is_one_clear_error(spark: SparkSession) -> None:
    with pytest.raises(LaglessError, match="--source jvm needs Spark's Kafka connector") as info:
        require_jvm_kafka(spark)
    assert "\n" not in str(info.value)


def batch_source(spark: SparkSession, cluster: Cluster, topic: str, **options: Any) -> DataFrame:
    return with_options(spark.read, cluster, topic, options)


def test_batch_read_of_an_empty_range_returns_no_rows(
    spark: SparkSession, cluster: Cluster, make_topic: Callable[..., str]
) -> None:
    topic = make_topic(partitions=2)
    assert batch_source(spark, cluster, topic).count() == 0  # empty topic
    produce_events(cluster.conf, topic, 20, bad_fraction=0.0)
    assert batch_source(spark, cluster, topic, startingOffsets="latest").count() == 0
    same = json.dumps({topic: {"0": 3, "1": 3}})
    assert (
        batch_source(spark, cluster, topic, startingOffsets=same, endingOffsets=same).count() == 0
    )
    assert batch_source(spark, cluster, topic).count() == 20


def produce_timed(conf: dict[str, Any], topic: str, base_ms: int, count: int) -> None:
    """``count`` records per partition (2 partitions), record i stamped base + i seconds."""
    producer = Producer(conf)
    for i in range(count):
        for partition in (0, 1):
            producer.produce(
                topic,
                f"{partition}-{i}".encode(),
                partition=partition,
                timestamp=base_ms + i * 1000,
            )
        producer.flush(10)  # one batch per step: the broker's own time lookup cannot help
    assert producer.flush(30) == 0


def test_timestamp_options_find_offsets_by_record_time(
    spark: SparkSession, cluster: Cluster, make_topic: Callable[..., str]
) -> None:
    topic = make_topic(partitions=2)
    base = 1_600_000_000_000  # records stamped in 2020, written now
    produce_timed(cluster.conf, topic, base, 30)

    def values(**options: Any) -> list[str]:
        rows = batch_source(spark, cluster, topic, **options).collect()
        return sorted(bytes(r.value).decode() for r in rows)

    got = values(startingTimestamp=base + 10_000, endingTimestamp=base + 20_500)
    assert got == sorted(f"{p}-{i}" for p in (0, 1) for i in range(10, 21))
    by_partition = {topic: {"0": base + 25_000, "1": base + 28_000}}
    got = values(startingOffsetsByTimestamp=json.dumps(by_partition))
    assert got == sorted([f"0-{i}" for i in range(25, 30)] + ["1-28", "1-29"])
    # a time after every record: an error by default, the end with strategy latest
    late = base + 60_000
    assert values(startingTimestamp=late, startingOffsetsByTimestampStrategy="latest") == []
    with pytest.raises(Exception, match="no record at or after the starting timestamp"):
        values(startingTimestamp=late)
    # an ending time after every record reads to the end
    assert len(values(startingTimestamp=base, endingTimestamp=late)) == 60


def test_unknown_and_batch_only_options_fail_clearly(
    spark: SparkSession, cluster: Cluster, make_topic: Callable[..., str], tmp_path: Path
) -> None:
    topic = make_topic(partitions=1)
    with pytest.raises(Exception, match="unknown option 'startingoffset'"):
        batch_source(spark, cluster, topic, startingOffset="earliest").count()
    stream = source(spark, cluster, topic, endingOffsets="latest").writeStream.format("noop")
    query = stream.option("checkpointLocation", str(tmp_path / "ck")).start()
    with pytest.raises(Exception, match="batch reads only"):
        query.awaitTermination(120)


def test_min_offsets_per_trigger_waits_for_records_or_the_max_delay(
    cluster: Cluster, make_topic: Callable[..., str]
) -> None:
    topic = make_topic(partitions=2)
    produce_events(cluster.conf, topic, 10, bad_fraction=0.0, prefix="a")
    options = SourceOptions.parse(
        {
            "kafka.bootstrap.servers": cluster.bootstrap,
            "subscribe": topic,
            "startingoffsets": "earliest",
            "minoffsetspertrigger": "25",
            "maxtriggerdelay": "1s",
        }
    )
    reader = KafkaStreamReader(options, kafka_schema(include_headers=False))
    try:
        start = reader.initialOffset()
        first = reader.latestOffset(start, ReadAllAvailable())  # the first batch never waits
        assert sum(first[topic].values()) == 10
        produce_events(cluster.conf, topic, 10, bad_fraction=0.0, prefix="b")
        assert reader.latestOffset(first, ReadAllAvailable()) == first  # 10 < 25: wait
        time.sleep(1.1)
        second = reader.latestOffset(first, ReadAllAvailable())  # maxTriggerDelay passed
        assert sum(second[topic].values()) == 20
        produce_events(cluster.conf, topic, 30, bad_fraction=0.0, prefix="c")
        assert sum(reader.latestOffset(second, ReadAllAvailable())[topic].values()) == 50
    finally:
        reader.stop()


def test_initial_offset_is_fixed_once_per_reader(
    cluster: Cluster, make_topic: Callable[..., str]
) -> None:
    """Spark asks a new query's start more than once while starting it: with
    startingOffsets=latest, records written in between must not move it (they are read)."""
    topic = make_topic(partitions=2)
    produce_events(cluster.conf, topic, 10, bad_fraction=0.0, prefix="a")
    options = SourceOptions.parse(
        {"kafka.bootstrap.servers": cluster.bootstrap, "subscribe": topic}
    )
    reader = KafkaStreamReader(options, kafka_schema(include_headers=False))
    try:
        start = reader.initialOffset()
        assert sum(start[topic].values()) == 10  # latest: after the 10 already there
        produce_events(cluster.conf, topic, 5, bad_fraction=0.0, prefix="b")
        assert reader.initialOffset() == start
        end = reader.latestOffset(start, ReadAllAvailable())
        assert sum(end[topic].values()) - sum(start[topic].values()) == 5
    finally:
        reader.stop()


def test_available_now_initial_offset_is_the_target_just_fixed(
    cluster: Cluster, make_topic: Callable[..., str]
) -> None:
    """Spark fixes an AvailableNow target before it asks for the initial offset: with
    startingOffsets=latest the query starts at that target (no second end-offset look-up),
    so records written in between are neither read by this run nor counted in its start."""
    topic = make_topic(partitions=2)
    produce_events(cluster.conf, topic, 10, bad_fraction=0.0, prefix="a")
    options = SourceOptions.parse(
        {"kafka.bootstrap.servers": cluster.bootstrap, "subscribe": topic}
    )
    reader = KafkaStreamReader(options, kafka_schema(include_headers=False))
    try:
        reader.prepareForTriggerAvailableNow()
        produce_events(cluster.conf, topic, 5, bad_fraction=0.0, prefix="b")
        start = reader.initialOffset()
        assert sum(start[topic].values()) == 10
        assert reader.latestOffset(start, ReadAllAvailable()) == start
    finally:
        reader.stop()


def test_headers_column_carries_headers_exactly(
    spark: SparkSession, cluster: Cluster, make_topic: Callable[..., str]
) -> None:
    topic = make_topic(partitions=1)
    producer = Producer({"bootstrap.servers": cluster.bootstrap})
    for i, headers in enumerate(EDGE_HEADERS):
        producer.produce(topic, value=f"v{i}".encode(), headers=headers)
    assert producer.flush(30) == 0
    df = with_options(spark.read, cluster, topic, {"includeHeaders": "true"})
    rows = df.select("offset", "headers").collect()
    assert [r.offset for r in rows] == list(range(len(EDGE_HEADERS)))
    for row, produced in zip(rows, EDGE_HEADERS, strict=True):
        got = None if row.headers is None else [(h.key, h.value) for h in row.headers]
        assert got == produced  # null without headers, as Spark's source
