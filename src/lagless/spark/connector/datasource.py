"""The ``lagless-kafka`` data source: Kafka for PySpark, read and write, stream and batch.

Register it once per session (``lagless.spark.connector.session.register(spark)`` does), then::

    spark.readStream.format("lagless-kafka")
        .option("kafka.bootstrap.servers", "127.0.0.1:9092")
        .option("subscribe", "events")
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", 100_000)
        .load()

and ``df.writeStream.format("lagless-kafka").option("topic", "out")`` (at-least-once).
Options: :mod:`lagless.spark.connector.options`.
"""

from __future__ import annotations

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
)
from pyspark.sql.types import StructType

from lagless.errors import ConfigError
from lagless.spark.connector.schema import kafka_schema

FORMAT = "lagless-kafka"


class LaglessKafkaDataSource(DataSource):
    """Spark's Kafka source and sink, in Python, on librdkafka."""

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> StructType:
        headers = str(self.options.get("includeheaders", "false")).strip().lower()
        return kafka_schema(include_headers=headers in {"true", "1", "yes"})

    # Readers and writers are imported where they are made: each Python process Spark starts
    # for a data source (schema, stream runner, read/write planning) then imports only its
    # own side (no producer in a reader's process, no Arrow kernels in the stream runner).

    def reader(self, schema: StructType) -> DataSourceReader:
        from lagless.spark.connector.options import SourceOptions
        from lagless.spark.connector.source import KafkaBatchReader

        return KafkaBatchReader(SourceOptions.parse(self.options), schema)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:  # noqa: N802
        from lagless.spark.connector.options import SourceOptions
        from lagless.spark.connector.source import KafkaStreamReader

        return KafkaStreamReader(SourceOptions.parse(self.options), schema)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        from lagless.spark.connector.options import SinkOptions
        from lagless.spark.connector.sink import KafkaBatchWriter

        if overwrite:
            raise ConfigError(
                "save mode overwrite is not allowed for Kafka: use append (the default)"
            )
        return KafkaBatchWriter(SinkOptions.parse(self.options), schema)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:  # noqa: N802
        from lagless.spark.connector.options import SinkOptions
        from lagless.spark.connector.sink import KafkaStreamWriter

        return KafkaStreamWriter(SinkOptions.parse(self.options), schema)
