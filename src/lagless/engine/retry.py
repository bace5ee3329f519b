"""Running a handler under the retry policy: exponential backoff, then give up.

:func:`execute` runs in a worker (a thread, or a process of the pool: it and its arguments
pickle) and never raises: the :class:`Outcome` says whether the record succeeded, how many
attempts it took and, if not, the error. :class:`DecodeError` is never retried.

Every exception kind ends an attempt, ``SystemExit`` and ``KeyboardInterrupt`` included (a
handler cannot end its worker). A handler must return when its work is done: a returned
coroutine, awaitable or generator means the work never ran, so the attempt fails
(:func:`check_result`); ``async def`` handlers run on the engine's event loop (``aio``).
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable
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


class Attempts:
    """The bookkeeping of one record's attempts, shared by the thread loop (:func:`execute`)
    and the event loop (``aio.execute_async``): count, handler time, when to give up."""

    def __init__(self, policy: RetryPolicy) -> None:
        self._policy = policy
        self._attempt = 0
        self._spent = 0.0
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
        if isinstance(exc, DecodeError) or self._attempt > self._policy.retries:
            return self._outcome(exc, aborted=False)
        return self._policy.delay(self._attempt)

    def abandoned(self, exc: BaseException) -> Outcome:
        """Given up retrying because the engine stops (the next owner re-runs the record)."""
        return self._outcome(exc, aborted=True)

    def _outcome(self, exc: BaseException, *, aborted: bool) -> Outcome:
        return Outcome(
            ok=False,
            attempts=self._attempt,
            seconds=self._spent,
            finished_at=time.time(),
            error_class=type(exc).__name__,
            error_message=str(exc)[:1000],
            permanent=isinstance(exc, DecodeError),
            aborted=aborted,
        )


def _sleep(seconds: float) -> bool:
    time.sleep(seconds)
    return False


def execute(handler: Handler, record: Record, policy: RetryPolicy, wait: Wait = _sleep) -> Outcome:
    """Run ``handler(record)`` with retries; never raises."""
    attempts = Attempts(policy)
    while True:
        attempts.begin()
        try:
            check_result(handler(record))
        except BaseException as exc:  # any failure, whatever its kind, is the record's
            verdict = attempts.failed(exc)
            if isinstance(verdict, Outcome):
                return verdict
            if wait(verdict):
                return attempts.abandoned(exc)
        else:
            return attempts.succeeded()
