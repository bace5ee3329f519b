"""Pure parts of the engine's group-life support: readiness, the ledger file, the event log,
the group-protocol settings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lagless.engine.config import EngineConfig
from lagless.engine.events import EventKind, EventLog
from lagless.engine.record import Record
from lagless.engine.results.ledger import Ledger, read_ledger
from lagless.engine.watch.health import Health
from lagless.errors import ConfigError, LaglessError
from lagless.lab.model import read_events


def test_ready_needs_partitions_and_consumption_and_ends_at_stop() -> None:
    health = Health(settle_s=1.0)
    assert not health.is_ready(0.0)  # nothing owned yet
    health.assignment(2, now=10.0)
    assert not health.is_ready(10.5)  # owned, nothing received, not yet settled
    assert health.is_ready(11.0)  # an idle topic: ready after settling
    health.assignment(3, now=20.0)
    health.received()
    assert health.is_ready(20.1)
    health.assignment(0, now=21.0)  # an eager rebalance revoked everything
    assert not health.is_ready(30.0)
    health.assignment(1, now=31.0)
    health.received()
    health.stopping = True
    assert not health.is_ready(32.0)


def test_alive_follows_the_loop() -> None:
    health = Health(alive_within_s=0.5)
    health.turned(0.0)
    status = health.status()
    assert status.alive is False and status.to_json()["alive"] is False  # turned long ago


def test_ledger_round_trip_ignores_a_torn_last_line(tmp_path: Path) -> None:
    path = tmp_path / "ledger.tsv"
    ledger = Ledger(path)
    headers = (("lagless-id", b"job-7"),)
    ledger.write(Record("t", 1, 42, None, b"{}", 1000, headers), "ok", 1.5)
    ledger.write(Record("t", 0, 3, None, b"{}", None, ()), "dlq", 2.0)
    ledger.close()
    with path.open("a") as fh:
        fh.write("t\t1\t43\tjob-8\t10")  # killed mid-line
    lines = read_ledger(path)
    assert [(x.topic, x.partition, x.offset, x.id, x.outcome) for x in lines] == [
        ("t", 1, 42, "job-7", "ok"), ("t", 0, 3, "", "dlq"),
    ]  # fmt: skip
    assert lines[0].ts_ms == 1000 and lines[0].done_ms == 1500.0


def test_a_malformed_ledger_line_is_named(tmp_path: Path) -> None:
    path = tmp_path / "ledger.tsv"
    path.write_text("not a ledger line\nmore\n")
    with pytest.raises(LaglessError, match=r"ledger\.tsv:1"):
        read_ledger(path)


def test_event_log_lines_read_back(tmp_path: Path) -> None:
    log = EventLog(tmp_path / "events.jsonl", "s0-g0")
    log.emit(EventKind.SUBSCRIBED)
    log.emit(EventKind.ASSIGNED, [])
    log.emit(EventKind.ASSIGNED, [("t", 2), ("t", 0)])
    log.emit(EventKind.STOPPED, left_group=False)
    log.close()
    raw = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    assert raw[1]["partitions"] == []  # an empty cooperative assignment is still written
    events = read_events(tmp_path / "events.jsonl")
    assert [e.kind for e in events] == [
        EventKind.SUBSCRIBED, EventKind.ASSIGNED, EventKind.ASSIGNED, EventKind.STOPPED,
    ]  # fmt: skip
    assert events[2].partitions == (2, 0) and events[3].left_group is False


def test_group_protocol_consumer_moves_settings_to_the_broker() -> None:
    config = EngineConfig.build(
        topics=("t",), group="g", on_failure="stop", group_protocol="consumer",
        remote_assignor="range", static_id="slot-1", client_id="s1",
    )  # fmt: skip
    conf = config.consumer_conf({"bootstrap.servers": "x"})
    assert conf["group.protocol"] == "consumer" and conf["group.remote.assignor"] == "range"
    assert not {"partition.assignment.strategy", "session.timeout.ms"} & set(conf)
    assert conf["group.instance.id"] == "slot-1" and conf["client.id"] == "s1"
    classic = EngineConfig.build(topics=("t",), group="g", on_failure="stop").consumer_conf({})
    assert classic["partition.assignment.strategy"] == "cooperative-sticky"
    assert "group.protocol" not in classic
    with pytest.raises(ConfigError, match="assignor: not with group_protocol consumer"):
        EngineConfig.build(
            topics=("t",), group="g", on_failure="stop", group_protocol="consumer",
            assignor="range",
        )  # fmt: skip
    with pytest.raises(ConfigError, match="remote_assignor applies only"):
        EngineConfig.build(topics=("t",), group="g", on_failure="stop", remote_assignor="range")
