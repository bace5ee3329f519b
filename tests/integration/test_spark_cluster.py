"""The same pipeline on a Spark standalone cluster (master + worker on 127.0.0.1), with
executors whose Python has lagless's dependencies but not lagless: lagless ships itself."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import Cluster, run_cli
from tests.integration.spark_helpers import dlq_ids, parquet_ids, pipeline_args, produce_events
from tests.integration.spark_helpers.standalone import python_without_lagless, standalone_cluster

pytestmark = [pytest.mark.integration, pytest.mark.spark, pytest.mark.slow]


def test_pipeline_on_a_standalone_cluster(
    cluster: Cluster, make_topic: Callable[..., str], group: str, tmp_path: Path
) -> None:
    topic = make_topic(partitions=2)
    produced = produce_events(cluster.conf, topic, 800, bad_fraction=0.05, seed=5)
    out, ck = tmp_path / "out", tmp_path / "ck"
    python = python_without_lagless(tmp_path / "worker-env")
    check = [str(python), "-c", "import pyarrow, confluent_kafka, pydantic, lagless"]
    missing = subprocess.run(check, capture_output=True, text=True, check=False)
    assert "No module named 'lagless'" in missing.stderr
    with standalone_cluster(tmp_path / "spark") as master:
        args = pipeline_args(
            topic,
            out,
            ck,
            "--group",
            group,
            "--json",
            "--conf",
            f"spark.pyspark.python={python}",
            "--conf",
            "spark.executor.memory=1g",
            master=master,
        )
        result = run_cli(*args, cluster=cluster, timeout=300)
        assert result.returncode == 0, result.stderr[-3000:]
        executors = list((tmp_path / "spark" / "work").glob("app-*/*/stderr"))
    assert executors, "no executor ran on the worker"
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["input_rows"] == 800
    assert summary["valid_rows"] == len(produced.valid)
    assert summary["dlq_rows"] == len(produced.malformed)
    ids = parquet_ids(out / "events")
    assert set(ids) == produced.valid and set(ids.values()) == {1}
    assert dlq_ids(cluster.conf, f"{topic}-dlq") == dict.fromkeys(produced.malformed, 1)
