"""Batch writes to ``lagless-kafka`` in Spark's default save mode run as append, like Spark's
own kafka sink (:mod:`lagless.spark.connector.save_mode`), however the writer was built; other
formats
and modes keep Spark's behaviour. A real local SparkSession and the test broker."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, DataFrameWriter, SparkSession

from lagless.kafka.reader import read_all
from lagless.spark.connector import save_mode
from tests.conftest import Cluster
from tests.integration.spark_helpers import spark

pytestmark = [pytest.mark.integration, pytest.mark.spark]

__all__ = ["spark"]


@pytest.fixture
def df(spark: SparkSession) -> DataFrame:
    return spark.createDataFrame([("a",), ("b",)], "value string")


def values(cluster: Cluster, topic: str) -> list[bytes]:
    return sorted(m.value() for m in read_all(cluster.conf, topic))


def test_default_save_mode_writes_like_sparks_kafka_sink(
    df: DataFrame, cluster: Cluster, make_topic: Callable[..., str], tmp_path: Path
) -> None:
    topic = make_topic(partitions=1)
    servers = {"kafka.bootstrap.servers": cluster.bootstrap, "topic": topic}

    def kafka(fmt: str = "lagless-kafka") -> DataFrameWriter:
        return df.write.format(fmt).options(**servers)

    kafka().save()  # Spark's default mode (ErrorIfExists), as for kafka
    kafka("LAGLESS-Kafka").save()  # Spark looks the name up case-insensitively: so does the wrap
    kafka().mode("append").save()
    kafka().mode("overwrite").mode("error").save()  # the last mode set counts
    kafka().mode("ErrorIfExists").mode(None).save()  # None leaves the mode as it was
    kafka().mode("default").save()
    kafka("json").format("lagless-kafka").save()  # the last format set counts
    df.write.save(format="LAGLESS-KAFKA", **servers)  # format and options given to save
    df.write.format("parquet").option("topic", topic).save(
        format="lagless-kafka", mode="error", **{"kafka.bootstrap.servers": cluster.bootstrap}
    )
    # a writer whose JVM side was set up without the Python wrap's knowledge (as one made
    # before install() ran): what save() reads is the JVM writer's state
    writer = df.write
    writer._jwrite = writer._jwrite.format("lagless-kafka").options(servers)
    writer.save()
    assert values(cluster, topic) == [b"a"] * 10 + [b"b"] * 10  # ten saves, each written once
    with pytest.raises(Exception, match="overwrite is not allowed for Kafka"):
        kafka().mode("overwrite").save()
    with pytest.raises(Exception, match="UNSUPPORTED_DATA_SOURCE_SAVE_MODE"):
        kafka().mode("ignore").save()
    with pytest.raises(Exception, match="overwrite is not allowed for Kafka"):
        kafka().save(mode="overwrite")
    with pytest.raises(Exception, match=r"Unknown save mode|INVALID_SAVE_MODE"):
        kafka().save(mode="sometimes")
    assert len(values(cluster, topic)) == 20
    # other formats keep Spark's default: an existing path is an error
    (tmp_path / "out").mkdir()
    with pytest.raises(Exception, match="already exists"):
        df.write.format("json").save(str(tmp_path / "out"))
    with pytest.raises(Exception, match="already exists"):
        df.write.format("lagless-kafka").format("json").save(str(tmp_path / "out"))
    with pytest.raises(Exception, match="already exists"):
        df.write.format("lagless-kafka").save(str(tmp_path / "out"), format="json")


def test_sources_default_names_lagless_kafka(
    spark: SparkSession, df: DataFrame, cluster: Cluster, make_topic: Callable[..., str]
) -> None:
    """``spark.sql.sources.default`` = lagless-kafka: ``df.write.save()`` with no format."""
    topic = make_topic(partitions=1)
    previous = spark.conf.get("spark.sql.sources.default")
    spark.conf.set("spark.sql.sources.default", "lagless-kafka")
    try:
        writer = df.write
    finally:
        spark.conf.set("spark.sql.sources.default", previous)
    writer.option("kafka.bootstrap.servers", cluster.bootstrap).option("topic", topic).save()
    assert values(cluster, topic) == [b"a", b"b"]


def test_install_wraps_once_from_many_threads(spark: SparkSession) -> None:
    """Concurrent install() calls (the session's already ran): save is wrapped once."""
    threads = [threading.Thread(target=save_mode.install) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    original = DataFrameWriter.save.__wrapped__  # type: ignore[attr-defined]
    assert not hasattr(original, "__wrapped__"), "save is wrapped more than once"
    assert original.__module__ == "pyspark.sql.readwriter"
