"""Batch handlers: a handler called with a sequence of records, and what its failure means.

The rule (run in a worker; never raises):

1. **Attempts.** The handler is called with the batch. Returning ``None`` means every record
   succeeded. Returning a mapping ``{record: exception}`` means exactly those records failed
   (partial results) and the others succeeded. Raising (any exception kind, ``SystemExit``
   included) means the whole call failed. Returning a coroutine, awaitable or generator means
   the work never ran (``UnsupportedResultError``, as for per-record handlers); any other
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

An ``async def`` batch handler follows the same rule on the engine's event loop
(:func:`run_batch_async`).
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Generator, Mapping, Sequence
from typing import Any

from lagless.engine.handlers import BatchHandler, DecodeError
from lagless.engine.intake.messages import MessageBatch
from lagless.engine.record import Record
from lagless.engine.workers.retry import (
    Outcome,
    RetryPolicy,
    TaskResult,
    UnsupportedResultError,
    Wait,
    check_result,
    failure,
    plain_wait,
)


class _Call:
    """One batch call's result: ``errors`` maps positions in the batch to their exceptions;
    ``raised`` is set when the whole call failed."""

    __slots__ = ("errors", "raised")

    def __init__(self, errors: dict[int, BaseException], raised: BaseException | None) -> None:
        self.errors = errors
        self.raised = raised


def _named(result: object, batch: Sequence[Record]) -> dict[int, BaseException]:
    """Positions and exceptions of the records a handler's result names as failed."""
    if result is None:
        return {}
    check_result(result)
    if not isinstance(result, Mapping):
        raise TypeError(
            f"batch handler returned {type(result).__name__}: return None (all succeeded) "
            "or a mapping {record: exception} of the records that failed"
        )
    if not result:
        return {}
    # a batch is of one partition: a record's offset names it (records are made on access,
    # so the handler may hold an equal record, not the same object)
    offsets = batch.offsets() if isinstance(batch, MessageBatch) else [r.offset for r in batch]
    where = {offset: pos for pos, offset in enumerate(offsets)}
    errors: dict[int, BaseException] = {}
    for record, exc in result.items():
        pos = where.get(record.offset) if isinstance(record, Record) else None
        if pos is None or batch[pos] != record:
            raise TypeError(f"batch handler named a record not in its batch: {record!r:.200}")
        errors[pos] = exc if isinstance(exc, BaseException) else RuntimeError(str(exc))
    return errors


def _given(batch: Sequence[Record]) -> Sequence[Record]:
    """What the handler gets: the batch itself if immutable (a :class:`MessageBatch`), else
    a copy (a worker process's list): a handler that mutates its list (pops, clears, sorts)
    changes nothing the rule retries, splits, or matches named records against."""
    return batch if isinstance(batch, MessageBatch) else list(batch)


def _call(handler: BatchHandler, batch: Sequence[Record], seconds: list[float]) -> _Call:
    started = time.perf_counter()
    try:
        errors = _named(handler(_given(batch)), batch)
    except BaseException as exc:  # any failure, whatever its kind, is the batch's
        seconds.append(time.perf_counter() - started)
        return _Call({}, exc)
    seconds.append(time.perf_counter() - started)
    return _Call(errors, None)


async def _call_async(handler: Any, batch: Sequence[Record], seconds: list[float]) -> _Call:
    """:func:`_call` for an ``async def`` batch handler (awaited on the engine's loop)."""
    started = time.perf_counter()
    try:
        result = handler(_given(batch))
        if not inspect.isawaitable(result):
            raise UnsupportedResultError(
                f"async handler returned {type(result).__name__}, not an awaitable"
            )
        errors = _named(await result, batch)
    except asyncio.CancelledError:
        raise
    except BaseException as exc:  # any failure, whatever its kind, is the batch's
        seconds.append(time.perf_counter() - started)
        return _Call({}, exc)
    seconds.append(time.perf_counter() - started)
    return _Call(errors, None)


# What the rule asks for next: a call of the handler on these positions, or a backoff wait.
_Step = tuple[str, Any]  # ("call", positions) or ("wait", seconds)


class _Run:
    """One task run under the rule above. :meth:`steps` is the rule, as a generator of the
    calls and waits it needs (answered with a :class:`_Call`, or True to stop retrying), so
    one rule serves threads (:func:`run_batch`) and the event loop (:func:`run_batch_async`).
    """

    def __init__(self, records: Sequence[Record], policy: RetryPolicy) -> None:
        self.records = records
        self.policy = policy
        self.seconds: list[float] = []
        self.failed: dict[int, Outcome] = {}
        self.whole = 0  # calls with the whole batch (the task's sequence itself)
        self.calls = [0] * len(records)  # other calls that included each record

    def batch(self, indices: list[int]) -> Sequence[Record]:
        if len(indices) == len(self.records):
            self.whole += 1
            return self.records
        for i in indices:
            self.calls[i] += 1
        return [self.records[i] for i in indices]

    def fail(self, index: int, exc: BaseException, *, aborted: bool = False) -> None:
        attempts = self.whole + self.calls[index]
        self.failed[index] = failure(exc, attempts, 0.0, aborted=aborted)

    def steps(self) -> Generator[_Step, Any, None]:
        pending = list(range(len(self.records)))
        attempt = 0
        while True:
            attempt += 1
            result: _Call = yield ("call", pending)
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
            stop = yield ("wait", self.policy.delay(attempt))
            if stop:
                for i in pending:
                    exc = named.get(i, result.raised)
                    assert exc is not None
                    self.fail(i, exc, aborted=True)
                return
        if result.raised is None:
            for i, exc in named.items():
                self.fail(i, exc)
        else:
            yield from self.split(pending, result.raised)

    def split(self, indices: list[int], raised: BaseException) -> Generator[_Step, Any, None]:
        """Halve a failed batch until the records that fail are alone (one call each half)."""
        if len(indices) == 1:
            self.fail(indices[0], raised)
            return
        middle = len(indices) // 2
        for half in (indices[:middle], indices[middle:]):
            result: _Call = yield ("call", half)
            if result.raised is not None:
                yield from self.split(half, result.raised)
            else:
                for pos, exc in result.errors.items():
                    self.fail(half[pos], exc)


class BatchRun:
    """The rule above on one task, driven on a thread. :meth:`advance` runs its steps; with
    ``first_only`` it stops before anything beyond the first call (a retry's backoff, another
    call), so the first call can run on one thread (the poll loop's: see
    :class:`lagless.engine.workers.threads.ThreadWorkers`) and the rest of the rule on another."""

    __slots__ = ("_answer", "_handler", "_next", "_run", "_steps")

    def __init__(
        self, handler: BatchHandler, records: Sequence[Record], policy: RetryPolicy
    ) -> None:
        self._handler = handler
        self._run = _Run(records, policy)
        self._steps = self._run.steps()
        self._next: _Step | None = None  # a step taken from the rule, not yet carried out
        self._answer: Any = None

    def advance(self, wait: Wait, *, first_only: bool = False) -> TaskResult | None:
        """Carry out the rule's steps to its end: the task's result. ``first_only``: None as
        soon as a step beyond the first call comes (call :meth:`advance` again to go on)."""
        run = self._run
        while True:
            step = self._next
            if step is None:
                try:
                    step = self._steps.send(self._answer)
                except StopIteration:
                    return TaskResult(time.time(), run.seconds, run.failed)
            if first_only and run.seconds:
                self._next = step
                return None
            self._next = None
            kind, arg = step
            if kind == "call":
                self._answer = _call(self._handler, run.batch(arg), run.seconds)
            else:
                self._answer = bool(wait(arg))

    @property
    def interrupted(self) -> bool:
        """The first call raised KeyboardInterrupt: a Ctrl-C (the caller's to raise, not the
        handler's failure) or the handler's own (its failure); the caller tells which."""
        answer = self._answer
        return isinstance(answer, _Call) and isinstance(answer.raised, KeyboardInterrupt)


def run_batch(
    handler: BatchHandler, records: Sequence[Record], policy: RetryPolicy, wait: Wait = plain_wait
) -> TaskResult:
    """Run a batch handler on ``records`` under the rule above; never raises."""
    result = BatchRun(handler, records, policy).advance(wait)
    assert result is not None
    return result


async def run_batch_async(
    handler: Any, records: Sequence[Record], policy: RetryPolicy, stopping: asyncio.Event
) -> TaskResult:
    """:func:`run_batch` for an ``async def`` batch handler, on the engine's event loop (the
    backoff is cut short when the engine stops); never raises but ``CancelledError``."""
    run = _Run(records, policy)
    steps = run.steps()
    answer: Any = None
    while True:
        try:
            kind, arg = steps.send(answer)
        except StopIteration:
            break
        if kind == "call":
            answer = await _call_async(handler, run.batch(arg), run.seconds)
        else:
            try:
                await asyncio.wait_for(stopping.wait(), arg)
            except TimeoutError:
                answer = False
            else:
                answer = True
    return TaskResult(time.time(), run.seconds, run.failed)
