"""Batch handlers: a handler called with a sequence of records, and what its failure means.

The rule (run in a worker; never raises):

1. **Attempts.** The handler is called with the batch. Returning ``None`` means every record
   succeeded. Returning a mapping ``{record: exception}`` means exactly those records failed
   (partial results) and the others succeeded. Raising means the whole call failed. Any other
   return value is a handler bug and fails the call like an exception (``TypeError``).
   Failed records are tried again — only they, as one batch — up to ``retries`` more times
   with the retry policy's backoff. A :class:`DecodeError` is never retried.
2. **Named failures are final.** Records the handler named as failed in the last attempt
   failed for good, each with its own exception.
3. **A batch that raised on its last attempt is split** to find the failing records: it is
   halved, each half called once (no more retries: the batch's are spent); a half that
   succeeds is done, a half that names failures ends as in 2, a half that raises is halved
   again; a single record that raises failed for good with that exception.

A record that failed for good then goes to the DLQ (or stops/skips the engine per
``on_failure``), alone: the rest of its batch is finished and committed. ``attempts`` in its
DLQ headers counts the calls that included it. When the engine stops during the backoff the
remaining records are given up (not finished, not committed: re-run by the next owner).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

from lagless.engine.handlers import BatchHandler, DecodeError
from lagless.engine.record import Record
from lagless.engine.retry import Outcome, RetryPolicy, TaskResult, Wait, failure, plain_wait


class _Call:
    """One batch call's result: ``errors`` maps positions in the batch to their exceptions;
    ``raised`` is set when the whole call failed."""

    __slots__ = ("errors", "raised")

    def __init__(self, errors: dict[int, Exception], raised: Exception | None) -> None:
        self.errors = errors
        self.raised = raised


def _named(result: object, batch: Sequence[Record]) -> dict[int, Exception]:
    """Positions and exceptions of the records a handler's result names as failed."""
    if result is None:
        return {}
    if not isinstance(result, Mapping):
        raise TypeError(
            f"batch handler returned {type(result).__name__}: return None (all succeeded) "
            "or a mapping {record: exception} of the records that failed"
        )
    if not result:
        return {}
    where = {id(record): pos for pos, record in enumerate(batch)}
    errors: dict[int, Exception] = {}
    for record, exc in result.items():
        pos = where.get(id(record))
        if pos is None:
            raise TypeError(f"batch handler named a record not in its batch: {record!r:.200}")
        errors[pos] = exc if isinstance(exc, Exception) else RuntimeError(str(exc))
    return errors


def _call(handler: BatchHandler, batch: Sequence[Record], seconds: list[float]) -> _Call:
    started = time.perf_counter()
    try:
        errors = _named(handler(batch), batch)
    except Exception as exc:  # a handler failure, whatever it is, is the batch's
        seconds.append(time.perf_counter() - started)
        return _Call({}, exc)
    seconds.append(time.perf_counter() - started)
    return _Call(errors, None)


class _Run:
    """One task run under the rule above."""

    def __init__(
        self, handler: BatchHandler, records: Sequence[Record], policy: RetryPolicy, wait: Wait
    ) -> None:
        self.handler = handler
        self.records = records
        self.policy = policy
        self.wait = wait
        self.seconds: list[float] = []
        self.failed: dict[int, Outcome] = {}
        self.calls = [0] * len(records)  # calls that included each record

    def call(self, indices: list[int]) -> _Call:
        for i in indices:
            self.calls[i] += 1
        return _call(self.handler, [self.records[i] for i in indices], self.seconds)

    def fail(self, index: int, exc: Exception, *, aborted: bool = False) -> None:
        self.failed[index] = failure(exc, self.calls[index], 0.0, aborted=aborted)

    def attempts(self) -> None:
        pending = list(range(len(self.records)))
        attempt = 0
        while True:
            attempt += 1
            result = self.call(pending)
            if result.raised is None and not result.errors:
                return
            if result.raised is None:
                named = {pending[pos]: exc for pos, exc in result.errors.items()}
                pending = sorted(named)
                permanent = all(isinstance(e, DecodeError) for e in named.values())
            else:
                named = {}
                permanent = isinstance(result.raised, DecodeError)
            if permanent or attempt > self.policy.retries:
                break
            if self.wait(self.policy.delay(attempt)):
                for i in pending:
                    exc = named.get(i, result.raised)
                    assert exc is not None
                    self.fail(i, exc, aborted=True)
                return
        if result.raised is None:
            for i, exc in named.items():
                self.fail(i, exc)
        else:
            self.split(pending, result.raised)

    def split(self, indices: list[int], raised: Exception) -> None:
        """Halve a failed batch until the records that fail are alone (one call each half)."""
        if len(indices) == 1:
            self.fail(indices[0], raised)
            return
        middle = len(indices) // 2
        for half in (indices[:middle], indices[middle:]):
            result = self.call(half)
            if result.raised is not None:
                self.split(half, result.raised)
            else:
                for pos, exc in result.errors.items():
                    self.fail(half[pos], exc)


def run_batch(
    handler: BatchHandler, records: Sequence[Record], policy: RetryPolicy, wait: Wait = plain_wait
) -> TaskResult:
    """Run a batch handler on ``records`` under the rule above; never raises."""
    run = _Run(handler, records, policy, wait)
    run.attempts()
    return TaskResult(time.time(), run.seconds, run.failed)
