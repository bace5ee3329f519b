"""The console's sampler logic: one cycle over a stub of its cluster reads (pure logic: the
reads themselves are tested against the real broker in tests/integration/test_ui_*.py)."""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any, cast

import pytest

from lagless.errors import ClusterError
from lagless.kafka.groups import GroupInfo, Member
from lagless.kafka.offsets import PartitionKey
from lagless.ui.cluster import ClusterReads
from lagless.ui.model import MEMBERS_NOT_ANSWERED
from lagless.ui.sampler import Sampler, instance_owners, members_of


class Reads:
    """What ClusterReads would answer, set by the test."""

    def __init__(self) -> None:
        self.end_of: dict[PartitionKey, int] = {("t", 0): 10, ("t", 1): 10}
        self.commits: dict[str, dict[PartitionKey, int]] = {"g": {("t", 0): 10, ("t", 1): 4}}
        self.info: dict[str, GroupInfo] = {"g": GroupInfo("g", "Stable", "range", ())}
        self.fail = False
        self.heads: dict[tuple[str, int, int], int | None] = {("t", 1, 4): 1_000}

    def listed(self) -> list[str]:
        if self.fail:
            raise ClusterError("cannot list consumer groups: no answer within 5 s")
        return sorted(self.commits)

    def group_ids(self, listed: list[str]) -> tuple[list[str], dict[str, str]]:
        return listed, {}

    def describe(self, groups: list[str]) -> dict[str, GroupInfo]:
        return {g: self.info[g] for g in groups if g in self.info}

    def committed(self, groups: Iterable[str]) -> dict[str, dict[PartitionKey, int]]:
        return {g: self.commits.get(g, {}) for g in groups}

    def topics(self) -> dict[str, int]:
        return {"t": 2}

    def ends(self, keys: list[PartitionKey]) -> dict[PartitionKey, int]:
        return {k: self.end_of[k] for k in keys}

    def starts(self, keys: list[PartitionKey]) -> dict[PartitionKey, int]:
        return dict.fromkeys(keys, 0)

    def head_timestamps(self, wanted: Iterable[tuple[str, int, int]]) -> dict[Any, int | None]:
        return {w: self.heads.get(w) for w in wanted}

    def forget_heads(self, keep: set[tuple[str, int, int]]) -> None:
        pass


def sampler(reads: Reads, instances: list[dict[str, Any]] | None = None) -> Sampler:
    return Sampler(cast(ClusterReads, reads), instances=lambda: instances or [])


def test_a_cycle_computes_committed_lag_lag_seconds_and_rates() -> None:
    reads = Reads()
    s = sampler(reads)
    first = s.cycle()
    assert first.up
    g = first.group("g")
    assert g is not None
    assert [(p.partition, p.committed, p.end, p.lag) for p in g.partitions] == [
        (0, 10, 10, 0), (1, 4, 10, 6)
    ]  # fmt: skip
    assert g.partitions[0].lag_s == 0.0
    assert g.partitions[1].lag_s is not None and g.partitions[1].lag_s > 1_000_000
    assert g.lag == 6 and first.topics[0].rate is None
    reads.end_of[("t", 0)] = 30
    second = s.cycle()
    assert second.topics[0].end == 40 and second.topics[0].rate is not None
    assert second.topics[0].rate > 0


def test_a_failed_cycle_keeps_the_last_figures_and_says_since_when() -> None:
    reads = Reads()
    s = sampler(reads)
    s.cycle()
    reads.fail = True
    down = s.cycle()
    again = s.cycle()
    assert not down.up and down.group("g") is not None
    assert down.error is not None and "no answer" in down.error
    assert again.down_since == down.down_since == down.t
    reads.fail = False
    assert s.cycle().up and s.cycle().down_since is None


def test_a_group_with_lag_and_no_member_is_stop_at_once() -> None:
    reads = Reads()
    reads.info["g"] = GroupInfo("g", "Empty", "", ())
    g = sampler(reads).cycle().group("g")
    assert g is not None and g.status == "STOP" and g.active is False


def test_a_stable_group_without_members_whose_instances_are_gone_is_stop() -> None:
    reads = Reads()
    reads.info["g"] = GroupInfo("g", "Stable", "", ())  # Tansu after a kill -9: still Stable
    docs = [{"group": "g", "client_id": "c1", "partitions": [{"topic": "t", "partition": 1}]}]
    s = sampler(reads, docs)
    alive = s.cycle().group("g")
    assert alive is not None and alive.active is True and alive.status != "STOP"
    docs.clear()  # the instance was killed
    gone = s.cycle().group("g")
    assert gone is not None and gone.lag > 0 and gone.active is False and gone.status == "STOP"
    never = sampler(reads).cycle().group("g")  # no instance ever seen: the broker's word holds
    assert never is not None and never.active is True


def test_owners_come_from_the_broker_else_from_the_instances() -> None:
    reads = Reads()
    member = Member("m-1", "client-a", "/10.0.0.1", (("t", 0), ("t", 1)))
    reads.info["g"] = GroupInfo("g", "Stable", "range", (member,))
    g = sampler(reads).cycle().group("g")
    assert g is not None and g.members == 1 and g.members_source == "broker"
    assert [p.owners for p in g.partitions] == [("client-a",), ("client-a",)]
    reads.info["g"] = GroupInfo("g", "Stable", "c1-uuid", ())  # Tansu: no members
    p0, p1 = {"topic": "t", "partition": 0}, {"topic": "t", "partition": 1}
    docs = [{"group": "g", "client_id": "c1", "partitions": [p0]},
            {"group": "g", "client_id": "c2", "partitions": [p0, p1]}]  # fmt: skip
    g = sampler(reads, docs).cycle().group("g")
    assert g is not None and g.members == 2 and g.members_source == "instances"
    assert g.protocol == MEMBERS_NOT_ANSWERED
    assert [p.owners for p in g.partitions] == [("c1", "c2"), ("c2",)]  # both claim p0


def test_members_not_answered_is_said() -> None:
    assert members_of(GroupInfo("g", "Stable", "", ()), {}) == (0, MEMBERS_NOT_ANSWERED)
    assert members_of(GroupInfo("g", "Empty", "", ()), {}) == (0, "broker")
    assert members_of(None, instance_owners([]).get("g", {})) == (0, MEMBERS_NOT_ANSWERED)


def test_a_deleted_group_disappears() -> None:
    reads = Reads()
    s = sampler(reads)
    s.cycle()
    del reads.commits["g"]
    assert s.cycle().group("g") is None


def test_an_unexpected_failure_of_a_cycle_is_shown_and_sampling_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    reads = Reads()
    broken = [True]

    def instances() -> list[dict[str, Any]]:
        if broken[0]:
            raise TypeError("a bug in a look")
        return []

    s = Sampler(cast(ClusterReads, reads), interval=0.05, instances=instances).start()
    try:
        deadline = time.monotonic() + 10
        while (s.latest.error or "").startswith("not sampled") and time.monotonic() < deadline:
            time.sleep(0.02)
        failed = s.latest
        assert failed.up is False and failed.error == "sampling failed: TypeError: a bug in a look"
        time.sleep(0.3)  # several cycles fail the same way: one traceback logged
        broken[0] = False
        while not s.latest.up and time.monotonic() < deadline:
            time.sleep(0.02)
        assert s.latest.up and s.latest.group("g") is not None  # the thread lived on
    finally:
        s.stop()
    logged = [r for r in caplog.records if r.exc_info is not None]
    assert len(logged) == 1 and "TypeError" in caplog.text
