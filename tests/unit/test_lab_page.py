"""The rebalance lab's HTML page, from hand-made timelines (no broker)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from lagless.lab.measures import measure
from lagless.lab.model import EventKind, LagSample, Processed, ScenarioData, ScenarioReport
from lagless.lab.page import render_page, slug
from lagless.lab.strip import INSTANCE_COLORS, OVERLAP_COLOR
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


def svgs(html: str) -> list[ET.Element]:
    fragments = re.findall(r"<svg\b.*?</svg>", html, flags=re.S)
    return [ET.fromstring(f) for f in fragments]


def test_page_names_the_broker_and_every_scenario_escaped() -> None:
    html, _ = page()
    assert "Broker: Tansu 0.6.0 &lt;embedded&gt;" in html
    assert "<embedded>" not in html and "<b>" not in html and "<x>" not in html
    assert "odd &lt;b&gt;&amp;&quot;name" in html
    for name in ("eager-defaults", slug(ODD), "kip848"):
        assert f"<section id={name}>" in html
    assert "not supported by this broker: no KIP-848 in Tansu 0.6.0" in html
    assert "Tansu hands partitions over without revoking" in html


def test_page_is_self_contained() -> None:
    html, _ = page()
    assert "<script" not in html
    assert "http://" not in html and "https://" not in html
    assert " src=" not in html


def test_every_svg_fragment_is_well_formed() -> None:
    html, _ = page()
    charts = svgs(html)
    ids = {c.get("id") for c in charts}
    # four plots for each scenario with data, none for the one not run
    for key in ("eager-defaults", slug(ODD)):
        assert {f"{key}-lag-records", f"{key}-lag-seconds", f"{key}-e2e-p99", f"{key}-strip"} <= ids
    assert not any(i and i.startswith("kip848") for i in ids)
    assert len(charts) == 8


def strip(html: str, key: str) -> ET.Element:
    return next(c for c in svgs(html) if c.get("id") == f"{key}-strip")


def test_strip_has_a_row_per_partition_colours_per_instance_and_pale_owned_bars() -> None:
    html, _ = page()
    svg = strip(html, "eager-defaults")
    labels = [t.text for t in svg.iter("text") if (t.text or "").startswith("p")]
    assert labels == ["p0", "p1", "p2", "p3"]
    rects = list(svg.iter("rect"))
    consuming = [r for r in rects if r.get("class") == "consuming"]
    # a: p0 p1; b: p2 p3 twice (revoked, re-assigned); c: p0 p1
    assert len(consuming) == 8
    fills = {r.get("fill") for r in consuming}
    assert fills == set(INSTANCE_COLORS[:3])
    # c owned p0 / p1 from 41.0 but consumed only from 41.5: a pale bar before
    pale = [r for r in rects if r.get("class") == "owned"]
    assert any("p0: c, owned 41.00-90.00 s" in (r.findtext("title") or "") for r in pale)
    # a's bars after its STOPPING (20.1) until STOPPED (20.5) are pale too
    assert any("p0: a" in (r.findtext("title") or "") for r in pale)
    assert [r for r in rects if r.get("class") == "rollout"]  # the rollout window is shaded
    assert not [r for r in rects if r.get("class") == "overlap"]


def test_strip_marks_triggers_and_overlaps() -> None:
    html, items = page()
    eager = strip(html, "eager-defaults")
    lines = [line for line in eager.iter("line") if line.get("class") == "trigger"]
    assert len(lines) == len(items[0][1].triggers if items[0][1] else ())  # 4
    titles = [line.findtext("title") for line in lines]
    assert "stop a at 20s" in titles and "start c at 21s" in titles
    assert [line.get("stroke-dasharray") for line in lines].count("4 3") == 1  # the stop
    odd = strip(html, slug(ODD))
    overlaps = [r for r in odd.iter("rect") if r.get("class") == "overlap"]
    assert len(overlaps) == 1
    assert overlaps[0].get("stroke") == OVERLAP_COLOR
    assert "p0 owned by a and c for 2.00 s" in (overlaps[0].findtext("title") or "")


def test_plots_carry_trigger_marks_and_the_summary_the_measures() -> None:
    html, items = page()
    lag = next(c for c in svgs(html) if c.get("id") == "eager-defaults-lag-records")
    marks = [line for line in lag.iter("line") if line.get("class") == "mark"]
    assert len(marks) == 4
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
    assert "<svg" not in html
    assert "No improvement ratio" in html
