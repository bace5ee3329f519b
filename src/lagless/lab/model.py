"""What a rebalance-lab run records, and what it reports: the lab's data contract.

A lab run of one scenario collects four kinds of raw data, all stamped with the wall clock of this
machine (``time.time()``, seconds; every process of the lab runs on the same host):

* :class:`InstanceEvent` — written by each ``lagless consume`` instance to
  ``DIR/events.jsonl`` (its group life: subscribed, assigned, revoked, lost, consuming, ready,
  stopping, stopped);
* :class:`Processed` — one line per record the instance finished (its ledger, ``--ledger``);
* :class:`Produced` — one per record the lab's producer had acknowledged (id, partition, offset,
  timestamp);
* :class:`LagSample` — the independent lag sampler's reading of the group's committed offsets
  against the produced log ends;
and the lab's own :class:`Trigger` list (each instance it started or stopped) and rollout windows.

:mod:`lagless.lab.measures` turns these into :class:`Measures` (pure functions, unit-tested with
hand-made data) and :mod:`lagless.lab.page` into the HTML page.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from lagless.engine.events import EVENTS_FILE, EventKind
from lagless.engine.results.ledger import read_ledger as read_ledger_lines
from lagless.errors import LaglessError

LEDGER_FILE = "ledger.tsv"

__all__ = [  # EVENTS_FILE and EventKind are the engine's (lagless.engine.events)
    "EVENTS_FILE", "LEDGER_FILE", "EventKind", "InstanceEvent", "LagSample", "Measures",
    "Ownership", "Percentiles", "Processed", "Produced", "ScenarioData", "ScenarioReport",
    "ServiceReport", "Stat",
    "Trigger", "TriggerKind", "Window", "read_events", "read_ledger",
]  # fmt: skip


@dataclass(frozen=True)
class InstanceEvent:
    ts: float
    instance: str
    kind: EventKind
    partitions: tuple[int, ...] = ()
    left_group: bool | None = None  # on STOPPED: did it send LeaveGroup?

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"ts": self.ts, "instance": self.instance, "kind": str(self.kind)}
        if self.partitions:
            out["partitions"] = list(self.partitions)
        if self.left_group is not None:
            out["left_group"] = self.left_group
        return out

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> InstanceEvent:
        return cls(
            ts=float(doc["ts"]),
            instance=str(doc["instance"]),
            kind=EventKind(doc["kind"]),
            partitions=tuple(_partition(p) for p in doc.get("partitions", ())),
            left_group=doc.get("left_group"),
        )


@dataclass(frozen=True)
class Processed:
    """A record an instance finished (its handler ran to an outcome)."""

    instance: str
    partition: int
    offset: int
    id: str  # the record's lagless-id header ("" when absent)
    ts_ms: float  # the record's timestamp (producer create time), ms since the epoch
    done_ms: float  # when the handler finished, ms since the epoch
    outcome: str = "ok"  # ok | dlq | skipped


@dataclass(frozen=True)
class Produced:
    """A record the lab's producer had acknowledged by the broker."""

    id: str
    partition: int
    offset: int
    ts_ms: float


@dataclass(frozen=True)
class LagSample:
    """The group's lag at one moment, read by the lab (not by the instances).

    ``lag_records`` = sum over partitions of (log end - committed offset) (committed lag);
    ``lag_s`` = now - timestamp of the first record not yet committed, the largest over
    partitions (0 when caught up; None where the lab does not know the timestamps);
    ``position_lag_records`` = sum over partitions of the owner's position lag (log end - its
    consumer's position), a partition owned by nobody counted from its committed offset (None
    when not read). See :mod:`lagless.lab.sampler`.
    """

    ts: float
    lag_records: int
    lag_s: float | None
    per_partition: tuple[int, ...] = ()
    position_lag_records: int | None = None


class TriggerKind(StrEnum):
    START = "start"  # the lab started an instance (process launched)
    STOP = "stop"  # the lab asked an instance to stop (SIGTERM sent)


@dataclass(frozen=True)
class Trigger:
    ts: float
    kind: TriggerKind
    instance: str
    rollout: int  # 0 for the initial start, k >= 1 inside rollout k


@dataclass(frozen=True)
class Window:
    """A span of the run: a rollout (index >= 1), or the warm-up / cool-down (index 0)."""

    name: str
    start: float
    end: float


@dataclass(frozen=True)
class Stat:
    avg: float | None = None
    max: float | None = None


@dataclass(frozen=True)
class Percentiles:
    p50: float | None = None
    p99: float | None = None
    max: float | None = None
    avg: float | None = None


@dataclass(frozen=True)
class HandoverStat:
    """Handovers of one kind: how many, and each part's average and maximum in seconds."""

    count: int = 0
    draining_s: tuple[float, float] | None = None  # (avg, max)
    unowned_s: tuple[float, float] | None = None
    first_record_s: tuple[float, float] | None = None


@dataclass(frozen=True)
class Handovers:
    """A window's handovers (:mod:`lagless.lab.handovers`), from stopping and running owners."""

    from_stopping: HandoverStat = field(default_factory=HandoverStat)
    from_running: HandoverStat = field(default_factory=HandoverStat)


@dataclass(frozen=True)
class Measures:
    """One scenario's results; each figure is defined in :mod:`lagless.lab.measures`."""

    rebalances: int
    rebalance_s: Stat
    max_unconsumed_s: float
    max_lag_records: int
    max_lag_s: float | None
    e2e_ms: Percentiles
    e2e_rollout_ms: Percentiles
    lost: int
    duplicated: int
    ownership_overlaps: int
    overlap_s: float = 0.0
    processed: int = 0
    produced: int = 0
    max_position_lag_records: int | None = None
    handovers: Handovers | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Ownership:
    """One instance's hold on one partition, for the assignment strip and the overlap check.

    ``start``: assigned; ``consuming``: first record after the assignment (None if never);
    ``end``: revoked, lost or stopped (the run's end if still owned); ``consuming_end``: when
    consumption stopped (``end``, or the instance's STOPPING if earlier; None if never consuming).
    """

    partition: int
    instance: str
    start: float
    end: float
    consuming: float | None = None
    ended_by: str = "end"  # revoked | lost | stopped | end
    consuming_end: float | None = None

    @property
    def consuming_span(self) -> tuple[float, float] | None:
        """``[consuming, consuming_end)``: when this ownership consumed (None if it never did)."""
        if self.consuming is None or self.consuming_end is None:
            return None
        return (self.consuming, self.consuming_end)


@dataclass
class ScenarioData:
    """Everything recorded for one scenario run (the input of measures and page)."""

    run_start: float
    run_end: float
    partitions: int
    events: list[InstanceEvent] = field(default_factory=list)
    processed: list[Processed] = field(default_factory=list)
    produced: list[Produced] = field(default_factory=list)
    lag: list[LagSample] = field(default_factory=list)
    triggers: list[Trigger] = field(default_factory=list)
    windows: list[Window] = field(default_factory=list)
    downstream: ScenarioData | None = None  # the last service's data (two-service topology)


# -- files ----------------------------------------------------------------------------------


def read_events(path: Path) -> list[InstanceEvent]:
    """An instance's events file; a torn last line (killed writer) is ignored."""
    return list(_read_jsonl(path, InstanceEvent.from_json))


def read_ledger(path: Path, instance: str) -> list[Processed]:
    """An instance's ledger (the engine's ``--ledger`` file, see
    :mod:`lagless.engine.results.ledger`)."""
    return [
        Processed(instance, line.partition, line.offset, line.id, line.ts_ms, line.done_ms,
                  line.outcome)
        for line in read_ledger_lines(path)
    ]  # fmt: skip


def _partition(item: Any) -> int:
    """A partition as the engine writes it (``[topic, partition]``) or as a bare number."""
    return int(item[1]) if isinstance(item, list | tuple) else int(item)


def _read_jsonl(path: Path, parse: Any) -> Iterator[Any]:
    if not path.exists():
        return
    with path.open(encoding="utf-8") as fh:
        lines = fh.read().split("\n")
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            yield parse(json.loads(line))
        except (ValueError, KeyError, TypeError) as exc:
            if number == len(lines):
                return  # torn last line (no newline after it)
            raise LaglessError(f"{path}:{number}: malformed line: {exc}") from None


@dataclass(frozen=True)
class ServiceReport:
    """One service of a scenario: what it is (``spec``) and its own measures."""

    spec: dict[str, Any]
    measures: Measures | None

    def to_json(self) -> dict[str, Any]:
        return {**self.spec, **(self.measures.to_json() if self.measures is not None else {})}


@dataclass(frozen=True)
class ScenarioReport:
    """One row of the lab's table (and one object of ``--json``'s ``scenarios``)."""

    scenario: str
    topic: str
    group: str
    settings: dict[str, Any]
    supported: bool  # False: not run (the broker cannot run it); see ``note``
    note: str | None = None  # why the row is marked (a broker deviation), or why it was not run
    measures: Measures | None = None
    committed_to_end: bool | None = None  # the group committed up to the end of its topic
    failed: str | None = None  # why the scenario could not finish (its figures are partial)
    topology: str = "single"  # or "article": two services, service #1 rolled
    services: tuple[ServiceReport, ...] = ()  # the rolled service first
    cpu: dict[str, Any] | None = None  # lagless.lab.cpu over the rollouts

    @property
    def last(self) -> Measures | None:
        """The last service's measures (where end to end is measured)."""
        return self.services[-1].measures if self.services else self.measures

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "scenario": self.scenario,
            "topic": self.topic,
            "group": self.group,
            "settings": self.settings,
            "supported": self.supported,
            "note": self.note,
            "committed_to_end": self.committed_to_end,
            "failed": self.failed,
        }
        names = (
            "rebalances", "rebalance_s", "max_unconsumed_s", "max_lag_records", "max_lag_s",
            "e2e_ms", "e2e_rollout_ms", "lost", "duplicated", "ownership_overlaps", "overlap_s",
            "processed", "produced", "max_position_lag_records", "handovers",
        )  # fmt: skip
        doc = self.measures.to_json() if self.measures is not None else {}
        out.update({name: doc.get(name) for name in names})
        last = self.last.to_json() if self.last is not None else {}
        out["e2e_ms"], out["e2e_rollout_ms"] = last.get("e2e_ms"), last.get("e2e_rollout_ms")
        out["topology"] = self.topology
        out["services"] = [s.to_json() for s in self.services]
        out["cpu"] = self.cpu
        return out
