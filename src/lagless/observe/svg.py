"""Small inline-SVG charts for the HTML report: time series with axes, legend and event marks.

No JavaScript, no fonts or styles from the network: each chart is one ``<svg>`` element that any
browser draws offline. Hovering a point or an event mark shows its value (SVG ``<title>``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape

Point = tuple[float, float | None]

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b")
EVENT_COLORS = {"assigned": "#2ca02c", "revoked": "#ff7f0e", "lost": "#d62728"}


@dataclass(frozen=True)
class Series:
    name: str
    points: Sequence[Point]
    color: str = PALETTE[0]


@dataclass(frozen=True)
class Mark:
    """A vertical event mark at ``x`` (e.g. a rebalance)."""

    x: float
    label: str
    kind: str = "assigned"


@dataclass(frozen=True)
class Chart:
    """A line chart over time (x in seconds since the run started)."""

    chart_id: str
    title: str
    unit: str
    series: Sequence[Series]
    marks: Sequence[Mark] = field(default_factory=tuple)
    x_max: float | None = None
    width: int = 920
    height: int = 230


MARGIN_LEFT, MARGIN_RIGHT, MARGIN_TOP, MARGIN_BOTTOM = 70, 20, 34, 34


def nice_step(span: float, ticks: int = 5) -> float:
    """A step of 1, 2 or 5 x 10^k giving about ``ticks`` intervals over ``span``."""
    if span <= 0 or not math.isfinite(span):
        return 1.0
    raw = span / ticks
    power = 10 ** math.floor(math.log10(raw))
    for mult in (1, 2, 5, 10):
        if raw <= mult * power:
            return float(mult * power)
    return float(10 * power)


def nice_ticks(top: float, ticks: int = 5) -> list[float]:
    """Tick values from 0 to at least ``top``."""
    step = nice_step(top, ticks)
    count = max(1, math.ceil(top / step - 1e-9))
    return [round(i * step, 10) for i in range(count + 1)]


def format_number(value: float) -> str:
    """Short labels: 1.2k, 3.4M, 0.005."""
    size = abs(value)
    if size >= 1e6:
        return f"{value / 1e6:.3g}M"
    if size >= 1e3:
        return f"{value / 1e3:.3g}k"
    if size == 0 or size >= 1:
        return f"{value:.4g}"
    return f"{value:.2g}"


def format_time(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:g}s"
    if seconds < 7200:
        return f"{seconds / 60:.3g}m"
    return f"{seconds / 3600:.3g}h"


def segments(points: Sequence[Point]) -> list[list[tuple[float, float]]]:
    """Runs of points with a value (None breaks the line)."""
    out: list[list[tuple[float, float]]] = [[]]
    for x, y in points:
        if y is None or not math.isfinite(y):
            if out[-1]:
                out.append([])
            continue
        out[-1].append((x, y))
    return [run for run in out if run]


LEGEND_ROW = 16  # px per legend row, below the x axis
CHAR_PX = 7  # a generous width of one legend character at 11 px


def legend_layout(names: Sequence[str], left: float, right: float) -> list[tuple[float, int]]:
    """(x, row) of each legend entry: left to right, wrapping before ``right`` so that no
    label runs off the chart."""
    out: list[tuple[float, int]] = []
    x, row = left, 0
    for name in names:
        width = 14 + CHAR_PX * len(name) + 12
        if x > left and x + width > right:
            x, row = left, row + 1
        out.append((x, row))
        x += width
    return out


def render(chart: Chart) -> str:
    """The chart as one ``<svg>`` element (the legend below the plot, wrapped)."""
    w = chart.width
    plot_w = w - MARGIN_LEFT - MARGIN_RIGHT
    plot_h = chart.height - MARGIN_TOP - MARGIN_BOTTOM
    legend = legend_layout([s.name for s in chart.series], MARGIN_LEFT, w - MARGIN_RIGHT)
    rows = max((row for _, row in legend), default=-1) + 1
    h = chart.height + LEGEND_ROW * rows
    xs = [x for s in chart.series for x, _ in s.points] + [m.x for m in chart.marks]
    ys = [y for s in chart.series for _, y in s.points if y is not None and math.isfinite(y)]
    x_top = chart.x_max if chart.x_max is not None else max(xs, default=1.0)
    x_ticks = nice_ticks(max(x_top, 1e-9), 8)
    y_ticks = nice_ticks(max(ys, default=0.0) or 1.0, 4)  # all zero: a 0..1 axis
    x_max, y_max = x_ticks[-1], y_ticks[-1]

    def px(x: float) -> float:
        return MARGIN_LEFT + plot_w * x / x_max

    def py(y: float) -> float:
        return MARGIN_TOP + plot_h * (1 - y / y_max)

    title = escape(chart.title)
    parts = [
        f'<svg id="{escape(chart.chart_id)}" class="chart" width="{w}" height="{h}" '
        f'viewBox="0 0 {w} {h}" role="img" aria-label="{title}">',
        f'<text x="{MARGIN_LEFT}" y="20" class="chart-title">{title}</text>',
        f'<text x="14" y="{MARGIN_TOP + plot_h / 2:.1f}" class="axis-label" '
        f'transform="rotate(-90 14 {MARGIN_TOP + plot_h / 2:.1f})">{escape(chart.unit)}</text>',
    ]
    for y in y_ticks:
        parts.append(
            f'<line x1="{MARGIN_LEFT}" x2="{w - MARGIN_RIGHT}" y1="{py(y):.1f}" y2="{py(y):.1f}" '
            'class="grid"/>'
        )
        parts.append(
            f'<text x="{MARGIN_LEFT - 6}" y="{py(y) + 4:.1f}" class="tick" text-anchor="end">'
            f"{format_number(y)}</text>"
        )
    for x in x_ticks:
        parts.append(
            f'<text x="{px(x):.1f}" y="{h - MARGIN_BOTTOM + 16}" class="tick" '
            f'text-anchor="middle">{format_time(x)}</text>'
        )
    parts.append(
        f'<rect x="{MARGIN_LEFT}" y="{MARGIN_TOP}" width="{plot_w}" height="{plot_h}" '
        'class="frame"/>'
    )
    for mark in chart.marks:
        color = EVENT_COLORS.get(mark.kind, "#777")
        parts.append(
            f'<line x1="{px(mark.x):.1f}" x2="{px(mark.x):.1f}" y1="{MARGIN_TOP}" '
            f'y2="{MARGIN_TOP + plot_h}" stroke="{color}" class="mark">'
            f"<title>{escape(mark.label)} at {format_time(round(mark.x, 1))}</title></line>"
        )
    if not ys and not chart.marks:
        parts.append(
            f'<text x="{MARGIN_LEFT + plot_w / 2}" y="{MARGIN_TOP + plot_h / 2}" class="empty" '
            'text-anchor="middle">no data</text>'
        )
    for series in chart.series:
        for run in segments(series.points):
            path = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in run)
            parts.append(
                f'<polyline points="{path}" fill="none" stroke="{series.color}" '
                f'class="line"><title>{escape(series.name)}</title></polyline>'
            )
            if len(run) == 1:
                x, y = run[0]
                parts.append(
                    f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="2.5" fill="{series.color}"/>'
                )
    for series, (legend_x, row) in zip(chart.series, legend, strict=True):
        top = chart.height - 8 + LEGEND_ROW * row
        parts.append(
            f'<rect x="{legend_x}" y="{top - 9}" width="10" height="10" fill="{series.color}"/>'
            f'<text x="{legend_x + 14}" y="{top}" class="legend">{escape(series.name)}</text>'
        )
    parts.append("</svg>")
    return "\n".join(parts)


def event_label(x: float, y: float, label: str, right: float) -> str:
    """An event's label right of its tick, or left of it near the right edge (never cut)."""
    if x + 6 + CHAR_PX * len(label) > right:
        return (
            f'<text x="{x - 6:.1f}" y="{y}" class="event-label" text-anchor="end">'
            f"{escape(label)}</text>"
        )
    return f'<text x="{x + 6:.1f}" y="{y}" class="event-label">{escape(label)}</text>'


def render_events(chart_id: str, title: str, marks: Sequence[Mark], x_max: float) -> str:
    """A strip chart of events: one labelled tick per event, coloured by kind."""
    w, h = 920, 110
    plot_w = w - MARGIN_LEFT - MARGIN_RIGHT
    x_ticks = nice_ticks(max(x_max, 1e-9), 8)
    top = x_ticks[-1]

    def px(x: float) -> float:
        return MARGIN_LEFT + plot_w * x / top

    base = h - MARGIN_BOTTOM
    parts = [
        f'<svg id="{escape(chart_id)}" class="chart" width="{w}" height="{h}" '
        f'viewBox="0 0 {w} {h}" role="img" aria-label="{escape(title)}">',
        f'<text x="{MARGIN_LEFT}" y="20" class="chart-title">{escape(title)}</text>',
        f'<line x1="{MARGIN_LEFT}" x2="{w - MARGIN_RIGHT}" y1="{base}" y2="{base}" class="axis"/>',
    ]
    for x in x_ticks:
        parts.append(
            f'<text x="{px(x):.1f}" y="{base + 16}" class="tick" text-anchor="middle">'
            f"{format_time(x)}</text>"
        )
    legend_x = w - MARGIN_RIGHT - 250
    for kind, color in EVENT_COLORS.items():
        parts.append(
            f'<rect x="{legend_x}" y="11" width="10" height="10" fill="{color}"/>'
            f'<text x="{legend_x + 14}" y="20" class="legend">{kind}</text>'
        )
        legend_x += 85
    for i, mark in enumerate(marks):
        color = EVENT_COLORS.get(mark.kind, "#777")
        lift = 14 * (i % 3)
        parts.append(
            f'<line x1="{px(mark.x):.1f}" x2="{px(mark.x):.1f}" y1="{base}" '
            f'y2="{base - 22 - lift}" stroke="{color}" class="event"/>'
            f'<circle cx="{px(mark.x):.1f}" cy="{base - 22 - lift}" r="4" fill="{color}">'
            f"<title>{escape(mark.label)} at {format_time(round(mark.x, 1))}</title></circle>"
            + event_label(px(mark.x), base - 18 - lift, mark.label, w - MARGIN_RIGHT)
        )
    if not marks:
        parts.append(
            f'<text x="{MARGIN_LEFT + plot_w / 2}" y="{base - 20}" class="empty" '
            'text-anchor="middle">no rebalances</text>'
        )
    parts.append("</svg>")
    return "\n".join(parts)
