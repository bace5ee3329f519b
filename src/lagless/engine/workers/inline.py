"""Fast handlers on the poll thread: when a handler call is not worth a thread.

Handing a call to a worker thread costs the poll loop more than the call itself when the
handler is fast: a queue hand-off, a thread woken, the GIL passed to it and taken back, a
completion through the inbox, and per record the bookkeeping of a task (tracked, queued in
lanes, handed out, completed). With a ``noop`` handler that was about a third of the engine's
time in batches of 500 and over half of it per record (``bench/throughput.py``). A thread buys
nothing for such a call: it is over before another thread could have done anything beside it.

So a handler measured fast and busy (:class:`InlinePace`: its calls take under
:data:`INLINE_CALL_S` on average, and at least half of that time is the calling thread's own
CPU time) runs on the poll thread:

* **per record**, the records of a poll run through the handler as they are polled
  (:mod:`lagless.engine.dispatch.fast_path`) when their partition holds nothing else (nothing
  buffered, running or waiting for its dead letter: the records run in offset order, which
  every ordering allows), and tasks handed to the workers run on the poll thread too
  (:class:`lagless.engine.workers.threads.ThreadWorkers`);
* **batches**: a batch's *first call*.

A handler that waits (I/O, sleeps, locks: its thread's CPU time is a small part of the call)
keeps the worker threads however short its calls, since there threads run calls side by side.
Every call, wherever it ran, is measured, so a handler that slows down goes back to the
threads, and one that speeds up comes to the poll thread; the first calls always go to the
threads (nothing is known yet). Records on the poll thread run for at most
:data:`INLINE_RUN_S` at a time (:func:`run_here`): the rest go to the threads, so a handler
that turns slow mid-run holds the poll loop for one slow call, not a poll's worth.

Only first attempts run there: a record (or batch) whose first call fails goes on on a worker
thread, its retries with their backoff (a batch: the rest of its rule,
:mod:`lagless.engine.workers.batch`), in its lane, as if it had started there. Ordering,
commits, retries and the DLQ are unchanged; the poll loop is held only for calls measured
shorter than :data:`INLINE_CALL_S` on average (an unusually long one holds it for its own
length). ``EngineConfig(inline=False)`` (``--no-inline``) keeps every call on the worker
threads. Processes and ``async def`` handlers are not affected.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from lagless.engine.record import Record
from lagless.engine.workers.retry import (
    RetryPolicy,
    TaskResult,
    Wait,
    check_result,
    retry,
    run_each,
)

INLINE_CALL_S = 0.0002  # a call shorter than this on average may run on the poll thread
INLINE_RUN_S = 0.005  # records run on the poll thread for at most this long at a time
SLOW_CALL_S = 5 * INLINE_CALL_S  # calls longer than this on average: the wall clock suffices
BUSY_SHARE = 0.5  # ... if at least this share of it is the calling thread's CPU time
WEIGHT = 0.2  # of the newest call in the moving averages


class InlinePace:
    """Moving averages of a handler's calls (a call: a record, or a batch): wall time and the
    calling thread's CPU time. Written by the poll thread and the worker threads alike (a lost
    update only delays a switch by a call)."""

    __slots__ = ("cpu_s", "wall_s")

    def __init__(self) -> None:
        self.wall_s: float | None = None  # None: no call measured yet
        self.cpu_s = 0.0

    def note(self, wall_s: float, cpu_s: float) -> None:
        """A task's calls took ``wall_s`` (and ``cpu_s`` of its thread's CPU time)."""
        if self.wall_s is None:
            self.wall_s, self.cpu_s = wall_s, cpu_s
            return
        self.wall_s += WEIGHT * (wall_s - self.wall_s)
        self.cpu_s += WEIGHT * (cpu_s - self.cpu_s)

    def note_wall(self, wall_s: float) -> None:
        """A task's calls took ``wall_s`` on the wall clock, their CPU time unread (only while
        :attr:`slow`)."""
        if self.wall_s is not None:
            self.wall_s += WEIGHT * (wall_s - self.wall_s)

    @property
    def slow(self) -> bool:
        """Whether the calls are measured far from fast (over :data:`SLOW_CALL_S` on average):
        then the wall clock alone is noted, and a worker thread does not read its CPU time (a
        system call before and after every task, holding the GIL, while the handler's threads
        already contend for it). The CPU time is read again once the calls shorten."""
        wall = self.wall_s
        return wall is not None and wall > SLOW_CALL_S

    @property
    def fast(self) -> bool:
        """Whether the next batch's first call should run on the calling thread."""
        wall = self.wall_s
        return wall is not None and wall < INLINE_CALL_S and self.cpu_s >= BUSY_SHARE * wall


class HereRun(NamedTuple):
    """Records run on the calling thread by :func:`run_here`: ``records[:done]`` succeeded at
    their first attempt, in ``seconds`` each; ``error``: ``records[done]``'s first attempt
    raised it (after ``spent`` s), None if the run ended at its time budget or its end."""

    done: int
    seconds: list[float]
    error: BaseException | None
    spent: float
    wall_s: float  # the whole run, on the wall clock
    cpu_s: float  # ... and the calling thread's CPU time


def run_here(handler: Any, records: Sequence[Record], budget_s: float = INLINE_RUN_S) -> HereRun:
    """First attempts of ``records`` in order on this thread, until one raises, ``budget_s``
    has passed (after the record that passed it) or all ran; never raises."""
    perf = time.perf_counter
    seconds: list[float] = []
    append = seconds.append
    cpu = time.thread_time()
    start = last = perf()
    deadline = start + budget_s
    for record in records:
        try:
            result = handler(record)
            if result is not None:
                check_result(result)
        except BaseException as exc:  # any failure, whatever its kind, is the record's
            now = perf()
            return HereRun(len(seconds), seconds, exc, now - last, now - start,
                           time.thread_time() - cpu)  # fmt: skip
        now = perf()
        append(now - last)
        last = now
        if now > deadline:
            break
    return HereRun(len(seconds), seconds, None, 0.0, last - start, time.thread_time() - cpu)


def note_here(pace: InlinePace, here: HereRun) -> None:
    """Note a run's calls (the failed one too) in ``pace``, per call."""
    calls = here.done + (here.error is not None)
    if calls:
        pace.note(here.wall_s / calls, here.cpu_s / calls)


def rest_of(
    handler: Any, records: Sequence[Record], here: HereRun, policy: RetryPolicy
) -> Callable[[Wait], TaskResult]:
    """What is left of a task of ``records`` whose first ``here.done`` ran on the calling
    thread: the failed record's retries, then the records after it, each with its retries
    (:func:`lagless.engine.workers.retry.run_each`); the whole task's result."""

    def rest(wait: Wait) -> TaskResult:
        seconds = list(here.seconds)
        failed = {}
        index = here.done
        if here.error is not None:
            outcome = retry(handler, records[index], policy, wait, here.error, here.spent)
            seconds.append(outcome.seconds)
            if not outcome.ok:
                failed[index] = outcome
            index += 1
        tail = run_each(handler, records[index:], policy, wait)
        seconds.extend(tail.seconds)
        failed.update({index + at: outcome for at, outcome in tail.failed.items()})
        return TaskResult(time.time(), seconds, failed)

    return rest
