"""A fast per-record handler on the poll thread (lagless.engine.dispatch.fast_path) that turns
slow mid-run: the poll loop is held for one slow call at most, then the slow calls go to the
worker threads while the loop keeps turning and the other partitions progress; every record is
processed exactly once. And the same guarantees on the fast path: retries and the DLQ,
``--count``."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from lagless.engine import Record, run_engine
from lagless.engine.loop import Engine
from lagless.engine.summary import RunSummary
from tests.conftest import Cluster
from tests.integration.engine_helpers import (
    Ledger,
    assert_exactly_once,
    engine_config,
    produce_jobs,
    record_id,
)

pytestmark = pytest.mark.integration

RECORDS = 3000
SLOW_AFTER = 300  # calls before the handler turns slow (on the partition of that call)
SLOW_CALLS = 6
SLOW_S = 0.4


def test_a_fast_handler_turning_slow_does_not_stall_the_poll_loop(
    cluster: Cluster, make_topic: Callable[..., str], group: str
) -> None:
    topic = make_topic(partitions=3)
    # keyed: unkeyed, an idle producer's sticky partitioner puts them all in one partition
    ids = produce_jobs(cluster.conf, topic, RECORDS, sleep_ms=(0, 0), keys=50)
    ledger = Ledger()
    lock = threading.Lock()
    calls = [0]
    slow: list[tuple[int, float, float]] = []  # (thread ident, start, end) of each slow call
    poll_thread = threading.get_ident()
    on_poll_thread = [0]
    slow_partition: list[int] = []

    def handle(record: Record) -> None:
        started = time.monotonic()
        with lock:
            calls[0] += 1
            if calls[0] > SLOW_AFTER and not slow_partition:
                slow_partition.append(record.partition)
            turn_slow = record.partition in slow_partition and len(slow) < SLOW_CALLS
            if turn_slow:
                slow.append((threading.get_ident(), started, 0.0))
        if threading.get_ident() == poll_thread:
            on_poll_thread[0] += 1
        if turn_slow:
            time.sleep(SLOW_S)
            with lock:
                at = next(i for i, s in enumerate(slow) if s[1] == started and not s[2])
                slow[at] = (slow[at][0], started, time.monotonic())
        ledger.add(record, started)

    config = engine_config(topic, group, ordering="partition", max_in_flight=8)
    engine = Engine(cluster.conf, config, handle)
    gaps: list[float] = []
    done = threading.Event()

    def watch_turns() -> None:  # how long the poll loop went without a turn
        while not done.wait(0.01):
            gaps.append(time.monotonic() - engine.health.last_turn)

    watcher = threading.Thread(target=watch_turns, daemon=True)
    watcher.start()
    try:
        summary = engine.run()
    finally:
        done.set()
        watcher.join(5)

    assert_exactly_once(ledger.ids, ids)
    assert summary.processed == RECORDS
    assert on_poll_thread[0] > SLOW_AFTER // 2, "the fast handler ran on the poll thread"
    assert len(slow) == SLOW_CALLS
    here = [s for s in slow if s[0] == poll_thread]
    assert len(here) <= 1, f"{len(here)} slow calls held the poll loop (one at most)"
    first, last = min(s[1] for s in slow), max(s[2] for s in slow)
    assert last - first >= SLOW_CALLS * SLOW_S * 0.9, "the slow calls ran in order, one by one"
    [slowed] = slow_partition
    others = [e for e in ledger.executions if e.partition != slowed and first < e.ended < last]
    assert others, "the other partitions progressed while partition 0 was slow"
    assert max(gaps) < SLOW_S + 1.0, f"the poll loop stood still {max(gaps):.2f} s"


def test_the_fast_path_keeps_retries_dlq_and_count(
    cluster: Cluster, make_topic: Callable[..., str], group: str
) -> None:
    """A fast handler failing on some records: each poison record's retries run on a worker
    thread (attempts exact), its dead letter written, the records after it in its lane wait
    for it, and ``count`` stops at exactly N finished records."""
    topic = make_topic(partitions=2)
    dlq = make_topic(partitions=1)
    ids = produce_jobs(cluster.conf, topic, 2000, sleep_ms=(0, 0))
    poison = set(ids[500:2000:250])
    # "fast" is measured (wall time and the thread's CPU share of it): on a machine loaded by
    # other work a run may measure it slow throughout and never call it here; such a run
    # proves nothing of the fast path, so a fresh group reads the topic again (up to 3 runs)
    for attempt in range(3):
        summary, attempts, ledger, here = run_with_poison(
            cluster, topic, f"{group}-{attempt}", dlq, poison
        )
        if here:
            break
    assert here > 0, "the fast handler ran on the poll thread"
    assert_exactly_once(ledger.ids, [i for i in ids if i not in poison])
    assert attempts == dict.fromkeys(poison, 3), "1 attempt + 2 retries each, no more"
    assert summary.dlq == len(poison) and summary.ok == len(ids) - len(poison)

    counted = Ledger()

    def count_them(record: Record) -> None:
        counted.add(record, time.monotonic())

    again = engine_config(topic, f"{group}-count", ordering="unordered", count=1234)
    summary = run_engine(cluster.conf, again, count_them)
    assert summary.processed == 1234
    assert len(counted.executions) == 1234, "exactly --count records ran, none beyond"
    assert max(counted.ids.values()) == 1, "none twice"


def run_with_poison(
    cluster: Cluster, topic: str, group: str, dlq: str, poison: set[str]
) -> tuple[RunSummary, dict[str, int], Ledger, int]:
    """One run of a fast handler that fails on ``poison``: its summary, the attempts of each
    poison record, the ledger of the others, and how many calls ran on the poll thread."""
    attempts: dict[str, int] = {}
    ledger = Ledger()
    lock = threading.Lock()
    poll_thread = threading.get_ident()
    here = [0]

    def handle(record: Record) -> None:
        started = time.monotonic()
        rid = record_id(record)
        if threading.get_ident() == poll_thread:
            here[0] += 1
        if rid in poison:
            with lock:
                attempts[rid] = attempts.get(rid, 0) + 1
            raise ValueError(f"poison {rid}")
        ledger.add(record, started)

    config = engine_config(
        topic, group, ordering="key", dlq_topic=dlq, retries=2, retry_backoff_s=0.01
    )
    return run_engine(cluster.conf, config, handle), attempts, ledger, here[0]
