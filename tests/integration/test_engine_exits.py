"""Numbers that mean what they say and exits that say what happened: ``--count N`` finishes
and commits exactly N; ``seconds`` is the processing span beside ``join_s`` and ``wall_s``;
a failure exit still prints the summary (``error`` set with ``--json``); a second Ctrl-C
stops at once with exit 130; the plain summary is one line however narrow the output."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from lagless.engine import Progress, Record, run_engine
from lagless.kafka.admin import committed_offsets
from tests.conftest import Cluster, run_cli
from tests.integration.engine_helpers import (
    GROUP_FLAGS,
    LEDGER_HANDLER,
    Ledger,
    consume_cmd,
    ctrl_c_twice,
    engine_config,
    finish,
    hung_yet,
    produce_jobs,
    spawn,
    wait_for_lines,
)

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("count", [1, 400])
def test_count_finishes_and_commits_exactly_n(
    cluster: Cluster, make_topic: Callable[..., str], group: str, count: int
) -> None:
    topic = make_topic(partitions=3)
    produce_jobs(cluster.conf, topic, 1000)
    ledger = Ledger()

    def handle(record: Record) -> None:
        ledger.add(record, time.monotonic())

    config = engine_config(
        topic, group, ordering="unordered", max_in_flight=64, count=count, until_idle_s=None
    )
    summary = run_engine(cluster.conf, config, handle)
    assert summary.processed == count
    assert sum(ledger.ids.values()) == count
    assert sum(committed_offsets(cluster.conf, group, [topic]).values()) == count


def test_seconds_is_the_processing_span_beside_join_and_wall(
    cluster: Cluster, make_topic: Callable[..., str], group: str
) -> None:
    topic = make_topic(partitions=2)
    produce_jobs(cluster.conf, topic, 300, sleep_ms=(1, 2))
    config = engine_config(topic, group, ordering="unordered", max_in_flight=4, until_idle_s=1.0)
    begun = time.monotonic()
    seen: list[Progress] = []
    summary = run_engine(cluster.conf, config, lambda r: time.sleep(0.002), on_progress=seen.append)
    wall = time.monotonic() - begun
    assert summary.processed == 300
    assert summary.join_s is not None and 0 < summary.join_s < summary.wall_s <= wall + 0.01
    assert 0 < summary.seconds <= summary.wall_s - summary.join_s - 1.0, summary
    assert summary.records_per_s == pytest.approx(300 / summary.seconds, rel=0.05)
    live = [p for p in seen if p.processed == 300]
    assert live, "a progress snapshot after the last record"
    assert live[0].records_per_s > 300 / (live[0].seconds - summary.join_s), (
        "the live rate counts from the first record received, not from the start"
    )
    if cluster.embedded:  # Tansu holds the join for session.timeout.ms / 2 (3 s here)
        assert summary.join_s >= 2.0 and summary.seconds < summary.join_s


def test_a_failure_exit_prints_the_summary_with_the_error(
    cluster: Cluster, make_topic: Callable[..., str], group: str, tmp_path: Path
) -> None:
    topic = make_topic(partitions=1)
    ids = produce_jobs(cluster.conf, topic, 20)  # one partition: ids[0] is offset 0
    proc = spawn(
        consume_cmd(
            cluster.bootstrap, topic, group, "--handler", LEDGER_HANDLER, "--ordering",
            "partition", "--retries", "0", "--on-failure", "stop", "--json",
        ),
        tmp_path / "ledger",
        LAGLESS_TEST_POISON=ids[0],
    )  # fmt: skip
    code, out, err = finish(proc, timeout=60)
    assert code == 1, err[-2000:]
    doc = json.loads(out)
    assert doc["processed"] == 0 and f"{topic}[0]@0" in doc["error"], doc
    assert doc["error"] in err


def test_a_second_ctrl_c_stops_at_once_with_exit_130(
    cluster: Cluster, make_topic: Callable[..., str], group: str, tmp_path: Path
) -> None:
    topic = make_topic(partitions=1)
    produce_jobs(cluster.conf, topic, 10)
    ledger = tmp_path / "ledger"
    proc = spawn(
        consume_cmd(
            cluster.bootstrap, topic, group, "--handler",
            "tests.integration.engine_helpers.hostile:note_then_hang", "--ordering", "unordered",
            "--max-in-flight", "4", "--shutdown-budget", "120", "--on-failure", "stop", "--json",
        ),
        ledger,
    )  # fmt: skip
    code, out, err = ctrl_c_twice(proc, lambda: wait_for_lines(ledger, 4, timeout=0.1) >= 4)
    assert code == 130, err[-2000:]
    assert json.loads(out)["processed"] == 0
    assert committed_offsets(cluster.conf, group, [topic]).get((topic, 0), 0) == 0


def test_a_second_ctrl_c_cuts_short_a_call_hanging_on_the_poll_thread(
    cluster: Cluster, make_topic: Callable[..., str], group: str, tmp_path: Path
) -> None:
    """A batch handler measured fast runs its calls on the poll thread (engine.inline); when
    one of them hangs there, the second Ctrl-C still stops at once: exit 130, what finished
    committed, the hung record not."""
    topic = make_topic(partitions=1)
    produce_jobs(cluster.conf, topic, 2000)
    ledger = tmp_path / "ledger"
    proc = spawn(
        consume_cmd(
            cluster.bootstrap, topic, group, "--handler",
            "tests.integration.engine_helpers.poll_thread:note_then_hang_on_the_poll_thread",
            "--batch-size", "1", "--ordering", "unordered", "--shutdown-budget", "120",
            "--on-failure", "stop", "--json",
        ),
        ledger,
    )  # fmt: skip
    code, out, err = ctrl_c_twice(proc, lambda: hung_yet(ledger))
    assert code == 130, err[-2000:]
    lines = ledger.read_text().splitlines()
    hung = next(int(line.split()[1]) for line in lines if line.startswith("hang"))
    finished = {int(line) for line in lines if not line.startswith("hang")}
    assert json.loads(out)["processed"] == len(finished), "every finished call counted"
    assert set(range(hung)) <= finished, "the calls before the hung one all finished"
    assert committed_offsets(cluster.conf, group, [topic]).get((topic, 0), 0) == hung


def test_the_plain_summary_is_one_line_when_piped(
    cluster: Cluster, make_topic: Callable[..., str], group: str
) -> None:
    topic = make_topic(partitions=1)
    produce_jobs(cluster.conf, topic, 5)
    result = run_cli(
        "consume", "--topic", topic, "--group", group, "--handler", "noop", "--count", "5",
        "--on-failure", "stop", *GROUP_FLAGS, cluster=cluster,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 1 and len(lines[0]) > 80, lines
    assert lines[0].startswith("processed 5 records") and "of processing" in lines[0]
