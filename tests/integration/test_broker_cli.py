"""`lagless broker start|status|stop` against the real embedded broker binary."""

from __future__ import annotations

import json
import os
import signal
import socket
import time
from pathlib import Path

import pytest

from lagless.broker.embedded import EmbeddedBroker, free_port
from tests.conftest import run_cli

pytestmark = pytest.mark.integration


def broker_cli(state: Path, *args: str) -> tuple[int, str, str]:
    proc = run_cli("--state-dir", str(state), "broker", *args)
    return proc.returncode, proc.stdout, proc.stderr


def test_start_status_stop_cycle(tmp_path: Path) -> None:
    port = free_port()
    rc, out, err = broker_cli(tmp_path, "status")
    assert rc == 0 and "not running" in out
    rc, out, err = broker_cli(tmp_path, "start", "--port", str(port))
    assert rc == 0, err
    assert f"127.0.0.1:{port}" in out
    try:
        rc, out, _ = broker_cli(tmp_path, "status")
        assert rc == 0 and out.strip() == f"127.0.0.1:{port}"
        rc, out, _ = broker_cli(tmp_path, "status", "--json")
        doc = json.loads(out)
        assert doc["running"] is True and doc["bootstrap"] == f"127.0.0.1:{port}"
        assert Path(doc["log"]).exists()
        # the broker answers Kafka requests: create and describe a topic through it
        proc = run_cli("-b", f"127.0.0.1:{port}", "topic", "create", "cycle", "--partitions", "2")
        assert proc.returncode == 0, proc.stderr
        # a second start is a no-op on the same port
        rc, out, _ = broker_cli(tmp_path, "start", "--port", str(port))
        assert rc == 0
    finally:
        rc, out, _ = broker_cli(tmp_path, "stop")
    assert rc == 0 and "stopped" in out
    rc, out, _ = broker_cli(tmp_path, "status")
    assert rc == 0 and "not running" in out


def test_busy_port_is_a_one_line_error(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(1)
        port = sock.getsockname()[1]
        rc, out, err = broker_cli(tmp_path, "start", "--port", str(port))
    assert rc != 0
    assert "busy" in err and len(err.strip().splitlines()) == 1
    assert "Traceback" not in err + out


def test_dead_broker_process_is_reported(tmp_path: Path) -> None:
    state = EmbeddedBroker(tmp_path).start(port=free_port())
    os.kill(state.pid, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while Path(f"/proc/{state.pid}").exists() and time.monotonic() < deadline:
        try:
            os.waitpid(state.pid, os.WNOHANG)
        except ChildProcessError:
            break
        time.sleep(0.05)
    rc, out, err = broker_cli(tmp_path, "status")
    assert rc == 1
    assert "dead" in err and str(state.pid) in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    rc, out, _ = broker_cli(tmp_path, "stop")
    assert rc == 0
    rc, out, _ = broker_cli(tmp_path, "status")
    assert "not running" in out


def test_unknown_storage_is_rejected(tmp_path: Path) -> None:
    rc, _, err = broker_cli(
        tmp_path, "start", "--port", str(free_port()), "--storage", "sqlite://x"
    )
    assert rc != 0 and "unknown storage" in err and "Traceback" not in err


def test_start_and_stop_say_it_in_json(tmp_path: Path) -> None:
    port = free_port()
    rc, out, err = broker_cli(tmp_path, "start", "--port", str(port), "--json")
    assert rc == 0, err
    try:
        doc = json.loads(out)
        assert doc["running"] is True and doc["bootstrap"] == f"127.0.0.1:{port}"
        assert doc["pid"] > 0 and Path(doc["log"]).exists()
    finally:
        rc, out, err = broker_cli(tmp_path, "stop", "--purge", "--json")
    assert rc == 0, err
    doc = json.loads(out)
    assert doc["kind"] == "tansu" and doc["stopped"] is True and doc["removed"]
    rc, out, _ = broker_cli(tmp_path, "stop", "--json")
    assert rc == 0 and json.loads(out) == {"kind": "tansu", "stopped": False}
