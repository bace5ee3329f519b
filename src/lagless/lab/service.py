"""One consumer service of a lab scenario: its topic, group, instances and lag sampler.

The one-service topology has one :class:`Service` (rolled). The article's topology has two:
service #1 (rolled) enriches each record into topic #2 (:mod:`lagless.lab.enrich`); service #2
(not rolled) consumes topic #2 with its own work. Each service records its own data and is
measured on its own (:meth:`Service.collect`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lagless.errors import LaglessError
from lagless.lab.instances import Instance
from lagless.lab.model import EventKind, InstanceEvent, ScenarioData, Trigger, Window
from lagless.lab.positions import owned_position_lag
from lagless.lab.sampler import EndsFn, LagSampler, TimestampFn
from lagless.lab.scenarios import Scenario

ENRICH_HANDLER = "lagless.lab.enrich:enrich"
ENRICH_BATCH = 100  # records per call of the enrich handler (one acknowledgement wait each)
# service #2's sleep handler takes batches of up to this many of a partition's records (one
# handler call, one completion): per record, the engine's hand-off to a worker thread and back
# cost more CPU than the 3.5 ms of sleeping work; a record is done when its batch is, at most
# (SERVICE2_BATCH - 1) x its work later than alone
SERVICE2_BATCH = 8
CONNECT_TIMEOUT_S = 60.0  # a starting instance waits this long for the cluster to answer
SLOW_START_S = 5.0  # an instance that took longer from its start to joining is reported


@dataclass(frozen=True)
class ServiceSpec:
    """What one service is: its place in the topology and its size."""

    name: str  # "service-1", "service-2"
    topic: str
    group: str
    partitions: int
    instances: int
    work_ms: float
    rolled: bool
    handler: str = "sleep"
    env: Mapping[str, str] = field(default_factory=dict)  # for its handler
    flags: tuple[str, ...] = ()  # more lagless consume flags (a batch handler's --batch-size)

    def to_json(self) -> dict[str, Any]:
        return {
            "service": self.name,
            "role": "rolled" if self.rolled else "downstream (not rolled)",
            "topic": self.topic,
            "group": self.group,
            "partitions": self.partitions,
            "instances": self.instances,
            "work_ms": self.work_ms,
            "handler": "enrich into the next topic" if self.handler == ENRICH_HANDLER else "sleep",
        }


def consumed_now(events: list[InstanceEvent]) -> set[int]:
    """The partitions one instance owns and has consumed since their assignment."""
    owned: set[int] = set()
    consuming: set[int] = set()
    for event in events:
        parts = set(event.partitions)
        if event.kind is EventKind.ASSIGNED:
            owned |= parts
        elif event.kind in (EventKind.REVOKED, EventKind.LOST):
            owned -= parts
            consuming -= parts
        elif event.kind is EventKind.CONSUMING:
            consuming |= parts & owned
    return consuming


class Service:
    """A service's instances (``lagless consume`` processes) and its lag sampler."""

    def __init__(
        self,
        spec: ServiceSpec,
        conf: Mapping[str, Any],
        bootstrap: str,
        scenario: Scenario,
        commit_interval_s: float,
        directory: Path,
    ) -> None:
        self.spec = spec
        self.conf = dict(conf)
        self.bootstrap = bootstrap
        self.scenario = scenario
        self.commit_interval_s = commit_interval_s
        self.directory = directory
        self.instances: list[Instance] = []
        self.sampler: LagSampler | None = None

    def start_sampler(self, ends: EndsFn | None, timestamp_ms: TimestampFn | None) -> LagSampler:
        spec = self.spec
        self.sampler = LagSampler(
            self.conf, spec.topic, spec.partitions, spec.group, ends, timestamp_ms,
            positions=self.position_lag,
        )  # fmt: skip
        self.sampler.start()
        return self.sampler

    def position_lag(self) -> dict[int, int]:
        """Position lag per partition an instance owns now (its gauge)."""
        return owned_position_lag([i.port for i in self.instances if i.running], self.spec.topic)

    def start(self, slot: int, gen: int) -> Instance:
        """Start the instance of ``slot``, generation ``gen`` (0 before any rollout)."""
        spec = self.spec
        instance = Instance(slot, gen, self.directory / f"s{slot}-g{gen}")
        args = [
            "--topic", spec.topic, "--group", spec.group, "--handler", spec.handler,
            "--ordering", "partition", "--max-in-flight", str(spec.partitions),
            "--on-failure", "stop", "--commit-interval", str(self.commit_interval_s),
            "--shutdown-budget", "10", "--connect-timeout", str(CONNECT_TIMEOUT_S),
            *spec.flags, *self.scenario.consume_flags(slot),
        ]  # fmt: skip
        instance.start(self.bootstrap, args, dict(spec.env))
        self.instances.append(instance)
        return instance

    def slow_starts(self) -> list[str]:
        """One note when instances took more than :data:`SLOW_START_S` from their start to
        joining the group (their SUBSCRIBED event): a loaded machine or a slow broker. They
        waited (up to :data:`CONNECT_TIMEOUT_S` for the cluster to answer); only a cluster that
        never answers makes one fail."""
        took = []
        for instance in self.instances:
            joined = [e.ts for e in instance.events() if e.kind is EventKind.SUBSCRIBED]
            if joined:
                took.append(joined[0] - instance.started_at)
        slow = [t for t in took if t > SLOW_START_S]
        if not slow:
            return []
        return [f"{self.spec.name}: {len(slow)} of {len(took)} instances took more than "
                f"{SLOW_START_S:.0f} s from their start to joining the group ({min(slow):.1f}-"
                f"{max(slow):.1f} s; a slow start, waited for)"]  # fmt: skip

    def current(self) -> list[Instance]:
        """Running instances not asked to stop."""
        return [i for i in self.instances if i.running and i.stop_sent_at is None]

    def all_consumed(self) -> bool:
        """Every partition has an owner that consumed it since its assignment."""
        consuming: set[int] = set()
        for instance in self.instances:
            if instance.running:
                consuming |= consumed_now(instance.events())
        return len(consuming) >= self.spec.partitions

    def check(self) -> None:
        """LaglessError naming an instance that exited without being asked to."""
        for instance in self.instances:
            if instance.stop_sent_at is None and not instance.running:
                failure = instance.failure() or f"{instance.name} exited on its own"
                raise LaglessError(f"{self.spec.name}: {failure}" if not self.spec.rolled
                                   else failure)  # fmt: skip

    def committed_to_end(self, ends: Mapping[int, int]) -> bool:
        assert self.sampler is not None
        committed = self.sampler.committed()
        return all(committed.get(p, 0) >= end for p, end in ends.items())

    def stop_all(self) -> None:
        for instance in self.instances:
            instance.stop()
        for instance in self.instances:
            instance.wait(timeout=60)
        if self.sampler is not None:
            self.sampler.stop()

    def collect(
        self,
        run_start: float,
        run_end: float,
        produced: list[Any],
        triggers: list[Trigger],
        windows: list[Window],
    ) -> ScenarioData:
        data = ScenarioData(
            run_start=run_start,
            run_end=run_end,
            partitions=self.spec.partitions,
            produced=produced,
            lag=list(self.sampler.samples) if self.sampler is not None else [],
            triggers=triggers,
            windows=windows,
        )
        for instance in self.instances:
            events = instance.events()
            if instance.exited_at is not None and not any(
                e.kind is EventKind.STOPPED for e in events
            ):  # died without a word: it owns nothing from its death on
                events.append(
                    InstanceEvent(instance.exited_at, instance.name, EventKind.STOPPED, (), False)
                )
            data.events.extend(events)
            data.processed.extend(instance.processed())
        data.events.sort(key=lambda e: e.ts)
        return data
