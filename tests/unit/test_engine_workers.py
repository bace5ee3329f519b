"""Thread workers: the tasks of a lane run one after another, in the order submitted."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from queue import Queue

from lagless.engine.record import Record
from lagless.engine.workers.batch import run_batch
from lagless.engine.workers.protocol import Completion
from lagless.engine.workers.retry import RetryPolicy, run_each
from lagless.engine.workers.threads import GONE_KEPT, ThreadWorkers


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


def test_tasks_ahead_wait_for_a_thread_and_start_as_threads_free() -> None:
    running = 0
    most = 0
    lock = threading.Lock()
    release = threading.Event()

    def handler(record: Record) -> None:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        release.wait(5)
        with lock:
            running -= 1

    completions: Queue[object] = Queue()
    few = ThreadWorkers(3, handler, run_each, RetryPolicy(0), completions)
    few.close(1.0)
    assert few.ahead == 1, "at least one"
    workers = ThreadWorkers(8, handler, run_each, RetryPolicy(0), completions)
    assert workers.ahead == 2, "a quarter of the threads"
    try:
        for offset in range(8 + workers.ahead):
            workers.submit([record(offset)], 0)
        time.sleep(0.1)
        assert running == 8, "the tasks beyond the threads wait"
        release.set()
        done = [completions.get(timeout=10) for _ in range(8 + workers.ahead)]
    finally:
        workers.close(1.0)
    assert all(isinstance(c, Completion) and c.result is not None for c in done)
    assert most == 8


def one_held_thread() -> tuple[ThreadWorkers, Queue[object], list[int], threading.Event]:
    """One thread whose handler notes each offset it starts, then waits for the event."""
    ran: list[int] = []
    release = threading.Event()

    def handler(record: Record) -> None:
        ran.append(record.offset)
        release.wait(5)

    completions: Queue[object] = Queue()
    return (
        ThreadWorkers(1, handler, run_each, RetryPolicy(0), completions),
        completions,
        ran,
        release,
    )


def test_queued_tasks_of_a_dropped_assignment_never_start() -> None:
    workers, completions, ran, release = one_held_thread()
    try:
        workers.submit([record(0)], 1)  # runs
        workers.submit([record(1)], 1)  # waits for the thread
        workers.submit([record(2, partition=1)], 2)  # another assignment: runs later
        time.sleep(0.05)
        workers.dropped(1)  # partition 0 revoked while its second task waited
        release.set()
        done = [completions.get(timeout=10) for _ in range(3)]
    finally:
        workers.close(1.0)
    assert ran == [0, 2], "the running task ends; the queued one of the dropped epoch never starts"
    by_offset = {c.records[0].offset: c for c in done if isinstance(c, Completion)}
    assert by_offset[1].result is None, "comes back without a result: not done, not committed"
    assert by_offset[0].result is not None and by_offset[2].result is not None


def test_the_dropped_epochs_remembered_stay_bounded_and_keep_the_newest() -> None:
    workers, completions, ran, release = one_held_thread()
    try:
        workers.submit([record(0)], 1)  # holds the thread
        newest = GONE_KEPT * 3
        workers.submit([record(1)], newest)  # queued behind it
        for epoch in range(2, newest + 1):  # thousands of revokes in a long life
            workers.dropped(epoch)
        release.set()
        done = [completions.get(timeout=10) for _ in range(2)]
    finally:
        workers.close(1.0)
    assert ran == [0], "the newest dropped epoch is still known: its queued task never starts"
    assert all(isinstance(c, Completion) for c in done)
    assert workers.dropped_epochs() <= GONE_KEPT


def test_queued_tasks_do_not_start_once_the_workers_close() -> None:
    workers, completions, ran, release = one_held_thread()
    workers.submit([record(0)], 1)  # runs
    workers.submit([record(1)], 1)  # queued ahead
    time.sleep(0.05)
    closing = threading.Thread(target=workers.close, args=(5.0,))
    closing.start()
    time.sleep(0.05)
    release.set()
    closing.join(10)
    done = [completions.get(timeout=10) for _ in range(2)]
    assert ran == [0], "the shutdown budget is over: the queued task never starts"
    by_offset = {c.records[0].offset: c for c in done if isinstance(c, Completion)}
    assert by_offset[1].result is None and by_offset[0].result is not None


def test_a_fast_task_starts_on_the_calling_thread_only_when_allowed() -> None:
    where: list[str] = []

    def handler(record: Record) -> None:
        where.append(threading.current_thread().name)

    completions: Queue[object] = Queue()
    workers = ThreadWorkers(2, handler, run_each, RetryPolicy(0), completions, inline=True)
    try:
        for n in range(20):  # measured fast: calls of microseconds, all CPU
            workers.submit([record(100 * n + i) for i in range(100)], 1, here=False)
            completions.get(timeout=10)
        assert workers.fast
        assert threading.current_thread().name not in where
        where.clear()
        workers.submit([record(5000)], 1, here=False)  # every thread may be busy: not here
        completions.get(timeout=10)
        workers.submit([record(5001)], 1)
        completions.get(timeout=10)
    finally:
        workers.close(1.0)
    assert where[0].startswith("lagless-worker-")
    assert where[1] == threading.current_thread().name
