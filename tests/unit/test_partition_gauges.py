"""A partition's gauges (lagless.engine.partitions.state.PartitionMetrics): absent until their
first value, removed (not zeroed) when the partition leaves the consumer."""

from __future__ import annotations

from lagless.engine.partitions.state import PartitionMetrics
from lagless.observe.metrics import Metrics

GAUGES = (
    "lagless_lag_records", "lagless_lag_seconds", "lagless_oldest_unfinished_age_seconds",
    "lagless_end_offset", "lagless_position_lag_records",
)  # fmt: skip


def series(metrics: Metrics, partition: str) -> set[str]:
    """The per-partition gauges ``metrics`` exposes for ``partition`` of topic t."""
    return {
        sample.name
        for family in metrics.registry.collect()
        for sample in family.samples
        if sample.name in GAUGES and sample.labels.get("partition") == partition
    }


def test_no_series_before_a_value_then_one_each() -> None:
    metrics = Metrics(group="g")
    part = PartitionMetrics(metrics, "t", 0)
    assert series(metrics, "0") == set()  # unknown is absent, not 0
    part.lag_records.set(5)
    part.lag_seconds.set(1.5)
    part.oldest_age.set(0.2)
    part.end_offset.set(50)
    part.note_position((0, 50), 45)
    assert series(metrics, "0") == set(GAUGES)
    labels = {"topic": "t", "partition": "0"}
    assert metrics.registry.get_sample_value(GAUGES[-1], labels) == 5.0  # 50 - 45


def test_a_partition_that_leaves_takes_its_series_with_it_and_may_come_back() -> None:
    metrics = Metrics(group="g")
    mine, other = PartitionMetrics(metrics, "t", 0), PartitionMetrics(metrics, "t", 1)
    for part in (mine, other):
        part.lag_records.set(7)
        part.end_offset.set(70)
        part.note_position((0, 70), 70)
    mine.clear_gauges()
    assert series(metrics, "0") == set()  # not "caught up": not ours
    assert series(metrics, "1") == {
        "lagless_lag_records", "lagless_end_offset", "lagless_position_lag_records",
    }  # fmt: skip
    mine.clear_gauges()  # twice: nothing to remove, no error
    again = PartitionMetrics(metrics, "t", 0)  # assigned again
    again.lag_records.set(3)
    assert series(metrics, "0") == {"lagless_lag_records"}
