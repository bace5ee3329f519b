"""The engine's Kafka consumer: one whose records librdkafka's C API fetches with one small object
a record (:mod:`lagless.kafka.fetcher`), else (``LAGLESS_NATIVE_FETCH=0``, or where that cannot
be used) confluent-kafka's."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from confluent_kafka import Consumer

from lagless.kafka.clients import make_consumer
from lagless.kafka.fetcher import open_split


def engine_consumer(conf: Mapping[str, Any]) -> Consumer:
    """A consumer on ``conf`` (the engine's options already in): a
    :class:`~lagless.kafka.fetcher.SplitConsumer` unless switched off or its fetcher cannot be
    used (it then says why, once), else confluent-kafka's."""
    split = open_split(conf)
    if split is not None:
        return cast("Consumer", split)  # it answers every Consumer call the engine makes
    return make_consumer(conf)
