"""The offset ledger: everything about what is safe to commit, behind one object.

Per partition the tracker's first unfinished offset + offset map is what a commit sends
(:meth:`OffsetLedger.mark`). The ledger commits when the policy says so, or synchronously on
a revoke and at shutdown; follows the asynchronous commits' acknowledgements; counts refusals
and, for those the group refused for membership, *carries* the offsets into the member's next
generation (:mod:`.carry`); reads the committed offsets and offset maps back at assignment;
and checks once whether the broker keeps commit metadata at all. No other part of the engine
commits or decides what is committable.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping
from dataclasses import replace

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from lagless.engine.config import EngineConfig
from lagless.engine.lifecycle import Lifecycle
from lagless.engine.offsets import carry
from lagless.engine.offsets.carry import Owed
from lagless.engine.offsets.committed import Committed, done_above
from lagless.engine.offsets.policy import CommitPolicy
from lagless.engine.partitions.owned import Owned
from lagless.engine.partitions.state import PartitionKey, PartitionState
from lagless.engine.results.ledger import Ledger
from lagless.engine.tally import Tally
from lagless.errors import ClusterError
from lagless.observe.metrics import Metrics

log = logging.getLogger(__name__)


class OffsetLedger:
    """Commits of one run: when, what, their results, and the offsets carried over."""

    def __init__(
        self,
        config: EngineConfig,
        metrics: Metrics,
        policy: CommitPolicy,
        owned: Owned,
        tally: Tally,
        lifecycle: Lifecycle,
        records: Ledger | None,
    ) -> None:
        self._config = config
        self._metrics = metrics
        self.policy = policy
        self._owned = owned
        self._tally = tally
        self._lifecycle = lifecycle
        self._records = records  # the record ledger: flushed before every commit
        self.consumer: Consumer | None = None  # set when the run starts
        self.metadata_kept: bool | None = None  # does the broker keep offset maps?
        self.carried: dict[PartitionKey, Owed] = {}  # revoked or lost, not committed
        self._failures_logged: set[str] = set()  # kinds logged since the last rebalance
        self._failing_since: float | None = None  # commits refused since (none accepted)
        self._last_error: object = None  # the last refusal
        self._hold_until = 0.0  # eager: a commit refused, the revoke comes (see carry)

    # -- the loop's commit ----------------------------------------------------------------

    def commit_if_due(self) -> None:
        """Commit when the policy says so, or after the interval where a commit is owed with
        nothing more finished (it failed, or an offset map moved the committable offset)."""
        now = time.monotonic()
        policy, states = self.policy, self._owned.states
        if policy.due(now) or (policy.elapsed(now) and any(s.commit_owed for s in states.values())):
            idle = [k for k, s in states.items() if s.holds_nothing]
            if idle:  # the position is read only where it can move the commit
                self.skip_gaps(self.positions(idle))
            self.commit(list(states.values()), sync=False)

    def positions(self, keys: list[PartitionKey] | None = None) -> dict[PartitionKey, int]:
        """The consumer's position of each owned partition (or of ``keys``) where it has
        one. Taken on the loop between polls, every record below it was offered to its
        partition: past the last record, the position also moves past transaction markers."""
        assert self.consumer is not None
        if keys is None:
            keys = list(self._owned.states)
        if not keys:
            return {}
        try:
            positions = self.consumer.position([TopicPartition(*k) for k in keys])
        except KafkaException:
            return {}
        return {k: p.offset for k, p in zip(keys, positions, strict=True) if p.offset >= 0}

    def skip_gaps(self, positions: Mapping[PartitionKey, int]) -> None:
        """Move each partition with nothing held (no record kept back either) to the
        position taken while all its records below it were received: the offsets in
        between are transaction markers, so the commit reaches the partition's end, as
        Kafka's own consumers' does. Never from a position taken after a poll whose
        records were dropped (stopping) or inside a rebalance callback."""
        for key, position in positions.items():
            state = self._owned.states.get(key)
            if state is not None and state.holds_nothing:
                state.tracker.skip_gap(position)

    def mark(self, state: PartitionState) -> tuple[int, str] | None:
        """What a commit of ``state``'s partition sends: the safe offset and its offset map."""
        base = state.tracker.committable
        if base is None:
            return None
        return base, state.tracker.offset_map() if self.metadata_kept is not False else ""

    def commit(self, states: Iterable[PartitionState], *, sync: bool) -> dict[PartitionKey, object]:
        """Commit each partition's first unfinished offset (+ offset map) that changed; a
        synchronous commit compares with the last one acknowledged (an asynchronous one may
        still be on its way, or have failed unseen). Returns the partitions whose synchronous
        commit failed, with the error."""
        assert self.consumer is not None
        self.policy.committed(time.monotonic())
        offsets: list[TopicPartition] = []
        marks: list[tuple[PartitionState, tuple[int, str]]] = []
        for state in states:
            mark = self.mark(state)
            if mark is None or mark == (state.acked if sync else state.last_commit):
                continue
            offsets.append(TopicPartition(*state.tp, mark[0], metadata=mark[1]))
            marks.append((state, mark))
        if not offsets:
            return {}
        if self._records is not None:
            self._records.flush()  # every committed record is in the ledger
        verify = self.metadata_kept is None and any(tp.metadata for tp in offsets)
        try:
            if sync or verify:
                result = self.consumer.commit(offsets=offsets, asynchronous=False)
            else:
                self.consumer.commit(offsets=offsets, asynchronous=True)
                result = []
        except KafkaException as exc:
            self._refused(exc.args[0], len(offsets))
            return {state.tp: exc.args[0] for state, _ in marks}
        failed: dict[PartitionKey, object] = {
            (tp.topic, tp.partition): tp.error for tp in result if tp.error is not None
        }
        if failed:
            self._refused(next(iter(failed.values())), len(failed))
        for state, mark in marks:
            if state.tp not in failed:
                state.last_commit = mark
                if sync or verify:
                    state.acked = mark
        if (sync or verify) and len(failed) < len(marks):
            self.accepted()
        if verify:
            self._check_metadata(offsets)
        return failed

    def commit_retrying(
        self, states: list[PartitionState], deadline: float
    ) -> dict[PartitionKey, object]:
        """Commit synchronously; send again what failed transiently (see :mod:`.carry`)
        until ``deadline``. Returns what still failed."""
        failed = self.commit(states, sync=True)
        while time.monotonic() + carry.RETRY_PAUSE_S < deadline:
            again = [s for s in states if carry.transient(failed.get(s.tp))]
            if not again:
                break
            time.sleep(carry.RETRY_PAUSE_S)
            kept = {k: e for k, e in failed.items() if not carry.transient(e)}
            failed = {**kept, **self.commit(again, sync=True)}
        return failed

    def owed(self, state: PartitionState, error: object) -> Owed | None:
        mark = self.mark(state)
        return None if mark is None else Owed(mark[0], mark[1], carry.name(error))

    def final_commit(self) -> None:
        """The last commit before close. Refused because the group rebalances, it is sent
        again in the member's next generation: the loop serves the rebalance (records fetched
        meanwhile are dropped) until the member owns its partitions again and has committed
        them, or the rejoin bound (session timeout + heartbeat interval) passed; what is still
        owed then is logged with its coordinates."""
        assert self.consumer is not None
        config, states, lifecycle = self._config, self._owned.states, self._lifecycle
        deadline = time.monotonic() + carry.rejoin_bound_s(config)
        failed = self.commit_retrying(list(states.values()), deadline)
        next_try = time.monotonic() + carry.REJOIN_RETRY_S
        while (failed or self.carried) and not lifecycle.hurry and time.monotonic() < deadline:
            self.consumer.consume(config.poll_batch, 0.1)  # serve the rebalance
            failed = {k: e for k, e in failed.items() if k in states}  # revoked: carried
            for key, state in states.items():  # back, its carried commit refused again
                if state.carried and state.last_commit is None and key not in failed:
                    failed[key] = "refused again after the rebalance"
            if failed and time.monotonic() >= next_try:
                failed = self.commit([states[k] for k in failed], sync=True)
                next_try = time.monotonic() + carry.REJOIN_RETRY_S
        owed = {k: self.owed(states[k], e) for k, e in failed.items()}
        left = {**self.carried, **{k: o for k, o in owed.items() if o is not None}}
        self.carried.clear()
        carry.log_uncommitted(left, "at shutdown")

    # -- acknowledgements and refusals ----------------------------------------------------

    def on_commit(self, err: KafkaError | None, partitions: list[TopicPartition]) -> None:
        """Asynchronous commit results (librdkafka's callback, served by poll): on failure
        the next commit sends them again."""
        if err is not None and err.code() == KafkaError._NO_OFFSET:
            err = None  # nothing was left to commit: what was sent stands
        states = self._owned.states
        failed = [tp for tp in partitions if err is not None or tp.error is not None]
        if not failed:
            for tp in partitions:
                state = states.get((tp.topic, tp.partition))
                last = None if state is None else state.last_commit
                if state is not None and last is not None and last[0] == tp.offset:
                    state.acked = last
            self.accepted()
            return
        self._refused(err or failed[0].error, len(failed))
        for tp in failed:
            state = states.get((tp.topic, tp.partition))
            if state is not None:
                state.last_commit = None

    def accepted(self) -> None:
        """The broker stored a commit (counted in ``commits``)."""
        self._tally.commits += 1
        self._metrics.commits.inc()
        self._failing_since = None

    def _refused(self, error: object, partitions: int) -> None:
        """Log a failed commit once per failure kind between two rebalances (a rebalance
        fails every in-flight asynchronous commit the same way); repeats at DEBUG. The next
        commit sends the offsets again; without the offset map if the broker found it too
        large (``offset.metadata.max.bytes``)."""
        if self._failing_since is None:
            self._failing_since = time.monotonic()
        self._last_error = error
        if carry.membership(error) and self._config.eager:
            self._hold_until = time.monotonic() + carry.revoke_due_s(self._config)
        if carry.metadata_too_large(error) and self.metadata_kept is not False:
            self.metadata_kept = False
            log.warning(
                "the broker refuses offset maps this large (offset.metadata.max.bytes): "
                "commits go on without them, so records completed above a committed offset "
                "are re-run after a restart (commits stay correct)"
            )
        kind = carry.name(error)
        if kind in self._failures_logged:
            log.debug("commit failed for %d partitions: %s", partitions, error)
            return
        self._failures_logged.add(kind)
        log.warning(
            "commit failed for %d partitions: %s (logged once per kind per rebalance; the "
            "next commit retries)",
            partitions,
            error,
        )

    def _check_metadata(self, sent: list[TopicPartition]) -> None:
        """Read the first offset map back: does this broker keep commit metadata?"""
        assert self.consumer is not None
        wanted = {(tp.topic, tp.partition): tp.metadata for tp in sent if tp.metadata}
        try:
            back = self.consumer.committed([TopicPartition(t, p) for t, p in wanted], timeout=10)
        except KafkaException as exc:
            log.info("cannot read commit metadata back: %s", exc.args[0])
            return
        self.metadata_kept = all(tp.metadata == wanted[(tp.topic, tp.partition)] for tp in back)
        if not self.metadata_kept:
            log.warning(
                "the broker drops commit metadata: the offset map is not kept, so records "
                "completed above a committed offset are re-run after a restart "
                "(commits stay correct)"
            )

    # -- the group's generations ----------------------------------------------------------

    def new_generation(self) -> None:
        """An assignment came: log each failure kind again, count refusals afresh."""
        self._failures_logged.clear()
        self._failing_since = None

    def holds_starts(self, now: float) -> bool:
        """Eager protocol: a commit was refused for membership, the revoke is coming; records
        started now could not be committed (see :func:`.carry.revoke_due_s`)."""
        return bool(self._hold_until) and now < self._hold_until

    def assignment_changed(self, refused: Iterable[object] = ()) -> None:
        """A rebalance callback ended: the hold ends, or starts again when a carried commit
        was refused again (``refused``) for membership."""
        self._hold_until = 0.0
        if self._config.eager and any(carry.membership(e) for e in refused):
            self._hold_until = time.monotonic() + carry.revoke_due_s(self._config)

    def commit_carried(
        self, consumer: Consumer, keys: list[PartitionKey], committed: Committed
    ) -> dict[PartitionKey, object]:
        """Commit what the last revoke could not (see :mod:`.carry`) for the partitions this
        member owns again, before the consumer reads where to start: the records done are
        neither fetched nor run again (``committed`` is updated). Where another member
        committed beyond it meanwhile, its commit stands. The others went to another member:
        logged once with their coordinates. Returns the partitions whose commit was refused
        again, with the error: this member still starts after the records it ran and owes
        their commit (``consumer``: the one whose rebalance callback runs)."""
        carried, self.carried = self.carried, {}
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
            committed[key] = (owed.offset, done_above(owed.offset, owed.metadata))
        if len(errors) < len(back):
            self.accepted()
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

    def carry_unfinished(
        self, states: list[PartitionState], failed: Mapping[PartitionKey, object]
    ) -> None:
        """Revoked ``states`` whose commit ``failed``: committed in the next generation if
        they come back."""
        for state in states:
            owed = self.owed(state, failed[state.tp]) if state.tp in failed else None
            if owed is not None:
                self.carried[state.tp] = owed

    def carry_lost(self, states: list[PartitionState]) -> dict[PartitionKey, Owed]:
        """Lost ``states``: what finished there and was not committed is carried (and
        returned)."""
        owed = {s.tp: o for s in states if (s.finished or s.carried)
                and (o := self.owed(s, "lost")) is not None
                and (o.offset, o.metadata) != s.acked}  # fmt: skip
        self.carried.update(owed)
        return owed

    def unconfirmed(self, now: float) -> bool:
        """Whether a commit is owed or not acknowledged yet. Idle otherwise, a member whose
        commits the broker refused for the rejoin bound (session + heartbeat: a rebalance is
        over by then) sends them once more, synchronously; refused again, it fails the run:
        exit 1, never 0 with what ran not committed."""
        unconfirmed = [s for s in self._owned.states.values() if s.commit_unconfirmed]
        since = self._failing_since
        if (
            unconfirmed
            and since is not None
            and now - since >= carry.rejoin_bound_s(self._config)
            and all(s.last_commit is None for s in unconfirmed)  # refused, none on its way
        ):
            if not self.commit_retrying(unconfirmed, time.monotonic() + carry.REVOKE_RETRY_S):
                return False  # accepted now: idle at the next turn
            self._lifecycle.fail(
                ClusterError(
                    f"--until-idle: every record ran, but the broker has refused this "
                    f"member's commits for {now - since:.0f} s ({carry.name(self._last_error)}); "
                    "what finished since the last commit runs again next time"
                )
            )
        return bool(unconfirmed)
