"""``until_idle_s``: when is a member idle?

Idle means: settled in the group (see :mod:`lagless.engine.watch.settle`), everything assigned is
consumed to its end, nothing is held (no record buffered, running, or waiting for its dead
letter) and everything finished is committed — for ``until_idle_s`` seconds in a row.
"Consumed to its end" compares the consumer's position with the partition's high watermark as
the last fetch response reported it (the one end every broker reports right, see
:mod:`lagless.kafka.offsets`). A member with nothing assigned is not idle while it joins; once
a completed rebalance left it nothing, it is idle after ``until_idle_s`` and two heartbeats
settled so (the engine's ``_idle``).
"""

from __future__ import annotations

from collections.abc import Mapping

from confluent_kafka import Consumer, KafkaException, TopicPartition

from lagless.engine.partitions.state import PartitionKey


def consumed_to_end(
    consumer: Consumer, known: Mapping[PartitionKey, int | None], latest: bool
) -> bool:
    """Whether every partition in ``known`` was read up to its high watermark.

    ``known`` maps each assigned partition to the next offset the engine knows it must read
    (the tracker's committable offset: past the last record finished, else the committed
    offset; None if neither), used while the consumer has no position yet (nothing returned
    since the assignment). With neither, the partition counts as consumed when it is empty,
    or when the group starts new partitions at the end (``latest``)."""
    tps = [TopicPartition(t, p) for t, p in known]
    if not tps:
        return False
    try:
        positions = consumer.position(tps)
    except KafkaException:
        return False
    for pos in positions:
        tp = TopicPartition(pos.topic, pos.partition)
        marks = consumer.get_watermark_offsets(tp, cached=True)
        if not marks or marks[1] < 0:
            return False  # no fetch answered yet: the end is unknown
        low, high = marks
        offset = pos.offset if pos.offset >= 0 else known[(pos.topic, pos.partition)]
        if offset is not None:
            if offset < high:
                return False
        elif not (latest or high <= max(low, 0)):
            return False
    return True
