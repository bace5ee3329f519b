"""Commits a group state refused: which errors a retry can overcome, and the offsets carried.

A revoke (or the last commit before close) commits synchronously. Two kinds of failure:

- *transient* (the coordinator moved, loads, or did not answer): sent again at once, within the
  revoke budget (at shutdown, within the rejoin bound below);
- *membership* (``REBALANCE_IN_PROGRESS``, ``ILLEGAL_GENERATION``, ``UNKNOWN_MEMBER_ID``, a
  stale or fenced epoch): no commit of this generation can succeed any more, and a member hears
  of the rebalance only at its next heartbeat (how often a broker refuses so differs: see
  :mod:`lagless.kafka.compat`). The offsets are then *carried* (:class:`Owed`): once the member
  owns the partition again (the next assignment, a new generation) they are committed before
  anything is read, so the records already done are not run again; refused again (the group
  rebalances once more), the member still starts after them and owes their commit, sent with
  its next one. A partition that went to another member cannot be committed for it: it is
  logged once with its coordinates and the new owner re-runs what finished since the last
  commit that succeeded. So that this is as little as possible, an eager member whose commit
  was refused for membership starts no more records until the revoke (:func:`revoke_due_s`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass

from confluent_kafka import KafkaError

from lagless.engine.config import EngineConfig
from lagless.engine.partitions.state import PartitionKey

log = logging.getLogger(__name__)

MEMBERSHIP = frozenset(
    {
        KafkaError.REBALANCE_IN_PROGRESS,
        KafkaError.ILLEGAL_GENERATION,
        KafkaError.UNKNOWN_MEMBER_ID,
        KafkaError.STALE_MEMBER_EPOCH,
        KafkaError.FENCED_MEMBER_EPOCH,
        KafkaError._ASSIGNMENT_LOST,
    }
)
TRANSIENT = frozenset(
    {
        KafkaError.NOT_COORDINATOR,
        KafkaError.COORDINATOR_NOT_AVAILABLE,
        KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
        KafkaError.REQUEST_TIMED_OUT,
        KafkaError._TIMED_OUT,
        KafkaError._TRANSPORT,
        KafkaError._WAIT_COORD,
    }
)
RETRY_PAUSE_S = 0.2  # between two sends of a commit that failed transiently
REVOKE_RETRY_S = 2.0  # on revoke, how long a commit that failed transiently is sent again
REJOIN_RETRY_S = 1.0  # at shutdown, between two sends of a commit the group state refused


def revoke_due_s(config: EngineConfig) -> float:
    """Eager protocol: after a commit refused for membership, every partition is revoked at
    the member's next heartbeat; records started meanwhile could not be committed, so none
    start for at most this long (a failure that outlived its generation holds no longer)."""
    return config.heartbeat_interval_ms / 1000.0 + 1.0


def rejoin_bound_s(config: EngineConfig) -> float:
    """How long a member waits to rejoin and commit what a rebalance refused: by then its
    session has ended or it has a new generation."""
    return (config.session_timeout_ms + config.heartbeat_interval_ms) / 1000.0


def code(error: object) -> int | None:
    return error.code() if isinstance(error, KafkaError) else None


def transient(error: object) -> bool:
    """A retry of the same commit may succeed (the member is still in its generation), or
    of the commit without its offset map (the broker refused the map as too large)."""
    return code(error) in TRANSIENT or metadata_too_large(error)


def metadata_too_large(error: object) -> bool:
    """The broker refuses offset maps this large (its ``offset.metadata.max.bytes``)."""
    return code(error) == KafkaError.OFFSET_METADATA_TOO_LARGE


def membership(error: object) -> bool:
    """The member must rejoin before a commit can succeed."""
    return code(error) in MEMBERSHIP


@dataclass(frozen=True)
class Owed:
    """A revoked partition's safe offset (+ offset map) that could not be committed."""

    offset: int
    metadata: str
    error: str


def name(error: object) -> str:
    return error.name() if isinstance(error, KafkaError) else str(error)


def listed(owed: Mapping[PartitionKey, Owed]) -> str:
    """``t[0] offset 225 (REBALANCE_IN_PROGRESS), ...``: each partition, offset and error."""
    items = sorted(owed.items())
    return ", ".join(f"{t}[{p}] offset {o.offset} ({o.error})" for (t, p), o in items)


def log_uncommitted(owed: Mapping[PartitionKey, Owed], why: str) -> None:
    """One warning naming every partition and offset left uncommitted."""
    if not owed:
        return
    log.warning(
        "not committed (%s): %s; records below these offsets that finished since the last "
        "commit will run again",
        why,
        listed(owed),
    )
