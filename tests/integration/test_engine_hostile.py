"""Failure paths found by hostile testing, on the real broker: handlers that raise
``SystemExit``, handler modules in the working directory or raising at import, bad topic
names, null header values kept ``None`` in records and dead letters."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from lagless.engine import Record, run_engine
from lagless.errors import RecordError
from lagless.kafka.admin import committed_offsets
from lagless.kafka.reader import read_all
from lagless.kafka.records import header_pairs
from lagless.produce.workloads import OutRecord
from tests.conftest import Cluster, run_cli
from tests.integration.engine_helpers import (
    GROUP_FLAGS,
    engine_config,
    produce_jobs,
    produce_records,
)

pytestmark = pytest.mark.integration


def test_a_handler_raising_system_exit_fails_its_record_and_stop_fires(
    cluster: Cluster, make_topic: Callable[..., str], group: str
) -> None:
    topic = make_topic(partitions=1)
    produce_jobs(cluster.conf, topic, 30)

    def handle(record: Record) -> None:
        if record.offset == 5:
            raise SystemExit(3)

    config = engine_config(
        topic, group, ordering="partition", on_failure="stop", retries=1, retry_backoff_s=0.01
    )
    with pytest.raises(RecordError, match="after 2 attempts: SystemExit: 3") as info:
        run_engine(cluster.conf, config, handle)
    assert info.value.coordinates.offset == 5
    assert committed_offsets(cluster.conf, group, [topic]).get((topic, 0), 0) == 5


def test_a_handler_module_in_the_working_directory_is_imported(
    cluster: Cluster, make_topic: Callable[..., str], group: str, tmp_path: Path
) -> None:
    topic = make_topic(partitions=1)
    produce_jobs(cluster.conf, topic, 5)
    (tmp_path / "myhandler.py").write_text(
        "def handle(record):\n    open('seen', 'a').write(str(record.offset) + '\\n')\n"
    )
    result = run_cli(
        "consume", "--topic", topic, "--group", group, "--handler", "myhandler:handle",
        "--on-failure", "stop", "--count", "5", "--json", *GROUP_FLAGS,
        cluster=cluster, cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "seen").read_text().split() == ["0", "1", "2", "3", "4"]


def test_a_handler_module_raising_at_import_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "broken.py").write_text("x = 1\nraise ZeroDivisionError('bad config')\n")
    result = run_cli(
        "consume", "--topic", "t", "--group", "g", "--handler", "broken:handle",
        "--on-failure", "stop", cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1, result.stderr
    assert "'broken' raised at import" in result.stderr
    assert "ZeroDivisionError: bad config" in result.stderr and "broken.py:2" in result.stderr


@pytest.mark.parametrize("name", ["", "a b", "x" * 250])
def test_a_bad_topic_name_is_a_usage_error(name: str) -> None:
    result = run_cli("consume", "--topic", name, "--group", "g", "--on-failure", "skip")
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("\n") == 1 and "is not a topic name" in result.stderr


def test_null_header_values_stay_none_in_records_and_dead_letters(
    cluster: Cluster, make_topic: Callable[..., str], group: str
) -> None:
    topic = make_topic(partitions=1)
    dlq = make_topic(partitions=1)
    headers: list[tuple[str, bytes | None]] = [("empty", b""), ("null", None)]
    produce_records(cluster.conf, topic, [OutRecord("r0", b"{}", None, headers)])
    seen: list[tuple[tuple[str, bytes | None], ...]] = []

    def handle(record: Record) -> None:
        seen.append(record.headers)
        raise ValueError("to the DLQ")

    config = engine_config(topic, group, dlq_topic=dlq, retries=0)
    summary = run_engine(cluster.conf, config, handle)
    assert summary.dlq == 1
    assert seen == [(("empty", b""), ("null", None))]
    (letter,) = list(read_all(cluster.conf, dlq))
    assert header_pairs(letter)[:2] == [("empty", b""), ("null", None)]
