"""Thin, typed helpers over confluent-kafka clients."""
