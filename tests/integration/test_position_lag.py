"""The engine's position-lag gauge, scraped from a real `lagless consume`: log end - the
consumer's position per owned partition, what the lab's max_position_lag_records sums."""

from __future__ import annotations

import itertools
import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from lagless.broker.embedded import free_port
from lagless.engine.events import EVENTS_FILE, EventKind
from lagless.lab.model import read_events
from lagless.lab.positions import parse_position_lag, scrape
from lagless.produce.producer import AccountedProducer
from lagless.produce.workloads import Workload, WorkloadSpec, generate
from tests.conftest import LAGLESS, Cluster

pytestmark = pytest.mark.integration

RECORDS = 400


def test_position_lag_gauge_per_owned_partition(
    cluster: Cluster, make_topic: Callable[..., str], group: str, tmp_path: Path
) -> None:
    # One series per partition the consumer owns, read from its event log: on a loaded
    # machine Tansu can leave this lone consumer one partition of the three for its whole run
    # (range over two members, as if a join it retried had left a second one that never
    # expires); --until-idle outlasts a session timeout so a next generation can give it all.
    # Partition 2 stays empty: librdkafka keeps no position for it (nothing is ever returned),
    # yet its consumer is at its end, so its gauge is 0, not missing.
    topic = make_topic(partitions=3)
    spec = WorkloadSpec(workload=Workload.JOBS, sleep_ms=(2, 2), seed=1)
    producer = AccountedProducer(cluster.conf)
    for i, record in enumerate(itertools.islice(generate(spec), RECORDS)):
        producer.send(topic, record, partition=i % 2)
    assert producer.flush() == 0 and producer.stats.delivered == RECORDS
    port = free_port()
    command = [
        LAGLESS, "-v", "consume", "--topic", topic, "--group", group, "--handler", "sleep",
        "--ordering", "partition", "--on-failure", "skip", "--until-idle", "30",
        "--session-timeout-ms", "6000", "--heartbeat-ms", "1500", "--metrics-port", str(port),
        "--record", str(tmp_path),
    ]  # fmt: skip
    env = {**os.environ, "LAGLESS_BOOTSTRAP": cluster.bootstrap}
    proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    seen: list[dict[int, int]] = []
    mine: set[int] = set()  # what it owned at the last sample
    last = ""
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            text = scrape(port)
            if text is not None:
                found = parse_position_lag(text, topic)
                if found:
                    seen.append(found)
                    last = text
                    mine = owned(tmp_path / EVENTS_FILE)
                if mine and set(found) == mine and not any(found.values()) and len(seen) > 3:
                    break  # every partition it owns read to its end
            time.sleep(0.1)
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=60)
    assert seen, "no lagless_position_lag_records series was exposed"
    history = [s for i, s in enumerate(seen) if i == 0 or s != seen[i - 1]]
    why = f"samples (changes only): {history}; consume's log: {err.decode()[-2000:]}"
    assert mine and mine <= {0, 1, 2}, why
    assert set(seen[-1]) == mine, why  # one series per owned partition, none for the others
    assert not any(seen[-1].values()), why  # read to the end: the position is the log end
    if 2 in mine:  # the empty partition's lag too: nothing to do there, not unknown
        assert gauge(last, "lagless_lag_records", topic, 2) == 0, last
    assert all(0 <= lag <= RECORDS for sample in seen for lag in sample.values())


def owned(events: Path) -> set[int]:
    """The partitions a consumer owns now, by its event log (``--record``)."""
    mine: set[int] = set()
    for event in read_events(events):
        if event.kind is EventKind.ASSIGNED:
            mine |= set(event.partitions)
        elif event.kind in (EventKind.REVOKED, EventKind.LOST):
            mine -= set(event.partitions)
    return mine


def gauge(
    text: str, name: str, topic: str | None = None, partition: int | None = None
) -> float | None:
    """The value of the first series ``name`` of ``topic`` and ``partition`` (where given) in a
    Prometheus text exposition."""
    want = {"topic": topic, "partition": None if partition is None else str(partition)}
    want = {key: value for key, value in want.items() if value is not None}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and want.items() <= sample.labels.items():
                return float(sample.value)
    return None


def test_a_paused_partitions_end_and_lag_follow_what_is_produced_meanwhile(
    cluster: Cluster, make_topic: Callable[..., str], group: str
) -> None:
    # A paused partition is not fetched, so librdkafka's cached end stops: the end offset and
    # the lags built on it must still follow the records produced while it is paused.
    topic = make_topic(partitions=1)
    spec = WorkloadSpec(workload=Workload.JOBS, sleep_ms=(300, 300), seed=1)
    records = generate(spec)
    producer = AccountedProducer(cluster.conf)
    for record in itertools.islice(records, 30):
        producer.send(topic, record, partition=0)
    assert producer.flush() == 0
    port = free_port()
    command = [
        LAGLESS, "consume", "--topic", topic, "--group", group, "--handler", "sleep",
        "--ordering", "partition", "--on-failure", "skip", "--max-pending", "5",
        "--session-timeout-ms", "6000", "--heartbeat-ms", "1500", "--metrics-port", str(port),
    ]  # fmt: skip
    env = {**os.environ, "LAGLESS_BOOTSTRAP": cluster.bootstrap}
    proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        text = wait_for(port, paused)
        assert gauge(text, "lagless_end_offset", topic, 0) == 30, text
        # the first records produced while it is paused may still come with a fetch that was
        # on its way; after them it is fetched no more
        for record in itertools.islice(records, 200):
            producer.send(topic, record, partition=0)
        assert producer.flush() == 0
        text = wait_for(port, lambda t: (gauge(t, "lagless_end_offset", topic, 0) or 0) >= 230)
        time.sleep(1.0)
        for record in itertools.islice(records, 200):
            producer.send(topic, record, partition=0)
        assert producer.flush() == 0
        text = wait_for(port, lambda t: (gauge(t, "lagless_end_offset", topic, 0) or 0) >= 430)
        assert paused(text), text  # still paused: not fetched since
        lag = gauge(text, "lagless_lag_records", topic, 0)
        position_lag = gauge(text, "lagless_position_lag_records", topic, 0)
        assert lag is not None and 400 <= lag <= 430, text
        assert position_lag is not None and position_lag >= 200, text
    finally:
        proc.terminate()
        proc.communicate(timeout=60)


def wait_for(port: int, ready: Callable[[str], bool], within: float = 45.0) -> str:
    """The first scrape of ``port`` for which ``ready`` holds (fails after ``within`` s)."""
    deadline = time.monotonic() + within
    text = ""
    while time.monotonic() < deadline:
        text = scrape(port) or ""
        if text and ready(text):
            return text
        time.sleep(0.2)
    raise AssertionError(f"not seen within {within:.0f} s; last scrape:\n{text}")


def paused(text: str) -> bool:
    """Whether the consumer's scrape says one partition is paused now."""
    return gauge(text, "lagless_paused_partitions") == 1.0
