"""The rebalance lab's measures, from hand-made timelines (no broker)."""

from __future__ import annotations

import pytest

from lagless.lab.measures import (
    e2e_p99_series,
    improvement,
    lag_series,
    measure,
    measurement_window,
    percentiles,
    rounds,
    settles,
)
from lagless.lab.model import (
    EventKind,
    LagSample,
    Measures,
    Percentiles,
    Processed,
    Produced,
    ScenarioData,
    ScenarioReport,
    Stat,
    Trigger,
    TriggerKind,
)
from lagless.lab.ownership import coverage, longest_gap, overlaps, ownerships
from lagless.lab.positions import parse_position_lag
from tests.unit.lab_timelines import (
    WINDOWS,
    cooperative_surge,
    eager_stop_the_world,
    ev,
    service_start,
)

K = EventKind


# -- ownerships -----------------------------------------------------------------------------


def test_ownership_opens_on_assigned_consumes_and_closes_on_revoke_lost_stopped_or_end() -> None:
    events = [
        ev(1.0, "a", K.ASSIGNED, 0, 1, 2),
        ev(1.5, "a", K.CONSUMING, 0),
        ev(1.7, "a", K.CONSUMING),  # no partitions: all open ones not consuming yet
        ev(5.0, "a", K.REVOKED, 0),
        ev(6.0, "a", K.LOST, 1),
        ev(2.0, "b", K.ASSIGNED, 3),
        ev(2.5, "b", K.CONSUMING, 3),
        ev(8.0, "b", K.STOPPING),
        ev(8.5, "b", K.STOPPED, left=True),
    ]
    owned = {(o.instance, o.partition): o for o in ownerships(events, run_end=10.0)}
    assert len(owned) == 4
    p0, p1, p2, p3 = owned["a", 0], owned["a", 1], owned["a", 2], owned["b", 3]
    assert (p0.start, p0.consuming, p0.end, p0.ended_by, p0.consuming_end) == (
        1.0, 1.5, 5.0, "revoked", 5.0,
    )  # fmt: skip
    assert (p1.consuming, p1.end, p1.ended_by) == (1.7, 6.0, "lost")
    assert (p2.end, p2.ended_by, p2.consuming_span) == (10.0, "end", (1.7, 10.0))
    # consumption stops at STOPPING, ownership at STOPPED
    assert (p3.end, p3.ended_by, p3.consuming_span) == (8.5, "stopped", (2.5, 8.0))


def test_ownership_without_consuming_and_consuming_after_stopping_are_not_spans() -> None:
    events = [
        ev(1.0, "a", K.ASSIGNED, 0),
        ev(1.0, "a", K.ASSIGNED),  # a round that gives nothing new opens nothing
        ev(2.0, "a", K.STOPPING),
        ev(2.1, "a", K.CONSUMING, 0),  # after STOPPING: it no longer takes records
        ev(3.0, "a", K.STOPPED, left=False),
        ev(4.0, "b", K.ASSIGNED, 1),
    ]
    owned = ownerships(events, run_end=5.0)
    assert [(o.instance, o.partition, o.consuming_span) for o in owned] == [
        ("a", 0, None),
        ("b", 1, None),
    ]


def test_a_restarted_instance_name_consumes_again_after_subscribing() -> None:
    events = [
        ev(1.0, "a", K.ASSIGNED, 0),
        ev(1.1, "a", K.CONSUMING, 0),
        ev(2.0, "a", K.STOPPING),
        ev(2.5, "a", K.STOPPED),
        ev(3.0, "a", K.SUBSCRIBED),
        ev(4.0, "a", K.ASSIGNED, 0),
        ev(4.2, "a", K.CONSUMING, 0),
    ]
    spans = [o.consuming_span for o in ownerships(events, run_end=6.0)]
    assert spans == [(1.1, 2.0), (4.2, 6.0)]


# -- overlaps -------------------------------------------------------------------------------


def test_overlap_is_counted_when_two_instances_own_a_partition_at_once() -> None:
    # Tansu with cooperative-sticky: c receives p1 before a has revoked it
    events = [
        *service_start(("a", (0, 1)), ("b", (2, 3))),
        ev(23.0, "c", K.ASSIGNED, 1),
        ev(23.1, "c", K.CONSUMING, 1),
        ev(26.0, "a", K.REVOKED, 1),
        ev(30.0, "a", K.REVOKED, 0),  # handed over cleanly: no overlap
        ev(30.0, "b", K.ASSIGNED, 0),
    ]
    found = overlaps(ownerships(events, run_end=40.0))
    assert [(o.partition, o.first, o.second) for o in found] == [(1, "a", "c")]
    assert found[0].seconds == pytest.approx(3.0)
    data = ScenarioData(0.0, 40.0, 4, events=events)
    m = measure(data)
    assert m.ownership_overlaps == 1
    assert m.overlap_s == pytest.approx(3.0)
    # overlapping ownership leaves no gap in consumption
    assert longest_gap(coverage(ownerships(events, 40.0), 4)[1], 2.0, 40.0) == 0.0


def test_no_overlap_for_the_same_instance_or_a_clean_handover() -> None:
    events = [
        ev(1.0, "a", K.ASSIGNED, 0),
        ev(2.0, "a", K.REVOKED, 0),
        ev(2.0, "b", K.ASSIGNED, 0),
        ev(2.5, "a", K.ASSIGNED, 1),
        ev(2.6, "a", K.ASSIGNED, 1),  # already held: no second ownership
    ]
    owned = ownerships(events, run_end=5.0)
    assert len(owned) == 3
    assert overlaps(owned) == []


# -- window, gaps, rounds, rebalance time ---------------------------------------------------


def test_measurement_window_runs_from_warm_up_to_cool_down_else_the_run() -> None:
    data = eager_stop_the_world()
    assert measurement_window(data) == (10.0, 80.0)
    assert measurement_window(ScenarioData(1.0, 9.0, 1)) == (1.0, 9.0)


def test_longest_gap_counts_leading_inner_and_trailing_stretches() -> None:
    spans = [(2.0, 4.0), (5.0, 6.0)]
    assert longest_gap(spans, 0.0, 10.0) == 4.0  # 6..10
    assert longest_gap(spans, 1.5, 6.5) == 1.0  # 4..5
    assert longest_gap([], 0.0, 3.0) == 3.0


def test_eager_stop_the_world() -> None:
    data = eager_stop_the_world()
    m = measure(data)
    # a stops consuming at 20.1; its partitions resume at 41.5 on c
    assert m.max_unconsumed_s == pytest.approx(21.4)
    found = settles(data)
    assert [(s.kind, s.instance) for s in found] == [
        (TriggerKind.STOP, "a"),
        (TriggerKind.START, "c"),
    ]  # the initial starts lie before the window
    # the stop does not settle before c joins: its disruption runs on until 41.5
    assert [s.t0 for s in found] == [20.1, 21.2]
    assert [s.seconds for s in found] == pytest.approx([21.4, 20.3])
    assert m.rebalance_s.avg == pytest.approx(20.85)
    assert m.rebalance_s.max == pytest.approx(21.4)
    # the revoke at 40.5 and the assignments at 41.0 are one round; the initial one is before
    assert m.rebalances == 1
    assert m.ownership_overlaps == 0


def test_cooperative_surge_moves_one_partition_and_stops_nothing_else() -> None:
    data = cooperative_surge()
    m = measure(data)
    cover = coverage(ownerships(data.events, data.run_end), 4)
    start, end = measurement_window(data)
    assert [longest_gap(cover[p], start, end) for p in (0, 2, 3)] == [0.0, 0.0, 0.0]
    assert m.max_unconsumed_s == pytest.approx(0.35)  # p1: revoked 21.05, consumed on c 21.4
    assert m.rebalance_s.avg == pytest.approx(1.4)  # SUBSCRIBED 20.0 -> all consumed 21.4
    assert m.rebalance_s.max == pytest.approx(1.4)
    assert m.rebalances == 1  # the two cooperative rounds lie within ROUND_GAP_S
    assert m.ownership_overlaps == 0


def test_rounds_group_assigned_callbacks_and_the_revokes_leading_into_them() -> None:
    events = [
        ev(1.0, "a", K.ASSIGNED, 0),
        ev(1.5, "b", K.ASSIGNED),  # empty: still part of the round
        ev(10.0, "a", K.REVOKED, 0),
        ev(12.0, "a", K.ASSIGNED, 0),
        ev(13.9, "b", K.ASSIGNED, 1),  # 1.9 s after the round's first: same round
        ev(14.1, "a", K.ASSIGNED),  # 2.1 s after: a new round
        ev(20.0, "b", K.REVOKED, 1),  # the last member leaving: no round
    ]
    found = rounds(events)
    assert [(r.start, r.assigned, r.end, len(r.events)) for r in found] == [
        (1.0, 1.0, 1.5, 2),
        (10.0, 12.0, 13.9, 3),
        (14.1, 14.1, 14.1, 1),
    ]


def test_a_trigger_that_never_settles_counts_to_the_window_end() -> None:
    events = [*service_start(("a", (0, 1))), ev(30.0, "a", K.STOPPING), ev(31.0, "a", K.STOPPED)]
    triggers = [Trigger(29.5, TriggerKind.STOP, "a", 1)]
    data = ScenarioData(0.0, 90.0, 2, events=events, triggers=triggers, windows=list(WINDOWS))
    m = measure(data)
    assert m.rebalance_s == Stat(50.0, 50.0)  # 30.0 -> window end 80.0
    assert m.max_unconsumed_s == pytest.approx(50.0)


def test_settling_after_the_window_counts_to_the_window_end() -> None:
    events = [
        *service_start(("a", (0,)), ("c", ())),
        ev(70.0, "a", K.STOPPING),
        ev(70.5, "a", K.STOPPED, left=False),
        ev(81.0, "c", K.ASSIGNED, 0),  # a's session expired after the cool-down
        ev(81.1, "c", K.CONSUMING, 0),
    ]
    triggers = [Trigger(70.0, TriggerKind.STOP, "a", 1), Trigger(85.0, TriggerKind.START, "d", 2)]
    data = ScenarioData(0.0, 90.0, 1, events=events, triggers=triggers, windows=list(WINDOWS))
    # the start lies after the cool-down: only the stop counts, unsettled until the window's end
    assert [(s.t0, s.settled) for s in settles(data)] == [(70.0, 80.0)]


def test_a_trigger_without_its_event_uses_the_trigger_stamp() -> None:
    events = [*service_start(("a", (0,))), ev(30.0, "b", K.ASSIGNED), ev(31.0, "a", K.ASSIGNED)]
    triggers = [Trigger(29.0, TriggerKind.START, "b", 1)]
    data = ScenarioData(0.0, 90.0, 1, events=events, triggers=triggers, windows=list(WINDOWS))
    assert [(s.t0, s.settled) for s in settles(data)] == [(29.0, 31.0)]


def test_no_triggers_no_rebalance_time() -> None:
    data = ScenarioData(0.0, 10.0, 1, events=service_start(("a", (0,))))
    m = measure(data)
    assert m.rebalance_s == Stat(None, None)
    assert m.rebalances == 1
    assert m.max_unconsumed_s == pytest.approx(1.1)  # from the run's start until consuming


# -- lag, latency, ledger -------------------------------------------------------------------


def test_lag_maxima_are_taken_inside_the_window() -> None:
    data = eager_stop_the_world()
    data.lag = [
        LagSample(5.0, 9999, 99.0),  # before warm-up: ignored
        LagSample(30.0, 400, 9.0),
        LagSample(41.0, 350, 21.0),
        LagSample(85.0, 8888, 88.0),  # after cool-down: ignored
    ]
    m = measure(data)
    assert (m.max_lag_records, m.max_lag_s) == (400, 21.0)
    records, seconds = lag_series(data)
    assert records[0] == (5.0, 9999.0)
    assert seconds[2] == (41.0, 21.0)


def test_percentiles_are_exact_nearest_rank() -> None:
    assert percentiles(float(v) for v in range(100, 0, -1)) == Percentiles(50.0, 99.0, 100.0, 50.5)
    assert percentiles([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0]) == Percentiles(
        5.0, 10.0, 10.0, 5.5
    )
    assert percentiles([7.0]) == Percentiles(7.0, 7.0, 7.0, 7.0)
    assert percentiles([]) == Percentiles()


def done(at_s: float, latency_ms: float, outcome: str = "ok", id_: str = "") -> Processed:
    done_ms = float(round(at_s * 1000))
    return Processed("a", 0, 0, id_, done_ms - latency_ms, done_ms, outcome)


def test_e2e_over_the_window_and_inside_rollouts() -> None:
    data = eager_stop_the_world()
    data.processed = [
        done(5.0, 1000.0),  # before the window
        done(15.0, 10.0),
        done(16.0, 20.0, "dlq"),
        done(17.0, 5000.0, "skipped"),  # not a run
        done(30.0, 300.0),  # rollout
        done(31.0, 200.0),  # rollout
        done(70.0, 30.0),
    ]
    m = measure(data)
    assert m.e2e_ms == Percentiles(30.0, 300.0, 300.0, 112.0)  # avg of 10, 20, 300, 200, 30
    assert m.e2e_rollout_ms == Percentiles(200.0, 300.0, 300.0, 250.0)


def test_e2e_p99_series_per_second_bucket_with_gaps() -> None:
    data = ScenarioData(100.0, 110.0, 1)
    data.processed = [done(100.2, 5.0), done(100.9, 7.0), done(103.5, 40.0)]
    assert e2e_p99_series(data) == [(0.0, 7.0), (1.0, None), (2.0, None), (3.0, 40.0)]
    assert e2e_p99_series(ScenarioData(0.0, 1.0, 1)) == []


def test_ledger_counts_lost_and_duplicated_ids() -> None:
    data = ScenarioData(0.0, 10.0, 1)
    data.produced = [Produced(i, 0, n, 0.0) for n, i in enumerate("abcde")]
    data.processed = [
        done(1.0, 1.0, id_="a"),
        done(1.0, 1.0, id_="b"),
        done(2.0, 1.0, id_="b"),  # processed again after a rebalance
        done(1.0, 1.0, "dlq", id_="c"),  # dead-lettered counts as processed
        done(1.0, 1.0, "skipped", id_="d"),  # skipped does not
    ]
    m = measure(data)
    assert (m.lost, m.duplicated, m.processed, m.produced) == (2, 1, 4, 5)


# -- improvement ----------------------------------------------------------------------------


def measures(rebalance: float | None, lag: int, lag_s: float, p99: float | None) -> Measures:
    return Measures(
        rebalances=1, rebalance_s=Stat(rebalance, rebalance), max_unconsumed_s=0.0,
        max_lag_records=lag, max_lag_s=lag_s, e2e_ms=Percentiles(1.0, p99, p99),
        e2e_rollout_ms=Percentiles(), lost=0, duplicated=0, ownership_overlaps=0,
    )  # fmt: skip


def report(name: str, m: Measures | None) -> ScenarioReport:
    return ScenarioReport(name, "t", "g", {}, m is not None, measures=m)


def test_improvement_is_baseline_over_scenario() -> None:
    reports = [
        report("eager-defaults", measures(40.0, 40000, 40.0, 2000.0)),
        report("mitigated", measures(1.0, 150, 0.0, 700.0)),
        report("cooperative-defaults", measures(None, 20000, 20.0, None)),
        report("kip848", None),
    ]
    found = improvement(reports)
    assert [row.scenario for row in found.rows] == ["mitigated", "cooperative-defaults"]
    mitigated, cooperative = found.rows
    assert mitigated.ratios() == {
        "rebalance_avg": 40.0,
        "max_lag_records": pytest.approx(40000 / 150),
        "max_lag_s": None,  # 0 s of lag: no finite ratio
        "e2e_p99": pytest.approx(2000 / 700),
    }
    assert cooperative.rebalance_avg is None and cooperative.e2e_p99 is None
    best = found.best
    assert best is not None
    assert best[:2] == ("mitigated", "max_lag_records")
    assert best[2] == pytest.approx(40000 / 150)
    assert improvement(reports, baseline="absent").rows == ()
    assert improvement(reports[:1]).best is None


def test_position_lag_is_the_max_of_the_sums_inside_the_window() -> None:
    data = eager_stop_the_world()
    data.lag = [
        LagSample(5.0, 9999, 99.0, position_lag_records=5000),  # before warm-up: ignored
        LagSample(30.0, 900, 1.0, position_lag_records=120),
        LagSample(41.0, 950, 1.2, position_lag_records=None),  # not read at that moment
        LagSample(50.0, 800, 0.9, position_lag_records=40),
    ]
    m = measure(data)
    assert m.max_position_lag_records == 120
    assert m.max_lag_records == 950  # committed lag: a separate figure
    data.lag = [LagSample(30.0, 900, None)]  # never read (and no timestamps)
    m = measure(data)
    assert m.max_position_lag_records is None and m.max_lag_s is None


def test_position_lag_gauges_are_read_per_partition_of_the_topic() -> None:
    text = (
        "# HELP lagless_position_lag_records log end - consumer position\n"
        'lagless_position_lag_records{group="g",topic="t",partition="0"} 3.0\n'
        'lagless_position_lag_records{group="g",topic="t",partition="7"} 0.0\n'
        'lagless_position_lag_records{group="g",topic="other",partition="1"} 99.0\n'
        'lagless_lag_records{group="g",topic="t",partition="1"} 500.0\n'
    )
    assert parse_position_lag(text, "t") == {0: 3, 7: 0}
    assert parse_position_lag("", "t") == {}
