"""The lab's load on librdkafka's mock cluster: the rate it was asked for, every record in the
ledger once, and each record's value, header and Kafka timestamp agreeing with the ledger."""

from __future__ import annotations

import json
import time

import pytest
from confluent_kafka import Consumer

from lagless.lab.load import TICK_S, Load
from tests.conftest import unique

pytestmark = pytest.mark.integration


def test_the_load_produces_its_rate_and_a_true_ledger(mock_bootstrap: str) -> None:
    conf = {"bootstrap.servers": mock_bootstrap}
    topic, rate = unique("load"), 2000.0
    load = Load(conf, topic, rate, work_ms=2, id_prefix=f"{topic}-")
    started = time.monotonic()
    load.start()
    time.sleep(1.5)
    load.stop()
    elapsed = time.monotonic() - started
    produced = load.produced
    assert load.failed == 0, load.first_error
    assert load.notes() == []  # not behind its schedule by a second: nothing to say
    # never more than were due by the end; at least every record due at the last burst, by
    # the records' own timestamps (the wall clock as each was produced: a loaded machine may
    # leave the load's thread waiting for the CPU well past a tick before the stop)
    assert len(produced) <= rate * elapsed + 1
    stamps = [p.ts_ms for p in produced]
    span_s = (max(stamps) - min(stamps)) / 1000
    assert span_s > 1.0, "the load produced for less than a second of its 1.5"
    assert len(produced) >= rate * (span_s - 4 * TICK_S)
    ids = sorted(int(p.id.removeprefix(f"{topic}-")) for p in produced)
    assert ids == list(range(len(produced)))  # each record acknowledged once, none skipped
    assert load.ends() == {
        part: max(p.offset for p in produced if p.partition == part) + 1
        for part in {p.partition for p in produced}
    }
    ledger = {p.id: p for p in produced}
    consumer = Consumer({**conf, "group.id": unique("g"), "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    seen: dict[str, tuple[int, int, dict[str, object], int]] = {}
    deadline = time.monotonic() + 30
    try:
        while len(seen) < len(ledger) and time.monotonic() < deadline:
            for msg in consumer.consume(500, 0.5):
                assert msg.error() is None, msg.error()
                header = dict(msg.headers() or [])["lagless-id"]
                value = json.loads(msg.value() or b"")
                seen[header.decode()] = (msg.partition(), msg.offset(), value, msg.timestamp()[1])
    finally:
        consumer.close()
    assert seen.keys() == ledger.keys()
    for rid, (partition, offset, value, ts) in seen.items():
        record = ledger[rid]
        assert (partition, offset) == (record.partition, record.offset)
        assert value == {"id": rid, "sleep_ms": 2, "created_ts": ts}
        assert ts == record.ts_ms
