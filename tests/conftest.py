"""Fixtures: a real broker for the session, fresh topic and group names per test.

The broker is the embedded Tansu started on a free port, or the cluster named by
``LAGLESS_TEST_BOOTSTRAP`` (e.g. a real Apache Kafka) when that variable is set.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from lagless.broker.embedded import EmbeddedBroker, free_port
from lagless.config import KafkaSettings
from lagless.kafka.admin import create_topic

VENV_BIN = Path(sys.executable).parent
LAGLESS = str(VENV_BIN / "lagless")


@dataclass(frozen=True)
class Cluster:
    """A reachable Kafka cluster for tests."""

    bootstrap: str
    embedded: bool

    @property
    def settings(self) -> KafkaSettings:
        return KafkaSettings(bootstrap=self.bootstrap)

    @property
    def conf(self) -> dict[str, Any]:
        return self.settings.to_librdkafka()


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    external = os.environ.get("LAGLESS_TEST_BOOTSTRAP")
    if external:
        yield Cluster(external, embedded=False)
        return
    broker = EmbeddedBroker(tmp_path_factory.mktemp("broker"))
    state = broker.start(port=free_port())
    try:
        yield Cluster(state.bootstrap, embedded=True)
    finally:
        broker.stop()


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def topic_name() -> str:
    """A fresh topic name (not created)."""
    return unique("t")


@pytest.fixture
def group() -> str:
    """A fresh consumer group name."""
    return unique("g")


@pytest.fixture
def make_topic(cluster: Cluster) -> Callable[..., str]:
    """Create a fresh topic: ``make_topic(partitions=3)`` -> its name."""

    def make(partitions: int = 3, name: str | None = None) -> str:
        topic = name or unique("t")
        create_topic(cluster.conf, topic, partitions)
        return topic

    return make


def run_cli(
    *args: str,
    cluster: Cluster | None = None,
    timeout: float = 120,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    stdin: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run the installed ``lagless`` command (in ``cwd`` if given); bootstrap from
    ``cluster`` if given."""
    full_env = {**os.environ, **(env or {})}
    full_env.pop("LAGLESS_BOOTSTRAP", None)
    if cluster is not None:
        full_env["LAGLESS_BOOTSTRAP"] = cluster.bootstrap
    return subprocess.run(
        [LAGLESS, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=full_env,
        check=False,
        cwd=cwd,
        input=stdin,
    )


@pytest.fixture(scope="session")
def mock_bootstrap() -> Iterator[str]:
    """librdkafka's mock cluster (KIP-848, faithful group protocols) in a child process: its
    bootstrap. Skips with the reason if it cannot start."""
    from lagless.broker.mock import MockCluster
    from lagless.errors import ClusterError

    mock = MockCluster()
    try:
        bootstrap = mock.start()
    except ClusterError as exc:
        pytest.skip(f"librdkafka's mock cluster cannot start here: {exc}")
    try:
        yield bootstrap
    finally:
        mock.stop()
