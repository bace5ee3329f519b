"""Processes mode holds the budgets as threads do: a hung handler does not hang shutdown,
retry backoffs are cut short at stop, a dead worker process is one line naming its record."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from lagless.engine import run_engine
from lagless.errors import LaglessError
from lagless.kafka.admin import committed_offsets
from tests.conftest import Cluster, run_cli
from tests.integration.engine_helpers import GROUP_FLAGS, REPO, engine_config, produce_jobs
from tests.integration.engine_helpers.hostile import die, fail, hang

pytestmark = pytest.mark.integration


def stop_after(seconds: float) -> threading.Event:
    stop = threading.Event()
    threading.Timer(seconds, stop.set).start()
    return stop


@pytest.mark.parametrize(
    ("handler", "options"),
    [
        (hang, {"shutdown_budget_s": 1.0}),
        (fail, {"retries": 5, "retry_backoff_s": 20.0, "retry_backoff_max_s": 20.0}),
    ],
    ids=["hung-handler", "long-backoff"],
)
def test_stop_in_processes_mode_holds_the_budget_and_commits_nothing_unfinished(
    cluster: Cluster,
    make_topic: Callable[..., str],
    group: str,
    handler: Callable[..., None],
    options: dict[str, float],
) -> None:
    topic = make_topic(partitions=1)
    produce_jobs(cluster.conf, topic, 10)
    config = engine_config(
        topic, group, processes=2, max_in_flight=4, ordering="unordered", until_idle_s=None,
        **options,
    )  # fmt: skip
    begun = time.monotonic()
    summary = run_engine(cluster.conf, config, handler, stop=stop_after(8.0))
    took = time.monotonic() - begun
    assert took < 20, f"stop took {took:.1f} s"
    assert summary.processed == 0
    assert committed_offsets(cluster.conf, group, [topic]).get((topic, 0), 0) == 0


def test_a_dead_worker_process_fails_the_run_with_the_record_coordinates(
    cluster: Cluster, make_topic: Callable[..., str], group: str
) -> None:
    topic = make_topic(partitions=1)
    produce_jobs(cluster.conf, topic, 10)
    config = engine_config(topic, group, processes=1, max_in_flight=1, ordering="partition")
    with pytest.raises(LaglessError, match=rf"{topic}\[0\]@3.*process died"):
        run_engine(cluster.conf, config, die)
    assert committed_offsets(cluster.conf, group, [topic]).get((topic, 0), 0) == 3


def test_a_dead_worker_process_is_one_line_on_the_command_line(
    cluster: Cluster, make_topic: Callable[..., str], group: str
) -> None:
    topic = make_topic(partitions=1)
    produce_jobs(cluster.conf, topic, 10)
    result = run_cli(
        "consume", "--topic", topic, "--group", group, "--handler",
        "tests.integration.engine_helpers.hostile:die", "--processes", "1",
        "--max-in-flight", "1", "--on-failure", "stop", *GROUP_FLAGS,
        cluster=cluster, cwd=REPO,
    )  # fmt: skip
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    assert f"{topic}[0]@3" in result.stderr and "process died" in result.stderr
