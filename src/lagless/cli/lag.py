"""`lagless lag`: a consumer group's lag per partition, once or watched with a status."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Annotated, Any

import typer
from rich.live import Live
from rich.table import Table

from lagless.cli.common import interactive, kafka_conf, one_name, out_console, print_json
from lagless.errors import ConfigError
from lagless.kafka.offsets import PartitionKey
from lagless.observe.lag import LagReader, PartitionLag, activity, measure_lag, totals
from lagless.observe.status import Observation, Status, coverage, evaluate, in_window, worst

STATUS_STYLE = {Status.OK: "green", Status.WARN: "yellow", Status.STALL: "red", Status.STOP: "red"}


def format_seconds(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    if seconds < 60:
        return f"{seconds:.1f}s"
    if seconds < 3600:
        return f"{seconds / 60:.1f}m"
    return f"{seconds / 3600:.1f}h"


def lag_table(
    group: str,
    rows: Sequence[PartitionLag],
    statuses: Mapping[PartitionKey, Status] | None = None,
    title: str | None = None,
) -> Table:
    """The lag table (also printed by the demo)."""
    table = Table(title=title or f"lag of group {group}")
    for name in ("topic", "partition", "committed", "end", "lag", "lag (time)"):
        table.add_column(name, justify="left" if name == "topic" else "right")
    if statuses is not None:
        table.add_column("status")
    for row in rows:
        cells = [
            row.topic,
            str(row.partition),
            "-" if row.committed is None else str(row.committed),
            str(row.end),
            str(row.lag),
            format_seconds(row.lag_seconds),
        ]
        if statuses is not None:
            status = statuses.get(row.key, Status.OK)
            cells.append(f"[{STATUS_STYLE[status]}]{status.value}[/]")
        table.add_row(*cells)
    total = totals(rows)
    table.caption = (
        f"total lag {total['total_lag']} records, "
        f"max {format_seconds(total['max_lag_seconds'])}, {total['partition_count']} partitions"
    )
    return table


def lag_json(group: str, rows: Sequence[PartitionLag]) -> dict[str, Any]:
    return {"group": group, "partitions": [r.to_json() for r in rows], **totals(rows)}


def lag(
    ctx: typer.Context,
    group_arg: Annotated[str | None, typer.Argument(metavar="GROUP", help="the group")] = None,
    group_opt: Annotated[str | None, typer.Option("--group", help="the group (alias)")] = None,
    topic: Annotated[
        str | None, typer.Option(help="only this topic (default: all committed)")
    ] = None,
    watch: Annotated[bool, typer.Option(help="keep measuring; add a status per partition")] = False,
    interval: Annotated[float, typer.Option(help="--watch: seconds between looks")] = 2.0,
    window: Annotated[float, typer.Option(help="--watch: sliding window in seconds")] = 30.0,
    iterations: Annotated[
        int | None, typer.Option(help="--watch: stop after N looks (default: until Ctrl-C)")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="JSON (one object per look)")] = False,
) -> None:
    """Lag per partition in records and seconds; --watch adds OK/WARN/STALL/STOP."""
    group = one_name("group", group_arg, group_opt)
    if interval <= 0 or window <= 0:
        raise ConfigError("--interval and --window must be positive")
    if iterations is not None and iterations < 1:
        raise ConfigError("--iterations must be at least 1")
    conf = kafka_conf(ctx)
    if not watch:
        rows = measure_lag(conf, group, topic)
        if as_json:
            print_json(lag_json(group, rows))
        else:
            out_console.print(lag_table(group, rows))
        return
    with LagReader(conf, group, topic) as reader:
        reader.check()  # an unknown group fails at once; one that has not committed is awaited
        watch_loop(reader, interval, window, iterations, as_json)


def watch_loop(
    reader: LagReader, interval: float, window: float, iterations: int | None, as_json: bool
) -> None:
    """Measure every ``interval`` seconds; print a table (or one JSON object) each time."""
    history: dict[PartitionKey, list[Observation]] = {}
    live = Live(console=out_console, auto_refresh=False) if interactive() and not as_json else None
    if live is not None:
        live.start()
    try:
        done = 0
        next_at = time.monotonic()
        while iterations is None or done < iterations:
            now = time.monotonic()
            info = reader.describe()
            assigned = {t for m in info.members for t, _ in m.partitions} if info else set()
            rows = reader.measure(assigned)
            active = activity(info)
            statuses: dict[PartitionKey, Status] = {}
            complete = 1.0
            for row in rows:
                seen = [*history.get(row.key, []), Observation(now, row.position, row.end)]
                history[row.key] = seen = in_window(seen, window, now)
                statuses[row.key] = evaluate(seen, window, now, active)
                complete = min(complete, coverage(seen, window, now))
            done += 1
            if rows:
                emit(reader.group, rows, statuses, active, complete, as_json, live)
            else:
                emit_waiting(reader.group, active, as_json)
            if iterations is not None and done >= iterations:
                break
            next_at = max(next_at + interval, time.monotonic())  # a slow look: no catch-up burst
            time.sleep(max(0.0, next_at - time.monotonic()))
    finally:
        if live is not None:
            live.stop()


def emit_waiting(group: str, active: bool | None, as_json: bool) -> None:
    """A look at a group that has committed nothing yet (and has no --topic)."""
    if as_json:
        print_json(
            {"group": group, "partitions": [], "status": "WAITING", "active": active,
             "ts": round(time.time(), 3)}
        )  # fmt: skip
        return
    members = {True: "members active", False: "no active members", None: "members unknown"}
    out_console.print(
        f"group {group}: no committed offsets yet ({members[active]}); waiting for a commit"
    )


def emit(
    group: str,
    rows: Sequence[PartitionLag],
    statuses: Mapping[PartitionKey, Status],
    active: bool | None,
    complete: float,
    as_json: bool,
    live: Live | None,
) -> None:
    status = worst(list(statuses.values()))
    if as_json:
        doc = lag_json(group, rows)
        for part in doc["partitions"]:
            part["status"] = statuses[(part["topic"], part["partition"])].value
        doc.update(
            ts=round(time.time(), 3),
            status=status.value,
            active=active,
            complete=round(complete, 3),
        )
        print_json(doc)
        return
    stamp = datetime.now(UTC).strftime("%H:%M:%S")
    members = {True: "members active", False: "no active members", None: "members unknown"}
    title = (
        f"lag of group {group} at {stamp}: {status.value} "
        f"({members[active]}, window {complete:.0%} seen)"
    )
    table = lag_table(group, rows, statuses, title=title)
    if live is not None:
        live.update(table, refresh=True)
    else:
        out_console.print(table)
