"""Collect: drain the completion queue; mark records done, dead-letter or fail the failed."""

from __future__ import annotations

import logging
import time
from queue import Empty

from lagless.engine.config import OnFailure
from lagless.engine.core import EngineCore
from lagless.engine.dlq import DeadLettered
from lagless.engine.partition import DLQ, OK, SKIPPED, PartitionState
from lagless.engine.record import Record
from lagless.engine.retry import Outcome
from lagless.engine.workers import Completion
from lagless.errors import LaglessError, RecordError

log = logging.getLogger(__name__)


class Completing(EngineCore):
    """The collect step of the loop."""

    def _collect(self, wait: float) -> None:
        """Handle every completion waiting (waiting up to ``wait`` s for the first)."""
        if self._dlq is not None:
            self._dlq.poll()
        try:
            item = (
                self._completions.get(timeout=wait) if wait > 0 else self._completions.get_nowait()
            )
        except Empty:
            return
        self._last_activity = time.monotonic()
        while True:
            if isinstance(item, Completion):
                self._completed(item)
            elif isinstance(item, DeadLettered):
                self._dead_lettered(item)
            try:
                item = self._completions.get_nowait()
            except Empty:
                return

    def _current(self, record: Record, epoch: int) -> PartitionState | None:
        """The state ``record`` belongs to, None if its partition was revoked or lost since."""
        state = self._states.get((record.topic, record.partition))
        return state if state is not None and state.epoch == epoch else None

    def _completed(self, done: Completion) -> None:
        self._in_flight -= 1
        record = done.record
        state = self._current(record, done.epoch)
        if state is not None:
            state.in_flight -= 1
            self._dispatcher.release(record)
        else:  # from an earlier assignment of the partition: its lane may be waited for
            self._dispatcher.release_orphan(record)
        if done.fatal is not None:
            self._fail(LaglessError(f"worker failed on {record.coordinates}: {done.fatal}"))
            return
        outcome = done.outcome
        if state is None or outcome is None or outcome.aborted:
            return  # not ours any more, or given up because we stop: re-run by the next owner
        state.metrics.processing.observe(outcome.seconds)
        if outcome.ok:
            self._finish(state, record, outcome, OK)
        elif self._dlq is not None:
            state.dead_letters += 1
            self._dlq.publish(record, done.epoch, outcome)
        else:
            log.warning(
                "%s failed after %d attempts: %s: %s",
                record.coordinates, outcome.attempts, outcome.error_class, outcome.error_message,
            )  # fmt: skip
            if self.config.on_failure is OnFailure.SKIP:
                self._finish(state, record, outcome, SKIPPED)
            else:
                self._fail(
                    RecordError(
                        f"handler failed after {outcome.attempts} attempts: "
                        f"{outcome.error_class}: {outcome.error_message}",
                        record.coordinates,
                    )
                )

    def _dead_lettered(self, letter: DeadLettered) -> None:
        state = self._current(letter.record, letter.epoch)
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
        self._finish(state, letter.record, letter.outcome, DLQ)

    def _finish(self, state: PartitionState, record: Record, outcome: Outcome, kind: str) -> None:
        state.tracker.complete(record.offset)
        self._count(state, kind)
        if self._ledger is not None:
            self._ledger.write(record, kind, outcome.finished_at)
        if record.timestamp_ms is not None:
            ms = outcome.finished_at * 1000.0 - record.timestamp_ms
            self._latency.add(ms)
            state.metrics.e2e.observe(max(ms, 0.0) / 1000.0)
