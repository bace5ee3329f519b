"""Helpers for group tests on librdkafka's mock cluster (no admin API there): committed
offsets and ends read with plain consumers, and the lines a ledger has."""

from __future__ import annotations

from pathlib import Path

from confluent_kafka import Consumer, TopicPartition

from lagless.broker.mock import AUTO_PARTITIONS


def lines(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def mock_committed(bootstrap: str, group: str, topic: str) -> dict[int, int]:
    reader = Consumer({"bootstrap.servers": bootstrap, "group.id": group})  # no admin API
    try:
        back = reader.committed(
            [TopicPartition(topic, p) for p in range(AUTO_PARTITIONS)], timeout=10
        )
        return {tp.partition: tp.offset for tp in back}
    finally:
        reader.close()


def mock_ends(bootstrap: str, topic: str) -> dict[int, int]:
    reader = Consumer({"bootstrap.servers": bootstrap, "group.id": "ends"})
    try:
        return {
            p: reader.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
            for p in range(AUTO_PARTITIONS)
        }
    finally:
        reader.close()
