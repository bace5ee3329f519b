"""Whether this member's place in its group has settled, for ``until_idle_s``.

A member is settled when librdkafka says its group membership is ``up`` and its join state
``steady``: a rebalance completed and no other is under way for it. While it joins (a newcomer),
rejoins (a cooperative rebalance's second round after a revocation, a heartbeat answered
REBALANCE_IN_PROGRESS) or waits for an assignment call, it is not: more partitions may be on
their way, and a member that leaves while its own JoinGroup is pending can wedge a broker (see
:mod:`lagless.kafka.compat`).

No client call tells the join state; librdkafka's statistics do (``cgrp.join_state``), so an
engine with ``until_idle_s`` asks for them every :func:`stats_interval_ms` and reads that one
field. Every rebalance callback starts the count over: settled time counts from the first
report after the latest callback, and any report of another state resets it.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from typing import Any

from lagless.engine.config import EngineConfig

CGRP = '"cgrp":'
CGRP_STATE = re.compile(r'"state":\s*"([^"]*)"')
JOIN_STATE = re.compile(r'"join_state":\s*"([^"]*)"')
KIP848_HEARTBEAT_S = 5.0  # group.consumer.heartbeat.interval.ms, Apache Kafka's default


def stats_interval_ms(idle_s: float) -> int:
    """Reports a few times per idle window, at most once a second, at least every 100 ms."""
    return int(min(1000.0, max(100.0, idle_s * 1000.0 / 4)))


def empty_floor_s(config: EngineConfig) -> float:
    """How long a member with nothing assigned stays settled before it counts as idle, at
    least: two heartbeats, time to hear of a follow-up round that would give it partitions (a
    cooperative second round, KIP-848 partitions freed by their former owner)."""
    if config.group_protocol == "consumer":
        return 2 * KIP848_HEARTBEAT_S
    return 2 * config.heartbeat_interval_ms / 1000.0


def join_state(stats: str) -> tuple[str, str] | None:
    """``(state, join_state)`` of the consumer group in a statistics report, if it has one."""
    at = stats.rfind(CGRP)
    if at < 0:
        return None
    state, joining = CGRP_STATE.search(stats, at), JOIN_STATE.search(stats, at)
    if state is None or joining is None:
        return None
    return state.group(1), joining.group(1)


class Settling:
    """The member's group state as librdkafka's statistics report it (on the poll thread:
    statistics and rebalance callbacks are both served by ``poll``)."""

    def __init__(self) -> None:
        self.joined = False  # a rebalance callback ran: the member got an answer from the group
        self.steady_since: float | None = None

    def conf(self, conf: Mapping[str, Any], idle_s: float) -> dict[str, Any]:
        """``conf`` with statistics every :func:`stats_interval_ms` (or at the caller's own
        ``statistics.interval.ms``, kept as given: idle is then noticed at that pace), read
        here first and handed on to a ``stats_cb`` the caller set."""
        out = dict(conf)
        theirs: Callable[[str], None] | None = out.get("stats_cb")

        def on_stats(stats: str) -> None:
            self.reported(stats)
            if theirs is not None:
                theirs(stats)

        if not int(out.get("statistics.interval.ms", 0)):
            out["statistics.interval.ms"] = stats_interval_ms(idle_s)
        out["stats_cb"] = on_stats
        return out

    def reported(self, stats: str, now: float | None = None) -> None:
        states = join_state(stats)
        if states != ("up", "steady"):
            self.steady_since = None
        elif self.steady_since is None:
            self.steady_since = time.monotonic() if now is None else now

    def changed(self) -> None:
        """A rebalance callback ran (assign, revoke, lost): settled only from the next report."""
        self.joined = True
        self.steady_since = None

    def steady_for(self, now: float) -> float:
        return 0.0 if self.steady_since is None else now - self.steady_since
