"""The assignment strip of the lab's page: which instance owned which partition, over time.

A spec for the shared chart code (``charts.js``, type "strip"; :mod:`lagless.ui.chartspec`): one
row per partition, time (seconds since the run's start) across. Each ownership is a bar in its
instance's colour (instances in the order they first owned a partition), pale while owned but
not consuming (before its first record, after the instance began stopping), solid while
consuming. Two owners at once are outlined in red; the page's bands (rollouts, outside the
measured window) are shaded; the lab's triggers are vertical lines (start solid, stop dashed).
Each kind is named in the chart's legend; hovering shows what a bar is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from lagless.lab.model import Ownership, TriggerKind
from lagless.lab.ownership import Overlap
from lagless.ui.chartspec import Axis, Bar, Decor, Marker, Outline
from lagless.ui.chartspec import strip as strip_spec


@dataclass(frozen=True)
class TriggerMark:
    """A trigger of the lab at ``x`` seconds since the run's start."""

    x: float
    kind: TriggerKind
    instance: str

    @property
    def label(self) -> str:
        return f"{self.kind} {self.instance}"

    def marker(self) -> Marker:
        return Marker(self.x, str(self.kind), self.label)


@dataclass(frozen=True)
class Strip:
    """What the strip draws; ownership stamps are epoch seconds, the rest seconds since
    ``origin`` (the run's start)."""

    chart_id: str
    title: str
    partitions: int
    owned: Sequence[Ownership]
    origin: float
    x_max: float
    overlaps: Sequence[Overlap] = field(default_factory=tuple)
    decor: Decor = field(default_factory=Decor)  # the triggers' markers and the page's bands


def instance_order(owned: Sequence[Ownership]) -> list[str]:
    """The instances in the order they first owned a partition (the legend's and colours')."""
    order: list[str] = []
    for o in sorted(owned, key=lambda o: o.start):
        if o.instance not in order:
            order.append(o.instance)
    return order


def bars(o: Ownership, origin: float) -> list[Bar]:
    """An ownership's bars: pale while owned but not consuming, solid while consuming."""
    span = o.consuming_span
    pieces = [(o.start, o.end, False)]
    if span is not None:
        pieces = [(o.start, span[0], False), (*span, True), (span[1], o.end, False)]
    consuming = (
        "never consuming"
        if span is None
        else f"consuming {span[0] - origin:.2f}-{span[1] - origin:.2f} s"
    )
    what = (
        f"p{o.partition}: {o.instance}, owned {o.start - origin:.2f}-{o.end - origin:.2f} s "
        f"(ended by {o.ended_by}), {consuming}"
    )
    return [
        Bar(o.partition, a - origin, b - origin, o.instance, is_consuming, what)
        for a, b, is_consuming in pieces
        if b > a or is_consuming or span is None  # no empty pale part around consuming
    ]


def render_strip(strip: Strip) -> dict[str, Any]:
    """The strip's chart spec."""
    outlines = [
        Outline(
            ov.partition, ov.start - strip.origin, ov.end - strip.origin,
            f"p{ov.partition} owned by {ov.first} and {ov.second} for {ov.seconds:.2f} s",
        )
        for ov in strip.overlaps
    ]  # fmt: skip
    return strip_spec(
        strip.chart_id,
        strip.title,
        strip.partitions,
        instance_order(strip.owned),
        [bar for o in strip.owned for bar in bars(o, strip.origin)],
        outlines,
        Axis(start=0.0, end=strip.x_max),
        strip.decor,
    )
