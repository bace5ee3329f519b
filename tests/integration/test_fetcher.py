"""The split consumer (a group member plus the C fetcher) against the real broker: its messages
read as confluent-kafka's for every kind of record, pause/resume/positions/watermarks are the
fetcher's, the engine fetches with it, and a fallback says why."""

from __future__ import annotations

import gc
import logging
import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import Consumer, Message, Producer, TopicPartition

from lagless.engine import EngineConfig
from lagless.engine.intake.client import engine_consumer
from lagless.engine.record import Record
from lagless.kafka import fetcher
from lagless.kafka.compat import create_topic
from lagless.kafka.fetcher import SplitConsumer, open_split
from lagless.kafka.records import HeaderNameError
from tests.conftest import Cluster, unique, wait_for
from tests.integration.spark_helpers import BIG, produce_edge_records
from tests.integration.spark_helpers.raw_produce import produce_raw_headers

pytestmark = [pytest.mark.integration]


@pytest.fixture(autouse=True)
def _built(monkeypatch: pytest.MonkeyPatch) -> None:
    if fetcher.module()[0] is None:
        pytest.skip(f"the C fetcher cannot run here: {fetcher.module()[1]}")
    monkeypatch.setenv(fetcher.SWITCH, "1")  # (the default) whatever the environment says


def group_conf(cluster: Cluster) -> dict[str, Any]:
    return {
        **cluster.conf,
        "group.id": f"fetch-{uuid.uuid4().hex[:8]}",
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "session.timeout.ms": 6000,
        "heartbeat.interval.ms": 1000,
    }


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
    n = produce_edge_records(cluster.bootstrap, topic, partitions=2)
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


def test_poll_and_consume_return_every_record_beside_the_members_error_events(
    cluster: Cluster, make_topic: Callable[..., str]
) -> None:
    """A subscription to a topic that does not exist: the member reports it as error events,
    which come beside fetched records; none of those may be dropped."""
    topic = make_topic(partitions=1)
    producer = Producer({"bootstrap.servers": cluster.bootstrap})
    for i in range(50):
        producer.produce(topic, value=b"%d" % i, partition=0)
    assert producer.flush(30) == 0
    split = open_split(group_conf(cluster))
    assert split is not None
    offsets: list[int] = []
    errors: list[Any] = []
    try:
        split.subscribe([topic, f"missing-{uuid.uuid4().hex[:8]}"])

        def more() -> bool:
            got = split.consume(1, 0.2) if len(offsets) % 2 else [split.poll(0.2)]
            assert len(got) <= 1
            for msg in filter(None, got):
                (offsets if msg.error() is None else errors).append(
                    msg.offset() if msg.error() is None else msg.error()
                )
            return len(offsets) >= 50 and bool(errors)

        wait_for(more, 30, "50 records and the member's error event")
    finally:
        split.close()
    assert offsets == list(range(50))
    assert "missing-" in str(errors[0])


def test_odd_calls_answer_as_confluent_kafka_does(cluster: Cluster) -> None:
    split = open_split(group_conf(cluster))
    assert split is not None
    try:
        assert split.consume(0, 0) == []
        started = time.monotonic()
        assert split.consume(1, float("nan")) == []  # no wait
        assert time.monotonic() - started < 1
    finally:
        split.close()
    mod, _ = fetcher.module()
    reader = mod.Fetcher(fetcher.fetcher_conf(group_conf(cluster)))
    try:
        for garbage in ([1], [["t", 0, 0]], "t"):
            with pytest.raises(TypeError, match="list of"):
                reader.assign(garbage)
    finally:
        reader.close()
    with pytest.raises(RuntimeError, match="closed"):
        reader.consume(1, 0)


def test_a_consume_inside_a_consume_is_refused(
    cluster: Cluster, make_topic: Callable[..., str]
) -> None:
    """A finalizer the garbage collector runs while a consume makes its messages calls the same
    fetcher: refused with a RuntimeError, the outer consume unharmed (it used to free the batch
    under it)."""
    topic = make_topic(partitions=1)
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "linger.ms": 5})
    for i in range(3000):  # headers read through librdkafka's API: objects the collector counts
        producer.produce(topic, value=None, headers=[("h", b"%d" % i)], partition=0)
    assert producer.flush(30) == 0
    mod, _ = fetcher.module()
    reader = mod.Fetcher(fetcher.fetcher_conf(group_conf(cluster)))
    reader.assign([(topic, 0, 0)])
    refused: list[str] = []

    class Finalized:
        armed = True

        def __del__(self) -> None:
            if Finalized.armed:
                Finalized.armed = False
                try:
                    reader.consume(100, 0.5)
                except RuntimeError as exc:
                    refused.append(str(exc))

    got: list[Any] = []
    thresholds = gc.get_threshold()
    try:
        wait_for(lambda: bool(reader.consume(1, 0.2)), 30, "the first record")  # fetching
        time.sleep(1)  # the rest arrives
        gc.set_threshold(50, 1, 1)
        cycle = Finalized()
        cycle.self = cycle  # type: ignore[attr-defined]
        del cycle
        got = reader.consume(3000, 5)
    finally:
        gc.set_threshold(*thresholds)
        reader.close()
    assert refused == ["the fetcher is in use (a consume is running)"]
    assert [m.offset() for m in got] == list(range(1, 1 + len(got))) and len(got) > 100


def test_the_engine_fetches_with_it_unless_switched_off(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = EngineConfig.build(topics=("t",), group="g", on_failure="stop")
    for on in ("1", None):  # None: unset, the default
        if on is None:
            monkeypatch.delenv(fetcher.SWITCH)
        else:
            monkeypatch.setenv(fetcher.SWITCH, on)
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
    assert open_split(group_conf(cluster)) is None  # not asked for: nothing said
    monkeypatch.setenv(fetcher.SWITCH, "1")
    with_callback = {**group_conf(cluster), "oauth_cb": lambda config: ("token", 0.0)}
    for _ in range(2):
        assert open_split(with_callback) is None
    auto_commit = {k: v for k, v in group_conf(cluster).items() if k != "enable.auto.commit"}
    assert open_split(auto_commit) is None  # librdkafka's default: on
    said = [r.getMessage() for r in caplog.records]
    assert said == [
        "fetching with confluent-kafka's consumer (slower): option 'oauth_cb' is a function, "
        "not a string",
        "fetching with confluent-kafka's consumer (slower): enable.auto.commit is on (the "
        "member, which fetches nothing, would commit nothing)",
    ]


def test_a_newly_assigned_topic_is_fetched_at_once(mock_bootstrap: str) -> None:
    """The split consumer tells its fetcher of a topic before assigning it one of its
    partitions: fetched at once, not from librdkafka's next topic scan (up to a second later,
    which lengthened every first handover to a fresh instance). On the mock cluster: Tansu
    holds each fetch up to fetch.wait.max.ms, which hides the scan."""
    conf = {"bootstrap.servers": mock_bootstrap}
    topics = [unique("known") for _ in range(5)]
    producer = Producer({**conf, "linger.ms": 0})
    for topic in topics:
        create_topic(conf, topic, 1)
        producer.produce(topic, value=b"v", partition=0)
    assert producer.flush(30) == 0
    split = open_split({**conf, "group.id": unique("g"), "enable.auto.commit": False,
                        "fetch.wait.max.ms": 50})  # fmt: skip
    assert split is not None
    waited: list[float] = []
    try:
        time.sleep(1.2)  # the fetcher's start-up metadata is long done
        for topic in topics:
            started = time.monotonic()
            split.incremental_assign([TopicPartition(topic, 0, 0)])
            got: list[Any] = []
            collect(split, got, 1, f"the first record of {topic}")
            waited.append(time.monotonic() - started)
    finally:
        split.close()
    assert sorted(waited)[2] < 0.4, waited  # (scan-paced: 0-1 s, uniformly, after the first)
