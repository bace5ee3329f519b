"""Lag status rules over a sliding window (after Burrow's evaluation rules)."""

from __future__ import annotations

from lagless.observe.status import Observation, Status, coverage, evaluate, in_window, worst


def history(*points: tuple[int, int], step: float = 1.0) -> list[Observation]:
    """Observations one ``step`` apart from (committed, end) pairs."""
    return [Observation(i * step, committed, end) for i, (committed, end) in enumerate(points)]


def test_zero_lag_anywhere_in_the_window_is_ok() -> None:
    obs = history((10, 20), (10, 30), (30, 30), (30, 40), (30, 50))
    assert evaluate(obs, window=10) == Status.OK


def test_no_history_or_short_history_is_ok() -> None:
    assert evaluate([], window=5) == Status.OK
    # frozen with lag, but only 2 s of a 5 s window seen: not enough to call it
    assert evaluate(history((10, 20), (10, 20), (10, 20)), window=5) == Status.OK


def test_frozen_commits_with_lag_and_live_members_is_stall() -> None:
    obs = history(*[(10, 20 + i) for i in range(6)])
    assert evaluate(obs, window=5, active=True) == Status.STALL
    assert evaluate(obs, window=5, active=None) == Status.STALL


def test_frozen_commits_with_lag_and_no_members_is_stop() -> None:
    obs = history(*[(10, 20)] * 6)
    assert evaluate(obs, window=5, active=False) == Status.STOP


def test_behind_with_no_members_is_stop_at_once_never_ok() -> None:
    # one look, no window of history yet: a group nobody consumes is not OK
    assert evaluate(history((10, 20)), window=30, active=False) == Status.STOP
    assert evaluate(history((10, 20)), window=30, active=None) == Status.OK
    assert evaluate(history((20, 20)), window=30, active=False) == Status.OK  # caught up


def test_moving_commits_with_lag_never_going_down_is_warn() -> None:
    obs = history((10, 20), (12, 24), (14, 28), (16, 32), (18, 36), (20, 40))
    assert evaluate(obs, window=5, active=True) == Status.WARN
    # constant lag counts as not decreasing (Burrow rule 5)
    obs = history(*[(10 + i, 20 + i) for i in range(6)])
    assert evaluate(obs, window=5, active=True) == Status.WARN


def test_moving_commits_with_lag_going_down_once_is_ok() -> None:
    obs = history((10, 20), (12, 24), (20, 25), (22, 30), (24, 35), (26, 40))
    assert evaluate(obs, window=5, active=True) == Status.OK


def test_only_the_window_counts() -> None:
    # frozen long ago, then catching up: the old freeze is outside the 3 s window
    old_freeze = [(10, 100)] * 5
    catching_up = [(40, 100), (70, 100), (90, 100)]
    obs = history(*old_freeze, *catching_up)
    assert evaluate(obs, window=3, active=True) == Status.OK
    # the same freeze inside a wide window is a stall... unless lag went down inside it
    assert evaluate(obs[:5], window=3, active=True) == Status.STALL


def test_an_old_freeze_that_ended_in_a_stall_window_is_not_stop() -> None:
    obs = history(*[(10, 20)] * 4, (11, 20))
    assert evaluate(obs, window=3, active=False) == Status.OK


def test_in_window_keeps_one_anchor_before_the_start() -> None:
    obs = history(*[(i, 10) for i in range(10)])
    seen = in_window(obs, window=3, now=9)
    assert [o.t for o in seen] == [6, 7, 8, 9]
    assert coverage(seen, window=3, now=9) == 1.0
    assert coverage(obs[:2], window=3, now=1) == 1 / 3


def test_worst_orders_by_severity() -> None:
    assert worst([Status.OK, Status.STALL, Status.WARN]) == Status.STALL
    assert worst([Status.STOP, Status.STALL]) == Status.STOP
    assert worst([]) == Status.OK
