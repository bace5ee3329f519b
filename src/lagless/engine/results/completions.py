"""Collect: drain the inbox; mark records done, dead-letter or fail the failed.

A completion is one task: its records finished at once (the task's end is their end for the
e2e latency), except those its result names as failed, which go their own way one by one.
What finished is marked in its partition's tracker (so the offset ledger can commit past it),
counted in the tally, written to the record ledger and published as metrics in bulk.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from operator import attrgetter
from queue import Empty

import numpy as np
from numpy.typing import NDArray

from lagless.engine.config import EngineConfig, OnFailure
from lagless.engine.dispatch.strategy import PerRecord, Strategy
from lagless.engine.intake.messages import partition_of, stamps_ms
from lagless.engine.lifecycle import Lifecycle
from lagless.engine.partitions.owned import Owned
from lagless.engine.partitions.state import DLQ, OK, SKIPPED, PartitionKey, PartitionState
from lagless.engine.record import Record
from lagless.engine.results.dlq import DeadLettered, DeadLetterQueue
from lagless.engine.results.ledger import Ledger
from lagless.engine.results.publish import Publisher
from lagless.engine.tally import Tally
from lagless.engine.workers.inbox import Inbox
from lagless.engine.workers.protocol import Completion
from lagless.engine.workers.retry import Outcome, TaskResult
from lagless.errors import LaglessError, RecordError
from lagless.observe.metrics import Metrics

log = logging.getLogger(__name__)

_by_offset = attrgetter("offset")


class Completions:
    """The collect step of the loop (on the poll thread)."""

    def __init__(
        self,
        config: EngineConfig,
        metrics: Metrics,
        inbox: Inbox,
        owned: Owned,
        strategy: Strategy,
        tally: Tally,
        lifecycle: Lifecycle,
        publisher: Publisher,
        records: Ledger | None,
    ) -> None:
        self._config = config
        self._metrics = metrics
        self.inbox = inbox
        self._owned = owned
        self._strategy = strategy
        self._tally = tally
        self._lifecycle = lifecycle
        self._publish = publisher
        self._records = records
        self.dlq: DeadLetterQueue | None = None  # set when the run starts, with a DLQ topic
        self._merges = isinstance(strategy, PerRecord)  # tasks of records, not batches

    def collect(self, wait: float) -> None:
        """Handle every completion waiting (waiting up to ``wait`` s for the first).

        The per-record tasks that simply succeeded are handled together per partition
        (:meth:`_succeeded`): with a handler of milliseconds a task is one record, and
        hundreds of threads finish thousands of them a second."""
        if self.dlq is not None:
            self.dlq.poll()
        inbox = self.inbox  # this thread alone takes from it: empty() holds
        if wait <= 0 and inbox.empty():
            return
        try:
            item = inbox.get(timeout=wait) if wait > 0 else inbox.get_nowait()
        except Empty:
            return
        self._lifecycle.last_activity = time.monotonic()
        plain: list[Completion] = []  # succeeded, not handled yet (in arrival order)
        while True:
            if type(item) is Completion:
                result = item.result
                if result is not None and not result.failed and item.fatal is None and self._merges:
                    plain.append(item)
                else:
                    if plain:  # in arrival order
                        self._succeeded(plain)
                        plain = []
                    self._completed(item)
            elif isinstance(item, DeadLettered):
                if plain:
                    self._succeeded(plain)
                    plain = []
                self._dead_lettered(item)
            if inbox.empty():
                break
            item = inbox.get_nowait()
        if plain:
            self._succeeded(plain)

    def _succeeded(self, done: list[Completion]) -> None:
        """Per-record tasks whose records all succeeded, handled per partition (and
        assignment) at once: as :meth:`_completed` would one by one."""
        if len(done) == 1:
            self._completed(done[0])
            return
        groups: dict[tuple[PartitionKey, int], list[Completion]] = {}
        for item in done:
            first = item.records[0]
            key = ((first.topic, first.partition), item.epoch)
            group = groups.get(key)
            if group is None:
                groups[key] = [item]
            else:
                group.append(item)
        tally, dispatcher, strategy = self._tally, self._strategy.dispatcher, self._strategy
        for (tp, epoch), group in groups.items():
            if len(group) == 1:
                self._completed(group[0])
                continue
            records = [record for item in group for record in item.records]
            count = len(records)
            tally.in_flight -= count
            tally.tasks -= len(group)
            state = self._owned.states.get(tp)
            if state is None or state.epoch != epoch:  # not ours any more
                for item in group:
                    dispatcher.release_orphan(item.records)
                continue
            state.in_flight -= count
            dispatcher.release(records)  # a lane is in one task at a time: released once
            seconds: list[float] = []
            for item in group:
                assert item.result is not None
                seconds.extend(item.result.seconds)
                strategy.measured(item.result.seconds)  # as task by task
            self._publish.processing(state.metrics.processing, seconds)
            state.tracker.complete_records(sorted(records, key=_by_offset))
            self._tally.count(state, OK, count, metric=False)
            if self._records is not None:
                for item in group:
                    assert item.result is not None
                    for record in item.records:
                        self._records.write(record, OK, item.result.finished_at)
            read = [item.stamps for item in group if item.stamps is not None]
            stamps = np.concatenate(read) if len(read) == len(group) else stamps_ms(records)
            metrics = state.metrics
            self._publish.finished_tasks(
                metrics.finished[OK],
                metrics.e2e,
                stamps,
                [item.result.finished_at for item in group if item.result is not None],
                [len(item.records) for item in group],
            )

    def _current(self, records: Sequence[Record], epoch: int) -> PartitionState | None:
        """The state ``records`` (of one partition) belong to, None if their partition was
        revoked or lost since."""
        state = self._owned.states.get(partition_of(records))
        return state if state is not None and state.epoch == epoch else None

    def _completed(self, done: Completion) -> None:
        records = done.records
        count = len(records)
        tally = self._tally
        tally.in_flight -= count
        tally.tasks -= 1
        state = self._current(records, done.epoch)
        dispatcher = self._strategy.dispatcher
        if state is not None:
            state.in_flight -= count
            dispatcher.release(records)
        else:  # from an earlier assignment of the partition: its lanes may be waited for
            dispatcher.release_orphan(records)
        result = done.result
        if done.fatal is not None:
            if state is not None and result is not None:
                self._results(state, records, done.epoch, result)  # those that ended before
            where = records[done.fatal_at].coordinates
            self._lifecycle.fail(LaglessError(f"worker failed on {where}: {done.fatal}"))
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
            self._strategy.measured(result.seconds)
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

    def _failed(self, state: PartitionState, record: Record, epoch: int, outcome: Outcome) -> None:
        """A record failed for good: to the DLQ, or skipped, or the engine stops."""
        if outcome.aborted:
            return  # given up because we stop: re-run by the next owner
        if self.dlq is not None:
            state.dead_letters += 1
            self.dlq.publish(record, epoch, outcome)
            return
        log.warning(
            "%s failed after %d attempts: %s: %s",
            record.coordinates, outcome.attempts, outcome.error_class, outcome.error_message,
        )  # fmt: skip
        if self._config.on_failure is OnFailure.SKIP:
            self._finish(state, [record], outcome.finished_at, SKIPPED)
        else:
            self._lifecycle.fail(
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
            self._lifecycle.fail(
                RecordError(
                    f"cannot write the dead letter to {self._config.dlq_topic!r} "
                    f"({letter.error}) of a record that failed: "
                    f"{letter.outcome.error_class}: {letter.outcome.error_message}",
                    letter.record.coordinates,
                )
            )
            return
        self._metrics.dlq_records.labels(letter.record.topic).inc()
        self._finish(state, [letter.record], letter.outcome.finished_at, DLQ)

    def finished_here(
        self, state: PartitionState, records: Sequence[Record], seconds: list[float]
    ) -> None:
        """``records`` of ``state``'s partition ran on the poll thread (the fast path, see
        :mod:`lagless.engine.dispatch.fast_path`) and succeeded, in ``seconds`` each; their
        tracker knows already."""
        self._publish.processing(state.metrics.processing, seconds)
        self._strategy.measured(seconds)
        self._counted(state, records, time.time(), OK, None)

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
        self._counted(state, records, finished_at, kind, stamps)

    def _counted(
        self,
        state: PartitionState,
        records: Sequence[Record],
        finished_at: float,
        kind: str,
        stamps: NDArray[np.int64] | None,
    ) -> None:
        """Count finished ``records``: the tally, the record ledger, the metrics."""
        self._tally.count(state, kind, len(records), metric=False)
        if self._records is not None:
            for record in records:
                self._records.write(record, kind, finished_at)
        if stamps is None:
            stamps = stamps_ms(records)
        metrics = state.metrics
        self._publish.finished(metrics.finished[kind], metrics.e2e, stamps, finished_at)
