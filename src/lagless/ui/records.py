"""Records shown on the console: a topic's latest records (as ``lagless tail`` formats them:
UTF-8 as is, control characters and invalid bytes as ``\\xNN``) and the dead letters of the
engine's dead-letter topics, grouped by error class."""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from collections.abc import Mapping
from typing import Any

from confluent_kafka import Message

from lagless.cli.tail import fields, text
from lagless.engine.results.dlq import H_ERROR, H_ERROR_CLASS, H_OFFSET, H_PARTITION, H_TOPIC
from lagless.errors import LaglessError
from lagless.kafka.records import header_pairs, timestamp_ms
from lagless.kafka.tail import TailSpec, tail
from lagless.ui.console import Console
from lagless.ui.pages import cell, e, table, topic_href

LATEST = 5  # records per partition on a topic's page
DLQ_SCAN = 500  # dead letters read per dead-letter topic
H_TRACEBACK = "lagless-dlq-traceback"


def read(conf: Mapping[str, Any], topic: str, per_partition: int,
         limit: int) -> list[Message]:  # fmt: skip
    spec = TailSpec(topic, start=f"-{per_partition}", count=limit)
    return list(tail(conf, spec, poll=0.2))


def latest_records(conf: Mapping[str, Any], topic: str) -> tuple[list[dict[str, Any]], str | None]:
    """The last few records of each partition, formatted as ``lagless tail`` does."""
    try:
        msgs = read(conf, topic, LATEST, 200)
    except LaglessError as exc:
        return [], str(exc)
    return sorted((fields(m) for m in msgs), key=lambda r: (r["partition"], r["offset"])), None


def headers_of(msg: Message) -> dict[str, str]:
    return {k: text(v) for k, v in header_pairs(msg)}


class DeadLetters:
    """Which topics hold dead letters (their last record carries the engine's DLQ headers),
    remembered per topic until its end moves."""

    def __init__(self) -> None:
        self._seen: dict[str, tuple[int, bool]] = {}

    def topics(self, console: Console) -> list[str]:
        out = []
        for t in console.latest.topics:
            known = self._seen.get(t.topic)
            if known is None or known[0] != t.end:
                is_dlq = False
                if t.end:
                    try:
                        last = read(console.conf, t.topic, 1, len(t.ends))
                    except LaglessError:
                        last = []
                    is_dlq = any(H_ERROR_CLASS in headers_of(m) for m in last)
                self._seen[t.topic] = (t.end, is_dlq)
            if self._seen[t.topic][1]:
                out.append(t.topic)
        return out


FINDER = DeadLetters()


def dead_letters_page(console: Console) -> str:
    topics = FINDER.topics(console)
    if not topics:
        return (
            "<h2>Dead letters</h2><p>No dead-letter topic found: a topic counts as one when "
            "its latest record carries the engine's <code>lagless-dlq-*</code> headers.</p>"
        )
    parts = ["<h2>Dead letters</h2>"]
    for topic in topics:
        try:
            msgs = read(console.conf, topic, DLQ_SCAN, DLQ_SCAN)
        except LaglessError as exc:
            parts.append(f"<p class='ERR'>{e(exc)}</p>")
            continue
        letters = [(m, headers_of(m)) for m in msgs]
        by_class: dict[str, list[tuple[Message, dict[str, str]]]] = defaultdict(list)
        for m, h in letters:
            by_class[h.get(H_ERROR_CLASS, "(no error class)")].append((m, h))
        parts.append(
            f"<h3>topic <a class='name' href='{e(topic_href(topic))}'>{e(topic)}</a> "
            f"<span class='note'>last {len(letters)} dead letters</span></h3>"
        )
        summary = []
        for klass, items in sorted(by_class.items(), key=lambda kv: -len(kv[1])):
            minutes = Counter(
                time.strftime("%H:%M", time.gmtime((timestamp_ms(m) or 0) / 1000)) for m, _ in items
            )
            over_time = ", ".join(f"{k} {n}" for k, n in sorted(minutes.items())[-10:])
            summary.append([cell(klass, "name"), cell(len(items)), cell(over_time, "name")])
        parts.append(table("dlq-classes", (("class", "error class"), ("count", "count"),
                                           ("time", "per minute (UTC)")), summary))  # fmt: skip
        rows = [
            [cell(h.get(H_ERROR_CLASS), "name"), cell(h.get(H_ERROR), "name"),
             cell(f"{h.get(H_TOPIC)}[{h.get(H_PARTITION)}]@{h.get(H_OFFSET)}", "name"),
             f"<td class='name'><pre>{e(h.get(H_TRACEBACK, '-'))}</pre></td>"]
            for _, h in letters[-100:]
        ]  # fmt: skip
        parts.append(table("dlq-letters", (("class", "error class"), ("reason", "reason"),
                                           ("source", "source coordinates"),
                                           ("traceback", "traceback")), rows))  # fmt: skip
    return "".join(parts)
