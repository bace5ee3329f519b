"""A real `lagless consume` run: metrics scraped over HTTP, its timeline made a report."""

from __future__ import annotations

import os
import subprocess
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from lagless.broker.embedded import free_port
from lagless.observe.report import PLOT_IDS
from lagless.observe.timeline import load_timeline
from lagless.produce.producer import run_load
from lagless.produce.workloads import Workload, WorkloadSpec, generate
from tests.chartspecs import specs
from tests.conftest import LAGLESS, Cluster, run_cli

pytestmark = pytest.mark.integration

RECORDS = 300


def scrape(port: int) -> dict[str, float]:
    """Sample name (+ le for buckets) -> value summed over the other labels."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as response:
        text = response.read().decode()
    out: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            key = f"{s.name}{{le={s.labels['le']}}}" if "le" in s.labels else s.name
            out[key] = out.get(key, 0.0) + s.value
    return out


def test_consume_metrics_scraped_and_run_reported(
    cluster: Cluster, make_topic: Callable[..., str], group: str, tmp_path: Path
) -> None:
    topic = make_topic(partitions=2)
    spec = WorkloadSpec(workload=Workload.JOBS, sleep_ms=(1, 3), seed=1)
    assert run_load(cluster.conf, topic, generate(spec), count=RECORDS).produced == RECORDS
    port = free_port()
    run_dir = tmp_path / "run"
    command = [
        LAGLESS, "consume", "--topic", topic, "--group", group, "--handler", "sleep",
        "--ordering", "unordered", "--on-failure", "skip", "--until-idle", "4",
        "--session-timeout-ms", "6000", "--heartbeat-ms", "1500",
        "--metrics-port", str(port), "--record", str(run_dir), "--json",
    ]  # fmt: skip
    env = {**os.environ, "LAGLESS_BOOTSTRAP": cluster.bootstrap}
    proc = subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        seen: dict[str, float] = {}
        deadline = time.monotonic() + 40
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                seen = scrape(port)
            except OSError:
                seen = {}
            if seen.get("lagless_records_processed_total") == RECORDS:
                break
            time.sleep(0.2)
        stdout, stderr = proc.communicate(timeout=40)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, stderr
    assert seen.get("lagless_records_processed_total") == RECORDS, seen
    # the latency histogram counts every record, in buckets; sleeps of 1-3 ms plus the wait
    assert seen["lagless_e2e_latency_seconds_count"] == RECORDS
    assert seen["lagless_e2e_latency_seconds_bucket{le=+Inf}"] == RECORDS
    assert seen["lagless_e2e_latency_seconds_bucket{le=0.001}"] < RECORDS
    assert seen["lagless_processing_seconds_count"] == RECORDS
    assert '"processed": 300' in stdout

    samples = load_timeline(run_dir)
    assert len(samples) >= 3
    assert samples[-1].processed == RECORDS
    assert any(s.events for s in samples)  # the partitions were assigned: a rebalance event
    result = run_cli("report", str(run_dir))
    assert result.returncode == 0, result.stderr
    html = (run_dir / "report.html").read_text()
    assert list(specs(html)) == list(PLOT_IDS)
    assert "300" in html
