"""The rebalance lab's HTML page: one self-contained file that loads nothing from the network.

At the top the broker (the results depend on its group coordinator), a summary table (one row per
scenario) and the best improvement over ``eager-defaults``; then per scenario its settings, its
measures (defined in :mod:`lagless.lab.measures`), total lag in records and in seconds over time,
e2e p99 per second, and the assignment strip (:mod:`lagless.lab.strip`), with the lab's triggers
(instance starts and stops) marked and the rollouts and what lies outside the measured window
shaded on every plot, each named in the plot's legend. Charts are drawn by the shared chart code
(``lagless/ui/static/charts.js``, inlined by :mod:`lagless.ui.assets`). A scenario that was not
run shows its note.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from html import escape
from typing import Any

from lagless.lab.measures import (
    WARM_UP,
    Point,
    e2e_p99_series,
    improvement,
    lag_series,
    measurement_window,
    rollouts,
)
from lagless.lab.model import Measures, Percentiles, ScenarioData, ScenarioReport
from lagless.lab.ownership import overlaps, ownerships
from lagless.lab.page_services import extra_sections
from lagless.lab.runner import OVERLAP_NOTE
from lagless.lab.strip import Strip, TriggerMark, render_strip
from lagless.observe.report import STYLE, fmt
from lagless.ui import assets, chartspec
from lagless.ui.chartspec import OUTSIDE, ROLLOUT, Axis, Band, Decor, Line, timeseries

TITLE = "lagless rebalance lab"
EXTRA_STYLE = """
.note { color: #8a4b00; }
section { border-top: 1px solid #ddd; margin-top: 28px; }
.wide { overflow-x: auto; }
#summary { font-size: 13px; }
#summary td { white-space: nowrap; }
#summary td.name { white-space: normal; overflow-wrap: anywhere; min-width: 12ch; }
#summary td, #summary th { padding-right: 9px; }
#summary th { vertical-align: bottom; }
"""


def _stat(avg: float | None, top: float | None, unit: str) -> str:
    return f"{fmt(avg)} / {fmt(top)}{unit}"


def _latency(p: Percentiles) -> str:
    """p50 / p99 / max in ms, or in seconds once the max reaches 10 s (shorter to read)."""
    if p.max is not None and p.max >= 10_000:
        p = Percentiles(*(None if v is None else v / 1000 for v in (p.p50, p.p99, p.max)))
        return f"{fmt(p.p50)} / {_stat(p.p99, p.max, ' s')}"
    return f"{fmt(p.p50)} / {_stat(p.p99, p.max, ' ms')}"


def measure_rows(m: Measures) -> list[tuple[str, str]]:
    """(label, value) of every figure of a scenario, in table order."""
    return [
        ("rebalances", fmt(m.rebalances)),
        ("rebalance time avg / max", _stat(m.rebalance_s.avg, m.rebalance_s.max, " s")),
        ("max unconsumed", fmt(m.max_unconsumed_s, " s")),
        ("max position lag", f"{fmt(m.max_position_lag_records)} records"),
        ("max committed lag", f"{fmt(m.max_lag_records)} records, {fmt(m.max_lag_s, ' s')}"),
        ("e2e p50 / p99 / max", _latency(m.e2e_ms)),
        ("e2e in rollouts p50 / p99 / max", _latency(m.e2e_rollout_ms)),
        ("lost / duplicated", f"{fmt(m.lost)} / {fmt(m.duplicated)}"),
        ("processed / produced", f"{fmt(m.processed)} / {fmt(m.produced)}"),
        ("ownership overlaps", f"{fmt(m.ownership_overlaps)} ({fmt(m.overlap_s, ' s')})"),
    ]


def slug(name: str) -> str:
    return re.sub(r"[^a-z0-9_-]+", "-", name.lower()).strip("-") or "scenario"


def _table(rows: Sequence[tuple[str, str]], table_id: str) -> str:
    body = "".join(
        f"<tr><th>{escape(label)}</th><td class=num>{escape(value)}</td></tr>"
        for label, value in rows
    )
    return f"<table id={table_id}>{body}</table>"


def _setting(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


NOT_SUPPORTED = "not supported by this broker"


def not_supported(note: str | None) -> str:
    """The note of a scenario that was not run, saying so once."""
    if not note:
        return NOT_SUPPORTED
    return note if note.startswith(NOT_SUPPORTED) else f"{NOT_SUPPORTED}: {note}"


def shown_note(report: ScenarioReport) -> str | None:
    """The scenario's note as the page shows it: the broker's overlap caveat only where the run
    saw overlaps (with how many), not where it measured none."""
    if not report.note or report.measures is None:
        return report.note
    m = report.measures
    parts = []
    for part in report.note.split("; "):
        if part != OVERLAP_NOTE:
            parts.append(part)
        elif m.ownership_overlaps:
            parts.append(f"{part}: {m.ownership_overlaps} in this run ({fmt(m.overlap_s, ' s')})")
    return "; ".join(parts) or None


def summary_table(reports: Sequence[ScenarioReport]) -> str:
    """One row per scenario; its columns are the rows of :func:`measure_rows`."""
    measured = [r.measures for r in reports if r.measures is not None]
    labels = [label for label, _ in measure_rows(measured[0])] if measured else []
    head = "".join(f"<th>{escape(label)}</th>" for label in ["scenario", *labels])
    rows = []
    notes = []
    for r in reports:
        values = [v for _, v in measure_rows(r.measures)] if r.measures else ["-"] * len(labels)
        cells = "".join(f"<td class=num>{escape(v)}</td>" for v in values)
        link = f'<a href="#{slug(r.scenario)}">{escape(r.scenario)}</a>'
        rows.append(f"<tr><td class=name>{link}</td>{cells}</tr>")
        note = shown_note(r) or ("" if r.supported else NOT_SUPPORTED)
        if r.failed is not None:
            note = f"FAILED: {r.failed}" + (f"; {note}" if note else "")
        if note:
            notes.append(f"<li>{escape(r.scenario)}: {escape(note)}</li>")
    listed = f"<ul class=note>{''.join(notes)}</ul>" if notes else ""
    table = f"<table id=summary><tr>{head}</tr>{''.join(rows)}</table>"
    return f"<div class=wide>{table}</div>{listed}"


def best_line(reports: Sequence[ScenarioReport]) -> str:
    found = improvement(reports)
    best = found.best
    if best is None:
        return f"<p>No improvement ratio over {escape(found.baseline)} (not measured).</p>"
    scenario, figure, ratio = best
    return (
        f"<p id=best>Best improvement over {escape(found.baseline)}: {escape(scenario)}, "
        f"{escape(figure)} {ratio:.3g}&#215; (baseline / scenario).</p>"
    )


def bands(data: ScenarioData) -> list[Band]:
    """What the plots shade: outside the measured window, the warm-up, the rollouts (x in seconds
    since the run's start)."""
    start, end = measurement_window(data)
    origin, last = data.run_start, data.run_end
    out = []
    if start > origin:
        out.append(Band(0.0, start - origin, OUTSIDE, "before the warm-up: not measured"))
    if end < last:
        out.append(Band(end - origin, last - origin, OUTSIDE, "after the cool-down: not measured"))
    out += [
        Band(w.start - origin, w.end - origin, chartspec.WARM_UP, w.name)
        for w in data.windows
        if w.name == WARM_UP
    ]
    out += [Band(w.start - origin, w.end - origin, ROLLOUT, w.name) for w in rollouts(data)]
    return out


def peak_note(data: ScenarioData, records: Sequence[Point]) -> str:
    """Says so when the tallest lag peak lies outside the measured window (the measures leave
    it out)."""
    start, end = measurement_window(data)
    lo, hi = start - data.run_start, end - data.run_start
    values = [(y, x) for x, y in records if y is not None]
    if not values:
        return ""
    top, at = max(values)
    if lo <= at <= hi:
        return ""
    inside = max((y for y, x in values if lo <= x <= hi), default=0.0)
    return (
        f"The tallest peak ({fmt(top)} records at {at:.0f} s) lies outside the measured window "
        f"(shaded grey): the measures leave it out (max lag inside: {fmt(inside)})."
    )


def charts(name: str, data: ScenarioData) -> list[dict[str, Any]]:
    """Lag in records, lag in seconds, e2e p99 and the assignment strip of one scenario."""
    key = slug(name)
    axis = Axis(start=0.0, end=max(data.run_end - data.run_start, 1.0))
    triggers = [TriggerMark(t.ts - data.run_start, t.kind, t.instance) for t in data.triggers]
    shaded = bands(data)
    decor = Decor(markers=[t.marker() for t in triggers], bands=shaded)
    records, seconds = lag_series(data)
    note = peak_note(data, records)

    def chart(
        suffix: str, title: str, line: str, unit: str, points: Sequence[Point], why: str = ""
    ) -> dict[str, Any]:
        values = Line(line, [y for _, y in points])
        return timeseries(
            f"{key}-{suffix}", title, unit, [x for x, _ in points], [values], axis,
            Decor(decor.markers, decor.bands, why),
        )  # fmt: skip

    owned = ownerships(data.events, data.run_end)
    strip = Strip(
        chart_id=f"{key}-strip",
        title="Assignment: which instance owned which partition (solid: consuming)",
        partitions=data.partitions,
        owned=owned,
        origin=data.run_start,
        x_max=axis.end or 1.0,
        overlaps=overlaps(owned),
        decor=decor,
    )
    return [
        chart("lag-records", "Total lag in records (sampled by the lab)", "total lag", "records",
              records, note),
        chart("lag-seconds", "Lag in seconds (oldest uncommitted record)", "lag", "seconds",
              seconds),
        chart("e2e-p99", "End-to-end latency p99 per second of done time", "e2e p99", "ms",
              e2e_p99_series(data)),
        render_strip(strip),
    ]  # fmt: skip


def scenario_section(report: ScenarioReport, data: ScenarioData | None) -> str:
    key = slug(report.scenario)
    parts = [f"<section id={key}>", f"<h2>{escape(report.scenario)}</h2>"]
    parts.append(
        f"<p class=sub>topic {escape(report.topic)}, group {escape(report.group)}"
        + (
            ""
            if report.committed_to_end is None
            else f", committed to the end: {'yes' if report.committed_to_end else 'NO'}"
        )
        + "</p>"
    )
    if report.failed is not None:
        parts.append(
            f"<p class=note>FAILED (the figures below are partial): {escape(report.failed)}</p>"
        )
    note = shown_note(report)
    if not report.supported:
        parts.append(f"<p class=note>{escape(not_supported(report.note))}</p>")
    elif note:
        parts.append(f"<p class=note>{escape(note)}</p>")
    settings = [(k, _setting(v)) for k, v in report.settings.items()]
    parts.append("<h3>Settings</h3>")
    parts.append(_table(settings, f"{key}-settings") if settings else "<p>(none)</p>")
    if report.measures is not None:
        parts.append("<h3>Measures</h3>")
        parts.append(_table(measure_rows(report.measures), f"{key}-measures"))
    if data is not None:
        parts.append("<h3>Over time</h3>")
        parts.extend(assets.chart(spec) for spec in charts(report.scenario, data))
    elif report.supported:
        parts.append("<p>No recorded data for this scenario.</p>")
    parts.append("</section>")
    return "\n".join(parts)


def render_page(broker: str, items: Sequence[tuple[ScenarioReport, ScenarioData | None]]) -> str:
    """The whole HTML document for the scenarios of one lab run."""
    reports = [report for report, _ in items]
    sections = "\n".join(scenario_section(report, data) for report, data in items)
    body = (
        f"<h1>{TITLE}</h1>\n<p class=sub id=broker>Broker: {escape(broker)}</p>\n"
        f"<h2>Summary</h2>\n{summary_table(reports)}\n{best_line(reports)}\n"
        f"{extra_sections(items)}\n{sections}\n"
    )
    return assets.page(TITLE, STYLE + EXTRA_STYLE, body)
