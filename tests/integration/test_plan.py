"""`lagless plan` on the embedded broker: small measurements, the real binary."""

from __future__ import annotations

import json
import math
from collections.abc import Callable

import pytest

from lagless.kafka.clients import make_admin
from tests.conftest import Cluster, run_cli

pytestmark = pytest.mark.integration


def test_plan_measures_one_partition_and_sizes_the_topic(
    cluster: Cluster, make_topic: Callable[..., str]
) -> None:
    topic = make_topic(partitions=2)
    result = run_cli(
        "plan", "--topic", topic, "--target-rate", "50000", "--record-bytes", "200",
        "--measure-records", "3000", "--measure-seconds", "5", "--json",
        cluster=cluster, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert {"t_produce", "t_consume", "target_rate", "partitions", "settings"} <= set(doc)
    assert doc["target_rate"] == 50000
    assert doc["t_produce"] > 0 and doc["t_consume"] > 0
    expected = math.ceil(round(max(50000 / doc["t_produce"], 50000 / doc["t_consume"]) * 1.2, 6))
    assert doc["partitions"] == expected
    assert doc["current_partitions"] == 2
    measured = doc["measured"]
    assert measured["produce"]["produced"] == 3000
    assert 0 < measured["consume"]["processed"] <= 3000 and measured["consume"]["failed"] == 0
    assert 150 <= doc["record_bytes"] <= 250
    assert doc["settings"]["consumer"]["fetch.queue.backoff.ms"]["value"] == 5
    # the scratch topic is gone
    topics = make_admin(cluster.conf).list_topics(timeout=10).topics
    assert not [t for t in topics if t.startswith("lagless-plan-")]


def test_plan_bad_input_is_one_line(cluster: Cluster) -> None:
    bad = run_cli("plan", "--topic", "x", "--target-rate", "0", cluster=cluster)
    assert bad.returncode == 2 and "target-rate" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1
    bad = run_cli(
        "plan", "--topic", "x", "--target-rate", "10", "--handler", "nope", cluster=cluster
    )
    assert bad.returncode == 2 and "nope" in bad.stderr


def test_plan_refuses_to_size_from_a_failing_handler(
    cluster: Cluster, make_topic: Callable[..., str]
) -> None:
    """The sleep handler fails on every events record: no plan, one summary line, no flood."""
    topic = make_topic(partitions=1)
    result = run_cli(
        "plan", "--topic", topic, "--target-rate", "1000", "--handler", "sleep",
        "--workload", "events", "--measure-records", "3000", "--measure-seconds", "5",
        cluster=cluster, timeout=60,
    )  # fmt: skip
    assert result.returncode == 1
    assert result.stdout == ""  # no partition count printed
    lines = result.stderr.strip().splitlines()
    assert lines[0].startswith("lagless: measuring with 3,000 events records (--workload)")
    assert len(lines) == 2, result.stderr  # no line per failed record
    assert "the handler failed on" in lines[1] and "no plan from a failing handler" in lines[1]
    assert "DecodeError" in lines[1] and "sleep_ms" in lines[1]
    assert f"{topic}" not in lines[1] and "lagless-plan-" in lines[1]  # the record's coordinates


def test_plan_rejects_sleep_ms_for_records_without_sleep(cluster: Cluster) -> None:
    bad = run_cli("plan", "--topic", "x", "--target-rate", "10", "--sleep-ms", "50:60",
                  cluster=cluster)  # fmt: skip
    assert bad.returncode == 2
    assert "--sleep-ms sets the jobs workload's sleep" in bad.stderr
    assert "records measured are events" in bad.stderr
