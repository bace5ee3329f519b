"""`lagless tail TOPIC`: records to stdout, like ``kcat -C``."""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any

import typer
from confluent_kafka import Message

from lagless.cli.common import kafka_conf, note
from lagless.kafka.jsonlines import message_json
from lagless.kafka.records import coordinates, header_pairs, timestamp_ms
from lagless.kafka.tail import TailSpec, partitions_arg
from lagless.kafka.tail import tail as read_tail

PLACEHOLDERS = ("topic", "partition", "offset", "timestamp", "key", "value", "headers")


CONTROL = {c: f"\\x{c:02x}" for c in (*range(32), 127)} | {9: "\\t", 10: "\\n", 13: "\\r"}


def text(data: bytes | None) -> str:
    """Bytes shown safely on one line: UTF-8 as is, control characters and invalid bytes as
    ``\\xNN`` (``\\t``, ``\\n``, ``\\r``); ``None`` as empty. ``--json`` keeps bytes exact."""
    if data is None:
        return ""
    return data.decode("utf-8", errors="backslashreplace").translate(CONTROL)


def fields(msg: Message) -> dict[str, Any]:
    where = coordinates(msg)
    return {
        "topic": where.topic,
        "partition": where.partition,
        "offset": where.offset,
        "timestamp": timestamp_ms(msg) if timestamp_ms(msg) is not None else "",
        "key": text(msg.key()),
        "value": text(msg.value()),
        "headers": ",".join(f"{k}={text(v)}" for k, v in header_pairs(msg)),
    }


def check_format(fmt: str) -> str:
    """The format with ``\\t`` and ``\\n`` unescaped; a placeholder that does not exist is a
    usage error (exit 2)."""
    fmt = fmt.replace("\\t", "\t").replace("\\n", "\n")
    sample = dict.fromkeys(PLACEHOLDERS, "")
    try:
        fmt.format_map(sample)
    except (KeyError, IndexError, ValueError) as exc:
        raise typer.BadParameter(
            f"{exc} is not a placeholder: use {{{'}, {'.join(PLACEHOLDERS)}}}",
            param_hint="--format",
        ) from None
    return fmt


def tail(
    ctx: typer.Context,
    topic: str,
    start: Annotated[
        str,
        typer.Option(
            "--from", help="earliest, latest, an offset (-N: N before the end) or an ISO time"
        ),
    ] = "earliest",
    partition: Annotated[
        list[int] | None, typer.Option("--partition", "-p", help="only this partition (repeat)")
    ] = None,
    count: Annotated[int | None, typer.Option("--count", "-c", help="stop after N records")] = None,
    follow: Annotated[
        bool, typer.Option("--follow", "-f", help="wait for new records (default: stop at end)")
    ] = False,
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            help="placeholders {topic} {partition} {offset} {timestamp} {key} "
            "{value} {headers}; \\t and \\n allowed",
        ),
    ] = "{value}",
    as_json: Annotated[
        bool, typer.Option("--json", help="one JSON object per record (produce --from reads it)")
    ] = False,
) -> None:
    """Print a topic's records (key, value, headers shown safely, binary as \\xNN)."""
    line_format = check_format(fmt)
    spec = TailSpec(topic, start, partitions_arg(partition), count, follow)
    conf = kafka_conf(ctx)
    printed = 0
    try:
        for msg in read_tail(conf, spec):
            if as_json:
                sys.stdout.write(json.dumps(message_json(msg), ensure_ascii=False) + "\n")
            else:
                sys.stdout.write(line_format.format_map(fields(msg)) + "\n")
            printed += 1
        sys.stdout.flush()
    except KeyboardInterrupt:
        sys.stdout.flush()
    except BrokenPipeError:  # `lagless tail T | head`: the reader left; that is no error
        sys.stderr.close()
        return
    note(f"{printed} records from {topic}")
