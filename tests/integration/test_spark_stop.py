"""Stopping a running pipeline: after the batch in progress, or at once; a stop is never a
crash (Spark's check of an interrupted Python foreachBatch overflowed its stack on a long
traceback: a StackOverflowError of ~1,000 lines on stderr)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming.query import StreamingQuery

from lagless.spark.examples.events import events_config
from lagless.spark.pipeline import PipelineConfig, PipelineSummary, RawFactory, run_pipeline
from lagless.spark.pipeline import kafka_stream as pipeline_stream
from tests.conftest import LAGLESS, Cluster, ignoring_sigint
from tests.integration.spark_helpers import (
    parquet_ids,
    pipeline_args,
    produce_events,
    spark,
    wait_mid_batch,
)

pytestmark = [pytest.mark.integration, pytest.mark.spark]
__all__ = ["spark"]

N = 300
M = 600  # the CLI test's records: 4 batches, the Ctrl-C during the second or a later one


def held_stream(config: PipelineConfig, seconds: float) -> RawFactory:
    """The pipeline's own Kafka stream, each read partition held ``seconds`` before its rows:
    a batch surely still in progress when the test stops the query."""
    kafka = pipeline_stream(config)

    def raw(session: SparkSession) -> DataFrame:
        df = kafka(session)

        def hold(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            time.sleep(seconds)
            yield from batches

        return df.mapInArrow(hold, df.schema)

    return raw


def batch_in_progress(spark: SparkSession, name: str) -> StreamingQuery:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        for q in spark.streams.active:
            status = q.status
            if q.name == name and status["isTriggerActive"] and status["isDataAvailable"]:
                return q
        time.sleep(0.05)
    raise AssertionError("no batch in progress within 120 s")


def start(
    spark: SparkSession, config: PipelineConfig, **kwargs: object
) -> tuple[threading.Thread, list[PipelineSummary]]:
    result: list[PipelineSummary] = []
    runner = threading.Thread(
        target=lambda: result.append(run_pipeline(config, spark=spark, **kwargs)),  # type: ignore[arg-type]
        daemon=True,
    )
    runner.start()
    return runner, result


def config_for(
    cluster: Cluster,
    topic: str,
    tmp_path: Path,
    trigger: str = "processing-time=1s",
    max_offsets_per_trigger: int | None = None,
) -> PipelineConfig:
    return events_config(
        topic=topic,
        output=tmp_path / "out",
        checkpoint=tmp_path / "ck",
        kafka=cluster.conf,
        trigger=trigger,
        max_offsets_per_trigger=max_offsets_per_trigger,
        aggregates=False,
    )


def test_a_stop_lets_the_batch_in_progress_finish_and_starts_no_other(
    spark: SparkSession,
    cluster: Cluster,
    make_topic: Callable[..., str],
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
) -> None:
    """A backlog of three batches (one follows another: the trigger never looks idle); the
    stop comes during the first: it is written and committed, the second is not started or is
    interrupted, and a restart writes the rest — every valid id once."""
    topic = make_topic(partitions=2)
    produced = produce_events(cluster.conf, topic, N, bad_fraction=0.05, seed=3)
    config = config_for(cluster, topic, tmp_path, max_offsets_per_trigger=N // 3)
    stop = threading.Event()
    runner, result = start(spark, config, stop=stop, raw=held_stream(config, 3.0))
    batch_in_progress(spark, config.query_name("events"))
    stop.set()
    runner.join(120)
    assert not runner.is_alive()
    assert (result[0].batches, result[0].input_rows) == (1, N // 3)
    commits = tmp_path / "ck" / "events" / "commits"
    assert (commits / "0").exists() and not (commits / "1").exists()
    assert "StackOverflowError" not in capfd.readouterr().err

    again = run_pipeline(config_for(cluster, topic, tmp_path, "available-now"), spark=spark)
    assert again.input_rows == N - N // 3
    ids = parquet_ids(tmp_path / "out" / "events")
    assert set(ids) == produced.valid and set(ids.values()) == {1}


@pytest.mark.parametrize("how", ["stop_now", "query.stop()"])
def test_stopping_at_once_interrupts_the_batch_cleanly_and_a_restart_runs_it_again(
    spark: SparkSession,
    cluster: Cluster,
    make_topic: Callable[..., str],
    tmp_path: Path,
    capfd: pytest.CaptureFixture[str],
    how: str,
) -> None:
    topic = make_topic(partitions=2)
    produced = produce_events(cluster.conf, topic, N, bad_fraction=0.05, seed=4)
    config = config_for(cluster, topic, tmp_path)
    stop, now = threading.Event(), threading.Event()
    runner, result = start(spark, config, stop=stop, stop_now=now, raw=held_stream(config, 6.0))
    query = batch_in_progress(spark, config.query_name("events"))
    time.sleep(0.5)  # into the held read
    if how == "stop_now":
        stop.set()
        time.sleep(0.5)
        now.set()
    else:  # the user's own handle on the query
        query.stop()
    runner.join(120)
    assert not runner.is_alive()
    assert result, "run_pipeline raised instead of ending as a stop"
    assert (result[0].batches, result[0].input_rows) == (0, 0)
    assert not (tmp_path / "ck" / "events" / "commits" / "0").exists()
    err = capfd.readouterr().err
    assert "StackOverflowError" not in err
    assert query.exception() is None  # Spark recorded a stop, not a failure

    again = run_pipeline(config_for(cluster, topic, tmp_path, "available-now"), spark=spark)
    assert again.input_rows == N
    ids = parquet_ids(tmp_path / "out" / "events")
    assert set(ids) == produced.valid and set(ids.values()) == {1}


def test_cli_ctrl_c_twice_stops_at_once_in_one_line_and_a_restart_completes(
    spark: SparkSession, cluster: Cluster, make_topic: Callable[..., str], tmp_path: Path
) -> None:
    topic = make_topic(partitions=2)
    produced = produce_events(cluster.conf, topic, M, bad_fraction=0.05, seed=6)
    out, ck = tmp_path / "out", tmp_path / "ck"
    args = pipeline_args(
        topic,
        out,
        ck,
        "--trigger",
        "processing-time=1s",
        "--max-offsets-per-trigger",
        str(M // 4),
        "--no-aggregates",
        "--json",
    )
    env = {**os.environ, "LAGLESS_BOOTSTRAP": cluster.bootstrap}
    proc = subprocess.Popen(  # Ctrl-C in a terminal signals the whole process group
        [LAGLESS, *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        wait_mid_batch(ck, proc, min_batch=1)
        os.killpg(proc.pid, signal.SIGINT)
        time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    text = stderr.decode(errors="replace")
    assert proc.returncode == 130, text[-3000:]
    assert "StackOverflowError" not in text and "Traceback" not in text, text[-3000:]
    assert "stopped at once: the micro-batch in progress runs again" in text
    assert stdout.strip(), text[-3000:]
    first = json.loads(stdout.decode().strip().splitlines()[-1])  # the summary still printed
    assert 0 < first["input_rows"] < M

    # the restart (available-now), in this process's warm session: a second JVM cold start
    # would add nothing the stop did not already test
    second = run_pipeline(config_for(cluster, topic, tmp_path, "available-now"), spark=spark)
    assert first["input_rows"] + second.input_rows >= M
    ids = parquet_ids(out / "events")
    assert set(ids) == produced.valid and set(ids.values()) == {1}


def test_cli_started_ignoring_sigint_keeps_ignoring_it_and_stops_on_sigterm(
    cluster: Cluster, make_topic: Callable[..., str], tmp_path: Path
) -> None:
    """A pipeline started in the background by a script: a Ctrl-C at the terminal is not for
    it (PySpark sets a SIGINT handler of its own over the ignore: lagless puts the ignore
    back); SIGTERM drains, prints the summary, exit 0."""
    topic = make_topic(partitions=1)
    produced = produce_events(cluster.conf, topic, N, bad_fraction=0.0, seed=7)
    out, ck = tmp_path / "out", tmp_path / "ck"
    args = pipeline_args(topic, out, ck, "--trigger", "processing-time=1s", "--no-aggregates",
                         "--json")  # fmt: skip
    proc = subprocess.Popen(
        ignoring_sigint(LAGLESS, *args),
        env={**os.environ, "LAGLESS_BOOTSTRAP": cluster.bootstrap},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 600  # a loaded machine starts Spark slowly
        while not (ck / "events" / "commits" / "0").exists():
            assert proc.poll() is None and time.monotonic() < deadline, "no batch ran"
            time.sleep(0.1)
        os.killpg(proc.pid, signal.SIGINT)
        time.sleep(3)
        assert proc.poll() is None, "stopped by the SIGINT it was started ignoring"
        proc.send_signal(signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    text = stderr.decode(errors="replace")
    assert proc.returncode == 0 and "Traceback" not in text, text[-3000:]
    summary = json.loads(stdout.decode().strip().splitlines()[-1])
    assert summary["input_rows"] == N and set(parquet_ids(out / "events")) == produced.valid
