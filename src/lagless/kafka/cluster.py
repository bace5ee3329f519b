"""Which cluster is this? Product and version as far as the cluster tells, and what it supports.

The Kafka protocol does not name the broker's software. :func:`describe_cluster` reads the
cluster id and brokers from metadata and recognises the two clusters lagless runs itself (their
kind, :func:`lagless.kafka.compat.kind_of`): the embedded Tansu broker (version from its
binary) and librdkafka's mock cluster. What each does differently from Apache Kafka is in
:mod:`lagless.kafka.compat`. Anything else is named by its cluster id and broker
count. :func:`supports_kip848` asks the cluster by behaviour: a consumer with
``group.protocol=consumer`` either gets an assignment or does not (Tansu 0.6 answers neither
yes nor no: it just never assigns).
"""

from __future__ import annotations

import subprocess
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import confluent_kafka
from confluent_kafka import KafkaException

from lagless.broker.embedded import tansu_binary
from lagless.errors import ClusterError, LaglessError
from lagless.kafka.clients import make_consumer, make_producer
from lagless.kafka.compat import Deviations, Kind, deviations_for, kind_of


@dataclass(frozen=True)
class ClusterInfo:
    product: str  # "Tansu", "librdkafka mock cluster", or "Kafka-protocol cluster"
    version: str | None
    cluster_id: str | None
    brokers: int
    bootstrap: str

    @property
    def kind(self) -> Kind:
        """What kind of cluster this is (see :mod:`lagless.kafka.compat`)."""
        return kind_of(self.cluster_id)

    @property
    def deviations(self) -> Deviations:
        """What it does differently from Apache Kafka (see :mod:`lagless.kafka.compat`)."""
        return deviations_for(self.kind)

    @property
    def is_tansu(self) -> bool:
        return self.kind is Kind.TANSU

    @property
    def is_mock(self) -> bool:
        """librdkafka's mock cluster (a test cluster; topics through its C API, else
        auto-created)."""
        return self.kind is Kind.MOCK

    @property
    def name(self) -> str:
        version = f" {self.version}" if self.version else ""
        kind = ", a test cluster, not a production broker" if self.is_mock else ""
        return (
            f"{self.product}{version} (cluster id {self.cluster_id}, {self.brokers} brokers{kind})"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "product": self.product,
            "version": self.version,
            "cluster_id": self.cluster_id,
            "brokers": self.brokers,
            "bootstrap": self.bootstrap,
            "name": self.name,
        }


def tansu_version() -> str | None:
    try:
        binary = str(tansu_binary())
        out = subprocess.run(
            [binary, "--version"], check=False, capture_output=True, text=True, timeout=10
        ).stdout
    except (OSError, subprocess.TimeoutExpired, LaglessError):
        return None
    parts = out.split()
    return parts[1] if len(parts) >= 2 and parts[0] == "tansu" else None


def describe_cluster(conf: Mapping[str, Any], timeout: float = 10.0) -> ClusterInfo:
    """Name the cluster behind ``conf`` (one metadata request)."""
    producer = make_producer(conf)
    try:
        meta = producer.list_topics(timeout=timeout)
    except KafkaException as exc:
        raise ClusterError(f"cannot read the cluster's metadata: {exc.args[0]}") from None
    cluster_id = meta.cluster_id
    brokers = len(meta.brokers)
    bootstrap = str(conf.get("bootstrap.servers", ""))
    kind = kind_of(cluster_id)
    if kind is Kind.TANSU:
        return ClusterInfo("Tansu", tansu_version(), cluster_id, brokers, bootstrap)
    if kind is Kind.MOCK:
        lib = confluent_kafka.libversion()[0]
        return ClusterInfo(f"librdkafka {lib} mock cluster", None, cluster_id, brokers, bootstrap)
    return ClusterInfo("Kafka-protocol cluster", None, cluster_id, brokers, bootstrap)


def supports_kip848(conf: Mapping[str, Any], topic: str, timeout: float = 10.0) -> bool:
    """Does a ``group.protocol=consumer`` member of a fresh group get ``topic``'s partitions
    within ``timeout`` seconds? (The topic must exist.)"""
    consumer = make_consumer(
        {
            **conf,
            "group.id": f"lagless-kip848-probe-{uuid.uuid4().hex[:8]}",
            "group.protocol": "consumer",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            consumer.poll(0.2)
            if consumer.assignment():
                return True
        return False
    except KafkaException:
        return False
    finally:
        consumer.close()
