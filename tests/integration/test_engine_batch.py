"""Batch handlers on the real broker: every ordering mode processes every record once and
keeps its order promise with batches; a failing record inside a batch ends in the DLQ alone
while the rest of its batch is committed; SIGKILL mid-batch and a restart lose nothing."""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from lagless.engine import Ordering, Record, run_engine
from lagless.engine.results.dlq import H_ATTEMPTS, H_ERROR
from lagless.engine.workers import inline
from lagless.ids import ID_HEADER
from lagless.kafka.admin import committed_offsets
from lagless.kafka.reader import read_all
from lagless.kafka.records import header
from lagless.observe.metrics import Metrics
from tests.conftest import Cluster
from tests.integration.engine_helpers import (
    LEDGER_BATCH_HANDLER,
    LEDGER_FAST_BATCH_HANDLER,
    assert_exactly_once,
    consume_cmd,
    engine_config,
    kill_and_restart,
    mutating,
    produce_jobs,
    read_ledgers,
    record_id,
)
from tests.integration.engine_helpers.ledger import handle_batch

pytestmark = pytest.mark.integration


@dataclass(frozen=True)
class Call:
    """One batch handler call: its records and when it ran."""

    records: tuple[Record, ...]
    started: float
    ended: float
    on_poll_thread: bool  # the engine's own thread: the test's (see lagless.engine.workers.inline)


class Calls:
    def __init__(self) -> None:
        self.calls: list[Call] = []
        self._lock = threading.Lock()
        self._poll_thread = threading.current_thread()

    def add(self, records: Sequence[Record], started: float) -> None:
        here = threading.current_thread() is self._poll_thread
        with self._lock:
            self.calls.append(Call(tuple(records), started, time.monotonic(), here))

    def on_poll_thread(self) -> int:
        return sum(c.on_poll_thread for c in self.calls)

    def ids(self) -> list[str]:
        return [record_id(r) for c in self.calls for r in c.records]


def assert_key_order(by_key: dict[tuple[int, bytes | None], list[Call]]) -> None:
    """Per (partition, key): one batch at a time, its records in offset order."""
    for k, held in by_key.items():
        assert_one_at_a_time(held, f"key {k}")
        seen = [
            r.offset
            for c in sorted(held, key=lambda c: c.started)
            for r in c.records
            if (r.partition, r.key) == k
        ]
        assert seen == sorted(seen), f"key {k} out of order"


def assert_one_at_a_time(calls: list[Call], what: str) -> None:
    """Calls holding ``what`` never overlap."""
    calls = sorted(calls, key=lambda c: c.started)
    for before, after in itertools.pairwise(calls):
        assert after.started >= before.ended, f"{what}: two batches in flight at once"


def every_measured_call_fast(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever the machine's load, a handler counts as fast once measured (the threshold
    itself is unit-tested): the inline path is then certain to run."""
    monkeypatch.setattr(inline, "INLINE_CALL_S", 10.0)
    monkeypatch.setattr(inline, "BUSY_SHARE", 0.0)


# how the handler runs: "waits" (sleeps 2 ms: worker threads), "fast" (on the poll thread
# once measured), "fast-threads" (fast, inline=False: always on worker threads)
PACES = [(o, "waits") for o in Ordering] + [(o, "fast") for o in Ordering]


@pytest.mark.parametrize(("ordering", "pace"), [*PACES, (Ordering.KEY, "fast-threads")])
def test_batches_process_every_record_once_and_keep_each_mode_order(
    cluster: Cluster,
    make_topic: Callable[..., str],
    group: str,
    ordering: Ordering,
    pace: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    topic = make_topic(partitions=3)
    ids = produce_jobs(cluster.conf, topic, 300, sleep_ms=(0, 1), keys=6)
    calls = Calls()

    def handle(records: Sequence[Record]) -> None:
        started = time.monotonic()
        if pace == "waits":
            time.sleep(0.002)
        calls.add(records, started)

    if pace != "waits":
        every_measured_call_fast(monkeypatch)
    config = engine_config(
        topic, group, ordering=ordering, batch_size=20, batch_linger_ms=20, max_in_flight=8,
        inline=pace != "fast-threads",
    )  # fmt: skip
    metrics = Metrics()
    summary = run_engine(cluster.conf, config, handle, metrics)

    assert_exactly_once(Counter(calls.ids()), ids)
    assert summary.processed == summary.ok == 300
    assert summary.inline_batches == calls.on_poll_thread(), "each counted batch ran there"
    if pace == "fast":
        assert summary.inline_batches > 0, "a fast handler runs on the poll thread"
    else:
        assert summary.inline_batches == 0, "a waiting handler or inline=False: threads only"
    registry = metrics.registry
    assert registry.get_sample_value("lagless_e2e_latency_seconds_count", {"topic": topic}) == 300
    assert registry.get_sample_value("lagless_processing_seconds_count", {"topic": topic}) == len(
        calls.calls
    ), "one handler call, one observation"
    assert summary.e2e_ms.p50 is not None and summary.e2e_ms.p50 > 0
    assert all(1 <= len(c.records) <= 20 for c in calls.calls)
    assert max(len(c.records) for c in calls.calls) > 1, "records came in batches"
    for call in calls.calls:
        assert len({r.partition for r in call.records}) == 1, "a batch holds one partition"
    by_partition: dict[int, list[Call]] = defaultdict(list)
    by_key: dict[tuple[int, bytes | None], list[Call]] = defaultdict(list)
    for call in calls.calls:
        offsets = [r.offset for r in call.records]
        by_partition[call.records[0].partition].append(call)
        for key in {r.key for r in call.records}:
            by_key[(call.records[0].partition, key)].append(call)
        if ordering is not Ordering.UNORDERED:
            assert offsets == sorted(offsets), f"a batch in offset order: {offsets}"
        if ordering is Ordering.PARTITION:
            assert offsets == list(range(offsets[0], offsets[0] + len(offsets))), (
                f"a partition batch holds consecutive records: {offsets}"
            )
    if ordering is Ordering.PARTITION:
        for p, held in by_partition.items():
            assert_one_at_a_time(held, f"partition {p}")
            seen = [r.offset for c in sorted(held, key=lambda c: c.started) for r in c.records]
            assert seen == sorted(seen), f"partition {p} out of order"
    elif ordering is Ordering.KEY:
        assert_key_order(by_key)
        for p, held in by_partition.items():  # the key promise, kept as partition does
            assert_one_at_a_time(held, f"partition {p}")


@pytest.mark.parametrize("runs_on", ["threads", "poll-thread", "async"])
@pytest.mark.parametrize("how", ["raises", "names"])
def test_a_failing_record_in_a_batch_goes_to_the_dlq_alone_and_the_rest_is_committed(
    cluster: Cluster,
    make_topic: Callable[..., str],
    group: str,
    how: str,
    runs_on: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``poll-thread``: the poison's batch makes its first call on the poll thread (see
    lagless.engine.workers.inline), its retries and split go on on a worker thread."""
    topic = make_topic(partitions=1)
    dlq = make_topic(partitions=1)
    ids = produce_jobs(cluster.conf, topic, 60, sleep_ms=(0, 1))
    poison = ids[47]  # past the first batches, which run on threads before a pace is known
    calls = Calls()
    poison_calls: list[bool] = []  # per call holding the poison: on the poll thread?

    def handle(records: Sequence[Record]) -> dict[Record, Exception] | None:
        started = time.monotonic()
        bad = [r for r in records if record_id(r) == poison]
        if bad:
            poison_calls.append(threading.current_thread() is calls._poll_thread)
        if bad and how == "raises":
            raise RuntimeError("a record of this batch is poison")
        calls.add([r for r in records if r not in bad], started)
        return {bad[0]: ValueError(f"poison {poison}")} if bad else None

    async def handle_async(records: Sequence[Record]) -> dict[Record, Exception] | None:
        await asyncio.sleep(0.001)
        return handle(records)

    if runs_on == "poll-thread":
        every_measured_call_fast(monkeypatch)
    config = engine_config(
        topic, group, dlq_topic=dlq, batch_size=10, batch_linger_ms=50,
        retries=1, retry_backoff_s=0.01, inline=runs_on == "poll-thread",
    )  # fmt: skip
    summary = run_engine(cluster.conf, config, handle_async if runs_on == "async" else handle)

    if runs_on == "poll-thread":
        assert poison_calls[0], "the poison's batch first ran on the poll thread"
        assert not any(poison_calls[1:]), "its retries and split on worker threads"
    else:
        assert not any(poison_calls)

    good = [i for i in ids if i != poison]
    assert_exactly_once(Counter(calls.ids()), good)
    assert (summary.processed, summary.ok, summary.dlq) == (60, 59, 1)
    letters = list(read_all(cluster.conf, dlq))
    assert [header(m, ID_HEADER) for m in letters] == [poison.encode()], "the poison alone"
    attempts = int(header(letters[0], H_ATTEMPTS) or b"0")
    if how == "names":
        assert header(letters[0], H_ERROR) == f"poison {poison}".encode()
        assert attempts == 2, "named failures are retried alone, then final"
    else:
        assert header(letters[0], H_ERROR) == b"a record of this batch is poison"
        assert attempts >= 3, "2 batch attempts, then at least one split call"
    assert committed_offsets(cluster.conf, group, [topic]) == {(topic, 0): 60}


@pytest.mark.parametrize("kind", [KeyboardInterrupt, SystemExit])
def test_a_batch_handler_raising_keyboard_interrupt_itself_on_the_poll_thread_is_its_failure(
    cluster: Cluster,
    make_topic: Callable[..., str],
    group: str,
    kind: type[BaseException],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A handler's own KeyboardInterrupt (or SystemExit) fails its batch as on a worker
    thread (retries, split, the DLQ): it is no Ctrl-C, even in a call on the poll thread. The
    engine runs where Ctrl-C would not raise KeyboardInterrupt (as under ``lagless consume``
    and the App, which handle SIGINT themselves)."""
    topic = make_topic(partitions=1)
    dlq = make_topic(partitions=1)
    ids = produce_jobs(cluster.conf, topic, 60, sleep_ms=(0, 1))
    poison = ids[47]  # past the first batches, which run on threads before a pace is known
    poison_calls: list[bool] = []  # per call holding the poison: on the poll thread?
    done: list[str] = []

    def handle(records: Sequence[Record]) -> None:
        if any(record_id(r) == poison for r in records):
            poison_calls.append(threading.current_thread().name == "test-poll")
            raise kind("the handler's own")
        done.extend(record_id(r) for r in records)

    every_measured_call_fast(monkeypatch)
    config = engine_config(
        topic, group, dlq_topic=dlq, batch_size=10, batch_linger_ms=50, retries=1,
        retry_backoff_s=0.01,
    )  # fmt: skip
    outcome: list[object] = []

    def run() -> None:
        try:
            outcome.append(run_engine(cluster.conf, config, handle))
        except BaseException as exc:  # the test asserts there is none
            outcome.append(exc)

    thread = threading.Thread(target=run, name="test-poll")
    thread.start()
    thread.join(60)
    summary = outcome[0]
    assert not isinstance(summary, BaseException), f"the engine raised {summary!r}"
    assert poison_calls[0], "the poison's batch first ran on the poll thread"
    assert_exactly_once(Counter(done), [i for i in ids if i != poison])
    assert (summary.processed, summary.ok, summary.dlq) == (60, 59, 1)
    letters = list(read_all(cluster.conf, dlq))
    assert [header(m, ID_HEADER) for m in letters] == [poison.encode()], "the poison alone"
    assert committed_offsets(cluster.conf, group, [topic]) == {(topic, 0): 60}


PARTITIONS = 3
MAX_PENDING = 10


@pytest.mark.slow
@pytest.mark.parametrize(("ordering", "pace"), [("partition", "waits"), ("unordered", "waits"),
                                                 ("key", "fast")])  # fmt: skip
def test_sigkill_mid_batch_then_restart_loses_nothing(
    cluster: Cluster,
    make_topic: Callable[..., str],
    group: str,
    tmp_path: Path,
    ordering: str,
    pace: str,
) -> None:
    """``fast``: jobs of 0 ms, so batches make their first call on the poll thread; at that
    rate the duplicates are checked to be exactly the records above the commit at the kill."""
    topic = make_topic(partitions=PARTITIONS)
    fast = pace == "fast"
    ids = produce_jobs(
        cluster.conf, topic, 20_000 if fast else 600, sleep_ms=(0, 0) if fast else (5, 15)
    )
    handler = LEDGER_FAST_BATCH_HANDLER if fast else LEDGER_BATCH_HANDLER
    cmd = consume_cmd(
        cluster.bootstrap, topic, group,
        "--handler", handler, "--batch-size", "5", "--batch-linger-ms", "20",
        "--ordering", ordering, "--max-pending", str(MAX_PENDING), "--commit-every", "1",
        "--on-failure", "stop", "--until-idle", "3", "--json",
    )  # fmt: skip
    summary = kill_and_restart(
        cluster.conf, cmd, ids, tmp_path, topic=topic, group=group, kill_after=100,
        duplicates_bound=None if fast else PARTITIONS * MAX_PENDING,
    )  # fmt: skip
    assert (summary["inline_batches"] > 0) is fast, summary


def test_async_batches_process_every_record_once_and_keep_key_order(
    cluster: Cluster, make_topic: Callable[..., str], group: str
) -> None:
    topic = make_topic(partitions=3)
    ids = produce_jobs(cluster.conf, topic, 300, sleep_ms=(0, 1), keys=6)
    calls = Calls()

    async def handle(records: Sequence[Record]) -> None:
        started = time.monotonic()
        await asyncio.sleep(0.002)
        calls.add(records, started)

    config = engine_config(
        topic, group, ordering=Ordering.KEY, batch_size=20, batch_linger_ms=20, max_in_flight=8
    )
    summary = run_engine(cluster.conf, config, handle)

    assert_exactly_once(Counter(calls.ids()), ids)
    assert summary.processed == summary.ok == 300
    assert max(len(c.records) for c in calls.calls) > 1, "records came in batches"
    by_key: dict[tuple[int, bytes | None], list[Call]] = defaultdict(list)
    for call in calls.calls:
        assert len({r.partition for r in call.records}) == 1, "a batch holds one partition"
        for key in {r.key for r in call.records}:
            by_key[(call.records[0].partition, key)].append(call)
    assert_key_order(by_key)


@pytest.mark.parametrize(
    "handler", [handle_batch, mutating.handle_batch], ids=["reads", "pops-and-clears"]
)
def test_batches_in_worker_processes_run_once_each_and_a_poison_ends_in_the_dlq_alone(
    cluster: Cluster,
    make_topic: Callable[..., str],
    group: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    handler: Callable[..., None],
) -> None:
    """In a worker process a batch is a plain list. A handler that pops and clears it
    ("pops-and-clears") used to break the batch rule: IndexError while splitting, the engine
    stopped; it now gets a copy each call."""
    topic = make_topic(partitions=3)
    dlq = make_topic(partitions=1)
    ids = produce_jobs(cluster.conf, topic, 120, sleep_ms=(0, 1))
    poison = ids[41]
    ledger = tmp_path / "ledger"
    monkeypatch.setenv("LAGLESS_TEST_LEDGER", str(ledger))  # the spawned workers inherit it
    monkeypatch.setenv("LAGLESS_TEST_POISON", poison)

    config = engine_config(
        topic, group, processes=2, batch_size=20, batch_linger_ms=20, ordering=Ordering.UNORDERED,
        dlq_topic=dlq, retries=1, retry_backoff_s=0.01,
    )  # fmt: skip
    summary = run_engine(cluster.conf, config, handler)

    assert_exactly_once(read_ledgers([ledger]), [i for i in ids if i != poison])
    assert (summary.processed, summary.ok, summary.dlq) == (120, 119, 1)
    letters = list(read_all(cluster.conf, dlq))
    assert [header(m, ID_HEADER) for m in letters] == [poison.encode()], "the poison alone"
    committed = committed_offsets(cluster.conf, group, [topic])
    assert sum(committed.values()) == 120, committed
