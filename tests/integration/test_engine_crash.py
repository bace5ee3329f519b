"""A consumer process killed with SIGKILL mid-work and restarted loses no record, and the
duplicates stay within the per-partition bound of records held (which includes those in
flight). The embedded broker drops commit metadata, so the restart cannot skip records done
above the committed offset here; that path is tested with the tracker in
tests/unit/test_engine_tracker.py."""

from __future__ import annotations

import json
import signal
from collections.abc import Callable
from pathlib import Path

import pytest

from lagless.kafka.admin import committed_offsets
from tests.conftest import Cluster
from tests.integration.engine_helpers import (
    LEDGER_HANDLER,
    consume_cmd,
    finish,
    produce_jobs,
    read_ledgers,
    spawn,
    wait_for_lines,
)

pytestmark = pytest.mark.integration

PARTITIONS = 3
MAX_PENDING = 8


def test_sigkill_mid_work_then_restart_loses_nothing(
    cluster: Cluster, make_topic: Callable[..., str], group: str, tmp_path: Path
) -> None:
    topic = make_topic(partitions=PARTITIONS)
    ids = produce_jobs(cluster.conf, topic, 600, sleep_ms=(10, 30))
    cmd = consume_cmd(
        cluster.bootstrap, topic, group,
        "--handler", LEDGER_HANDLER, "--ordering", "unordered", "--max-in-flight", "8",
        "--max-pending", str(MAX_PENDING), "--commit-every", "1", "--on-failure", "stop",
        "--until-idle", "3", "--json",
    )  # fmt: skip
    first_ledger, second_ledger = tmp_path / "first", tmp_path / "second"
    first = spawn(cmd, first_ledger)
    try:
        done = wait_for_lines(first_ledger, 150, timeout=60)
        assert done >= 150, f"the consumer processed only {done} records in 60 s"
    finally:
        first.send_signal(signal.SIGKILL)
        first.communicate(timeout=10)
    killed_at = read_ledgers([first_ledger])
    assert sum(killed_at.values()) < len(ids), "killed mid-work, not after the end"
    committed = committed_offsets(cluster.conf, group, [topic])
    assert committed, "the first run committed progress before it was killed"

    second = spawn(cmd, second_ledger)
    code, out, err = finish(second, timeout=120)
    assert code == 0, err[-2000:]
    summary = json.loads(out)

    ledger = read_ledgers([first_ledger, second_ledger])
    assert set(ledger) == set(ids), f"lost {sorted(set(ids) - set(ledger))[:10]}"
    duplicates = sum(ledger.values()) - len(ids)
    assert duplicates <= PARTITIONS * MAX_PENDING, duplicates
    assert summary["processed"] == sum(read_ledgers([second_ledger]).values())
    assert sum(committed_offsets(cluster.conf, group, [topic]).values()) == len(ids)
