"""The general pipeline on a user's own records (payments, not the demo's events): JSON with a
DDL schema and a Python transformation, Avro through a Schema Registry, a SQL transformation
with --partition-by (killed -9 twice and resumed), a JSON Schema with windowed aggregates, and
a transformation that raises. Each: every valid record once in Parquet as a reader that lists
the files itself sees it, every invalid one in the DLQ with its reason, the group committed to
the end."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections import Counter
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pyarrow.dataset as ds
import pytest
from pyspark.sql import SparkSession

from lagless.errors import ConfigError, LaglessError
from lagless.ids import ID_HEADER
from lagless.kafka.admin import committed_offsets
from lagless.kafka.clients import make_producer
from lagless.kafka.offsets import topic_ranges
from lagless.spark.pipeline import PipelineConfig, run_pipeline
from lagless.spark.pipeline.parse import Check
from lagless.spark.pipeline.windows import Aggregation, WindowSpec
from tests.conftest import LAGLESS, Cluster, run_cli
from tests.integration.spark_helpers import (
    dead_letters,
    jobs,
    listed_parquet_ids,
    spark,
    wait_mid_batch,
)
from tests.integration.spark_helpers.jobs import DDL, Payments, produce_payments

pytestmark = [pytest.mark.integration, pytest.mark.spark]
__all__ = ["spark"]


def assert_dlq(conf: Mapping[str, Any], topic: str, payments: Payments) -> list[dict[str, str]]:
    """Every invalid record in the DLQ (at-least-once: once per identity) with its class."""
    letters = dead_letters(conf, f"{topic}-dlq")
    classes = {d[ID_HEADER]: d["lagless-dlq-error-class"] for d in letters}
    assert classes == dict(payments.invalid)
    assert all(d["lagless-dlq-error"] for d in letters)
    per_identity = Counter((d["lagless-dlq-id"], d[ID_HEADER]) for d in letters)
    assert len({i for i, _ in per_identity}) == len(payments.invalid)
    return letters


def assert_committed(conf: Mapping[str, Any], group: str, topic: str) -> None:
    ends = {(r.topic, r.partition): r.end for r in topic_ranges(conf, topic)}
    assert committed_offsets(conf, group, [topic]) == ends


def config(
    cluster: Cluster, topic: str, tmp_path: Path, group: str, **values: Any
) -> PipelineConfig:
    return PipelineConfig.build(
        topic=topic, output=tmp_path / "out", checkpoint=tmp_path / "ck", kafka=cluster.conf,
        group=group, master="local[2]", **values,
    )  # fmt: skip


def test_json_with_a_ddl_schema_and_a_python_transformation(
    spark: SparkSession, cluster: Cluster, make_topic: Callable[..., str], group: str,
    tmp_path: Path,
) -> None:  # fmt: skip
    topic = make_topic(partitions=2)
    payments = produce_payments(cluster.conf, topic, 200, negative_class="not_negative")
    cfg = config(
        cluster, topic, tmp_path, group, value_schema=DDL, key="string",
        checks=(Check("not_negative", "amount >= 0"),),
        transform="tests.integration.spark_helpers.jobs:clean", max_offsets_per_trigger=120,
    )  # fmt: skip
    summary = run_pipeline(cfg, spark=spark)
    assert (summary.input_rows, summary.valid_rows) == (200, len(payments.valid))
    ids = listed_parquet_ids(tmp_path / "out" / "rows", "id")
    assert set(ids) == set(payments.valid) and set(ids.values()) == {1}
    table = ds.dataset(str(tmp_path / "out" / "rows"), partitioning="hive").to_table()
    row = {r["id"]: r for r in table.to_pylist()}["p3"]
    assert (row["cents"], row["currency"], row["kafka_key"]) == (350, "eur", "k3")
    assert row["kafka_offset"] >= 0 and row["kafka_topic"] == topic
    letters = assert_dlq(cluster.conf, topic, payments)
    negatives = [d for d in letters if d["lagless-dlq-error-class"] == "not_negative"]
    assert (
        negatives and negatives[0]["lagless-dlq-error"] == "check not_negative failed: amount >= 0"
    )
    assert_committed(cluster.conf, group, topic)


def test_avro_through_a_schema_registry(
    spark: SparkSession, cluster: Cluster, make_topic: Callable[..., str], group: str,
    tmp_path: Path,
) -> None:  # fmt: skip
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    topic = make_topic(partitions=2)
    registry = SchemaRegistryClient.new_client({"url": "mock://payments"})
    serialize = AvroSerializer(registry, jobs.AVRO_SCHEMA)
    context = SerializationContext(topic, MessageField.VALUE)
    producer = make_producer(cluster.conf)
    valid, invalid = set(), {}
    for i in range(120):
        doc = {**jobs.payment(i), "ts": jobs.START}
        value = serialize(doc, context)
        if i % 10 == 3:
            value, invalid[f"p{i}"] = b"{not avro}", "broken_avro"
        elif i % 10 == 6:
            value, invalid[f"p{i}"] = b"\x00\x00\x00\x03\x99" + value[5:], "unknown_schema"
        else:
            valid.add(f"p{i}")
        producer.produce(topic, value, headers=[(ID_HEADER, f"p{i}")])
    assert producer.flush(30) == 0
    cfg = config(cluster, topic, tmp_path, group, value="avro", registry=registry)
    summary = run_pipeline(cfg, spark=spark)
    assert summary.valid_rows == len(valid)
    ids = listed_parquet_ids(tmp_path / "out" / "rows", "id")
    assert set(ids) == valid and set(ids.values()) == {1}
    table = ds.dataset(str(tmp_path / "out" / "rows"), partitioning="hive").to_table()
    assert {r["currency"] for r in table.to_pylist()} == set(jobs.CURRENCIES)
    assert assert_dlq(cluster.conf, topic, jobs.Payments({p: {} for p in valid}, invalid))
    assert_committed(cluster.conf, group, topic)


def test_sql_transformation_with_partition_by_killed_twice_and_resumed(
    cluster: Cluster, make_topic: Callable[..., str], group: str, tmp_path: Path
) -> None:
    topic = make_topic(partitions=2)
    payments = produce_payments(cluster.conf, topic, 400)
    out, ck = tmp_path / "out", tmp_path / "ck"
    args = [
        "pipeline", "run", "--topic", topic, "--output", str(out), "--checkpoint", str(ck),
        "--master", "local[2]", "--schema", DDL, "--group", group,
        "--sql", "SELECT id, amount, upper(currency) AS currency FROM input WHERE amount >= 0",
        "--partition-by", "currency", "--max-offsets-per-trigger", "40", "--json",
    ]  # fmt: skip
    env = {**os.environ, "LAGLESS_BOOTSTRAP": cluster.bootstrap}
    last = -1
    for attempt in range(2):  # killed -9 twice while a batch is in progress
        with (tmp_path / f"run{attempt}.log").open("wb") as log:
            proc = subprocess.Popen(
                [LAGLESS, *args], env=env, stdout=log, stderr=log, start_new_session=True
            )
            try:
                last = wait_mid_batch(ck, proc, min_batch=last + 2, table="rows")
            finally:
                os.killpg(proc.pid, signal.SIGKILL)  # the CLI, its JVM and workers at once
                proc.wait(30)
        assert not (ck / "rows" / "commits" / str(last)).exists()
    result = run_cli(*args, cluster=cluster, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads(result.stdout.strip().splitlines()[-1])["input_rows"] > 0
    ids = listed_parquet_ids(out / "rows", "id")
    assert set(ids) == set(payments.valid) and set(ids.values()) == {1}
    folders = {p.name for p in (out / "rows").iterdir() if not p.name.startswith((".", "_"))}
    assert folders == {f"currency={c}" for c in jobs.CURRENCIES}
    assert_dlq(cluster.conf, topic, payments)
    assert_committed(cluster.conf, group, topic)


def test_json_schema_file_with_a_windowed_aggregate(
    spark: SparkSession, cluster: Cluster, make_topic: Callable[..., str], group: str,
    tmp_path: Path,
) -> None:  # fmt: skip
    topic = make_topic(partitions=2)
    payments = produce_payments(cluster.conf, topic, 300, negative_class="schema_violation")
    schema_file = tmp_path / "payment.schema.json"
    schema_file.write_text(json.dumps(jobs.JSON_SCHEMA))
    windows = WindowSpec(
        "ts", "1 minute", "30 seconds", ("currency",),
        (Aggregation("n", "count", None), Aggregation("total", "sum", "amount")),
    )  # fmt: skip
    cfg = config(cluster, topic, tmp_path, group, value_schema=str(schema_file), windows=windows)
    run_pipeline(cfg, spark=spark)
    ids = listed_parquet_ids(tmp_path / "out" / "rows", "id")
    assert set(ids) == set(payments.valid) and set(ids.values()) == {1}
    letters = assert_dlq(cluster.conf, topic, payments)
    violation = next(d for d in letters if d["lagless-dlq-error-class"] == "schema_violation")
    assert violation["lagless-dlq-error"].startswith("amount: -1.0 is less than the minimum")
    # payments are a second apart from 00:00:00: the newest (04:59) minus 30 s closes
    # minutes 0..3; each window's count and sum are those of its valid payments
    expected: Counter[tuple[int, str]] = Counter()
    totals: dict[tuple[int, str], float] = {}
    for i in (int(p[1:]) for p in payments.valid):
        key = (i // 60, jobs.CURRENCIES[i % 3])
        expected[key] += 1
        totals[key] = totals.get(key, 0.0) + jobs.payment(i)["amount"]
    table = ds.dataset(str(tmp_path / "out" / "aggregates"), partitioning="hive").to_table()
    got = {(r["window_start"].minute, r["currency"]): r for r in table.to_pylist()}
    assert set(got) == {k for k in expected if k[0] <= 3}
    for key, row in got.items():
        assert (row["n"], row["total"]) == (expected[key], pytest.approx(totals[key]))
    assert_committed(cluster.conf, group, topic)


def test_a_raising_transformation_fails_in_one_line_and_resumes_once_fixed(
    spark: SparkSession, cluster: Cluster, make_topic: Callable[..., str], group: str,
    tmp_path: Path,
) -> None:  # fmt: skip
    topic = make_topic(partitions=2)
    payments = produce_payments(cluster.conf, topic, 150)
    cfg = config(
        cluster, topic, tmp_path, group, value_schema=DDL, max_offsets_per_trigger=50,
        transform="tests.integration.spark_helpers.jobs:flaky",
    )  # fmt: skip
    jobs.FLAKY.update(fail_on_call=2, calls=0)  # the second batch fails
    with pytest.raises(LaglessError) as failed:
        run_pipeline(cfg, spark=spark)
    message = str(failed.value)
    assert "\n" not in message
    assert "transformation tests.integration.spark_helpers.jobs:flaky failed" in message
    assert "ValueError: the payments service is down" in message
    # nothing of the failed batch is visible; the batch before it is there, once
    ids = listed_parquet_ids(tmp_path / "out" / "rows", "id")
    assert ids and set(ids.values()) == {1} and set(ids) < set(payments.valid)
    assert not (tmp_path / "ck" / "rows" / "commits" / "1").exists()
    jobs.FLAKY.update(fail_on_call=-1)  # fixed
    run_pipeline(cfg, spark=spark)
    ids = listed_parquet_ids(tmp_path / "out" / "rows", "id")
    assert set(ids) == set(payments.valid) and set(ids.values()) == {1}
    assert_committed(cluster.conf, group, topic)


def test_a_transformation_that_does_not_fit_fails_before_the_query_starts(
    spark: SparkSession, cluster: Cluster, make_topic: Callable[..., str], group: str,
    tmp_path: Path,
) -> None:  # fmt: skip
    topic = make_topic(partitions=1)
    cases: list[tuple[dict[str, Any], str]] = [
        ({"sql": "SELECT nope FROM input"}, "transformation sql failed"),
        ({"partition_by": ("country",)}, "--partition-by country: not a column"),
        ({"transform": "tests.integration.spark_helpers.jobs:nothing"}, "has no nothing"),
        ({"value_schema": "id STRING,, amount"}, "is not a Spark DDL schema"),
    ]
    for extra, message in cases:
        values = {"value_schema": DDL, **extra}
        with pytest.raises(ConfigError, match=message):
            run_pipeline(config(cluster, topic, tmp_path, group, **values), spark=spark)
    assert not (tmp_path / "ck" / "rows").exists()
