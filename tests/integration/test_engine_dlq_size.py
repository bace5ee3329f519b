"""The DLQ producer is sized for what the source delivers: a failed record above librdkafka's
default 1 MB ``message.max.bytes`` is dead-lettered, not a crash loop."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from lagless.engine import Record, run_engine
from lagless.errors import RecordError
from lagless.kafka.admin import committed_offsets
from lagless.kafka.clients import make_producer
from lagless.kafka.reader import read_all
from tests.conftest import Cluster
from tests.integration.engine_helpers import engine_config

pytestmark = pytest.mark.integration

BIG = 1_500_000


def test_a_failed_record_larger_than_1mb_is_dead_lettered(
    cluster: Cluster, make_topic: Callable[..., str], group: str
) -> None:
    topic = make_topic(partitions=1)
    dlq = make_topic(partitions=1)
    producer = make_producer({**cluster.conf, "message.max.bytes": 4_000_000})
    producer.produce(topic, b"x" * BIG, key=b"big")
    producer.produce(topic, b"small", key=b"small")
    assert producer.flush(30) == 0

    def handle(record: Record) -> None:
        if record.key == b"big":
            raise ValueError("too big to handle")

    config = engine_config(topic, group, dlq_topic=dlq, retries=0)
    summary = run_engine(cluster.conf, config, handle)
    assert summary.dlq == 1 and summary.ok == 1
    (letter,) = list(read_all(cluster.conf, dlq))
    assert len(letter.value() or b"") == BIG
    assert committed_offsets(cluster.conf, group, [topic]) == {(topic, 0): 2}


def test_a_record_that_cannot_be_dead_lettered_stops_the_run_with_its_coordinates(
    cluster: Cluster, make_topic: Callable[..., str], group: str
) -> None:
    """The DLQ producer here is sized for a consumer limited to 1000 bytes per response while
    the consumer itself reads up to 100 MB: a 200 KB record is refused by the DLQ producer."""
    topic = make_topic(partitions=1)
    dlq = make_topic(partitions=1)
    producer = make_producer(cluster.conf)
    producer.produce(topic, b"ok", key=b"a")
    producer.produce(topic, b"y" * 200_000, key=b"big")
    assert producer.flush(30) == 0

    def handle(record: Record) -> None:
        raise ValueError("poison")  # both fail: the small one is dead-lettered, the big not

    conf = {**cluster.conf, "receive.message.max.bytes": 1000}
    config = engine_config(
        topic, group, dlq_topic=dlq, retries=0,
        consumer_overrides={"receive.message.max.bytes": "100000000"},
    )  # fmt: skip
    with pytest.raises(RecordError, match="cannot write the dead letter") as info:
        run_engine(conf, config, handle)
    assert info.value.coordinates.offset == 1
    assert "ValueError: poison" in str(info.value)
    assert committed_offsets(cluster.conf, group, [topic]) == {(topic, 0): 1}, (
        "the dead-lettered record is committed past: a restart does not dead-letter it again"
    )
    assert [m.key() for m in read_all(cluster.conf, dlq)] == [b"a"]
