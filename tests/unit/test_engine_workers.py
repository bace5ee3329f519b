"""Thread workers: the tasks of a lane run one after another, in the order submitted."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from queue import Queue

from lagless.engine.record import Record
from lagless.engine.workers.batch import run_batch
from lagless.engine.workers.protocol import Completion
from lagless.engine.workers.retry import RetryPolicy
from lagless.engine.workers.threads import ThreadWorkers


def record(offset: int, partition: int = 0) -> Record:
    return Record("t", partition, offset, None, b"", None)


def test_a_lanes_tasks_run_one_at_a_time_in_submission_order() -> None:
    running: dict[int, int] = {0: 0, 1: 0}
    overlap: list[int] = []
    order: list[tuple[int, int]] = []
    lock = threading.Lock()

    def handler(batch: Sequence[Record]) -> None:
        lane = batch[0].partition
        with lock:
            running[lane] += 1
            if running[lane] > 1:
                overlap.append(lane)
            order.append((lane, batch[0].offset))
        time.sleep(0.002)
        with lock:
            running[lane] -= 1

    completions: Queue[object] = Queue()
    workers = ThreadWorkers(8, handler, run_batch, RetryPolicy(0), completions)
    assert workers.chains
    try:
        for offset in range(20):
            for lane in (0, 1):
                workers.submit([record(offset, lane)], 0, lane)
        done = [completions.get(timeout=10) for _ in range(40)]
    finally:
        workers.close(1.0)
    assert all(isinstance(c, Completion) and c.result is not None for c in done)
    assert not overlap, "two tasks of one lane ran at once"
    for lane in (0, 1):
        assert [o for ln, o in order if ln == lane] == list(range(20))
    assert not workers._lanes, "a lane with nothing behind is forgotten"


def test_tasks_without_a_lane_run_side_by_side() -> None:
    started = threading.Barrier(3, timeout=5)

    def handler(batch: Sequence[Record]) -> None:
        started.wait()  # all three at once, or the barrier breaks

    completions: Queue[object] = Queue()
    workers = ThreadWorkers(3, handler, run_batch, RetryPolicy(0), completions)
    try:
        for offset in range(3):
            workers.submit([record(offset)], 0)
        done = [completions.get(timeout=10) for _ in range(3)]
    finally:
        workers.close(1.0)
    assert all(isinstance(c, Completion) and c.result and not c.result.failed for c in done)
