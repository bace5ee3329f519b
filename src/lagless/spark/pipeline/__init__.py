"""The general pipeline on Spark Structured Streaming: Kafka -> parse and validate -> the
user's transformation -> exactly-once Parquet (+ a Kafka topic), a DLQ, windowed aggregates,
group commits and progress (:mod:`lagless.spark.pipeline.run`)."""

from lagless.spark.pipeline.run import (
    PipelineConfig,
    PipelineSummary,
    RawFactory,
    Trigger,
    kafka_stream,
    prepare_topics,
    require_jvm_kafka,
    run_pipeline,
    short_error,
)

__all__ = [
    "PipelineConfig",
    "PipelineSummary",
    "RawFactory",
    "Trigger",
    "kafka_stream",
    "prepare_topics",
    "require_jvm_kafka",
    "run_pipeline",
    "short_error",
]
