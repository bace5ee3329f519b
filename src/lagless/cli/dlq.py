"""`lagless dlq list|replay DLQ_TOPIC`: what is in a dead-letter topic, and back to work."""

from __future__ import annotations

from typing import Annotated

import typer

from lagless.cli.common import kafka_conf, note, print_columns, print_json
from lagless.errors import ConfigError
from lagless.kafka.admin import list_topics
from lagless.kafka.deadletters import count_by_kind, dead_letters, replay

app = typer.Typer(help="Count and replay dead letters.", no_args_is_help=True)

TopicArg = Annotated[str, typer.Argument(metavar="DLQ_TOPIC", help="the dead-letter topic")]
JsonOpt = Annotated[bool, typer.Option("--json", help="one JSON object")]


@app.command("list")
def list_(ctx: typer.Context, dlq_topic: TopicArg, as_json: JsonOpt = False) -> None:
    """Dead letters counted by error class and source topic (? for a record without the
    lagless-dlq-* headers)."""
    counts = count_by_kind(dead_letters(kafka_conf(ctx), dlq_topic))
    rows = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    if as_json:
        print_json(
            {"topic": dlq_topic, "records": sum(counts.values()),
             "kinds": [{"error_class": e, "source_topic": t, "records": n}
                       for (e, t), n in rows]}
        )  # fmt: skip
        return
    note(f"{sum(counts.values())} dead letters in {dlq_topic}")
    print_columns(
        ("ERROR-CLASS", "SOURCE-TOPIC", "RECORDS"), [(e, t, str(n)) for (e, t), n in rows]
    )


@app.command("replay")
def replay_(
    ctx: typer.Context,
    dlq_topic: TopicArg,
    error_class: Annotated[
        str | None, typer.Option("--error-class", help="only dead letters of this error class")
    ] = None,
    to: Annotated[
        str | None, typer.Option("--to", help="send them here (default: each one's source topic)")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Re-produce dead letters to their source topic (or --to): original key, value and
    headers, a lagless-replayed-from header added, every delivery checked (exit 1 if one
    failed). The dead letters stay in the DLQ topic."""
    conf = kafka_conf(ctx)
    existing = dict(list_topics(conf, internal=True))
    for topic in (dlq_topic, *([to] if to else [])):
        if topic not in existing:
            raise ConfigError(f"topic {topic!r} does not exist")
    done = replay(conf, dlq_topic, error_class, to)
    result = done.result
    if as_json:
        print_json(
            {"dlq_topic": dlq_topic, "chosen": done.chosen, "to": dict(done.targets),
             **result.to_json()}
        )  # fmt: skip
    else:
        targets = ", ".join(f"{n} to {t}" for t, n in sorted(done.targets.items())) or "none"
        typer.echo(
            f"replayed {result.produced} of {done.chosen} dead letters from {dlq_topic} "
            f"({targets}; {result.failed} failed)"
        )
    if result.first_error:
        note(f"first failure: {result.first_error}")
    if result.failed:
        raise typer.Exit(1)
