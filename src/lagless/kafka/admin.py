"""Topics and consumer-group offsets."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from confluent_kafka import ConsumerGroupTopicPartitions, KafkaException, TopicPartition
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AdminClient,
    ConfigResource,
    NewTopic,
    ResourceType,
)

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
    """Raise ClusterError with one line if the cluster does not answer within ``timeout``
    (ConfigError if librdkafka refuses the configuration, e.g. a misspelt ``-X`` property).

    The client and its wait run on a thread of their own while the caller waits in Python:
    a Ctrl-C raises KeyboardInterrupt in the caller at once, never inside confluent-kafka's
    calls, where it was lost (raised in a callback) or turned into another error (raised while
    the configuration was read), and the command went on or failed with the wrong line."""
    failed: list[BaseException] = []

    def attempt() -> None:
        try:
            _answers(conf, timeout)
        except BaseException as exc:  # handed to the caller as it is
            failed.append(exc)

    thread = threading.Thread(target=attempt, name="lagless-reachable", daemon=True)
    thread.start()
    while thread.is_alive():
        thread.join(0.1)  # a Ctrl-C raises here
    if failed:
        raise failed[0]


def _answers(conf: Mapping[str, Any], timeout: float) -> None:
    try:
        admin = make_admin({**conf, "log_level": 0})
    except KafkaException as exc:
        raise ConfigError(f"librdkafka configuration: {exc.args[0].str()}") from None
    try:
        admin.list_topics(timeout=timeout)
    except KafkaException:
        raise ClusterError(unreachable(conf, timeout)) from None


def unreachable(conf: Mapping[str, Any], timeout: float) -> str:
    """Why the cluster did not answer: a listener that accepts connections but not the
    configured security protocol (SASL or TLS against a plaintext listener, or the reverse)
    is a protocol or authentication mismatch, not an unreachable cluster."""
    servers = str(conf.get("bootstrap.servers", ""))
    protocol = str(conf.get("security.protocol", "PLAINTEXT")).upper()
    if protocol != "PLAINTEXT" and any(accepts(s) for s in servers.split(",")):
        mechanism = f", sasl.mechanism {conf['sasl.mechanism']}" if "SASL" in protocol else ""
        return (
            f"authentication/protocol mismatch at {servers}: the listener accepts connections "
            f"but no Kafka answer came with security.protocol {protocol}{mechanism} within "
            f"{timeout:.0f} s: check them against the listener (a PLAINTEXT listener? wrong "
            "credentials or CA?)"
        )
    return f"cannot reach Kafka at {servers} within {timeout:.0f} s"


def accepts(server: str, timeout: float = 2.0) -> bool:
    """Whether ``HOST:PORT`` accepts a TCP connection."""
    host, _, port = server.strip().rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
            return True
    except (OSError, ValueError):
        return False


def create_topic(
    conf: Mapping[str, Any],
    name: str,
    partitions: int,
    replication: int = 1,
    config: Mapping[str, str] | None = None,
    exist_ok: bool = False,
    timeout: float = 15.0,
) -> bool:
    """Create ``name`` through the admin API (CreateTopics); False if it existed and
    ``exist_ok``. ClusterError otherwise. On any kind of cluster (the mock too):
    :func:`lagless.kafka.compat.create_topic`."""
    if partitions < 1:
        raise ConfigError("--partitions must be at least 1")
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
    except TimeoutError:
        raise ClusterError(
            f"cannot create topic {name!r}: no answer within {timeout:.0f} s"
        ) from None
    return True


def delete_topic(conf: Mapping[str, Any], name: str, timeout: float = 15.0) -> None:
    admin = admin_client(conf)
    future = admin.delete_topics([name], operation_timeout=timeout)[name]
    result_of(future, f"delete topic {name!r}", timeout)


def committed_offsets(
    conf: Mapping[str, Any], group: str, topics: Iterable[str] | None = None, timeout: float = 10.0
) -> dict[PartitionKey, int]:
    """The group's committed offsets (only partitions with a commit), optionally by topic."""
    request = ConsumerGroupTopicPartitions(group)
    admin = admin_client(conf)
    future = admin.list_consumer_group_offsets([request], request_timeout=timeout)
    result = result_of(future[group], f"read offsets of group {group!r}", timeout)
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
    result_of(future[group], f"commit offsets of group {group!r}", timeout)


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


@dataclass(frozen=True)
class PartitionLayout:
    """Where one partition lives: its leader, replicas and in-sync replicas (broker ids)."""

    partition: int
    leader: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


def topic_layout(
    conf: Mapping[str, Any], name: str, timeout: float = 10.0
) -> dict[int, PartitionLayout]:
    """Each partition's leader, replicas and ISR from metadata; ClusterError if the topic
    does not exist (read from the whole listing: asking for one topic may auto-create it)."""
    try:
        meta = admin_client(conf).list_topics(timeout=timeout)
    except KafkaException as exc:
        raise ClusterError(f"cannot read the metadata of {name!r}: {exc.args[0].str()}") from None
    topic = meta.topics.get(name)
    if topic is None:
        raise ClusterError(f"topic {name!r} does not exist")
    return {
        p.id: PartitionLayout(p.id, p.leader, tuple(p.replicas), tuple(p.isrs))
        for p in topic.partitions.values()
    }


def topic_configs(
    conf: Mapping[str, Any], name: str, timeout: float = 10.0
) -> dict[str, str] | None:
    """The topic's configs the cluster answers (some brokers send only those set explicitly);
    None when it does not answer DescribeConfigs."""
    resource = ConfigResource(ResourceType.TOPIC, name)
    admin = admin_client(conf)  # kept referenced: a collected client fails its futures
    future = admin.describe_configs([resource], request_timeout=timeout)[resource]
    try:
        entries = future.result(timeout=timeout)
    except (KafkaException, TimeoutError):
        return None
    return {key: entry.value for key, entry in sorted(entries.items()) if entry.value is not None}
