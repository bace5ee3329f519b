"""`lagless run` publishes each handler's status in the state directory while it runs, as
`lagless consume` does, so `lagless ui` knows who owns which partition (the embedded broker does
not answer DescribeGroups with members)."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import pytest

from lagless.observe.instance import live_instances
from lagless.testing import TestKafka
from tests.integration.engine_helpers import REPO
from tests.integration.test_app_cli import app_env, lagless_run

pytestmark = pytest.mark.integration


def test_lagless_run_publishes_each_handlers_status(
    lagless_kafka: TestKafka, tmp_path: Path
) -> None:
    source, out = lagless_kafka.topic(3), lagless_kafka.topic(3)
    lagless_kafka.produce(source, [f"r{i}" for i in range(300)])
    group = lagless_kafka.group()
    home = tmp_path / "home"
    cmd = lagless_run(lagless_kafka, source, out, group)
    cmd[3:3] = ["--state-dir", str(home)]  # a global option: its own registry of instances
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
        env={**app_env(source, out), "LAGLESS_TEST_SLEEP_MS": "20"},
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 90
        owned: set[int] = set()
        while owned != {0, 1, 2}:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline, f"owned {owned} (not all 3 partitions)"
            mine = [d for d in live_instances(home) if d.get("group") == group]
            owned = {p["partition"] for d in mine for p in d["partitions"] if p["topic"] == source}
            time.sleep(0.3)
        assert len(mine) == 1 and mine[0]["pid"] == proc.pid
    finally:
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=90)
    assert proc.returncode == 0, stderr
    assert [d for d in live_instances(home) if d.get("group") == group] == []  # removed at stop
