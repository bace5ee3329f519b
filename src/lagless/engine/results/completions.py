"""Collect: drain the completion queue; mark records done, dead-letter or fail the failed.

A completion is one task: its records finished at once (the task's end is their end for the
e2e latency), except those its result names as failed, which go their own way one by one.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from queue import Empty

import numpy as np
from numpy.typing import NDArray

from lagless.engine.config import OnFailure
from lagless.engine.core import EngineCore
from lagless.engine.intake.messages import partition_of, stamps_ms
from lagless.engine.partitions.state import DLQ, OK, SKIPPED, PartitionState
from lagless.engine.record import Record
from lagless.engine.results.dlq import DeadLettered
from lagless.engine.workers.protocol import Completion
from lagless.engine.workers.retry import Outcome, TaskResult
from lagless.errors import LaglessError, RecordError

log = logging.getLogger(__name__)


class Completing(EngineCore):
    """The collect step of the loop."""

    def _collect(self, wait: float) -> None:
        """Handle every completion waiting (waiting up to ``wait`` s for the first)."""
        if self._dlq is not None:
            self._dlq.poll()
        completions = self._completions  # this thread alone takes from it: empty() holds
        if wait <= 0 and completions.empty():
            return
        try:
            item = completions.get(timeout=wait) if wait > 0 else completions.get_nowait()
        except Empty:
            return
        self._last_activity = time.monotonic()
        while True:
            if isinstance(item, Completion):
                self._completed(item)
            elif isinstance(item, DeadLettered):
                self._dead_lettered(item)
            if completions.empty():
                return
            item = completions.get_nowait()

    def _current(self, records: Sequence[Record], epoch: int) -> PartitionState | None:
        """The state ``records`` (of one partition) belong to, None if their partition was
        revoked or lost since."""
        state = self._states.get(partition_of(records))
        return state if state is not None and state.epoch == epoch else None

    def _completed(self, done: Completion) -> None:
        records = done.records
        count = len(records)
        self._in_flight -= count
        self._tasks -= 1
        state = self._current(records, done.epoch)
        if state is not None:
            state.in_flight -= count
            self._dispatcher.release(records)
        else:  # from an earlier assignment of the partition: its lanes may be waited for
            self._dispatcher.release_orphan(records)
        result = done.result
        if done.fatal is not None:
            if state is not None and result is not None:
                self._results(state, records, done.epoch, result)  # those that ended before
            where = records[done.fatal_at].coordinates
            self._fail(LaglessError(f"worker failed on {where}: {done.fatal}"))
            return
        if state is None or result is None:
            return  # not ours any more: re-run by the next owner
        self._results(state, records, done.epoch, result, done.stamps)

    def _results(
        self,
        state: PartitionState,
        records: Sequence[Record],
        epoch: int,
        result: TaskResult,
        stamps: NDArray[np.int64] | None = None,
    ) -> None:
        """A task's records finished: the successful ones are done, the failed go their way.
        ``stamps``: the records' timestamps, if a worker read them."""
        if result.seconds:
            self._publish.processing(state.metrics.processing, result.seconds)
            if self.config.batch_size is None:
                self._pace(result.seconds)
        failed = result.failed
        if not failed:
            self._finish(state, records, result.finished_at, OK, stamps)
            return
        self._finish(
            state,
            [r for i, r in enumerate(records) if i not in failed],
            result.finished_at,
            OK,
        )
        for index, outcome in failed.items():
            self._failed(state, records[index], epoch, outcome)

    def _pace(self, seconds: list[float]) -> None:
        """Follow a per-record handler's seconds per record (an exponential average)."""
        pace = sum(seconds) / len(seconds)
        self._record_s = pace if self._record_s is None else 0.8 * self._record_s + 0.2 * pace

    def _failed(self, state: PartitionState, record: Record, epoch: int, outcome: Outcome) -> None:
        """A record failed for good: to the DLQ, or skipped, or the engine stops."""
        if outcome.aborted:
            return  # given up because we stop: re-run by the next owner
        if self._dlq is not None:
            state.dead_letters += 1
            self._dlq.publish(record, epoch, outcome)
            return
        log.warning(
            "%s failed after %d attempts: %s: %s",
            record.coordinates, outcome.attempts, outcome.error_class, outcome.error_message,
        )  # fmt: skip
        if self.config.on_failure is OnFailure.SKIP:
            self._finish(state, [record], outcome.finished_at, SKIPPED)
        else:
            self._fail(
                RecordError(
                    f"handler failed after {outcome.attempts} attempts: "
                    f"{outcome.error_class}: {outcome.error_message}",
                    record.coordinates,
                )
            )

    def _dead_lettered(self, letter: DeadLettered) -> None:
        state = self._current((letter.record,), letter.epoch)
        if state is None:
            return
        state.dead_letters -= 1
        if letter.error is not None:  # not dead-lettered: stop, the record uncommitted
            self._fail(
                RecordError(
                    f"cannot write the dead letter to {self.config.dlq_topic!r} "
                    f"({letter.error}) of a record that failed: "
                    f"{letter.outcome.error_class}: {letter.outcome.error_message}",
                    letter.record.coordinates,
                )
            )
            return
        self.metrics.dlq_records.labels(letter.record.topic).inc()
        self._finish(state, [letter.record], letter.outcome.finished_at, DLQ)

    def _finish(
        self,
        state: PartitionState,
        records: Sequence[Record],
        finished_at: float,
        kind: str,
        stamps: NDArray[np.int64] | None = None,
    ) -> None:
        """``records`` (of ``state``'s partition) finished at ``finished_at`` (wall clock);
        ``stamps``: their timestamps, if read already."""
        if not records:
            return
        state.tracker.complete_records(records)
        self._count(state, kind, len(records), metric=False)
        if self._ledger is not None:
            for record in records:
                self._ledger.write(record, kind, finished_at)
        if stamps is None:
            stamps = stamps_ms(records)
        metrics = state.metrics
        self._publish.finished(metrics.finished[kind], metrics.e2e, stamps, finished_at)
