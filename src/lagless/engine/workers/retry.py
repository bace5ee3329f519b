"""Running a handler under the retry policy: exponential backoff, then give up.

:func:`run_each` runs a task's records one by one in a worker (a thread, or a process of the
pool: it and its arguments pickle) and never raises: the :class:`TaskResult` has an
:class:`Outcome` for each record that failed (attempts, the error); :func:`execute` does the
same for one record. :class:`DecodeError` is never retried.

Every exception kind ends an attempt, ``SystemExit`` and ``KeyboardInterrupt`` included (a
handler cannot end its worker). A handler must return when its work is done: a returned
coroutine, awaitable or generator means the work never ran, so the attempt fails
(:func:`check_result`); ``async def`` handlers run on the engine's event loop (``aio``).
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from lagless import stacktraces
from lagless.engine.handlers import DecodeError, Handler
from lagless.engine.record import Record

Wait = Callable[[float], object]  # sleeps; a true result means "stop retrying"
# told, before each record of a task starts, its position and how many records from the
# task's start finished well (the task's length twice at its end)
Started = Callable[[int, int], object]


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
    stacktrace: str = ""  # the last attempt's traceback (lagless.stacktraces), bounded


class TaskResult(NamedTuple):
    """How a task (records handed to one worker at once) ended.

    ``seconds``: handler time of each call (per record, or per batch call with a batch
    handler). ``failed``: position in the task -> outcome, for each record that failed for
    good or was given up because the engine stops; every other record succeeded.
    """

    finished_at: float  # wall clock, seconds since the epoch
    seconds: list[float]
    failed: dict[int, Outcome]


class UnsupportedResultError(TypeError):
    """The handler returned something that means its work did not run."""


def check_result(result: object) -> None:
    """Raise :class:`UnsupportedResultError` if ``result`` is work left undone (a coroutine, an
    awaitable, a generator); close a coroutine or generator so no warning follows."""
    if inspect.iscoroutine(result) or inspect.isgenerator(result):
        result.close()
    elif not (inspect.isawaitable(result) or inspect.isasyncgen(result)):
        return
    raise UnsupportedResultError(
        f"handler returned {type(result).__name__}, not a result: the work never ran "
        "(an async handler must be an `async def` function; return when done)"
    )


def failure(exc: BaseException, attempts: int, seconds: float, *, aborted: bool = False) -> Outcome:
    """The outcome of a record that failed with ``exc``."""
    trace = stacktraces.stacktrace(exc)
    if not aborted:
        stacktraces.log_failure(exc, attempts, trace)
    return Outcome(
        ok=False,
        attempts=attempts,
        seconds=seconds,
        finished_at=time.time(),
        error_class=type(exc).__name__,
        error_message=str(exc)[:1000],
        permanent=isinstance(exc, DecodeError),
        aborted=aborted,
        stacktrace=trace,
    )


class Attempts:
    """The bookkeeping of one record's attempts, shared by the thread loop (:func:`retry`)
    and the event loop (``aio.execute_async``): count, handler time, when to give up."""

    def __init__(self, policy: RetryPolicy, attempt: int = 0, spent: float = 0.0) -> None:
        self._policy = policy
        self._attempt = attempt
        self._spent = spent
        self._started = 0.0

    def begin(self) -> None:
        self._attempt += 1
        self._started = time.perf_counter()

    def succeeded(self) -> Outcome:
        spent = self._spent + time.perf_counter() - self._started
        return Outcome(ok=True, attempts=self._attempt, seconds=spent, finished_at=time.time())

    def failed(self, exc: BaseException) -> Outcome | float:
        """The final outcome if ``exc`` ends the record, else the delay before retrying."""
        self._spent += time.perf_counter() - self._started
        return self.judge(exc)

    def judge(self, exc: BaseException) -> Outcome | float:
        """After the current attempt failed with ``exc`` (its time counted): the final
        outcome, or the delay before the next attempt."""
        if isinstance(exc, DecodeError) or self._attempt > self._policy.retries:
            return failure(exc, self._attempt, self._spent)
        return self._policy.delay(self._attempt)

    def abandoned(self, exc: BaseException) -> Outcome:
        """Given up retrying because the engine stops (the next owner re-runs the record)."""
        return failure(exc, self._attempt, self._spent, aborted=True)


def plain_wait(seconds: float) -> bool:
    time.sleep(seconds)
    return False


def retry(
    handler: Handler,
    record: Record,
    policy: RetryPolicy,
    wait: Wait,
    exc: BaseException,
    spent: float,
) -> Outcome:
    """Attempts 2, 3, ... after the first failed with ``exc`` (``spent`` s); never raises."""
    attempts = Attempts(policy, attempt=1, spent=spent)
    verdict = attempts.judge(exc)
    while True:
        if isinstance(verdict, Outcome):
            return verdict
        if wait(verdict):
            return attempts.abandoned(exc)
        attempts.begin()
        try:
            result = handler(record)
            if result is not None:
                check_result(result)
        except BaseException as again:  # any failure, whatever its kind, is the record's
            exc = again
            verdict = attempts.failed(exc)
        else:
            return attempts.succeeded()


def execute(
    handler: Handler, record: Record, policy: RetryPolicy, wait: Wait = plain_wait
) -> Outcome:
    """Run ``handler(record)`` with retries; never raises."""
    started = time.perf_counter()
    try:
        result = handler(record)
        if result is not None:
            check_result(result)
    except BaseException as exc:  # any failure, whatever its kind, is the record's
        return retry(handler, record, policy, wait, exc, time.perf_counter() - started)
    return Outcome(
        ok=True, attempts=1, seconds=time.perf_counter() - started, finished_at=time.time()
    )


def run_each(
    handler: Handler,
    records: Sequence[Record],
    policy: RetryPolicy,
    wait: Wait = plain_wait,
    started: Started | None = None,
) -> TaskResult:
    """Run ``handler`` on each record in turn, each with its retries; never raises.

    ``started`` (if given) is told the position of each record before it starts and how many
    records before it succeeded without a failure between, then the task's length (a process
    pool uses it when its process dies: the records that surely succeeded, and the one it
    ran).
    """
    perf = time.perf_counter
    seconds: list[float] = []
    failed: dict[int, Outcome] = {}
    for index, record in enumerate(records):
        if started is not None:
            started(index, next(iter(failed)) if failed else index)
        begun = perf()
        try:
            result = handler(record)
            if result is not None:
                check_result(result)
        except BaseException as exc:  # any failure, whatever its kind, is the record's
            outcome = retry(handler, record, policy, wait, exc, perf() - begun)
            seconds.append(outcome.seconds)
            if not outcome.ok:
                failed[index] = outcome
        else:
            seconds.append(perf() - begun)
    if started is not None:
        started(len(records), next(iter(failed)) if failed else len(records))
    return TaskResult(time.time(), seconds, failed)
