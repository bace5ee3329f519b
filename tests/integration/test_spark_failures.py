"""Failures of the Spark pipeline: one line naming the cause, bounded retries, nothing lost.

The frozen-broker tests freeze (SIGSTOP) a broker of their own, never the shared one.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from lagless.broker.embedded import EmbeddedBroker, free_port
from lagless.errors import LaglessError
from lagless.kafka.admin import create_topic
from lagless.spark.examples.events import events_config
from lagless.spark.pipeline import PipelineConfig, PipelineSummary, run_pipeline
from lagless.spark.pipeline.progress import BatchReport
from tests.conftest import Cluster, run_cli, unique, wait_for
from tests.integration.spark_helpers import (
    Produced,
    parquet_ids,
    pipeline_args,
    produce_events,
    spark,
)

pytestmark = [pytest.mark.integration, pytest.mark.spark]
__all__ = ["spark"]


@pytest.fixture
def own_broker(tmp_path: Path) -> Iterator[tuple[Cluster, int]]:
    """A broker for this test only, and its pid (to freeze it)."""
    broker = EmbeddedBroker(tmp_path / "broker")
    state = broker.start(port=free_port())
    try:
        yield Cluster(state.bootstrap, embedded=True), state.pid
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(state.pid, signal.SIGCONT)
        broker.stop()


def test_unwritable_output_is_one_line_naming_it(
    cluster: Cluster, make_topic: Callable[..., str], tmp_path: Path
) -> None:
    topic = make_topic(partitions=1)
    produce_events(cluster.conf, topic, 10)
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    result = run_cli(
        *pipeline_args(topic, blocker / "out", tmp_path / "ck"), cluster=cluster, timeout=300
    )
    assert result.returncode == 1
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) <= 3, result.stderr[-3000:]  # the JVM may print its own warning first
    assert lines[-1].startswith(f"lagless: error: output {blocker / 'out'} is not writable: ")
    assert not (tmp_path / "ck" / "events").exists()


def test_unusable_checkpoint_is_one_line_naming_it(
    spark: SparkSession, cluster: Cluster, make_topic: Callable[..., str], tmp_path: Path
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    config = events_config(
        topic=make_topic(partitions=1),
        output=tmp_path / "out",
        checkpoint=blocker / "ck",
        kafka=cluster.conf,
    )
    with pytest.raises(LaglessError, match=r"^checkpoint .*/a-file/ck is not writable: ") as info:
        run_pipeline(config, spark=spark)
    assert "\n" not in str(info.value)


def run_in_thread(
    config: PipelineConfig, spark: SparkSession, stop: threading.Event | None = None
) -> tuple[threading.Thread, list[BatchReport], list[PipelineSummary | BaseException]]:
    reports: list[BatchReport] = []
    result: list[PipelineSummary | BaseException] = []

    def target() -> None:
        try:
            result.append(run_pipeline(config, spark=spark, on_batch=reports.append, stop=stop))
        except BaseException as exc:  # handed to the test thread
            result.append(exc)

    runner = threading.Thread(target=target, daemon=True)
    runner.start()
    return runner, reports, result


def frozen_setup(
    broker: Cluster, tmp_path: Path, events: int, **settings: Any
) -> tuple[Produced, PipelineConfig]:
    """A topic of ``events`` valid events on ``broker``, and a pipeline over it."""
    topic = unique("t")
    create_topic(broker.conf, topic, 2)
    produced = produce_events(broker.conf, topic, events, bad_fraction=0.0)
    config = events_config(
        topic=topic,
        output=tmp_path / "out",
        checkpoint=tmp_path / "ck",
        kafka=broker.conf,
        aggregates=False,
        master="local[2]",
        **settings,
    )
    return produced, config


def test_broker_frozen_for_seconds_is_waited_out_and_nothing_is_lost(
    spark: SparkSession, own_broker: tuple[Cluster, int], tmp_path: Path
) -> None:
    broker, pid = own_broker
    produced, config = frozen_setup(broker, tmp_path, 600, max_offsets_per_trigger=150)
    runner, reports, result = run_in_thread(config, spark)
    wait_for(lambda: len(reports) >= 1 or bool(result), 240, "no batch finished")
    os.kill(pid, signal.SIGSTOP)
    time.sleep(4)
    os.kill(pid, signal.SIGCONT)
    runner.join(240)
    assert not runner.is_alive()
    summary = result[0]
    assert isinstance(summary, PipelineSummary), summary
    assert summary.input_rows == 600 and summary.batches == 4
    ids = parquet_ids(tmp_path / "out" / "events")
    assert set(ids) == produced.valid and set(ids.values()) == {1}


def test_broker_frozen_for_good_fails_in_bounded_time_with_one_line(
    spark: SparkSession, own_broker: tuple[Cluster, int], tmp_path: Path
) -> None:
    broker, pid = own_broker
    _, config = frozen_setup(
        broker,
        tmp_path,
        100,
        trigger="processing-time=500ms",
        source_options={
            "fetchOffset.numRetries": "2",
            "fetchOffset.retryIntervalMs": "100",
            "kafkaConsumer.pollTimeoutMs": "3000",
        },
    )
    stop = threading.Event()
    runner, reports, result = run_in_thread(config, spark, stop)
    try:
        wait_for(lambda: len(reports) >= 1 or bool(result), 240, "no batch finished")
        os.kill(pid, signal.SIGSTOP)
        frozen = time.monotonic()
        runner.join(120)
        failed_after = time.monotonic() - frozen
    finally:
        stop.set()
        os.kill(pid, signal.SIGCONT)
        runner.join(60)
    error = result[0]
    assert isinstance(error, LaglessError), error
    message = str(error)
    assert "\n" not in message
    assert "failed 2 times (fetchOffset.numRetries=2)" in message, message
    assert failed_after < 60
    # what was processed before the freeze is in the output, once
    assert set(parquet_ids(tmp_path / "out" / "events").values()) == {1}
