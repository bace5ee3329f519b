"""Consumer groups as ``kafka-consumer-groups`` shows them: state, protocol, members.

States are printed with Kafka's own names (``Stable``, ``Empty``, ``PreparingRebalance``, ...).
A group with members in ``Stable``, ``PreparingRebalance`` or ``CompletingRebalance`` is active:
its offsets must not be reset or deleted from outside. The embedded broker (Tansu 0.6) answers
DescribeGroups with the state but an empty member list, and a member id where the assignor's
name belongs: what a broker did not answer is kept apart from zero (``members_known``,
``protocol`` empty), never shown as a fact.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from confluent_kafka import ConsumerGroupState

from lagless.errors import LaglessError
from lagless.kafka.admin import committed_offsets, result_of
from lagless.kafka.clients import make_admin
from lagless.kafka.offsets import PartitionKey

STATE_NAMES = {
    ConsumerGroupState.STABLE: "Stable",
    ConsumerGroupState.EMPTY: "Empty",
    ConsumerGroupState.DEAD: "Dead",
    ConsumerGroupState.PREPARING_REBALANCING: "PreparingRebalance",
    ConsumerGroupState.COMPLETING_REBALANCING: "CompletingRebalance",
    ConsumerGroupState.UNKNOWN: "Unknown",
}
ACTIVE_STATES = frozenset({"Stable", "PreparingRebalance", "CompletingRebalance"})


@dataclass(frozen=True)
class Member:
    """One member of a group and the partitions assigned to it."""

    member_id: str
    client_id: str
    host: str
    partitions: tuple[PartitionKey, ...]


@dataclass(frozen=True)
class GroupInfo:
    """A group's state, assignment protocol and members."""

    group: str
    state: str
    protocol: str  # the assignor's name; "" when not answered
    members: tuple[Member, ...]
    members_known: bool = True  # False: the broker did not say who the members are

    @property
    def member_count(self) -> int | None:
        """How many members, or None when the broker did not answer it."""
        return len(self.members) if self.members_known else None

    @property
    def active(self) -> bool:
        return self.state in ACTIVE_STATES or bool(self.members)

    def owner(self, key: PartitionKey) -> Member | None:
        """The member a partition is assigned to, if any."""
        for member in self.members:
            if key in member.partitions:
                return member
        return None

    def to_json(self) -> dict[str, Any]:
        return {
            "group": self.group,
            "state": self.state,
            "protocol": self.protocol or None,
            "members": self.member_count,
        }


def state_name(state: object) -> str:
    if isinstance(state, ConsumerGroupState):
        return STATE_NAMES.get(state, state.name.title())
    return str(state) if state is not None else "Unknown"


PERCENT_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")


def listed_group_id(listed: str) -> str:
    """The real id of a group as ListGroups named it. The embedded broker (Tansu 0.6) lists an
    id with ``<``, ``>`` (and other characters) percent-encoded (``a%3Cb``) while it keeps the
    group's offsets under the real id (``a<b``): ids with ``%XX`` escapes are decoded. (A
    group really named with ``%XX`` in it, on another broker, would be decoded too: such a
    name is the price of finding the others.)"""
    if PERCENT_ESCAPE.search(listed) is None:
        return listed
    try:
        return unquote(listed, errors="strict")
    except UnicodeDecodeError:  # escapes that are not UTF-8: not an encoding, the real id
        return listed


def group_ids(conf: Mapping[str, Any], timeout: float = 10.0) -> list[str]:
    """Every consumer group the cluster lists, sorted, by its real id
    (:func:`listed_group_id`)."""
    admin = make_admin(conf)  # kept referenced: a collected client never completes its futures
    future = admin.list_consumer_groups(request_timeout=timeout)
    result = result_of(future, "list consumer groups", timeout)
    return sorted({listed_group_id(g.group_id) for g in result.valid})


def describe_groups(
    conf: Mapping[str, Any], groups: list[str], timeout: float = 10.0
) -> list[GroupInfo]:
    """State, protocol and members of each group (a group the cluster does not know is
    ``Dead`` with no members, as Kafka reports it)."""
    if not groups:
        return []
    admin = make_admin(conf)
    futures = admin.describe_consumer_groups(groups, request_timeout=timeout)
    out = []
    for group in groups:
        desc = result_of(futures[group], f"describe group {group!r}", timeout)
        members = tuple(
            Member(
                m.member_id,
                m.client_id,
                m.host,
                tuple(
                    sorted((tp.topic, tp.partition) for tp in m.assignment.topic_partitions or [])
                ),
            )
            for m in desc.members or []
        )
        state = state_name(desc.state)
        known = bool(members) or state not in ACTIVE_STATES  # an active group has members
        assignor = assignor_name(desc.partition_assignor)
        out.append(GroupInfo(group, state, assignor, members, known))
    return out


MEMBER_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def assignor_name(answered: str | None) -> str:
    """The assignor's name as answered; "" for none, or for a member id sent in its place
    (the embedded broker's answer): an assignor's name never holds a UUID."""
    if not answered or MEMBER_ID.search(answered):
        return ""
    return answered


def describe_group(conf: Mapping[str, Any], group: str, timeout: float = 10.0) -> GroupInfo:
    return describe_groups(conf, [group], timeout)[0]


def delete_group(conf: Mapping[str, Any], group: str, timeout: float = 10.0) -> None:
    """Delete a group and its committed offsets; refused while it has active members, and
    for a group the cluster does not know (some brokers answer such a delete with success)."""
    info = describe_group(conf, group, timeout)
    if info.state == "Dead" or (
        group not in group_ids(conf, timeout) and not committed_offsets(conf, group)
    ):
        raise LaglessError(f"no group {group!r} on this cluster: nothing deleted")
    if info.active:
        raise LaglessError(
            f"group {group!r} is {info.state} with active members: stop its consumers first"
        )
    admin = make_admin(conf)
    future = admin.delete_consumer_groups([group], request_timeout=timeout)[group]
    result_of(future, f"delete group {group!r}", timeout)
