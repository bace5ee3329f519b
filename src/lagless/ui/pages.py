"""The console's pages, rendered on the server (every name and value escaped); a little script
(``static/console.js``) then keeps them live by polling the JSON API and setting text, never
HTML."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from html import escape
from typing import Any
from urllib.parse import quote

from lagless.ui.assets import json_for_script, linked

CSS = """
body{font:14px system-ui,sans-serif;margin:0;color:#222;background:#fafafa}
header{background:#1f2d3d;color:#fff;padding:8px 16px;display:flex;gap:18px;align-items:center}
header a{color:#cfe3ff;text-decoration:none} header b{margin-right:12px}
main{padding:12px 16px;max-width:1500px}
#cluster{padding:6px 16px;font-weight:600;overflow-wrap:anywhere}
h1,h2,h3,p,li,dd,#group-name{overflow-wrap:anywhere}
#cluster.down{background:#b2182b;color:#fff} #cluster.up{background:#e8f3e8;color:#1b5e20}
table{border-collapse:collapse;margin:8px 0 18px;background:#fff;min-width:50%}
th,td{border:1px solid #ddd;padding:3px 8px;text-align:right;white-space:nowrap}
th{background:#eef1f5;cursor:default} th[data-sort]{cursor:pointer}
td.name,th.name{text-align:left;white-space:pre-wrap;word-break:break-all;max-width:40em}
.OK{color:#1b7837;font-weight:600} .WARN{color:#b8860b;font-weight:600}
.STALL,.STOP,.ERR{color:#b2182b;font-weight:600}
.note{color:#555;font-size:12px} .muted{color:#888}
.charts{display:grid;grid-template-columns:1fr;gap:12px;max-width:1400px}
form.inline{display:inline-block;margin:4px 12px 4px 0;padding:6px;border:1px solid #ddd}
pre{white-space:pre-wrap;word-break:break-all;margin:0;font-size:12px}
"""


def e(value: Any) -> str:
    """Escaped text ('-' for None)."""
    return escape("-" if value is None else str(value), quote=True)


def group_href(group: str) -> str:
    return "/group/" + quote(group, safe="")


def topic_href(topic: str) -> str:
    return "/topic/" + quote(topic, safe="")


def layout(title: str, body: str, *, csrf: str, interval: float, page: str,
           data: dict[str, Any] | None = None, charts: bool = False) -> str:  # fmt: skip
    assets = linked("/static/") if charts else ""  # the shared chart code, served
    state = json_for_script({"page": page, "interval": interval, **(data or {})})
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<meta name='csrf-token' content='{e(csrf)}'><title>{e(title)} - lagless ui</title>"
        f"<style>{CSS}</style></head><body>"
        "<header><b>lagless ui</b><a href='/'>Overview</a><a href='/lab'>Lab</a>"
        "<a href='/dead-letters'>Dead letters</a><a href='/metrics'>/metrics</a></header>"
        "<div id='cluster' class='up'>cluster: looking…</div>"
        f"<main>{body}</main>"
        f"<script type='application/json' id='state'>{state}</script>{assets}"
        "<script src='/static/console.js'></script></body></html>"
    )


def table(table_id: str, headers: Sequence[tuple[str, str]], rows: Iterable[Sequence[str]]) -> str:
    """A table; ``headers`` are (key, label); cells are already escaped HTML."""
    head = "".join(
        f"<th data-sort='{e(k)}' class='{'name' if i == 0 else ''}'>{e(label)}</th>"
        for i, (k, label) in enumerate(headers)
    )
    body = "".join("<tr>" + "".join(r) + "</tr>" for r in rows)
    return f"<table id='{e(table_id)}'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def cell(value: Any, cls: str = "") -> str:
    return f"<td class='{e(cls)}'>{e(value)}</td>"


def link_cell(text: str, href: str) -> str:
    return f"<td class='name'><a href='{e(href)}'>{e(text)}</a></td>"


GROUP_COLUMNS = (
    ("group", "group"), ("state", "state"), ("members", "members"), ("protocol", "protocol"),
    ("lag", "committed lag (records)"), ("lag_s", "lag in seconds (max)"),
    ("trend", "trend (1 min)"), ("catch_up_s", "time to catch up (s)"), ("status", "status"),
)  # fmt: skip
TOPIC_COLUMNS = (("topic", "topic"), ("partitions", "partitions"), ("end", "end offsets (sum)"),
                 ("rate", "input rate (records/s)"))  # fmt: skip


def members_text(row: dict[str, Any]) -> str:
    if row.get("members_source") == "not answered":
        return "not answered by the broker"
    suffix = " (instances)" if row.get("members_source") == "instances" else ""
    return f"{row.get('members')}{suffix}"


def group_cells(row: dict[str, Any]) -> list[str]:
    return [
        link_cell(row["group"], group_href(row["group"])), cell(row["state"]),
        cell(members_text(row)), cell(row["protocol"] or "-"), cell(row["lag"]),
        cell(round(row["lag_s"], 1)), cell(row["trend"]), cell(row["catch_up_s"]),
        cell(row["status"], row["status"]),
    ]  # fmt: skip


def overview(groups: list[dict[str, Any]], total: int, topics: list[dict[str, Any]],
             offset: int, limit: int) -> str:  # fmt: skip
    pages = ""
    if total > limit:
        links = [f"<a href='/?offset={o}'>{o // limit + 1}</a>" if o != offset else
                 f"<b>{o // limit + 1}</b>" for o in range(0, total, limit)]  # fmt: skip
        pages = f"<p id='pages'>pages: {' '.join(links)}</p>"
    return (
        f"<h2>Groups <span class='note' id='groups-count'>{total}</span></h2>"
        "<label><input type='checkbox' id='only-lagging'> only groups with lag</label>"
        "<span class='note'> · click a column to sort · status after Burrow's rules over 30 s"
        "</span>"
        + table("groups", GROUP_COLUMNS, (group_cells(g) for g in groups))
        + pages
        + "<h2>Topics</h2>"
        + table(
            "topics",
            TOPIC_COLUMNS,
            (
                [
                    link_cell(t["topic"], topic_href(t["topic"])),
                    cell(t["partitions"]),
                    cell(t["end"]),
                    cell(t["rate"]),
                ]
                for t in topics
            ),
        )
    )


PARTITION_COLUMNS = (
    ("topic", "topic"), ("partition", "partition"), ("owner", "owner"),
    ("committed", "committed"), ("end", "end"), ("lag", "committed lag"),
    ("lag_s", "lag in seconds"), ("position", "position"),
    ("first_unfinished", "first unfinished"), ("in_flight", "in flight"), ("paused", "paused"),
)  # fmt: skip
REBALANCE_COLUMNS = (("at", "at"), ("duration_s", "rebalance time (s)"),
                     ("moved", "partitions moved"), ("peak_lag", "peak lag after"))  # fmt: skip
INSTANCE_COLUMNS = (("client_id", "instance"), ("handler", "handler"), ("host", "host"),
                    ("pid", "pid"), ("source", "seen through"), ("in_flight", "in flight"),
                    ("paused", "paused partitions"))  # fmt: skip


def partition_cells(p: dict[str, Any]) -> list[str]:
    owners = " + ".join(p.get("owners") or []) or None
    return [cell(p["topic"], "name"), *(cell(owners if k == "owner" else p.get(k))
            for k, _ in PARTITION_COLUMNS[1:])]  # fmt: skip


RANGES = (("5m", 300), ("15m", 900), ("1h", 3600), ("6h", 21600), ("24h", 86400))


def writes_form(group: str, csrf: str, topics: Sequence[str]) -> str:
    options = "".join(f"<option value='{e(t)}'>{e(t)}</option>" for t in topics)
    action = e(group_href(group))
    return (
        "<h3>Change (needs confirmation)</h3>"
        f"<form class='inline' method='post' action='{action}/reset-offsets'>"
        f"<input type='hidden' name='csrf' value='{e(csrf)}'>reset offsets of "
        f"<select name='topic'>{options}</select> to <select name='to'>"
        "<option>earliest</option><option>latest</option></select>"
        "<button>preview…</button></form>"
        f"<form class='inline' method='post' action='{action}/delete'>"
        f"<input type='hidden' name='csrf' value='{e(csrf)}'><button>delete group…</button></form>"
    )


def group_page(g: dict[str, Any], csrf: str, writable: bool) -> str:
    picker = "".join(f"<option value='{s}'{' selected' if s == 900 else ''}>last {n}</option>"
                     for n, s in RANGES)  # fmt: skip
    listed = ""
    if g.get("listed_as"):
        listed = (
            f"<p class='note'>listed by the broker as <code>{e(g['listed_as'])}</code> "
            "(percent-encoded); shown under its real id</p>"
        )
    topics = sorted({p["topic"] for p in g["partitions"]})
    return (
        f"<h2>Group <span id='group-name' class='name'>{e(g['group'])}</span></h2>{listed}"
        "<p>state <b id='g-state'>" + e(g["state"]) + "</b> · members <b id='g-members'>"
        + e(members_text(g)) + "</b> · protocol <b id='g-protocol'>" + e(g["protocol"] or "-")
        + "</b> · committed lag <b id='g-lag'>" + e(g["lag"]) + "</b> records · lag in seconds"
        " <b id='g-lag-s'>" + e(round(g["lag_s"], 1)) + "</b> · status <b id='g-status' class='"
        + e(g["status"]) + "'>" + e(g["status"]) + "</b> · rebalances seen <b id='g-rebalances'>"
        + e(g["rebalances_total"]) + "</b> <span id='g-rebalancing' class='WARN'></span></p>"
        f"<p>time range <select id='range'>{picker}</select> "
        "<span class='note'>(charts and the rebalance log)</span></p>"
        "<div class='charts'><div class='lg-chart' id='chart-lag'></div>"
        "<div class='lg-chart' id='chart-lag-s'></div><div class='lg-chart' id='chart-strip'>"
        "</div><div class='lg-chart' id='chart-e2e'></div></div>"
        "<h3>Partitions</h3>"
        + table("partitions", PARTITION_COLUMNS, (partition_cells(p) for p in g["partitions"]))
        + "<p class='note'>committed lag: log end - committed offset (from the broker); position,"
        " first unfinished, in flight, paused: from the owning lagless instance when it publishes"
        " its status</p><h3>Rebalance log</h3>"
        + table("rebalances", REBALANCE_COLUMNS,
                ([cell(r.get(k)) for k, _ in REBALANCE_COLUMNS] for r in g["rebalances"]))
        + "<h3>Instances</h3>"
        + table("instances", INSTANCE_COLUMNS,
                ([cell(i.get(k)) for k, _ in INSTANCE_COLUMNS] for i in g["instances"]))
        + (writes_form(g["group"], csrf, topics) if writable else
           "<p class='note'>read-only console (start it with --allow-writes to reset offsets or "
           "delete)</p>")
    )  # fmt: skip


def topic_page(
    t: dict[str, Any], records: list[dict[str, Any]], error: str | None, csrf: str, writable: bool
) -> str:
    parts = table("partitions", (("partition", "partition"), ("end", "end offset")),
                  ([cell(p), cell(end)] for p, end in enumerate(t["ends"])))  # fmt: skip
    recs = table(
        "records",
        (("partition", "partition"), ("offset", "offset"), ("timestamp", "timestamp"),
         ("key", "key"), ("value", "value"), ("headers", "headers")),
        ([cell(r["partition"]), cell(r["offset"]), cell(r["timestamp"]), cell(r["key"], "name"),
          cell(r["value"], "name"), cell(r["headers"], "name")] for r in records),
    )  # fmt: skip
    err = f"<p class='ERR'>{e(error)}</p>" if error else ""
    return (
        f"<h2>Topic <span class='name' id='topic-name'>{e(t['topic'])}</span></h2>"
        f"<p>input rate <b id='t-rate'>{e(t['rate'])}</b> records/s · end offsets (sum) "
        f"<b id='t-end'>{e(t['end'])}</b></p>{parts}<h3>Latest records</h3>"
        "<p class='note'>as <code>lagless tail</code> shows them: UTF-8 as is, control "
        f"characters and invalid bytes as \\xNN</p>{err}{recs}"
        + (
            f"<form class='inline' method='post' action='{e(topic_href(t['topic']))}/delete'>"
            f"<input type='hidden' name='csrf' value='{e(csrf)}'><button>delete topic…</button>"
            "</form>"
            if writable
            else ""
        )
    )


def message_page(title: str, text: str, extra: str = "") -> str:
    return f"<h2>{e(title)}</h2><p>{e(text)}</p>{extra}"


def login_page(failed: bool) -> str:
    bad = "<p class='ERR'>wrong token</p>" if failed else ""
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>lagless ui: log in</title>"
        f"<style>{CSS}</style></head><body><main><h2>lagless ui</h2>{bad}"
        "<form method='post' action='/login'><label>token <input type='password' "
        "name='token' autofocus></label> <button>log in</button></form></main></body></html>"
    )
