"""The pipeline's bookkeeping: triggers, config, progress -> group offsets and metrics."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from lagless.errors import ConfigError
from lagless.observe.metrics import Metrics
from lagless.spark.connector.kafka_conf import java_options
from lagless.spark.examples.events import events_config
from lagless.spark.pipeline import Trigger, short_error
from lagless.spark.pipeline.progress import (
    BatchCounts,
    BatchReport,
    PartitionCount,
    ProgressTracker,
)


@dataclass
class Source:
    endOffset: str  # noqa: N815 (Spark's names)
    latestOffset: str  # noqa: N815


@dataclass
class Progress:
    """The fields of a StreamingQueryProgress the tracker reads."""

    name: str
    batchId: int  # noqa: N815
    sources: list[Source] = field(default_factory=list)
    batchDuration: int = 1000  # noqa: N815
    processedRowsPerSecond: float = 100.0  # noqa: N815
    durationMs: dict[str, int] = field(default_factory=dict)  # noqa: N815


def progress(name: str, batch: int, end: dict[str, int], latest: dict[str, int]) -> Progress:
    return Progress(name, batch, [Source(json.dumps({"t": end}), json.dumps({"t": latest}))])


def test_trigger_parsing() -> None:
    assert Trigger.parse("available-now") == Trigger(available_now=True)
    assert Trigger.parse("processing-time=5s").interval_s == 5
    assert Trigger.parse("processing-time=500ms").interval_s == 0.5
    assert Trigger.parse("processing-time=2m").interval_s == 120
    for bad in ("sometimes", "processing-time=", "processing-time=-1s", "processing-time=0s"):
        with pytest.raises(ConfigError, match="--trigger"):
            Trigger.parse(bad)


def test_config_validation_is_one_line() -> None:
    base: dict[str, Any] = {
        "topic": "t",
        "output": Path("o"),
        "checkpoint": Path("c"),
        "kafka": {"bootstrap.servers": "h:1"},
    }
    config = events_config(**base)
    assert config.dlq_name == "t-dlq"
    assert config.table_path == "o/events"
    uri = events_config(
        **{**base, "output": "s3a://bucket/lake/", "checkpoint": "hdfs://nn:8020/ck"}
    )
    assert (uri.table_path, uri.checkpoint) == ("s3a://bucket/lake/events", "hdfs://nn:8020/ck")
    assert uri.aggregates_state == "hdfs://nn:8020/ck/aggregates-state"
    assert events_config(**{**base, "output": "file:///tmp/o"}).table_path == (
        "file:///tmp/o/events"
    )
    for bad, match in [
        ({"master": "yarn"}, "--master"),
        ({"trigger": "x"}, "--trigger"),
        ({"max_offsets_per_trigger": 0}, "max-offsets-per-trigger"),
        ({"dlq_topic": "t"}, "must differ"),
        ({"kafka": {}}, "bootstrap"),
        ({"output": "s3a://"}, "output"),
    ]:
        with pytest.raises(ConfigError, match=match) as info:
            events_config(**{**base, **bad})
        assert "\n" not in str(info.value)


def test_group_gets_the_minimum_over_queries_and_never_moves_back() -> None:
    metrics = Metrics()
    tracker = ProgressTracker(metrics, ["ev", "agg"], main_query="ev", kafka={}, group=None)
    tracker.progress(progress("ev", 0, {"0": 10, "1": 5}, {"0": 30, "1": 5}))
    assert tracker.committed() == {}  # the aggregates query has not reported yet
    tracker.progress(progress("agg", 0, {"0": 8, "1": 5}, {"0": 30, "1": 5}))
    assert tracker.committed() == {("t", 0): 8, ("t", 1): 5}
    tracker.progress(progress("agg", 1, {"0": 30, "1": 5}, {"0": 30, "1": 5}))
    assert tracker.committed() == {("t", 0): 10, ("t", 1): 5}
    tracker.progress(progress("ev", 0, {"0": 4, "1": 5}, {"0": 30, "1": 5}))  # a late event
    assert tracker.committed() == {("t", 0): 10, ("t", 1): 5}
    lag = {
        s.labels["partition"]: s.value
        for m in metrics.registry.collect()
        for s in m.samples
        if s.name == "lagless_lag_records"
    }
    assert lag == {"0": 20, "1": 0}


def test_batches_are_counted_and_reported_once() -> None:
    metrics, reports = Metrics(), []
    tracker = ProgressTracker(
        metrics, ["ev"], main_query="ev", kafka={}, dlq_topic="d", on_batch=reports.append
    )
    counts = (PartitionCount("t", 0, "ok", 90, None), PartitionCount("t", 0, "dlq", 10, 1.0))
    tracker.batch_written(BatchCounts(0, counts))
    tracker.progress(progress("ev", 0, {"0": 100}, {"0": 150}))
    tracker.progress(progress("ev", 0, {"0": 100}, {"0": 150}))  # the final sync repeats it
    assert reports == [BatchReport(0, 100, 90, 10, 1000, 100.0, 50)]
    assert "batch 0: 100 rows (90 valid, 10 to DLQ)" in reports[0].line()
    totals = tracker.totals()
    assert (totals.batches, totals.input_rows, totals.valid_rows, totals.dlq_rows) == (
        1,
        100,
        90,
        10,
    )
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for m in metrics.registry.collect()
        for s in m.samples
    }
    assert samples[("lagless_batches_total", ())] == 1
    # one meaning in the engine and the pipeline: the topic the dead-lettered records came from
    assert samples[("lagless_dlq_records_total", (("topic", "t"),))] == 10
    key = (
        "lagless_records_processed_total",
        (("outcome", "ok"), ("partition", "0"), ("topic", "t")),
    )
    assert samples[key] == 90


def test_the_final_pass_waits_for_a_report_the_listener_is_delivering() -> None:
    """The listener thread claims batch 0's report and is still in ``on_batch`` when the run's
    last pass over ``recentProgress`` sees the same batch: that pass must not return first
    (a run whose summary counts rows while ``on_batch`` has not heard of them yet)."""
    delivering, release = threading.Event(), threading.Event()
    reports: list[BatchReport] = []

    def slow_append(report: BatchReport) -> None:
        delivering.set()
        release.wait(5)
        reports.append(report)

    tracker = ProgressTracker(Metrics(), ["ev"], main_query="ev", kafka={}, on_batch=slow_append)
    tracker.batch_written(BatchCounts(0, (PartitionCount("t", 0, "ok", 5, None),)))
    listener = threading.Thread(
        target=tracker.progress, args=(progress("ev", 0, {"0": 5}, {"0": 5}),)
    )
    listener.start()
    assert delivering.wait(5)
    final_pass = threading.Thread(
        target=tracker.progress, args=(progress("ev", 0, {"0": 5}, {"0": 5}),)
    )
    final_pass.start()
    final_pass.join(0.3)
    assert final_pass.is_alive()  # waits for the listener's delivery
    release.set()
    final_pass.join(5)
    listener.join(5)
    assert [r.input_rows for r in reports] == [5]


def test_short_error_takes_the_lagless_message_from_a_jvm_trace() -> None:
    trace = (
        'org.apache.spark.SparkException: Job aborted.\n  File "x.py", line 3\n'
        "lagless.spark.connector.offsets.DataLossError: t[0] records [3, 6) were deleted "
        "before read; "
        "set failOnDataLoss=false\n\tat org.apache..."
    )
    assert short_error(Exception(trace)).startswith("t[0] records [3, 6) were deleted")
    assert short_error(Exception("\n  boom  \nmore")) == "boom"


def test_jvm_kafka_options() -> None:
    opts = java_options(
        {
            "bootstrap.servers": "h:1",
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "PLAIN",
            "sasl.username": "u",
            "sasl.password": "p",
            "ssl.ca.location": "/ca.pem",
        }
    )
    assert opts["kafka.bootstrap.servers"] == "h:1"
    assert opts["kafka.security.protocol"] == "SASL_SSL"
    assert 'PlainLoginModule required username="u" password="p"' in opts["kafka.sasl.jaas.config"]
    assert opts["kafka.ssl.truststore.location"] == "/ca.pem"


def test_source_and_trigger_durations_per_batch_of_the_main_query() -> None:
    tracker = ProgressTracker(Metrics(), ["ev", "other"], main_query="ev", kafka={})
    timings = {"latestOffset": 12, "getBatch": 30, "addBatch": 900, "triggerExecution": 1000}
    for batch in (1, 0):  # the listener may deliver them out of order
        p = progress("ev", batch, {"0": 10}, {"0": 10})
        p.durationMs = {k: v * (batch + 1) for k, v in timings.items()}
        tracker.progress(p)
    other = progress("other", 0, {"0": 10}, {"0": 10})
    other.durationMs = {"triggerExecution": 5}
    tracker.progress(other)
    assert tracker.source_ms() == [42, 84]  # latestOffset + getBatch, in batch order
    assert tracker.trigger_ms() == [1000, 2000]  # triggerExecution; other queries left out
