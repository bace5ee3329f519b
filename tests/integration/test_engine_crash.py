"""A consumer process killed with SIGKILL mid-work and restarted loses no record, and the
duplicates are exactly the first run's records at or above the offsets committed at the kill
(``--max-pending`` per partition above the last *acknowledged* commit: asynchronous commits
the broker had not answered add to it, so the test counts them exactly instead of bounding).
The embedded broker drops commit metadata, so the restart cannot skip records done above the
committed offset here; that path is tested with the tracker in
tests/unit/test_engine_tracker.py."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import Cluster
from tests.integration.engine_helpers import (
    LEDGER_HANDLER,
    consume_cmd,
    kill_and_restart,
    produce_jobs,
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
    kill_and_restart(
        cluster.conf, cmd, ids, tmp_path, topic=topic, group=group, kill_after=150,
        duplicates_bound=None,
    )  # fmt: skip
