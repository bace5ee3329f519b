"""Partition ends of a topic being written while they are read (the case ``lagless lag`` is
for): every call answers in time, no end goes back, and once writing stops they are exact."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable

import pytest
from confluent_kafka import KafkaError, Message, Producer

from lagless.errors import ClusterError
from lagless.kafka.offsets import OffsetProbe
from tests.conftest import Cluster

PARTITIONS = 3


class Writer(threading.Thread):
    """Writes small records to every partition as fast as it can until stopped; counts acks."""

    def __init__(self, conf: dict[str, object], topic: str) -> None:
        super().__init__(daemon=True)
        self.producer = Producer({**conf, "linger.ms": 0})  # many small batches a partition
        self.topic = topic
        self.acked: Counter[int] = Counter()
        self.stopping = threading.Event()

    def _acked(self, err: KafkaError | None, msg: Message) -> None:
        assert err is None, err
        self.acked[int(msg.partition() or 0)] += 1

    def run(self) -> None:
        sent = 0
        while not self.stopping.is_set():
            try:
                self.producer.produce(
                    self.topic, b"x", partition=sent % PARTITIONS, on_delivery=self._acked
                )
                sent += 1
            except BufferError:
                self.producer.poll(0.01)
            self.producer.poll(0)
        assert self.producer.flush(30) == 0


def test_ends_of_partitions_being_written_arrive_in_time_and_never_go_back(
    cluster: Cluster, make_topic: Callable[..., str]
) -> None:
    topic = make_topic(partitions=PARTITIONS)
    keys = [(topic, p) for p in range(PARTITIONS)]
    writer = Writer(dict(cluster.conf), topic)
    writer.start()
    seen: list[dict[tuple[str, int], int]] = []
    try:
        time.sleep(0.5)
        with OffsetProbe(cluster.conf) as probe:
            for _ in range(30):  # a fetch may not reach a partition's end while it is written
                seen.append(probe.end_offsets(keys, timeout=10.0))
    finally:
        writer.stopping.set()
        writer.join(60)
    with OffsetProbe(cluster.conf) as probe:
        final = probe.end_offsets(keys)
    assert final == {(topic, p): writer.acked[p] for p in range(PARTITIONS)}
    assert all(final[key] > 0 for key in keys)
    for key in keys:
        ends = [one[key] for one in seen]
        assert ends == sorted(ends), f"{key}: an end went back: {ends}"
        assert ends[-1] <= final[key]
    assert seen[-1] != seen[0]  # the topic was being written while the ends were read


def test_ends_asked_of_a_partition_that_does_not_exist_fail_at_once_in_one_line(
    cluster: Cluster, make_topic: Callable[..., str]
) -> None:
    topic = make_topic(partitions=2)
    cluster.produce(topic, [b"a", b"b", b"c"])
    keys = [(topic, 1), (topic, 0), (topic, 1)]  # out of order, one twice
    with OffsetProbe(cluster.conf) as probe:
        ends = probe.end_offsets(keys)
        assert list(ends) == [(topic, 1), (topic, 0)]  # each once, in the order asked
        assert sum(ends.values()) == 3
        began = time.monotonic()
        with pytest.raises(ClusterError, match=rf"{topic}\[9\]") as missing:
            probe.end_offsets([(topic, 0), (topic, 9)], timeout=10.0)
        with pytest.raises(ClusterError, match=rf"{topic}-missing"):
            probe.end_offsets([(topic + "-missing", 0)], timeout=10.0)
    assert "\n" not in str(missing.value)
    if cluster.embedded:  # Tansu's path (ends from fetches) reads the metadata first
        assert str(missing.value) == f"no such partition: {topic}[9]"
        assert time.monotonic() - began < 5.0  # not the whole timeout
