"""A handler slower than max.poll.interval.ms: the partition is paused (backpressure), the
loop keeps polling, no rebalance happens and no partition is lost; the stall watchdog sees
the record and names it."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import pytest

from lagless.engine import Progress, Record, run_engine
from lagless.observe.metrics import Metrics
from tests.conftest import Cluster
from tests.integration.engine_helpers import (
    Ledger,
    assert_exactly_once,
    engine_config,
    produce_jobs,
    record_id,
)

pytestmark = pytest.mark.integration

MAX_POLL_MS = 6000
SLOW_S = 8.0


def test_handler_slower_than_max_poll_interval_causes_no_rebalance(
    cluster: Cluster,
    make_topic: Callable[..., str],
    group: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    topic = make_topic(partitions=1)
    ids = produce_jobs(cluster.conf, topic, 80)
    slow_id = ids[3]
    ledger = Ledger()

    def handle(record: Record) -> None:
        started = time.monotonic()
        time.sleep(SLOW_S if record_id(record) == slow_id else 0.001)
        ledger.add(record, started)

    seen: list[Progress] = []
    metrics = Metrics()
    config = engine_config(
        topic,
        group,
        ordering="unordered",
        max_in_flight=4,
        max_pending=10,
        max_poll_interval_ms=MAX_POLL_MS,
        stall_seconds=2.0,
    )
    caplog.set_level(logging.WARNING, logger="lagless.engine")
    ages: list[float] = []

    def progress(p: Progress) -> None:
        seen.append(p)
        ages.append(metrics.oldest_unfinished_age.labels(topic, "0")._value.get())

    summary = run_engine(cluster.conf, config, handle, metrics=metrics, on_progress=progress)

    assert_exactly_once(ledger.ids, ids)
    assert SLOW_S * 1000 > MAX_POLL_MS
    assert summary.rebalances == 1, "only the first assignment"
    assert summary.partitions_revoked == 1, "given up once, at close"
    assert summary.partitions_lost == 0
    assert metrics.rebalances.labels("lost")._value.get() == 0
    assert metrics.rebalances.labels("revoke")._value.get() == 1
    assert summary.pauses >= 1, "the partition filled up behind the slow record and paused"
    assert any(p.paused == 1 for p in seen)
    assert max(ages) >= SLOW_S / 2, "the oldest unfinished record's age is exposed"
    stalls = [r.getMessage() for r in caplog.records if "unfinished for" in r.getMessage()]
    assert stalls and stalls[0].startswith(f"{topic}[0]@3 "), stalls
