"""Running a handler under the retry policy: exponential backoff, then give up.

:func:`run_each` runs a task's records one by one in a worker (a thread, or a process of the
pool: it and its arguments pickle) and never raises: the :class:`TaskResult` has an
:class:`Outcome` for each record that failed (attempts, the error); :func:`execute` does the
same for one record. :class:`DecodeError` is never retried.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from lagless.engine.handlers import DecodeError, Handler
from lagless.engine.record import Record

Wait = Callable[[float], object]  # sleeps; a true result means "stop retrying"


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """``retries`` more attempts after the first, waiting ``backoff_s`` doubling to a cap."""

    retries: int = 3
    backoff_s: float = 0.1
    backoff_max_s: float = 5.0

    def delay(self, attempt: int) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based)."""
        return float(min(self.backoff_max_s, self.backoff_s * 2 ** (attempt - 1)))


class Outcome(NamedTuple):
    """How handling one record ended (a tuple: made once per record, cheaply)."""

    ok: bool
    attempts: int
    seconds: float  # handler time over all attempts
    finished_at: float  # wall clock, seconds since the epoch
    error_class: str = ""
    error_message: str = ""
    permanent: bool = False  # a DecodeError: retrying cannot help
    aborted: bool = False  # gave up retrying because the engine is stopping


class TaskResult(NamedTuple):
    """How a task (records handed to one worker at once) ended.

    ``seconds``: handler time of each call (per record, or per batch call with a batch
    handler). ``failed``: position in the task -> outcome, for each record that failed for
    good or was given up because the engine stops; every other record succeeded.
    """

    finished_at: float  # wall clock, seconds since the epoch
    seconds: list[float]
    failed: dict[int, Outcome]


def plain_wait(seconds: float) -> bool:
    time.sleep(seconds)
    return False


def failure(exc: Exception, attempts: int, seconds: float, *, aborted: bool = False) -> Outcome:
    """The outcome of a record that failed with ``exc``."""
    return Outcome(
        ok=False,
        attempts=attempts,
        seconds=seconds,
        finished_at=time.time(),
        error_class=type(exc).__name__,
        error_message=str(exc)[:1000],
        permanent=isinstance(exc, DecodeError),
        aborted=aborted,
    )


def retry(
    handler: Handler, record: Record, policy: RetryPolicy, wait: Wait, exc: Exception, spent: float
) -> Outcome:
    """Attempts 2, 3, ... after the first failed with ``exc`` (``spent`` s); never raises."""
    attempt = 1
    while True:
        if isinstance(exc, DecodeError) or attempt > policy.retries:
            return failure(exc, attempt, spent)
        if wait(policy.delay(attempt)):
            return failure(exc, attempt, spent, aborted=True)
        attempt += 1
        started = time.perf_counter()
        try:
            handler(record)
        except Exception as again:  # a handler failure, whatever it is, is the record's
            spent += time.perf_counter() - started
            exc = again
        else:
            spent += time.perf_counter() - started
            return Outcome(ok=True, attempts=attempt, seconds=spent, finished_at=time.time())


def execute(
    handler: Handler, record: Record, policy: RetryPolicy, wait: Wait = plain_wait
) -> Outcome:
    """Run ``handler(record)`` with retries; never raises."""
    started = time.perf_counter()
    try:
        handler(record)
    except Exception as exc:  # a handler failure, whatever it is, is the record's
        return retry(handler, record, policy, wait, exc, time.perf_counter() - started)
    return Outcome(
        ok=True, attempts=1, seconds=time.perf_counter() - started, finished_at=time.time()
    )


def run_each(
    handler: Handler, records: Sequence[Record], policy: RetryPolicy, wait: Wait = plain_wait
) -> TaskResult:
    """Run ``handler`` on each record in turn, each with its retries; never raises."""
    perf = time.perf_counter
    seconds: list[float] = []
    failed: dict[int, Outcome] = {}
    for index, record in enumerate(records):
        started = perf()
        try:
            handler(record)
        except Exception as exc:  # a handler failure, whatever it is, is the record's
            outcome = retry(handler, record, policy, wait, exc, perf() - started)
            seconds.append(outcome.seconds)
            if not outcome.ok:
                failed[index] = outcome
        else:
            seconds.append(perf() - started)
    return TaskResult(time.time(), seconds, failed)
