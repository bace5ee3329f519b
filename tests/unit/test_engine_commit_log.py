"""A rebalance fails every in-flight asynchronous commit alike: each failure kind is logged
once per rebalance, not once per commit (unit level: the broker cannot fail commits on
demand)."""

from __future__ import annotations

import logging
from typing import Any, cast

import pytest
from confluent_kafka import Consumer, KafkaError, TopicPartition

from lagless.engine import Engine, EngineConfig


def engine() -> Engine:
    config = EngineConfig.build(topics=("t",), group="g", on_failure="skip")
    return Engine({"bootstrap.servers": "127.0.0.1:1"}, config, lambda r: None)


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


def test_commit_failures_are_logged_once_per_kind_per_rebalance(
    caplog: pytest.LogCaptureFixture,
) -> None:
    e = engine()
    parts = [TopicPartition("t", 0), TopicPartition("t", 1)]
    caplog.set_level(logging.DEBUG, logger="lagless.engine")
    for _ in range(5):
        e.offsets.on_commit(KafkaError(KafkaError.REBALANCE_IN_PROGRESS), parts)
    e.offsets.on_commit(KafkaError(KafkaError.ILLEGAL_GENERATION), parts)
    assert len(warnings_of(caplog)) == 2
    assert "REBALANCE_IN_PROGRESS" in warnings_of(caplog)[0]
    e.rebalance.on_assign(cast(Consumer, cast(Any, None)), [])  # a new generation
    e.offsets.on_commit(KafkaError(KafkaError.REBALANCE_IN_PROGRESS), parts)
    assert len(warnings_of(caplog)) == 3
