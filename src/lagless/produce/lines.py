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

import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from enum import StrEnum
from queue import Empty, Queue
from typing import Any

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


def read_aside(lines: Iterable[str], stop: threading.Event) -> Iterator[str]:
    """``lines`` read by a daemon thread, so that waiting for the next one (a terminal, a
    pipe) ends as soon as ``stop`` is set; what was read before is still handed out."""
    queue: Queue[str | None] = Queue(maxsize=10_000)

    def pump() -> None:
        for line in lines:
            queue.put(line)
        queue.put(None)

    threading.Thread(target=pump, name="lagless-lines", daemon=True).start()
    while True:
        try:
            line = queue.get(timeout=0.1)
        except Empty:
            if stop.is_set():
                return
            continue
        if line is None:
            return
        yield line


def produce_lines(
    conf: Mapping[str, Any],
    topic: str,
    lines: Iterable[str],
    fmt: LineFormat = LineFormat.AUTO,
    profile: Profile | str = Profile.DURABILITY,
    flush_timeout: float = 120.0,
    stop: threading.Event | None = None,
    delimiter: str = "\t",
) -> LinesResult:
    """Send one record per non-empty line (a trailing newline is not part of the record).
    ``stop`` (set by the CLI's Ctrl-C handler) ends the input: what was read is sent. Give a
    terminal or a pipe through :func:`read_aside`, so that a stop ends the wait for a line."""
    producer = AccountedProducer(conf, profile)
    started = time.monotonic()
    parse: Callable[[str], LineRecord] | None = None
    sent = number = 0
    stopped: str | None = None
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
            producer.send_raw(topic, record.value, record.key, record.headers, partition)
            sent += 1
    except KeyboardInterrupt:
        interrupted = True
    interrupted = interrupted or halt.is_set()
    producer.flush(flush_timeout)
    result = replace(producer.result(topic, sent, started), interrupted=interrupted)
    return LinesResult(result, number, stopped)
