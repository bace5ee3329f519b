"""The fast path: a fast per-record handler runs a poll's records as they come, on the poll
thread, with the bookkeeping done once a run.

When the handler is measured fast and busy (:mod:`lagless.engine.workers.inline`), fewer
than ``--max-in-flight`` tasks are out (a call here is one more handler call at once) and a
partition holds nothing else (no record buffered, running, kept back or waiting for its dead
letter, no lane busy, the run wholly new), a poll's run of that partition goes through the
handler at once, in offset order (which every ordering allows), before anything is tracked:
the records that succeeded are then received and finished in one step of the tracker
(:meth:`~lagless.engine.offsets.tracker.PartitionTracker.passed`), counted and published
once. So a fast handler costs what it costs in a plain loop, and the records are committed as
the engine commits any record (the offset ledger, the commit policy).

What the run did not finish goes the ordinary way (:mod:`.strategy`), in order: the records
past the time budget (:data:`lagless.engine.workers.inline.INLINE_RUN_S`) or past what
``--count`` may still start are tracked and queued as fetched; a record whose first attempt
failed is tracked, its lane kept busy, and its retries go on on a worker thread (the DLQ and
``on_failure`` then as for any record), the records after it queued behind it.
"""

from __future__ import annotations

from lagless.engine.dispatch.launcher import DispatchParts, count_left
from lagless.engine.dispatch.strategy import PerRecord
from lagless.engine.offsets.tracker import PartitionTracker
from lagless.engine.partitions.state import PartitionState
from lagless.engine.record import Record
from lagless.engine.workers.inline import HereRun
from lagless.engine.workers.threads import ThreadWorkers


class FastPath:
    """Runs polled records of quiet partitions on the poll thread (see the module)."""

    def __init__(self, parts: DispatchParts, workers: ThreadWorkers) -> None:
        assert isinstance(parts.strategy, PerRecord)  # batches take the ordinary way
        self._parts = parts
        self._strategy: PerRecord = parts.strategy
        self._workers = workers

    def run(self, state: PartitionState, records: list[Record], now: float) -> list[Record]:
        """Run what of ``records`` (fetched, of ``state``'s partition, in offset order) may run
        here now; the records left for the ordinary way."""
        parts, workers, tracker = self._parts, self._workers, state.tracker
        lifecycle = parts.lifecycle
        assert isinstance(tracker, PartitionTracker)
        if (
            not workers.fast
            or state.busy
            or parts.tally.tasks >= parts.config.max_in_flight  # a call here would be one more
            or state.backlog.kept
            or lifecycle.stopping
            or lifecycle.failure is not None
            or not self._strategy.dispatcher.quiet(state.tp)
            or not tracker.passes(records[0].offset, records[-1].offset)
            or parts.offsets.holds_starts(now)
        ):
            return records
        left = count_left(parts.config.count, parts.tally, parts.owned)
        run = records if left is None or left >= len(records) else records[: max(0, left)]
        if not run:
            return records
        here = workers.run_here(run)
        done = here.done
        if done:
            finished = records[:done]
            tracker.passed(finished[-1].offset)
            state.last_timestamp_ms = finished[-1].timestamp_ms
            parts.completions.finished_here(state, finished, here.seconds)
        if workers.interrupted(here):
            raise KeyboardInterrupt  # a Ctrl-C: the caller's, not the handler's failure
        if here.error is None:
            return records[done:]
        self._retry_elsewhere(state, tracker, records[done], here, now)
        return records[done + 1 :]

    def _retry_elsewhere(
        self,
        state: PartitionState,
        tracker: PartitionTracker,
        record: Record,
        here: HereRun,
        now: float,
    ) -> None:
        """``record``'s first attempt failed here: track it, keep its lane busy, and go on with
        its retries on a worker thread as a task of its own."""
        tracker.receive_many([record.offset], now, [record.timestamp_ms])
        self._strategy.dispatcher.occupy(record)
        state.in_flight += 1
        tally = self._parts.tally
        tally.in_flight += 1
        tally.tasks += 1
        self._workers.resume([record], state.epoch, here._replace(done=0, seconds=[]))
