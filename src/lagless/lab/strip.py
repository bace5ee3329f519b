"""The assignment strip of the lab's page: which instance owned which partition, over time.

One ``<svg>`` element: one row per partition, time (seconds since the run's start) across. Each
ownership is a bar in its instance's colour, pale while owned but not consuming (before its first
record, after the instance began stopping), solid while consuming. Two owners at once are outlined
in red; rollout windows are shaded; the lab's triggers are vertical lines (start solid, stop
dashed). Hovering a bar or a line shows what it is (SVG ``<title>``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from html import escape

from lagless.lab.model import Ownership, TriggerKind, Window
from lagless.lab.ownership import Overlap
from lagless.observe.svg import MARGIN_BOTTOM, MARGIN_LEFT, MARGIN_RIGHT, format_time, nice_ticks

# ten distinguishable colours (instances beyond ten reuse them in order)
INSTANCE_COLORS = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b",
    "#e377c2", "#17becf", "#bcbd22", "#7f7f7f", "#393b79",
)  # fmt: skip
OVERLAP_COLOR = "#d62728"
ROLLOUT_FILL = "#fff3c4"
OPACITY = {"owned": 0.35, "consuming": 1}
WIDTH = 920
TOP = 34  # below the title line
LEGEND_LINE = 16


@dataclass(frozen=True)
class TriggerMark:
    """A trigger of the lab at ``x`` seconds since the run's start."""

    x: float
    kind: TriggerKind
    instance: str

    @property
    def label(self) -> str:
        return f"{self.kind} {self.instance}"


@dataclass(frozen=True)
class Strip:
    """What the strip draws; times are seconds since the run's start."""

    chart_id: str
    title: str
    partitions: int
    owned: Sequence[Ownership]  # stamps as recorded (epoch seconds)
    origin: float  # the run's start (epoch seconds)
    x_max: float
    overlaps: Sequence[Overlap] = field(default_factory=tuple)
    rollouts: Sequence[Window] = field(default_factory=tuple)
    triggers: Sequence[TriggerMark] = field(default_factory=tuple)


def instance_colors(owned: Sequence[Ownership]) -> dict[str, str]:
    """A colour per instance, in the order the instances first owned a partition."""
    colors: dict[str, str] = {}
    for o in sorted(owned, key=lambda o: o.start):
        if o.instance not in colors:
            colors[o.instance] = INSTANCE_COLORS[len(colors) % len(INSTANCE_COLORS)]
    return colors


def _legend(colors: dict[str, str]) -> tuple[list[str], int]:
    """Legend entries wrapped into lines under the title; returns (parts, lines used)."""
    parts: list[str] = []
    x, line = MARGIN_LEFT, 0
    for name, color in colors.items():
        width = 14 + 7 * len(name) + 12
        if x + width > WIDTH - MARGIN_RIGHT and x > MARGIN_LEFT:
            x, line = MARGIN_LEFT, line + 1
        y = TOP + line * LEGEND_LINE
        parts.append(
            f'<rect x="{x}" y="{y - 9}" width="10" height="10" fill="{color}"/>'
            f'<text x="{x + 14}" y="{y}" class="legend">{escape(name)}</text>'
        )
        x += width
    return parts, (line + 1 if colors else 0)


def render_strip(strip: Strip) -> str:
    """The strip as one ``<svg>`` element."""
    colors = instance_colors(strip.owned)
    legend, lines = _legend(colors)
    rows = max(strip.partitions, 1)
    row_h = max(4.0, min(14.0, 320.0 / rows))
    top = TOP + lines * LEGEND_LINE + 4
    plot_w = WIDTH - MARGIN_LEFT - MARGIN_RIGHT
    plot_h = rows * row_h
    height = int(top + plot_h + MARGIN_BOTTOM)
    x_ticks = nice_ticks(max(strip.x_max, 1e-9), 8)
    x_top = x_ticks[-1]

    def px(t: float) -> float:
        return MARGIN_LEFT + plot_w * min(max(t - strip.origin, 0.0), x_top) / x_top

    def row_y(partition: int) -> float:
        return top + partition * row_h

    title = escape(strip.title)
    parts = [
        f'<svg id="{escape(strip.chart_id)}" class="chart strip" width="{WIDTH}" '
        f'height="{height}" viewBox="0 0 {WIDTH} {height}" role="img" aria-label="{title}">',
        f'<text x="{MARGIN_LEFT}" y="20" class="chart-title">{title}</text>',
        *legend,
    ]
    for w in strip.rollouts:
        parts.append(
            f'<rect x="{px(w.start):.1f}" y="{top}" width="{px(w.end) - px(w.start):.1f}" '
            f'height="{plot_h:.1f}" fill="{ROLLOUT_FILL}" class="rollout">'
            f"<title>{escape(w.name)}</title></rect>"
        )
    label_every = max(1, round(10 / row_h))
    for p in range(strip.partitions):
        if p % label_every == 0:
            parts.append(
                f'<text x="{MARGIN_LEFT - 6}" y="{row_y(p) + row_h * 0.8:.1f}" class="tick" '
                f'text-anchor="end">p{p}</text>'
            )
    for o in strip.owned:
        parts.extend(_bars(o, colors[o.instance], px, strip.origin, row_y(o.partition), row_h))
    for ov in strip.overlaps:
        parts.append(
            f'<rect x="{px(ov.start):.1f}" y="{row_y(ov.partition):.1f}" '
            f'width="{max(px(ov.end) - px(ov.start), 1.0):.1f}" height="{row_h:.1f}" '
            f'fill="none" stroke="{OVERLAP_COLOR}" stroke-width="1.5" class="overlap">'
            f"<title>p{ov.partition} owned by "
            f"{escape(ov.first)} and {escape(ov.second)} for {ov.seconds:.2f} s</title></rect>"
        )
    for mark in strip.triggers:
        x = px(strip.origin + mark.x)
        dash = ' stroke-dasharray="4 3"' if mark.kind is TriggerKind.STOP else ""
        parts.append(
            f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top - 2}" y2="{top + plot_h + 2:.1f}" '
            f'stroke="#333" class="trigger"{dash}><title>{escape(mark.label)} at '
            f"{format_time(round(mark.x, 1))}</title></line>"
        )
    base = top + plot_h
    parts.append(
        f'<rect x="{MARGIN_LEFT}" y="{top}" width="{plot_w}" height="{plot_h:.1f}" '
        'fill="none" stroke="#bbb" class="frame"/>'
    )
    for t in x_ticks:
        parts.append(
            f'<text x="{MARGIN_LEFT + plot_w * t / x_top:.1f}" y="{base + 16:.1f}" class="tick" '
            f'text-anchor="middle">{format_time(t)}</text>'
        )
    if not strip.owned:
        parts.append(
            f'<text x="{MARGIN_LEFT + plot_w / 2}" y="{top + plot_h / 2:.1f}" class="empty" '
            'text-anchor="middle">no partition was owned</text>'
        )
    parts.append("</svg>")
    return "\n".join(parts)


def _bars(
    o: Ownership, color: str, px: Callable[[float], float], origin: float, y: float, h: float
) -> list[str]:
    """An ownership's bars: pale while owned but not consuming, solid while consuming."""
    span = o.consuming_span
    pieces = [(o.start, o.end, "owned")]
    if span is not None:
        pieces = [(o.start, span[0], "owned"), (*span, "consuming"), (span[1], o.end, "owned")]
    consuming = (
        "never consuming"
        if span is None
        else f"consuming {span[0] - origin:.2f}-{span[1] - origin:.2f} s"
    )
    what = escape(
        f"p{o.partition}: {o.instance}, owned {o.start - origin:.2f}-{o.end - origin:.2f} s "
        f"(ended by {o.ended_by}), {consuming}"
    )
    out = []
    for a, b, cls in pieces:
        if b <= a and cls == "owned" and span is not None:
            continue  # no pale part before or after consuming
        x1, x2 = px(a), px(b)
        out.append(
            f'<rect x="{x1:.1f}" y="{y + 1:.1f}" width="{max(x2 - x1, 0.5):.1f}" '
            f'height="{max(h - 2, 1.0):.1f}" fill="{color}" opacity="{OPACITY[cls]}" class="{cls}">'
            f"<title>{what}</title></rect>"
        )
    return out
