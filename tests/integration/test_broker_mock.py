"""librdkafka's mock cluster as a second broker: ``lagless broker start|status|stop --kind
mock`` holds one in the background, and ``lagless topic create`` makes topics of any partition
count on it (through its C API: the mock has no CreateTopics), read back by metadata."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from lagless.broker.embedded import pid_alive
from lagless.broker.mockcontrol import find_control
from tests.conftest import run_cli

pytestmark = pytest.mark.integration


def mock_cli(state: Path, *args: str) -> tuple[int, str, str]:
    proc = run_cli("--state-dir", str(state), *args, timeout=60)
    return proc.returncode, proc.stdout, proc.stderr


def test_mock_broker_cycle_and_a_48_partition_topic(tmp_path: Path) -> None:
    rc, out, err = mock_cli(tmp_path, "broker", "start", "--kind", "mock", "--rtt-ms", "1")
    if rc != 0:
        pytest.skip(f"librdkafka's mock cluster cannot start here: {err.strip()[-300:]}")
    try:
        assert "mock cluster" in out and "not a production broker" in out, out
        rc, out, err = mock_cli(tmp_path, "broker", "status", "--kind", "mock")
        bootstrap = out.strip()
        assert rc == 0 and bootstrap.startswith("127.0.0.1:"), (out, err)
        assert bootstrap in mock_cli(tmp_path, "broker", "start", "--kind", "mock")[1]  # one
        rc, out, err = mock_cli(tmp_path, "-b", bootstrap, "topic", "create", "wide",
                                "--partitions", "48")  # fmt: skip
        assert rc == 0 and "created" in out, err
        meta = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10)
        assert meta.cluster_id.startswith("mockCluster")
        assert len(meta.topics["wide"].partitions) == 48
        rc, out, err = mock_cli(tmp_path, "-b", bootstrap, "topic", "create", "wide")
        assert rc == 1 and "already exists" in err and "Traceback" not in err
        rc, out, err = mock_cli(tmp_path, "-b", bootstrap, "group", "describe", "g")
        assert rc == 1 and err.count("\n") == 1, err  # the mock's limit, said as such
        assert "librdkafka's mock cluster does not describe groups" in err
        rc, out, err = mock_cli(tmp_path, "-b", bootstrap, "topic", "delete", "wide", "-y")
        assert rc == 0, err
        meta = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10)
        assert "wide" not in meta.topics
        state = json.loads(mock_cli(tmp_path, "broker", "status", "--kind", "mock", "--json")[1])
        assert state["running"] is True and state["bootstrap"] == bootstrap
        for command in ("status", "stop"):  # without --kind: the embedded broker's, pointing here
            rc, out, err = mock_cli(tmp_path, "broker", command)
            assert rc == 0 and "not running" in out, (out, err)
            assert f"mock cluster runs at {bootstrap}: add --kind mock" in out, out
    finally:
        rc, out, err = mock_cli(tmp_path, "broker", "stop", "--kind", "mock")
    assert rc == 0 and "stopped" in out
    assert not pid_alive(state["pid"])
    assert find_control(bootstrap) is None  # unregistered at exit
    rc, out, _ = mock_cli(tmp_path, "broker", "status", "--kind", "mock")
    assert rc == 0 and "not running" in out


def test_a_dead_mock_is_said_and_cleared(tmp_path: Path) -> None:
    rc, out, err = mock_cli(tmp_path, "broker", "start", "--kind", "mock")
    if rc != 0:
        pytest.skip(f"librdkafka's mock cluster cannot start here: {err.strip()[-300:]}")
    state = json.loads(mock_cli(tmp_path, "broker", "status", "--kind", "mock", "--json")[1])
    os.kill(state["pid"], signal.SIGKILL)
    for _ in range(50):
        if not pid_alive(state["pid"]):
            break
        time.sleep(0.1)
    rc, out, err = mock_cli(tmp_path, "broker", "status", "--kind", "mock")
    assert rc != 0 and "dead" in err and "Traceback" not in err
    assert find_control(state["bootstrap"]) is None  # a dead holder's control is not used
    rc, out, err = mock_cli(tmp_path, "broker", "stop", "--kind", "mock")
    assert rc == 0
    rc, out, _ = mock_cli(tmp_path, "broker", "status", "--kind", "mock")
    assert "not running" in out


def test_unknown_kind_is_one_line(tmp_path: Path) -> None:
    rc, _, err = mock_cli(tmp_path, "broker", "status", "--kind", "mokc")
    assert rc != 0 and "--kind 'mokc'" in err and "Traceback" not in err


def test_flags_of_the_other_kind_are_refused(tmp_path: Path) -> None:
    """--port is the embedded broker's (the mock picks its own), --brokers the mock's."""
    rc, out, err = mock_cli(tmp_path, "broker", "start", "--kind", "mock", "--port", "19393")
    assert rc == 2 and out == "" and err.count("\n") == 1
    assert "--port applies to the embedded broker" in err
    rc, out, err = mock_cli(tmp_path, "broker", "start", "--brokers", "3")
    assert rc == 2 and "--brokers applies to --kind mock" in err
    rc, out, _ = mock_cli(tmp_path, "broker", "status", "--kind", "mock")
    assert rc == 0 and "not running" in out  # nothing was started
