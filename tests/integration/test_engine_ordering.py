"""Every ordering mode processes every record once; order holds where promised; a slow
record holds back only its own partition."""

from __future__ import annotations

import itertools
import time
from collections import defaultdict
from collections.abc import Callable

import pytest

from lagless.engine import Ordering, Record, run_engine
from lagless.observe.metrics import Metrics
from tests.conftest import Cluster
from tests.integration.engine_helpers import (
    Execution,
    Ledger,
    assert_exactly_once,
    engine_config,
    produce_jobs,
)

pytestmark = pytest.mark.integration


def sleeping_ledger(ledger: Ledger, ms: float) -> Callable[[Record], None]:
    def handle(record: Record) -> None:
        started = time.monotonic()
        time.sleep(ms / 1000.0)
        ledger.add(record, started)

    return handle


def assert_sequential(runs: list[Execution], what: str) -> None:
    """In offset order, each starting after the previous one ended."""
    ordered = sorted(runs, key=lambda e: e.started)
    offsets = [e.offset for e in ordered]
    assert offsets == sorted(offsets), f"{what}: out of order {offsets[:10]}"
    for before, after in itertools.pairwise(ordered):
        assert after.started >= before.ended, f"{what}: {before.offset} overlapped {after.offset}"


@pytest.mark.parametrize("ordering", list(Ordering))
def test_every_mode_processes_every_record_once(
    cluster: Cluster, make_topic: Callable[..., str], group: str, ordering: Ordering
) -> None:
    topic = make_topic(partitions=3)
    ids = produce_jobs(cluster.conf, topic, 240, keys=8)
    ledger = Ledger()
    metrics = Metrics()
    config = engine_config(topic, group, ordering=ordering, max_in_flight=24)
    summary = run_engine(cluster.conf, config, sleeping_ledger(ledger, 3), metrics=metrics)

    assert_exactly_once(ledger.ids, ids)
    assert summary.processed == summary.ok == 240
    assert sum(summary.per_partition.values()) == 240
    assert (
        metrics.records_processed.labels(topic, "0", "ok")._value.get()
        == (summary.per_partition[f"{topic}[0]"])
    )
    by_partition: dict[int, list[Execution]] = defaultdict(list)
    by_key: dict[tuple[int, bytes | None], list[Execution]] = defaultdict(list)
    for e in ledger.executions:
        by_partition[e.partition].append(e)
        by_key[(e.partition, e.key)].append(e)
    if ordering is Ordering.PARTITION:
        for p, runs in by_partition.items():
            assert_sequential(runs, f"partition {p}")
        assert summary.max_in_flight_seen <= 3
    elif ordering is Ordering.KEY:
        for k, runs in by_key.items():
            assert_sequential(runs, f"key {k}")
        assert summary.max_in_flight_seen > 3, "keys of one partition run side by side"
    else:
        assert summary.max_in_flight_seen > 3, "concurrency beyond partitions"


def test_a_slow_record_blocks_only_its_partition(
    cluster: Cluster, make_topic: Callable[..., str], group: str
) -> None:
    topic = make_topic(partitions=3)
    # keyed: keyless records may all land in one partition (the producer's sticky partitioner)
    ids = produce_jobs(cluster.conf, topic, 90, keys=6)
    ledger = Ledger()
    slow: list[Execution] = []

    def handle(record: Record) -> None:
        started = time.monotonic()
        if record.partition == 0 and not slow:
            slow.append(Execution("", 0, record.offset, None, started, 0.0))
            time.sleep(2.5)
        ledger.add(record, started)

    config = engine_config(topic, group, ordering="partition", max_in_flight=8)
    run_engine(cluster.conf, config, handle)

    assert_exactly_once(ledger.ids, ids)
    slow_done = next(e.ended for e in ledger.executions if e.partition == 0)
    others = [e for e in ledger.executions if e.partition != 0]
    assert others
    assert max(e.ended for e in others) < slow_done, "other partitions waited for the slow record"
