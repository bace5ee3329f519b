"""Which cluster a command uses: the per-user embedded broker found from any directory, the
fallback said on stderr, misspelled LAGLESS_* variables warned about."""

from __future__ import annotations

import json
import os
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from lagless.broker.embedded import EmbeddedBroker, free_port
from tests.conftest import LAGLESS

pytestmark = pytest.mark.integration


@pytest.fixture
def user_env(tmp_path: Path) -> Iterator[dict[str, str]]:
    """An environment whose per-user state lives under tmp_path (XDG_STATE_HOME), with no
    bootstrap nor LAGLESS_HOME: commands fall back to the embedded broker found there."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAGLESS_")}
    env["XDG_STATE_HOME"] = str(tmp_path / "state")
    yield env
    EmbeddedBroker(tmp_path / "state" / "lagless").stop()


def run(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cwd.mkdir(parents=True, exist_ok=True)
    return subprocess.run(
        [LAGLESS, *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=60,
        check=False,
    )  # fmt: skip


def test_commands_from_two_directories_share_one_embedded_broker(
    tmp_path: Path, user_env: dict[str, str]
) -> None:
    port = free_port()
    started = run(user_env, tmp_path / "a", "broker", "start", "--port", str(port))
    assert started.returncode == 0, started.stderr
    assert str(tmp_path / "state" / "lagless") in started.stdout  # the per-user place
    created = run(user_env, tmp_path / "b", "topic", "create", "shared", "--partitions", "2")
    assert created.returncode == 0, created.stderr
    # the fallback is said on stderr, naming the cluster
    assert f"using the embedded broker at 127.0.0.1:{port}" in created.stderr
    listed = run(user_env, tmp_path / "a", "topic", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert {"topic": "shared", "partitions": 2} in json.loads(listed.stdout)["topics"]
    assert not (tmp_path / "a" / ".lagless").exists() and not (tmp_path / "b" / ".lagless").exists()
    stopped = run(user_env, tmp_path / "b", "broker", "stop", "--purge")
    assert stopped.returncode == 0 and "broker stopped" in stopped.stdout


def test_misspelled_variable_is_warned_and_the_fallback_is_said(
    tmp_path: Path, user_env: dict[str, str]
) -> None:
    port = free_port()
    assert run(user_env, tmp_path, "broker", "start", "--port", str(port)).returncode == 0
    env = {**user_env, "LAGLESS_BOOTSTRAPS": "prod:9092"}
    proc = run(env, tmp_path, "topic", "list")
    assert proc.returncode == 0, proc.stderr
    assert (
        "lagless: warning: LAGLESS_BOOTSTRAPS is not a lagless setting and is ignored "
        "(did you mean LAGLESS_BOOTSTRAP?)" in proc.stderr
    )
    assert f"embedded broker at 127.0.0.1:{port}" in proc.stderr


def test_a_busy_default_port_names_only_existing_flags(
    tmp_path: Path, user_env: dict[str, str]
) -> None:
    """The embedded broker cannot start where another program listens: the error says how to
    name the cluster, and names no flag the command lacks (topic describe has no --port)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(1)
        port = sock.getsockname()[1]
        proc = run(user_env, tmp_path, "demo", "--port", str(port), "--jobs", "1")
    assert proc.returncode == 1
    err = proc.stderr.strip().splitlines()[-1]
    assert f"port {port} on 127.0.0.1 is busy" in err
    assert "-b HOST:PORT" in err and "lagless broker start --port" in err
    assert "choose another with --port" not in err


def test_demo_port_conflicts_with_bootstrap(tmp_path: Path, user_env: dict[str, str]) -> None:
    proc = run(user_env, tmp_path, "-b", "127.0.0.1:1", "demo", "--port", "1234")
    assert proc.returncode == 2
    assert "give either -b or --port" in proc.stderr
