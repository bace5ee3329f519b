"""The split consumer (a group member plus the C fetcher) against the real broker: its messages
read as confluent-kafka's for every kind of record, pause/resume/positions/watermarks are the
fetcher's, the engine fetches with it, and a fallback says why."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import Consumer, Message, Producer, TopicPartition

from lagless.engine import EngineConfig
from lagless.engine.intake.client import engine_consumer
from lagless.engine.record import Record
from lagless.kafka import fetcher
from lagless.kafka.fetcher import SplitConsumer, open_split
from lagless.kafka.records import HeaderNameError
from tests.conftest import Cluster, wait_for
from tests.integration.spark_helpers import EDGE_HEADERS
from tests.integration.spark_helpers.raw_produce import produce_raw_headers

pytestmark = [pytest.mark.integration]

BIG = bytes(range(256)) * 400  # 100 KiB


@pytest.fixture(autouse=True)
def _built() -> None:
    if fetcher.module()[0] is None:
        pytest.skip(f"the C fetcher cannot run here: {fetcher.module()[1]}")


def group_conf(cluster: Cluster) -> dict[str, Any]:
    return {
        **cluster.conf,
        "group.id": f"fetch-{uuid.uuid4().hex[:8]}",
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "session.timeout.ms": 6000,
        "heartbeat.interval.ms": 1000,
    }


def produce_edges(cluster: Cluster, topic: str) -> int:
    """Every header case, null/empty/binary keys and values, a 100 KiB value, given times."""
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "linger.ms": 5})
    keys: list[bytes | None] = [None, b"", b"k", bytes(range(256))]
    values: list[bytes | None] = [b"v", None, b"", BIG]
    n = 0
    for round_ in range(3):
        for i in range(9):
            extra = {"timestamp": 1_700_000_000_000 + i} if i % 2 else {}
            producer.produce(
                topic,
                key=keys[i % len(keys)],
                value=values[(i + round_) % len(values)],
                headers=EDGE_HEADERS[i % len(EDGE_HEADERS)],
                partition=i % 2,
                **extra,
            )
            n += 1
    assert producer.flush(30) == 0
    return n


def fields(msg: Any) -> tuple[Any, ...]:
    return (
        msg.error(),
        msg.topic(),
        msg.partition(),
        msg.offset(),
        msg.key(),
        msg.value(),
        msg.timestamp(),
        msg.headers(),
        len(msg),
    )


def collect(reader: Any, into: list[Any], n: int, what: str) -> None:
    """Consume from ``reader`` into ``into`` until it holds ``n`` records (error events are
    not kept)."""

    def more() -> bool:
        into.extend(m for m in reader.consume(100, 0.2) if m.error() is None)
        return len(into) >= n

    wait_for(more, 30, what)


def read_split(split: SplitConsumer, topic: str, n: int) -> list[Any]:
    got: list[Any] = []
    split.subscribe([topic])
    collect(split, got, n, f"{n} records through the split consumer")
    return got


def test_fetched_messages_read_as_confluent_kafkas(
    cluster: Cluster, make_topic: Callable[..., str]
) -> None:
    topic = make_topic(partitions=2)
    n = produce_edges(cluster, topic)
    split = open_split(group_conf(cluster))
    assert isinstance(split, SplitConsumer)
    try:
        ours = read_split(split, topic, n)
    finally:
        split.close()
    plain = Consumer(group_conf(cluster))
    theirs: list[Message] = []
    try:
        plain.assign([TopicPartition(topic, p, 0) for p in (0, 1)])
        collect(plain, theirs, n, "the records through confluent-kafka's consumer")
    finally:
        plain.close()
    key = lambda m: (m.partition(), m.offset())  # noqa: E731
    assert len(ours) == n
    assert [fields(m) for m in sorted(ours, key=key)] == [
        fields(m) for m in sorted(theirs, key=key)
    ]
    by_coordinates = {key(m): m for m in theirs}
    for msg in ours:  # what a handler sees: the same records
        assert Record.from_message(msg) == Record.from_message(by_coordinates[key(msg)])
    assert BIG in {m.value() for m in ours} and None in {m.key() for m in ours}


def test_a_header_name_not_utf8_raises_when_read_as_with_confluent_kafka(
    cluster: Cluster, make_topic: Callable[..., str]
) -> None:
    topic = make_topic(partitions=1)
    produce_raw_headers(cluster.bootstrap, topic, [[(b"ok", b"x")], [(b"\xff\xfe", b"x")]])
    split = open_split(group_conf(cluster))
    assert split is not None
    try:
        good, bad = sorted(read_split(split, topic, 2), key=lambda m: m.offset())
    finally:
        split.close()
    assert Record.from_message(good).headers == (("ok", b"x"),)
    record = Record.from_message(bad)  # made: its headers are read when used
    assert record.value == b"v"
    with pytest.raises(HeaderNameError, match="not UTF-8") as err:
        list(record.headers)
    assert (err.value.coordinates.topic, err.value.coordinates.offset) == (topic, 1)


def test_pause_resume_positions_and_watermarks_are_the_fetchers(
    cluster: Cluster, make_topic: Callable[..., str]
) -> None:
    topic = make_topic(partitions=2)
    producer = Producer({"bootstrap.servers": cluster.bootstrap})
    for i in range(40):
        producer.produce(topic, value=b"%d" % i, partition=i % 2)
    assert producer.flush(30) == 0
    conf = {**group_conf(cluster), "partition.assignment.strategy": "cooperative-sticky"}
    split = open_split(conf)
    assert split is not None
    p0, p1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    try:
        got = read_split(split, topic, 40)
        assert sorted((m.partition(), m.offset()) for m in got) == sorted(
            (p, o) for p in (0, 1) for o in range(20)
        )
        assert [tp.offset for tp in split.position([p0, p1])] == [20, 20]
        assert split.get_watermark_offsets(p0, cached=True)[1] == 20  # type: ignore[index]
        split.pause([p0])
        for i in range(10):
            producer.produce(topic, value=b"late %d" % i, partition=i % 2)
        assert producer.flush(30) == 0
        later: list[Any] = []
        collect(split, later, 5, "partition 1's new records")
        for _ in range(5):
            later.extend(split.consume(100, 0.2))
        assert {m.partition() for m in later} == {1}  # partition 0 is paused
        split.resume([p0])
        collect(split, later, 10, "partition 0's new records")
        assert sorted(m.offset() for m in later if m.partition() == 0) == list(range(20, 25))
        assert [tp.offset for tp in split.position([p0, p1])] == [25, 25]
        last = max(later, key=lambda m: (m.partition(), m.offset()))
        split.commit(message=last, asynchronous=False)  # one past it, by the member
        [stored] = split.committed([TopicPartition(topic, last.partition())], timeout=10)
        assert (stored.partition, stored.offset) == (1, 25)
        with pytest.raises(ValueError, match="given offsets or a message only"):
            split.commit()  # the member's own positions mean nothing
    finally:
        split.close()


def test_the_engine_fetches_with_it(cluster: Cluster, monkeypatch: pytest.MonkeyPatch) -> None:
    config = EngineConfig.build(topics=("t",), group="g", on_failure="stop")
    split = engine_consumer(config.consumer_conf(cluster.conf))
    split.close()
    assert isinstance(split, SplitConsumer)
    monkeypatch.setenv(fetcher.SWITCH, "0")
    plain = engine_consumer(config.consumer_conf(cluster.conf))
    plain.close()
    assert isinstance(plain, Consumer)


def test_a_fallback_says_why_once(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="lagless.kafka.fetcher")
    monkeypatch.setenv(fetcher.SWITCH, "0")
    assert open_split(group_conf(cluster)) is None
    monkeypatch.delenv(fetcher.SWITCH)
    with_callback = {**group_conf(cluster), "oauth_cb": lambda config: ("token", 0.0)}
    for _ in range(2):
        assert open_split(with_callback) is None
    said = [r.getMessage() for r in caplog.records]
    assert said == [
        "fetching with confluent-kafka's consumer (slower): option 'oauth_cb' is a function, "
        "not a string"
    ]
