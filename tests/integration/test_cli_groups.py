"""`lagless group list|describe|reset-offsets|delete` on the real broker, cross-checked with
kafka-python (a client lagless does not use) reading and writing the same group."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from confluent_kafka import Consumer
from kafka import KafkaAdminClient
from kafka import TopicPartition as KTopicPartition
from kafka.structs import OffsetAndMetadata

from tests.conftest import Cluster, run_cli

pytestmark = pytest.mark.integration


@pytest.fixture
def kafka_python(cluster: Cluster) -> Iterator[KafkaAdminClient]:
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, client_id="cross-check")
    yield admin
    admin.close()


def kp_committed(admin: KafkaAdminClient, group: str) -> dict[tuple[str, int], int]:
    offsets = admin.list_group_offsets({group: None})[group]
    return {(tp.topic, tp.partition): om.offset for tp, om in offsets.items() if om.offset >= 0}


def kp_commit(admin: KafkaAdminClient, group: str, offsets: dict[tuple[str, int], int]) -> None:
    wanted = {KTopicPartition(t, p): OffsetAndMetadata(o, "", -1) for (t, p), o in offsets.items()}
    admin.alter_group_offsets(group, wanted)


def fill(cluster: Cluster, topic: str, counts: list[int], tmp_path: Path, tag: str = "") -> None:
    """``counts[p]`` records into partition p, through produce --from."""
    lines = [
        json.dumps({"key": f"k{p}-{i}", "value": f"{tag}{p}-{i}", "partition": p})
        for p, n in enumerate(counts)
        for i in range(n)
    ]
    path = tmp_path / f"records{tag}.jsonl"
    path.write_text("\n".join(lines) + "\n")
    proc = run_cli("produce", "--topic", topic, "--from", str(path), cluster=cluster)
    assert proc.returncode == 0, proc.stderr
    assert f"produced {sum(counts)} records" in proc.stdout


def cli_json(cluster: Cluster, *args: str) -> dict:  # type: ignore[type-arg]
    proc = run_cli(*args, "--json", cluster=cluster)
    assert proc.returncode == 0, proc.stderr
    doc: dict = json.loads(proc.stdout)  # type: ignore[type-arg]
    return doc


def test_describe_agrees_with_kafka_python(
    cluster: Cluster,
    make_topic: Callable[..., str],
    group: str,
    kafka_python: KafkaAdminClient,
    tmp_path: Path,
) -> None:
    topic = make_topic(partitions=3)
    fill(cluster, topic, [5, 7, 9], tmp_path)
    kp_commit(kafka_python, group, {(topic, 0): 2, (topic, 1): 7})
    doc = cli_json(cluster, "group", "describe", group)
    assert doc["group"] == group and doc["state"] in ("Empty", "Dead")
    parts = {p["partition"]: p for p in doc["partitions"]}
    committed = kp_committed(kafka_python, group)
    assert committed == {(topic, 0): 2, (topic, 1): 7}
    for p, end in enumerate([5, 7, 9]):
        row = parts[p]
        assert row["topic"] == topic
        assert row["current_offset"] == committed.get((topic, p))
        assert row["log_end_offset"] == end
        assert row["lag"] == end - (committed.get((topic, p)) or 0)
        assert row["consumer_id"] is None and row["host"] is None and row["client_id"] is None
    assert parts[1]["lag_s"] == 0.0  # caught up
    assert 0.0 <= parts[0]["lag_s"] < 60  # the first uncommitted record was just produced
    text = run_cli("group", "describe", group, cluster=cluster)
    assert text.returncode == 0, text.stderr
    header = text.stdout.splitlines()[0].split()
    assert header == [
        "GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "LAG-SECONDS",
        "CONSUMER-ID", "HOST", "CLIENT-ID",
    ]  # fmt: skip
    assert text.stdout.splitlines()[3].split()[:6] == [group, topic, "2", "-", "9", "9"]


@pytest.mark.slow  # ten CLI runs, each a process of ~2 s on the loaded 2-core machine
def test_reset_offsets_dry_run_then_execute_agree_with_kafka_python(
    cluster: Cluster,
    make_topic: Callable[..., str],
    group: str,
    kafka_python: KafkaAdminClient,
    tmp_path: Path,
) -> None:
    topic = make_topic(partitions=2)
    fill(cluster, topic, [3, 4], tmp_path, tag="a")
    time.sleep(1.2)
    middle = datetime.now(UTC).isoformat()
    time.sleep(1.2)
    fill(cluster, topic, [2, 2], tmp_path, tag="b")
    kp_commit(kafka_python, group, {(topic, 0): 1, (topic, 1): 1})

    def reset(*how: str) -> dict[tuple[str, int], int]:
        doc = cli_json(cluster, "group", "reset-offsets", group, "--topic", topic, *how)
        assert doc["executed"] == ("--execute" in how)
        return {(p["topic"], p["partition"]): p["new"] for p in doc["partitions"]}

    planned = reset("--to-offset", "4")
    assert planned == {(topic, 0): 4, (topic, 1): 4}
    assert kp_committed(kafka_python, group) == {(topic, 0): 1, (topic, 1): 1}  # dry run
    cases = [
        (("--to-offset", "4"), {0: 4, 1: 4}),
        (("--shift-by", "-3"), {0: 1, 1: 1}),
        (("--shift-by", "100"), {0: 5, 1: 6}),  # clamped to the end
        (("--to-earliest",), {0: 0, 1: 0}),
        (("--to-latest",), {0: 5, 1: 6}),
        (("--to-datetime", middle), {0: 3, 1: 4}),  # the first record at or after the time
        (("--by-duration", "PT1H"), {0: 0, 1: 0}),  # everything is younger than an hour
        (("--to-datetime", "2999-01-01T00:00:00Z"), {0: 5, 1: 6}),  # after the last: the end
    ]
    for how, want in cases:
        expected = {(topic, p): o for p, o in want.items()}
        assert reset(*how, "--execute") == expected, how
        assert kp_committed(kafka_python, group) == expected, how
    text = run_cli("group", "reset-offsets", group, "--topic", topic, "--to-earliest",
                   cluster=cluster)  # fmt: skip
    assert text.returncode == 0
    assert "dry run" in text.stderr
    assert text.stdout.splitlines()[1].split() == [group, topic, "0", "5", "0"]


def test_a_group_with_members_is_not_reset_nor_deleted(
    cluster: Cluster, make_topic: Callable[..., str], group: str, kafka_python: KafkaAdminClient
) -> None:
    topic = make_topic(partitions=2)
    kp_commit(kafka_python, group, {(topic, 0): 0})
    consumer = Consumer(
        {**cluster.conf, "group.id": group, "session.timeout.ms": 6000,
         "heartbeat.interval.ms": 1000, "enable.auto.commit": False}
    )  # fmt: skip
    consumer.subscribe([topic])
    try:
        deadline = time.monotonic() + 20
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(0.2)
        assert consumer.assignment(), "the consumer never joined"
        listed = {g["group"]: g for g in cli_json(cluster, "group", "list")["groups"]}
        assert listed[group]["state"] == "Stable"
        # what the broker does not answer is unknown, not zero, and no member id as protocol
        if cluster.embedded:
            assert (listed[group]["members"], listed[group]["protocol"]) == (None, None)
            text = run_cli("group", "list", cluster=cluster).stdout.splitlines()
            assert [group, "Stable", "?", "?"] in [line.split() for line in text]
            described = run_cli("group", "describe", group, "--members", cluster=cluster)
            assert "its members: not answered by the broker" in described.stderr
        else:
            assert listed[group]["members"] == 1 and listed[group]["protocol"]
        proc = run_cli("group", "reset-offsets", group, "--topic", topic, "--to-latest",
                       "--execute", cluster=cluster)  # fmt: skip
        assert proc.returncode == 1
        assert "is Stable, not Empty: stop its consumers" in proc.stderr
        assert kp_committed(kafka_python, group) == {(topic, 0): 0}
        proc = run_cli("group", "delete", group, cluster=cluster)
        assert proc.returncode == 1 and "active members" in proc.stderr
    finally:
        consumer.close()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        proc = run_cli("group", "delete", group, cluster=cluster)
        if proc.returncode == 0:
            break
        time.sleep(0.5)
    assert proc.returncode == 0, proc.stderr
    assert group not in {g["group"] for g in cli_json(cluster, "group", "list")["groups"]}
    assert group not in {g["group_id"] for g in kafka_python.list_groups()}
