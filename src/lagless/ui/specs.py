"""The group page's charts as specs for the shared chart module (``static/charts.js``).

Lag in records and in seconds over time with the rebalances as markers, the assignment strip
(one row per partition, coloured by owner; two owners at once outlined) built from the partition
rows the store wrote when owners changed, and the scraped instances' e2e latency.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lagless.observe import figures
from lagless.ui.assets import finite
from lagless.ui.console import Console
from lagless.ui.scrape import Point


def markers(console: Console, group: str, since: float, until: float) -> list[dict[str, Any]]:
    out = []
    for r in console.store.rebalances(group, since, until):
        took = "" if r.duration_s is None else f", {r.duration_s:.1f} s"
        out.append({"x": r.at, "kind": "rebalance",
                    "label": f"{figures.REBALANCE}: {r.moved} partitions moved{took}"})  # fmt: skip
    current = console.sampler.rebalances.current(group)
    if current is not None and since <= current.at <= until:
        out.append({"x": current.at, "kind": "rebalance", "label": "rebalance in progress"})
    return out


CALLBACK_MARKERS = {"assign": "assigned", "revoke": "revoked", "lost": "lost"}


def instance_events(points: Sequence[Point]) -> list[dict[str, Any]]:
    """The scraped instances' rebalance callbacks (group-life events) as markers."""
    return [
        {"x": p.t, "kind": CALLBACK_MARKERS.get(kind, kind),
         "label": f"{p.instance}: {kind} callback x{n} ({figures.REBALANCE_CALLBACKS})"}
        for p in points
        for kind, n in sorted(p.events.items())
    ]  # fmt: skip


def start(since: float, x: Sequence[float]) -> float:
    """Where a chart's x axis starts: the range's start, or shortly before the first sample when
    the history begins later (a group seen for a minute is not drawn into a corner)."""
    if not x or x[0] <= since:
        return since
    return max(since, x[0] - 5.0)


def lag_charts(console: Console, group: str, since: float, until: float) -> list[dict[str, Any]]:
    rows = console.store.group_series(group, since, until)
    x = [t for t, _, _ in rows]
    scraped = [p for p in console.instances.points(group, since) if p.t <= until]
    marks = markers(console, group, since, until) + instance_events(scraped)
    common = {"xKind": "epoch", "xMin": start(since, x), "xMax": until, "x": x, "markers": marks}
    return [
        {**common, "id": "chart-lag", "title": f"{figures.COMMITTED_LAG} (records)",
         "unit": "records",
         "series": [{"label": "all partitions", "values": [lag for _, lag, _ in rows],
                     "total": True}]},
        {**common, "id": "chart-lag-s", "title": figures.LAG_SECONDS, "unit": "seconds",
         "series": [{"label": "largest partition",
                     "values": [finite(s) for _, _, s in rows], "total": True}]},
    ]  # fmt: skip


def strip(console: Console, group: str, since: float, until: float) -> dict[str, Any]:
    rows = console.store.partition_rows(group, since, until)
    keys = sorted({(r["topic"], r["partition"]) for r in rows})
    index = {k: i for i, k in enumerate(keys)}
    topics = {t for t, _ in keys}
    labels = [f"{t}[{p}]" if len(topics) > 1 else f"p{p}" for t, p in keys]
    open_: dict[tuple[str, int], tuple[tuple[str, ...], float]] = {}
    bars: list[dict[str, Any]] = []
    overlaps: list[dict[str, Any]] = []

    def close(key: tuple[str, int], end: float) -> None:
        owners, start = open_.pop(key)
        start = max(start, since)
        if end <= start:
            return
        for owner in owners:
            bars.append({"partition": index[key], "from": start, "to": end, "owner": owner,
                         "state": "consuming", "label": owner})  # fmt: skip
        if len(owners) > 1:
            overlaps.append({"partition": index[key], "from": start, "to": end,
                             "label": " and ".join(owners)})  # fmt: skip

    for r in rows:
        key = (r["topic"], r["partition"])
        owners = tuple(r["owners"])
        if key in open_ and open_[key][0] == owners:
            continue
        if key in open_:
            close(key, r["t"])
        if owners:
            open_[key] = (owners, r["t"])
    end = min(until, console.latest.t)
    for key in list(open_):
        close(key, end)
    names = sorted({b["owner"] for b in bars})
    return {
        "type": "strip", "id": "chart-strip", "title": "assignment (owner per partition)",
        "xKind": "epoch", "xMin": start(since, [r["t"] for r in rows[:1]]), "xMax": until,
        "partitions": len(keys), "rows": labels,
        "owners": [{"name": n} for n in names], "bars": bars, "overlaps": overlaps,
        "markers": markers(console, group, since, until),
        "note": None if bars else "no owner known: the broker gives no members and no lagless "
        "instance of this group publishes its status",
    }  # fmt: skip


def e2e_chart(points: Sequence[Point], since: float, until: float) -> dict[str, Any]:
    by_instance: dict[str, dict[float, Point]] = {}
    for p in points:
        by_instance.setdefault(p.instance, {})[p.t] = p
    x = sorted({p.t for p in points})
    series = []
    for name, got in sorted(by_instance.items()):
        for q in ("p50", "p99"):
            values = [finite(getattr(got[t], f"e2e_{q}")) if t in got else None for t in x]
            series.append({"label": f"{name} e2e {q}", "values": values,
                           "dash": [4, 3] if q == "p50" else []})  # fmt: skip
    return {"id": "chart-e2e", "title": "end-to-end latency (scraped instances)",
            "unit": "seconds", "xKind": "epoch", "xMin": start(since, x), "xMax": until, "x": x,
            "series": series}  # fmt: skip


def group_charts(console: Console, group: str, since: float, until: float) -> list[dict[str, Any]]:
    charts = lag_charts(console, group, since, until)
    charts.append(strip(console, group, since, until))
    points = console.instances.points(group, since)
    charts.append(e2e_chart([p for p in points if p.t <= until], since, until))
    return charts
