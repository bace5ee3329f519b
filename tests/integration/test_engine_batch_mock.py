"""Batch mode on librdkafka's mock cluster, where commit metadata is kept (Tansu drops it):
an earlier run's offset map is honoured by the range tracker — the offsets it completed above
the commit are skipped, exactly those, and every other one runs once."""

from __future__ import annotations

import threading
import uuid
from collections import Counter
from collections.abc import Sequence

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from lagless.engine import Ordering, Record, offset_map, run_engine
from tests.integration.engine_helpers import engine_config

pytestmark = pytest.mark.integration

RECORDS = 40
COMMITTED = 5
DONE_EARLIER = [7, 8, 12, 13, 14, 20, 33]


@pytest.mark.parametrize("ordering", [Ordering.PARTITION, Ordering.UNORDERED])
def test_batches_skip_exactly_what_an_earlier_run_completed_above_the_commit(
    mock_bootstrap: str, ordering: Ordering
) -> None:
    conf = {"bootstrap.servers": mock_bootstrap}
    topic, group = f"omap-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    producer = Producer(conf)
    for i in range(RECORDS):
        producer.produce(topic, b"v%d" % i, partition=0)
    assert producer.flush(15) == 0
    earlier = Consumer({**conf, "group.id": group, "enable.auto.commit": False})
    meta = offset_map.encode(COMMITTED, DONE_EARLIER)
    earlier.commit(
        offsets=[TopicPartition(topic, 0, COMMITTED, metadata=meta)], asynchronous=False
    )
    earlier.close()
    seen: Counter[int] = Counter()
    lock = threading.Lock()

    def handle(records: Sequence[Record]) -> None:
        with lock:
            seen.update(r.offset for r in records if r.partition == 0)

    config = engine_config(
        topic, group, ordering=ordering, batch_size=7, batch_linger_ms=10, until_idle_s=2.0
    )
    summary = run_engine(conf, config, handle)

    expected = [o for o in range(COMMITTED, RECORDS) if o not in DONE_EARLIER]
    assert sorted(seen.elements()) == expected, "each once, the earlier run's ones skipped"
    assert summary.skipped == len(DONE_EARLIER)
    reader = Consumer({**conf, "group.id": group})  # the mock has no admin API
    [back] = reader.committed([TopicPartition(topic, 0)], timeout=10)
    reader.close()
    assert (back.offset, back.metadata) == (RECORDS, ""), "the end, no map left"
