"""Running a handler under the retry policy: exponential backoff, then give up.

:func:`execute` runs in a worker (a thread, or a process of the pool: it and its arguments
pickle) and never raises: the :class:`Outcome` says whether the record succeeded, how many
attempts it took and, if not, the error. :class:`DecodeError` is never retried.
"""

from __future__ import annotations

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
            handler(record)
        except Exception as exc:  # a handler failure, whatever it is, is the record's
            spent += time.perf_counter() - started
            permanent = isinstance(exc, DecodeError)
            if permanent or attempt > policy.retries or wait(policy.delay(attempt)):
                aborted = not permanent and attempt <= policy.retries
                return Outcome(
                    ok=False,
                    attempts=attempt,
                    seconds=spent,
                    finished_at=time.time(),
                    error_class=type(exc).__name__,
                    error_message=str(exc)[:1000],
                    permanent=permanent,
                    aborted=aborted,
                )
        else:
            spent += time.perf_counter() - started
            return Outcome(ok=True, attempts=attempt, seconds=spent, finished_at=time.time())
