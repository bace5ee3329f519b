"""A group member whose records a second client fetches, one small object a record.

confluent-kafka's ``Consumer.consume`` builds a ``Message`` per record (the key, the value, the
topic and a list of headers each a Python object): with a handler that does little per record
that is most of a consumer's CPU. :class:`SplitConsumer` keeps confluent-kafka's consumer for all
that concerns the group (joining, heartbeats, rebalance callbacks, commits, committed offsets,
metadata) and fetches with :mod:`lagless.kafka._fetch`'s ``Fetcher``, a librdkafka consumer of
its own that never joins the group and is assigned by hand exactly what the member owns. Its
``FetchedMessage`` holds two bytes objects per record (the value; the key beside the headers'
encoded bytes) and answers ``Message``'s calls (``error``, ``topic``, ``partition``, ``offset``,
``timestamp``, ``key``, ``value``, ``headers``), making the key and the headers on call.

How the two stay one consumer:

- **Assignment.** The member is assigned as the group says and at once paused, so it never
  fetches; the fetcher is assigned the same partitions at the offsets given (where none is
  given, the group's committed offset, else ``auto.offset.reset``, as the member would: the
  fetcher has the same ``group.id``). The fetcher is told of each topic before it is assigned
  one of its partitions (at subscribe, or at the first assignment of a topic a pattern
  matched), so it fetches at once. Revoked or lost partitions leave the fetcher first, so
  nothing fetched for them is returned after the callback. A rebalance callback that does not
  assign is completed as confluent-kafka completes it.
- **Polling.** :meth:`consume` serves the member's callbacks (rebalance, commit results,
  statistics) without waiting, then waits on the fetcher, in slices of :data:`SLICE_S` with
  the member served between them: a rebalance callback runs at most that late, and the call
  returns once one ran. The member's error events are returned with the records.
- **Flow and positions.** ``pause``, ``resume``, ``position`` and cached watermarks are the
  fetcher's (it is the one fetching); queried watermarks, commits and committed offsets the
  member's.

It is used unless ``LAGLESS_NATIVE_FETCH=0``, where the C module is built, every client option
is a plain value (a callback such as ``oauth_cb`` only confluent-kafka can pass on) and
``enable.auto.commit`` is off (the member fetches nothing, so its own commits would carry
nothing); otherwise :func:`open_split` returns None (saying why once per process, unless it was
switched off). Each broker then sees two connections from this consumer, and the member's own
statistics show no fetching.
"""

from __future__ import annotations

import logging
import math
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from functools import cache
from typing import Any

from confluent_kafka import Consumer, KafkaException, Message, TopicPartition

from lagless.kafka.clients import make_consumer
from lagless.kafka.native import conf_pairs, forward_logs, loaded, say_fallback
from lagless.switches import switched_on

log = logging.getLogger(__name__)

SWITCH = "LAGLESS_NATIVE_FETCH"

# options of group membership only: the fetcher never joins, and some (a static instance id)
# must not be claimed twice
MEMBERSHIP = frozenset(
    {
        "group.protocol",
        "group.remote.assignor",
        "partition.assignment.strategy",
        "group.instance.id",
        "session.timeout.ms",
        "heartbeat.interval.ms",
        "max.poll.interval.ms",
    }
)
# callbacks the member serves (on the poll thread, from consume)
MEMBER_CALLBACKS = frozenset({"on_commit", "stats_cb", "logger", "error_cb", "throttle_cb"})

SERVE_BATCH = 100  # the member's events taken per consume (it fetches nothing: paused)
# the longest a consume waits on the fetcher before serving the member again: how late a
# rebalance callback may run (librdkafka serves a lone consumer's as soon as they come)
SLICE_S = 0.01

Rebalanced = Callable[[Any, list[TopicPartition]], None]


def switch(environ: Mapping[str, str] | None = None) -> bool:
    """``LAGLESS_NATIVE_FETCH``: unset or 1 = fetch with the C fetcher where it can be used (the
    default); 0 = confluent-kafka's consumer alone."""
    return switched_on(SWITCH, "fetch with the C fetcher where it is built", environ)


@cache
def module() -> tuple[Any, str | None]:
    """The loaded C module, or None and why not."""
    return loaded("lagless.kafka._fetch", "the C fetcher")


def fetcher_conf(conf: Mapping[str, Any]) -> list[tuple[str, str]] | str:
    """The fetcher's options as strings (the member's without membership and its callbacks;
    it never commits: the member does), or why the fetcher cannot take them."""
    kept = {k: v for k, v in conf.items() if k not in MEMBERSHIP and k not in MEMBER_CALLBACKS}
    return conf_pairs({**kept, "enable.auto.commit": False})


def _on(value: object) -> bool:
    """A boolean client option's value (librdkafka takes true/false as text too)."""
    return str(value).strip().lower() not in ("false", "0")


def eager(conf: Mapping[str, Any]) -> bool:
    """Whether a group member on ``conf`` has eager rebalances (every partition revoked, then
    assigned anew): the classic protocol with an eager assignor."""
    if str(conf.get("group.protocol", "classic")).lower() == "consumer":
        return False
    return "cooperative-sticky" not in str(conf.get("partition.assignment.strategy", ""))


def open_split(conf: Mapping[str, Any]) -> SplitConsumer | None:
    """A :class:`SplitConsumer` on ``conf``, or None where the fetcher cannot be used (why is
    logged once per process; the caller then uses confluent-kafka's consumer alone)."""
    if not switch():
        return None
    mod, why = module()
    pairs = fetcher_conf(conf) if mod is not None else why
    if not isinstance(pairs, str) and _on(conf.get("enable.auto.commit", True)):
        pairs = "enable.auto.commit is on (the member, which fetches nothing, would commit nothing)"
    if isinstance(pairs, str):
        say_fallback(log, "fetching with confluent-kafka's consumer", pairs)
        return None
    member = make_consumer(conf)  # first: it validates every option
    try:
        fetcher = mod.Fetcher(pairs)
    except ValueError as exc:
        member.close()
        raise KafkaException(str(exc)) from None
    finally:
        forward_logs(mod)
    return SplitConsumer(member, fetcher, mod, eager(conf))


def _pairs(partitions: list[TopicPartition]) -> list[tuple[str, int]]:
    return [(tp.topic, tp.partition) for tp in partitions]


def _triples(partitions: list[TopicPartition]) -> list[tuple[str, int, int]]:
    return [(tp.topic, tp.partition, tp.offset) for tp in partitions]


class SplitConsumer:
    """confluent-kafka's ``Consumer`` calls, served by a group member and a fetcher (see the
    module's text)."""

    def __init__(self, member: Consumer, fetcher: Any, mod: Any, eager: bool) -> None:
        self.member = member
        self._fetcher = fetcher
        self._mod = mod
        self._eager = eager
        self._assigned = False  # the running rebalance callback assigned or unassigned
        self._rebalanced = False  # a rebalance callback ran in this consume
        self._held: deque[Any] = deque()  # fetched beyond what a consume asked for
        self._known: set[str] = set()  # topics the fetcher was told of (Fetcher.know)

    # -- the group ---------------------------------------------------------------------

    def subscribe(
        self,
        topics: list[str],
        on_assign: Rebalanced | None = None,
        on_revoke: Rebalanced | None = None,
        on_lost: Rebalanced | None = None,
    ) -> None:
        def assigned(member: Consumer, partitions: list[TopicPartition]) -> None:
            self._rebalanced = True
            self._assigned = False
            if on_assign is not None:
                on_assign(self, partitions)
            if not self._assigned:  # as confluent-kafka completes a callback
                if self._eager:
                    self.assign(partitions)
                else:
                    self.incremental_assign(partitions)

        def released(callback: Rebalanced | None) -> Rebalanced:
            def run(member: Consumer, partitions: list[TopicPartition]) -> None:
                self._rebalanced = True
                self._assigned = False
                self._release(partitions)  # first: nothing more is fetched for them
                if callback is not None:
                    callback(self, partitions)
                if not self._assigned:
                    if self._eager:
                        member.unassign()
                    else:
                        member.incremental_unassign(partitions)

            return run

        self._learn(t for t in topics if not t.startswith("^"))
        self.member.subscribe(
            topics,
            on_assign=assigned,
            on_revoke=released(on_revoke),
            on_lost=released(on_lost if on_lost is not None else on_revoke),
        )

    def _learn(self, topics: Iterable[str]) -> None:
        """Tell the fetcher of ``topics`` it does not know yet: it asks for their metadata at
        once, without waiting, so that it fetches a partition as soon as it is assigned (it
        would otherwise find the topic at librdkafka's next topic scan, up to a second later;
        the member, which subscribed, knows it already)."""
        for topic in topics:
            if topic not in self._known:
                self._known.add(topic)
                self._fetcher.know(topic)

    def _release(self, partitions: list[TopicPartition]) -> None:
        """Stop fetching ``partitions`` (every partition, for an eager member) and drop their
        records kept from an earlier consume."""
        if self._eager:
            self._fetcher.unassign_all()
        elif partitions:
            self._fetcher.unassign(_pairs(partitions))
        if self._held:
            gone = None if self._eager else set(_pairs(partitions))  # None: every partition
            self._held = deque(
                m for m in self._held
                if m.error() is not None
                or (gone is not None and (m.topic(), m.partition()) not in gone)
            )  # fmt: skip

    def assign(self, partitions: list[TopicPartition]) -> None:
        self._learn({tp.topic for tp in partitions})
        self.member.assign(partitions)
        if partitions:
            self.member.pause(partitions)
        self._fetcher.unassign_all()
        self._fetcher.assign(_triples(partitions))
        self._assigned = True

    def incremental_assign(self, partitions: list[TopicPartition]) -> None:
        self._learn({tp.topic for tp in partitions})
        self.member.incremental_assign(partitions)
        if partitions:
            self.member.pause(partitions)
        self._fetcher.assign(_triples(partitions))
        self._assigned = True

    def unassign(self) -> None:
        self._fetcher.unassign_all()
        self.member.unassign()
        self._assigned = True

    def incremental_unassign(self, partitions: list[TopicPartition]) -> None:
        self._fetcher.unassign(_pairs(partitions))
        self.member.incremental_unassign(partitions)
        self._assigned = True

    def assignment(self) -> list[TopicPartition]:
        return self.member.assignment()

    def commit(
        self,
        message: Any = None,
        offsets: list[TopicPartition] | None = None,
        asynchronous: bool = True,
    ) -> Any:
        """Commit ``offsets``, or one past ``message``: the member's own positions mean nothing
        (it fetches nothing), so a commit of "the current positions" is refused."""
        if offsets is None:
            if message is None:
                raise ValueError("a split consumer commits given offsets or a message only")
            offsets = [TopicPartition(message.topic(), message.partition(), message.offset() + 1)]
        if asynchronous:
            self.member.commit(offsets=offsets, asynchronous=True)
            return None
        return self.member.commit(offsets=offsets, asynchronous=False)

    def committed(self, partitions: list[TopicPartition], timeout: float = -1) -> Any:
        return self.member.committed(partitions, timeout)

    def list_topics(self, *args: Any, **kwargs: Any) -> Any:
        return self.member.list_topics(*args, **kwargs)

    def offsets_for_times(self, *args: Any, **kwargs: Any) -> Any:
        return self.member.offsets_for_times(*args, **kwargs)

    # -- fetching ----------------------------------------------------------------------

    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[Any]:
        """Up to ``num_messages`` records and error events fetched within ``timeout`` seconds
        (< 0: until there are some), the member's callbacks served meanwhile: the wait is cut
        in slices of :data:`SLICE_S` and ends early once a rebalance callback ran. What came
        beyond ``num_messages`` is kept for the next call, never dropped."""
        if num_messages <= 0:
            return []
        if self._held:
            return self._take(num_messages)
        wait_s = 0.0 if math.isnan(timeout) else timeout  # (NaN: no wait, as confluent-kafka)
        deadline = None if wait_s < 0 else time.monotonic() + wait_s
        while True:
            self._rebalanced = False
            errors = self._serve()
            left = SLICE_S if deadline is None else deadline - time.monotonic()
            hurry = bool(errors) or self._rebalanced
            wait = 0.0 if hurry else max(0.0, min(SLICE_S, left))
            fetched: list[Any] = self._fetcher.consume(num_messages, wait)
            forward_logs(self._mod)
            if fetched or hurry or (deadline is not None and left <= SLICE_S):
                if not errors:
                    return fetched
                self._held.extend(errors + fetched)
                return self._take(num_messages)

    def _take(self, n: int) -> list[Any]:
        held = self._held
        return [held.popleft() for _ in range(min(n, len(held)))]

    def _serve(self) -> list[Any]:
        """Serve the member's callbacks (rebalance, commit results, statistics) without
        waiting; its error events (it fetches no record: its partitions are paused)."""
        events = self.member.consume(SERVE_BATCH, 0)
        return [m for m in events if m.error() is not None] if events else []

    def poll(self, timeout: float = -1) -> Message | None:
        got = self.consume(1, timeout)
        return got[0] if got else None

    def pause(self, partitions: list[TopicPartition]) -> None:
        self._fetcher.pause(_pairs(partitions))

    def resume(self, partitions: list[TopicPartition]) -> None:
        self._fetcher.resume(_pairs(partitions))

    def position(self, partitions: list[TopicPartition]) -> list[TopicPartition]:
        offsets = self._fetcher.position(_pairs(partitions))
        return [
            TopicPartition(tp.topic, tp.partition, offset)
            for tp, offset in zip(partitions, offsets, strict=True)
        ]

    def get_watermark_offsets(
        self, partition: TopicPartition, timeout: float | None = None, cached: bool = False
    ) -> tuple[int, int] | None:
        if cached:
            low, high = self._fetcher.watermarks(partition.topic, partition.partition)
            return low, high
        if timeout is None:
            return self.member.get_watermark_offsets(partition, cached=False)
        return self.member.get_watermark_offsets(partition, timeout, cached=False)

    def close(self) -> None:
        """Leave the group (the revoke callback runs), then close the fetcher."""
        try:
            self.member.close()
        finally:
            self._fetcher.close()
            forward_logs(self._mod)
