"""The events pipeline: `lagless pipeline run` as a real subprocess, and the library call."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow.dataset as ds
import pytest
from pyspark.sql import SparkSession

from lagless.errors import LaglessError
from lagless.ids import ID_HEADER, MALFORMED_HEADER
from lagless.kafka.admin import committed_offsets
from lagless.kafka.clients import make_producer
from lagless.kafka.offsets import topic_ranges
from lagless.kafka.reader import read_all
from lagless.observe.metrics import Metrics
from lagless.observe.timeline import load_timeline
from lagless.spark.connector.sink import BATCH_ID_HEADER
from lagless.spark.examples.events import events_config
from lagless.spark.pipeline import PipelineSummary, run_pipeline
from lagless.spark.pipeline.dlq import dlq_headers
from tests.conftest import LAGLESS, Cluster, run_cli
from tests.integration.spark_helpers import (
    EDGE_HEADERS,
    dead_letters,
    dlq_identities,
    dlq_ids,
    listed_parquet_ids,
    parquet_ids,
    pipeline_args,
    produce_events,
    spark,
    wait_mid_batch,
)

pytestmark = [pytest.mark.integration, pytest.mark.spark]
__all__ = ["spark"]


def test_available_now_run_valid_to_parquet_malformed_to_dlq_offsets_to_group(
    cluster: Cluster, make_topic: Callable[..., str], group: str, tmp_path: Path
) -> None:
    topic = make_topic(partitions=3)
    produced = produce_events(cluster.conf, topic, 1500, bad_fraction=0.05)
    assert len(produced.malformed) > 30
    out, ck = tmp_path / "out", tmp_path / "ck"
    args = pipeline_args(
        topic,
        out,
        ck,
        "--group",
        group,
        "--max-offsets-per-trigger",
        "600",
        "--record",
        str(tmp_path / "run"),
        "--json",
    )
    result = run_cli(*args, cluster=cluster, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert set(summary) == {
        "batches",
        "input_rows",
        "valid_rows",
        "dlq_rows",
        "seconds",
        "records_per_s",
    }
    assert summary["batches"] == 3
    assert summary["input_rows"] == 1500
    assert summary["valid_rows"] == len(produced.valid)
    assert summary["dlq_rows"] == len(produced.malformed)
    assert summary["records_per_s"] > 0

    # Parquet: exactly the valid ids, once each, partitioned by event date and batch
    ids = parquet_ids(out / "events")
    assert set(ids) == produced.valid and set(ids.values()) == {1}
    dates = {p.name for p in (out / "events").iterdir() if p.name.startswith("event_date=")}
    assert dates == {f"event_date={datetime.now(UTC).date()}"} or len(dates) <= 2

    # DLQ: exactly the malformed ids, with the right reason and their coordinates
    letters = dead_letters(cluster.conf, f"{topic}-dlq")
    assert sorted(d[ID_HEADER] for d in letters) == sorted(produced.malformed)
    for d in letters:
        assert d["lagless-dlq-error-class"] == d[MALFORMED_HEADER]
        assert d["lagless-dlq-error-class"] == produced.malformed[d[ID_HEADER]]
        assert d["lagless-dlq-error"]
        assert d["lagless-dlq-topic"] == topic
        assert int(d["lagless-dlq-partition"]) in {0, 1, 2}
        assert int(d["lagless-dlq-offset"]) >= 0
        assert d[BATCH_ID_HEADER] in {"0", "1", "2"}
        source = (topic, d["lagless-dlq-partition"], d["lagless-dlq-offset"])
        assert d["lagless-dlq-id"] == "/".join(source)

    # the group's committed offsets are the topic's end offsets
    ends = {(r.topic, r.partition): r.end for r in topic_ranges(cluster.conf, topic)}
    assert committed_offsets(cluster.conf, group, [topic]) == ends

    # --record: the run timeline sampled the pipeline's metrics
    timeline = load_timeline(tmp_path / "run")
    last = timeline[-1]
    assert (last.batches, last.processed, last.dlq) == (3, 1500, len(produced.malformed))
    assert last.commits >= 1 and last.lag_records == 0


def test_killed_mid_batch_and_restarted_writes_each_valid_event_once(
    spark: SparkSession, cluster: Cluster, make_topic: Callable[..., str], tmp_path: Path
) -> None:
    topic = make_topic(partitions=3)
    produced = produce_events(cluster.conf, topic, 600, bad_fraction=0.05, seed=11)
    out, ck = tmp_path / "out", tmp_path / "ck"
    # the aggregates use the same batch-idempotent writer; leaving them out halves the time
    args = pipeline_args(
        topic, out, ck, "--max-offsets-per-trigger", "150", "--no-aggregates", "--json"
    )
    env = {**os.environ, "LAGLESS_BOOTSTRAP": cluster.bootstrap}
    with (tmp_path / "first.log").open("wb") as log:
        proc = subprocess.Popen(
            [LAGLESS, *args], env=env, stdout=log, stderr=log, start_new_session=True
        )
        try:
            batch = wait_mid_batch(ck, proc, min_batch=2)
        finally:
            os.killpg(proc.pid, signal.SIGKILL)  # the CLI, its JVM and workers at once
            proc.wait(30)
    assert not (ck / "events" / "commits" / str(batch)).exists()
    # what a killed attempt leaves (a staging folder with complete part files) is there, for
    # sure, whatever moment the kill hit
    done = sorted((out / "events").glob("event_date=*/batch_id=0"))
    assert done, "batch 0 wrote nothing before the kill"
    staged = out / "events" / ".spark-staging-killed" / done[0].parent.name / "batch_id=0"
    shutil.copytree(done[0], staged)
    assert listed_parquet_ids(out / "events").most_common(1)[0][1] == 2

    # the restart: the same settings from the checkpoint, in this process's warm session (a
    # second JVM cold start would add nothing the kill did not already test)
    config = events_config(
        topic=topic, output=out, checkpoint=ck, kafka=cluster.conf, max_offsets_per_trigger=150,
        aggregates=False,
    )  # fmt: skip
    summary = run_pipeline(config, spark=spark)
    assert summary.input_rows > 0  # the restart re-ran the killed batch and the rest

    # as Spark reads the output: each valid id once, nothing else
    rows = spark.read.parquet(str(out / "events")).groupBy("order_id").count().collect()
    assert {r.order_id for r in rows} == produced.valid
    assert {r["count"] for r in rows} == {1}
    # and as a plain Parquet reader sees it (the killed attempt's files were replaced)
    ids = parquet_ids(out / "events")
    assert set(ids) == produced.valid and set(ids.values()) == {1}
    # and as a reader that lists every file below the folder (the leftovers were removed)
    listed = listed_parquet_ids(out / "events")
    assert set(listed) == produced.valid and set(listed.values()) == {1}
    assert not list((out / "events").glob(".spark-staging-*"))
    # the DLQ is at-least-once: every malformed record, maybe twice, with one identity each
    assert set(dlq_ids(cluster.conf, f"{topic}-dlq")) == set(produced.malformed)
    identities = dlq_identities(cluster.conf, f"{topic}-dlq")
    assert all(len(ids) == 1 for ids in identities.values())  # one record per identity
    assert sorted(i for ids in identities.values() for i in ids) == sorted(produced.malformed)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--trigger", "sometimes"], "--trigger"),
        (["--master", "yarn"], "--master"),
        (["--max-offsets-per-trigger", "0"], "max-offsets-per-trigger"),
        (["--starting-offsets", "yesterday"], "--starting-offsets"),
        (["--source", "scala"], "--source"),
        (["--watermark", "a while"], "watermark"),
        (["--conf", "spark.executor.memory"], "--conf"),
        (["--source-option", "=1"], "--source-option"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    extra: list[str], message: str, cluster: Cluster, tmp_path: Path
) -> None:
    result = run_cli(*pipeline_args("t", tmp_path / "o", tmp_path / "c", *extra), cluster=cluster)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("lagless: error:") and message in lines[0]


def test_missing_topic_is_one_line_error(cluster: Cluster, tmp_path: Path) -> None:
    result = run_cli(
        *pipeline_args("no-such-topic-xyz", tmp_path / "o", tmp_path / "c"), cluster=cluster
    )
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        "lagless: error: topic 'no-such-topic-xyz' does not exist"
    ]


def produce_orders(
    conf: dict[str, object], topic: str, orders: list[tuple[str, str, float, datetime]]
) -> None:
    producer = make_producer(conf)
    for oid, country, amount, ts in orders:
        doc = {
            "order_id": oid,
            "user_id": "u1",
            "amount": amount,
            "currency": "EUR",
            "country": country,
            "event_ts": ts.isoformat(timespec="milliseconds"),
        }
        producer.produce(topic, json.dumps(doc).encode(), headers=[(ID_HEADER, oid.encode())])
    assert producer.flush(30) == 0


def test_windowed_aggregates_and_metrics(
    spark: SparkSession,
    cluster: Cluster,
    make_topic: Callable[..., str],
    group: str,
    tmp_path: Path,
) -> None:
    topic = make_topic(partitions=2)
    base = datetime(2026, 1, 5, 10, 0, tzinfo=UTC)
    orders = [
        (f"o{i}", "DE" if i % 3 else "FR", float(i % 7 + 1), base + timedelta(seconds=13 * i))
        for i in range(20)  # minutes 0..4
    ]
    late_marker = ("m", "US", 1.0, base + timedelta(minutes=10))
    produce_orders(cluster.conf, topic, [*orders, late_marker])
    config = events_config(  # locations as URIs, as Spark takes them
        topic=topic,
        output=f"file://{tmp_path}/out",
        checkpoint=f"file://{tmp_path}/ck",
        kafka=cluster.conf,
        group=group,
        master="local[2]",
    )
    metrics = Metrics()
    reports = []
    summary = run_pipeline(config, spark=spark, metrics=metrics, on_batch=reports.append)
    assert (summary.input_rows, summary.valid_rows, summary.dlq_rows) == (21, 21, 0)
    assert [r.input_rows for r in reports] == [21]

    # windows closed by the watermark (max event time - 1 minute): minutes 0..4, not the marker's
    expected: dict[tuple[datetime, str], tuple[int, float]] = {}
    for _, country, amount, ts in orders:
        key = (ts.replace(second=0, microsecond=0), country)
        n, total = expected.get(key, (0, 0.0))
        expected[key] = (n + 1, total + amount)
    table = ds.dataset(str(tmp_path / "out" / "aggregates"), partitioning="hive").to_table()
    got = {(r["window_start"], r["country"]): (r["events"], r["amount"]) for r in table.to_pylist()}
    assert got == expected
    assert table.num_rows == len(expected)  # each window once
    assert summary.table_path == f"file://{tmp_path}/out/events"
    assert (tmp_path / "ck" / "events" / "commits").is_dir()
    assert list((tmp_path / "ck" / "aggregates-state").glob("*.json"))

    # a second run with later events: the watermark state carries over, minute 10 closes once
    produce_orders(cluster.conf, topic, [("n", "US", 2.0, base + timedelta(minutes=12))])
    again = run_pipeline(config, spark=spark)
    assert (again.input_rows, again.batches) == (1, 1)
    table = ds.dataset(str(tmp_path / "out" / "aggregates"), partitioning="hive").to_table()
    rows = {(r["window_start"], r["country"]): r["events"] for r in table.to_pylist()}
    assert rows[(base + timedelta(minutes=10), "US")] == 1
    assert table.num_rows == len(expected) + 1

    samples = {s.name: s.value for m in metrics.registry.collect() for s in m.samples}
    assert samples["lagless_batches_total"] == 1
    assert samples["lagless_commits_total"] >= 1
    assert sum(v for k, v in samples.items() if k == "lagless_records_processed_total") >= 1
    ends = {(r.topic, r.partition): r.end for r in topic_ranges(cluster.conf, topic)}
    assert committed_offsets(cluster.conf, group, [topic]) == ends


def test_jvm_source_without_its_jar_fails_before_any_query(
    spark: SparkSession, cluster: Cluster, make_topic: Callable[..., str], tmp_path: Path
) -> None:
    config = events_config(
        topic=make_topic(partitions=1),
        output=tmp_path / "o",
        checkpoint=tmp_path / "c",
        kafka=cluster.conf,
        source="jvm",
    )
    with pytest.raises(LaglessError, match="--source jvm needs Spark's Kafka connector"):
        run_pipeline(config, spark=spark)
    assert not (tmp_path / "c").exists()


def test_processing_time_run_commits_each_batch_to_the_group_while_running(
    spark: SparkSession,
    cluster: Cluster,
    make_topic: Callable[..., str],
    group: str,
    tmp_path: Path,
) -> None:
    topic = make_topic(partitions=2)
    config = events_config(
        topic=topic,
        output=tmp_path / "out",
        checkpoint=tmp_path / "ck",
        kafka=cluster.conf,
        group=group,
        trigger="processing-time=1s",
        aggregates=False,
    )
    stop = threading.Event()
    result: list[PipelineSummary] = []
    runner = threading.Thread(
        target=lambda: result.append(run_pipeline(config, spark=spark, stop=stop)), daemon=True
    )
    runner.start()
    try:
        for round_ in range(2):
            produce_events(cluster.conf, topic, 100, bad_fraction=0.0, prefix=f"r{round_}-")
            ends = {(r.topic, r.partition): r.end for r in topic_ranges(cluster.conf, topic)}
            deadline = time.monotonic() + 90
            while committed_offsets(cluster.conf, group, [topic]) != ends:
                assert runner.is_alive(), "the pipeline stopped early"
                assert time.monotonic() < deadline, "the group never caught up"
                time.sleep(0.5)
    finally:
        stop.set()
        runner.join(120)
    assert not runner.is_alive()
    assert result[0].input_rows == 200
    assert len(parquet_ids(tmp_path / "out" / "events")) == 200


def test_dead_letters_carry_their_exact_original_headers(
    spark: SparkSession, cluster: Cluster, make_topic: Callable[..., str], tmp_path: Path
) -> None:
    """Each dead letter: its original key, value and headers, exactly (none, duplicate keys,
    null and empty values, binary), then the lagless-dlq-* headers and the sink's batch tag."""
    topic = make_topic(partitions=2)
    originals: dict[bytes, tuple[bytes | None, list[tuple[str, bytes | None]]]] = {}
    producer = make_producer(cluster.conf)
    for i, headers in enumerate(EDGE_HEADERS * 2):
        value, key = f"not json {i}".encode(), (None if i % 2 else bytes([i, 0, 255]))
        producer.produce(topic, value=value, key=key, headers=headers)
        originals[value] = (key, list(headers or []))
    assert producer.flush(30) == 0
    produce_orders(cluster.conf, topic, [("ok", "DE", 1.0, datetime(2026, 1, 5, tzinfo=UTC))])
    config = events_config(
        topic=topic, output=tmp_path / "o", checkpoint=tmp_path / "c", kafka=cluster.conf
    )
    summary = run_pipeline(config, spark=spark)
    assert (summary.valid_rows, summary.dlq_rows) == (1, len(originals))

    # read again while fewer came: under load a read right after the run once came back one
    # letter short on the embedded broker (the summary counted it, acknowledged)
    deadline = time.monotonic() + 30
    while len(letters := list(read_all(cluster.conf, config.dlq_name))) < len(originals):
        if time.monotonic() > deadline:
            break
        time.sleep(0.5)
    seen = set()
    for msg in letters:
        value = msg.value()
        assert isinstance(value, bytes) and value not in seen
        seen.add(value)
        key, headers = originals[value]
        assert msg.key() == key
        got = msg.headers() or []
        assert got[: len(headers)] == headers  # exactly, in order
        added = [k for k, _ in got[len(headers) :]]
        assert added[0] == "lagless-dlq-id"
        assert set(added) == {*dlq_headers(), BATCH_ID_HEADER}
    assert seen == set(originals)
