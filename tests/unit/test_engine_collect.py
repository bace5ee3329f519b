"""Collect handles the per-record tasks that simply succeeded together per partition: the same
outcome as handling each completion alone (counts, in flight, lanes, commits, figures)."""

from __future__ import annotations

import time

import numpy as np
import pytest

from lagless.engine import Engine, EngineConfig, Record
from lagless.engine.dispatch.strategy import PerRecord
from lagless.engine.partitions.state import PartitionMetrics, PartitionState
from lagless.engine.workers.protocol import Completion
from lagless.engine.workers.retry import Outcome, TaskResult

T0 = 1_700_000_000.0


def engine() -> Engine:
    config = EngineConfig.build(topics=("t",), group="g", on_failure="skip", ordering="key")
    return Engine({"bootstrap.servers": "127.0.0.1:1"}, config, lambda r: None)


def assigned(e: Engine, partition: int, epoch: int) -> PartitionState:
    key = ("t", partition)
    e.owned.states[key] = state = PartitionState(
        key, epoch, e.strategy.tracker(None, ()), PartitionMetrics(e.metrics, "t", partition)
    )
    e.strategy.dispatcher.open(key)
    return state


def per_record(e: Engine) -> PerRecord:
    assert isinstance(e.strategy, PerRecord)
    return e.strategy


def started(e: Engine, states: dict[int, PartitionState], count: int) -> list[list[Record]]:
    """``count`` records a partition offered (keys a, b, c in turn: some wait in their lane)
    and every task that may start now taken, as the launcher takes them."""
    strategy = per_record(e)
    for partition, state in states.items():
        records = [
            Record("t", partition, offset, b"abc"[offset % 3 : offset % 3 + 1], b"", 1_000 + offset)
            for offset in range(count)
        ]
        strategy.offer(state, records, 0.0)
    tasks = []
    while (task := strategy.dispatcher.next_task(1)) is not None:
        state = e.owned.states[("t", task[0].partition)]
        state.in_flight += len(task)
        e.tally.in_flight += len(task)
        e.tally.tasks += 1
        tasks.append(task)
    return tasks


def completion(task: list[Record], epoch: int, at: float, fail: bool = False) -> Completion:
    failed = {0: Outcome(False, 1, 0.001, at, "ValueError", "bad")} if fail else {}
    seconds = [0.001 * (1 + r.offset % 4) for r in task]
    stamps = np.array([r.timestamp_ms for r in task], np.int64)
    return Completion(task, epoch, TaskResult(at, seconds, failed), stamps=stamps)


def outcome(e: Engine) -> dict[str, object]:
    publisher = e.publisher
    stamps = {id(k): v for k, v in publisher._stamps.items()}
    return {
        "counts": dict(e.tally.counts),
        "in_flight": (e.tally.in_flight, e.tally.tasks),
        "states": {
            k: (s.in_flight, s.finished, s.tracker.committable, s.tracker.pending)
            for k, s in e.owned.states.items()
        },
        "ready": e.strategy.dispatcher.ready,
        "next": e.strategy.dispatcher.next_task(10),
        "latencies": sorted(
            float(x) for pending in stamps.values() for x in pending.latencies_ms()
        ),
        "processing": sorted(x for seconds in publisher._seconds.values() for x in seconds),
    }


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_succeeded_tasks_collected_together_end_as_one_by_one(seed: int) -> None:
    merged, single = engine(), engine()
    runs = {}
    for e in (merged, single):
        runs[id(e)] = started(e, {0: assigned(e, 0, 1), 1: assigned(e, 1, 2)}, 12)
    order = np.random.default_rng(seed).permutation(len(runs[id(merged)]))
    for e in (merged, single):
        tasks = runs[id(e)]
        done = [  # in the order they finished; the fourth one's record failed
            completion(tasks[i], 1 + tasks[i][0].partition, T0 + n, fail=(n == 3))
            for n, i in enumerate(order)
        ]
        stale = Record("t", 0, 500, b"a", b"", 1)  # from an assignment since revoked
        done.insert(5, Completion([stale], 99, TaskResult(T0, [0.001], {})))
        e.tally.in_flight += 1
        e.tally.tasks += 1
        if e is merged:
            for item in done:
                e.completions.inbox.put(item)
            e.completions.collect(wait=0.0)
        else:
            for item in done:
                e.completions._completed(item)
    assert merged.tally.counts["ok"] == len(order) - 1, "all but the failed record"
    assert len(order) == 6, "a task a key (a, b, c) a partition: the rest wait in their lanes"
    assert outcome(merged) == outcome(single)
    # the handler's pace: the same calls averaged (in another order: the same within a hair)
    assert per_record(merged).record_s == pytest.approx(per_record(single).record_s, rel=0.05)


def test_a_lone_completion_takes_the_usual_way() -> None:
    e = engine()
    state = assigned(e, 0, 1)
    tasks = started(e, {0: state}, 1)
    e.completions.inbox.put(completion(tasks[0], 1, time.time()))
    e.completions.collect(wait=0.0)
    assert (e.tally.processed, e.tally.in_flight, state.tracker.committable) == (1, 0, 1)
