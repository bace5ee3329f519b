"""Windowed aggregates from the pipeline's micro-batches: the watermark and state logic."""

from __future__ import annotations

from lagless.spark.pipeline.windows import WindowState, advance, duration_us

MIN = 60_000_000  # one minute in µs


def key(minute: int, country: str) -> tuple[int, int, str]:
    return (minute * MIN, (minute + 1) * MIN, country)


def test_windows_close_once_the_watermark_passes_their_end() -> None:
    delay = duration_us("1 minute")
    assert delay == MIN and duration_us("30 seconds") == MIN // 2
    # batch 0: minutes 0 and 1, newest event at 1:30 -> watermark 0:30: nothing closes
    state, closed = advance(
        WindowState(),
        [(key(0, "DE"), 2, 3.0, 50_000_000), (key(1, "DE"), 1, 1.0, 90_000_000)],
        delay,
    )
    assert closed == [] and state.watermark_us == 30_000_000
    assert state.open == {key(0, "DE"): (2, 3.0), key(1, "DE"): (1, 1.0)}
    # batch 1: more of minute 0, newest at 3:00 -> watermark 2:00: minutes 0 and 1 close
    state, closed = advance(
        state, [(key(0, "DE"), 1, 4.0, 10), (key(3, "FR"), 1, 2.0, 180_000_000)], delay
    )
    assert closed == [(key(0, "DE"), 3, 7.0), (key(1, "DE"), 1, 1.0)]
    assert state.watermark_us == 2 * MIN and state.open == {key(3, "FR"): (1, 2.0)}
    # batch 2: a late row of the written minute 0 is dropped; older events never move the
    # watermark back
    state, closed = advance(state, [(key(0, "DE"), 5, 9.0, 20)], delay)
    assert closed == [] and state.watermark_us == 2 * MIN
    assert state.open == {key(3, "FR"): (1, 2.0)}


def test_state_round_trips_through_json() -> None:
    state = WindowState(watermark_us=5, open={key(2, "US"): (4, None), key(1, "DE"): (1, 2.5)})
    assert WindowState.from_json(state.to_json()) == state
    assert WindowState.from_json(WindowState().to_json()) == WindowState()
