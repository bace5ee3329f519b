"""Kafka on PySpark (docs/spark.md).

- :mod:`lagless.spark.connector`: the reusable ``lagless-kafka`` data source (source, sink,
  options, offsets, fetch, the C reader, the session); it knows nothing of any record format.
- :mod:`lagless.spark.pipeline`: the general pipeline over it (parse and validate, DLQ,
  exactly-once Parquet, windowed aggregates, progress).
- :mod:`lagless.spark.examples`: uses of the pipeline (the demo's events).
"""
