"""Client factories: every lagless Kafka client is made here.

librdkafka writes its own log lines to stderr unless given a logger; these factories route
them into Python logging (``lagless.librdkafka``), which only the CLI configures.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient

LIBRDKAFKA_LOGGER = logging.getLogger("lagless.librdkafka")


def with_logger(conf: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(conf)
    out.setdefault("logger", LIBRDKAFKA_LOGGER)
    return out


def make_consumer(conf: Mapping[str, Any]) -> Consumer:
    return Consumer(with_logger(conf))


def make_producer(conf: Mapping[str, Any]) -> Producer:
    return Producer(with_logger(conf))


def make_admin(conf: Mapping[str, Any]) -> AdminClient:
    return AdminClient(with_logger(conf))
