"""At start: the topics to consume and the DLQ topic must exist (one line if not).

A consumer subscribed to a topic that does not exist waits for it silently, forever; a DLQ
producer may even create its topic on brokers that auto-create. Both are checked once
before the group is joined.
"""

from __future__ import annotations

from collections.abc import Iterable

from confluent_kafka import Consumer, KafkaException

from lagless.errors import ClusterError, ConfigError


def check_topics_exist(
    consumer: Consumer, topics: Iterable[str], dlq_topic: str | None, timeout: float = 10.0
) -> None:
    """ConfigError naming the first missing topic; ClusterError if metadata cannot be read."""
    try:
        metadata = consumer.list_topics(timeout=timeout)
    except KafkaException as exc:
        raise ClusterError(f"cannot read the cluster's topics: {exc.args[0]}") from None
    known = {name for name, meta in metadata.topics.items() if meta.error is None}
    for name in topics:
        if name not in known:
            raise ConfigError(
                f"topic {name!r} does not exist (create it: lagless topic create {name})"
            )
    if dlq_topic is not None and dlq_topic not in known:
        raise ConfigError(
            f"DLQ topic {dlq_topic!r} does not exist (create it: lagless topic create {dlq_topic})"
        )
