"""The ablation: each step of the chain adds exactly one lever; the table compares each
measured scenario with the step before it (alternatives with ``mitigated``)."""

from __future__ import annotations

import itertools

import pytest

from lagless.lab.ablation import MEASURES, ablation_table, levers
from lagless.lab.model import (
    Measures,
    Percentiles,
    ScenarioReport,
    ServiceReport,
    Stat,
)
from lagless.lab.scenarios import ABLATION, ALTERNATIVES, SCENARIOS, parse_scenarios


def measures(rebalance: float, position: int | None, lag: int, e2e_avg: float) -> Measures:
    return Measures(
        rebalances=1, rebalance_s=Stat(rebalance, rebalance), max_unconsumed_s=0.0,
        max_lag_records=lag, max_lag_s=0.0, e2e_ms=Percentiles(), e2e_rollout_ms=Percentiles(
            1.0, 2.0, 3.0, e2e_avg
        ), lost=0, duplicated=0, ownership_overlaps=0, max_position_lag_records=position,
    )  # fmt: skip


def report(name: str, m: Measures | None, failed: str | None = None) -> ScenarioReport:
    return ScenarioReport(name, "t", "g", {}, m is not None, measures=m, failed=failed)


def test_each_step_of_the_chain_adds_one_lever() -> None:
    chain = [SCENARIOS[name] for name in ABLATION]
    added = [levers(a, b) for a, b in itertools.pairwise(chain)]
    assert added == [
        ["cooperative-sticky"],
        ["session 6 s / heartbeat 1.5 s"],
        ["leave on close"],
        ["surge 1 / unavailable 0"],
    ]
    assert ABLATION[0] == "eager-defaults" and ABLATION[-1] == "mitigated"
    assert parse_scenarios(",".join((*ABLATION, *ALTERNATIVES)))  # all of them exist


def test_alternatives_name_what_they_change_against_mitigated() -> None:
    mitigated = SCENARIOS["mitigated"]
    assert "static membership" in levers(mitigated, SCENARIOS["static"])
    assert levers(mitigated, SCENARIOS["kip848"]) == ["group.protocol=consumer"]
    assert levers(mitigated, SCENARIOS["kip848-static"]) == [
        "group.protocol=consumer", "static membership", "surge 0 / unavailable 1",
    ]  # fmt: skip


def test_table_compares_with_the_step_before() -> None:
    reports = [
        report("kip848", measures(0.5, 100, 900, 200.0)),  # given out of order
        report("eager-defaults", measures(40.0, 40000, 41000, 30000.0)),
        report("cooperative-defaults", measures(20.0, 20000, 21000, 10000.0)),
        report("leave-on-close", measures(5.0, 4000, 5000, 1000.0)),  # short-session not run
        report("mitigated", measures(2.0, 1000, 2000, 500.0)),
        report("static", None),  # not supported: left out
    ]
    rows = ablation_table(reports)
    assert [r.scenario for r in rows] == [
        "eager-defaults", "cooperative-defaults", "leave-on-close", "mitigated", "kip848",
    ]  # fmt: skip
    base, coop, leave, mitigated, kip848 = rows
    assert base.compared_with is None and base.adds == ()
    assert (
        base.cells["rebalance_avg_s"].value == 40.0 and base.cells["rebalance_avg_s"].factor is None
    )
    assert coop.compared_with == "eager-defaults"
    assert coop.cells["rebalance_avg_s"].factor == pytest.approx(2.0)
    assert coop.cells["max_position_lag_records"].factor == pytest.approx(2.0)
    # short-session was not measured: leave-on-close is compared with cooperative-defaults and
    # says both levers it adds
    assert leave.compared_with == "cooperative-defaults"
    assert leave.adds == ("session 6 s / heartbeat 1.5 s", "leave on close")
    assert leave.cells["e2e_rollout_avg_ms"].factor == pytest.approx(10.0)
    assert mitigated.adds == ("surge 1 / unavailable 0",)
    assert kip848.compared_with == "mitigated"  # an alternative, not the next step
    assert kip848.cells["max_lag_records"].factor == pytest.approx(2000 / 900)
    assert set(kip848.to_json()) >= {"scenario", "compared_with", "adds", *(m[0] for m in MEASURES)}


def test_failed_scenarios_and_missing_figures_are_left_undefined() -> None:
    reports = [
        report("eager-defaults", measures(40.0, None, 41000, 30000.0)),
        report("cooperative-defaults", measures(20.0, 0, 21000, 10000.0), failed="crashed"),
        report("mitigated", measures(2.0, 0, 2000, 500.0)),
    ]
    rows = ablation_table(reports)
    assert [r.scenario for r in rows] == ["eager-defaults", "mitigated"]
    cells = rows[1].cells
    assert cells["max_position_lag_records"].factor is None  # None before, 0 now: no ratio
    assert cells["rebalance_avg_s"].factor == pytest.approx(20.0)


def test_e2e_is_read_at_the_last_service() -> None:
    one = measures(1.0, 10, 100, 50.0)
    last = measures(1.0, 10, 100, 650.0)
    two = ScenarioReport(
        "mitigated", "t", "g", {}, True, measures=one, topology="article",
        services=(ServiceReport({"service": "service-1"}, one),
                  ServiceReport({"service": "service-2"}, last)),
    )  # fmt: skip
    (row,) = ablation_table([two])
    assert row.cells["e2e_rollout_avg_ms"].value == 650.0
    doc = two.to_json()
    assert doc["e2e_rollout_ms"]["avg"] == 650.0 and doc["topology"] == "article"
    assert [s["service"] for s in doc["services"]] == ["service-1", "service-2"]
