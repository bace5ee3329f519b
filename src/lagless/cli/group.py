"""`lagless group list|describe|reset-offsets|delete`, after ``kafka-consumer-groups``."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from lagless.cli.common import kafka_conf, note, print_columns, print_json
from lagless.kafka.groups import GroupInfo, delete_group, describe_group, describe_groups, group_ids
from lagless.kafka.reset import build_spec, execute_reset, plan_reset
from lagless.observe.lag import LagReader, PartitionLag

app = typer.Typer(help="List, describe, reset and delete consumer groups.", no_args_is_help=True)

DESCRIBE_COLUMNS = (
    "GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "LAG-SECONDS",
    "CONSUMER-ID", "HOST", "CLIENT-ID",
)  # fmt: skip


@app.command("list")
def list_(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="one JSON object")] = False,
) -> None:
    """Every consumer group with its state, member count and assignment protocol."""
    conf = kafka_conf(ctx)
    infos = describe_groups(conf, group_ids(conf))
    if as_json:
        print_json({"groups": [i.to_json() for i in infos]})
        return
    print_columns(
        ("GROUP", "STATE", "MEMBERS", "PROTOCOL"),
        [(i.group, i.state, str(len(i.members)), i.protocol or "-") for i in infos],
    )


def partition_json(info: GroupInfo, row: PartitionLag) -> dict[str, Any]:
    owner = info.owner(row.key)
    return {
        "topic": row.topic,
        "partition": row.partition,
        "current_offset": row.committed,
        "log_end_offset": row.end,
        "lag": row.lag,
        "lag_s": row.lag_seconds,
        "consumer_id": owner.member_id if owner else None,
        "host": owner.host if owner else None,
        "client_id": owner.client_id if owner else None,
    }


def dash(value: object) -> str:
    if value is None:
        return "-"
    return f"{value:.1f}" if isinstance(value, float) else str(value)


@app.command()
def describe(
    ctx: typer.Context,
    group: str,
    members: Annotated[bool, typer.Option("--members", help="list the members instead")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="one JSON object")] = False,
) -> None:
    """Offsets, lag (records and seconds) and owner of every partition the group committed
    or is assigned, and the group's state."""
    conf = kafka_conf(ctx)
    info = describe_group(conf, group)
    if members:
        member_rows = [
            {"consumer_id": m.member_id, "host": m.host, "client_id": m.client_id,
             "partitions": [{"topic": t, "partition": p} for t, p in m.partitions]}
            for m in info.members
        ]  # fmt: skip
        if as_json:
            print_json({"group": group, "state": info.state, "members": member_rows})
            return
        note(f"group {group} is {info.state} with {len(info.members)} members")
        print_columns(
            ("GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS"),
            [(group, m.member_id, m.host, m.client_id, str(len(m.partitions)))
             for m in info.members],
        )  # fmt: skip
        return
    assigned = {t for m in info.members for t, _ in m.partitions}
    with LagReader(conf, group) as reader:
        reader.check()
        rows = reader.measure(assigned)
    parts = [partition_json(info, r) for r in rows]
    if as_json:
        print_json({"group": group, "state": info.state, "partitions": parts})
        return
    note(f"group {group} is {info.state} with {len(info.members)} members")
    print_columns(DESCRIBE_COLUMNS, [(group, *(dash(v) for v in p.values())) for p in parts])


@app.command("reset-offsets")
def reset_offsets(
    ctx: typer.Context,
    group: str,
    topic: Annotated[str, typer.Option(help="topic whose partitions are reset (all of them)")],
    to_earliest: Annotated[bool, typer.Option("--to-earliest")] = False,
    to_latest: Annotated[bool, typer.Option("--to-latest")] = False,
    to_offset: Annotated[int | None, typer.Option("--to-offset", help="offset N")] = None,
    to_datetime: Annotated[
        str | None, typer.Option("--to-datetime", help="ISO time (UTC if no zone)")
    ] = None,
    by_duration: Annotated[
        str | None, typer.Option("--by-duration", help="ISO duration back from now: PT10M")
    ] = None,
    shift_by: Annotated[int | None, typer.Option("--shift-by", help="+/- N records")] = None,
    execute: Annotated[
        bool, typer.Option("--execute/--dry-run", help="commit the new offsets (default: show)")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="one JSON object")] = False,
) -> None:
    """Move a group's offsets on a topic; prints old -> new per partition."""
    spec = build_spec(to_earliest, to_latest, to_offset, to_datetime, by_duration, shift_by)
    conf = kafka_conf(ctx)
    rows = plan_reset(conf, group, topic, spec)
    if execute:
        execute_reset(conf, group, rows)
    if as_json:
        print_json(
            {"group": group, "topic": topic, "executed": execute,
             "partitions": [r.to_json() for r in rows]}
        )  # fmt: skip
        return
    print_columns(
        ("GROUP", "TOPIC", "PARTITION", "OLD-OFFSET", "NEW-OFFSET"),
        [(group, r.topic, str(r.partition), dash(r.old), f"-> {r.new}") for r in rows],
    )
    note(
        f"offsets of group {group} on {topic} reset"
        if execute
        else "dry run: nothing changed (add --execute to commit these offsets)"
    )


@app.command()
def delete(ctx: typer.Context, group: str) -> None:
    """Delete a group and its committed offsets (refused while it has active members)."""
    delete_group(kafka_conf(ctx), group)
    typer.echo(f"group {group} deleted")
