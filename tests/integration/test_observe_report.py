"""`lagless report` on a recorded run: the real binary, a Recorder on a Metrics we drive."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from lagless.observe.metrics import Metrics
from lagless.observe.report import PLOT_IDS
from lagless.observe.timeline import Recorder, load_timeline
from tests.chartspecs import assert_self_contained, drawn_lines, specs
from tests.conftest import run_cli

pytestmark = pytest.mark.integration


def record_run(directory: Path) -> None:
    """About a second of a run: records, latencies, lag, and one rebalance."""
    metrics = Metrics()
    with Recorder(metrics, directory, interval=0.1):
        for step in range(10):
            metrics.records_processed.labels("t", "0", "ok").inc(100)
            for i in range(100):
                metrics.e2e_latency.labels("t").observe(0.001 * (i + step))
            metrics.lag_records.labels("t", "0").set(500 - 50 * step)
            metrics.lag_seconds.labels("t", "0").set(2.0 - 0.2 * step)
            if step == 5:
                metrics.rebalances.labels("assign").inc()
                metrics.partitions_assigned.inc(3)
                metrics.rebalance_seconds.observe(0.3)
            time.sleep(0.1)


def test_report_of_a_recorded_run_has_every_plot(tmp_path: Path) -> None:
    run = tmp_path / "run"
    record_run(run)
    samples = load_timeline(run)
    assert len(samples) >= 5
    assert sum(len(s.events) for s in samples) == 1
    result = run_cli("report", str(run))
    assert result.returncode == 0, result.stderr
    html = (run / "report.html").read_text()
    plots = specs(html)
    assert list(plots) == list(PLOT_IDS)
    # throughput, lag x2, latency x3, in flight...
    assert sum(drawn_lines(spec) for spec in plots.values()) >= 5
    assert [m["label"] for m in plots["plot-rebalances"]["markers"]] == ["+3 assigned 300 ms"]
    assert_self_contained(html)
    assert "1,000" in html  # records processed, in the summary


def test_report_to_a_chosen_file(tmp_path: Path) -> None:
    run = tmp_path / "run"
    record_run(run)
    out = tmp_path / "out.html"
    result = run_cli("report", str(run / "timeline.jsonl"), "--output", str(out))
    assert result.returncode == 0, result.stderr
    assert out.read_text().startswith("<!DOCTYPE html>")


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ('{"ts": 1.0}\n{"ts": 2.0, "throughput": \n', "timeline.jsonl:2: malformed"),
        ('{"ts": 1.0}\n[1, 2]\n', "timeline.jsonl:2: malformed"),
        ('{"throughput": 1.0}\n', "timeline.jsonl:1: malformed timeline line: ts"),
        ("", "no samples"),
    ],
)
def test_bad_timeline_is_one_line(tmp_path: Path, content: str, expected: str) -> None:
    (tmp_path / "timeline.jsonl").write_text(content)
    result = run_cli("report", str(tmp_path))
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert expected in result.stderr
    assert not (tmp_path / "report.html").exists()


def test_missing_directory_is_one_line(tmp_path: Path) -> None:
    result = run_cli("report", str(tmp_path / "nope"))
    assert result.returncode == 1
    assert result.stderr.strip().count("\n") == 0 and "no timeline" in result.stderr
