"""The lab page's sections for the two-service topology and the ablation.

* **Services**: per scenario of the article topology, each service's own figures, and the end
  to end at the last service (producer timestamp → done at service #2, across both hops) per
  second of done time — average and p99 — under service #1's rollouts (shaded) and its
  instances' starts and stops (marked).
* **Ablation**: per measure of :data:`lagless.lab.ablation.MEASURES`, one bar per scenario in
  ablation order (:func:`lagless.lab.ablation.ablation_table`), each row saying what it adds.
* **Which figure is which**: committed lag vs position lag, and the lab's rebalance time vs
  Kafka's ``rebalance-latency-avg``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

from lagless.lab.ablation import MEASURES, ablation_table
from lagless.lab.measures import e2e_ms, nearest_rank, rollouts, runs
from lagless.lab.model import ScenarioData, ScenarioReport
from lagless.lab.strip import TriggerMark
from lagless.observe.report import fmt
from lagless.ui import assets
from lagless.ui.chartspec import ROLLOUT, Axis, Band, Decor, Line, bars, timeseries

DEFINITIONS = (
    "<h2 id=definitions>Which figure is which</h2><ul>"
    "<li><strong>max position lag</strong> (<code>max_position_lag_records</code>): log end "
    "minus each partition's consumer position (the offset the next poll returns, Kafka's "
    "<code>records-lag</code>), read from each instance's "
    "<code>lagless_position_lag_records</code> gauge, a partition owned by nobody counted from "
    "its committed offset; summed over the topic, the maximum over the measured window. The "
    'article\'s "max lag" is this figure.</li>'
    "<li><strong>max committed lag</strong> (<code>max_lag_records</code>): log end minus the "
    "group's committed offset, summed over the topic, read by the lab's own sampler. It also "
    "holds what was fetched but not yet committed: about rate &#215; commit interval in a "
    "steady state.</li>"
    "<li><strong>rebalance time</strong> (<code>rebalance_s</code>): from an instance stopping "
    "or joining until every partition is owned and consumed again: the disruption the service "
    "feels. Kafka's <code>rebalance-latency-avg</code> (the article's figure) is one member's "
    "JoinGroup-to-SyncGroup round trip, a part of it.</li></ul>"
)


def _e2e_per_second(
    data: ScenarioData,
) -> tuple[list[float], list[float | None], list[float | None]]:
    """(x, avg, p99) of end to end per 1-second bucket of done time since the run's start."""
    buckets: dict[int, list[float]] = {}
    for r in runs(data.processed):
        buckets.setdefault(math.floor(r.done_ms / 1000 - data.run_start), []).append(e2e_ms(r))
    if not buckets:
        return [], [], []
    xs: list[float] = []
    avg: list[float | None] = []
    p99: list[float | None] = []
    for k in range(min(buckets), max(buckets) + 1):
        values = sorted(buckets.get(k, ()))
        xs.append(float(k))
        avg.append(sum(values) / len(values) if values else None)
        p99.append(nearest_rank(values, 0.99) if values else None)
    return xs, avg, p99


def e2e_chart(key: str, rolled: ScenarioData, last: ScenarioData) -> dict[str, object]:
    """The last service's end to end over time, on the rolled service's clock and rollouts."""
    origin = rolled.run_start
    shifted = ScenarioData(origin, rolled.run_end, last.partitions, processed=last.processed)
    xs, avg, p99 = _e2e_per_second(shifted)
    marks = [TriggerMark(t.ts - origin, t.kind, t.instance).marker() for t in rolled.triggers]
    shaded = [Band(w.start - origin, w.end - origin, ROLLOUT, w.name) for w in rollouts(rolled)]
    return timeseries(
        f"{key}-e2e", "End to end at service #2 (producer → done, both hops) per "
        "second, under service #1's rollouts", "ms", xs,
        [Line("avg", avg, total=True), Line("p99", p99)],
        Axis(start=0.0, end=max(rolled.run_end - origin, 1.0)), Decor(marks, shaded),
    )  # fmt: skip


def _service_rows(report: ScenarioReport, table_id: str) -> str:
    head = (
        "service", "role", "topic", "partitions", "instances", "work ms", "rebalance s avg",
        "max position lag", "max committed lag", "e2e ms avg (in rollouts)", "lost",
    )  # fmt: skip
    rows = []
    for s in report.services:
        m = s.measures
        cells = [str(s.spec.get(k, "")) for k in ("service", "role", "topic", "partitions",
                                                   "instances", "work_ms")]  # fmt: skip
        if m is not None:
            e2e = f"{fmt(m.e2e_ms.avg)} ({fmt(m.e2e_rollout_ms.avg)})"
            cells += [fmt(m.rebalance_s.avg), fmt(m.max_position_lag_records),
                      fmt(m.max_lag_records), e2e, fmt(m.lost)]  # fmt: skip
        rows.append("".join(f"<td>{escape(c)}</td>" for c in cells))
    header = "".join(f"<th>{escape(h)}</th>" for h in head)
    body = "".join(f"<tr>{r}</tr>" for r in rows)
    return f"<div class=wide><table id={table_id}><tr>{header}</tr>{body}</table></div>"


def services_section(items: Sequence[tuple[ScenarioReport, ScenarioData | None]]) -> str:
    """Per two-service scenario: its services' figures and service #2's e2e over time."""
    parts: list[str] = []
    for n, (report, data) in enumerate(items):
        if len(report.services) < 2:
            continue
        table = _service_rows(report, f"services-{n}")
        parts.append(f"<h3>{escape(report.scenario)}</h3>{table}")
        if data is not None and data.downstream is not None:
            parts.append(assets.chart(e2e_chart(f"services-{n}", data, data.downstream)))
    if not parts:
        return ""
    return "<h2 id=services>Two services: end to end at service #2</h2>\n" + "\n".join(parts)


def ablation_section(reports: Sequence[ScenarioReport]) -> str:
    """One bar chart per measure, the scenarios in ablation order (two or more measured)."""
    rows = ablation_table(reports)
    if len(rows) < 2:
        return ""
    labels = [r.scenario + (f" (+ {', '.join(r.adds)})" if r.adds else "") for r in rows]
    charts = [
        assets.chart(bars(f"ablation-{key}", f"{title} ({unit})", unit, labels,
                          [Line(title, [r.cells[key].value for r in rows])], better="lower"))
        for key, title, unit, _ in MEASURES
    ]  # fmt: skip
    intro = (
        "<p>Each scenario of the chain adds one mitigation to the one before it; static and "
        "KIP-848 are compared with mitigated (the label says what each adds).</p>"
    )
    return "<h2 id=ablation>Ablation: what each mitigation buys</h2>\n" + intro + "\n".join(charts)


def extra_sections(items: Sequence[tuple[ScenarioReport, ScenarioData | None]]) -> str:
    """What the page shows between the summary and the scenarios' own sections."""
    reports = [report for report, _ in items]
    return "\n".join(
        part for part in (services_section(items), ablation_section(reports), DEFINITIONS) if part
    )
