"""Fixtures: a real broker for the session, fresh topic and group names per test.

The broker is the embedded Tansu started on a free port, or the cluster named by
``LAGLESS_TEST_BOOTSTRAP`` (e.g. a real Apache Kafka) when that variable is set.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from lagless.kafka.admin import create_topic
from lagless.testing import TestKafka

if TYPE_CHECKING:
    from lagless.broker.mock import MockSettings

VENV_BIN = Path(sys.executable).parent
LAGLESS = str(VENV_BIN / "lagless")
SPARK_CONF = Path(__file__).parent / "spark_conf"
# C1 only, serial GC, no verification of the jars' classes: as tests/spark_conf/spark-defaults.conf
TEST_JVM_FLAGS = (
    "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
    " -XX:+UnlockDiagnosticVMOptions -XX:-BytecodeVerificationRemote"
)


def pytest_configure(config: pytest.Config) -> None:
    """Every Spark the suite starts (in-process sessions, the CLI runs it spawns, a standalone
    cluster's daemons) reads tests/spark_conf/: JVM flags for short runs on small data, which
    start a SparkSession and run a small job ~10 s faster on 2 cores. Set in this process's
    environment, which the suite's subprocesses inherit; a SPARK_CONF_DIR already set wins."""
    os.environ.setdefault("SPARK_CONF_DIR", str(SPARK_CONF))
    os.environ.setdefault("SPARK_LAUNCHER_OPTS", TEST_JVM_FLAGS)  # spark-class's launcher JVM
    os.environ.setdefault("SPARK_DAEMON_JAVA_OPTS", TEST_JVM_FLAGS)  # standalone master, worker
    as_in_a_terminal()


def as_in_a_terminal() -> None:
    """SIGINT at Python's default and not blocked, here and so in every process the suite
    starts, as a terminal's foreground command has it: a pytest started in the background by a
    non-interactive shell (``make test &`` in a script, as a CI runner may) ignores SIGINT
    (POSIX), every process it started would too, and lagless keeps an ignored SIGINT ignored
    (:mod:`lagless.signals`): no test's Ctrl-C would reach it. Each xdist worker runs this."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def ignoring_sigint(*command: str) -> list[str]:
    """``command`` started with SIGINT ignored, as a non-interactive shell starts a job in the
    background (``lagless consume ... &`` in a script)."""
    code = (
        "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_IGN); "
        "os.execv(sys.argv[1], sys.argv[1:])"
    )
    return [sys.executable, "-c", code, *command]


# The files that take longest, slowest first (from ``--durations``), Spark's apart from each
# other: ``--dist loadfile`` hands files to workers in collection order, so a slow file
# collected last would run on alone at the end while the other workers wait.
SLOW_FILES = (
    "test_spark_cluster.py", "test_lab.py", "test_spark_general.py",
    "test_engine_rebalance_mock.py", "test_spark_pipeline.py", "test_ui_resilience.py",
    "test_spark_stop.py", "test_cli_groups.py", "test_docs_examples.py", "test_lean_install.py",
    "test_spark_failures.py", "test_engine_idle_group.py", "test_cli_shapes.py",
    "test_lab_deployment.py", "test_app_cli.py", "test_spark_prefork.py",
)  # fmt: skip


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run the slowest files first (see ``SLOW_FILES``); the others keep their order."""
    rank = {name: i for i, name in enumerate(SLOW_FILES)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


@dataclass(frozen=True)
class Cluster(TestKafka):
    """A reachable Kafka cluster for tests (``settings``, ``conf``, ``topic()``, ``produce()``,
    ``read()`` from the shipped plugin's :class:`lagless.testing.TestKafka`)."""

    embedded: bool = True


@pytest.fixture(scope="session")
def cluster(lagless_bootstrap: str) -> Cluster:
    """The plugin's session broker: LAGLESS_TEST_BOOTSTRAP, else an embedded one."""
    return Cluster(lagless_bootstrap, embedded=not os.environ.get("LAGLESS_TEST_BOOTSTRAP"))


def wait_for(check: Callable[[], bool], timeout: float, what: str) -> None:
    """Wait until ``check()`` is true; an AssertionError naming ``what`` after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"{what}: not within {timeout} s"
        time.sleep(0.05)


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
    yield from serve_mock()


def serve_mock(settings: MockSettings | None = None) -> Iterator[str]:
    """A mock cluster (with ``settings``) started in a child process: its bootstrap, then
    stopped (for a fixture to yield from). Skips with the reason if it cannot start."""
    from lagless.broker.mock import MockCluster
    from lagless.errors import ClusterError

    mock = MockCluster() if settings is None else MockCluster(settings=settings)
    try:
        bootstrap = mock.start()
    except ClusterError as exc:
        pytest.skip(f"librdkafka's mock cluster cannot start here: {exc}")
    try:
        yield bootstrap
    finally:
        mock.stop()
