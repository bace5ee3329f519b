"""One meaning for lag in seconds: the engine's gauge, `lagless lag --json` and the run
report's timeline give the same figure for one run (within a sampling interval).

The handler holds the first records for 30 s, so the group's committed offset stays put and
the lag in seconds grows one second per second from the first uncommitted record's timestamp.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from lagless.broker.embedded import free_port
from lagless.kafka.reader import read_all
from lagless.kafka.records import timestamp_ms
from lagless.observe.report import fmt, summary
from lagless.observe.timeline import load_timeline
from lagless.produce.producer import run_load
from lagless.produce.workloads import Workload, WorkloadSpec, generate
from tests.conftest import LAGLESS, Cluster, run_cli

pytestmark = pytest.mark.integration


def scrape_labelled(port: int, name: str) -> list[tuple[dict[str, str], float]]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as response:
        text = response.read().decode()
    return [
        (s.labels, s.value)
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == name
    ]


WATCH_S = 0.5  # the engine updates its lag gauges twice a second
TIMELINE_S = 1.0  # the recorder samples once a second


def test_gauge_lag_json_and_report_agree(
    cluster: Cluster, make_topic: Callable[..., str], group: str, tmp_path: Path
) -> None:
    topic = make_topic(partitions=1)
    spec = WorkloadSpec(workload=Workload.JOBS, sleep_ms=(30_000, 30_000), seed=3)
    assert run_load(cluster.conf, topic, generate(spec), count=3).produced == 3
    head_ms = min(timestamp_ms(m) or 0 for m in read_all(cluster.conf, topic))
    port = free_port()
    run_dir = tmp_path / "run"
    command = [
        LAGLESS, "consume", "--topic", topic, "--group", group, "--handler", "sleep",
        "--ordering", "unordered", "--on-failure", "skip", "--commit-interval", "0.2",
        "--session-timeout-ms", "6000", "--heartbeat-ms", "1500",
        "--metrics-port", str(port), "--record", str(run_dir),
    ]  # fmt: skip
    env = {**os.environ, "LAGLESS_BOOTSTRAP": cluster.bootstrap}
    proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        gauge, seen_at = 0.0, 0.0
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and gauge < 2.0:
            time.sleep(0.3)
            try:
                samples = scrape_labelled(port, "lagless_lag_seconds")
            except OSError:
                continue
            seen_at = time.time()
            gauge = max((v for labels, v in samples if labels.get("group") == group), default=0)
        assert gauge >= 2.0, "the gauge never showed the held records"
        expected = seen_at - head_ms / 1000
        assert expected - WATCH_S - 0.5 <= gauge <= expected + 0.1  # by definition
        before = time.time()
        lag = run_cli("lag", "--group", group, "--topic", topic, "--json", cluster=cluster)
        after = time.time()
        assert lag.returncode == 0, lag.stderr
        doc = json.loads(lag.stdout)
        (part,) = doc["partitions"]
        assert part["lag"] == 3 and part["committed"] in (None, 0)
        assert before - head_ms / 1000 - 0.1 <= part["lag_seconds"] <= after - head_ms / 1000
        # without --topic, a group with members that has not committed yet is awaited
        watch = run_cli("lag", "--group", group, "--watch", "--iterations", "1", "--json",
                        cluster=cluster)  # fmt: skip
        assert watch.returncode == 0, watch.stderr
        waiting = json.loads(watch.stdout)
        assert waiting["status"] == "WAITING"
        assert waiting["active"] is True and waiting["partitions"] == []
    finally:
        proc.kill()
        proc.wait(timeout=10)
    timeline = [s for s in load_timeline(run_dir) if s.lag_seconds > 0]
    assert timeline, "the timeline recorded no lag"
    for sample in timeline:  # what the report plots and tabulates
        expected = sample.ts - head_ms / 1000
        assert expected - WATCH_S - TIMELINE_S <= sample.lag_seconds <= expected + 0.1, sample
    rows = dict(summary(load_timeline(run_dir)))
    top = max(s.lag_seconds for s in timeline)
    assert rows["lag (seconds), max / at end"].startswith(fmt(top, " s"))
    assert top >= gauge - 0.1  # the report saw at least what the gauge showed mid-run
