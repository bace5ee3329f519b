"""Partitions lost (the session expired while the broker was unreachable): the engine drops
them without committing, rejoins, and no record is lost.

The broker is a dedicated embedded broker frozen with SIGSTOP for longer than the session
timeout, so the client's heartbeats fail and librdkafka reports the assignment lost.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from lagless.broker.embedded import BrokerState, EmbeddedBroker, free_port
from lagless.engine import Record, run_engine
from lagless.kafka.admin import create_topic
from lagless.observe.metrics import Metrics
from tests.conftest import unique
from tests.integration.engine_helpers import (
    Ledger,
    engine_config,
    produce_jobs,
)

pytestmark = pytest.mark.integration

SESSION_MS = 6000


@pytest.fixture
def own_broker(tmp_path: Path) -> Iterator[BrokerState]:
    if os.environ.get("LAGLESS_TEST_BOOTSTRAP"):
        pytest.skip("freezes a broker process: needs the embedded broker")
    broker = EmbeddedBroker(tmp_path / "broker")
    state = broker.start(port=free_port())
    try:
        yield state
    finally:
        os.kill(state.pid, signal.SIGCONT)
        broker.stop()


def test_lost_partitions_are_dropped_without_commit_and_nothing_is_lost(
    own_broker: BrokerState,
) -> None:
    conf = {"bootstrap.servers": own_broker.bootstrap}
    topic, group = unique("lost"), unique("g")
    create_topic(conf, topic, 2)
    ids = produce_jobs(conf, topic, 400, sleep_ms=(5, 10))
    ledger = Ledger()
    frozen = threading.Event()

    def handle(record: Record) -> None:
        started = time.monotonic()
        time.sleep(0.01)
        ledger.add(record, started)
        if len(ledger.executions) == 50 and not frozen.is_set():
            frozen.set()

    def freeze() -> None:
        frozen.wait(60)
        os.kill(own_broker.pid, signal.SIGSTOP)
        time.sleep(SESSION_MS / 1000 * 1.6)
        os.kill(own_broker.pid, signal.SIGCONT)

    metrics = Metrics()
    config = engine_config(
        topic, group, ordering="partition", max_in_flight=4, max_pending=20, until_idle_s=6.0,
        assignor="range",
    )  # fmt: skip
    freezer = threading.Thread(target=freeze, daemon=True)
    freezer.start()
    summary = run_engine(conf, config, handle, metrics=metrics)
    freezer.join(30)

    assert frozen.is_set()
    assert summary.partitions_lost >= 1, "the session expired while the broker was frozen"
    assert metrics.rebalances.labels("lost")._value.get() >= 1
    assert set(ledger.ids) == set(ids), f"lost {sorted(set(ids) - set(ledger.ids))[:10]}"
    # records in flight when the partitions were lost may run twice (never committed)
    assert sum(ledger.ids.values()) - len(ids) <= 2 * 20
