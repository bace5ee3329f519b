"""lagless: Kafka pipelines that keep consumer lag near zero."""

__version__ = "0.1.0"
