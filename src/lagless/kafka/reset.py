"""Reset a consumer group's offsets, as ``kafka-consumer-groups --reset-offsets`` does.

A reset is planned first (old -> new per partition; nothing changes) and executed only when
asked. It is refused while the group has active members: their next commit would overwrite it.
New offsets are clamped to the partition's start..end, as Kafka's tool does.
"""

from __future__ import annotations

import csv
import io
import re
import time
from collections.abc import Mapping, Sequence
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
    CURRENT = "current"
    FILE = "file"


@dataclass(frozen=True)
class ResetSpec:
    """Where to move the offsets: ``value`` is the offset, the shift, or a time in ms
    (``FILE``: the offsets given per partition, see :func:`read_offsets_csv`)."""

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
    current: bool = False,
    from_file: bool = False,
) -> ResetSpec:
    """Exactly one target from the command's options."""
    chosen = [
        earliest, latest, current, from_file,
        *(v is not None for v in (offset, at, duration, shift)),
    ]  # fmt: skip
    if sum(chosen) != 1:
        raise ConfigError(
            "give exactly one of --to-earliest, --to-latest, --to-current, --to-offset, "
            "--to-datetime, --by-duration, --shift-by, --from-file"
        )
    if current:
        return ResetSpec(ResetTo.CURRENT)
    if from_file:
        return ResetSpec(ResetTo.FILE)
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
    """The offset a partition moves to, clamped to ``start..end`` (pure); ``at_time``: the
    offset found for the time, or given by the file."""
    if spec.to is ResetTo.EARLIEST:
        target = start
    elif spec.to is ResetTo.LATEST:
        target = end
    elif spec.to is ResetTo.OFFSET:
        target = spec.value
    elif spec.to in (ResetTo.SHIFT, ResetTo.CURRENT):
        target = (start if old is None else old) + spec.value
    else:
        if at_time is None:
            raise ValueError("a reset by time or file needs the offset found for it")
        target = at_time
    return min(max(target, start), end)


Selection = Mapping[str, tuple[int, ...]]
"""Topics to reset, each with its chosen partitions (empty: all of them)."""


def parse_selectors(selectors: Sequence[str]) -> dict[str, tuple[int, ...]]:
    """``--topic`` values as kafka-consumer-groups takes them: ``T`` (every partition) or
    ``T:0,2`` (those partitions)."""
    whole: set[str] = set()
    chosen: dict[str, set[int]] = {}
    for selector in selectors:
        topic, colon, parts = selector.rpartition(":")
        if not colon:
            whole.add(selector)
            continue
        items = [p.strip() for p in parts.split(",")]
        if not topic or not all(p.isdigit() for p in items):
            raise ConfigError(f"--topic {selector!r}: give TOPIC or TOPIC:P[,P...]")
        chosen.setdefault(topic, set()).update(int(p) for p in items)
    return {t: () if t in whole else tuple(sorted(chosen[t])) for t in {*whole, *chosen}}


def read_offsets_csv(text: str, source: str) -> dict[PartitionKey, int]:
    """``TOPIC,PARTITION,OFFSET`` lines (what ``--export`` writes; kafka-consumer-groups'
    file for one group); ConfigError naming the line that is not one."""
    offsets: dict[PartitionKey, int] = {}
    for number, row in enumerate(csv.reader(io.StringIO(text)), start=1):
        if not row or not "".join(row).strip():
            continue
        cells = [c.strip() for c in row]
        if len(cells) != 3 or not cells[1].isdigit() or not cells[2].lstrip("-").isdigit():
            raise ConfigError(f"{source} line {number}: not TOPIC,PARTITION,OFFSET: {row!r}")
        offsets[(cells[0], int(cells[1]))] = int(cells[2])
    if not offsets:
        raise ConfigError(f"{source}: no TOPIC,PARTITION,OFFSET line")
    return offsets


def offsets_csv(rows: Sequence[ResetRow]) -> str:
    """The planned offsets as ``TOPIC,PARTITION,OFFSET`` lines (``--export``)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for row in rows:
        writer.writerow([row.topic, row.partition, row.new])
    return out.getvalue()


def plan_reset(
    conf: Mapping[str, Any],
    group: str,
    selection: Selection,
    spec: ResetSpec,
    given: Mapping[PartitionKey, int] | None = None,
) -> list[ResetRow]:
    """Old -> new offset of the chosen partitions for ``group`` (nothing changes); with
    ``spec`` ``FILE``, ``given`` holds the new offset of each."""
    with OffsetProbe(conf) as probe:
        keys: list[PartitionKey] = []
        for topic, chosen in sorted(selection.items()):
            existing = probe.partitions(topic)
            missing = sorted(set(chosen) - set(existing))
            if missing:
                raise ConfigError(f"topic {topic!r} has no partition {missing[0]}")
            keys.extend((topic, p) for p in (chosen or existing))
        ends = probe.end_offsets(keys)
        starts = probe.start_offsets(keys)
    commits = committed_offsets(conf, group, list(selection))
    at_time: Mapping[PartitionKey, int] = {}
    if spec.to in (ResetTo.DATETIME, ResetTo.DURATION):
        at_time = offsets_at_time(conf, keys, spec.value)
    elif spec.to is ResetTo.FILE:
        at_time = dict(given or {})
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
