"""Group descriptions: state names, activity, and the member owning each partition (neither
broker here reports members: Tansu answers an empty list, the mock cluster no DescribeGroups)."""

from __future__ import annotations

from confluent_kafka import ConsumerGroupState

from lagless.cli.group import partition_json
from lagless.kafka.groups import GroupInfo, Member, state_name
from lagless.observe.lag import PartitionLag, activity


def test_state_names_are_kafkas() -> None:
    assert state_name(ConsumerGroupState.STABLE) == "Stable"
    assert state_name(ConsumerGroupState.PREPARING_REBALANCING) == "PreparingRebalance"
    assert state_name(ConsumerGroupState.EMPTY) == "Empty"
    assert state_name(None) == "Unknown"


def test_describe_rows_name_the_owner_of_each_partition() -> None:
    alice = Member("m-1", "lagless", "/10.0.0.7", (("t", 0), ("t", 2)))
    info = GroupInfo("g", "Stable", "range", (alice,))
    owned = partition_json(info, PartitionLag("t", 2, 5, 0, 9, 4, 1.5))
    assert owned == {
        "topic": "t", "partition": 2, "current_offset": 5, "log_end_offset": 9, "lag": 4,
        "lag_s": 1.5, "consumer_id": "m-1", "host": "/10.0.0.7", "client_id": "lagless",
    }  # fmt: skip
    free = partition_json(info, PartitionLag("t", 1, None, 0, 3, 3, 2.0))
    assert (free["consumer_id"], free["current_offset"]) == (None, None)
    assert info.active and activity(info) is True
    assert activity(GroupInfo("g", "Empty", "", ())) is False
    assert activity(GroupInfo("g", "Unknown", "", ())) is None
    assert activity(None) is None


def test_a_listed_percent_encoded_id_is_the_real_id() -> None:
    from lagless.kafka.groups import listed_group_id

    assert listed_group_id("bars%3Cimg%3E") == "bars<img>"
    assert listed_group_id("plain-group") == "plain-group"
    assert listed_group_id("100%") == "100%"  # not an escape
    assert listed_group_id("a%FFb") == "a%FFb"  # escapes that are not UTF-8: kept as listed
