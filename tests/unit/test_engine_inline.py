"""Fast batches on the poll thread (lagless.engine.workers.inline): when a handler counts as
fast, and that a batch whose first call ran on the submitting thread ends exactly as on a worker."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from queue import Queue

import pytest

from lagless.engine import EngineConfig
from lagless.engine.record import Record
from lagless.engine.workers import inline
from lagless.engine.workers import threads as workers_module
from lagless.engine.workers.batch import BatchRun, run_batch
from lagless.engine.workers.inline import InlinePace
from lagless.engine.workers.protocol import Completion
from lagless.engine.workers.retry import RetryPolicy, TaskResult
from lagless.engine.workers.threads import ThreadWorkers
from lagless.errors import ConfigError

POLICY = RetryPolicy(retries=2, backoff_s=0.001, backoff_max_s=0.001)


def record(offset: int) -> Record:
    return Record("t", 0, offset, None, str(offset).encode(), None)


BATCH = [record(i) for i in range(8)]


def test_the_pace_is_fast_only_for_short_busy_calls() -> None:
    pace = InlinePace()
    assert not pace.fast, "nothing measured yet: the threads"
    pace.note(0.00002, 0.00002)
    assert pace.fast
    waiting = InlinePace()
    waiting.note(0.00005, 0.000001)  # short, but the thread mostly waited (I/O, sleep)
    assert not waiting.fast
    for _ in range(3):
        pace.note(0.01, 0.01)  # the handler slowed down
    assert not pace.fast
    for _ in range(40):
        pace.note(0.00002, 0.00002)  # and sped up again
    assert pace.fast


def fails_at(bad: set[int], how: str) -> Callable[[Sequence[Record]], object]:
    """A batch handler failing for the records at ``bad`` offsets: raising, or naming them."""

    def handle(batch: Sequence[Record]) -> object:
        failed = {r: ValueError(f"bad {r.offset}") for r in batch if r.offset in bad}
        if failed and how == "raises":
            raise RuntimeError("bad batch")
        return failed or None

    return handle


def outcome(result: TaskResult) -> dict[int, tuple[int, str]]:
    return {i: (o.attempts, o.error_message) for i, o in result.failed.items()}


@pytest.mark.parametrize("how", ["raises", "names"])
@pytest.mark.parametrize("bad", [set(), {3}, {0, 7}])
def test_the_rule_resumed_after_its_first_call_ends_as_run_in_one_go(
    bad: set[int], how: str
) -> None:
    handler = fails_at(bad, how)
    whole = run_batch(handler, BATCH, POLICY)
    run = BatchRun(handler, BATCH, POLICY)
    first = run.advance(lambda s: False, first_only=True)
    if not bad:
        assert first is not None and not first.failed, "a clean first call settles the batch"
        return
    assert first is None, "a failed first call leaves the rest of the rule"
    rest = run.advance(lambda s: False)
    assert rest is not None
    assert outcome(rest) == outcome(whole)
    assert len(rest.seconds) == len(whole.seconds), "the same calls"


def inline_workers(
    handler: Callable[..., object], completions: Queue[object], policy: RetryPolicy = POLICY
) -> ThreadWorkers:
    workers = ThreadWorkers(4, handler, run_batch, policy, completions, inline=True, batch=True)
    assert workers._pace is not None
    workers._pace.note(0.00001, 0.00001)  # measured fast
    return workers


def test_a_fast_batch_runs_on_the_submitting_thread() -> None:
    threads: list[threading.Thread] = []
    completions: Queue[object] = Queue()
    workers = inline_workers(lambda batch: threads.append(threading.current_thread()), completions)
    try:
        workers.submit(BATCH, 5, ("t", 0))
        done = completions.get_nowait()  # already there: the call ran in submit
    finally:
        workers.close(1.0)
    assert threads == [threading.current_thread()]
    assert isinstance(done, Completion) and done.epoch == 5
    assert done.result is not None and not done.result.failed
    assert done.stamps is not None and len(done.stamps) == len(BATCH)
    assert workers.inlined == 1
    assert not workers._lanes, "no lane left behind"


def test_a_failed_first_call_goes_on_on_a_worker_thread_in_its_lane() -> None:
    here = threading.current_thread()
    calls: list[tuple[bool, int]] = []
    failing = fails_at({3}, "raises")

    def handle(batch: Sequence[Record]) -> object:
        calls.append((threading.current_thread() is here, len(batch)))
        return failing(batch)

    completions: Queue[object] = Queue()
    policy = RetryPolicy(retries=2, backoff_s=0.05, backoff_max_s=0.05)
    workers = inline_workers(handle, completions, policy)
    try:
        workers.submit(BATCH, 0, ("t", 0))
        assert ("t", 0) in workers._lanes, "the rest runs in the lane (a backoff first)"
        later = [record(8), record(9)]
        workers.submit(later, 0, ("t", 0))  # behind the lane's retries, never beside them
        done = [completions.get(timeout=10) for _ in range(2)]
    finally:
        workers.close(1.0)
    assert calls[0] == (True, 8), "the first call on the submitting thread"
    assert all(not on_here for on_here, _ in calls[1:]), "retries and split on a worker"
    first, second = done
    assert isinstance(first, Completion) and first.records is BATCH
    assert first.result is not None
    assert outcome(first.result) == outcome(run_batch(failing, BATCH, policy))
    assert isinstance(second, Completion) and second.records is later
    assert workers.inlined == 1, "the later batch waited for its lane, on a worker"


def test_a_slow_or_waiting_handler_stays_on_the_worker_threads() -> None:
    here = threading.current_thread()
    on_here: list[bool] = []

    def handle(batch: Sequence[Record]) -> None:
        on_here.append(threading.current_thread() is here)
        time.sleep(0.001)  # waits: its thread's CPU time is a small share of the call

    completions: Queue[object] = Queue()
    workers = ThreadWorkers(2, handle, run_batch, POLICY, completions, inline=True, batch=True)
    try:
        for i in range(10):
            workers.submit([record(i)], 0)
            completions.get(timeout=10)
    finally:
        workers.close(1.0)
    assert not any(on_here)
    assert workers.inlined == 0


@pytest.mark.parametrize("how", ["engine", "default-sigint"])
def test_ctrl_c_in_a_call_on_the_poll_thread_is_raised_not_retried(
    how: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``engine``: the engine's second-signal interrupt (Engine.hurry); ``default-sigint``: the
    main thread with SIGINT at Python's default (a library user's Ctrl-C)."""
    calls = 0
    completions: Queue[object] = Queue()

    def handle(batch: Sequence[Record]) -> None:
        nonlocal calls
        calls += 1
        if how == "engine":
            workers.interrupting = True
        raise KeyboardInterrupt

    workers = inline_workers(handle, completions)
    monkeypatch.setattr(workers_module, "_ctrl_c_raises_here", lambda: how == "default-sigint")
    try:
        with pytest.raises(KeyboardInterrupt):
            workers.submit(BATCH, 0)
    finally:
        workers.close(1.0)
    assert calls == 1, "not retried as a handler failure"
    assert completions.empty(), "the batch did not finish: never committed"


def test_the_threshold_is_read_when_deciding(monkeypatch: pytest.MonkeyPatch) -> None:
    pace = InlinePace()
    pace.note(0.001, 0.001)
    assert not pace.fast
    monkeypatch.setattr(inline, "INLINE_CALL_S", 0.01)
    assert pace.fast


def test_a_handler_raising_keyboardinterrupt_off_the_main_thread_is_a_batch_failure() -> None:
    """Off the main thread no Ctrl-C raises: a KeyboardInterrupt from the handler there is its
    failure, retried and split on a worker as anywhere else."""
    out: list[BaseException | Completion] = []

    def submit_in_a_thread() -> None:
        completions: Queue[object] = Queue()
        workers = inline_workers(lambda batch: _raise(KeyboardInterrupt()), completions)
        try:
            workers.submit(BATCH, 0)
            done = completions.get(timeout=10)
            assert isinstance(done, Completion)
            out.append(done)
        except BaseException as exc:  # what the test looks at
            out.append(exc)
        finally:
            workers.close(1.0)

    thread = threading.Thread(target=submit_in_a_thread)
    thread.start()
    thread.join(30)
    [done] = out
    assert isinstance(done, Completion) and done.result is not None
    assert sorted(done.result.failed) == list(range(len(BATCH))), "every record failed"
    assert {o.error_class for o in done.result.failed.values()} == {"KeyboardInterrupt"}


def _raise(exc: BaseException) -> None:
    raise exc


def test_inline_false_applies_to_per_record_and_batch_handlers() -> None:
    """``--no-inline`` (``inline=False``) keeps every call on the worker threads, per record
    as in batches: accepted for both (per-record handlers run on the poll thread too)."""
    single = EngineConfig.build(topics=("t",), group="g", on_failure="stop", inline=False)
    assert single.inline is False
    batch = EngineConfig.build(
        topics=("t",), group="g", on_failure="stop", batch_size=5, inline=False
    )
    assert batch.inline is False
    with pytest.raises(ConfigError):
        EngineConfig.build(topics=("t",), group="g", on_failure="stop", inline="sometimes")


# -- per-record handlers on the poll thread ---------------------------------------------------


def test_a_run_here_stops_at_its_time_budget_after_the_call_that_passed_it() -> None:
    seen: list[int] = []

    def handle(r: Record) -> None:
        seen.append(r.offset)
        if r.offset == 2:
            time.sleep(0.02)  # turns slow: the run ends after this call

    here = inline.run_here(handle, BATCH, budget_s=0.01)
    assert seen == [0, 1, 2] and here.done == 3 and here.error is None
    assert len(here.seconds) == 3 and here.seconds[2] >= 0.02 > here.seconds[0]
    assert here.wall_s >= 0.02
    whole = inline.run_here(lambda r: None, BATCH)
    assert whole.done == len(BATCH) and whole.error is None


def test_a_run_here_stops_at_the_first_failure_never_retrying_it() -> None:
    calls: list[int] = []

    def handle(r: Record) -> None:
        calls.append(r.offset)
        if r.offset == 3:
            raise ValueError("bad 3")

    here = inline.run_here(handle, BATCH)
    assert calls == [0, 1, 2, 3], "nothing after the failure, no retry here"
    assert here.done == 3 and isinstance(here.error, ValueError) and here.spent >= 0


def test_a_pace_notes_a_run_per_call() -> None:
    pace = InlinePace()
    run = inline.HereRun(4, [0.0] * 4, None, 0.0, wall_s=0.004, cpu_s=0.004)
    inline.note_here(pace, run)
    assert pace.wall_s == pytest.approx(0.001), "per call, not per run"
    failed = inline.HereRun(1, [0.0], ValueError(), 0.0, wall_s=0.002, cpu_s=0.0)
    inline.note_here(pace, failed)  # the failed call counts: 2 calls
    assert pace.wall_s == pytest.approx(0.8 * 0.001 + 0.2 * 0.001)
    empty = InlinePace()
    inline.note_here(empty, inline.HereRun(0, [], None, 0.0, 0.0, 0.0))
    assert empty.wall_s is None, "no call, nothing measured"


@pytest.mark.parametrize("bad", [set(), {0}, {3}, {3, 6}, {7}])
def test_the_rest_of_a_task_ends_as_the_task_run_in_one_go(bad: set[int]) -> None:
    """A per-record task whose first records ran here, its failed record's retries and the
    records after it on a worker: the same failures, attempts and calls as run_each."""
    from lagless.engine.workers.retry import run_each

    def handle(r: Record) -> None:
        if r.offset in bad:
            raise ValueError(f"bad {r.offset}")

    whole = run_each(handle, BATCH, POLICY, lambda s: False)
    here = inline.run_here(handle, BATCH)
    rest = inline.rest_of(handle, BATCH, here, POLICY)(lambda s: False)
    assert outcome(rest) == outcome(whole)
    assert len(rest.seconds) == len(BATCH)
    budget = inline.run_here(handle, BATCH[:2], budget_s=0.0)  # stopped after one call
    assert budget.done == (0 if 0 in bad else 1)


def record_workers(
    handler: Callable[..., object], completions: Queue[object], fast: bool = True
) -> ThreadWorkers:
    from lagless.engine.workers.retry import run_each

    workers = ThreadWorkers(2, handler, run_each, POLICY, completions, inline=True)
    assert workers._pace is not None
    if fast:
        workers._pace.note(0.00001, 0.00001)
    return workers


def test_a_fast_per_record_task_runs_on_the_submitting_thread() -> None:
    threads: list[threading.Thread] = []
    completions: Queue[object] = Queue()
    workers = record_workers(lambda r: threads.append(threading.current_thread()), completions)
    try:
        workers.submit(BATCH, 3)
        done = completions.get_nowait()
    finally:
        workers.close(1.0)
    assert threads == [threading.current_thread()] * len(BATCH)
    assert isinstance(done, Completion) and done.epoch == 3 and done.records is BATCH
    assert done.result is not None and not done.result.failed
    assert len(done.result.seconds) == len(BATCH)
    assert workers.ran_here == 1 and workers.inlined == 0, "inlined counts batches only"


def test_a_failed_per_record_task_goes_on_on_a_worker_with_exact_attempts() -> None:
    here = threading.current_thread()
    calls: list[tuple[int, bool]] = []

    def handle(r: Record) -> None:
        calls.append((r.offset, threading.current_thread() is here))
        if r.offset == 2:
            raise ValueError("bad 2")

    completions: Queue[object] = Queue()
    workers = record_workers(handle, completions)
    try:
        workers.submit(BATCH, 0)
        done = completions.get(timeout=10)
    finally:
        workers.close(1.0)
    assert [c for c in calls if c[1]] == [(0, True), (1, True), (2, True)]
    assert [c[0] for c in calls if not c[1]] == [2, 2, 3, 4, 5, 6, 7], "retries, then the rest"
    assert isinstance(done, Completion) and done.result is not None
    assert outcome(done.result) == {2: (3, "bad 2")}


def test_a_per_record_ctrl_c_here_is_raised_not_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = 0
    completions: Queue[object] = Queue()

    def handle(r: Record) -> None:
        nonlocal calls
        calls += 1
        workers.interrupting = True
        raise KeyboardInterrupt

    workers = record_workers(handle, completions)
    try:
        with pytest.raises(KeyboardInterrupt):
            workers.submit(BATCH, 0)
    finally:
        workers.close(1.0)
    assert calls == 1 and completions.empty()


def test_inline_false_keeps_per_record_tasks_on_the_workers() -> None:
    from lagless.engine.workers.retry import run_each

    here = threading.current_thread()
    on_here: list[bool] = []
    completions: Queue[object] = Queue()
    workers = ThreadWorkers(
        2, lambda r: on_here.append(threading.current_thread() is here), run_each, POLICY,
        completions, inline=False,
    )  # fmt: skip
    try:
        for _ in range(20):
            workers.submit(BATCH, 0)
            completions.get(timeout=10)
    finally:
        workers.close(1.0)
    assert on_here and not any(on_here) and not workers.inlines and not workers.fast
