"""Produce the user's own records from text lines (``lagless produce --from FILE|-``).

Lines are JSON records, ``key<TAB>value`` (another delimiter as kcat's ``-K``) or plain values
(see :mod:`lagless.kafka.jsonlines`); ``auto`` takes JSON records when the first non-empty
line is an object with record fields, plain values when it is a JSON object without any
(``{"payment_id": ..., "amount": ...}``), tab lines otherwise. Every delivery is checked. The run
stops at the first line that is not a record (nothing after it is sent, everything before it
is flushed and counted) and on Ctrl-C (what was sent is flushed and counted): the result says
which, so the caller can report the count and exit non-zero.
"""

from __future__ import annotations

import os
import select
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

from confluent_kafka import KafkaError, KafkaException

from lagless.kafka.jsonlines import (
    LineError,
    LineRecord,
    is_plain_value,
    parse_json_line,
    parse_tab_line,
    parse_value_line,
)
from lagless.produce.producer import PARTITION_ANY, AccountedProducer, ProduceResult
from lagless.produce.profiles import Profile


class LineFormat(StrEnum):
    AUTO = "auto"
    JSON = "json"
    TAB = "tab"
    VALUE = "value"


@dataclass(frozen=True)
class LinesResult:
    """The delivery result, and why the run stopped early (None: the input ended)."""

    result: ProduceResult  # result.interrupted: stopped by Ctrl-C
    lines: int
    stopped: str | None = None
    exit_code: int = 2  # when stopped: 2 a line that is not a record, 1 a missing partition


def resolved(fmt: LineFormat, first: str) -> LineFormat:
    """The format ``auto`` means for a first line (see the module doc)."""
    if fmt is not LineFormat.AUTO:
        return fmt
    if not first.lstrip().startswith("{"):
        return LineFormat.TAB
    return LineFormat.VALUE if is_plain_value(first) else LineFormat.JSON


def parser(fmt: LineFormat, first: str, delimiter: str = "\t") -> Callable[[str], LineRecord]:
    chosen = resolved(fmt, first)
    if chosen is LineFormat.JSON:
        return parse_json_line
    if chosen is LineFormat.VALUE:
        return parse_value_line
    return lambda line: parse_tab_line(line, delimiter)


def read_aside(fd: int, stop: threading.Event, chunk: int = 65536) -> Iterator[str]:
    """The lines of file descriptor ``fd`` (stdin: a terminal, a pipe), each with its newline
    (the last one may have none), bytes that are not UTF-8 kept as surrogate escapes. Waits
    for input in short steps, so that the wait ends as soon as ``stop`` is set; every line
    read before is handed out. No thread reads ``fd``: one left blocked on ``sys.stdin``
    would abort the interpreter's exit (the stdin buffer's lock is held)."""
    pending = b""
    while not stop.is_set():
        ready, _, _ = select.select([fd], [], [], 0.1)
        if not ready:
            continue
        data = os.read(fd, chunk)
        if not data:
            break
        *whole, pending = (pending + data).split(b"\n")
        for line in whole:
            yield (line + b"\n").decode("utf-8", errors="surrogateescape")
    else:
        return  # stopped: a line without its newline may be cut short, it is not sent
    if pending:
        yield pending.decode("utf-8", errors="surrogateescape")


def produce_lines(
    conf: Mapping[str, Any],
    topic: str,
    lines: Iterable[str],
    fmt: LineFormat = LineFormat.AUTO,
    profile: Profile | str = Profile.DURABILITY,
    flush_timeout: float = 120.0,
    stop: threading.Event | None = None,
    delimiter: str = "\t",
    partitions: int | None = None,
    hurry: Callable[[], bool] | None = None,
) -> LinesResult:
    """Send one record per non-empty line (a trailing newline is not part of the record).
    ``stop`` (set by the CLI's Ctrl-C handler) ends the input: what was read is sent. Give a
    terminal or a pipe through :func:`read_aside`, so that a stop ends the wait for a line.
    A record naming a partition the topic does not have (``partitions``: its count, if known)
    stops the run like a line that is not a record, exit code 1. ``hurry()`` true (a second
    Ctrl-C) ends the wait for deliveries: what is undelivered then counts as failed."""
    producer = AccountedProducer(conf, profile)
    started = time.monotonic()
    parse: Callable[[str], LineRecord] | None = None
    sent = number = 0
    stopped: str | None = None
    code = 2  # the exit code when stopped (see LinesResult)
    interrupted = False
    halt = stop or threading.Event()
    try:
        for number, raw in enumerate(lines, start=1):
            if halt.is_set():
                break
            line = raw[:-1] if raw.endswith("\n") else raw
            if not line.strip():
                continue
            parse = parse or parser(fmt, line, delimiter)
            try:
                record = parse(line)
            except LineError as exc:
                stopped = f"line {number}: {exc}"
                break
            partition = PARTITION_ANY if record.partition is None else record.partition
            if partitions is not None and partition >= partitions:
                stopped, code = f"line {number}: {no_partition(topic, partition, partitions)}", 1
                break
            try:
                producer.send_raw(topic, record.value, record.key, record.headers, partition)
            except KafkaException as exc:
                if exc.args[0].code() != KafkaError._UNKNOWN_PARTITION:
                    raise
                stopped, code = f"line {number}: {no_partition(topic, partition, partitions)}", 1
                break
            sent += 1
    except KeyboardInterrupt:
        interrupted = True
    interrupted = interrupted or halt.is_set()
    producer.flush(flush_timeout, hurry)
    result = replace(producer.result(topic, sent, started), interrupted=interrupted)
    return LinesResult(result, number, stopped, code)


def no_partition(topic: str, partition: int, partitions: int | None) -> str:
    has = "" if partitions is None else f" (the topic has {partitions})"
    return f"partition {partition} of {topic} does not exist{has}"
