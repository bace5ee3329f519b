"""`lagless run` publishes each handler's status in the state directory while it runs, as
`lagless consume` does, and answers /status over HTTP beside /metrics (a list, one object per
handler), so `lagless ui` knows who owns which partition (the embedded broker does not answer
DescribeGroups with members)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from lagless.broker.embedded import free_port
from lagless.kafka.admin import committed_offsets
from lagless.kafka.offsets import topic_ranges
from lagless.observe.instance import live_instances
from lagless.testing import TestKafka
from tests.conftest import LAGLESS, Cluster, unique
from tests.integration.engine_helpers import GROUP_FLAGS, REPO
from tests.integration.test_app_cli import app_env, lagless_run

pytestmark = pytest.mark.integration


def test_lagless_run_publishes_each_handlers_status(
    lagless_kafka: TestKafka, tmp_path: Path
) -> None:
    source, out = lagless_kafka.topic(3), lagless_kafka.topic(3)
    lagless_kafka.produce(source, [f"r{i}" for i in range(300)])
    group = lagless_kafka.group()
    home = tmp_path / "home"
    cmd = lagless_run(lagless_kafka, source, out, group)
    cmd[3:3] = ["--state-dir", str(home)]  # a global option: its own registry of instances
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
        env={**app_env(source, out), "LAGLESS_TEST_SLEEP_MS": "20"},
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 90
        owned: set[int] = set()
        while owned != {0, 1, 2}:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline, f"owned {owned} (not all 3 partitions)"
            mine = [d for d in live_instances(home) if d.get("group") == group]
            owned = {p["partition"] for d in mine for p in d["partitions"] if p["topic"] == source}
            time.sleep(0.3)
        assert len(mine) == 1 and mine[0]["pid"] == proc.pid
    finally:
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=90)
    assert proc.returncode == 0, stderr
    assert [d for d in live_instances(home) if d.get("group") == group] == []  # removed at stop


TWO_GROUPS = "tests.integration.app_helpers.two_groups:app"
PER_PARTITION = 15


def fill(cluster: Cluster, topic: str, partitions: int) -> None:
    """PER_PARTITION records in every partition of ``topic`` (each partition has a position)."""
    producer = Producer(cluster.conf)
    for p in range(partitions):
        for i in range(PER_PARTITION):
            producer.produce(topic, f"r{p}-{i}".encode(), partition=p)
    assert producer.flush(30) == 0


@dataclass(frozen=True)
class TwoGroups:
    """The two-handler app's topics (3 and 2 partitions, PER_PARTITION records in each), its
    groups (one per handler: first, second) and the port of its metrics and /status."""

    topics: tuple[str, str]
    groups: tuple[str, str]
    port: int

    @classmethod
    def make(cls, cluster: Cluster, make_topic: Callable[..., str]) -> TwoGroups:
        topics = (make_topic(3), make_topic(2))
        for topic, n in zip(topics, (3, 2), strict=True):
            fill(cluster, topic, n)
        return cls(topics, (unique("g-first"), unique("g-second")), free_port())

    def run(self, cluster: Cluster, home: Path) -> subprocess.Popen[str]:
        """``lagless run`` of the app, its state directory ``home``."""
        (a, b), (ga, gb) = self.topics, self.groups
        env = {**os.environ, "LAGLESS_TEST_A": a, "LAGLESS_TEST_B": b,
               "LAGLESS_TEST_GROUP_A": ga, "LAGLESS_TEST_GROUP_B": gb}  # fmt: skip
        env.pop("LAGLESS_BOOTSTRAP", None)
        flags = [*GROUP_FLAGS, "--commit-interval", "0.5", "--metrics-port", str(self.port)]
        cmd = [LAGLESS, "-b", cluster.bootstrap, "--state-dir", str(home), "run", TWO_GROUPS,
               *flags]  # fmt: skip
        return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                cwd=REPO, env=env)  # fmt: skip


def get_status(port: int) -> Any:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/status", timeout=10) as reply:
        assert reply.headers["Content-Type"] == "application/json"
        return json.loads(reply.read())


def test_lagless_run_serves_every_handlers_status_over_http(
    cluster: Cluster, make_topic: Callable[..., str], tmp_path: Path
) -> None:
    app = TwoGroups.make(cluster, make_topic)
    topics, groups, port = app.topics, app.groups, app.port
    proc = app.run(cluster, tmp_path / "home")
    ends = {
        topic: {r.partition: r.end for r in topic_ranges(cluster.conf, topic)} for topic in topics
    }
    assert all(e == PER_PARTITION for t in topics for e in ends[t].values()), ends

    def settled() -> list[dict[str, Any]] | None:
        """Both handlers hold every partition of their topic, consumed to the end, committed."""
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        try:
            docs = get_status(port)
        except OSError:
            return None  # not serving yet
        assert isinstance(docs, list) and len(docs) == 2, docs  # one object per handler
        for doc, topic, group in zip(docs, topics, groups, strict=True):
            at = {p["partition"]: p["position"] for p in doc["partitions"]}
            done = {p["partition"]: p["first_unfinished"] for p in doc["partitions"]}
            committed = committed_offsets(cluster.conf, group, [topic])
            if not (at == done == ends[topic] == {p: o for (_, p), o in committed.items()}):
                return None
        return docs

    try:
        docs = None
        deadline = time.monotonic() + 90
        while docs is None:
            assert time.monotonic() < deadline, f"not settled: {get_status(port)}"
            docs = settled()
            time.sleep(0.3)
        for doc, name, topic, group in zip(docs, ("first", "second"), topics, groups, strict=True):
            assert (doc["handler"], doc["group"], doc["topics"]) == (name, group, [topic])
            assert doc["pid"] == proc.pid and doc["client_id"].endswith(f"-{proc.pid}-{name}")
            # the partitions it owns are the broker's partitions of its topic, nothing else
            assert {(p["topic"], p["partition"]) for p in doc["partitions"]} == {
                (topic, p) for p in ends[topic]}  # fmt: skip
            assert all(p["since"] is not None and p["in_flight"] == 0 for p in doc["partitions"])
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as reply:
            text = reply.read().decode()
        assert 'handler="first"' in text and 'handler="second"' in text
    finally:
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=90)
    assert proc.returncode == 0, stderr
    assert "/status" in stderr  # announced beside /metrics
