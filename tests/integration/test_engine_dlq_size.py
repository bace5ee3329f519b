"""The DLQ producer is sized for what the source delivers: a failed record above librdkafka's
default 1 MB ``message.max.bytes`` is dead-lettered, not a crash loop."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from lagless.engine import Record, run_engine
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
