"""`consume --offset-reset latest`: a group without commits starts at the end of each partition,
on every broker (the embedded Tansu answers ListOffsets(LATEST) short: lagless starts such
partitions at the true end itself, see lagless.kafka.offsets.LatestStarts)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from lagless.engine.events import EVENTS_FILE
from lagless.produce.producer import AccountedProducer
from lagless.produce.workloads import Workload, WorkloadSpec, generate
from tests.conftest import LAGLESS, Cluster
from tests.integration.test_position_lag import owned

pytestmark = pytest.mark.integration


def send(producer: AccountedProducer, topic: str, per_partition: int) -> None:
    records = iter(generate(WorkloadSpec(workload=Workload.JOBS, sleep_ms=(0, 0), seed=3)))
    for partition in (0, 1):
        for _ in range(per_partition):
            producer.send(topic, next(records), partition=partition)
    assert producer.flush() == 0


def test_latest_reads_only_what_is_written_after_it_came(
    cluster: Cluster, make_topic: Callable[..., str], group: str, tmp_path: Path
) -> None:
    topic = make_topic(partitions=2)
    producer = AccountedProducer(cluster.conf)
    send(producer, topic, 20)  # before: one batch a partition, never to be read
    command = [
        LAGLESS, "consume", "--topic", topic, "--group", group, "--handler", "noop",
        "--on-failure", "skip", "--offset-reset", "latest", "--until-idle", "6", "--json",
        "--session-timeout-ms", "6000", "--heartbeat-ms", "1500", "--record", str(tmp_path),
    ]  # fmt: skip
    env = {**os.environ, "LAGLESS_BOOTSTRAP": cluster.bootstrap}
    proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while owned(tmp_path / EVENTS_FILE) != {0, 1}:
            assert time.monotonic() < deadline and proc.poll() is None, "never assigned"
            time.sleep(0.1)
        time.sleep(1.0)  # its start offsets are set at the assignment
        send(producer, topic, 3)  # after: these six, and only these
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err.decode()
    assert json.loads(out)["processed"] == 6, err.decode()[-2000:]
