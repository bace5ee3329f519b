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


def failed(exc: BaseException, attempt: int, spent: float, *, aborted: bool) -> Outcome:
    """The outcome of a record whose last attempt raised ``exc``."""
    return Outcome(
        ok=False,
        attempts=attempt,
        seconds=spent,
        finished_at=time.time(),
        error_class=type(exc).__name__,
        error_message=str(exc)[:1000],
        permanent=isinstance(exc, DecodeError),
        aborted=aborted,
    )


def succeeded(attempt: int, spent: float) -> Outcome:
    return Outcome(ok=True, attempts=attempt, seconds=spent, finished_at=time.time())


def _sleep(seconds: float) -> bool:
    time.sleep(seconds)
    return False


def execute(handler: Handler, record: Record, policy: RetryPolicy, wait: Wait = _sleep) -> Outcome:
    """Run ``handler(record)`` with retries; never raises."""
    spent = 0.0
    attempt = 0
    while True:
        attempt += 1
        started = time.perf_counter()
        try:
            check_result(handler(record))
        except BaseException as exc:  # any failure, whatever its kind, is the record's
            spent += time.perf_counter() - started
            permanent = isinstance(exc, DecodeError)
            if permanent or attempt > policy.retries or wait(policy.delay(attempt)):
                return failed(
                    exc, attempt, spent, aborted=not permanent and attempt <= policy.retries
                )
        else:
            return succeeded(attempt, spent + time.perf_counter() - started)
