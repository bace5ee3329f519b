"""`lagless lag` on the real broker: lag in records and seconds, watch statuses, bad input."""

from __future__ import annotations

import json
import re
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import TopicPartition

from lagless.kafka.admin import alter_committed_offsets, delete_topic
from lagless.kafka.clients import make_consumer, make_producer
from tests.conftest import LAGLESS, Cluster, run_cli, wait_for

pytestmark = pytest.mark.integration

HOUR_MS = 3_600_000


def produce(
    cluster: Cluster, topic: str, counts: dict[int, int], timestamps: dict[int, int] | None = None
) -> None:
    """``counts[p]`` records to partition p; the first record of p gets ``timestamps[p]``."""
    producer = make_producer({**cluster.conf, "linger.ms": 5})
    for partition, count in counts.items():
        for i in range(count):
            kwargs: dict[str, Any] = {}
            if i == 0 and timestamps and partition in timestamps:
                kwargs["timestamp"] = timestamps[partition]
            producer.produce(topic, f"r{i}".encode(), partition=partition, **kwargs)
    assert producer.flush(30) == 0


def lag_json(cluster: Cluster, *args: str) -> list[dict[str, Any]]:
    result = run_cli("lag", *args, "--json", cluster=cluster)
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


def by_partition(doc: dict[str, Any]) -> dict[int, dict[str, Any]]:
    return {p["partition"]: p for p in doc["partitions"]}


def test_lag_is_end_minus_committed(
    cluster: Cluster, make_topic: Callable[..., str], group: str
) -> None:
    topic = make_topic(partitions=3)
    produce(cluster, topic, {0: 50, 1: 30, 2: 20})
    alter_committed_offsets(cluster.conf, group, {(topic, 0): 10, (topic, 1): 30})
    [doc] = lag_json(cluster, "--group", group, "--topic", topic)
    parts = by_partition(doc)
    assert {p: (r["committed"], r["end"], r["lag"]) for p, r in parts.items()} == {
        0: (10, 50, 40),
        1: (30, 30, 0),
        2: (None, 20, 20),  # no commit: counted from the start offset
    }
    assert parts[1]["lag_seconds"] == 0.0
    assert doc["total_lag"] == 60
    # without --topic: every topic the group committed for, same figures
    [found] = lag_json(cluster, "--group", group)
    assert {p: r["lag"] for p, r in by_partition(found).items()} == {0: 40, 1: 0, 2: 20}


def test_lag_in_seconds_is_the_age_of_the_next_record(
    cluster: Cluster, make_topic: Callable[..., str], group: str
) -> None:
    topic = make_topic(partitions=2)
    now_ms = int(time.time() * 1000)
    # partition 0: the next unconsumed record (offset 0) is an hour old;
    # partition 1: the group has read past the old record, the next one is fresh.
    produce(cluster, topic, {0: 5, 1: 5}, timestamps={0: now_ms - HOUR_MS, 1: now_ms - HOUR_MS})
    alter_committed_offsets(cluster.conf, group, {(topic, 0): 0, (topic, 1): 1})
    [doc] = lag_json(cluster, "--group", group, "--topic", topic)
    parts = by_partition(doc)
    assert parts[0]["lag"] == 5 and parts[1]["lag"] == 4
    assert 3600 <= parts[0]["lag_seconds"] < 3660
    assert 0 <= parts[1]["lag_seconds"] < 60
    assert doc["max_lag_seconds"] == parts[0]["lag_seconds"]


def test_table_output(cluster: Cluster, make_topic: Callable[..., str], group: str) -> None:
    topic = make_topic(partitions=1)
    produce(cluster, topic, {0: 7})
    alter_committed_offsets(cluster.conf, group, {(topic, 0): 3})
    result = run_cli("lag", "--group", group, "--topic", topic, cluster=cluster)
    assert result.returncode == 0, result.stderr
    assert f"group {group}: total lag 4 records" in result.stderr
    table = [line.split() for line in result.stdout.splitlines()]
    assert table[0] == [
        "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "LAG-SECONDS"
    ]  # fmt: skip
    # the lag in seconds in the cells group describe prints: one format for both
    described = run_cli("group", "describe", group, cluster=cluster).stdout.splitlines()
    assert table[1][:5] == [topic, "0", "3", "7", "4"]
    assert described[1].split()[1:6] == table[1][:5]
    for seconds in (described[1].split()[6], table[1][5]):  # seconds, one decimal, both
        assert re.fullmatch(r"\d+\.\d", seconds), seconds


@pytest.fixture
def stuck_consumer(cluster: Cluster, group: str) -> Iterator[Callable[[str, int], None]]:
    """A live group member that commits ``offset`` on every partition once, then never again."""
    stop = threading.Event()
    threads: list[threading.Thread] = []

    def start(topic: str, offset: int) -> None:
        consumer = make_consumer(
            {
                **cluster.conf,
                "group.id": group,
                "session.timeout.ms": 6000,
                "heartbeat.interval.ms": 1500,
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
            }
        )
        consumer.subscribe([topic])
        deadline = time.monotonic() + 30
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(0.2)
        assignment = consumer.assignment()
        assert assignment, "the consumer got no partitions"
        consumer.commit(
            offsets=[TopicPartition(topic, tp.partition, offset) for tp in assignment],
            asynchronous=False,
        )
        consumer.pause(assignment)

        def keep_alive() -> None:
            while not stop.is_set():
                consumer.poll(0.2)
            consumer.close()

        thread = threading.Thread(target=keep_alive, daemon=True)
        thread.start()
        threads.append(thread)

    yield start
    stop.set()
    for thread in threads:
        thread.join(10)


def watch(cluster: Cluster, group: str, topic: str, iterations: int) -> list[dict[str, Any]]:
    return lag_json(
        cluster, "--group", group, "--topic", topic, "--watch",
        "--interval", "0.5", "--window", "1.5", "--iterations", str(iterations),
    )  # fmt: skip


def test_watch_reports_stall_when_commits_freeze_with_lag(
    cluster: Cluster,
    make_topic: Callable[..., str],
    group: str,
    stuck_consumer: Callable[[str, int], None],
) -> None:
    topic = make_topic(partitions=2)
    produce(cluster, topic, {0: 20, 1: 20})
    stuck_consumer(topic, 5)
    looks = watch(cluster, group, topic, iterations=6)
    assert len(looks) == 6
    assert looks[0]["status"] == "OK" and looks[0]["complete"] < 1  # no full window yet
    last = looks[-1]
    assert last["active"] is True
    assert last["complete"] == 1
    assert {p["partition"]: (p["lag"], p["status"]) for p in last["partitions"]} == {
        0: (15, "STALL"),
        1: (15, "STALL"),
    }
    assert last["status"] == "STALL"


def test_watch_reports_stop_when_nobody_commits(
    cluster: Cluster, make_topic: Callable[..., str], group: str
) -> None:
    topic = make_topic(partitions=1)
    produce(cluster, topic, {0: 10})
    alter_committed_offsets(cluster.conf, group, {(topic, 0): 4})
    looks = watch(cluster, group, topic, iterations=5)
    assert looks[-1]["active"] is False
    assert [p["status"] for p in looks[-1]["partitions"]] == ["STOP"]
    # behind with no members is never OK, not even before a full window was seen
    assert looks[0]["complete"] < 1 and looks[0]["status"] == "STOP"


def one_line_error(result: Any) -> str:
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return str(lines[0])


def test_unknown_group_is_one_line(cluster: Cluster, make_topic: Callable[..., str]) -> None:
    topic = make_topic(partitions=1)
    line = one_line_error(run_cli("lag", "--group", "no-such-group-x1", cluster=cluster))
    assert "no-such-group-x1" in line and "not found" in line
    line = one_line_error(
        run_cli("lag", "--group", "no-such-group-x2", "--topic", topic, "--watch", cluster=cluster)
    )
    assert "not found" in line


def test_unknown_topic_is_one_line(cluster: Cluster, group: str) -> None:
    line = one_line_error(
        run_cli("lag", "--group", group, "--topic", "no-such-topic-x1", cluster=cluster)
    )
    assert "no-such-topic-x1" in line and "does not exist" in line


def test_watch_lives_through_topics_deleted_while_it_fetches(
    cluster: Cluster, make_topic: Callable[..., str], group: str, tmp_path: Path
) -> None:
    """On Tansu a client fetching a topic while it is deleted dies (SIGSEGV) or waits: the watch's
    fetches run in a child process there, and a look that fails is said on stderr."""
    kept = make_topic(partitions=1)
    produce(cluster, kept, {0: 10})
    alter_committed_offsets(cluster.conf, group, {(kept, 0): 3})
    out, err = tmp_path / "out.jsonl", tmp_path / "err.txt"
    args = [LAGLESS, "-b", cluster.bootstrap, "lag", group, "--watch", "--interval", "0.1",
            "--json"]  # fmt: skip
    with out.open("wb") as stdout, err.open("wb") as stderr:
        proc = subprocess.Popen(args, stdout=stdout, stderr=stderr)

    def topics() -> set[str]:
        lines = out.read_text().splitlines()
        return {p["topic"] for p in json.loads(lines[-1])["partitions"]} if lines else set()

    try:
        for i in range(4):
            doomed = make_topic(partitions=24)
            produce(cluster, doomed, dict.fromkeys(range(24), 20))
            alter_committed_offsets(cluster.conf, group, {(doomed, p): 5 for p in range(24)})
            wait_for(lambda: doomed in topics(), 30, f"topic {i} watched")  # noqa: B023
            delete_topic(cluster.conf, doomed, 15.0)
            wait_for(lambda: topics() == {kept}, 30, f"topic {i} gone")
            assert proc.poll() is None, f"lag --watch died: {err.read_text()[-2000:]}"
        last = json.loads(out.read_text().splitlines()[-1])
        assert [(p["topic"], p["lag"]) for p in last["partitions"]] == [(kept, 7)]
    finally:
        proc.terminate()
        proc.wait(30)
    assert "Traceback" not in err.read_text()
