"""Reset a consumer group's offsets, as ``kafka-consumer-groups --reset-offsets`` does.

A reset is planned first (old -> new per partition; nothing changes) and executed only when
asked. It is refused while the group has active members: their next commit would overwrite it.
New offsets are clamped to the partition's start..end, as Kafka's tool does.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any

from lagless.errors import ConfigError, LaglessError
from lagless.kafka.admin import alter_committed_offsets, committed_offsets
from lagless.kafka.groups import describe_group
from lagless.kafka.offsets import OffsetProbe, PartitionKey
from lagless.kafka.seek import offsets_at_time

DURATION = re.compile(
    r"^-?P(?:(?P<d>\d+)D)?(?:T(?:(?P<h>\d+)H)?(?:(?P<m>\d+)M)?(?:(?P<s>\d+(?:\.\d+)?)S)?)?$"
)


class ResetTo(StrEnum):
    EARLIEST = "earliest"
    LATEST = "latest"
    OFFSET = "offset"
    DATETIME = "datetime"
    DURATION = "duration"
    SHIFT = "shift"


@dataclass(frozen=True)
class ResetSpec:
    """Where to move the offsets: ``value`` is the offset, the shift, or a time in ms."""

    to: ResetTo
    value: int = 0


@dataclass(frozen=True)
class ResetRow:
    topic: str
    partition: int
    old: int | None
    new: int

    def to_json(self) -> dict[str, Any]:
        return {"topic": self.topic, "partition": self.partition, "old": self.old, "new": self.new}


def parse_duration(text: str) -> timedelta:
    """An ISO 8601 duration such as ``PT10M``, ``P1DT2H`` (days, hours, minutes, seconds)."""
    match = DURATION.match(text.strip().upper())
    if match is None or not any(match.groupdict().values()):
        raise ConfigError(f"duration {text!r} is not ISO 8601 like PT10M or P1DT2H30M")
    parts = {k: float(v) if v else 0.0 for k, v in match.groupdict().items()}
    return timedelta(days=parts["d"], hours=parts["h"], minutes=parts["m"], seconds=parts["s"])


def parse_time(text: str) -> int:
    """An ISO 8601 time (``2026-11-23T14:00:00``, UTC when it names no zone) in ms."""
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ConfigError(f"time {text!r} is not ISO 8601 like 2026-11-23T14:00:00Z") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


def build_spec(
    earliest: bool,
    latest: bool,
    offset: int | None,
    at: str | None,
    duration: str | None,
    shift: int | None,
    now_ms: int | None = None,
) -> ResetSpec:
    """Exactly one target from the command's options."""
    chosen = [earliest, latest, *(v is not None for v in (offset, at, duration, shift))]
    if sum(chosen) != 1:
        raise ConfigError(
            "give exactly one of --to-earliest, --to-latest, --to-offset, --to-datetime, "
            "--by-duration, --shift-by"
        )
    if earliest:
        return ResetSpec(ResetTo.EARLIEST)
    if latest:
        return ResetSpec(ResetTo.LATEST)
    if offset is not None:
        return ResetSpec(ResetTo.OFFSET, offset)
    if at is not None:
        return ResetSpec(ResetTo.DATETIME, parse_time(at))
    if duration is not None:
        now = now_ms if now_ms is not None else int(time.time() * 1000)
        back = int(abs(parse_duration(duration)).total_seconds() * 1000)
        return ResetSpec(ResetTo.DURATION, now - back)
    return ResetSpec(ResetTo.SHIFT, shift or 0)


def new_offset(
    spec: ResetSpec, old: int | None, start: int, end: int, at_time: int | None = None
) -> int:
    """The offset a partition moves to, clamped to ``start..end`` (pure)."""
    if spec.to is ResetTo.EARLIEST:
        target = start
    elif spec.to is ResetTo.LATEST:
        target = end
    elif spec.to is ResetTo.OFFSET:
        target = spec.value
    elif spec.to is ResetTo.SHIFT:
        target = (start if old is None else old) + spec.value
    else:
        if at_time is None:
            raise ValueError("a reset by time needs the offset found for that time")
        target = at_time
    return min(max(target, start), end)


def plan_reset(conf: Mapping[str, Any], group: str, topic: str, spec: ResetSpec) -> list[ResetRow]:
    """Old -> new offset of every partition of ``topic`` for ``group`` (nothing changes)."""
    with OffsetProbe(conf) as probe:
        keys = [(topic, p) for p in probe.partitions(topic)]
        ends = probe.end_offsets(keys)
        starts = probe.start_offsets(keys)
    commits = committed_offsets(conf, group, [topic])
    at_time: Mapping[PartitionKey, int] = {}
    if spec.to in (ResetTo.DATETIME, ResetTo.DURATION):
        at_time = offsets_at_time(conf, keys, spec.value)
    return [
        ResetRow(t, p, commits.get((t, p)), new_offset(
            spec, commits.get((t, p)), starts[(t, p)], ends[(t, p)], at_time.get((t, p))
        ))
        for t, p in keys
    ]  # fmt: skip


def execute_reset(conf: Mapping[str, Any], group: str, rows: list[ResetRow]) -> None:
    """Commit the planned offsets; refused while the group has active members."""
    info = describe_group(conf, group)
    if info.state not in ("Empty", "Dead"):
        raise LaglessError(
            f"group {group!r} is {info.state}, not Empty: stop its consumers before resetting "
            "its offsets (their next commit would overwrite the reset)"
        )
    alter_committed_offsets(conf, group, {(r.topic, r.partition): r.new for r in rows})
