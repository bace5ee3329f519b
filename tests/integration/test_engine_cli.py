"""`lagless consume`: one JSON object, bad arguments, SIGTERM drains and commits only what
was processed, handlers in processes, the run timeline."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Callable
from pathlib import Path

import pytest

from lagless.ids import ID_HEADER
from lagless.kafka.admin import committed_offsets
from lagless.kafka.reader import read_all
from lagless.kafka.records import header
from tests.conftest import Cluster, run_cli
from tests.integration.engine_helpers import (
    GROUP_FLAGS,
    LEDGER_HANDLER,
    consume_cmd,
    finish,
    produce_jobs,
    read_ledgers,
    spawn,
    wait_for_lines,
)

pytestmark = pytest.mark.integration

SUMMARY_KEYS = {
    "processed", "dlq", "seconds", "records_per_s", "join_s", "wall_s", "commits",
    "rebalances", "pauses", "max_in_flight_seen", "inline_batches", "e2e_ms",
}  # fmt: skip


def test_json_prints_one_object_and_records_a_timeline(
    cluster: Cluster, make_topic: Callable[..., str], group: str, tmp_path: Path
) -> None:
    topic = make_topic(partitions=2)
    produce_jobs(cluster.conf, topic, 500)
    result = run_cli(
        "consume", "--topic", topic, "--group", group, "--handler", "noop", "--ordering",
        "unordered", "--count", "500", "--on-failure", "skip", "--json", "--record",
        str(tmp_path / "run"), *GROUP_FLAGS,
        cluster=cluster,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 1
    summary = json.loads(lines[0])
    assert set(summary) == SUMMARY_KEYS
    assert summary["processed"] == 500 and summary["dlq"] == 0
    assert set(summary["e2e_ms"]) == {"p50", "p99", "max"}
    assert summary["e2e_ms"]["p50"] <= summary["e2e_ms"]["p99"] <= summary["e2e_ms"]["max"]
    assert summary["commits"] >= 1 and summary["rebalances"] >= 1
    timeline = (tmp_path / "run" / "timeline.jsonl").read_text().splitlines()
    assert timeline and all(json.loads(line) for line in timeline)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--max-in-flight", "0", "--on-failure", "skip"], "max_in_flight"),
        ([], "--on-failure stop|skip"),
        (["--dlq-topic", "d", "--on-failure", "skip"], "only without --dlq-topic"),
        (["--handler", "nope", "--on-failure", "skip"], "handler 'nope'"),
        (["--on-failure", "skip", "--assignor", "sticky"], "--assignor"),
        (["--on-failure", "skip", "--heartbeat-ms", "20000"], "heartbeat"),
    ],
)
def test_bad_arguments_are_one_line_and_exit_2(args: list[str], message: str) -> None:
    result = run_cli("consume", "--topic", "t", "--group", "g", *args)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and message in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


def test_sigterm_drains_commits_only_processed_records_and_exits_0(
    cluster: Cluster, make_topic: Callable[..., str], group: str, tmp_path: Path
) -> None:
    topic = make_topic(partitions=2)
    ids = produce_jobs(cluster.conf, topic, 400, sleep_ms=(20, 40))
    ledger = tmp_path / "ledger"
    proc = spawn(
        consume_cmd(
            cluster.bootstrap, topic, group, "--handler", LEDGER_HANDLER, "--ordering",
            "unordered", "--max-in-flight", "6", "--on-failure", "stop", "--json",
        ),
        ledger,
    )  # fmt: skip
    try:
        assert wait_for_lines(ledger, 40, timeout=60) >= 40
    finally:
        proc.send_signal(signal.SIGTERM)
    code, out, err = finish(proc, timeout=60)
    assert code == 0, err[-2000:]
    summary = json.loads(out)
    processed = read_ledgers([ledger])
    assert summary["processed"] == sum(processed.values())
    assert sum(processed.values()) < len(ids), "stopped before the end"
    committed = committed_offsets(cluster.conf, group, [topic])
    assert committed, "committed at shutdown"
    below = [
        (header(m, ID_HEADER) or b"").decode()
        for m in read_all(cluster.conf, topic)
        if m.offset() < committed.get((topic, m.partition() or 0), 0)
    ]
    assert below and set(below) <= set(processed), "committed past an unprocessed record"


def test_sigterm_to_the_process_group_drains_the_handler_processes_too(
    cluster: Cluster, make_topic: Callable[..., str], group: str, tmp_path: Path
) -> None:
    """``kill -TERM -PGID`` (systemd's default ``KillMode=control-group``) reaches the pool's
    processes as well as lagless: they keep running their records, lagless drains, exit 0."""
    topic = make_topic(partitions=2)
    ids = produce_jobs(cluster.conf, topic, 300, sleep_ms=(20, 40))
    ledger = tmp_path / "ledger"
    proc = spawn(
        consume_cmd(
            cluster.bootstrap, topic, group, "--handler", LEDGER_HANDLER, "--processes", "2",
            "--ordering", "unordered", "--max-in-flight", "8", "--on-failure", "stop", "--json",
        ),
        ledger,
        own_group=True,
    )  # fmt: skip
    try:
        assert wait_for_lines(ledger, 30, timeout=60) >= 30
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
    code, out, err = finish(proc, timeout=60)
    assert code == 0, err[-2000:]
    processed = read_ledgers([ledger])
    assert json.loads(out)["processed"] == sum(processed.values()) < len(ids)
    assert max(processed.values()) == 1


def test_handlers_run_in_processes(
    cluster: Cluster, make_topic: Callable[..., str], group: str, tmp_path: Path
) -> None:
    topic = make_topic(partitions=2)
    ids = produce_jobs(cluster.conf, topic, 120)
    ledger = tmp_path / "ledger"
    proc = spawn(
        consume_cmd(
            cluster.bootstrap, topic, group, "--handler", LEDGER_HANDLER, "--processes", "2",
            "--ordering", "unordered", "--max-in-flight", "8", "--count", "120",
            "--on-failure", "stop", "--json",
        ),
        ledger,
    )  # fmt: skip
    code, out, err = finish(proc, timeout=90)
    assert code == 0, err[-2000:]
    assert json.loads(out)["processed"] == 120
    assert read_ledgers([ledger]) == dict.fromkeys(ids, 1)
