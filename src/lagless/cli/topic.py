"""`lagless topic create|list|describe|delete`."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from lagless.cli.common import interactive, kafka_conf, out_console, print_columns, print_json
from lagless.errors import ConfigError
from lagless.kafka.admin import create_topic, delete_topic, list_topics
from lagless.kafka.offsets import topic_ranges

app = typer.Typer(help="Create, list, describe and delete topics.", no_args_is_help=True)


@app.command()
def create(
    ctx: typer.Context,
    name: str,
    partitions: Annotated[int, typer.Option(min=1, help="number of partitions")] = 6,
    replication: Annotated[int, typer.Option(min=1, help="replication factor")] = 1,
    exist_ok: Annotated[bool, typer.Option("--exist-ok", help="no error if it exists")] = False,
) -> None:
    """Create a topic."""
    created = create_topic(kafka_conf(ctx), name, partitions, replication, exist_ok=exist_ok)
    out_console.print(f"topic {name} {'created' if created else 'exists'}")


@app.command()
def describe(
    ctx: typer.Context,
    name: str,
    as_json: Annotated[bool, typer.Option("--json", help="one JSON object")] = False,
) -> None:
    """Partitions and their start/end offsets (ends from fetch high watermarks)."""
    ranges = topic_ranges(kafka_conf(ctx), name)
    if as_json:
        print_json(
            {
                "topic": name,
                "partitions": [
                    {"partition": r.partition, "start": r.start, "end": r.end, "records": r.records}
                    for r in ranges
                ],
                "records": sum(r.records for r in ranges),
            }
        )
        return
    table = Table(title=f"topic {name}")
    for col in ("partition", "start", "end", "records"):
        table.add_column(col, justify="right")
    for r in ranges:
        table.add_row(str(r.partition), str(r.start), str(r.end), str(r.records))
    out_console.print(table)


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
    names: Annotated[list[str], typer.Argument(help="topics to delete")],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="do not ask")] = False,
) -> None:
    """Delete topics and all their records."""
    if not yes and not interactive():
        raise ConfigError("topic delete removes all records: confirm with --yes")
    conf = kafka_conf(ctx)
    if not yes:
        typer.confirm(f"delete {len(names)} topics ({', '.join(names)}) and their records?",
                      abort=True, err=True)  # fmt: skip
    for name in names:
        delete_topic(conf, name)
        out_console.print(f"topic {name} deleted")
