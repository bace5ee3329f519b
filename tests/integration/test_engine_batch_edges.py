"""Offset gaps on the real broker: a transactional producer's commit markers take offsets no
consumer sees. Once everything fetched is finished, the engine's commit moves past them to the
partition's end (as Kafka's own consumers do), per record and in batch mode, so the group's lag
is 0, not one record per transaction forever. And ``count`` stops at exactly N records when
batches are bigger than what is left."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence

import pytest
from confluent_kafka import Producer

from lagless.engine import Record, run_engine
from lagless.errors import RecordCoordinates, RecordError
from lagless.ids import ID_HEADER
from lagless.kafka.admin import committed_offsets
from lagless.kafka.offsets import end_offsets
from tests.conftest import Cluster
from tests.integration.engine_helpers import (
    engine_config,
    produce_jobs,
)

pytestmark = pytest.mark.integration


def produce_transactions(conf: dict[str, object], topic: str, sizes: Sequence[int]) -> None:
    """One transaction of ``size`` records to partition 0 per entry of ``sizes``."""
    producer = Producer({**conf, "transactional.id": f"tx-{uuid.uuid4().hex[:8]}"})
    producer.init_transactions(15)
    n = 0
    for size in sizes:
        producer.begin_transaction()
        for _ in range(size):
            producer.produce(topic, f"v{n}".encode(), partition=0)
            n += 1
        producer.commit_transaction(15)


@pytest.mark.parametrize("batch_size", [0, 7])
def test_the_commit_moves_past_transaction_markers_to_the_end(
    cluster: Cluster, make_topic: Callable[..., str], group: str, batch_size: int
) -> None:
    topic = make_topic(partitions=1)
    produce_transactions(cluster.conf, topic, [10, 10])
    end = end_offsets(cluster.conf, [(topic, 0)])[(topic, 0)]
    assert end == 22, "20 records + 2 commit markers"
    seen: list[int] = []

    def handle(records: Sequence[Record] | Record) -> None:
        seen.extend(r.offset for r in ([records] if isinstance(records, Record) else records))

    extra = {"batch_size": batch_size, "batch_linger_ms": 20} if batch_size else {}
    summary = run_engine(cluster.conf, engine_config(topic, group, **extra), handle)

    assert sorted(seen) == [*range(10), *range(11, 21)]
    assert summary.processed == summary.ok == 20
    assert committed_offsets(cluster.conf, group, [topic]) == {(topic, 0): end}


@pytest.mark.parametrize("ordering", ["partition", "unordered"])
def test_count_stops_at_exactly_n_records_with_batches(
    cluster: Cluster, make_topic: Callable[..., str], group: str, ordering: str
) -> None:
    topic = make_topic(partitions=1)
    produce_transactions(cluster.conf, topic, [30])
    seen: list[int] = []

    def handle(records: Sequence[Record]) -> None:
        seen.extend(r.offset for r in records)

    config = engine_config(
        topic, group, ordering=ordering, batch_size=7, batch_linger_ms=20, count=10,
        until_idle_s=None,
    )  # fmt: skip
    summary = run_engine(cluster.conf, config, handle)

    assert sorted(seen) == list(range(10)), "exactly the first 10, each once"
    assert summary.processed == summary.ok == 10
    assert committed_offsets(cluster.conf, group, [topic]) == {(topic, 0): 10}


def test_batches_kept_by_the_handler_read_the_same_records_after_the_run(
    cluster: Cluster, make_topic: Callable[..., str], group: str
) -> None:
    """A handler may keep its batch: after the engine closed its consumer, the batch's
    records (made lazily) still read their values, headers and timestamps."""
    topic = make_topic(partitions=2)
    ids = produce_jobs(cluster.conf, topic, 50, sleep_ms=(0, 1))
    kept: list[Sequence[Record]] = []
    during: list[tuple[int, int, bytes | None, bytes | None]] = []

    def handle(records: Sequence[Record]) -> None:
        kept.append(records)
        during.extend((r.partition, r.offset, r.value, r.header(ID_HEADER)) for r in records)

    config = engine_config(topic, group, batch_size=9, batch_linger_ms=20)
    run_engine(cluster.conf, config, handle)

    after = [(r.partition, r.offset, r.value, r.header(ID_HEADER)) for b in kept for r in b]
    assert after == during
    assert sorted(h.decode() for *_, h in after if h is not None) == sorted(ids)


def test_a_partial_batch_goes_after_its_linger_and_until_idle_waits_for_it(
    cluster: Cluster, make_topic: Callable[..., str], group: str
) -> None:
    topic = make_topic(partitions=1)
    ids = produce_jobs(cluster.conf, topic, 3, sleep_ms=(0, 1))
    calls: list[int] = []

    def handle(records: Sequence[Record]) -> None:
        calls.append(len(records))

    config = engine_config(topic, group, batch_size=500, batch_linger_ms=1000, until_idle_s=0.5)
    summary = run_engine(cluster.conf, config, handle)

    assert calls == [len(ids)], "one batch of the 3, after the linger; none left behind"
    assert summary.processed == 3
    assert committed_offsets(cluster.conf, group, [topic]) == {(topic, 0): 3}


@pytest.mark.parametrize("ordering", ["partition", "unordered"])
def test_a_poison_in_a_batch_with_on_failure_stop_commits_up_to_it_and_names_it(
    cluster: Cluster, make_topic: Callable[..., str], group: str, ordering: str
) -> None:
    """The engine stops on the poison: the error names its coordinates, the commit stops
    exactly at it (the rest of its batch and everything before finished), and a restart
    begins there."""
    topic = make_topic(partitions=1)
    produce_jobs(cluster.conf, topic, 40, sleep_ms=(0, 1))
    poison = 12

    def handle(records: Sequence[Record]) -> None:
        time.sleep(0.005)
        if any(r.offset == poison for r in records):
            raise RuntimeError("poison")

    config = engine_config(
        topic, group, ordering=ordering, batch_size=5, max_in_flight=4, retries=0,
        on_failure="stop",
    )  # fmt: skip
    with pytest.raises(RecordError) as failed:
        run_engine(cluster.conf, config, handle)
    assert failed.value.coordinates == RecordCoordinates(topic, 0, poison)
    assert committed_offsets(cluster.conf, group, [topic]) == {(topic, 0): poison}
    again: list[int] = []
    run_engine(cluster.conf, config, lambda rs: again.extend(r.offset for r in rs))
    assert sorted(again)[0] == poison and sorted(set(again)) == list(range(poison, 40))


@pytest.mark.parametrize(("size", "ordering"), [(1, "key"), (1, "unordered"), (500, "partition")])
def test_batches_of_one_and_of_five_hundred_run_every_record_once_in_order(
    cluster: Cluster, make_topic: Callable[..., str], group: str, size: int, ordering: str
) -> None:
    topic = make_topic(partitions=3)
    ids = produce_jobs(cluster.conf, topic, 900, sleep_ms=(0, 1), keys=5)
    calls: list[list[tuple[int, int, bytes | None]]] = []

    def handle(records: Sequence[Record]) -> None:
        calls.append([(r.partition, r.offset, r.header(ID_HEADER)) for r in records])

    config = engine_config(topic, group, ordering=ordering, batch_size=size, batch_linger_ms=50)
    summary = run_engine(cluster.conf, config, handle)

    got = [h.decode() for call in calls for *_, h in call if h is not None]
    assert sorted(got) == sorted(ids) and summary.processed == 900
    assert all(1 <= len(c) <= size for c in calls) and (size == 1 or max(map(len, calls)) > 100)
    if ordering != "unordered":
        for p in range(3):
            offsets = [o for call in calls for q, o, _ in call if q == p]
            assert offsets == sorted(offsets), f"partition {p} out of order"
    ends = committed_offsets(cluster.conf, group, [topic])
    assert sum(ends.values()) == 900
