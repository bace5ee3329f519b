"""`lagless tail TOPIC`: records to stdout, like ``kcat -C``."""

from __future__ import annotations

import json
import re
import sys
from typing import Annotated, Any

import typer
from confluent_kafka import Message

from lagless.cli.common import kafka_conf, note, one_name
from lagless.kafka.jsonlines import message_json
from lagless.kafka.records import coordinates, header_pairs, timestamp_ms
from lagless.kafka.tail import TailSpec, partitions_arg
from lagless.kafka.tail import tail as read_tail
from lagless.signals import Terminated

PLACEHOLDERS = ("topic", "partition", "offset", "timestamp", "key", "value", "headers")
KCAT = {
    "t": "topic", "p": "partition", "o": "offset", "T": "timestamp", "k": "key", "s": "value",
    "h": "headers", "K": "key_size", "S": "value_size",
}  # fmt: skip
"""kcat's ``-f`` placeholders: ``%k`` key, ``%s`` value, ``%K``/``%S`` their sizes (-1 for
null), ``%t`` topic, ``%p`` partition, ``%o`` offset, ``%T`` timestamp (ms), ``%h`` headers."""
KCAT_TOKEN = re.compile(r"%(.)", re.DOTALL)
NULL = "NULL"  # a null key, value or header value (kcat -Z), apart from an empty one


CONTROL = {c: f"\\x{c:02x}" for c in (*range(32), 127)} | {9: "\\t", 10: "\\n", 13: "\\r"}


LINES = {c: v for c, v in CONTROL.items() if c != 10}  # CONTROL, line breaks kept


def text(data: bytes | None, lines: bool = False) -> str:
    """Bytes shown safely on one line: UTF-8 as is, control characters and invalid bytes as
    ``\\xNN`` (``\\t``, ``\\n``, ``\\r``); ``None`` as ``NULL``. ``--json`` keeps bytes exact.
    ``lines``: line breaks kept (a traceback shown in ``<pre>``)."""
    if data is None:
        return NULL
    return data.decode("utf-8", errors="backslashreplace").translate(LINES if lines else CONTROL)


def size(data: bytes | None) -> int:
    return -1 if data is None else len(data)


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
        "key_size": size(msg.key()),
        "value_size": size(msg.value()),
    }


def check_format(fmt: str) -> str:
    """The format as a ``str.format`` template of one record's output, ``\\t`` and ``\\n``
    unescaped: kcat's ``%`` placeholders when it has any (printed as is, as kcat does: end it
    with ``\\n``), else ``{name}`` ones (a newline added). A placeholder that does not exist
    is a usage error (exit 2)."""
    fmt = fmt.replace("\\t", "\t").replace("\\n", "\n")
    if KCAT_TOKEN.search(fmt):
        return from_kcat(fmt)
    sample = dict.fromkeys((*PLACEHOLDERS, "key_size", "value_size"), "")
    try:
        fmt.format_map(sample)
    except (KeyError, IndexError, ValueError) as exc:
        raise typer.BadParameter(
            f"{exc} is not a placeholder: use {{{'}, {'.join(PLACEHOLDERS)}}} or kcat's "
            f"%{' %'.join(KCAT)}",
            param_hint="--format",
        ) from None
    return fmt + "\n"


def from_kcat(fmt: str) -> str:
    """A kcat format as a ``str.format`` template (``%%`` is a ``%``)."""
    out: list[str] = []
    last = 0
    for match in KCAT_TOKEN.finditer(fmt):
        out.append(fmt[last : match.start()].replace("{", "{{").replace("}", "}}"))
        letter = match.group(1)
        if letter == "%":
            out.append("%")
        elif letter in KCAT:
            out.append("{" + KCAT[letter] + "}")
        else:
            raise typer.BadParameter(
                f"%{letter} is not a kcat placeholder: use %{' %'.join(KCAT)} (%% for %)",
                param_hint="--format",
            )
        last = match.end()
    out.append(fmt[last:].replace("{", "{{").replace("}", "}}"))
    return "".join(out)


def tail(
    ctx: typer.Context,
    topic_arg: Annotated[str | None, typer.Argument(metavar="TOPIC", help="the topic")] = None,
    topic_opt: Annotated[str | None, typer.Option("--topic", help="the topic (alias)")] = None,
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
        bool, typer.Option("--follow", help="wait for new records (default: stop at end)")
    ] = False,
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            "-f",
            help="kcat's %k %s %t %p %o %T %h %K %S, or {topic} {partition} {offset} "
            "{timestamp} {key} {value} {headers}; \\t and \\n allowed; null shown as NULL",
        ),
    ] = "{value}",
    as_json: Annotated[
        bool, typer.Option("--json", help="one JSON object per record (produce --from reads it)")
    ] = False,
) -> None:
    """Print a topic's records (key, value, headers shown safely, binary as \\xNN)."""
    topic = one_name("topic", topic_arg, topic_opt)
    line_format = check_format(fmt)
    spec = TailSpec(topic, start, partitions_arg(partition), count, follow)
    conf = kafka_conf(ctx)
    printed = 0
    try:
        for msg in read_tail(conf, spec):
            if as_json:
                sys.stdout.write(json.dumps(message_json(msg), ensure_ascii=False) + "\n")
            else:
                sys.stdout.write(line_format.format_map(fields(msg)))
            printed += 1
        sys.stdout.flush()
    except (KeyboardInterrupt, Terminated):  # Ctrl-C or SIGTERM: the count, exit 0
        sys.stdout.flush()
    except BrokenPipeError:  # `lagless tail T | head`: the reader left; that is no error
        sys.stderr.close()
        return
    note(f"{printed} records from {topic}")
