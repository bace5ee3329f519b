"""The console's JSON API (docs/ui.md): the same data the pages show.

* ``GET /api/groups?offset=&limit=[&lagging=1][&sort=KEY&dir=desc]`` -> ``[{group, state,
  protocol, members, lag, lag_s, status}]`` (``lag`` committed lag summed over partitions,
  ``lag_s`` the largest lag in seconds; the total count in the ``X-Total-Count`` header);
* ``GET /api/groups/{group}`` (the id percent-encoded) -> the group with ``partitions`` and
  ``rebalances``;
* ``GET /api/groups/{group}/series?since=ISO&until=ISO[&partitions=1]`` -> ``[{t, lag, lag_s}]``;
* ``GET /api/topics`` -> ``[{topic, partitions, end, rate}]``; ``GET /api/cluster``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from lagless.errors import ConfigError
from lagless.ui.console import Console
from lagless.ui.model import GroupSample, Snapshot

DEFAULT_RANGE_S = 900.0
TREND_S = 60.0
PEAK_AFTER_S = 30.0
# an instance of the group page: a handler of lagless run, or lagless consume (handler null)
INSTANCE_KEYS = ("client_id", "handler", "host", "pid", "source", "in_flight", "paused")
STATUS_ORDER = {"OK": 0, "WARN": 1, "STALL": 2, "STOP": 3}
SORTABLE: dict[str, Callable[[GroupSample], Any]] = {
    "group": lambda g: g.group,
    "state": lambda g: g.state,
    "members": lambda g: g.members,
    "protocol": lambda g: g.protocol,
    "lag": lambda g: g.lag,
    "lag_s": lambda g: g.lag_s,
    "status": lambda g: STATUS_ORDER.get(g.status, 0),
}


def iso(t: float | None) -> str | None:
    if t is None:
        return None
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def parse_iso(text: str, what: str) -> float:
    """Epoch seconds of an ISO-8601 time (UTC when it has no zone); ConfigError otherwise."""
    try:
        when = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ConfigError(f"{what}={text!r} is not an ISO-8601 time") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.timestamp()


def time_range(query: Mapping[str, str], default_s: float = DEFAULT_RANGE_S) -> tuple[float, float]:
    until = parse_iso(query["until"], "until") if query.get("until") else time.time()
    since = parse_iso(query["since"], "since") if query.get("since") else until - default_s
    if since > until:
        raise ConfigError("since is after until")
    return since, until


def paging(query: Mapping[str, str]) -> tuple[int, int]:
    try:
        offset = int(query.get("offset", "0"))
        limit = int(query.get("limit", "100"))
    except ValueError:
        raise ConfigError("offset and limit must be whole numbers") from None
    if offset < 0 or not 1 <= limit <= 1000:
        raise ConfigError("offset must be >= 0 and limit 1..1000")
    return offset, limit


def trends(console: Console, snap: Snapshot) -> dict[str, tuple[int | None, float | None]]:
    """Per group: the change of committed lag over the last minute, and the seconds to catch up
    at the rate it went down (None when it is not going down)."""
    out: dict[str, tuple[int | None, float | None]] = {}
    for g in snap.groups:
        series = console.store.group_series(g.group, snap.t - TREND_S, snap.t)
        if len(series) < 2:
            out[g.group] = (None, None)
            continue
        t0, lag0, _ = series[0]
        change = g.lag - lag0
        falling = -change / (snap.t - t0) if snap.t > t0 else 0.0
        out[g.group] = (change, round(g.lag / falling, 1) if falling > 0 and g.lag else None)
    return out


def group_row(g: GroupSample, trend: tuple[int | None, float | None]) -> dict[str, Any]:
    return {**g.to_json(), "trend": trend[0], "catch_up_s": trend[1], "listed_as": g.listed_as}


def groups(console: Console, query: Mapping[str, str]) -> tuple[list[dict[str, Any]], int]:
    offset, limit = paging(query)
    snap = console.latest
    rows = list(snap.groups)
    if query.get("lagging") in ("1", "true"):
        rows = [g for g in rows if g.lag > 0]
    key = query.get("sort")
    if key:
        if key not in SORTABLE:
            raise ConfigError(f"sort={key!r}: choose {', '.join(sorted(SORTABLE))}")
        rows.sort(key=SORTABLE[key], reverse=query.get("dir") == "desc")
    page = rows[offset : offset + limit]
    found = trends(console, Snapshot(snap.t, snap.up, tuple(page)))
    return [group_row(g, found[g.group]) for g in page], len(rows)


def engine_view(console: Console, group: str) -> dict[tuple[str, int], list[dict[str, Any]]]:
    """Per partition, what the instances owning it publish."""
    out: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for doc in console.instances.of_group(group):
        for part in doc.get("partitions", []):
            key = (str(part["topic"]), int(part["partition"]))
            out.setdefault(key, []).append({**part, "instance": doc.get("client_id")})
    return out


def group(console: Console, name: str, query: Mapping[str, str]) -> dict[str, Any] | None:
    snap = console.latest
    g = snap.group(name)
    if g is None:
        return None
    since, until = time_range(query, 86400.0)
    engine = engine_view(console, name)
    parts = []
    for p in g.partitions:
        row = p.to_json()
        held = engine.get(p.key, [])
        first = held[0] if held else {}
        row.update(
            first_unfinished=first.get("first_unfinished"),
            position=first.get("position"),
            in_flight=first.get("in_flight"),
            paused=first.get("paused"),
            generation=first.get("generation"),
            since=iso(first.get("since")),
        )
        parts.append(row)
    rebalances = []
    for r in console.store.rebalances(name, since, until):
        end = r.at + (r.duration_s or 0.0) + PEAK_AFTER_S
        peak = max((lag for _, lag, _ in console.store.group_series(name, r.at, end)), default=None)
        rebalances.append({**r.to_json(), "at": iso(r.at), "peak_lag": peak})
    current = console.sampler.rebalances.current(name)
    instances = [{k: doc.get(k) for k in INSTANCE_KEYS} for doc in console.instances.of_group(name)]
    trend = trends(console, Snapshot(snap.t, snap.up, (g,)))[name]
    return {
        **group_row(g, trend),
        "partitions": parts,
        "rebalances": rebalances,
        "rebalancing_since": iso(current.at) if current else None,
        "rebalances_total": console.sampler.rebalances.total(name),
        "instances": instances,
        "engine": [p.to_json() | {"t": iso(p.t)}
                   for p in console.instances.points(name, snap.t - DEFAULT_RANGE_S)],
        "t": iso(snap.t),
    }  # fmt: skip


def series(console: Console, name: str, query: Mapping[str, str]) -> list[dict[str, Any]]:
    since, until = time_range(query)
    if query.get("partitions") in ("1", "true"):
        return [
            {**row, "t": iso(row["t"])} for row in console.store.partition_rows(name, since, until)
        ]
    return [
        {"t": iso(t), "lag": lag, "lag_s": lag_s}
        for t, lag, lag_s in console.store.group_series(name, since, until)
    ]


def topics(console: Console) -> list[dict[str, Any]]:
    return [t.to_json() for t in console.latest.topics]


def cluster(console: Console) -> dict[str, Any]:
    snap = console.latest
    return {
        "up": snap.up,
        "t": iso(snap.t),
        "down_since": iso(snap.down_since),
        "error": snap.error,
        "cycle_s": round(snap.cycle_s, 4),
        "groups": len(snap.groups),
        "topics": len(snap.topics),
        "cluster": console.config.cluster_name,
        "interval_s": console.config.interval,
        "scrape_errors": console.instances.scrape_errors(),
    }
