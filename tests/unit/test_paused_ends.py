"""Which asked ends the watch uses (lagless.engine.watch.ends): a paused partition's, and a
resumed one's for a while (until its first fetch has answered), never a stale one."""

from __future__ import annotations

from lagless.engine.watch.ends import KEEP_S, remembered, usable_end


def test_a_wanted_partitions_end_is_used_however_old() -> None:
    assert usable_end((120, 0.0), wanted=True, now=100.0) == 120


def test_a_resumed_partitions_end_is_used_for_a_while_then_not() -> None:
    assert usable_end((120, 10.0), wanted=False, now=10.0 + KEEP_S / 2) == 120
    assert usable_end((120, 10.0), wanted=False, now=10.0 + KEEP_S + 0.1) is None
    assert usable_end(None, wanted=True, now=0.0) is None


def test_answers_replace_older_ones_and_old_ones_leave() -> None:
    ends = {("t", 0): (50, 0.0), ("t", 1): (70, 9.0)}
    got = remembered(ends, {("t", 1): 90, ("t", 2): 10}, now=10.0)
    assert got == {("t", 1): (90, 10.0), ("t", 2): (10, 10.0)}  # t[0] asked 10 s ago: gone
    assert remembered(got, {}, now=12.0) == got  # an empty answer forgets nothing recent
