"""Broker deviations, in one place: what a cluster kind does differently from Apache Kafka.

Core paths are written for Apache Kafka. Where a broker lagless runs on answers a request
differently, the difference is a field of its :class:`Deviations` here, and the core path asks
:func:`deviations_of` (or :func:`deviations_for`) instead of naming the broker. The kind comes
from what :mod:`lagless.kafka.cluster` learns about the cluster: its cluster id (one metadata
request). Kinds known:

- ``KAFKA``: Apache Kafka, and any cluster not recognised below (taken at its word);
- ``TANSU``: the embedded Tansu 0.6 (cluster id ``tansu_cluster``): ``ListOffsets(LATEST)``
  answers the base offset of the last batch + 1 (short by that batch: ends are read from
  fetch responses instead, and partitions a group starts at ``latest`` are started at the true
  end, :mod:`lagless.kafka.offsets`); ``ListOffsets`` by timestamp answers
  with its write time at batch granularity and 0 past the last write (offsets by time are
  searched in the records instead, :mod:`lagless.kafka.seek`); no ``CreatePartitions``; a
  consumer fetching a topic while it is deleted crashes librdkafka (segmentation fault): a
  long-lived reader fetches in a child process (:mod:`lagless.kafka.isolated`);
- ``MOCK``: librdkafka's mock cluster (cluster id ``mockCluster…``): no admin API over the
  protocol (topics auto-created with 4 partitions); the mock held by ``lagless broker start
  --kind mock`` creates and deletes topics of any size through its C API
  (:mod:`lagless.broker.mockcontrol`), plugged in below; ``ListOffsets`` by timestamp answers -1.

Deviations the engine handles the same way on every broker (so they need no switch), named
here so that a reader of the core path finds why it is so:

- commits refused for membership: the mock refuses every commit from the moment another
  member's JoinGroup arrives until this member rejoined (Apache Kafka accepts an eager member's
  commits while the group prepares a rebalance). A refused commit is carried into the member's
  next generation (:mod:`lagless.engine.offsets.carry`), which is right on any broker;
- a member that leaves while its own JoinGroup is pending wedges Tansu (it keeps the member as
  leader and the others rejoin for ever): ``until_idle_s`` waits for a settled join state
  (:mod:`lagless.engine.watch.settle`), which any broker's "more partitions are coming" needs;
- Tansu drops commit metadata: the engine reads its first offset map back and goes on without
  maps where the broker does not keep them.

How a cluster kind plugs in:

1. recognise it in :func:`kind_of` (from the cluster id, or add what :mod:`lagless.kafka.cluster`
   learns) and add it to :class:`Kind`;
2. give it its :class:`Deviations` in :data:`DEVIATIONS` (a kind without an entry behaves as
   Apache Kafka);
3. if its topics are not created through ``CreateTopics`` (the admin API), register a
   :data:`TopicCreator` with :func:`register_topic_creator`; :func:`create_topic` is the one
   entry point that dispatches on the kind (the default creator is
   :func:`lagless.kafka.admin.create_topic`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

from confluent_kafka import KafkaException

from lagless.broker.mock import AUTO_PARTITIONS, MOCK_CLUSTER_ID_PREFIX
from lagless.errors import ClusterError, ConfigError
from lagless.kafka.clients import make_admin

TANSU_CLUSTER_ID = "tansu_cluster"


class Kind(StrEnum):
    """A kind of cluster, as far as its behaviour goes."""

    KAFKA = "kafka"
    TANSU = "tansu"
    MOCK = "mock"


def kind_of(cluster_id: str | None) -> Kind:
    """The kind of the cluster whose metadata names ``cluster_id``."""
    if cluster_id == TANSU_CLUSTER_ID:
        return Kind.TANSU
    if cluster_id and cluster_id.startswith(MOCK_CLUSTER_ID_PREFIX):
        return Kind.MOCK
    return Kind.KAFKA


@dataclass(frozen=True)
class Deviations:
    """What one kind of cluster does differently from Apache Kafka (True: as Kafka does)."""

    kind: Kind
    list_offsets_end: bool = True  # ListOffsets(LATEST) answers the true end offset
    list_offsets_by_time: bool = True  # ListOffsets(timestamp) answers Kafka's meaning
    admin_topics: bool = True  # CreateTopics works
    create_partitions: bool = True  # CreatePartitions works
    commit_metadata: bool = True  # a commit's metadata string is kept
    fetch_survives_delete: bool = True  # a consumer fetching a topic being deleted lives on


DEVIATIONS: dict[Kind, Deviations] = {
    Kind.KAFKA: Deviations(Kind.KAFKA),
    Kind.TANSU: Deviations(
        Kind.TANSU,
        list_offsets_end=False,
        list_offsets_by_time=False,
        create_partitions=False,
        commit_metadata=False,
        fetch_survives_delete=False,
    ),
    Kind.MOCK: Deviations(
        Kind.MOCK, list_offsets_by_time=False, admin_topics=False, create_partitions=False
    ),
}


def deviations_for(kind: Kind) -> Deviations:
    return DEVIATIONS.get(kind, Deviations(kind))


class MetadataClient(Protocol):
    def list_topics(self, topic: str | None = None, timeout: float = -1) -> Any: ...


def deviations_of(client: MetadataClient, timeout: float = 10.0) -> Deviations:
    """The deviations of the cluster ``client`` (a consumer, producer or admin) talks to (one
    metadata request); ClusterError if it does not answer."""
    try:
        cluster_id = client.list_topics(timeout=timeout).cluster_id
    except KafkaException as exc:
        raise ClusterError(f"cannot read the cluster's metadata: {exc.args[0]}") from None
    return deviations_for(kind_of(cluster_id))


# -- topic creation -------------------------------------------------------------------------

# (conf, name, partitions, replication, config, exist_ok, timeout) -> created (False: existed)
TopicCreator = Callable[
    [Mapping[str, Any], str, int, int, Mapping[str, str] | None, bool, float], bool
]


def _on_mock(
    conf: Mapping[str, Any], name: str, partitions: int, replication: int,
    config: Mapping[str, str] | None, exist_ok: bool, timeout: float,
) -> bool:  # fmt: skip
    """The mock cluster's creator: its C API, through the process that holds it."""
    del replication, timeout  # one replica per broker as the mock keeps them; no wait
    from lagless.broker.mockcontrol import mock_control

    if config:
        raise ConfigError(f"topic configs {sorted(config)}: the mock cluster keeps none")
    control = mock_control(conf)
    if control is None:
        return _no_admin(conf, name, partitions)
    return control.create_topic(name, partitions, exist_ok=exist_ok)


_CREATORS: dict[Kind, TopicCreator] = {Kind.MOCK: _on_mock}


def register_topic_creator(kind: Kind, creator: TopicCreator) -> None:
    """Create ``kind``'s topics with ``creator`` (instead of the admin API)."""
    _CREATORS[kind] = creator


def topic_creator(kind: Kind) -> TopicCreator:
    """How topics are created on ``kind``: the registered creator, else the admin API (or, on
    a kind without one, a creator that says so in one line)."""
    creator = _CREATORS.get(kind)
    if creator is not None:
        return creator
    if deviations_for(kind).admin_topics:
        from lagless.kafka.admin import create_topic as by_admin  # admin builds on offsets

        return by_admin
    return _no_admin


def _no_admin(conf: Mapping[str, Any], name: str, partitions: int, *rest: Any) -> bool:
    """The creator of a kind without an admin API and no creator plugged in: says so."""
    del conf, rest
    raise ConfigError(
        f"cannot create topic {name!r} ({partitions} partitions): this cluster has no admin API "
        f"(a mock cluster not held by `lagless broker start --kind mock` creates topics on first "
        f"use with {AUTO_PARTITIONS} partitions)"
    )


def create_topic(
    conf: Mapping[str, Any],
    name: str,
    partitions: int,
    replication: int = 1,
    *,
    kind: Kind | None = None,
    **options: Any,
) -> bool:
    """Create topic ``name`` on whatever cluster ``conf`` reaches, the way its kind creates
    topics (``kind`` None: asked of the cluster, one metadata request); ``options``:
    ``config``, ``exist_ok``, ``timeout`` as for :func:`lagless.kafka.admin.create_topic`.
    False if it existed and ``exist_ok``; ClusterError/ConfigError otherwise."""
    if partitions < 1:
        raise ConfigError("--partitions must be at least 1")
    timeout = float(options.get("timeout", 15.0))
    if kind is None:
        kind = deviations_of(make_admin(conf), timeout).kind
    create = topic_creator(kind)
    return create(
        conf, name, partitions, replication, options.get("config"),
        bool(options.get("exist_ok", False)), timeout,
    )  # fmt: skip


def delete_topic(
    conf: Mapping[str, Any], name: str, *, kind: Kind | None = None, timeout: float = 15.0
) -> None:
    """Delete topic ``name`` the way the cluster ``conf`` reaches deletes topics (the admin
    API; the mock held by ``lagless broker start --kind mock``: its C API)."""
    if kind is None:
        kind = deviations_of(make_admin(conf), timeout).kind
    if kind is Kind.MOCK:
        from lagless.broker.mockcontrol import mock_control

        control = mock_control(conf)
        if control is None:
            raise ConfigError(f"cannot delete topic {name!r}: this mock cluster has no admin API")
        control.delete_topic(name)
        return
    from lagless.kafka.admin import delete_topic as by_admin

    by_admin(conf, name, timeout)
