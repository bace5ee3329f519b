"""Produce the user's own records from text lines (``lagless produce --from FILE|-``).

Lines are JSON records or ``key<TAB>value`` (see :mod:`lagless.kafka.jsonlines`); ``auto``
takes JSON when the first non-empty line starts with ``{``. Every delivery is checked. The run
stops at the first line that is not a record (nothing after it is sent, everything before it
is flushed and counted) and on Ctrl-C (what was sent is flushed and counted): the result says
which, so the caller can report the count and exit non-zero.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from lagless.kafka.jsonlines import LineError, LineRecord, parse_json_line, parse_tab_line
from lagless.produce.producer import PARTITION_ANY, AccountedProducer, ProduceResult
from lagless.produce.profiles import Profile


class LineFormat(StrEnum):
    AUTO = "auto"
    JSON = "json"
    TAB = "tab"


@dataclass(frozen=True)
class LinesResult:
    """The delivery result, and why the run stopped early (None: the input ended)."""

    result: ProduceResult
    lines: int
    stopped: str | None = None
    interrupted: bool = False


def parser(fmt: LineFormat, first: str) -> Callable[[str], LineRecord]:
    if fmt is LineFormat.AUTO:
        fmt = LineFormat.JSON if first.lstrip().startswith("{") else LineFormat.TAB
    return parse_json_line if fmt is LineFormat.JSON else parse_tab_line


def produce_lines(
    conf: Mapping[str, Any],
    topic: str,
    lines: Iterable[str],
    fmt: LineFormat = LineFormat.AUTO,
    profile: Profile | str = Profile.DURABILITY,
    flush_timeout: float = 120.0,
) -> LinesResult:
    """Send one record per non-empty line (a trailing newline is not part of the record)."""
    producer = AccountedProducer(conf, profile)
    started = time.monotonic()
    parse: Callable[[str], LineRecord] | None = None
    sent = number = 0
    stopped: str | None = None
    interrupted = False
    try:
        for number, raw in enumerate(lines, start=1):
            line = raw[:-1] if raw.endswith("\n") else raw
            if not line.strip():
                continue
            parse = parse or parser(fmt, line)
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
    producer.flush(flush_timeout)
    return LinesResult(producer.result(topic, sent, started), number, stopped, interrupted)
