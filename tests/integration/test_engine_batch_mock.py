"""Batch mode on librdkafka's mock cluster, where commit metadata is kept (Tansu drops it):
an earlier run's offset map is honoured by the range tracker — the offsets it completed above
the commit are skipped, exactly those, and every other one runs once."""

from __future__ import annotations

import bisect
import itertools
import json
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from lagless.engine import EngineConfig, Ordering, Record, run_engine
from lagless.engine.events import EventLog
from lagless.engine.offsets import offset_map
from lagless.engine.summary import RunSummary
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
    earlier.commit(offsets=[TopicPartition(topic, 0, COMMITTED, metadata=meta)], asynchronous=False)
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


PARTITIONS = 4  # the mock cluster auto-creates topics with 4 partitions
RATE_S = 0.01


def _produce_for(
    conf: dict[str, str], topic: str, seconds: float, ids: list[int], created: threading.Event
) -> None:
    """Records to every partition for ``seconds``; ``created`` once the topic exists (the
    mock cluster creates it on first use)."""
    producer = Producer(conf)
    deadline = time.monotonic() + seconds
    n = 0
    while time.monotonic() < deadline:
        producer.produce(topic, b"%d" % n, partition=n % PARTITIONS)
        ids.append(n)
        n += 1
        producer.poll(0)
        if n == 1:
            assert producer.flush(15) == 0
            created.set()
        time.sleep(RATE_S)
    assert producer.flush(15) == 0


def _assignments(events: Path, partition: int) -> list[float]:
    """When the member's event log says it was given ``partition`` (each assignment)."""
    docs = [json.loads(line) for line in events.read_text().splitlines()]
    return [
        d["ts"]
        for d in docs
        if d["kind"] == "assigned" and any(p == partition for _, p in d["partitions"])
    ]


def _per_assignment(
    seen: list[tuple[str, int, int, int, float]], name: str, partition: int, given: list[float]
) -> list[list[int]]:
    """The member's offsets of ``partition``, one list per assignment (a record belongs to the
    last assignment before its handler ran: a revoke waits for the records in flight)."""
    runs: list[list[int]] = [[] for _ in given]
    for m, q, offset, _, at in seen:
        if m == name and q == partition:
            index = bisect.bisect_right(given, at) - 1
            assert index >= 0, f"{name} ran {partition}@{offset} before it was assigned"
            runs[index].append(offset)
    return runs


@pytest.mark.slow
@pytest.mark.parametrize("protocol", ["cooperative-sticky", "range", "consumer"])
def test_a_member_joining_mid_batch_loses_nothing_and_commits_the_ends(
    mock_bootstrap: str, protocol: str, tmp_path: Path
) -> None:
    """A second member joins while the first runs partition batches (classic cooperative and
    eager, KIP-848): every record runs; within each assignment of a partition to a member its
    records run in offset order, one after the other (an assignment may start again below
    where an earlier one of the same member ended: the mock cluster refuses commits while the
    group rebalances, so the new owner starts from the last commit it accepted); and the
    group's commits reach every partition's end."""
    conf = {"bootstrap.servers": mock_bootstrap}
    topic, group = f"join-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    group_flags: dict[str, object] = (
        {"group_protocol": "consumer"}
        if protocol == "consumer"
        else {"assignor": protocol, "session_timeout_ms": 6000, "heartbeat_interval_ms": 1500}
    )
    config = EngineConfig.build(
        topics=(topic,), group=group, ordering="partition", batch_size=7, batch_linger_ms=10,
        until_idle_s=3.0, on_failure="stop", **group_flags,
    )  # fmt: skip
    seen: list[tuple[str, int, int, int, float]] = []  # member, partition, offset, value, when
    lock = threading.Lock()
    summaries: list[RunSummary] = []

    def member(name: str) -> Callable[[], None]:
        def handle(records: Sequence[Record]) -> None:
            now = time.time()
            time.sleep(0.002 * len(records))
            with lock:
                seen.extend(
                    (name, r.partition, r.offset, int(r.value or b"-1"), now) for r in records
                )

        events = EventLog(tmp_path / f"{name}.jsonl", name)

        def run() -> None:
            summaries.append(run_engine(conf, config, handle, events=events))
            events.close()

        return run

    ids: list[int] = []
    created = threading.Event()
    producing = threading.Thread(target=_produce_for, args=(conf, topic, 8.0, ids, created))
    producing.start()
    assert created.wait(15), "the topic was created"
    first = threading.Thread(target=member("a"))
    first.start()
    time.sleep(2.0)
    second = threading.Thread(target=member("b"))
    second.start()
    producing.join(30)
    first.join(90)
    second.join(90)

    assert not first.is_alive() and not second.is_alive()
    assert len(summaries) == 2, "both members ended without an error"
    assert sum(s.rebalances for s in summaries) >= 2
    values = Counter(v for _, _, _, v, _ in seen)
    assert set(values) == set(ids), f"lost: {sorted(set(ids) - set(values))[:10]}"
    assert {m for m, *_ in seen} == {"a", "b"}, "the second member got partitions"
    for name in ("a", "b"):
        for p in range(PARTITIONS):
            given = _assignments(tmp_path / f"{name}.jsonl", p)
            for run in _per_assignment(seen, name, p, given):
                assert all(a < b for a, b in itertools.pairwise(run)), (
                    f"{name} ran partition {p} out of order within one assignment: {run[:20]}"
                )
    reader = Consumer({**conf, "group.id": group})
    back = reader.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=10)
    reader.close()
    per_partition = Counter(n % PARTITIONS for n in ids)
    assert {tp.partition: tp.offset for tp in back} == dict(per_partition)
