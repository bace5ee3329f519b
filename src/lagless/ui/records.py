"""Records shown on the console: a topic's latest records (as ``lagless tail`` formats them:
UTF-8 as is, control characters and invalid bytes as ``\\xNN``) and the dead letters of the
engine's dead-letter topics, grouped by error class. Every read runs in a child process
(:class:`PageReads`), so a fetch that crashes librdkafka costs one page, not the console."""

from __future__ import annotations

import logging
import time
from collections import Counter, defaultdict
from collections.abc import Mapping
from typing import Any

from confluent_kafka import KafkaException, Message, TopicPartition

from lagless.cli.tail import fields, text
from lagless.engine.results.dlq import (
    H_ERROR,
    H_ERROR_CLASS,
    H_OFFSET,
    H_PARTITION,
    H_STACKTRACE,
    H_TOPIC,
)
from lagless.errors import LaglessError
from lagless.kafka.clients import make_consumer
from lagless.kafka.isolated import IsolatedCalls
from lagless.kafka.offsets import READ_WAIT_MS, probe_conf
from lagless.kafka.records import (
    HeaderNameError,
    coordinates,
    data_only,
    header_pairs,
    timestamp_ms,
)
from lagless.kafka.tail import TailSpec, at_end, tail
from lagless.ui.model import Snapshot
from lagless.ui.pages import cell, e, table, topic_href

LATEST = 5  # records per partition on a topic's page
DLQ_SCAN = 500  # dead letters read per dead-letter topic
DLQ_SHOWN = 10  # dead-letter topics read on one page (the most recently written first)
CALL_S = 30.0  # one read in the pages' child process (a look reads for 5 s)
LOOK_PARTITIONS = 500  # partitions whose last record one look reads
LOOK_S = 10.0  # looks for dead-letter topics per page (the rest on the next page)

log = logging.getLogger(__name__)

Letter = tuple[int | None, dict[str, str]]  # a dead letter: its timestamp (ms), its headers


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
    """The record's headers as text; the traceback's keeps its line breaks."""
    return {k: text(v, lines=k == H_STACKTRACE) for k, v in header_pairs(msg)}


def dead_letters(conf: Mapping[str, Any], topic: str) -> list[Letter]:
    """The last ``DLQ_SCAN`` records of a dead-letter topic: timestamp and headers each."""
    return [(timestamp_ms(m), headers_of(m)) for m in read(conf, topic, DLQ_SCAN, DLQ_SCAN)]


class PageReads:
    """The console pages' reads of records, run in a child process
    (:class:`lagless.kafka.isolated.IsolatedCalls`): they fetch, and on Tansu a fetch of a
    topic being deleted crashes librdkafka (:mod:`lagless.kafka.isolated`); a crash or a hang
    fails that read with one line and the next read starts a new child. Also remembers which
    topics hold dead letters (their last record carries the engine's DLQ headers) and when the
    newest was written, per topic until its end moves."""

    def __init__(self, conf: Mapping[str, Any]) -> None:
        self.conf = dict(conf)
        self.calls = IsolatedCalls("console record reader", CALL_S)
        self._seen: dict[str, tuple[int, int | None]] = {}  # topic: (end, newest dead letter ms)
        self._pending: list[list[str]] = []  # chunks not looked at yet (split ones first)

    def close(self) -> None:
        self.calls.close()

    def latest(self, topic: str) -> tuple[list[dict[str, Any]], str | None]:
        """:func:`latest_records` of ``topic``, or no records and the error."""
        try:
            return self.calls.call(latest_records, self.conf, topic)
        except LaglessError as exc:
            return [], str(exc)

    def dead_letters(self, topic: str) -> list[Letter]:
        """:func:`dead_letters` of ``topic`` (LaglessError: one line)."""
        return self.calls.call(dead_letters, self.conf, topic)

    def dead_letter_topics(self, latest: Snapshot) -> list[str]:
        """The dead-letter topics, the most recently written first. Topics are looked at in
        chunks of up to ``LOOK_PARTITIONS`` partitions for up to ``LOOK_S`` a page; a chunk
        whose look crashes the reader is split in two, and a topic that crashes it alone is
        counted as no dead-letter topic until its end moves (said once in the log)."""
        todo = {
            t.topic: t
            for t in latest.topics
            if (known := self._seen.get(t.topic)) is None or known[0] != t.end
        }
        pending = [kept for names in self._pending if (kept := [n for n in names if n in todo])]
        held = {n for names in pending for n in names}
        fresh = [(name, sum(1 for end in t.ends if end > 0))
                 for name, t in todo.items() if name not in held]  # fmt: skip
        chunks = pending + _chunks(fresh)
        deadline = time.monotonic() + LOOK_S
        while chunks and time.monotonic() < deadline:
            names = chunks.pop(0)
            wanted = [(name, p, end - 1) for name in names
                      for p, end in enumerate(todo[name].ends) if end > 0]  # fmt: skip
            try:
                found, unread = (
                    self.calls.call(last_records, self.conf, wanted) if wanted else ({}, set())
                )
            except LaglessError as exc:
                if len(names) > 1:
                    chunks[:0] = [names[: len(names) // 2], names[len(names) // 2 :]]
                else:
                    log.warning("cannot look at %s's last records (%s): not counted as a "
                                "dead-letter topic until it grows", names[0], exc)  # fmt: skip
                    self._seen[names[0]] = (todo[names[0]].end, None)
                continue
            for name in names:
                if name not in unread:  # a topic not read in time is looked at again next time
                    self._seen[name] = (todo[name].end, found.get(name))
        self._pending = chunks  # a split goes on where it was on the next page
        newest = {t.topic: self._seen.get(t.topic, (0, None))[1] for t in latest.topics}
        return sorted((t for t, ms in newest.items() if ms is not None),
                      key=lambda t: -(newest[t] or 0))  # fmt: skip


def _chunks(sizes: list[tuple[str, int]]) -> list[list[str]]:
    """Topic names in order, grouped so a group holds up to ``LOOK_PARTITIONS`` partitions
    (a larger topic alone)."""
    out: list[list[str]] = []
    held = 0
    for name, size in sizes:
        if not out or held + size > LOOK_PARTITIONS:
            out.append([])
            held = 0
        out[-1].append(name)
        held += size
    return out


def last_records(conf: Mapping[str, Any], wanted: list[tuple[str, int, int]],
                 timeout: float = 5.0) -> tuple[dict[str, int], set[str]]:  # fmt: skip
    """The topics among ``wanted`` (topic, partition, last offset) whose last record carries
    the dead-letter headers, each with its newest such record's timestamp (ms): one consumer,
    one fetch of every partition's last record. Also the topics with a partition whose last
    record was not read within ``timeout`` (not known either way)."""
    if not wanted:
        return {}, set()
    consumer = make_consumer(probe_conf(conf, wait_ms=READ_WAIT_MS))
    out: dict[str, int] = {}
    todo = {(t, p) for t, p, _ in wanted}
    try:
        consumer.incremental_assign([TopicPartition(t, p, o) for t, p, o in wanted])
        deadline = time.monotonic() + timeout
        while todo and time.monotonic() < deadline:
            done = set()
            for msg in data_only(consumer.consume(500, timeout=0.2)):
                where = coordinates(msg)
                done.add((where.topic, where.partition))
                try:
                    letter = any(k == H_ERROR_CLASS for k, _ in header_pairs(msg))
                except HeaderNameError:  # not one the engine wrote
                    letter = False
                if letter:
                    out[where.topic] = max(out.get(where.topic, 0), timestamp_ms(msg) or 0)
            done &= todo
            if todo - done:  # read through without a record (e.g. a transaction marker): known
                done |= at_end(consumer, todo - done, {(t, p): o + 1 for t, p, o in wanted})
            if done:  # fetched no more: on thousands of partitions a look reads 7x as many
                todo -= done
                consumer.incremental_unassign([TopicPartition(t, p) for t, p in done])
    except (KafkaException, LaglessError, SystemError):
        # what was read counts; the rest is looked at again on the next page (SystemError:
        # confluent-kafka may raise a header name that is not UTF-8 late, at a later call)
        pass
    finally:
        consumer.close()
    return out, {t for t, _ in todo}


def dead_letters_page(reads: PageReads, latest: Snapshot) -> str:
    topics = reads.dead_letter_topics(latest)
    if not topics:
        return (
            "<h2>Dead letters</h2><p>No dead-letter topic found: a topic counts as one when "
            "its latest record carries the engine's <code>lagless-dlq-*</code> headers.</p>"
        )
    parts = ["<h2>Dead letters</h2>"]
    if len(topics) > DLQ_SHOWN:
        others = ", ".join(
            f"<a class='name' href='{e(topic_href(t))}'>{e(t)}</a>" for t in topics[DLQ_SHOWN:]
        )
        parts.append(
            f"<p class='note'>The {DLQ_SHOWN} most recently written of {len(topics)} dead-letter "
            f"topics; the others: {others}</p>"
        )
    for topic in topics[:DLQ_SHOWN]:
        try:
            letters = reads.dead_letters(topic)
        except LaglessError as exc:
            parts.append(f"<p class='ERR'>{e(exc)}</p>")
            continue
        by_class: dict[str, list[Letter]] = defaultdict(list)
        for ms, h in letters:
            by_class[h.get(H_ERROR_CLASS, "(no error class)")].append((ms, h))
        parts.append(
            f"<h3>topic <a class='name' href='{e(topic_href(topic))}'>{e(topic)}</a> "
            f"<span class='note'>last {len(letters)} dead letters</span></h3>"
        )
        summary = []
        for klass, items in sorted(by_class.items(), key=lambda kv: -len(kv[1])):
            minutes = Counter(
                time.strftime("%H:%M", time.gmtime((ms or 0) / 1000)) for ms, _ in items
            )
            over_time = ", ".join(f"{k} {n}" for k, n in sorted(minutes.items())[-10:])
            summary.append([cell(klass, "name"), cell(len(items)), cell(over_time, "name")])
        parts.append(table("dlq-classes", (("class", "error class"), ("count", "count"),
                                           ("time", "per minute (UTC)")), summary))  # fmt: skip
        rows = [
            [cell(h.get(H_ERROR_CLASS), "name"), cell(h.get(H_ERROR), "name"),
             cell(f"{h.get(H_TOPIC)}[{h.get(H_PARTITION)}]@{h.get(H_OFFSET)}", "name"),
             f"<td class='name'><pre>{e(h.get(H_STACKTRACE, '-'))}</pre></td>"]
            for _, h in letters[-100:]
        ]  # fmt: skip
        parts.append(table("dlq-letters", (("class", "error class"), ("reason", "reason"),
                                           ("source", "source coordinates"),
                                           ("traceback", "traceback")), rows))  # fmt: skip
    return "".join(parts)
