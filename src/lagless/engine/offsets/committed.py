"""Reading committed offsets back at assignment, with the offset maps stored beside them."""

from __future__ import annotations

import logging

from confluent_kafka import Consumer, KafkaException, TopicPartition

from lagless.engine.offsets import offset_map
from lagless.engine.partitions.state import PartitionKey

log = logging.getLogger(__name__)

COMMITTED_TIMEOUT_S = 10.0  # reading commits in on_assign blocks the poll thread: bounded

Committed = dict[PartitionKey, tuple[int, frozenset[int]]]


def done_above(offset: int, metadata: str | None) -> frozenset[int]:
    """The offsets an offset map committed at ``offset`` names as done above it."""
    decoded = offset_map.decode(metadata)
    return decoded[1] if decoded is not None and decoded[0] == offset else frozenset()


def read_committed(consumer: Consumer, partitions: list[TopicPartition]) -> Committed | None:
    """Committed offsets and the offset maps stored with them (a partition without a commit
    is not in it); None when they could not be read."""
    if not partitions:
        return {}
    try:
        back = consumer.committed(
            [TopicPartition(tp.topic, tp.partition) for tp in partitions],
            timeout=COMMITTED_TIMEOUT_S,
        )
    except KafkaException as exc:
        log.warning(  # the consumer still starts at the committed offsets it fetches
            "cannot read committed offsets in %.0f s: %s; offset maps not used",
            COMMITTED_TIMEOUT_S,
            exc.args[0],
        )
        return None
    out: Committed = {}
    for tp in back:
        if tp.error is not None or tp.offset < 0:
            continue
        completed = done_above(tp.offset, tp.metadata)
        if completed:
            log.info(
                "%s[%d]: %d records above offset %d were completed by an earlier run",
                tp.topic, tp.partition, len(completed), tp.offset,
            )  # fmt: skip
        out[(tp.topic, tp.partition)] = (tp.offset, completed)
    return out
