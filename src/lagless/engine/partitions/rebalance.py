"""Rebalance callbacks (run inside ``poll``, on the poll thread): assign, revoke, lost.

Partitions come and go here: their states are made (with what the offset ledger reads back and
commits of what an earlier generation carried), drained, committed and dropped. A revoke waits
for the partitions' records in flight up to ``revoke_budget_s`` (collecting completions and
starting what their lanes let start), then commits synchronously; what the group refuses is
carried by the offset ledger into the member's next generation.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from confluent_kafka import Consumer, KafkaException, TopicPartition

from lagless.engine.config import EngineConfig
from lagless.engine.dispatch.launcher import Launcher
from lagless.engine.dispatch.strategy import Strategy
from lagless.engine.events import EventKind
from lagless.engine.intake.poll import Intake
from lagless.engine.lifecycle import Lifecycle
from lagless.engine.offsets import carry
from lagless.engine.offsets.commits import OffsetLedger
from lagless.engine.offsets.committed import read_committed
from lagless.engine.partitions.owned import Owned
from lagless.engine.partitions.state import PartitionKey, PartitionMetrics, PartitionState
from lagless.engine.results.completions import Completions
from lagless.engine.tally import Tally
from lagless.engine.watch.settle import Settling
from lagless.errors import ClusterError
from lagless.observe.metrics import Metrics

log = logging.getLogger(__name__)


class Rebalance:
    """The consumer's ``on_assign``, ``on_revoke`` and ``on_lost`` callbacks."""

    def __init__(
        self,
        config: EngineConfig,
        metrics: Metrics,
        owned: Owned,
        strategy: Strategy,
        offsets: OffsetLedger,
        intake: Intake,
        completions: Completions,
        launcher: Launcher,
        settling: Settling,
        tally: Tally,
        lifecycle: Lifecycle,
        latest_starts: Callable[[list[PartitionKey]], dict[PartitionKey, int]] | None = None,
    ) -> None:
        self._config = config
        self._latest_starts = latest_starts  # with auto.offset.reset=latest (kafka.offsets)
        self._metrics = metrics
        self._owned = owned
        self._strategy = strategy
        self._offsets = offsets
        self._intake = intake
        self._completions = completions
        self._launcher = launcher
        self._settling = settling
        self._tally = tally
        self._lifecycle = lifecycle

    def on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        started = time.monotonic()
        self._settling.changed()
        self._offsets.new_generation()
        timing, states = self._tally.timing, self._owned.states
        if timing.first_assigned is None:
            timing.first_assigned = started
        self._lifecycle.emit(EventKind.ASSIGNED, [(tp.topic, tp.partition) for tp in partitions])
        self._tally.rebalances += 1
        self._metrics.rebalances.labels("assign").inc()
        fresh = [tp for tp in partitions if (tp.topic, tp.partition) not in states]
        known = read_committed(consumer, fresh)
        committed = {} if known is None else known
        keys = [(tp.topic, tp.partition) for tp in fresh]
        owed = self._offsets.commit_carried(consumer, keys, committed)
        for tp in fresh:
            key = (tp.topic, tp.partition)
            base, completed = committed.get(key, (None, frozenset()))
            states[key] = state = PartitionState(
                key,
                self._owned.next_epoch(),
                self._strategy.tracker(base, completed),
                PartitionMetrics(self._metrics, tp.topic, tp.partition),
                carried=key in owed,
                assigned_at=time.time(),
            )
            if base is not None and key not in owed:  # committed: owed nothing until records finish
                state.last_commit = state.acked = (base, state.tracker.offset_map())
            self._strategy.dispatcher.open(key)
        starts = {k: committed[k][0] for k in owed}
        if self._latest_starts is not None and known is not None:  # never on a failed read
            starts |= self._true_ends([k for k in keys if k not in committed])
        if starts:
            self._start_at(consumer, partitions, starts)
        if fresh:
            log.info("assigned %s", ", ".join(f"{tp.topic}[{tp.partition}]" for tp in fresh))
        self._metrics.partitions_assigned.inc(len(fresh))
        self._metrics.rebalance_seconds.observe(time.monotonic() - started)
        self._lifecycle.last_activity = time.monotonic()
        self._offsets.assignment_changed(owed.values())
        if fresh:
            self._lifecycle.owned_changed(len(states))

    def _true_ends(self, keys: list[PartitionKey]) -> dict[PartitionKey, int]:
        """Where ``keys`` (no commit) start under ``auto.offset.reset=latest``, if the cluster
        needs telling (:class:`lagless.kafka.offsets.LatestStarts`); where their ends cannot be
        read, librdkafka's own reset, said once per assignment."""
        assert self._latest_starts is not None
        try:
            return self._latest_starts(keys)
        except (ClusterError, KafkaException) as exc:
            log.warning(
                "cannot read the end offsets of %s (%s): they start where the cluster's "
                "ListOffsets says, which on this cluster may be inside the last batch written",
                ", ".join(f"{t}[{p}]" for t, p in keys), exc,
            )  # fmt: skip
            return {}

    def _start_at(
        self, consumer: Consumer, partitions: list[TopicPartition], starts: dict[PartitionKey, int]
    ) -> None:
        """Assign ``partitions`` from the callback itself (librdkafka then does not, on every
        group protocol): those in ``starts`` at that offset (a carried commit refused again, so
        the group holds a lower offset; or the true end for ``auto.offset.reset=latest`` where
        the cluster's answer is short), the others as given (where committed)."""
        offsets = [
            TopicPartition(tp.topic, tp.partition, starts.get((tp.topic, tp.partition), tp.offset))
            for tp in partitions
        ]
        if self._config.eager:
            consumer.assign(offsets)
        else:
            consumer.incremental_assign(offsets)

    def on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        """Stop dispatching, wait for in-flight records up to the budget, commit, release."""
        started = time.monotonic()
        self._settling.changed()
        self._metrics.rebalances.labels("revoke").inc()
        states = self._release([(tp.topic, tp.partition) for tp in partitions])
        if states:
            log.info("revoked %s", ", ".join(f"{s.tp[0]}[{s.tp[1]}]" for s in states))
        if not self._lifecycle.closing:
            deadline = started + self._config.revoke_budget_s
            while any(s.busy for s in states) and time.monotonic() < deadline:
                self._completions.collect(wait=0.02)
                self._launcher.dispatch()
            unfinished = sum(s.in_flight for s in states)
            if unfinished:
                log.warning("revoke: %d records still running after the budget", unfinished)
            deadline = time.monotonic() + carry.REVOKE_RETRY_S
            self._offsets.carry_unfinished(states, self._offsets.commit_retrying(states, deadline))
        self._drop(states)
        self._tally.revoked += len(states)
        self._metrics.partitions_revoked.inc(len(states))
        self._metrics.rebalance_seconds.observe(time.monotonic() - started)
        self._lifecycle.emit(EventKind.REVOKED, [s.tp for s in states])
        self._offsets.assignment_changed()
        self._lifecycle.owned_changed(len(self._owned.states))

    def on_lost(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        """Partitions lost (the session ended or the member was fenced; another member may
        own them already): dropped without a commit. What finished and was not committed is
        carried (see :mod:`lagless.engine.offsets.carry`): committed if the partition comes
        back to this member, else logged with its coordinates."""
        self._settling.changed()
        self._metrics.rebalances.labels("lost").inc()
        states = self._release([(tp.topic, tp.partition) for tp in partitions])
        owed = self._offsets.carry_lost(states)
        self._drop(states)
        self._tally.lost += len(states)
        self._metrics.partitions_lost.inc(len(states))
        self._lifecycle.emit(EventKind.LOST, [s.tp for s in states])
        self._offsets.assignment_changed()
        self._lifecycle.owned_changed(len(self._owned.states))
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
        states = [self._owned.states[k] for k in keys if k in self._owned.states]
        for state in states:
            self._strategy.dispatcher.close(state.tp)
            if state.backlog.paused:
                self._intake.resume(state)  # leave librdkafka's pause flag clean for a later owner
        return states

    def _drop(self, states: list[PartitionState]) -> None:
        workers = self._launcher.workers
        for state in states:
            self._owned.states.pop(state.tp, None)
            if workers is not None:
                workers.dropped(state.epoch)  # its tasks still queued do not start
            state.metrics.clear_gauges()
            self._tally.partition_done(state)
