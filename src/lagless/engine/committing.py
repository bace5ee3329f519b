"""Safe commits: per partition the first unfinished offset + offset map, and their results."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping

from confluent_kafka import KafkaError, KafkaException, TopicPartition

from lagless.engine.core import EngineCore, topic_partition
from lagless.engine.partition import PartitionKey, PartitionState

log = logging.getLogger(__name__)


class Committing(EngineCore):
    """The commit step of the loop, the asynchronous commit callback and the metadata check."""

    def _commit_if_due(self) -> None:
        """Commit when the policy says so, or after the interval where a commit is owed with
        nothing more finished (it failed, or an offset map moved the committable offset)."""
        now = time.monotonic()
        policy = self._policy
        if policy.due(now) or (
            policy.elapsed(now) and any(s.commit_owed for s in self._states.values())
        ):
            idle = [k for k, s in self._states.items() if s.holds_nothing]
            if idle:  # the position is read only where it can move the commit
                self._skip_gaps(self._positions(idle))
            self._commit(list(self._states.values()), sync=False)

    def _positions(self, keys: list[PartitionKey] | None = None) -> dict[PartitionKey, int]:
        """The consumer's position of each assigned partition (or of ``keys``) where it has
        one. Taken on the loop between polls, every record below it was offered to its
        partition: past the last record, the position also moves past transaction markers."""
        assert self._consumer is not None
        if keys is None:
            keys = list(self._states)
        if not keys:
            return {}
        try:
            positions = self._consumer.position([topic_partition(k) for k in keys])
        except KafkaException:
            return {}
        return {k: p.offset for k, p in zip(keys, positions, strict=True) if p.offset >= 0}

    def _skip_gaps(self, positions: Mapping[PartitionKey, int]) -> None:
        """Move each partition with nothing held (no record kept back either) to the
        position taken while all its records below it were received: the offsets in
        between are transaction markers, so the commit reaches the partition's end, as
        Kafka's own consumers' does. Never from a position taken after a poll whose
        records were dropped (stopping) or inside a rebalance callback."""
        for key, position in positions.items():
            state = self._states.get(key)
            if state is not None and state.holds_nothing:
                state.tracker.skip_gap(position)

    def _commit(self, states: Iterable[PartitionState], *, sync: bool) -> None:
        """Commit each partition's first unfinished offset (+ offset map) that changed."""
        assert self._consumer is not None
        self._policy.committed(time.monotonic())
        offsets: list[TopicPartition] = []
        marks: list[tuple[PartitionState, tuple[int, str]]] = []
        for state in states:
            base = state.tracker.committable
            if base is None:
                continue
            meta = state.tracker.offset_map() if self._metadata_kept is not False else ""
            if state.last_commit == (base, meta):
                continue
            offsets.append(TopicPartition(*state.tp, base, metadata=meta))
            marks.append((state, (base, meta)))
        if not offsets:
            return
        if self._ledger is not None:
            self._ledger.flush()  # every committed record is in the ledger
        verify = self._metadata_kept is None and any(tp.metadata for tp in offsets)
        try:
            if sync or verify:
                result = self._consumer.commit(offsets=offsets, asynchronous=False)
            else:
                self._consumer.commit(offsets=offsets, asynchronous=True)
                result = []
        except KafkaException as exc:
            self._commit_failed(exc.args[0], len(offsets))
            return
        failed = {(tp.topic, tp.partition) for tp in result if tp.error is not None}
        if failed:
            first = next(tp.error for tp in result if tp.error is not None)
            self._commit_failed(first, len(failed))
        for state, mark in marks:
            if state.tp not in failed:
                state.last_commit = mark
        self._commits += 1
        self.metrics.commits.inc()
        if verify:
            self._check_metadata(offsets)

    def _on_commit(self, err: KafkaError | None, partitions: list[TopicPartition]) -> None:
        """Asynchronous commit results: on failure the next commit sends them again."""
        failed = [tp for tp in partitions if err is not None or tp.error is not None]
        if not failed:
            return
        if err is not None and err.code() == KafkaError._NO_OFFSET:
            return
        self._commit_failed(err or failed[0].error, len(failed))
        for tp in failed:
            state = self._states.get((tp.topic, tp.partition))
            if state is not None:
                state.last_commit = None

    def _commit_failed(self, error: KafkaError | None, partitions: int) -> None:
        """Log a failed commit once per failure kind between two rebalances (a rebalance
        fails every in-flight asynchronous commit the same way); repeats at DEBUG. The next
        commit sends the offsets again."""
        kind = error.name() if isinstance(error, KafkaError) else str(error)
        if kind in self._commit_failures_logged:
            log.debug("commit failed for %d partitions: %s", partitions, error)
            return
        self._commit_failures_logged.add(kind)
        log.warning(
            "commit failed for %d partitions: %s (logged once per kind per rebalance; the "
            "next commit retries)",
            partitions,
            error,
        )

    def _check_metadata(self, sent: list[TopicPartition]) -> None:
        """Read the first offset map back: does this broker keep commit metadata?"""
        assert self._consumer is not None
        wanted = {(tp.topic, tp.partition): tp.metadata for tp in sent if tp.metadata}
        try:
            back = self._consumer.committed([TopicPartition(t, p) for t, p in wanted], timeout=10)
        except KafkaException as exc:
            log.info("cannot read commit metadata back: %s", exc.args[0])
            return
        self._metadata_kept = all(tp.metadata == wanted[(tp.topic, tp.partition)] for tp in back)
        if not self._metadata_kept:
            log.warning(
                "the broker drops commit metadata: the offset map is not kept, so records "
                "completed above a committed offset are re-run after a restart "
                "(commits stay correct)"
            )
