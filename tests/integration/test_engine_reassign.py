"""Key ordering holds across a revoke that outlives ``--revoke-budget``: when the partition
comes back to the same process, the new assignment's record of a key still running from the
earlier assignment waits for it (no two executions of one key at once in one process). The
same for partition batches: the new assignment's batch waits for the one still running.

Eager ``range`` assignor, two partitions: a second member joining makes the first revoke
both (its slow record outlives the 0.3 s budget) and get one back.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from lagless.engine import Record, run_engine
from lagless.kafka.clients import make_producer
from tests.conftest import Cluster
from tests.integration.engine_helpers import engine_config

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SLOW_S = 12.0


@pytest.mark.parametrize("batches", [False, True], ids=["per-record", "batches"])
def test_a_key_running_from_a_revoked_assignment_blocks_its_lane_when_it_comes_back(
    cluster: Cluster, make_topic: Callable[..., str], group: str, batches: bool
) -> None:
    topic = make_topic(partitions=2)
    producer = make_producer(cluster.conf)
    for partition in (0, 1):
        for _i in range(3):
            producer.produce(topic, b"{}", key=b"k", partition=partition)
    assert producer.flush(30) == 0

    runs: dict[tuple[int, int], list[tuple[float, float]]] = defaultdict(list)
    lock = threading.Lock()
    both_running = threading.Event()

    def first_member(task: Record | Sequence[Record]) -> None:
        started = time.monotonic()
        record = task if isinstance(task, Record) else task[0]
        if record.offset == 0:
            with lock:
                first = not runs[(record.partition, 0)]
                runs[(record.partition, 0)].append((started, float("inf")))
                if len([k for k in runs if k[1] == 0]) == 2:
                    both_running.set()
            time.sleep(SLOW_S if first else 0.1)
            with lock:
                spans = runs[(record.partition, 0)]
                spans[spans.index((started, float("inf")))] = (started, time.monotonic())

    stops = [threading.Event(), threading.Event()]
    task: dict[str, Any] = {"ordering": "partition", "batch_size": 1} if batches else {}
    config = engine_config(
        topic, group, **{"ordering": "key", **task}, assignor="range", revoke_budget_s=0.3,
        until_idle_s=None,
    )  # fmt: skip
    first = threading.Thread(
        target=run_engine, args=(cluster.conf, config, first_member), kwargs={"stop": stops[0]}
    )
    first.start()
    try:
        assert both_running.wait(60), "the first member started both slow records"
        second = threading.Thread(
            target=run_engine,
            args=(cluster.conf, config, lambda task: None),
            kwargs={"stop": stops[1]},
        )
        second.start()
        time.sleep(SLOW_S + 6)
    finally:
        for stop in stops:
            stop.set()
        first.join(60)
    second.join(60)
    again = {p: spans for (p, offset), spans in runs.items() if len(spans) > 1}
    assert again, f"no partition came back to the first member: {dict(runs)}"
    for partition, spans in again.items():
        ordered = sorted(spans)
        for before, after in itertools.pairwise(ordered):
            assert after[0] >= before[1], (
                f"partition {partition} offset 0 ran twice at once: {ordered}"
            )
