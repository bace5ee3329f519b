"""``lagless deploy render`` asks the configured cluster for the partition count it caps the
replicas at, and says so; a topic the cluster lacks is one line."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from lagless.testing import TestKafka
from tests.conftest import run_cli
from tests.deploy.apps import README_SERVICE

pytestmark = pytest.mark.integration


def test_the_partition_count_comes_from_the_cluster(
    lagless_kafka: TestKafka, tmp_path: Path
) -> None:
    payments = lagless_kafka.topic(4)
    (tmp_path / "service.py").write_text(README_SERVICE.replace('"payments"', f'"{payments}"'))
    done = run_cli(
        "-b", lagless_kafka.bootstrap, "deploy", "render", "service:app", "--config-map",
        "kafka", "--replicas", "2", "--autoscale", cwd=tmp_path, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert f"partitions: 4 (the cluster, topic {payments}); at most 3 replicas" in done.stderr
    scaled = [d for d in yaml.safe_load_all(done.stdout) if d["kind"] == "ScaledObject"]
    assert scaled[0]["spec"]["maxReplicaCount"] == 3
    too_many = run_cli(
        "-b", lagless_kafka.bootstrap, "deploy", "render", "service:app", "--config-map",
        "kafka", "--replicas", "4", cwd=tmp_path, timeout=120,
    )  # fmt: skip
    assert too_many.returncode == 2
    assert f"needs more than 4 partitions (the cluster, topic {payments})" in too_many.stderr


def test_a_topic_the_cluster_lacks_is_one_line(lagless_kafka: TestKafka, tmp_path: Path) -> None:
    (tmp_path / "service.py").write_text(README_SERVICE.replace('"payments"', '"no-such-topic"'))
    done = run_cli(
        "-b", lagless_kafka.bootstrap, "deploy", "render", "service:app", "--config-map",
        "kafka", cwd=tmp_path, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert "topic 'no-such-topic' does not exist on" in done.stderr
    assert "give --partitions N" in done.stderr
