"""Kafka on PySpark: the ``lagless-kafka`` data source and the events pipeline (docs/spark.md)."""
