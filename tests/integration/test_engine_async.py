"""``async def`` handlers on the real broker: they run (once per record), thousands at once,
under the same retry / failure / ordering / commit rules as threads, and are cancelled at
shutdown within the budget without being counted or committed."""

from __future__ import annotations

import asyncio
import random
import threading
import time
from collections import defaultdict
from collections.abc import Callable

import pytest

from lagless.engine import Ordering, Record, run_engine
from lagless.errors import RecordError
from lagless.kafka.admin import committed_offsets
from tests.conftest import Cluster
from tests.integration.engine_helpers import (
    Execution,
    Ledger,
    assert_exactly_once,
    engine_config,
    produce_jobs,
)
from tests.integration.test_engine_ordering import assert_sequential

pytestmark = pytest.mark.integration


def test_ledger_20000_records_5000_in_flight_every_id_once_key_order_commits_at_end(
    cluster: Cluster, make_topic: Callable[..., str], group: str
) -> None:
    topic = make_topic(partitions=4)
    ids = produce_jobs(cluster.conf, topic, 20_000, keys=4000)
    ledger = Ledger()
    rng = random.Random(9)
    running = [0, 0]  # now, most at once

    async def handle(record: Record) -> None:
        started = time.monotonic()
        running[0] += 1
        running[1] = max(running)
        await asyncio.sleep(rng.uniform(0.001, 0.050))
        running[0] -= 1
        ledger.add(record, started)

    config = engine_config(
        topic, group, ordering="key", max_in_flight=5000, max_pending=10_000, until_idle_s=2.0
    )
    summary = run_engine(cluster.conf, config, handle)

    assert_exactly_once(ledger.ids, ids)
    assert summary.processed == summary.ok == 20_000
    assert running[1] > 1000, f"only {running[1]} awaits at once"
    by_key: dict[tuple[int, bytes | None], list[Execution]] = defaultdict(list)
    for e in ledger.executions:
        by_key[(e.partition, e.key)].append(e)
    for key, runs in by_key.items():
        assert_sequential(runs, f"key {key}")
    committed = committed_offsets(cluster.conf, group, [topic])
    assert sum(committed.values()) == 20_000, committed


def test_a_failing_async_handler_is_retried_then_stops_the_run_uncommitted(
    cluster: Cluster, make_topic: Callable[..., str], group: str
) -> None:
    topic = make_topic(partitions=1)
    produce_jobs(cluster.conf, topic, 51)
    attempts: list[int] = []

    async def handle(record: Record) -> None:
        await asyncio.sleep(0)
        if record.offset == 10:
            attempts.append(record.offset)
            raise RuntimeError("boom")

    config = engine_config(
        topic, group, ordering="partition", on_failure="stop", retries=2, retry_backoff_s=0.01
    )
    with pytest.raises(RecordError, match="after 3 attempts: RuntimeError: boom") as info:
        run_engine(cluster.conf, config, handle)
    assert info.value.coordinates is not None and info.value.coordinates.offset == 10
    assert attempts == [10, 10, 10]
    assert committed_offsets(cluster.conf, group, [topic]).get((topic, 0), 0) <= 10


def test_async_retries_then_success_counts_once(
    cluster: Cluster, make_topic: Callable[..., str], group: str
) -> None:
    topic = make_topic(partitions=2)
    ids = produce_jobs(cluster.conf, topic, 60)
    ledger = Ledger()
    tries: dict[int, int] = defaultdict(int)

    async def flaky(record: Record) -> None:
        tries[record.offset * 10 + record.partition] += 1
        if tries[record.offset * 10 + record.partition] < 2:
            raise ConnectionError("once")
        ledger.add(record, time.monotonic())

    config = engine_config(topic, group, ordering=Ordering.UNORDERED, retry_backoff_s=0.01)
    summary = run_engine(cluster.conf, config, flaky)
    assert_exactly_once(ledger.ids, ids)
    assert summary.ok == 60 and summary.dlq == summary.skipped == 0


def test_shutdown_cancels_async_handlers_within_the_budget_and_commits_nothing_of_them(
    cluster: Cluster, make_topic: Callable[..., str], group: str
) -> None:
    topic = make_topic(partitions=1)
    produce_jobs(cluster.conf, topic, 20)
    started = threading.Event()
    cancelled: list[int] = []

    async def hang(record: Record) -> None:
        started.set()
        try:
            await asyncio.sleep(600)
        except asyncio.CancelledError:
            cancelled.append(record.offset)
            raise

    stop = threading.Event()
    config = engine_config(
        topic, group, ordering="unordered", shutdown_budget_s=1.0, until_idle_s=None
    )
    threading.Thread(target=lambda: started.wait(60) and stop.set(), daemon=True).start()
    begun = time.monotonic()
    summary = run_engine(cluster.conf, config, hang, stop=stop)
    assert time.monotonic() - begun < 30
    assert summary.processed == 0
    assert len(cancelled) == 20
    assert committed_offsets(cluster.conf, group, [topic]).get((topic, 0), 0) == 0
