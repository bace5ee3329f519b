"""Producing records: workloads, producer profiles, delivery accounting."""
