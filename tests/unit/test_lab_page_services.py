"""The lab page's two-service view and ablation bars, from hand-made data (no broker)."""

from __future__ import annotations

from lagless.lab.measures import measure
from lagless.lab.model import (
    Processed,
    ScenarioData,
    ScenarioReport,
    ServiceReport,
)
from lagless.lab.page import render_page
from tests.chartspecs import assert_self_contained, specs
from tests.unit.lab_timelines import cooperative_surge, eager_stop_the_world


def two_services() -> tuple[ScenarioReport, ScenarioData]:
    rolled = cooperative_surge()
    last = ScenarioData(rolled.run_start, rolled.run_end, 4)
    last.processed = [  # service #2: 400 ms end to end in second 3, 100 ms in second 50
        Processed("s0-g0", 0, n, f"id{n}", 3000.0 - 400.0, 3000.0 + n, "ok") for n in range(3)
    ] + [Processed("s0-g0", 1, 9, "id9", 50_000.0 - 100.0, 50_000.0, "ok")]
    rolled.downstream = last
    first, second = measure(rolled), measure(last)
    report = ScenarioReport(
        "kip848", "t1", "g1", {}, True, measures=first, topology="article",
        services=(ServiceReport({"service": "service-1", "role": "rolled"}, first),
                  ServiceReport({"service": "service-2", "role": "downstream"}, second)),
    )  # fmt: skip
    return report, rolled


def test_two_service_view_plots_service_2s_e2e_under_service_1s_rollouts() -> None:
    report, data = two_services()
    html = render_page("librdkafka mock cluster", [(report, data)])
    assert_self_contained(html)
    assert "<h2 id=services>" in html and "service-2" in html
    chart = specs(html)["services-0-e2e"]
    avg = dict(zip(chart["x"], chart["series"][0]["values"], strict=True))
    assert avg[3.0] is not None and 400.0 < avg[3.0] < 403.0  # done 3.000-3.002 s, ts 2.6 s
    assert avg[50.0] == 100.0
    assert chart["series"][1]["label"] == "p99"
    assert {b["kind"] for b in chart["bands"]} == {"rollout"}
    assert {m["kind"] for m in chart["markers"]} == {str(t.kind) for t in data.triggers}


def test_ablation_bars_one_chart_per_measure_in_chain_order() -> None:
    eager, coop = eager_stop_the_world(), cooperative_surge()
    items: list[tuple[ScenarioReport, ScenarioData | None]] = [
        (ScenarioReport("mitigated", "t", "g", {}, True, measures=measure(coop)), coop),
        (ScenarioReport("eager-defaults", "t", "g", {}, True, measures=measure(eager)), eager),
    ]
    html = render_page("Tansu", items)
    charts = specs(html)
    bars = [c for c in charts.values() if c["type"] == "bars"]
    assert len(bars) == 4  # rebalance, position lag, committed lag, e2e in rollouts
    assert bars[0]["categories"][0] == "eager-defaults"
    assert bars[0]["categories"][1].startswith("mitigated (+ cooperative-sticky")
    assert all(c["better"] == "lower" for c in bars)
    assert "Which figure is which" in html and "rebalance-latency-avg" in html


def test_no_services_or_ablation_for_one_single_service_scenario() -> None:
    eager = eager_stop_the_world()
    html = render_page("Tansu", [(ScenarioReport("eager-defaults", "t", "g", {}, True,
                                                 measures=measure(eager)), eager)])  # fmt: skip
    assert "id=services" not in html and "id=ablation" not in html
    assert "Which figure is which" in html
