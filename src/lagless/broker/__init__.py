"""The embedded Kafka-compatible broker used locally and in tests."""
