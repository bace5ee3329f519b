"""The same pipeline on a Spark standalone cluster (master + worker on 127.0.0.1, started
once for the module), with executors whose Python has lagless's dependencies but not
lagless: lagless ships itself. Two ways to give the executors that Python:
``spark.pyspark.python`` naming one on the worker, and a venv-pack archive shipped by Spark
(``spark.archives``)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import Cluster, run_cli
from tests.integration.spark_helpers import (
    Produced,
    dlq_ids,
    parquet_ids,
    pipeline_args,
    produce_events,
)
from tests.integration.spark_helpers.standalone import (
    SPARK_HOME,
    VENV_PACK,
    packed_env,
    probe_notes,
    python_without_lagless,
    standalone_cluster,
)

pytestmark = [pytest.mark.integration, pytest.mark.spark, pytest.mark.slow]


@pytest.fixture(scope="module")
def spark_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("spark")


@pytest.fixture(scope="module")
def master(spark_dir: Path) -> Iterator[str]:
    with standalone_cluster(spark_dir) as url:
        yield url


def run_on_cluster(
    master: str,
    cluster: Cluster,
    topic: str,
    group: str,
    tmp_path: Path,
    *conf: str,
    cwd: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """``lagless pipeline run`` on ``master``, output in ``tmp_path``, ``--conf`` each of
    ``conf`` (key=value)."""
    settings = [item for kv in (*conf, "spark.executor.memory=1g") for item in ("--conf", kv)]
    out, ck = tmp_path / "out", tmp_path / "ck"
    args = pipeline_args(topic, out, ck, "--group", group, "--json", *settings, master=master)
    return run_cli(*args, cluster=cluster, timeout=300, cwd=cwd)


def assert_not_importable(python: Path, module: str) -> None:
    check = [str(python), "-c", f"import {module}"]
    missing = subprocess.run(check, capture_output=True, text=True, check=False)
    assert f"No module named '{module}'" in missing.stderr, missing.stderr


def check_output(
    result: subprocess.CompletedProcess[str],
    produced: Produced,
    out: Path,
    cluster: Cluster,
    topic: str,
) -> None:
    """Every valid id once in Parquet, the malformed ones once in the DLQ, the counts."""
    assert result.returncode == 0, result.stderr[-3000:]
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["input_rows"] == produced.total
    assert summary["valid_rows"] == len(produced.valid)
    assert summary["dlq_rows"] == len(produced.malformed)
    ids = parquet_ids(out / "events")
    assert set(ids) == produced.valid and set(ids.values()) == {1}
    assert dlq_ids(cluster.conf, f"{topic}-dlq") == dict.fromkeys(produced.malformed, 1)


def test_pipeline_on_a_standalone_cluster(
    cluster: Cluster,
    make_topic: Callable[..., str],
    group: str,
    master: str,
    spark_dir: Path,
    tmp_path: Path,
) -> None:
    topic = make_topic(partitions=2)
    produced = produce_events(cluster.conf, topic, 200, bad_fraction=0.05, seed=5)
    python = python_without_lagless(tmp_path / "worker-env")
    assert_not_importable(python, "lagless")
    before = set(spark_dir.glob("work/app-*/*/stderr"))
    conf = f"spark.pyspark.python={python}"
    result = run_on_cluster(master, cluster, topic, group, tmp_path, conf)
    assert set(spark_dir.glob("work/app-*/*/stderr")) - before, "no executor ran on the worker"
    check_output(result, produced, tmp_path / "out", cluster, topic)


@pytest.mark.skipif(not VENV_PACK.exists(), reason="venv-pack is not installed (dev extra)")
def test_pipeline_with_a_packed_environment(
    cluster: Cluster,
    make_topic: Callable[..., str],
    group: str,
    master: str,
    spark_dir: Path,
    tmp_path: Path,
) -> None:
    """``--conf spark.archives=env.tar.gz#env --conf spark.pyspark.python=./env/bin/python``:
    the archive (venv-pack, copies of the packages the executors import, no lagless, no
    pyspark) is unpacked by Spark in the executor's directory, and its Python runs there;
    the driver runs ``./env/bin/python`` too, from where lagless runs, so the archive is
    unpacked there as well (as docs/spark.md says)."""
    topic = make_topic(partitions=2)
    produced = produce_events(cluster.conf, topic, 200, bad_fraction=0.05, seed=6)
    probes = tmp_path / "probes"
    probes.mkdir()
    archive, packages = packed_env(tmp_path / "pack")
    assert {"pyarrow", "pandas", "numpy", "confluent-kafka"} <= {p.lower() for p in packages}
    driver = tmp_path / "driver"
    (driver / "env").mkdir(parents=True)
    subprocess.run(["tar", "-xzf", str(archive), "-C", str(driver / "env")], check=True)
    for module in ("lagless", "pyspark"):  # neither is in the archive
        assert_not_importable(driver / "env" / "bin" / "python", module)
    result = run_on_cluster(
        master,
        cluster,
        topic,
        group,
        tmp_path,
        f"spark.archives={archive}#env",
        "spark.pyspark.python=./env/bin/python",
        f"spark.executorEnv.LAGLESS_PROBE_DIR={probes}",
        cwd=driver,
    )
    check_output(result, produced, tmp_path / "out", cluster, topic)
    # Every Python that lagless's work ran in (the probe's lines: the driver's own Python
    # workers, which plan the source and the sink, and the executors') is the archive's: the
    # copy unpacked in the directory it ran from, the driver's or its executor's on the worker.
    notes = probe_notes(probes)
    work = (spark_dir / "work").resolve()
    on_executors, on_driver = [], []
    for note in notes:
        cwd = Path(str(note["cwd"])).resolve()
        assert Path(str(note["prefix"])).resolve() == cwd / "env", note
        if cwd.parent.parent == work:  # work/app-ID/EXECUTOR-ID
            on_executors.append((cwd, note))
        else:
            assert cwd == driver.resolve(), note
            on_driver.append(note)
    assert on_executors, "no executor Python started with the archive's probe"
    assert on_driver, "the driver's Python workers did not run ./env/bin/python"
    # There, lagless comes from the zip the driver shipped (addPyFile, fetched into the
    # executor's directory), pyspark from the worker's Spark (SPARK_HOME/python/lib).
    lagless = [(cwd, str(n["origin"])) for cwd, n in on_executors if n["module"] == "lagless"]
    assert lagless, "no executor Python imported lagless"
    for cwd, origin in lagless:
        shipped = (cwd / (origin.split(".zip", 1)[0] + ".zip")).resolve()  # "./lagless-N.zip"
        assert shipped.parent == cwd and shipped.name.startswith("lagless-"), origin
    pyspark_zip = str(SPARK_HOME / "python" / "lib" / "pyspark.zip")
    pysparks = {str(n["origin"]) for _, n in on_executors if n["module"] == "pyspark"}
    assert pysparks and all(o.startswith(pyspark_zip) for o in pysparks), pysparks


def test_a_relative_executor_python_must_resolve_on_the_driver(
    cluster: Cluster, make_topic: Callable[..., str], tmp_path: Path
) -> None:
    """``./env/bin/python`` run from a directory without ``env``: one line, before Spark."""
    args = pipeline_args(
        make_topic(partitions=1),
        tmp_path / "out",
        tmp_path / "ck",
        "--conf",
        "spark.pyspark.python=./env/bin/python",
        master="spark://127.0.0.1:7077",
    )
    result = run_cli(*args, cluster=cluster, timeout=120, cwd=tmp_path)
    assert result.returncode != 0
    last = result.stderr.strip().splitlines()[-1]
    assert "spark.pyspark.python './env/bin/python' is not an executable from" in last, last
    assert "tar -xzf env.tar.gz -C env" in last
