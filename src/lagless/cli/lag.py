"""`lagless lag`: a consumer group's lag per partition, once or watched with a status."""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Annotated, Any

import typer
from rich.live import Live
from rich.text import Text

from lagless.cli.common import (
    cell,
    columns,
    interactive,
    kafka_conf,
    note,
    one_name,
    out_console,
    print_json,
    warn,
)
from lagless.errors import ClusterError, ConfigError
from lagless.kafka.isolated import isolated_reads
from lagless.kafka.offsets import PartitionKey
from lagless.observe.lag import LagReader, PartitionLag, activity, measure_lag, totals
from lagless.observe.status import Observation, Status, coverage, evaluate, in_window, worst

LAG_COLUMNS = ("TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "LAG-SECONDS")


def lag_lines(
    rows: Sequence[PartitionLag], statuses: Mapping[PartitionKey, Status] | None = None
) -> list[str]:
    """The lag table, in the columns (and cells) ``group describe`` prints too."""
    headers = (*LAG_COLUMNS, "STATUS") if statuses is not None else LAG_COLUMNS
    cells = []
    for row in rows:
        line = [row.topic, str(row.partition), cell(row.committed), str(row.end), str(row.lag),
                cell(row.lag_seconds)]  # fmt: skip
        if statuses is not None:
            line.append(statuses.get(row.key, Status.OK).value)
        cells.append(line)
    return columns(headers, cells)


def total_line(group: str, rows: Sequence[PartitionLag]) -> str:
    total = totals(rows)
    return (
        f"group {group}: total lag {total['total_lag']} records, max lag "
        f"{cell(total['max_lag_seconds'])} s, {total['partition_count']} partitions"
    )


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
            note(total_line(group, rows))
            sys.stdout.write("".join(line + "\n" for line in lag_lines(rows)))
        return
    # a watch outlives deletions: on a cluster where one crashes a fetching client, fetch in
    # a child process (a crash fails one look)
    with LagReader(conf, group, topic, isolated_reads(conf, group)) as reader:
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
            try:
                rows = reader.measure(assigned)
            except ClusterError as exc:  # one look fails (a restarting broker): say so, go on
                warn(f"look {done + 1} failed: {exc}")
                rows = None
            active = activity(info)
            statuses: dict[PartitionKey, Status] = {}
            complete = 1.0
            for row in rows or ():
                seen = [*history.get(row.key, []), Observation(now, row.position, row.end)]
                history[row.key] = seen = in_window(seen, window, now)
                statuses[row.key] = evaluate(seen, window, now, active)
                complete = min(complete, coverage(seen, window, now))
            done += 1
            if rows:
                emit(reader.group, rows, statuses, active, complete, as_json, live)
            elif rows is not None:
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
        f"{stamp} {total_line(group, rows)}: {status.value} "
        f"({members[active]}, window {complete:.0%} seen)"
    )
    lines = "\n".join([title, *lag_lines(rows, statuses)])
    if live is not None:
        live.update(Text(lines), refresh=True)
    else:
        sys.stdout.write(lines + "\n")
        sys.stdout.flush()
