"""``--until-idle`` means idle: everything assigned consumed to its end, nothing held, and
something assigned; topics that do not exist are one line at start."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest
from confluent_kafka import TopicPartition

from lagless.engine import Record, run_engine
from lagless.engine.watch.idle import consumed_to_end
from lagless.kafka.clients import make_consumer
from tests.conftest import Cluster, run_cli
from tests.integration.engine_helpers import GROUP_FLAGS, engine_config, produce_jobs

pytestmark = pytest.mark.integration


def test_consumed_to_end_follows_the_position_and_the_fetched_high_watermark(
    cluster: Cluster, make_topic: Callable[..., str], group: str
) -> None:
    topic = make_topic(partitions=2)
    produce_jobs(cluster.conf, topic, 10, keys=1)  # one key: all in one partition
    consumer = make_consumer(
        {**cluster.conf, "group.id": group, "enable.auto.commit": False, "fetch.wait.max.ms": 50}
    )
    consumer.assign([TopicPartition(topic, 0, 0), TopicPartition(topic, 1, 0)])
    try:
        got = 0
        deadline = time.monotonic() + 30
        while got < 3 and time.monotonic() < deadline:
            got += len(consumer.consume(3 - got, 1.0))
        parts = {(topic, 0): None, (topic, 1): None}
        assert not consumed_to_end(consumer, parts, latest=False), "7 records not read yet"
        while time.monotonic() < deadline:
            consumer.consume(100, 0.5)
            if consumed_to_end(consumer, parts, latest=False):
                break
        assert consumed_to_end(consumer, parts, latest=False)
        assert not consumed_to_end(consumer, {}, latest=False), "nothing assigned is not idle"
    finally:
        consumer.close()


def test_a_member_left_with_no_partition_exits_once_settled(
    cluster: Cluster, make_topic: Callable[..., str], group: str
) -> None:
    topic = make_topic(partitions=1)
    produce_jobs(cluster.conf, topic, 40)
    first_running = threading.Event()
    stop_first = threading.Event()

    def slow(record: Record) -> None:
        first_running.set()
        time.sleep(0.2)

    first = threading.Thread(
        target=run_engine,
        args=(cluster.conf, engine_config(topic, group, until_idle_s=None), slow),
        kwargs={"stop": stop_first},
        daemon=True,
    )
    first.start()
    try:
        assert first_running.wait(60)
        stop_second = threading.Event()
        threading.Timer(12.0, stop_second.set).start()
        begun = time.monotonic()
        summary = run_engine(
            cluster.conf, engine_config(topic, group, until_idle_s=1.0), slow, stop=stop_second
        )
        # one partition, kept by the first: a completed rebalance leaves the second none, so it
        # is idle after max(until_idle_s, two heartbeats) settled so, not before it joined
        assert time.monotonic() - begun < 11, "a member left with no partition waits for none"
        assert summary.processed == 0 and summary.rebalances >= 1 and not stop_second.is_set()
    finally:
        stop_first.set()
        first.join(60)


@pytest.mark.parametrize("dlq", [False, True])
def test_missing_topics_are_one_line_at_start(
    cluster: Cluster, make_topic: Callable[..., str], dlq: bool
) -> None:
    existing = make_topic(partitions=1)
    args = (
        ["--topic", existing, "--dlq-topic", "no-such-dlq"]
        if dlq
        else ["--topic", "no-such-topic", "--on-failure", "skip"]
    )
    result = run_cli(
        "consume", *args, "--group", "g", "--until-idle", "1", *GROUP_FLAGS,
        cluster=cluster, timeout=60,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("\n") == 1 and "does not exist" in result.stderr
    assert ("no-such-dlq" if dlq else "no-such-topic") in result.stderr
