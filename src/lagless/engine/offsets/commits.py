"""Safe commits: per partition the first unfinished offset + offset map, and their results."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping

from confluent_kafka import KafkaError, KafkaException, TopicPartition

from lagless.engine.core import EngineCore, topic_partition
from lagless.engine.offsets import carry
from lagless.engine.offsets.carry import Owed
from lagless.engine.partitions.state import PartitionKey, PartitionState

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

    def _commit(
        self, states: Iterable[PartitionState], *, sync: bool
    ) -> dict[PartitionKey, object]:
        """Commit each partition's first unfinished offset (+ offset map) that changed; a
        synchronous commit compares with the last one acknowledged (an asynchronous one may
        still be on its way, or have failed unseen). Returns the partitions whose synchronous
        commit failed, with the error."""
        assert self._consumer is not None
        self._policy.committed(time.monotonic())
        offsets: list[TopicPartition] = []
        marks: list[tuple[PartitionState, tuple[int, str]]] = []
        for state in states:
            mark = self._mark(state)
            if mark is None or mark == (state.acked if sync else state.last_commit):
                continue
            offsets.append(TopicPartition(*state.tp, mark[0], metadata=mark[1]))
            marks.append((state, mark))
        if not offsets:
            return {}
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
            return {state.tp: exc.args[0] for state, _ in marks}
        failed: dict[PartitionKey, object] = {
            (tp.topic, tp.partition): tp.error for tp in result if tp.error is not None
        }
        if failed:
            self._commit_failed(next(iter(failed.values())), len(failed))
        for state, mark in marks:
            if state.tp not in failed:
                state.last_commit = mark
                if sync or verify:
                    state.acked = mark
        if (sync or verify) and len(failed) < len(marks):
            self._commit_accepted()
        if verify:
            self._check_metadata(offsets)
        return failed

    def _commit_retrying(
        self, states: list[PartitionState], deadline: float
    ) -> dict[PartitionKey, object]:
        """Commit synchronously; send again what failed transiently (see
        :mod:`lagless.engine.offsets.carry`) until ``deadline``. Returns what still failed."""
        failed = self._commit(states, sync=True)
        while time.monotonic() + carry.RETRY_PAUSE_S < deadline:
            again = [s for s in states if carry.transient(failed.get(s.tp))]
            if not again:
                break
            time.sleep(carry.RETRY_PAUSE_S)
            kept = {k: e for k, e in failed.items() if not carry.transient(e)}
            failed = {**kept, **self._commit(again, sync=True)}
        return failed

    def _owed(self, state: PartitionState, error: object) -> Owed | None:
        mark = self._mark(state)
        return None if mark is None else Owed(mark[0], mark[1], carry.name(error))

    def _final_commit(self) -> None:
        """The last commit before close. Refused because the group rebalances, it is sent
        again in the member's next generation: the loop serves the rebalance (records fetched
        meanwhile are dropped) until the member owns its partitions again and has committed
        them, or the rejoin bound (session timeout + heartbeat interval) passed; what is still
        owed then is logged with its coordinates."""
        assert self._consumer is not None
        config = self.config
        deadline = time.monotonic() + carry.rejoin_bound_s(config)
        failed = self._commit_retrying(list(self._states.values()), deadline)
        next_try = time.monotonic() + carry.REJOIN_RETRY_S
        while (failed or self._carried) and not self._hurry and time.monotonic() < deadline:
            self._consumer.consume(config.poll_batch, 0.1)  # serve the rebalance
            failed = {k: e for k, e in failed.items() if k in self._states}  # revoked: carried
            for key, state in self._states.items():  # back, its carried commit refused again
                if state.carried and state.last_commit is None and key not in failed:
                    failed[key] = "refused again after the rebalance"
            if failed and time.monotonic() >= next_try:
                failed = self._commit([self._states[k] for k in failed], sync=True)
                next_try = time.monotonic() + carry.REJOIN_RETRY_S
        owed = {k: self._owed(self._states[k], e) for k, e in failed.items()}
        left = {**self._carried, **{k: o for k, o in owed.items() if o is not None}}
        self._carried.clear()
        carry.log_uncommitted(left, "at shutdown")

    def _mark(self, state: PartitionState) -> tuple[int, str] | None:
        """What a commit of ``state``'s partition sends: the safe offset and its offset map."""
        base = state.tracker.committable
        if base is None:
            return None
        return base, state.tracker.offset_map() if self._metadata_kept is not False else ""

    def _on_commit(self, err: KafkaError | None, partitions: list[TopicPartition]) -> None:
        """Asynchronous commit results: on failure the next commit sends them again."""
        if err is not None and err.code() == KafkaError._NO_OFFSET:
            err = None  # nothing was left to commit: what was sent stands
        failed = [tp for tp in partitions if err is not None or tp.error is not None]
        if not failed:
            for tp in partitions:
                state = self._states.get((tp.topic, tp.partition))
                last = None if state is None else state.last_commit
                if state is not None and last is not None and last[0] == tp.offset:
                    state.acked = last
            self._commit_accepted()
            return
        self._commit_failed(err or failed[0].error, len(failed))
        for tp in failed:
            state = self._states.get((tp.topic, tp.partition))
            if state is not None:
                state.last_commit = None

    def _commit_accepted(self) -> None:
        """The broker stored a commit (counted in ``commits``)."""
        self._commits += 1
        self.metrics.commits.inc()
        self._commit_failing_since = None

    def _commit_failed(self, error: object, partitions: int) -> None:
        """Log a failed commit once per failure kind between two rebalances (a rebalance
        fails every in-flight asynchronous commit the same way); repeats at DEBUG. The next
        commit sends the offsets again; without the offset map if the broker found it too
        large (``offset.metadata.max.bytes``)."""
        if self._commit_failing_since is None:
            self._commit_failing_since = time.monotonic()
        self._commit_error = error
        if carry.membership(error) and self.config.eager:
            self._revoke_due_until = time.monotonic() + carry.revoke_due_s(self.config)
        if carry.metadata_too_large(error) and self._metadata_kept is not False:
            self._metadata_kept = False
            log.warning(
                "the broker refuses offset maps this large (offset.metadata.max.bytes): "
                "commits go on without them, so records completed above a committed offset "
                "are re-run after a restart (commits stay correct)"
            )
        kind = carry.name(error)
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
