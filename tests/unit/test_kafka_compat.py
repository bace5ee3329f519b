"""The compatibility layer: cluster kinds, their deviations, the pluggable topic creator."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from lagless.errors import ConfigError
from lagless.kafka import compat
from lagless.kafka.admin import create_topic as by_admin
from lagless.kafka.compat import Kind


def test_kind_from_cluster_id() -> None:
    assert compat.kind_of("tansu_cluster") is Kind.TANSU
    assert compat.kind_of("mockCluster1a2b") is Kind.MOCK
    assert compat.kind_of("Xq3kz8aRQfa") is Kind.KAFKA  # anything else: taken as Kafka
    assert compat.kind_of(None) is Kind.KAFKA


def test_deviations_per_kind() -> None:
    kafka, tansu, mock = (compat.deviations_for(k) for k in (Kind.KAFKA, Kind.TANSU, Kind.MOCK))
    assert kafka.list_offsets_end and kafka.list_offsets_by_time and kafka.admin_topics
    assert not tansu.list_offsets_end and not tansu.list_offsets_by_time
    assert not tansu.commit_metadata and tansu.admin_topics
    assert mock.list_offsets_end and not mock.list_offsets_by_time and not mock.admin_topics


@pytest.fixture
def restore_creators() -> Iterator[None]:
    saved = dict(compat._CREATORS)
    yield
    compat._CREATORS.clear()
    compat._CREATORS.update(saved)


def test_topic_creator_is_pluggable_per_kind(restore_creators: None) -> None:
    assert compat.topic_creator(Kind.KAFKA) is by_admin
    with pytest.raises(ConfigError, match="no admin API"):
        compat.create_topic({}, "t", 2, kind=Kind.MOCK)
    made: list[tuple[str, int]] = []

    def plugged(
        conf: Mapping[str, Any], name: str, partitions: int, replication: int,
        config: Mapping[str, str] | None, exist_ok: bool, timeout: float,
    ) -> bool:  # fmt: skip
        made.append((name, partitions))
        return True

    compat.register_topic_creator(Kind.MOCK, plugged)
    assert compat.create_topic({}, "t", 2, kind=Kind.MOCK) is True
    assert made == [("t", 2)]
    assert compat.topic_creator(Kind.TANSU) is by_admin  # other kinds unchanged
