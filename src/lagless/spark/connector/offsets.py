"""Offsets of the ``lagless-kafka`` source and the pure logic that plans micro-batches.

Spark stores a source's offsets as JSON text and compares them **as text** to decide whether a
micro-batch has new data, so every offset the source returns goes through :func:`to_json`:
``{"topic": {"partition": offset}}``, topics sorted, partitions sorted by number (as Spark's
own Kafka source writes them), offsets plain ints.

Nothing here talks to Kafka: the reader feeds these functions with partition lists and offsets
from :class:`lagless.kafka.offsets.OffsetProbe`, which keeps the logic testable without a broker
(including partitions added to a topic, which the embedded broker cannot do).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from lagless.errors import LaglessError
from lagless.kafka.offsets import PartitionKey, PartitionRange

log = logging.getLogger(__name__)

EARLIEST = -2
LATEST = -1

PartitionOffsets = dict[PartitionKey, int]
OffsetJson = dict[str, dict[str, int]]


class DataLossError(LaglessError):
    """Records the query should have read are gone (retention, deletion, a recreated topic)."""


def to_json(offsets: Mapping[PartitionKey, int]) -> OffsetJson:
    """The canonical JSON form: topics sorted, partitions sorted by number."""
    out: OffsetJson = {}
    for topic, partition in sorted(offsets):
        out.setdefault(topic, {})[str(partition)] = int(offsets[(topic, partition)])
    return out


def from_json(doc: Mapping[str, Mapping[str, Any]]) -> PartitionOffsets:
    """Parse ``{"topic": {"partition": offset}}`` (as stored by Spark) into a flat mapping."""
    out: PartitionOffsets = {}
    for topic, parts in doc.items():
        for partition, offset in parts.items():
            out[(topic, int(partition))] = int(offset)
    return out


def canonical(doc: Mapping[str, Mapping[str, Any]]) -> OffsetJson:
    return to_json(from_json(doc))


DataLossReporter = Callable[[str], None]


def data_loss_handler(fail: bool) -> DataLossReporter:
    """Raise (``failOnDataLoss=true``) or log a warning and go on."""

    def report(message: str) -> None:
        if fail:
            raise DataLossError(
                f"{message}; set failOnDataLoss=false to skip the lost records and go on"
            )
        log.warning("%s; skipping (failOnDataLoss=false)", message)

    return report


def resolve_start(
    wanted: str | Mapping[PartitionKey, int],
    earliest: Mapping[PartitionKey, int],
    latest: Mapping[PartitionKey, int],
) -> PartitionOffsets:
    """Initial offsets of every known partition for ``startingOffsets``.

    ``wanted`` is ``"earliest"``, ``"latest"`` or explicit offsets (-2 earliest, -1 latest);
    partitions an explicit mapping leaves out start at earliest, like partitions added later.
    """
    out: PartitionOffsets = {}
    for key in sorted(latest):
        if wanted == "latest":
            out[key] = latest[key]
        elif wanted == "earliest" or isinstance(wanted, str):
            out[key] = earliest[key]
        else:
            given = wanted.get(key, EARLIEST)
            out[key] = (
                earliest[key] if given == EARLIEST else latest[key] if given == LATEST else given
            )
    if isinstance(wanted, Mapping):
        unknown = sorted(set(wanted) - set(latest))
        if unknown:
            raise LaglessError(f"startingOffsets names partitions that do not exist: {unknown}")
    return out


def next_end(
    start: Mapping[PartitionKey, int],
    latest: Mapping[PartitionKey, int],
    earliest_of_new: Callable[[Iterable[PartitionKey]], Mapping[PartitionKey, int]],
    max_records: int | None,
    report: DataLossReporter,
) -> PartitionOffsets:
    """The end offsets of the next micro-batch.

    ``latest`` holds the partitions the topics have now: partitions missing from ``start``
    were added since and begin at their earliest offset; partitions missing from ``latest``
    disappeared (data loss). With ``max_records``, the batch takes at most that many records,
    shared by partitions in proportion to their backlog.
    """
    for key in sorted(set(start) - set(latest)):
        report(f"partition {key[0]}[{key[1]}] disappeared at offset {start[key]}")
    begin: PartitionOffsets = {}
    new = [key for key in latest if key not in start]
    firsts = earliest_of_new(new) if new else {}
    for key in latest:
        begin[key] = start[key] if key in start else firsts[key]
        if latest[key] < begin[key]:
            report(
                f"{key[0]}[{key[1]}] ends at {latest[key]}, before offset {begin[key]} "
                f"already read (was the topic recreated?)"
            )
            begin[key] = latest[key]
    if max_records is None:
        return dict(latest)
    return rate_limit(begin, latest, max_records)


def rate_limit(
    begin: Mapping[PartitionKey, int], latest: Mapping[PartitionKey, int], limit: int
) -> PartitionOffsets:
    """End offsets taking at most ``limit`` records from ``[begin, latest)``.

    Each partition gets a share of ``limit`` in proportion to its backlog (largest remainder,
    so the shares add up to exactly ``limit``: a backlog of ``B`` takes ``ceil(B / limit)``
    batches). Spark's own source rounds each share down and can need one batch more.
    """
    sizes = {key: max(0, latest[key] - begin[key]) for key in latest}
    total = sum(sizes.values())
    if total <= limit:
        return dict(latest)
    shares = {key: limit * size / total for key, size in sizes.items()}
    taken = {key: int(share) for key, share in shares.items()}
    left = limit - sum(taken.values())
    by_remainder = sorted(shares, key=lambda k: (-(shares[k] - taken[k]), -sizes[k], k))
    for key in by_remainder[:left]:
        taken[key] += 1
    return {key: min(latest[key], begin[key] + taken[key]) for key in latest}


def plan_ranges(
    start: Mapping[PartitionKey, int],
    end: Mapping[PartitionKey, int],
    earliest: Mapping[PartitionKey, int],
    report: DataLossReporter,
) -> list[PartitionRange]:
    """The non-empty offset ranges between two offsets of the source.

    Partitions absent from ``start`` (added since) begin at their earliest offset. A start
    below a partition's earliest offset means records were deleted before being read.
    """
    ranges: list[PartitionRange] = []
    for topic, partition in sorted(end):
        key = (topic, partition)
        first = earliest.get(key, 0)
        begin = start.get(key, first)
        stop = end[key]
        if begin < first:
            report(f"{topic}[{partition}] records [{begin}, {first}) were deleted before read")
            begin = first
        if stop < begin:
            report(f"{topic}[{partition}] ends at {stop}, before {begin} (was it recreated?)")
            continue
        if stop > begin:
            ranges.append(PartitionRange(topic, partition, begin, stop))
    return ranges


def split_ranges(ranges: list[PartitionRange], min_partitions: int | None) -> list[PartitionRange]:
    """Split ranges so there are at least ``min_partitions`` (Spark's ``minPartitions``).

    Each range gets a number of pieces in proportion to its size (at least one), cut in
    near-equal parts, as Spark's ``KafkaPartitionRangeCalculator`` does.
    """
    if min_partitions is None or len(ranges) >= min_partitions:
        return ranges
    total = sum(r.records for r in ranges)
    out: list[PartitionRange] = []
    for r in ranges:
        parts = max(round(r.records / total * min_partitions), 1)
        remaining, begin = r.records, r.start
        for part in range(parts):
            piece = remaining // (parts - part)
            remaining -= piece
            if piece > 0:
                out.append(PartitionRange(r.topic, r.partition, begin, begin + piece))
            begin += piece
    return out


def cap_ranges(ranges: list[PartitionRange], max_records: int | None) -> list[PartitionRange]:
    """Split ranges so none holds more than ``max_records`` (Spark's
    ``maxRecordsPerPartition``), in near-equal pieces."""
    if max_records is None:
        return ranges
    out: list[PartitionRange] = []
    for r in ranges:
        parts = -(-r.records // max_records)
        begin = r.start
        for part in range(parts):
            piece = (r.end - begin) // (parts - part)
            out.append(PartitionRange(r.topic, r.partition, begin, begin + piece))
            begin += piece
    return out
