"""The rebalance lab's HTML page, from hand-made timelines (no broker)."""

from __future__ import annotations

from typing import Any

from lagless.lab.measures import measure
from lagless.lab.model import EventKind, LagSample, Processed, ScenarioData, ScenarioReport
from lagless.lab.page import render_page, slug
from lagless.lab.runner import OVERLAP_NOTE
from tests.chartspecs import assert_self_contained, own_markup, specs
from tests.unit.lab_timelines import cooperative_surge, eager_stop_the_world, ev

BROKER = "Tansu 0.6.0 <embedded>"
ODD = 'odd <b>&"name'


def with_load(data: ScenarioData) -> ScenarioData:
    data.lag = [LagSample(float(t), 10 * t, 0.1 * t) for t in range(0, 90, 5)]
    data.processed = [
        Processed("a", 0, n, str(n), 1000.0 * t, 1000.0 * t + 5.0 + n)
        for n, t in enumerate(range(0, 90, 3))
    ]
    return data


def report(
    name: str, data: ScenarioData | None, supported: bool = True, note: str | None = None
) -> ScenarioReport:
    measures = measure(data) if data is not None else None
    settings = {"partition.assignment.strategy": "range", "leave_group": False, "note": "<x>"}
    return ScenarioReport(
        name, f"lab-{name}", f"g-{name}", settings, supported, note, measures, True
    )


def page() -> tuple[str, list[tuple[ScenarioReport, ScenarioData | None]]]:
    overlapping = with_load(cooperative_surge())
    overlapping.events += [
        ev(22.0, "c", EventKind.ASSIGNED, 0),
        ev(24.0, "a", EventKind.REVOKED, 0),
    ]
    eager = with_load(eager_stop_the_world())
    items: list[tuple[ScenarioReport, ScenarioData | None]] = [
        (report("eager-defaults", eager), eager),
        (
            report(ODD, overlapping, note="Tansu hands partitions over without revoking"),
            overlapping,
        ),
        (report("kip848", None, supported=False, note="no KIP-848 in Tansu 0.6.0"), None),
    ]
    return render_page(BROKER, items), items


def test_page_names_the_broker_and_every_scenario_escaped() -> None:
    html, _ = page()
    assert "Broker: Tansu 0.6.0 &lt;embedded&gt;" in html
    mine = own_markup(html)
    assert "<embedded>" not in mine and "<b>" not in mine and "<x>" not in mine
    assert "<embedded>" not in html and "<b>" not in html and "<x>" not in html
    assert "odd &lt;b&gt;&amp;&quot;name" in html
    for name in ("eager-defaults", slug(ODD), "kip848"):
        assert f"<section id={name}>" in html
    assert "not supported by this broker: no KIP-848 in Tansu 0.6.0" in html
    assert "Tansu hands partitions over without revoking" in html


def test_page_is_self_contained() -> None:
    html, _ = page()
    assert_self_contained(html)


def test_every_chart_has_its_spec() -> None:
    html, _ = page()
    charts = specs(html)
    ids = set(charts)
    # four plots for each scenario with data, none for the one not run
    for key in ("eager-defaults", slug(ODD)):
        assert {f"{key}-lag-records", f"{key}-lag-seconds", f"{key}-e2e-p99", f"{key}-strip"} <= ids
    assert not any(i.startswith("kip848") for i in ids)
    assert len(charts) == 8


def strip(html: str, key: str) -> dict[str, Any]:
    return specs(html)[f"{key}-strip"]


def test_strip_has_a_row_per_partition_colours_per_instance_and_pale_owned_bars() -> None:
    html, _ = page()
    spec = strip(html, "eager-defaults")
    assert spec["type"] == "strip" and spec["partitions"] == 4  # rows p0..p3
    # owners in the order they first owned a partition: charts.js colours them in that order
    assert [o["name"] for o in spec["owners"]] == ["a", "b", "c"]
    consuming = [b for b in spec["bars"] if b["state"] == "consuming"]
    # a: p0 p1; b: p2 p3 twice (revoked, re-assigned); c: p0 p1
    assert len(consuming) == 8
    assert {b["owner"] for b in consuming} == {"a", "b", "c"}
    # c owned p0 / p1 from 41.0 but consumed only from 41.5: a pale bar before
    pale = [b for b in spec["bars"] if b["state"] == "owned"]
    assert any("p0: c, owned 41.00-90.00 s" in b["label"] for b in pale)
    # a's bars after its STOPPING (20.1) until STOPPED (20.5) are pale too
    assert any("p0: a" in b["label"] and b["from"] == 20.1 for b in pale)
    assert [b for b in spec["bands"] if b["kind"] == "rollout"]  # the rollout window is shaded
    assert spec["overlaps"] == []


def test_strip_marks_triggers_and_overlaps() -> None:
    html, items = page()
    eager = strip(html, "eager-defaults")
    lines = eager["markers"]
    assert len(lines) == len(items[0][1].triggers if items[0][1] else ())  # 4
    assert {"kind": "stop", "label": "stop a", "x": 20.0} in lines
    assert {"kind": "start", "label": "start c", "x": 21.0} in lines
    assert [line["kind"] for line in lines].count("stop") == 1  # drawn dashed
    odd = strip(html, slug(ODD))
    assert len(odd["overlaps"]) == 1
    overlap = odd["overlaps"][0]
    assert (overlap["partition"], overlap["from"], overlap["to"]) == (0, 22.0, 24.0)
    assert "p0 owned by a and c for 2.00 s" in overlap["label"]


def test_plots_carry_trigger_marks_and_the_summary_the_measures() -> None:
    html, items = page()
    lag = specs(html)["eager-defaults-lag-records"]
    assert len(lag["markers"]) == 4
    assert "<table id=summary>" in html
    eager = items[0][0].measures
    assert eager is not None
    assert eager.rebalances == 1
    assert "<table id=eager-defaults-measures>" in html
    assert "21.4 s" in html  # its max unconsumed time
    assert "<th>leave_group</th><td class=num>false</td>" in html
    assert "id=best" in html and "over eager-defaults" in html


def test_a_page_of_unsupported_scenarios_only_still_renders() -> None:
    html = render_page("unknown", [(report("kip848", None, supported=False, note=None), None)])
    assert "not supported by this broker" in html
    assert not specs(html) and "data-lg-spec" not in own_markup(html)
    assert "No improvement ratio" in html


def test_plots_shade_what_lies_outside_the_measured_window_and_the_rollouts() -> None:
    html, _ = page()
    lag = specs(html)["eager-defaults-lag-records"]
    bands = {(b["kind"], b["from"], b["to"]) for b in lag["bands"]}
    # WINDOWS: warm-up 10-20, rollout-1 20-60, cool-down 60-80; the run 0-90
    assert ("outside", 0.0, 10.0) in bands and ("outside", 80.0, 90.0) in bands
    assert ("warm-up", 10.0, 20.0) in bands and ("rollout", 20.0, 60.0) in bands
    assert (lag["xMin"], lag["xMax"]) == (0.0, 90.0)


def test_a_lag_peak_before_the_warm_up_is_said_to_be_outside_the_measured_window() -> None:
    data = with_load(eager_stop_the_world())
    data.lag.append(LagSample(5.0, 5000, 3.0))  # the start's catch-up, before the warm-up (10)
    html = render_page(BROKER, [(report("eager-defaults", data), data)])
    note = specs(html)["eager-defaults-lag-records"]["note"]
    assert "5,000 records at 5 s" in note and "outside the measured window" in note
    # a peak inside the window: no such note
    inside = with_load(eager_stop_the_world())
    inside.lag = [LagSample(float(t), 100 - abs(30 - t), 0.1) for t in range(0, 90, 5)]  # top: 30
    html = render_page(BROKER, [(report("eager-defaults", inside), inside)])
    assert "note" not in specs(html)["eager-defaults-lag-records"]


def test_the_overlap_caveat_shows_only_where_overlaps_were_measured() -> None:
    caveat = f"Tansu holds every join; {OVERLAP_NOTE}"
    none = with_load(eager_stop_the_world())
    html = render_page(BROKER, [(report("a", none, note=caveat), none)])
    assert OVERLAP_NOTE not in html and "Tansu holds every join" in html
    some = with_load(cooperative_surge())
    some.events += [ev(22.0, "c", EventKind.ASSIGNED, 0), ev(24.0, "a", EventKind.REVOKED, 0)]
    html = render_page(BROKER, [(report("b", some, note=caveat), some)])
    assert f"{OVERLAP_NOTE}: 1 in this run (2 s)" in html


def test_the_summary_table_keeps_its_cells_on_one_line() -> None:
    html, _ = page()
    assert "#summary td { white-space: nowrap; }" in html  # the browser test measures it
    assert "<div class=wide><table id=summary>" in html
