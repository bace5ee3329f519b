"""Typed builders of the chart specs that ``static/charts.js`` draws (its header documents them).

The static pages build their charts here and inline them (:func:`lagless.ui.assets.chart`); the
console can send the same dictionaries as JSON. Values are made JSON-safe (a missing or
non-finite value is ``None``: a gap in the line).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from lagless.ui.assets import finite

XKind = Literal["elapsed", "epoch"]
# the band kinds charts.js styles (its BAND_STYLES): the measured window's outside, warm-up, rollout
OUTSIDE, WARM_UP, ROLLOUT = "outside", "warm-up", "rollout"


@dataclass(frozen=True)
class Line:
    """One series: ``values`` aligned with the chart's x; ``total`` draws it thick in its own
    colour (e.g. "all" beside each partition)."""

    label: str
    values: Sequence[float | None]
    total: bool = False


@dataclass(frozen=True)
class Marker:
    """A vertical line at ``x`` (a rebalance, a trigger); styled and listed in the legend by
    ``kind``."""

    x: float
    kind: str
    label: str


@dataclass(frozen=True)
class Band:
    """A shaded span of x (a rollout, the warm-up, outside the measured window)."""

    start: float
    end: float
    kind: str
    label: str


@dataclass(frozen=True)
class Axis:
    """The x axis: ``kind`` "elapsed" (seconds since a start) or "epoch" (epoch seconds), and the
    range shown (None: the data's)."""

    kind: XKind = "elapsed"
    start: float | None = None
    end: float | None = None


@dataclass(frozen=True)
class Decor:
    """What a chart draws besides its data: markers, bands, a note under the legend, and the
    text shown when there is nothing to draw (default "no data")."""

    markers: Sequence[Marker] = field(default_factory=tuple)
    bands: Sequence[Band] = field(default_factory=tuple)
    note: str = ""
    marker_labels: bool = False  # write each marker's label on the plot (an events chart)
    empty: str = ""


def _axis(axis: Axis) -> dict[str, Any]:
    out: dict[str, Any] = {"xKind": axis.kind}
    if axis.start is not None:
        out["xMin"] = axis.start
    if axis.end is not None:
        out["xMax"] = axis.end
    return out


def _decor(decor: Decor) -> dict[str, Any]:
    out: dict[str, Any] = {
        "markers": [{"x": m.x, "kind": m.kind, "label": m.label} for m in decor.markers],
        "bands": [
            {"from": b.start, "to": b.end, "kind": b.kind, "label": b.label} for b in decor.bands
        ],
    }
    if decor.note:
        out["note"] = decor.note
    if decor.marker_labels:
        out["markerLabels"] = True
    if decor.empty:
        out["empty"] = decor.empty
    return out


def timeseries(
    chart_id: str,
    title: str,
    unit: str,
    x: Sequence[float],
    lines: Sequence[Line],
    axis: Axis = Axis(),
    decor: Decor = Decor(),
    height: int | None = None,
) -> dict[str, Any]:
    """A line chart's spec (``type`` "timeseries")."""
    spec: dict[str, Any] = {
        "type": "timeseries",
        "id": chart_id,
        "title": title,
        "unit": unit,
        "x": [float(v) for v in x],
        "series": [
            {"label": line.label, "values": [finite(v) for v in line.values]}
            | ({"total": True} if line.total else {})
            for line in lines
        ],
        **_axis(axis),
        **_decor(decor),
    }
    if height is not None:
        spec["height"] = height
    return spec


@dataclass(frozen=True)
class Bar:
    """One span of the assignment strip: ``owner`` held ``partition`` over [start, end);
    ``consuming`` False draws it pale (owned, not consuming)."""

    partition: int
    start: float
    end: float
    owner: str
    consuming: bool
    label: str


@dataclass(frozen=True)
class Outline:
    """A span of a partition outlined in red: two owners at once."""

    partition: int
    start: float
    end: float
    label: str


def _bar(b: Bar) -> dict[str, Any]:
    state = "consuming" if b.consuming else "owned"
    return {"partition": b.partition, "from": b.start, "to": b.end, "owner": b.owner,
            "state": state, "label": b.label}  # fmt: skip


def strip(
    chart_id: str,
    title: str,
    partitions: int,
    owners: Sequence[str],
    bars: Sequence[Bar],
    overlaps: Sequence[Outline] = (),
    axis: Axis = Axis(),
    decor: Decor = Decor(),
) -> dict[str, Any]:
    """The assignment strip's spec (``type`` "strip"): one row per partition; ``owners`` in the
    legend's order (their colours follow it)."""
    return {
        "type": "strip",
        "id": chart_id,
        "title": title,
        "partitions": partitions,
        "owners": [{"name": name} for name in owners],
        "bars": [_bar(b) for b in bars],
        "overlaps": [
            {"partition": o.partition, "from": o.start, "to": o.end, "label": o.label}
            for o in overlaps
        ],
        **_axis(axis),
        **_decor(decor),
    }


def bars(
    chart_id: str,
    title: str,
    unit: str,
    categories: Sequence[str],
    series: Sequence[Line],
    better: Literal["lower", "higher"] | None = None,
    note: str = "",
) -> dict[str, Any]:
    """A bar chart of one measure across ``categories`` (``type`` "bars"): one bar per category
    and series (several series: grouped bars)."""
    spec: dict[str, Any] = {
        "type": "bars",
        "id": chart_id,
        "title": title,
        "unit": unit,
        "categories": list(categories),
        "series": [{"label": s.label, "values": [finite(v) for v in s.values]} for s in series],
    }
    if better is not None:
        spec["better"] = better
    if note:
        spec["note"] = note
    return spec
