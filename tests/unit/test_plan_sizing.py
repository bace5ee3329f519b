"""The planner's arithmetic: partitions, consumers, settings and costs."""

from __future__ import annotations

import pytest

from lagless.errors import ConfigError
from lagless.plan.sizing import (
    PlanInput,
    bound_by,
    make_plan,
    partitions_needed,
    pow2_at_least,
)
from lagless.produce.profiles import Profile


def test_the_slower_side_decides() -> None:
    # 100k/s: produce needs 100000/50000 = 2, consume needs 100000/10000 = 10; x1.2 = 12
    assert partitions_needed(100_000, t_produce=50_000, t_consume=10_000) == 12
    assert partitions_needed(100_000, t_produce=10_000, t_consume=50_000) == 12
    assert bound_by(50_000, 10_000) == "consume"
    assert bound_by(10_000, 50_000) == "produce"


def test_exact_products_do_not_round_up_from_float_noise() -> None:
    # 10 x 1.2 is 12.000000000000002 in floats: still 12 partitions
    assert partitions_needed(1000, 100, 1000, headroom=1.2) == 12
    assert partitions_needed(1001, 100, 1000, headroom=1.0) == 11


def test_headroom_and_the_minimum() -> None:
    assert partitions_needed(100, 1000, 1000, headroom=1.0) == 1
    assert partitions_needed(100, 1000, 1000, headroom=3.0) == 1
    assert partitions_needed(1000, 1000, 1000, headroom=1.5) == 2


@pytest.mark.parametrize(
    ("rate", "tp", "tc", "headroom"),
    [(0, 1, 1, 1.2), (-5, 1, 1, 1.2), (10, 0, 1, 1.2), (10, 1, 0, 1.2), (10, 1, 1, 0.9)],
)
def test_bad_inputs(rate: float, tp: float, tc: float, headroom: float) -> None:
    with pytest.raises(ConfigError):
        partitions_needed(rate, tp, tc, headroom)


def test_pow2_at_least() -> None:
    assert pow2_at_least(1, 16, 1024) == 16
    assert pow2_at_least(17, 16, 1024) == 32
    assert pow2_at_least(5000, 16, 1024) == 1024


def inputs(**kw: object) -> PlanInput:
    values: dict[str, object] = {
        "target_rate": 100_000, "t_produce": 200_000, "t_consume": 10_000,
        "record_bytes": 1000, "handler_seconds": 0.002, "replication": 3,
    }  # fmt: skip
    values.update(kw)
    return PlanInput(**values)  # type: ignore[arg-type]


def test_plan_partitions_consumers_and_json_shape() -> None:
    plan = make_plan(inputs())
    assert plan.partitions == 12
    assert plan.consumers == 12  # consume-bound: one instance per partition
    doc = plan.to_json()
    assert {"t_produce", "t_consume", "target_rate", "partitions", "settings"} <= set(doc)
    assert doc["partitions"] == 12 and doc["bound_by"] == "consume"
    assert set(doc["settings"]) == {"producer", "consumer", "engine"}
    for group in doc["settings"].values():
        for setting in group.values():
            assert setting["reason"]


def test_produce_bound_plans_fewer_consumers_than_partitions() -> None:
    plan = make_plan(inputs(t_produce=10_000, t_consume=60_000))
    assert plan.partitions == 12
    assert plan.consumers == 2  # 100k x 1.2 / 60k


def test_engine_concurrency_from_littles_law() -> None:
    # 12 instances share 100k/s: 8,333/s each x 2 ms x 1.2 = 20 in flight
    plan = make_plan(inputs())
    assert plan.settings["engine"]["max_in_flight"].value == 20
    assert "max_in_flight" not in make_plan(inputs(handler_seconds=None)).settings["engine"]


def test_producer_settings_follow_profile_and_rate() -> None:
    plan = make_plan(inputs(profile=Profile.DURABILITY))
    producer = plan.settings["producer"]
    assert producer["acks"].value == "all"
    assert producer["enable.idempotence"].value is True
    # 100k/s x 1000 B x 5 s = 488,282 KiB of buffer
    assert producer["queue.buffering.max.kbytes"].value == 488_282
    # 8,333/s per partition x 1000 B x 10 ms linger = 83 KB; twice that -> 256 KiB
    assert producer["batch.size"].value == 262_144
    latency = make_plan(inputs(profile=Profile.LATENCY)).settings
    assert latency["producer"]["linger.ms"].value == 0
    assert latency["consumer"]["fetch.wait.max.ms"].value == 10


def test_costs_scale_with_partitions() -> None:
    plan = make_plan(inputs())
    costs = {c.name: c.value for c in plan.costs}
    assert costs["broker file handles"] == ">= 108"  # 3 x 12 partitions x RF 3
    # throughput profile: 8,333/s x 1000 B x 50 ms = 417 KB, twice that -> 1 MiB batches, x 12
    assert costs["producer memory"] == "up to 12.0 MiB"
    assert costs["rebalance time"] == "12 partitions to reassign"


def test_bad_record_size() -> None:
    with pytest.raises(ConfigError, match="record-bytes"):
        make_plan(inputs(record_bytes=0))
