"""The Prometheus endpoint of a Metrics registry, scraped over HTTP."""

from __future__ import annotations

import socket
import urllib.request
from collections.abc import Iterator

import pytest
from prometheus_client.parser import text_string_to_metric_families

from lagless.broker.embedded import free_port
from lagless.errors import LaglessError
from lagless.observe.metrics import Metrics


def scrape(port: int) -> dict[str, list[tuple[dict[str, str], float]]]:
    """Sample name -> [(labels, value)] from http://127.0.0.1:port/metrics."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        text = response.read().decode()
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out.setdefault(sample.name, []).append((sample.labels, sample.value))
    return out


@pytest.fixture
def served() -> Iterator[tuple[Metrics, int]]:
    metrics = Metrics()
    port = free_port()
    server = metrics.serve(port)
    yield metrics, port
    server.shutdown()


def test_scrape_shows_counts_gauges_and_histograms(served: tuple[Metrics, int]) -> None:
    metrics, port = served
    metrics.records_processed.labels("jobs", "0", "ok").inc(7)
    metrics.records_processed.labels("jobs", "1", "dlq").inc(2)
    metrics.lag_records.labels("jobs", "0").set(42)
    metrics.in_flight.set(5)
    for seconds in (0.002, 0.02, 0.2):
        metrics.e2e_latency.labels("jobs").observe(seconds)
    metrics.rebalances.labels("assign").inc()
    got = scrape(port)
    processed = {
        (labels["partition"], labels["outcome"]): value
        for labels, value in got["lagless_records_processed_total"]
    }
    assert processed == {("0", "ok"): 7.0, ("1", "dlq"): 2.0}
    assert got["lagless_lag_records"] == [({"topic": "jobs", "partition": "0"}, 42.0)]
    assert got["lagless_in_flight"] == [({}, 5.0)]
    assert got["lagless_e2e_latency_seconds_count"] == [({"topic": "jobs"}, 3.0)]
    buckets = {labels["le"]: value for labels, value in got["lagless_e2e_latency_seconds_bucket"]}
    assert buckets["0.0025"] == 1.0 and buckets["0.025"] == 2.0 and buckets["+Inf"] == 3.0
    assert got["lagless_rebalances_total"] == [({"kind": "assign"}, 1.0)]


def test_every_metric_is_exposed(served: tuple[Metrics, int]) -> None:
    _metrics, port = served
    names = set(scrape(port))
    for name in (
        "lagless_in_flight", "lagless_paused_partitions", "lagless_partitions_assigned_total",
        "lagless_partitions_revoked_total", "lagless_partitions_lost_total",
        "lagless_commits_total", "lagless_batches_total",
        "lagless_rebalance_callback_seconds_count",
    ):  # fmt: skip
        assert name in names


def test_two_registries_do_not_mix() -> None:
    a, b = Metrics(), Metrics()
    a.commits.inc(3)
    assert b.registry.get_sample_value("lagless_commits_total") == 0
    assert a.registry.get_sample_value("lagless_commits_total") == 3


def test_a_taken_port_is_one_line_error() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(LaglessError, match=f"cannot serve metrics on 127.0.0.1:{port}"):
            Metrics().serve(port)


def test_exposed_samples_carry_the_group_label() -> None:
    from prometheus_client import generate_latest

    from lagless.observe.metrics import Metrics

    m = Metrics(group="orders")
    m.lag_seconds.labels("t", "0").set(1.5)
    m.dlq_records.labels("t").inc()
    text = generate_latest(m.exposed()).decode()
    assert 'lagless_lag_seconds{group="orders",partition="0",topic="t"} 1.5' in text
    assert 'lagless_dlq_records_total{group="orders",topic="t"} 1.0' in text
    assert Metrics().exposed() is not None
    plain = generate_latest(Metrics().registry).decode()
    assert "group=" not in plain
