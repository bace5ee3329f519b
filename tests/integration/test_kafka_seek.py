"""Offsets by time and partition ends, on Tansu (searched in the records, ends from fetches)
and on librdkafka's mock cluster (ends from ListOffsets; by time searched: it answers -1)."""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import closing

from confluent_kafka import Producer

from lagless.kafka import compat
from lagless.kafka.offsets import OffsetProbe
from lagless.kafka.seek import TimeSeek, offsets_at_time, offsets_for_times
from tests.conftest import Cluster, unique


def produce_at(conf: dict[str, object], topic: str, stamps: list[int]) -> None:
    producer = Producer({**conf, "linger.ms": 50})  # several records a batch
    for i, ts in enumerate(stamps):
        producer.produce(topic, value=f"v{i}".encode(), partition=0, timestamp=ts)
    assert producer.flush(15) == 0


def check_by_time(conf: dict[str, object], topic: str) -> None:
    base = int(time.time() * 1000) - 100_000
    stamps = [base + 1000 * i for i in range(10)]  # offsets 0..9, a second apart
    produce_at(conf, topic, stamps)
    key = (topic, 0)
    with OffsetProbe(conf) as probe:
        assert probe.end_offsets([key]) == {key: 10}
        assert probe.start_offsets([key]) == {key: 0}
    with closing(TimeSeek(conf)) as seek:
        assert seek.offset_for_time(key, 0, 10, stamps[4]) == 4  # exactly a record's time
        assert seek.offset_for_time(key, 0, 10, stamps[4] + 1) == 5  # between two records
        assert seek.offset_for_time(key, 0, 10, base - 1) == 0  # before every record
        assert seek.offset_for_time(key, 0, 10, stamps[-1] + 1) is None  # after every record
        assert seek.offset_for_time(key, 6, 10, stamps[2]) == 6  # kept within the range
        assert seek.offset_for_time(key, 0, 3, stamps[5]) is None  # none in the range
    assert offsets_for_times(conf, {key: stamps[7]}, {key: 0}, {key: 10}) == {key: 7}
    assert offsets_at_time(conf, [key], stamps[-1] + 1) == {key: 10}  # the end
    assert offsets_at_time(conf, [key], stamps[3]) == {key: 3}


def test_offsets_by_time_on_tansu(cluster: Cluster, make_topic: Callable[..., str]) -> None:
    topic = make_topic(partitions=1)
    with OffsetProbe(cluster.conf) as probe:
        kind = probe.deviations.kind
    if cluster.embedded:
        assert kind is compat.Kind.TANSU
    check_by_time(dict(cluster.conf), topic)


def test_offsets_by_time_on_the_mock_cluster(mock_bootstrap: str) -> None:
    conf: dict[str, object] = {"bootstrap.servers": mock_bootstrap}
    topic = unique("seek")  # auto-created on first use
    with OffsetProbe(conf) as probe:
        assert probe.deviations.kind is compat.Kind.MOCK
    check_by_time(conf, topic)
