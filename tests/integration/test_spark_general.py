"""The general pipeline on a user's own records (payments, not the demo's events): JSON with a
DDL schema and a Python transformation, Avro and Protobuf through a Schema Registry, a SQL
transformation with --partition-by (killed -9 twice and resumed), a JSON Schema with windowed
aggregates, and a transformation that raises. Each: every valid record once in Parquet as a
reader that lists the files itself sees it, every invalid one in the DLQ with its reason, the
group committed to the end."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
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
from lagless.kafka.reader import read_all
from lagless.spark.pipeline import PipelineConfig, run_pipeline
from lagless.spark.pipeline.parse import Check
from lagless.spark.pipeline.windows import Aggregation, WindowSpec
from tests.conftest import LAGLESS, Cluster
from tests.integration.spark_helpers import (
    dead_letters,
    jobs,
    listed_parquet_ids,
    proto,
    spark,
    wait_mid_batch,
)
from tests.integration.spark_helpers.jobs import DDL, Payments, produce_payments
from tests.integration.spark_helpers.proto import message_class

pytestmark = [pytest.mark.integration, pytest.mark.spark]
__all__ = ["spark"]
CLASS = "lagless-dlq-error-class"


def assert_dlq(conf: Mapping[str, Any], topic: str, payments: Payments) -> list[dict[str, str]]:
    """Every invalid record in the DLQ (at-least-once: once per identity) with its class."""
    letters = dead_letters(conf, f"{topic}-dlq")
    classes = {d[ID_HEADER]: d[CLASS] for d in letters}
    assert classes == dict(payments.invalid)
    assert all(d["lagless-dlq-error"] for d in letters)
    per_identity = Counter((d["lagless-dlq-id"], d[ID_HEADER]) for d in letters)
    assert len({i for i, _ in per_identity}) == len(payments.invalid)
    return letters


def assert_committed(conf: Mapping[str, Any], group: str, topic: str) -> None:
    ends = {(r.topic, r.partition): r.end for r in topic_ranges(conf, topic)}
    assert committed_offsets(conf, group, [topic]) == ends


@dataclass(frozen=True)
class Env:
    """A test's broker, fresh topic (2 partitions) and group, and where its outputs go."""

    cluster: Cluster
    topic: str
    group: str
    tmp_path: Path

    def config(self, **values: Any) -> PipelineConfig:
        return PipelineConfig.build(
            topic=self.topic, output=self.tmp_path / "out", checkpoint=self.tmp_path / "ck",
            kafka=self.cluster.conf, group=self.group, master="local[2]", **values,
        )  # fmt: skip

    def assert_output(self, valid: Iterable[str], folder: str = "rows") -> None:
        """Each valid id exactly once, as a reader that lists every file itself sees them."""
        ids = listed_parquet_ids(self.tmp_path / "out" / folder, "id")
        assert set(ids) == set(valid) and set(ids.values()) == {1}

    def table(self, folder: str = "rows") -> list[dict[str, Any]]:
        path = str(self.tmp_path / "out" / folder)
        rows: list[dict[str, Any]] = ds.dataset(path, partitioning="hive").to_table().to_pylist()
        return rows


@pytest.fixture
def env(cluster: Cluster, make_topic: Callable[..., str], group: str, tmp_path: Path) -> Env:
    return Env(cluster, make_topic(partitions=2), group, tmp_path)


def test_json_with_a_ddl_schema_and_a_python_transformation(spark: SparkSession, env: Env) -> None:
    payments = produce_payments(env.cluster.conf, env.topic, 200, negative_class="not_negative")
    cfg = env.config(
        value_schema=DDL, key="string", checks=(Check("not_negative", "amount >= 0"),),
        transform="tests.integration.spark_helpers.jobs:clean", max_offsets_per_trigger=120,
        output_topic=f"{env.topic}-out",
    )  # fmt: skip
    summary = run_pipeline(cfg, spark=spark)
    assert (summary.input_rows, summary.valid_rows) == (200, len(payments.valid))
    env.assert_output(payments.valid)
    row = {r["id"]: r for r in env.table()}["p3"]
    assert (row["cents"], row["currency"], row["kafka_key"]) == (350, "eur", "k3")
    assert row["kafka_offset"] >= 0 and row["kafka_topic"] == env.topic
    # the output topic: the same rows as JSON, keyed by the source key (no failure: once each)
    records = {m.key(): json.loads(m.value()) for m in read_all(env.cluster.conf, cfg.output_topic)}
    assert sorted(r["id"] for r in records.values()) == sorted(payments.valid)
    assert records[b"k3"]["cents"] == 350
    letters = assert_dlq(env.cluster.conf, env.topic, payments)
    reasons = {d["lagless-dlq-error"] for d in letters if d[CLASS] == "not_negative"}
    assert reasons == {"check not_negative failed: amount >= 0"}
    assert_committed(env.cluster.conf, env.group, env.topic)


def test_avro_through_a_schema_registry(spark: SparkSession, env: Env) -> None:
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    registry = SchemaRegistryClient.new_client({"url": "mock://payments"})
    serialize = AvroSerializer(registry, jobs.AVRO_SCHEMA)
    context = SerializationContext(env.topic, MessageField.VALUE)
    producer = make_producer(env.cluster.conf)
    valid, invalid = set(), {}
    for i in range(120):
        value = serialize({**jobs.payment(i), "ts": jobs.START}, context)
        if i % 10 == 3:
            value, invalid[f"p{i}"] = b"{not avro}", "broken_avro"
        elif i % 10 == 6:  # a schema id the subject does not have
            value, invalid[f"p{i}"] = b"\x00\x00\x00\x03\x99" + value[5:], "unknown_schema"
        else:
            valid.add(f"p{i}")
        producer.produce(env.topic, value, headers=[(ID_HEADER, f"p{i}")])
    assert producer.flush(30) == 0
    summary = run_pipeline(env.config(value="avro", registry=registry), spark=spark)
    assert summary.valid_rows == len(valid)
    env.assert_output(valid)
    assert {r["currency"] for r in env.table()} == set(jobs.CURRENCIES)
    assert_dlq(env.cluster.conf, env.topic, Payments({p: {} for p in valid}, invalid))
    assert_committed(env.cluster.conf, env.group, env.topic)


def test_protobuf_through_a_schema_registry(spark: SparkSession, env: Env) -> None:
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    registry = SchemaRegistryClient.new_client({"url": "mock://payments-protobuf"})
    context = SerializationContext(env.topic, MessageField.VALUE)
    v1, v2 = message_class(), message_class(text=proto.PAYMENT_PROTO_V2)
    money = message_class("shop.Money")
    serializers = {m: ProtobufSerializer(m, registry, {}) for m in (v1, v2, money)}
    producer = make_producer(env.cluster.conf)
    valid, invalid = set(), {}
    for i in range(150):
        version = v1 if i < 80 else v2  # the subject's second version from record 80 on
        message = version(id=f"p{i}", amount=i + 0.5, currency=jobs.CURRENCIES[i % 3])
        message.ts.seconds, message.status, message.big = 1767225600 + i, i % 2, 2**64 - 1 - i
        message.attrs["i"], message.fee.units = i, i * 10
        message.lines.add(sku=f"s{i}", qty=i % 7)
        if version is v2:
            message.channel = "web"
        else:
            message.note.value = f"note {i}"
        value = serializers[version](message, context)
        if i % 10 == 1:  # another message of the schema than the record's
            value, invalid[f"p{i}"] = serializers[money](money(), context), "broken_protobuf"
        elif i % 10 == 3:
            value, invalid[f"p{i}"] = b"{not protobuf}", "broken_protobuf"
        elif i % 10 == 6:  # a schema id the subject does not have
            value, invalid[f"p{i}"] = b"\x00\x00\x00\x03\x99" + value[5:], "unknown_schema"
        elif i % 10 == 8:  # a message index pointing nowhere
            value, invalid[f"p{i}"] = value[:5] + b"\x02\x08" + value[7:], "broken_protobuf"
        elif i % 10 == 9:  # truncated inside its last field
            value, invalid[f"p{i}"] = value[:-2], "broken_protobuf"
        else:
            valid.add(f"p{i}")
        producer.produce(env.topic, value, headers=[(ID_HEADER, f"p{i}")])
    assert producer.flush(30) == 0
    cfg = env.config(value="protobuf", registry=registry, message="Payment")
    summary = run_pipeline(cfg, spark=spark)
    assert summary.valid_rows == len(valid)
    env.assert_output(valid)
    rows = {r["id"]: r for r in env.table()}
    p2, p90 = rows["p2"], rows["p90"]
    assert (p2["amount"], p2["currency"], p2["status"], p2["note"]) == (2.5, "JPY", "NEW", "note 2")
    assert p2["ts"].timestamp() == 1767225602 and p2["big"] == 2**64 - 3
    assert dict(p2["attrs"]) == {"i": 2} and p2["fee"] == {"units": 20, "currency": ""}
    assert p2["lines"] == [{"sku": "s2", "qty": 2}] and p2["attempt"] is None
    assert (p90["channel"], p90["note"], p90["status"]) == ("web", None, "NEW")
    assert p2["channel"] == ""  # written with version 1: the field's default
    letters = assert_dlq(env.cluster.conf, env.topic, Payments({p: {} for p in valid}, invalid))
    reasons = {d[ID_HEADER]: d["lagless-dlq-error"] for d in letters}
    assert reasons["p8"] == "message index [4] is no message of the schema"
    assert reasons["p1"] == "message shop.Money is not the record's (shop.Payment)"
    assert reasons["p9"].startswith("cannot decode: ")
    assert_committed(env.cluster.conf, env.group, env.topic)


def test_sql_transformation_with_partition_by_killed_twice_and_resumed(
    spark: SparkSession, env: Env
) -> None:
    payments = produce_payments(env.cluster.conf, env.topic, 120)  # 4 batches of 30
    out, ck = env.tmp_path / "out", env.tmp_path / "ck"
    sql = "SELECT id, amount, upper(currency) AS currency FROM input WHERE amount >= 0"
    args = [
        "pipeline", "run", "--topic", env.topic, "--output", str(out), "--checkpoint", str(ck),
        "--master", "local[2]", "--schema", DDL, "--group", env.group, "--sql", sql,
        "--partition-by", "currency", "--max-offsets-per-trigger", "30", "--json",
    ]  # fmt: skip
    bootstrap = {**os.environ, "LAGLESS_BOOTSTRAP": env.cluster.bootstrap}
    last = -1
    for attempt in range(2):  # killed -9 twice while a batch is in progress
        with (env.tmp_path / f"run{attempt}.log").open("wb") as log:
            proc = subprocess.Popen(
                [LAGLESS, *args], env=bootstrap, stdout=log, stderr=log, start_new_session=True
            )
            try:
                last = wait_mid_batch(ck, proc, min_batch=max(1, last + 1), table="rows")
            finally:
                os.killpg(proc.pid, signal.SIGKILL)  # the CLI, its JVM and workers at once
                proc.wait(30)
        assert not (ck / "rows" / "commits" / str(last)).exists()
    # resumed with the same settings in this process's warm session (a third JVM cold start
    # would add nothing the two kills did not already test)
    cfg = env.config(
        value_schema=DDL, sql=sql, partition_by=("currency",), max_offsets_per_trigger=30
    )
    assert run_pipeline(cfg, spark=spark).input_rows > 0
    env.assert_output(payments.valid)
    folders = {p.name for p in (out / "rows").iterdir() if not p.name.startswith((".", "_"))}
    assert folders == {f"currency={c}" for c in jobs.CURRENCIES}
    assert_dlq(env.cluster.conf, env.topic, payments)
    assert_committed(env.cluster.conf, env.group, env.topic)


def test_json_schema_file_with_a_windowed_aggregate(spark: SparkSession, env: Env) -> None:
    payments = produce_payments(env.cluster.conf, env.topic, 300, "schema_violation")
    schema_file = env.tmp_path / "payment.schema.json"
    schema_file.write_text(json.dumps(jobs.JSON_SCHEMA))
    windows = WindowSpec(
        "ts", "1 minute", "30 seconds", ("currency",),
        (Aggregation("n", "count", None), Aggregation("total", "sum", "amount")),
    )  # fmt: skip
    run_pipeline(env.config(value_schema=str(schema_file), windows=windows), spark=spark)
    env.assert_output(payments.valid)
    letters = assert_dlq(env.cluster.conf, env.topic, payments)
    violation = next(d for d in letters if d[CLASS] == "schema_violation")
    assert violation["lagless-dlq-error"].startswith("amount: -1.0 is less than the minimum")
    # payments are a second apart from 00:00:00: the newest valid one (04:58) minus 30 s
    # closes minutes 0..3; each window's count and sum are those of its valid payments
    count: Counter[tuple[int, str]] = Counter()
    total: Counter[tuple[int, str]] = Counter()
    for i in (int(p[1:]) for p in payments.valid):
        key = (i // 60, jobs.CURRENCIES[i % 3])
        count[key] += 1
        total[key] += jobs.payment(i)["amount"]
    got = {(r["window_start"].minute, r["currency"]): r for r in env.table("aggregates")}
    assert set(got) == {k for k in count if k[0] <= 3}
    for key, row in got.items():
        assert (row["n"], row["total"]) == (count[key], pytest.approx(total[key]))
    assert_committed(env.cluster.conf, env.group, env.topic)


def test_a_raising_transformation_fails_in_one_line_and_resumes_once_fixed(
    spark: SparkSession, env: Env
) -> None:
    payments = produce_payments(env.cluster.conf, env.topic, 150)
    cfg = env.config(
        value_schema=DDL, transform="tests.integration.spark_helpers.jobs:flaky",
        max_offsets_per_trigger=50,
    )  # fmt: skip
    jobs.FLAKY.update(fail_on_call=2, calls=0)  # the second batch fails
    with pytest.raises(LaglessError) as failed:
        run_pipeline(cfg, spark=spark)
    message = str(failed.value)
    assert "\n" not in message
    assert "transformation tests.integration.spark_helpers.jobs:flaky failed" in message
    assert "ValueError: the payments service is down" in message
    # nothing of the failed batch is visible; the batch before it is there, once
    ids = listed_parquet_ids(env.tmp_path / "out" / "rows", "id")
    assert ids and set(ids.values()) == {1} and set(ids) < set(payments.valid)
    assert not (env.tmp_path / "ck" / "rows" / "commits" / "1").exists()
    jobs.FLAKY.update(fail_on_call=-1)  # fixed
    run_pipeline(cfg, spark=spark)
    env.assert_output(payments.valid)
    assert_committed(env.cluster.conf, env.group, env.topic)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"sql": "SELECT nope FROM input"}, "transformation sql failed"),
        ({"partition_by": ("region",)}, "--partition-by region: not a column"),
        ({"transform": "tests.integration.spark_helpers.jobs:nothing"}, "has no nothing"),
        ({"value_schema": "id STRING,, amount"}, "is not a Spark DDL schema"),
    ],
)
def test_what_does_not_fit_fails_before_the_query_starts(
    spark: SparkSession, env: Env, extra: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        run_pipeline(env.config(**{"value_schema": DDL, **extra}), spark=spark)
    assert not (env.tmp_path / "ck" / "rows").exists()
