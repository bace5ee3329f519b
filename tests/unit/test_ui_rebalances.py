"""Rebalances from assignment changes: opened once per group, closed when every partition is
owned again and the assignment held for a cycle."""

from __future__ import annotations

from lagless.ui.model import GroupSample, PartitionSample
from lagless.ui.rebalances import RebalanceTracker, moved


def sample(owners: dict[int, tuple[str, ...]], state: str = "Stable") -> GroupSample:
    parts = tuple(PartitionSample("t", p, 0, 0, 0, 0.0, o) for p, o in sorted(owners.items()))
    return GroupSample("g", state, "range", 2, "instances", parts, True)


def test_a_member_leaving_is_one_rebalance_with_its_duration_and_moves() -> None:
    tracker = RebalanceTracker()
    both = {0: ("a",), 1: ("b",)}
    assert tracker.observe(sample(both), 0.0) is None  # first sight: no event
    assert tracker.observe(sample(both), 1.0) is None and tracker.total("g") == 0
    assert tracker.observe(sample({0: ("a",), 1: ()}), 2.0) is None  # b left: opens
    assert tracker.current("g") is not None and tracker.total("g") == 1
    assert tracker.observe(sample({0: ("a",), 1: ()}), 3.0) is None  # p1 unowned: still open
    assert tracker.observe(sample({0: ("a",), 1: ("a",)}), 4.0) is None  # changed again
    done = tracker.observe(sample({0: ("a",), 1: ("a",)}), 5.0)
    assert done is not None and done.at == 2.0 and done.duration_s == 3.0 and done.moved == 1
    assert tracker.total("g") == 1 and tracker.current("g") is None


def test_a_rebalancing_state_opens_one_without_an_owner_change() -> None:
    tracker = RebalanceTracker()
    tracker.observe(sample({0: ("a",)}), 0.0)
    tracker.observe(sample({0: ("a",)}, "PreparingRebalance"), 1.0)
    tracker.observe(sample({0: ("a",)}, "CompletingRebalance"), 2.0)
    done = tracker.observe(sample({0: ("a",)}), 3.0)
    assert done is not None and done.duration_s == 2.0 and done.moved == 0
    assert tracker.total("g") == 1


def test_moved_counts_partitions_whose_owners_changed() -> None:
    before = frozenset({("a", "t", 0), ("b", "t", 1), ("a", "t", 2)})
    after = frozenset({("a", "t", 0), ("a", "t", 1), ("a", "t", 2), ("c", "t", 2)})
    assert moved(before, after) == 2


def test_forgetting_a_group() -> None:
    tracker = RebalanceTracker()
    tracker.observe(sample({0: ("a",)}), 0.0)
    tracker.forget([])
    assert tracker.total("g") == 0
