"""The run timeline: sampling a Metrics registry, percentiles from buckets, reading back."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import pytest

from lagless.errors import LaglessError
from lagless.observe.metrics import Metrics
from lagless.observe.timeline import (
    Recorder,
    Snapshot,
    load_timeline,
    make_sample,
    quantile,
    snapshot,
)


def test_quantile_interpolates_inside_the_bucket() -> None:
    # 10 observations <= 1, 10 more in (1, 2]: the median is the top of the first bucket,
    # the 75th percentile halfway through the second.
    buckets = {1.0: 10.0, 2.0: 20.0, math.inf: 20.0}
    assert quantile(0.5, buckets) == pytest.approx(1.0)
    assert quantile(0.75, buckets) == pytest.approx(1.5)
    assert quantile(0.25, buckets) == pytest.approx(0.5)


def test_quantile_in_the_inf_bucket_is_the_highest_bound() -> None:
    assert quantile(0.99, {1.0: 1.0, 2.0: 1.0, math.inf: 10.0}) == pytest.approx(2.0)


def test_quantile_of_empty_histogram_is_none() -> None:
    assert quantile(0.5, {}) is None
    assert quantile(0.5, {1.0: 0.0, math.inf: 0.0}) is None


def test_snapshot_sums_counters_and_takes_max_lag_seconds() -> None:
    m = Metrics()
    m.records_processed.labels("t", "0", "ok").inc(3)
    m.records_processed.labels("t", "1", "dlq").inc(2)
    m.lag_records.labels("t", "0").set(5)
    m.lag_records.labels("t", "1").set(7)
    m.lag_seconds.labels("t", "0").set(1.5)
    m.lag_seconds.labels("t", "1").set(4.0)
    m.rebalances.labels("assign").inc()
    snap = snapshot(m)
    assert snap.processed == 5
    assert snap.lag_records == 12
    assert snap.lag_seconds == 4.0
    assert snap.callbacks == {"assign": 1.0}


def test_sample_is_over_the_interval() -> None:
    m = Metrics()
    m.records_processed.labels("t", "0", "ok").inc(100)
    for _ in range(100):
        m.e2e_latency.labels("t").observe(5.0)  # the previous interval: slow
    before = snapshot(m)
    m.records_processed.labels("t", "0", "ok").inc(50)
    for _ in range(50):
        m.e2e_latency.labels("t").observe(0.003)  # this interval: fast
    m.partitions_assigned.inc(3)
    m.rebalances.labels("assign").inc()
    m.rebalance_seconds.observe(0.4)
    sample = make_sample(snapshot(m), before, ts=1000.0, seconds=2.0)
    assert sample.throughput == pytest.approx(25.0)
    assert sample.processed == 150
    assert sample.e2e_p99 is not None and 0.0025 < sample.e2e_p99 <= 0.005
    assert len(sample.events) == 1
    event = sample.events[0]
    assert (event.assigned, event.revoked, event.lost) == (3, 0, 0)
    assert event.callbacks == {"assign": 1}
    assert event.durations == 1 and event.duration_seconds == pytest.approx(0.4)


def test_no_event_when_rebalance_counters_are_still() -> None:
    assert make_sample(Snapshot(), Snapshot(), ts=1.0, seconds=1.0).events == []


def test_recorder_writes_one_line_per_interval(tmp_path: Path) -> None:
    m = Metrics()
    with Recorder(m, tmp_path / "run", interval=0.1) as rec:
        for _ in range(5):
            m.records_processed.labels("t", "0", "ok").inc(10)
            time.sleep(0.06)
    samples = load_timeline(tmp_path / "run")
    assert rec.samples_written == len(samples) >= 3
    assert samples[-1].processed == 50
    assert sum(s.throughput * s.interval for s in samples) == pytest.approx(50, rel=0.01)
    assert [s.ts for s in samples] == sorted(s.ts for s in samples)


def test_recorder_starts_the_file_afresh(tmp_path: Path) -> None:
    (tmp_path / "timeline.jsonl").write_text("garbage\n")
    with Recorder(Metrics(), tmp_path, interval=5.0):
        pass
    assert len(load_timeline(tmp_path)) == 1


def test_malformed_line_names_the_line(tmp_path: Path) -> None:
    good = json.dumps({"ts": 1.0, "throughput": 2.0})
    path = tmp_path / "timeline.jsonl"
    path.write_text(f"{good}\n{good}\n{{not json\n")
    with pytest.raises(LaglessError, match=r"timeline.jsonl:3: malformed") as info:
        load_timeline(path)
    assert "\n" not in str(info.value)


def test_wrong_field_type_names_the_field(tmp_path: Path) -> None:
    path = tmp_path / "timeline.jsonl"
    path.write_text(json.dumps({"ts": "yesterday"}) + "\n")
    with pytest.raises(LaglessError, match=r":1: malformed timeline line: ts"):
        load_timeline(path)


def test_missing_timeline_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(LaglessError, match="no timeline"):
        load_timeline(tmp_path)


def test_input_rate_dlq_rate_and_lag_per_partition() -> None:
    m = Metrics()
    m.end_offset.labels("t", "0").set(100)
    m.lag_records.labels("t", "0").set(10)
    before = snapshot(m)
    m.end_offset.labels("t", "0").set(150)  # 50 records written in 2 s
    m.end_offset.labels("t", "1").set(999)  # first seen now: adds nothing to the rate
    m.lag_records.labels("t", "1").set(4)
    m.dlq_records.labels("t").inc(6)
    sample = make_sample(snapshot(m), before, ts=2.0, seconds=2.0)
    assert sample.input_rate == 25.0
    assert sample.dlq_rate == 3.0
    assert sample.lag_partitions == {"t[0]": 10.0, "t[1]": 4.0}
    assert make_sample(Snapshot(), Snapshot(), ts=1.0, seconds=1.0).input_rate is None


def test_recorder_writes_the_run_settings(tmp_path: Path) -> None:
    with Recorder(Metrics(), tmp_path, interval=0.2, settings={"group": "g", "ordering": "key"}):
        pass
    assert json.loads((tmp_path / "run.json").read_text()) == {"group": "g", "ordering": "key"}


def test_short_runs_are_sampled_four_times_per_interval(tmp_path: Path) -> None:
    with Recorder(Metrics(), tmp_path, interval=0.4) as recorder:
        time.sleep(0.75)
    assert recorder.samples_written >= 5  # every 0.1 s in the first seconds, not 0.4 s


def test_percentiles_are_exact_while_recording(tmp_path: Path) -> None:
    m = Metrics()
    for v in range(1, 101):  # nothing kept without a recorder
        m.e2e_latency.labels("t").observe(v)
    assert m.e2e_exact.drain() == ([], True)
    recorder = Recorder(m, tmp_path, interval=60).start()
    try:
        for v in range(1, 101):  # 1..100 s: buckets 90..120 would interpolate p95, p99
            m.e2e_latency.labels("t").observe(float(v))
        sample = recorder.sample()
    finally:
        recorder.stop()
    assert sample is not None and sample.e2e_exact
    assert (sample.e2e_p50, sample.e2e_p95, sample.e2e_p99) == (50.0, 95.0, 99.0)
    assert m.e2e_exact.enabled is False


def test_without_exact_values_percentiles_come_from_buckets() -> None:
    m = Metrics()
    before = snapshot(m)
    for v in range(1, 101):
        m.e2e_latency.labels("t").observe(float(v))
    sample = make_sample(snapshot(m), before, ts=1.0, seconds=1.0)
    assert sample.e2e_exact is False and sample.e2e_p50 is not None
