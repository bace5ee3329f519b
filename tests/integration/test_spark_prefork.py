"""The source runner forked from a warm server (lagless.spark.connector.prefork): in a real local
SparkSession against the real broker, and the server and launcher client as processes."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from lagless.spark.connector import prefork
from tests.conftest import Cluster, wait_for
from tests.integration.spark_helpers import produce_events, spark

pytestmark = [pytest.mark.integration, pytest.mark.spark]
__all__ = ["spark"]

CLIENT = str(Path(prefork.__file__).with_name("prefork_client.py"))
RUNNER_ARGS = ["-m", prefork.RUNNER]


def rows_in(spark: SparkSession, table: str) -> int:
    count: int = spark.sql(f"SELECT count(*) FROM {table}").collect()[0][0]
    return count


def children_of(pid: int) -> set[int]:
    out = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(stat[1]) == pid and stat[0] != "Z":
                out.add(int(entry.name))
    return out


def test_a_query_runs_its_source_runner_forked_from_the_server(
    spark: SparkSession, cluster: Cluster, make_topic: Callable[..., str], tmp_path: Path
) -> None:
    server = prefork._Current.server
    assert server is not None and server.alive(), "local sessions start the fork server"
    assert spark.conf.get("spark.pyspark.python") == str(server.launcher)
    wait_for(server.socket_path.exists, 30, "the server listens")
    topic = make_topic(partitions=2)
    produced = produce_events(cluster.conf, topic, 300, bad_fraction=0.0)
    before = children_of(server.process.pid)
    query = (
        spark.readStream.format("lagless-kafka")
        .option("kafka.bootstrap.servers", cluster.bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .load()
        .selectExpr("CAST(value AS STRING) AS v")
        .writeStream.format("memory")
        .queryName("prefork_rows")
        .option("checkpointLocation", str(tmp_path / "ck"))
        .trigger(processingTime="500 milliseconds")
        .start()
    )
    try:
        wait_for(lambda: bool(children_of(server.process.pid) - before), 30, "a forked runner")
        wait_for(
            lambda: rows_in(spark, "prefork_rows") >= produced.total,
            60,
            "every record read",
        )
        ids = {
            r[0]
            for r in spark.sql(
                "SELECT get_json_object(v, '$.order_id') FROM prefork_rows"
            ).collect()
        }
        assert ids == set(produced.valid)
    finally:
        query.stop()
    # the runner ends with its query, and the server reaps it
    wait_for(lambda: not (children_of(server.process.pid) - before), 15, "the runner reaped")
    assert query.exception() is None


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """A fork server of its own (not the session's)."""
    path = str(tmp_path / "runner.sock")
    process = subprocess.Popen(
        [sys.executable, "-m", "lagless.spark.connector.prefork", path], stdin=subprocess.PIPE
    )
    wait_for(lambda: os.path.exists(path), 30, "the server listens")
    yield process, path
    if process.stdin is not None:
        process.stdin.close()
    process.wait(timeout=10)


def client(path: str, jvm_port: int) -> subprocess.Popen[bytes]:
    """The launcher's client, asked for Spark's source runner, which is to connect back to a
    JVM at ``jvm_port`` (the environment Spark gives it)."""
    env = {
        "PATH": os.environ["PATH"],
        "PYTHON_WORKER_FACTORY_PORT": str(jvm_port),
        "PYTHON_WORKER_FACTORY_SECRET": "s",
    }
    return subprocess.Popen(
        [sys.executable, "-I", "-S", CLIENT, path, sys.executable, *RUNNER_ARGS],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def test_the_child_takes_the_launchers_streams_environment_and_exit_status(
    server: tuple[subprocess.Popen[bytes], str],
) -> None:
    _, path = server
    # The runner connects back to the JVM at the port in its environment: here a port nobody
    # listens on, so it fails, on the stderr it was handed, and the launcher exits with its
    # status.
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()
    done = client(path, port)
    _, err = done.communicate(timeout=30)
    assert done.returncode == 1
    assert b"Connection refused" in err and b"python_streaming_source_runner" in err


def launch(server_pid: int, path: str, jvm_port: int) -> tuple[subprocess.Popen[bytes], int]:
    """A launcher's client and the child the server forked for it."""
    before = children_of(server_pid)
    launcher = client(path, jvm_port)
    wait_for(lambda: bool(children_of(server_pid) - before), 30, "a forked child")
    (child,) = children_of(server_pid) - before
    return launcher, child


def test_a_signal_to_the_launcher_reaches_the_child_and_a_killed_launcher_takes_it_along(
    server: tuple[subprocess.Popen[bytes], str],
) -> None:
    process, path = server
    # A "JVM" that accepts the runner's connection and never answers: the runner waits.
    jvm = socket.socket()
    jvm.bind(("127.0.0.1", 0))
    jvm.listen(4)
    try:
        for how in (signal.SIGTERM, signal.SIGKILL):
            launcher, child = launch(process.pid, path, jvm.getsockname()[1])
            time.sleep(0.3)
            assert launcher.poll() is None and Path(f"/proc/{child}").exists()
            launcher.send_signal(how)
            # ended by the signal, as the interpreter itself would have been (the child got
            # the SIGTERM and died of it; a SIGKILL ends the launcher at once)
            assert launcher.wait(timeout=10) == -how
            wait_for(
                lambda: child not in children_of(process.pid),  # noqa: B023 - waited for here
                10,
                f"the child gone after {how.name} to its launcher",
            )
    finally:
        jvm.close()


def test_the_launcher_runs_the_interpreter_itself_when_no_server_listens(tmp_path: Path) -> None:
    program = "import sys; print('ran'); sys.exit(7)"
    done = subprocess.run(
        [
            sys.executable,
            "-I",
            "-S",
            CLIENT,
            str(tmp_path / "none.sock"),
            sys.executable,
            "-c",
            program,
        ],
        check=False,
        capture_output=True,
        timeout=30,
    )
    assert (done.returncode, done.stdout) == (7, b"ran\n")
    (line,) = done.stderr.decode().splitlines()  # said, in one line
    assert line.startswith("lagless: Spark's source runner starts in a fresh interpreter"), line
    assert "none.sock" in line


def test_the_server_exits_when_its_driver_goes(
    server: tuple[subprocess.Popen[bytes], str],
) -> None:
    process, _ = server
    assert process.stdin is not None
    process.stdin.close()
    assert process.wait(timeout=10) == 0


def test_a_server_started_for_a_session_leaves_nothing_when_its_driver_is_killed() -> None:
    started = prefork.start(sys.executable)
    wait_for(started.socket_path.exists, 30, "the server listens")
    assert started.launcher.exists()
    assert started.process.stdin is not None
    started.process.stdin.close()  # what SIGKILL of the driver does to the pipe
    assert started.process.wait(timeout=10) == 0
    assert not started.directory.exists()


def test_a_server_that_cannot_fork_safely_keeps_the_launcher_until_its_driver_goes(
    tmp_path: Path,
) -> None:
    directory = tmp_path / "own"
    directory.mkdir()
    launcher = directory / "python"
    launcher.write_text("#!/bin/sh\n")
    program = (
        "import sys, lagless.spark.connector.prefork as p; p.WARM = ('lagless_no_such_module',); "
        "p.serve(sys.argv[1], owns_directory=True)"
    )
    process = subprocess.Popen(
        [sys.executable, "-c", program, str(directory / "runner.sock")],
        stdin=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    time.sleep(3)  # an import failure is quick: the server has given up by now
    assert process.poll() is None, "it waits for its driver"
    assert launcher.exists() and not (directory / "runner.sock").exists()
    assert process.stdin is not None
    process.stdin.close()
    assert process.wait(timeout=10) == 0
    assert not directory.exists()
    assert process.stderr is not None
    assert b"cannot import its modules" in process.stderr.read()
