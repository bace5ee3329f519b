"""Engine.status(): a snapshot of the instance while it runs (owned partitions, their epoch and
since when, position, first unfinished offset, in flight, paused)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from lagless.engine import Engine, Record
from tests.conftest import Cluster
from tests.integration.engine_helpers import engine_config

pytestmark = pytest.mark.integration


def test_status_shows_the_owned_partition_and_the_record_holding_it(
    cluster: Cluster, make_topic: Callable[..., str], group: str
) -> None:
    topic = make_topic(partitions=1)
    cluster.produce(topic, [f"v{i}" for i in range(20)])
    release = threading.Event()

    def handler(record: Record) -> None:
        if record.offset == 5:
            release.wait(60)  # holds its task, so the partition's first unfinished offset

    config = engine_config(topic, group, ordering="partition", max_in_flight=4, until_idle_s=1.0)
    engine = Engine(cluster.conf, config, handler)
    runner = threading.Thread(target=engine.run, daemon=True)
    runner.start()
    try:
        deadline = time.monotonic() + 60
        status = engine.status()
        while time.monotonic() < deadline:
            status = engine.status()
            parts = status.partitions
            if parts and parts[0].in_flight and parts[0].position == 20:
                break
            time.sleep(0.1)
        (part,) = status.partitions
        assert (part.topic, part.partition) == (topic, 0)
        first = part.first_unfinished  # the first record of the task that holds offset 5
        assert first is not None and first <= 5 and part.in_flight >= 1 and not part.paused
        assert part.epoch >= 1 and part.assigned_at <= time.time()
        assert part.position == 20  # every record fetched
        assert status.processed == first and not status.stopping  # in order: all below it
        assert status.to_json()["partitions"][0]["first_unfinished"] == first
    finally:
        release.set()
        runner.join(60)
    assert not runner.is_alive()
    assert engine.status().processed == 20
