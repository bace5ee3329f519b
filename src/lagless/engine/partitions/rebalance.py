"""Rebalance callbacks (run inside ``poll``, on the poll thread): assign, revoke, lost."""

from __future__ import annotations

import logging
import time
from dataclasses import replace

from confluent_kafka import Consumer, KafkaException, TopicPartition

from lagless.engine.core import EngineCore
from lagless.engine.events import EventKind
from lagless.engine.offsets import carry, offset_map
from lagless.engine.offsets.range_tracker import RangeTracker
from lagless.engine.offsets.tracker import PartitionTracker
from lagless.engine.partitions.state import PartitionKey, PartitionMetrics, PartitionState

log = logging.getLogger(__name__)

COMMITTED_TIMEOUT_S = 10.0  # reading commits in on_assign blocks the poll thread: bounded


class Rebalancing(EngineCore):
    """Partitions come and go: their states are made, drained, committed and dropped here."""

    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        started = time.monotonic()
        self._settling.changed()
        self._commit_failures_logged.clear()  # a new generation: log each failure kind again
        self._commit_failing_since = None  # and count refusals afresh
        if self._timing.first_assigned is None:
            self._timing.first_assigned = started
        self._emit(EventKind.ASSIGNED, [(tp.topic, tp.partition) for tp in partitions])
        self._rebalances += 1
        self.metrics.rebalances.labels("assign").inc()
        fresh = [tp for tp in partitions if (tp.topic, tp.partition) not in self._states]
        committed = self._committed(consumer, fresh)
        owed = self._commit_carried(consumer, [(tp.topic, tp.partition) for tp in fresh], committed)
        for tp in fresh:
            key = (tp.topic, tp.partition)
            base, completed = committed.get(key, (None, frozenset()))
            self._epoch += 1
            self._states[key] = state = PartitionState(
                key,
                self._epoch,
                (RangeTracker if self._batching else PartitionTracker)(base, completed),
                PartitionMetrics(self.metrics, tp.topic, tp.partition),
                carried=key in owed,
            )
            if base is not None and key not in owed:  # committed: owed nothing until records finish
                state.last_commit = state.acked = (base, state.tracker.offset_map())
            self._dispatcher.open(key)
        if owed:
            self._start_at(consumer, partitions, {k: committed[k][0] for k in owed})
        if fresh:
            log.info("assigned %s", ", ".join(f"{tp.topic}[{tp.partition}]" for tp in fresh))
        self.metrics.partitions_assigned.inc(len(fresh))
        self.metrics.rebalance_seconds.observe(time.monotonic() - started)
        self._last_activity = time.monotonic()
        self._revoke_due_until = 0.0
        if self.config.eager and any(carry.membership(e) for e in owed.values()):
            self._revoke_due_until = time.monotonic() + carry.revoke_due_s(self.config)
        if fresh:
            self._owned_changed()

    def _committed(
        self, consumer: Consumer, partitions: list[TopicPartition]
    ) -> dict[PartitionKey, tuple[int, frozenset[int]]]:
        """Committed offsets and the offset maps stored with them."""
        if not partitions:
            return {}
        try:
            back = consumer.committed(
                [TopicPartition(tp.topic, tp.partition) for tp in partitions],
                timeout=COMMITTED_TIMEOUT_S,
            )
        except KafkaException as exc:
            log.warning(  # the consumer still starts at the committed offsets it fetches
                "cannot read committed offsets in %.0f s: %s; offset maps not used",
                COMMITTED_TIMEOUT_S,
                exc.args[0],
            )
            return {}
        out: dict[PartitionKey, tuple[int, frozenset[int]]] = {}
        for tp in back:
            if tp.error is not None or tp.offset < 0:
                continue
            decoded = offset_map.decode(tp.metadata)
            completed = (
                decoded[1] if decoded is not None and decoded[0] == tp.offset else frozenset()
            )
            if completed:
                log.info(
                    "%s[%d]: %d records above offset %d were completed by an earlier run",
                    tp.topic, tp.partition, len(completed), tp.offset,
                )  # fmt: skip
            out[(tp.topic, tp.partition)] = (tp.offset, completed)
        return out

    def _commit_carried(
        self,
        consumer: Consumer,
        keys: list[PartitionKey],
        committed: dict[PartitionKey, tuple[int, frozenset[int]]],
    ) -> dict[PartitionKey, object]:
        """Commit what the last revoke could not (see :mod:`lagless.engine.offsets.carry`) for the
        partitions this member owns again, before the consumer reads where to start: the
        records done are neither fetched nor run again (``committed`` is updated). Where
        another member committed beyond it meanwhile, its commit stands. The others went to
        another member: logged once with their coordinates. Returns the partitions whose
        commit was refused again, with the error: this member still starts after the records
        it ran (see :meth:`_start_at`) and owes their commit."""
        carried, self._carried = self._carried, {}
        back = [
            k for k in keys
            if k in carried and (k not in committed or committed[k][0] < carried[k].offset)
        ]  # fmt: skip
        errors: dict[PartitionKey, object] = {}
        if back:
            offsets = [TopicPartition(*k, carried[k].offset, metadata=carried[k].metadata)
                       for k in back]  # fmt: skip
            try:
                result = consumer.commit(offsets=offsets, asynchronous=False)
                errors = {(tp.topic, tp.partition): tp.error for tp in result if tp.error}
            except KafkaException as exc:
                errors = {k: exc.args[0] for k in back}
        for key in back:  # refused or not, this member ran them: it starts after them
            owed = carried[key]
            decoded = offset_map.decode(owed.metadata)
            done = decoded[1] if decoded is not None and decoded[0] == owed.offset else None
            committed[key] = (owed.offset, done or frozenset())
        if len(errors) < len(back):
            self._commit_accepted()
            log.info(
                "committed after the rebalance what could not be before it: %s",
                ", ".join(f"{t}[{p}] offset {carried[(t, p)].offset}"
                          for t, p in back if (t, p) not in errors),
            )  # fmt: skip
        if errors:
            again = {k: replace(carried[k], error=carry.name(e)) for k, e in errors.items()}
            log.warning(
                "commit refused again after the rebalance: %s; this member owns these "
                "partitions, starts after the records it ran and commits them next",
                carry.listed(again),
            )
        carry.log_uncommitted(
            {k: o for k, o in carried.items() if k not in keys},
            "carried from the last generation, now owned by another member",
        )
        return errors

    def _start_at(
        self, consumer: Consumer, partitions: list[TopicPartition], starts: dict[PartitionKey, int]
    ) -> None:
        """Assign ``partitions`` from the callback itself (librdkafka then does not, on every
        group protocol): those in ``starts`` at that offset, whose carried commit was refused
        again (the group holds a lower offset), the others as given (where committed)."""
        offsets = [
            TopicPartition(tp.topic, tp.partition, starts.get((tp.topic, tp.partition), tp.offset))
            for tp in partitions
        ]
        if self.config.eager:
            consumer.assign(offsets)
        else:
            consumer.incremental_assign(offsets)

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        """Stop dispatching, wait for in-flight records up to the budget, commit, release."""
        started = time.monotonic()
        self._settling.changed()
        self.metrics.rebalances.labels("revoke").inc()
        states = self._release([(tp.topic, tp.partition) for tp in partitions])
        if states:
            log.info("revoked %s", ", ".join(f"{s.tp[0]}[{s.tp[1]}]" for s in states))
        if not self._closing:
            deadline = started + self.config.revoke_budget_s
            while any(s.busy for s in states) and time.monotonic() < deadline:
                self._collect(wait=0.02)
                self._dispatch()
            unfinished = sum(s.in_flight for s in states)
            if unfinished:
                log.warning("revoke: %d records still running after the budget", unfinished)
            failed = self._commit_retrying(states, time.monotonic() + carry.REVOKE_RETRY_S)
            for state in states:  # committed in the next generation if they come back
                owed = self._owed(state, failed[state.tp]) if state.tp in failed else None
                if owed is not None:
                    self._carried[state.tp] = owed
        self._drop(states)
        self._revoked += len(states)
        self.metrics.partitions_revoked.inc(len(states))
        self.metrics.rebalance_seconds.observe(time.monotonic() - started)
        self._emit(EventKind.REVOKED, [s.tp for s in states])
        self._revoke_due_until = 0.0
        self._owned_changed()

    def _on_lost(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        """Partitions lost (the session ended or the member was fenced; another member may
        own them already): dropped without a commit. What finished and was not committed is
        carried (see :mod:`lagless.engine.offsets.carry`): committed if the partition comes back to
        this member, else logged with its coordinates."""
        self._settling.changed()
        self.metrics.rebalances.labels("lost").inc()
        states = self._release([(tp.topic, tp.partition) for tp in partitions])
        owed = {s.tp: o for s in states if (s.finished or s.carried)
                and (o := self._owed(s, "lost")) is not None
                and (o.offset, o.metadata) != s.acked}  # fmt: skip
        self._carried.update(owed)
        self._drop(states)
        self._lost += len(states)
        self.metrics.partitions_lost.inc(len(states))
        self._emit(EventKind.LOST, [s.tp for s in states])
        self._revoke_due_until = 0.0
        self._owned_changed()
        if states:
            log.warning(
                "lost %s without commit (session ended or member fenced)%s",
                ", ".join(f"{t}[{p}]" for t, p in sorted(s.tp for s in states)),
                "; finished, not committed yet: " + ", ".join(
                    f"{t}[{p}] below offset {o.offset}" for (t, p), o in sorted(owed.items())
                ) if owed else "",
            )  # fmt: skip

    def _release(self, keys: list[PartitionKey]) -> list[PartitionState]:
        """Stop dispatching ``keys``; their states, still registered for completions."""
        states = [self._states[k] for k in keys if k in self._states]
        for state in states:
            self._dispatcher.close(state.tp)
            if state.backlog.paused:
                self._resume(state)  # leave librdkafka's pause flag clean for a later owner
        return states

    def _drop(self, states: list[PartitionState]) -> None:
        for state in states:
            self._states.pop(state.tp, None)
            state.metrics.clear_gauges()
            self._tally(state)

    def _tally(self, state: PartitionState) -> None:
        name = f"{state.tp[0]}[{state.tp[1]}]"
        self._per_partition[name] = self._per_partition.get(name, 0) + state.finished
        state.finished = 0
