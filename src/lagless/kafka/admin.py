"""Topics and consumer-group offsets."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from confluent_kafka import ConsumerGroupTopicPartitions, KafkaException, TopicPartition
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AdminClient,
    NewPartitions,
    NewTopic,
)

from lagless.broker.mockcontrol import mock_control
from lagless.errors import ClusterError, ConfigError
from lagless.kafka.clients import make_admin
from lagless.kafka.offsets import PartitionKey


def admin_client(conf: Mapping[str, Any]) -> AdminClient:
    return make_admin(conf)


def result_of(future: Any, what: str, timeout: float) -> Any:
    """The result of an admin future; a KafkaException or a timeout becomes one ClusterError
    line: ``cannot {what}: {reason}``."""
    try:
        return future.result(timeout=timeout)
    except KafkaException as exc:
        raise ClusterError(f"cannot {what}: {exc.args[0].str()}") from None
    except TimeoutError:
        raise ClusterError(f"cannot {what}: no answer within {timeout:.0f} s") from None


def check_reachable(conf: Mapping[str, Any], timeout: float = 5.0) -> None:
    """Raise ClusterError with one line if the cluster does not answer within ``timeout``."""
    try:
        make_admin({**conf, "log_level": 0}).list_topics(timeout=timeout)
    except KafkaException:
        raise ClusterError(
            f"cannot reach Kafka at {conf.get('bootstrap.servers')} within {timeout:.0f} s"
        ) from None


def create_topic(
    conf: Mapping[str, Any],
    name: str,
    partitions: int,
    replication: int = 1,
    config: Mapping[str, str] | None = None,
    exist_ok: bool = False,
    timeout: float = 15.0,
) -> bool:
    """Create ``name``; False if it existed and ``exist_ok``. ClusterError otherwise."""
    if partitions < 1:
        raise ConfigError("--partitions must be at least 1")
    if (mock := mock_control(conf)) is not None:  # the mock has no CreateTopics: its C API
        return mock.create_topic(name, partitions, exist_ok=exist_ok)
    topic = NewTopic(name, partitions, replication, config=dict(config or {}))
    admin = admin_client(conf)
    future = admin.create_topics([topic], operation_timeout=timeout)[name]
    try:
        future.result(timeout=timeout)
    except KafkaException as exc:
        err = exc.args[0]
        if exist_ok and err.name() == "TOPIC_ALREADY_EXISTS":
            return False
        raise ClusterError(f"cannot create topic {name!r}: {err.str()}") from None
    return True


def delete_topic(conf: Mapping[str, Any], name: str, timeout: float = 15.0) -> None:
    if (mock := mock_control(conf)) is not None:
        return mock.delete_topic(name)
    admin = admin_client(conf)
    future = admin.delete_topics([name], operation_timeout=timeout)[name]
    try:
        future.result(timeout=timeout)
    except KafkaException as exc:
        raise ClusterError(f"cannot delete topic {name!r}: {exc.args[0].str()}") from None


def add_partitions(conf: Mapping[str, Any], name: str, total: int, timeout: float = 15.0) -> None:
    """Grow ``name`` to ``total`` partitions (not supported by the embedded broker)."""
    admin = admin_client(conf)
    future = admin.create_partitions([NewPartitions(name, total)])[name]
    try:
        future.result(timeout=timeout)
    except KafkaException as exc:
        raise ClusterError(f"cannot add partitions to {name!r}: {exc.args[0].str()}") from None


def committed_offsets(
    conf: Mapping[str, Any], group: str, topics: Iterable[str] | None = None, timeout: float = 10.0
) -> dict[PartitionKey, int]:
    """The group's committed offsets (only partitions with a commit), optionally by topic."""
    request = ConsumerGroupTopicPartitions(group)
    admin = admin_client(conf)
    future = admin.list_consumer_group_offsets([request], request_timeout=timeout)
    try:
        result = future[group].result(timeout=timeout)
    except KafkaException as exc:
        raise ClusterError(f"cannot read offsets of group {group!r}: {exc.args[0].str()}") from None
    wanted = set(topics) if topics is not None else None
    out: dict[PartitionKey, int] = {}
    for tp in result.topic_partitions or []:
        if tp.offset < 0 or (wanted is not None and tp.topic not in wanted):
            continue
        out[(tp.topic, tp.partition)] = tp.offset
    return out


def alter_committed_offsets(
    conf: Mapping[str, Any], group: str, offsets: Mapping[PartitionKey, int], timeout: float = 10.0
) -> None:
    """Set a group's committed offsets (the group must have no active members)."""
    tps = [TopicPartition(t, p, o) for (t, p), o in sorted(offsets.items())]
    request = ConsumerGroupTopicPartitions(group, tps)
    admin = admin_client(conf)
    future = admin.alter_consumer_group_offsets([request], request_timeout=timeout)
    try:
        future[group].result(timeout=timeout)
    except KafkaException as exc:
        raise ClusterError(
            f"cannot commit offsets of group {group!r}: {exc.args[0].str()}"
        ) from None


def list_topics(
    conf: Mapping[str, Any], internal: bool = False, timeout: float = 10.0
) -> list[tuple[str, int]]:
    """(name, partition count) of every topic, sorted; internal ``__*`` topics only if asked."""
    try:
        meta = admin_client(conf).list_topics(timeout=timeout)
    except KafkaException as exc:
        raise ClusterError(f"cannot list topics: {exc.args[0].str()}") from None
    return sorted(
        (name, len(info.partitions))
        for name, info in meta.topics.items()
        if internal or not name.startswith("__")
    )
