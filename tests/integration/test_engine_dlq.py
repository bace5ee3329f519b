"""Failures: a poison record is retried, then dead-lettered with its headers; undecodable
records go straight to the DLQ; later records are processed; with on_failure=stop the commit
stops at the failed record."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from lagless.engine import Record, load_handler, run_engine
from lagless.engine.results.dlq import (
    H_ATTEMPTS,
    H_ERROR,
    H_ERROR_CLASS,
    H_HEADERS_DROPPED,
    H_OFFSET,
    H_PARTITION,
    H_TIMESTAMP,
    H_TOPIC,
)
from lagless.engine.results.ledger import Ledger as RecordLedger
from lagless.engine.results.ledger import read_ledger
from lagless.errors import RecordError
from lagless.ids import ID_HEADER
from lagless.kafka import fetcher
from lagless.kafka.admin import committed_offsets
from lagless.kafka.reader import read_all
from lagless.kafka.records import header
from lagless.produce.workloads import OutRecord
from tests.conftest import Cluster
from tests.integration.engine_helpers import (
    Ledger,
    assert_exactly_once,
    engine_config,
    produce_records,
    record_id,
)
from tests.integration.spark_helpers.raw_produce import produce_raw_headers

pytestmark = pytest.mark.integration

SLEEP = load_handler("sleep")


def job(i: int, value: bytes | None = None) -> OutRecord:
    rid = f"j{i}"
    body = value if value is not None else b'{"id": "%s", "sleep_ms": 1}' % rid.encode()
    return OutRecord(rid, body, None, [(ID_HEADER, rid.encode())])


def test_poison_is_retried_then_dead_lettered_with_its_headers(
    cluster: Cluster, make_topic: Callable[..., str], group: str
) -> None:
    topic = make_topic(partitions=2)
    dlq = make_topic(partitions=1)
    records = [job(i) for i in range(60)]
    records[10] = job(10, b"{not json")  # cannot be decoded: straight to the DLQ
    produce_records(cluster.conf, topic, records)
    ledger = Ledger()
    attempts: list[float] = []

    def handle(record: Record) -> None:
        started = time.monotonic()
        if record_id(record) == "j7":
            attempts.append(started)
            raise RuntimeError("poison j7")
        SLEEP(record)
        ledger.add(record, started)

    config = engine_config(topic, group, dlq_topic=dlq, retries=2, retry_backoff_s=0.05)
    summary = run_engine(cluster.conf, config, handle)

    good = [r.id for r in records if r.id not in ("j7", "j10")]
    assert_exactly_once(ledger.ids, good)
    assert (summary.processed, summary.ok, summary.dlq) == (60, 58, 2)
    assert len(attempts) == 3
    assert attempts[2] - attempts[1] >= attempts[1] - attempts[0] >= 0.04, "backoff grows"

    letters = {header(m, ID_HEADER): m for m in read_all(cluster.conf, dlq)}
    assert set(letters) == {b"j7", b"j10"}
    poison = letters[b"j7"]
    originals = {r.id: r for r in records}
    assert poison.value() == originals["j7"].value
    assert header(poison, H_ERROR_CLASS) == b"RuntimeError"
    assert header(poison, H_ERROR) == b"poison j7"
    assert header(poison, H_ATTEMPTS) == b"3"
    assert header(poison, H_TOPIC) == topic.encode()
    partition = int(header(poison, H_PARTITION) or b"-1")
    offset = int(header(poison, H_OFFSET) or b"-1")
    source = [
        m
        for m in read_all(cluster.conf, topic)
        if (m.partition(), m.offset()) == (partition, offset)
    ]
    assert len(source) == 1 and header(source[0], ID_HEADER) == b"j7"
    assert header(poison, H_TIMESTAMP) == str(source[0].timestamp()[1]).encode()
    undecodable = letters[b"j10"]
    assert header(undecodable, H_ERROR_CLASS) == b"DecodeError"
    assert header(undecodable, H_ATTEMPTS) == b"1", "a DecodeError is never retried"


def test_stop_policy_raises_and_commits_below_the_failed_record(
    cluster: Cluster, make_topic: Callable[..., str], group: str
) -> None:
    topic = make_topic(partitions=1)
    records = [job(i) for i in range(30)]
    produce_records(cluster.conf, topic, records)
    ledger = Ledger()

    def handle(record: Record) -> None:
        if record_id(record) == "j12":
            raise ValueError("bad j12")
        ledger.add(record, time.monotonic())

    config = engine_config(topic, group, on_failure="stop", retries=1, retry_backoff_s=0.01)
    with pytest.raises(RecordError, match="bad j12") as info:
        run_engine(cluster.conf, config, handle)
    assert info.value.coordinates.offset == 12
    assert committed_offsets(cluster.conf, group, [topic]) == {(topic, 0): 12}
    assert {f"j{i}" for i in range(12)} <= set(ledger.ids)


@pytest.mark.parametrize("fetch", ["1", "0"])  # the C fetcher's messages, confluent-kafka's
def test_a_header_name_not_utf8_is_dead_lettered_without_its_headers(
    cluster: Cluster,
    make_topic: Callable[..., str],
    group: str,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    fetch: str,
) -> None:
    """A handler that reads such a record's headers fails with the record's coordinates at
    every read; its dead letter carries the key and value and says why its headers are not in
    it, the records around it run, and the record ledger has a line for each (without an id
    for that one: it used to stop the run). With confluent-kafka's messages the process used
    to crash once the call site reading headers was hot (40 records before it warm it up)."""
    monkeypatch.setenv(fetcher.SWITCH, fetch)
    topic, dlq = make_topic(partitions=1), make_topic(partitions=1)
    warm = [[(b"ok", b"%d" % i)] for i in range(40)]
    produce_raw_headers(cluster.bootstrap, topic, [*warm, [(b"\xff\xfe", b"x")], []])
    seen: list[tuple[int, list[tuple[str, bytes | None]]]] = []

    def handle(record: Record) -> None:
        seen.append((record.offset, list(record.headers)))

    config = engine_config(topic, group, dlq_topic=dlq, retries=1, retry_backoff_s=0.01)
    records = RecordLedger(tmp_path / "ledger.tsv")
    summary = run_engine(cluster.conf, config, handle, ledger=records)
    records.close()
    assert (summary.processed, summary.ok, summary.dlq) == (42, 41, 1)
    lines = read_ledger(tmp_path / "ledger.tsv")
    assert sorted((line.offset, line.outcome) for line in lines) == [
        *((i, "ok") for i in range(40)),
        (40, "dlq"),
        (41, "ok"),
    ]
    assert sorted(seen) == [*((i, [("ok", b"%d" % i)]) for i in range(40)), (41, [])]
    [letter] = read_all(cluster.conf, dlq)
    assert letter.value() == b"v"
    assert header(letter, H_ERROR_CLASS) == b"HeaderNameError"
    assert header(letter, H_OFFSET) == b"40"
    assert header(letter, H_HEADERS_DROPPED) == (
        b"a header name is not UTF-8 (confluent-kafka cannot read its headers): "
        b"its headers are not copied"
    )
    assert [k for k, _ in letter.headers() or [] if not k.startswith("lagless-dlq-")] == []
    assert committed_offsets(cluster.conf, group, [topic]) == {(topic, 0): 42}
