"""Topics, end offsets and the producer profiles on the real broker."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from confluent_kafka import TopicPartition

from lagless.ids import ID_HEADER
from lagless.kafka.clients import make_consumer, make_producer
from lagless.kafka.offsets import end_offsets, probe_conf, topic_ranges
from lagless.kafka.reader import read_all
from lagless.kafka.records import header
from lagless.produce.producer import run_load
from lagless.produce.profiles import Profile
from lagless.produce.workloads import Workload, WorkloadSpec, generate
from tests.conftest import Cluster, run_cli

pytestmark = pytest.mark.integration


def ids_in(cluster: Cluster, topic: str) -> Counter[str]:
    return Counter((header(m, ID_HEADER) or b"").decode() for m in read_all(cluster.conf, topic))


def test_topic_create_and_describe_cli(cluster: Cluster, topic_name: str) -> None:
    proc = run_cli("topic", "create", topic_name, "--partitions", "3", cluster=cluster)
    assert proc.returncode == 0, proc.stderr
    producer = make_producer(cluster.conf)
    for i in range(10):
        producer.produce(topic_name, b"x", partition=i % 2)
    assert producer.flush(10) == 0
    proc = run_cli("topic", "describe", topic_name, "--json", cluster=cluster)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["records"] == 10
    assert [(p["partition"], p["start"], p["end"]) for p in doc["partitions"]] == [
        (0, 0, 5), (1, 0, 5), (2, 0, 0),
    ]  # fmt: skip
    again = run_cli("topic", "create", topic_name, cluster=cluster)
    assert again.returncode == 1 and "already exists" in again.stderr.lower()


def test_describe_unknown_topic_is_one_line(cluster: Cluster) -> None:
    proc = run_cli("topic", "describe", "no-such-topic-xyz", cluster=cluster)
    assert proc.returncode == 1
    assert proc.stderr.strip() == "lagless: error: topic 'no-such-topic-xyz' does not exist"


@pytest.mark.parametrize("profile", list(Profile))
def test_each_profile_delivers_every_record_exactly_once(
    cluster: Cluster,
    make_topic,
    profile: Profile,  # type: ignore[no-untyped-def]
) -> None:
    topic = make_topic(partitions=3)
    spec = WorkloadSpec(Workload.EVENTS, seed=5, id_prefix=f"{profile}-")
    result = run_load(cluster.conf, topic, generate(spec), count=3000, profile=profile)
    assert (result.produced, result.failed, result.profile) == (3000, 0, profile.value)
    ids = ids_in(cluster, topic)
    assert len(ids) == 3000 and set(ids.values()) == {1}
    assert set(ids) == {f"{profile}-{i}" for i in range(3000)}


def test_end_offsets_are_right_after_multi_record_batches(cluster: Cluster, make_topic) -> None:  # type: ignore[no-untyped-def]
    topic = make_topic(partitions=2)
    producer = make_producer({**cluster.conf, "linger.ms": 200, "batch.size": 1_000_000})
    for round_size in (1, 250, 37):  # a single record, then big batches
        for _ in range(round_size):
            producer.produce(topic, b"v" * 50, partition=0)
        assert producer.flush(10) == 0
    ends = end_offsets(cluster.conf, [(topic, 0), (topic, 1)])
    assert ends == {(topic, 0): 288, (topic, 1): 0}
    # ListOffsets(LATEST) is what the helper must not trust: on the embedded broker it is short
    consumer = make_consumer(probe_conf(cluster.conf))
    _, listed_high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
    consumer.close()
    if cluster.embedded:
        assert listed_high < 288
    assert [r.records for r in topic_ranges(cluster.conf, topic)] == [288, 0]


def test_produce_cli_json_reports_what_was_delivered(cluster: Cluster, make_topic) -> None:  # type: ignore[no-untyped-def]
    topic = make_topic(partitions=2)
    proc = run_cli(
        "produce", "--topic", topic, "--workload", "jobs", "--count", "500", "--sleep-ms", "1:2",
        "--keys", "8", "--profile", "durability", "--json", cluster=cluster,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert set(doc) == {"produced", "failed", "seconds", "records_per_s", "mb_per_s", "profile"}
    assert (doc["produced"], doc["failed"], doc["profile"]) == (500, 0, "durability")
    assert sum(ids_in(cluster, topic).values()) == 500


def test_rate_mode_paces_records(cluster: Cluster, make_topic) -> None:  # type: ignore[no-untyped-def]
    topic = make_topic(partitions=1)
    proc = run_cli(
        "produce", "--topic", topic, "--workload", "events", "--rate", "200", "--duration", "1.5",
        "--bad-fraction", "0.1", "--json", cluster=cluster,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["produced"] == 300
    assert doc["seconds"] >= 1.4
    assert sum(ids_in(cluster, topic).values()) == 300


# a consumer waits --connect-timeout seconds for the cluster at start (5 s unless given)
SLOW_CONSUME = (
    "-b", "127.0.0.1:1", "consume", "t", "--group", "g", "--on-failure", "stop",
    "--connect-timeout", "2",
)  # fmt: skip


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("produce", "--topic", "t", "--workload", "nope", "--count", "1"), "'nope' is not one of"),
        (("produce", "--topic", "t", "--count", "-5"), "--count must be 0 or more"),
        (("produce", "--topic", "t"), "give --count N"),
        (("produce", "--topic", "t", "--count", "5", "--bad-fraction", "2"), "--bad-fraction"),
        (("-b", "127.0.0.1:1", "produce", "--topic", "t", "--count", "5"), "cannot reach Kafka"),
        (SLOW_CONSUME, "cannot reach Kafka at 127.0.0.1:1 within 2 s"),
        (("-b", "nonsense", "topic", "describe", "t"), "not HOST:PORT"),
        (("topic", "create", "t", "--partitions", "0"), "--partitions"),
    ],
)
def test_bad_cli_input_is_one_line_and_non_zero(
    cluster: Cluster, args: tuple[str, ...], needle: str
) -> None:
    proc = run_cli(*args, cluster=cluster)
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr + proc.stdout
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert needle in lines[0]
