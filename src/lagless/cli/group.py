"""`lagless group list|describe|reset-offsets|delete`, after ``kafka-consumer-groups``: its
spellings are accepted too (``--group G``, ``--all-groups``, ``--all-topics``, ``--topic
T:0,1``, ``--to-current``, ``--export``, ``--from-file``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from lagless.cli.common import (
    UNKNOWN,
    cell,
    kafka_conf,
    note,
    one_name,
    print_columns,
    print_json,
)
from lagless.errors import ClusterError, ConfigError
from lagless.kafka.admin import committed_offsets
from lagless.kafka.cluster import describe_cluster
from lagless.kafka.groups import GroupInfo, delete_group, describe_group, describe_groups, group_ids
from lagless.kafka.reset import (
    build_spec,
    execute_reset,
    offsets_csv,
    parse_selectors,
    plan_reset,
    read_offsets_csv,
)
from lagless.observe.lag import LagReader, PartitionLag

app = typer.Typer(help="List, describe, reset and delete consumer groups.", no_args_is_help=True)

DESCRIBE_COLUMNS = (
    "GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "LAG-SECONDS",
    "CONSUMER-ID", "HOST", "CLIENT-ID",
)  # fmt: skip
GroupArg = Annotated[str | None, typer.Argument(metavar="GROUP", help="the group")]
GroupOpt = Annotated[
    str | None, typer.Option("--group", help="the group (kafka-consumer-groups' spelling)")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="one JSON object")]


def members_text(info: GroupInfo) -> str:
    """The group's state and members, saying when the broker did not answer who they are."""
    if info.member_count is None:
        return f"group {info.group} is {info.state}; its members: not answered by the broker"
    return f"group {info.group} is {info.state} with {info.member_count} members"


@app.command("list")
def list_(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """Every consumer group with its state, member count and assignor (? where the broker
    does not answer it)."""
    conf = kafka_conf(ctx)
    infos = describe_groups(conf, group_ids(conf))
    if as_json:
        print_json({"groups": [i.to_json() for i in infos]})
        return
    print_columns(
        ("GROUP", "STATE", "MEMBERS", "PROTOCOL"),
        [(i.group, i.state, UNKNOWN if i.member_count is None else str(i.member_count),
          i.protocol or UNKNOWN) for i in infos],
    )  # fmt: skip


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


def describe_one(conf: dict[str, Any], group: str, members: bool) -> dict[str, Any]:
    """One group's description as its JSON document (``members`` null when not answered)."""
    info = describe_group(conf, group)
    doc: dict[str, Any] = {"group": group, "state": info.state, "note": members_text(info)}
    if members:
        doc["members"] = None if not info.members_known else [
            {"consumer_id": m.member_id, "host": m.host, "client_id": m.client_id,
             "partitions": [{"topic": t, "partition": p} for t, p in m.partitions]}
            for m in info.members
        ]  # fmt: skip
        return doc
    assigned = {t for m in info.members for t, _ in m.partitions}
    with LagReader(conf, group) as reader:
        reader.check()
        rows = reader.measure(assigned)
    doc["partitions"] = [partition_json(info, r) for r in rows]
    return doc


@app.command()
def describe(
    ctx: typer.Context,
    group_arg: GroupArg = None,
    group_opt: GroupOpt = None,
    all_groups: Annotated[bool, typer.Option("--all-groups", help="every group")] = False,
    members: Annotated[bool, typer.Option("--members", help="list the members instead")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Offsets, lag (records and seconds) and owner of every partition the group committed
    or is assigned, and the group's state."""
    conf = kafka_conf(ctx)
    if all_groups:
        if group_arg or group_opt:
            raise ConfigError("--all-groups or a group, not both")
        groups = group_ids(conf)
    else:
        groups = [one_name("group", group_arg, group_opt)]
    try:
        docs = [describe_one(conf, g, members) for g in groups]
    except ClusterError as exc:
        if "not supported by broker" in str(exc) and describe_cluster(conf).is_mock:
            raise ClusterError(
                f"{exc}: librdkafka's mock cluster does not describe groups (a limit of the "
                "mock, see docs/broker.md)"
            ) from None
        raise
    if as_json:
        print_json({"groups": docs} if all_groups else docs[0])
        return
    for doc in docs:
        note(doc["note"])
    if members:
        print_columns(
            ("GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS"),
            [(d["group"], m["consumer_id"], m["host"], m["client_id"], str(len(m["partitions"])))
             for d in docs for m in d["members"] or []],
        )  # fmt: skip
        return
    print_columns(
        DESCRIBE_COLUMNS,
        [(d["group"], *(cell(v) for v in p.values())) for d in docs for p in d["partitions"]],
    )


@app.command("reset-offsets")
def reset_offsets(
    ctx: typer.Context,
    group_arg: GroupArg = None,
    group_opt: GroupOpt = None,
    topic: Annotated[
        list[str] | None,
        typer.Option(help="TOPIC (every partition) or TOPIC:P[,P...] (repeat)"),
    ] = None,
    all_topics: Annotated[
        bool, typer.Option("--all-topics", help="every topic the group has committed offsets on")
    ] = False,
    to_earliest: Annotated[bool, typer.Option("--to-earliest")] = False,
    to_latest: Annotated[bool, typer.Option("--to-latest")] = False,
    to_current: Annotated[
        bool, typer.Option("--to-current", help="the committed offset (or the start)")
    ] = False,
    to_offset: Annotated[int | None, typer.Option("--to-offset", help="offset N")] = None,
    to_datetime: Annotated[
        str | None, typer.Option("--to-datetime", help="ISO time (UTC if no zone)")
    ] = None,
    by_duration: Annotated[
        str | None, typer.Option("--by-duration", help="ISO duration back from now: PT10M")
    ] = None,
    shift_by: Annotated[int | None, typer.Option("--shift-by", help="+/- N records")] = None,
    from_file: Annotated[
        Path | None,
        typer.Option("--from-file", help="TOPIC,PARTITION,OFFSET lines (what --export writes)"),
    ] = None,
    export: Annotated[
        bool, typer.Option("--export", help="print the new offsets as TOPIC,PARTITION,OFFSET")
    ] = False,
    execute: Annotated[
        bool, typer.Option("--execute/--dry-run", help="commit the new offsets (default: show)")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Move a group's offsets; prints the old and new offset per partition."""
    group = one_name("group", group_arg, group_opt)
    spec = build_spec(
        to_earliest, to_latest, to_offset, to_datetime, by_duration, shift_by,
        current=to_current, from_file=from_file is not None,
    )  # fmt: skip
    if export and as_json:
        raise ConfigError("--export or --json, not both")
    conf = kafka_conf(ctx)
    given = None
    if from_file is not None:
        if not from_file.is_file():
            raise ConfigError(f"--from-file {from_file}: no such file")
        given = read_offsets_csv(from_file.read_text(), str(from_file))
    selection = selected(conf, group, topic or [], all_topics, given)
    rows = plan_reset(conf, group, selection, spec, given)
    if execute:
        execute_reset(conf, group, rows)
    if as_json:
        print_json(
            {"group": group, "topics": sorted(selection), "executed": execute,
             "partitions": [r.to_json() for r in rows]}
        )  # fmt: skip
    elif export:
        typer.echo(offsets_csv(rows), nl=False)
    else:
        print_columns(
            ("GROUP", "TOPIC", "PARTITION", "OLD-OFFSET", "NEW-OFFSET"),
            [(group, r.topic, str(r.partition), cell(r.old), str(r.new)) for r in rows],
        )
    topics = ", ".join(sorted(selection))
    note(
        f"offsets of group {group} on {topics} reset"
        if execute
        else "dry run: nothing changed (add --execute to commit these offsets)"
    )


def selected(
    conf: dict[str, Any],
    group: str,
    selectors: list[str],
    all_topics: bool,
    given: dict[tuple[str, int], int] | None,
) -> dict[str, tuple[int, ...]]:
    """The topics (and partitions) to reset: --topic selectors, --all-topics, or the file's."""
    if given is not None:
        if selectors or all_topics:
            raise ConfigError("--from-file names its partitions: no --topic nor --all-topics")
        by_topic: dict[str, set[int]] = {}
        for t, p in given:
            by_topic.setdefault(t, set()).add(p)
        return {t: tuple(sorted(ps)) for t, ps in by_topic.items()}
    if all_topics:
        if selectors:
            raise ConfigError("--all-topics or --topic, not both")
        topics = sorted({t for t, _ in committed_offsets(conf, group)})
        if not topics:
            raise ConfigError(f"group {group!r} has no committed offsets: name --topic T")
        return dict.fromkeys(topics, ())
    if not selectors:
        raise ConfigError("give --topic T (or T:P,P), --all-topics or --from-file")
    return parse_selectors(selectors)


@app.command()
def delete(
    ctx: typer.Context,
    groups_arg: Annotated[
        list[str] | None, typer.Argument(metavar="GROUP...", help="groups to delete")
    ] = None,
    group_opt: Annotated[
        list[str] | None, typer.Option("--group", help="a group to delete (repeat)")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Delete groups and their committed offsets (refused while one has active members; an
    unknown group is an error)."""
    groups = [*(groups_arg or []), *(group_opt or [])]
    if not groups:
        raise ConfigError("give the groups to delete: GROUP... or --group GROUP")
    conf = kafka_conf(ctx)
    for group in groups:
        delete_group(conf, group)
        if not as_json:
            typer.echo(f"group {group} deleted")
    if as_json:
        print_json({"deleted": groups})
