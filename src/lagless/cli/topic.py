"""`lagless topic create|list|describe|delete`."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from lagless.cli.common import (
    interactive,
    kafka_conf,
    note,
    one_name,
    out_console,
    print_columns,
    print_json,
)
from lagless.errors import ConfigError
from lagless.kafka.admin import (
    list_topics,
    topic_configs,
    topic_layout,
)
from lagless.kafka.compat import create_topic, delete_topic
from lagless.kafka.offsets import topic_ranges

app = typer.Typer(help="Create, list, describe and delete topics.", no_args_is_help=True)


@app.command()
def create(
    ctx: typer.Context,
    name_arg: Annotated[str | None, typer.Argument(metavar="NAME", help="the topic")] = None,
    topic_opt: Annotated[str | None, typer.Option("--topic", help="the topic (alias)")] = None,
    partitions: Annotated[int, typer.Option(min=1, help="number of partitions")] = 6,
    replication: Annotated[int, typer.Option(min=1, help="replication factor")] = 1,
    exist_ok: Annotated[bool, typer.Option("--exist-ok", help="no error if it exists")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="one JSON object")] = False,
) -> None:
    """Create a topic."""
    name = one_name("topic", name_arg, topic_opt)
    created = create_topic(kafka_conf(ctx), name, partitions, replication, exist_ok=exist_ok)
    if as_json:
        print_json({"topic": name, "created": created})
    else:
        out_console.print(f"topic {name} {'created' if created else 'exists'}")


@app.command()
def describe(
    ctx: typer.Context,
    name_arg: Annotated[str | None, typer.Argument(metavar="NAME", help="the topic")] = None,
    topic_opt: Annotated[str | None, typer.Option("--topic", help="the topic (alias)")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="one JSON object")] = False,
) -> None:
    """Partitions with their leader, replicas, ISR and start/end offsets (ends from fetch
    high watermarks); the topic's configs as far as the cluster answers them."""
    name = one_name("topic", name_arg, topic_opt)
    conf = kafka_conf(ctx)
    layout = topic_layout(conf, name)
    ranges = topic_ranges(conf, name)
    configs = topic_configs(conf, name)
    parts: list[dict[str, Any]] = [
        {"partition": r.partition, "leader": layout[r.partition].leader,
         "replicas": list(layout[r.partition].replicas), "isr": list(layout[r.partition].isr),
         "start": r.start, "end": r.end, "records": r.records}
        for r in ranges
    ]  # fmt: skip
    if as_json:
        doc = {"topic": name, "partitions": parts, "records": sum(r.records for r in ranges)}
        print_json({**doc, "configs": configs})
        return
    shown = (
        "not answered by the cluster" if configs is None
        else ", ".join(f"{k}={v}" for k, v in configs.items()) or "none set"
    )  # fmt: skip
    note(f"topic {name}: {len(parts)} partitions, configs: {shown}")
    print_columns(
        ("PARTITION", "LEADER", "REPLICAS", "ISR", "START", "END", "RECORDS"),
        [(str(p["partition"]), str(p["leader"]), ",".join(map(str, p["replicas"])),
          ",".join(map(str, p["isr"])), str(p["start"]), str(p["end"]), str(p["records"]))
         for p in parts],
    )  # fmt: skip


@app.command("list")
def list_(
    ctx: typer.Context,
    internal: Annotated[bool, typer.Option(help="include internal topics (__*)")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="one JSON object")] = False,
) -> None:
    """Topics with their partition counts."""
    topics = list_topics(kafka_conf(ctx), internal=internal)
    if as_json:
        print_json({"topics": [{"topic": t, "partitions": n} for t, n in topics]})
        return
    print_columns(("TOPIC", "PARTITIONS"), [(t, str(n)) for t, n in topics])


@app.command()
def delete(
    ctx: typer.Context,
    names_arg: Annotated[
        list[str] | None, typer.Argument(metavar="NAME...", help="topics to delete")
    ] = None,
    topic_opt: Annotated[
        list[str] | None, typer.Option("--topic", help="a topic to delete (alias, repeat)")
    ] = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="do not ask")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="one JSON object")] = False,
) -> None:
    """Delete topics and all their records."""
    names = [*(names_arg or []), *(topic_opt or [])]
    if not names:
        raise ConfigError("give the topics to delete: NAME... or --topic NAME")
    if not yes and not interactive():
        raise ConfigError("topic delete removes all records: confirm with --yes")
    conf = kafka_conf(ctx)
    if not yes:
        typer.confirm(f"delete {len(names)} topics ({', '.join(names)}) and their records?",
                      abort=True, err=True)  # fmt: skip
    for name in names:
        delete_topic(conf, name)
        if not as_json:
            out_console.print(f"topic {name} deleted")
    if as_json:
        print_json({"deleted": names})
