"""The dispatch strategy, chosen once per run: per record or per batch.

* :class:`PerRecord` (a per-record handler): each fetched message becomes a
  :class:`~lagless.engine.record.Record`, tracked offset by offset
  (:class:`~lagless.engine.offsets.tracker.PartitionTracker`) and queued in lanes
  (:class:`~lagless.engine.dispatch.lanes.Dispatcher`); a task holds as many records as take
  about the workers' task time at the handler's measured pace.
* :class:`PerBatch` (``batch_size`` set): the messages themselves stay, a run is one range of
  the :class:`~lagless.engine.offsets.range_tracker.RangeTracker` and one entry of its
  partition's :class:`~lagless.engine.dispatch.runs.RunDispatcher` queue; a task is a batch of
  ``batch_size`` records, chained behind the running one where the workers can.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from confluent_kafka import Message

from lagless.engine.config import EngineConfig
from lagless.engine.dispatch.lanes import Dispatcher
from lagless.engine.dispatch.runs import RunDispatcher
from lagless.engine.offsets.range_tracker import RangeTracker
from lagless.engine.offsets.tracker import PartitionTracker, TrackerBase
from lagless.engine.partitions.state import PartitionState
from lagless.engine.record import Record
from lagless.engine.workers.protocol import Workers
from lagless.kafka.records import timestamp_ms

MAX_TASK = 500  # records per task of a per-record handler, at most

_from_message = Record.from_message


class PerRecord:
    """Records tracked one by one, queued in lanes, run in tasks sized by the handler's pace."""

    def __init__(self, config: EngineConfig) -> None:
        self.dispatcher = Dispatcher(config.ordering, config.batch_linger_ms / 1000.0)
        self.record_s: float | None = None  # the handler's pace, seconds a record

    @staticmethod
    def tracker(committed: int | None, completed: Iterable[int]) -> TrackerBase:
        return PartitionTracker(committed, completed)

    @staticmethod
    def items(run: list[Message]) -> list[Any]:
        """What a partition holds of a poll's run: a Record per message."""
        return list(map(_from_message, run))

    def offer(self, state: PartitionState, records: list[Record], now: float) -> int:
        """Track and queue records; how many were skipped (completed by an earlier run)."""
        tracker = state.tracker
        assert isinstance(tracker, PartitionTracker)
        fresh, skipped = tracker.receive_many(
            [r.offset for r in records], now, [r.timestamp_ms for r in records]
        )
        if fresh is None:
            self.dispatcher.push_many(records, now)
        elif any(fresh):  # else all stale: re-deliveries, ignored
            self.dispatcher.push_many(
                [r for r, new in zip(records, fresh, strict=True) if new], now
            )
        state.last_timestamp_ms = records[-1].timestamp_ms
        return skipped

    def task_size(self, workers: Workers) -> int:
        """As many records as take about the workers' task time (``task_s``) at the
        handler's measured pace."""
        pace = self.record_s
        if pace is None:
            return 1
        return max(1, min(MAX_TASK, int(workers.task_s / max(pace, 1e-7))))

    def measured(self, seconds: list[float]) -> None:
        """Follow the handler's seconds per record (an exponential average)."""
        pace = sum(seconds) / len(seconds)
        self.record_s = pace if self.record_s is None else 0.8 * self.record_s + 0.2 * pace

    @staticmethod
    def chain(workers: Workers) -> bool:
        """Per-record tasks are never chained in lanes of the workers."""
        del workers
        return False


class PerBatch:
    """Runs of messages tracked as ranges, handed out as batches of ``batch_size``."""

    def __init__(self, config: EngineConfig, size: int) -> None:
        self.dispatcher = RunDispatcher(config.ordering, config.batch_linger_ms / 1000.0)
        self.size = size

    @staticmethod
    def tracker(committed: int | None, completed: Iterable[int]) -> TrackerBase:
        return RangeTracker(committed, completed)

    @staticmethod
    def items(run: list[Message]) -> list[Any]:
        """What a partition holds of a poll's run: the messages themselves."""
        return run

    def offer(self, state: PartitionState, messages: list[Message], now: float) -> int:
        """Track and queue a run; how many were skipped (completed by an earlier run)."""
        tracker = state.tracker
        assert isinstance(tracker, RangeTracker)
        state.last_timestamp_ms = timestamp_ms(messages[-1])
        if tracker.receive_run(messages, now):
            self.dispatcher.push_run(state.tp, messages, now)
            return 0
        fresh, skipped = tracker.receive_each(messages, now)
        self.dispatcher.push_run(state.tp, fresh, now)
        return skipped

    def task_size(self, workers: Workers) -> int:
        del workers
        return self.size

    def measured(self, seconds: list[float]) -> None:
        """A batch handler's pace does not size its tasks."""

    def chain(self, workers: Workers) -> bool:
        """Whether a partition's next batch is handed out behind the running one (see
        :mod:`lagless.engine.dispatch.runs`): batches in ``partition``/``key`` order, on
        threads."""
        if not workers.chains:
            return False
        self.dispatcher.chain(self.size)
        return self.dispatcher.exclusive


Strategy = PerRecord | PerBatch


def strategy_for(config: EngineConfig) -> Strategy:
    """Per batch with ``batch_size``, else per record."""
    size = config.batch_size
    return PerRecord(config) if size is None else PerBatch(config, size)
