"""Settled in the group (for ``until_idle_s``): librdkafka's join state read from its statistics."""

from __future__ import annotations

import json

from lagless.engine.config import EngineConfig
from lagless.engine.watch.settle import Settling, empty_floor_s, join_state, stats_interval_ms


def stats(state: str = "up", joining: str = "steady") -> str:
    """A statistics report as librdkafka writes it (brokers' "state" comes first, in capitals)."""
    return json.dumps(
        {
            "name": "c#consumer-1",
            "brokers": {"b/1": {"state": "UP", "toppars": {}}},
            "cgrp": {"state": state, "join_state": joining, "rebalance_cnt": 2},
        }
    )


def test_join_state_is_read_from_the_cgrp_object_only() -> None:
    assert join_state(stats()) == ("up", "steady")
    assert join_state(stats("up", "wait-join")) == ("up", "wait-join")
    assert join_state(stats("query-coord", "init")) == ("query-coord", "init")
    assert join_state(json.dumps({"brokers": {"b": {"state": "UP"}}})) is None, "no group"


def test_settled_time_counts_from_the_first_steady_report_after_the_latest_callback() -> None:
    settling = Settling()
    settling.reported(stats(), now=1.0)
    assert not settling.joined
    settling.changed()  # an assignment: the count starts over at the next report
    assert settling.joined and settling.steady_for(5.0) == 0.0
    settling.reported(stats(), now=2.0)
    settling.reported(stats(), now=3.0)
    assert settling.steady_for(4.5) == 2.5
    settling.reported(stats(joining="wait-join"), now=5.0)  # a rejoin: not settled
    assert settling.steady_for(6.0) == 0.0
    settling.reported(stats(joining="wait-sync"), now=6.0)
    settling.reported(stats(), now=7.0)
    assert settling.steady_for(8.0) == 1.0
    settling.reported(stats(state="wait-coord"), now=8.0)  # coordinator lost: not settled
    assert settling.steady_for(9.0) == 0.0


def test_stats_are_asked_for_and_handed_on_to_a_callback_of_the_caller() -> None:
    seen: list[str] = []
    settling = Settling()
    conf = settling.conf({"bootstrap.servers": "b", "stats_cb": seen.append}, idle_s=3.0)
    assert conf["statistics.interval.ms"] == 750 and conf["bootstrap.servers"] == "b"
    conf["stats_cb"](stats())
    assert seen == [stats()] and settling.steady_since is not None
    assert "stats_cb" in Settling().conf({}, idle_s=3.0)
    # the caller's own interval is kept as given (honoured, not overridden)
    assert Settling().conf({"statistics.interval.ms": 5000}, 3.0)["statistics.interval.ms"] == 5000


def test_report_interval_and_the_floor_for_a_member_with_nothing_assigned() -> None:
    assert [stats_interval_ms(s) for s in (0.1, 1.0, 3.0, 60.0)] == [100, 250, 750, 1000]
    classic = EngineConfig.build(topics=("t",), group="g", on_failure="skip",
                                 heartbeat_interval_ms=1500)  # fmt: skip
    assert empty_floor_s(classic) == 3.0
    kip848 = EngineConfig.build(topics=("t",), group="g", on_failure="skip",
                                group_protocol="consumer")  # fmt: skip
    assert empty_floor_s(kip848) == 10.0
