"""Run the lab: one scenario after the other, each on its own topic and group, the same load.

One scenario (:class:`ScenarioRun`), step by step:

1. create a fresh topic of P partitions; start the load (R records/s, W ms of work each) and the
   independent lag sampler;
2. start N instances and wait until every one is ready and every partition consumed;
3. warm up; then K rollouts, each replacing every instance once by the Deployment rules of
   :mod:`lagless.lab.rollout` (readiness from each instance's ``/readyz``);
4. cool down until the lag is back at its warm-up level; stop the load; wait until the group has
   committed the end of every partition; stop the instances;
5. read what the instances recorded and measure (:mod:`lagless.lab.measures`).

A scenario the cluster cannot run (KIP-848 where the broker never assigns) is reported "not
supported by this broker"; one it runs with a known deviation carries a note. Nothing is passed
over silently.
"""

from __future__ import annotations

import logging
import math
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from lagless.broker.mockcontrol import mock_control
from lagless.errors import ConfigError, LaglessError
from lagless.kafka.admin import create_topic, delete_topic
from lagless.kafka.cluster import ClusterInfo, supports_kip848
from lagless.lab.instances import Instance
from lagless.lab.load import Load
from lagless.lab.measures import measure
from lagless.lab.model import (
    EventKind,
    InstanceEvent,
    ScenarioData,
    ScenarioReport,
    Trigger,
    TriggerKind,
    Window,
)
from lagless.lab.rollout import Fleet, check_strategy, plan
from lagless.lab.sampler import LagSampler
from lagless.lab.scenarios import Scenario

log = logging.getLogger(__name__)

TICK_S = 0.25
SETTLE_HOLD_S = 5.0  # the lag must stay at its warm-up level this long to end the cool-down


@dataclass(frozen=True)
class LabConfig:
    """The lab's knobs (defaults fit a 2-core machine; docs/rebalance-lab.md)."""

    instances: int = 3
    partitions: int = 12
    rate: float = 1000.0
    work_ms: int = 1
    warmup_s: float = 15.0
    rollouts: int = 1
    max_surge: int | None = None  # None: each scenario's own
    max_unavailable: int | None = None
    commit_interval_s: float = 0.25
    min_ready_s: float = 5.0  # a new instance counts once ready this long (minReadySeconds)
    step_timeout_s: float = 240.0
    cooldown_max_s: float = 120.0
    keep_topics: bool = False  # else each scenario's topic is deleted once measured

    def __post_init__(self) -> None:
        if self.min_ready_s < 0 or not math.isfinite(self.min_ready_s):
            raise ConfigError("--min-ready must be 0 or more seconds")
        for name, value in (("--rate", self.rate), ("--warmup", self.warmup_s)):
            if not math.isfinite(value):
                raise ConfigError(f"{name} must be a finite number, not {value}")
        if self.instances < 1:
            raise ConfigError("--instances must be 1 or more")
        if self.partitions < self.instances:
            raise ConfigError("--partitions must be at least --instances (each needs one)")
        if self.rate <= 0:
            raise ConfigError("--rate must be positive")
        if self.work_ms < 0:
            raise ConfigError("--work-ms must be 0 or more")
        if self.rollouts < 1:
            raise ConfigError("--rollouts must be 1 or more")
        if self.warmup_s < 0:
            raise ConfigError("--warmup must be 0 or more")


@dataclass
class Status:
    """What the progress display shows."""

    scenario: str
    phase: str
    lag_records: int | None = None
    lag_s: float | None = None
    instances: list[tuple[str, bool]] = field(default_factory=list)  # (name, ready)


ShowFn = Callable[[Status], None]


def broker_notes(cluster: ClusterInfo, scenario: Scenario) -> list[str]:
    """Deviations of the cluster that change what a scenario shows (measured: docs/broker.md)."""
    notes: list[str] = []
    if cluster.is_mock and scenario.classic:
        notes.append("the mock cluster waits session.timeout.ms - 1 s in every classic rebalance")
        if scenario.static:
            notes.append("the mock cluster's classic protocol ignores static membership")
    if not cluster.is_tansu:
        return notes
    if scenario.classic:
        hold = scenario.session_ms // 2000
        notes.append(f"Tansu holds every join for session.timeout.ms / 2 ({hold} s)")
    if scenario.classic and scenario.assignor == "cooperative-sticky":
        notes.append("Tansu may hand partitions to a newcomer without revoking them (overlaps)")
    if scenario.static:
        notes.append("Tansu's static membership does not avoid the rebalance on a restart")
    return notes


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


class ScenarioRun:
    """One scenario, from a fresh topic to its measures."""

    def __init__(
        self,
        conf: Mapping[str, Any],
        cluster: ClusterInfo,
        config: LabConfig,
        scenario: Scenario,
        out: Path,
        show: ShowFn | None = None,
    ) -> None:
        self.conf = dict(conf)
        self.cluster = cluster
        self.config = config
        self.scenario = scenario
        self.out = out
        self._show = show
        run_id = uuid.uuid4().hex[:6]
        self.topic = f"lab-{scenario.name}-{run_id}"
        self.group = f"lab-{scenario.name}-{run_id}"
        self.surge = scenario.max_surge if config.max_surge is None else config.max_surge
        self.unavailable = (
            scenario.max_unavailable if config.max_unavailable is None else config.max_unavailable
        )
        check_strategy(self.surge, self.unavailable)
        if scenario.static and self.surge:
            raise ConfigError(
                "static: an instance is replaced in place (same group.instance.id): "
                "--max-surge must be 0"
            )
        self.mock = cluster.is_mock
        self.partitions = config.partitions
        self.instances: list[Instance] = []
        self.triggers: list[Trigger] = []
        self.windows: list[Window] = []
        self.notes = broker_notes(cluster, scenario)
        self._phase = "starting"
        self._ready_cache: dict[str, bool] = {}

    # -- the report --------------------------------------------------------------------

    def report(self, *, supported: bool, note: str | None = None) -> ScenarioReport:
        return ScenarioReport(
            scenario=self.scenario.name,
            topic=self.topic,
            group=self.group,
            settings=self.scenario.settings(self.surge, self.unavailable),
            supported=supported,
            note=note,
        )

    # -- run ---------------------------------------------------------------------------

    def run(self) -> tuple[ScenarioReport, ScenarioData | None]:
        """Run the scenario; its report (``failed`` set if it could not finish) and data."""
        if self.mock and mock_control(self.conf) is None:
            raise ConfigError(
                "this mock cluster is not held by lagless on this host (no control to create "
                "topics with): start one with 'lagless broker start --kind mock'"
            )
        create_topic(self.conf, self.topic, self.partitions)
        try:
            return self._run_on_topic()
        finally:
            self._clean_up()

    def _run_on_topic(self) -> tuple[ScenarioReport, ScenarioData | None]:
        load = Load(self.conf, self.topic, self.config.rate, self.config.work_ms, f"{self.topic}-")
        load.start()
        if not self.scenario.classic:
            self.phase("asking the broker for KIP-848")
            try:
                self._wait(lambda: bool(load.ends()), None, 30, "the topic received no record")
                supported = supports_kip848(self.conf, self.topic)
            except BaseException:
                load.stop()
                raise
            if not supported:
                load.stop()
                reason = (
                    "not supported by this broker: a group.protocol=consumer member got no "
                    "assignment in 10 s"
                )
                return self.report(supported=False, note=reason), None
        sampler = LagSampler(self.conf, self.topic, self.partitions, self.group, load)
        sampler.start()
        failure: str | None = None
        committed_to_end = False
        try:
            self._run_service(sampler)
            self.phase("draining: load stopped")
            load.stop()
            committed_to_end = self._wait_committed_to_end(sampler, load)
        except LaglessError as exc:
            failure = str(exc)
        finally:
            self.phase("stopping the service")
            load.stop()
            for instance in self.instances:
                instance.stop()
            for instance in self.instances:
                instance.wait(timeout=60)
            sampler.stop()
        data = self._collect(load, sampler)
        notes = list(self.notes)
        if load.failed:
            notes.append(f"{load.failed} records failed to produce: {load.first_error}")
        report = replace(
            self.report(supported=True, note="; ".join(notes) or None),
            measures=measure(data), committed_to_end=committed_to_end, failed=failure,
        )  # fmt: skip
        return report, data

    def _clean_up(self) -> None:
        """Delete the scenario's topic (its records are measured or the run was cut short),
        unless asked to keep it."""
        if self.config.keep_topics:
            return
        try:
            delete_topic(self.conf, self.topic)
        except LaglessError as exc:
            log.warning("lab: %s", exc)

    def phase(self, text: str) -> None:
        self._phase = text
        log.info("%s: %s", self.scenario.name, text)
        self.tick(None)

    def tick(self, sampler: LagSampler | None) -> None:
        if self._show is None:
            return
        latest = sampler.latest() if sampler is not None else None
        self._show(
            Status(
                scenario=self.scenario.name,
                phase=self._phase,
                lag_records=latest.lag_records if latest else None,
                lag_s=latest.lag_s if latest else None,
                instances=[
                    (i.name, self._ready_cache.get(i.name, False))
                    for i in self.instances
                    if i.running and i.stop_sent_at is None
                ],
            )
        )

    def _run_service(self, sampler: LagSampler) -> None:
        """Start, warm up, roll K times, cool down; LaglessError when an instance fails."""
        config = self.config
        self.phase(f"starting {config.instances} instances")
        first = [self._start(slot, rollout=0) for slot in range(config.instances)]
        start = time.time()
        self._wait(lambda: all(self._is_ready(i) for i in first) and self._all_consumed(),
                   sampler, config.step_timeout_s, "the service never became ready")  # fmt: skip
        log.info("%s: ready after %.1f s", self.scenario.name, time.time() - start)
        self.phase("catching up after the start")
        if not self._calm(sampler, self.floor(0)):
            self.notes.append("the service had not caught up with the load before the warm-up")
        warm_start = time.time()
        self.phase(f"warm-up ({config.warmup_s:.0f} s)")
        self._sleep(config.warmup_s, sampler)
        baseline = max([s.lag_records for s in sampler.samples if s.ts >= warm_start] or [0])
        self.windows.append(Window("warm-up", warm_start, time.time()))
        for k in range(1, config.rollouts + 1):
            began = time.time()
            self._rollout(k, sampler)
            self.windows.append(Window(f"rollout {k}", began, time.time()))
            self.phase(f"cool-down after rollout {k}")
            cool_start = time.time()
            self._cool_down(sampler, baseline)
            self.windows.append(Window("cool-down", cool_start, time.time()))
        self._check_instances()

    def _start(self, slot: int, rollout: int) -> Instance:
        """Start the instance of ``slot`` for ``rollout`` (its generation: 0 before any)."""
        instance = Instance(slot, rollout, self.out / f"s{slot}-g{rollout}")
        args = [
            "--topic", self.topic, "--group", self.group, "--handler", "sleep",
            "--ordering", "partition", "--max-in-flight", str(self.partitions),
            "--on-failure", "stop", "--commit-interval", str(self.config.commit_interval_s),
            "--shutdown-budget", "10", *self.scenario.consume_flags(slot),
        ]  # fmt: skip
        instance.start(self.cluster.bootstrap, args)
        self.instances.append(instance)
        self.triggers.append(
            Trigger(instance.started_at, TriggerKind.START, instance.name, rollout)
        )
        return instance

    def _stop(self, instance: Instance, rollout: int) -> None:
        instance.stop()
        assert instance.stop_sent_at is not None
        self.triggers.append(
            Trigger(instance.stop_sent_at, TriggerKind.STOP, instance.name, rollout)
        )

    def _rollout(self, k: int, sampler: LagSampler) -> None:
        """Replace every current instance once, by the surge / unavailable rules."""
        old = [i for i in self.instances if i.running and i.stop_sent_at is None]
        new: list[Instance] = []
        deadline = time.monotonic() + self.config.step_timeout_s
        while True:
            old_running = [i for i in old if i.stop_sent_at is None]
            fleet = Fleet(
                desired=len(old),
                old_running=len(old_running),
                old_ready=sum(self._is_ready(i) for i in old_running),
                new_running=len(new),
                new_ready=sum(self._is_ready(i) for i in new),
            )
            step = plan(fleet, self.surge, self.unavailable)
            if step.done:
                return
            if step.start or step.stop:
                deadline = time.monotonic() + self.config.step_timeout_s
            for _ in range(step.stop):
                victim = old_running.pop(0)
                self.phase(f"rollout {k}: stopping {victim.name}")
                self._stop(victim, k)
            for _ in range(step.start):
                slot = old[len(new)].slot  # the new instance takes the slot it replaces
                started = self._start(slot, rollout=k)
                new.append(started)
                self.phase(f"rollout {k}: started {started.name}, waiting for it to be ready")
            if time.monotonic() > deadline:
                waiting = [i.name for i in new if not self._ready_cache.get(i.name)]
                raise LaglessError(
                    f"rollout {k} did not complete in {self.config.step_timeout_s:.0f} s per "
                    f"instance: {', '.join(waiting) or 'old instances'} never became ready"
                )
            self._sleep(TICK_S, sampler)

    def floor(self, baseline: int) -> int:
        """The lag of a service that keeps up: its warm-up level, at least what arrives
        between two commits (plus half a second of work in progress)."""
        return max(baseline, int(self.config.rate * (self.config.commit_interval_s + 0.5)))

    def _cool_down(self, sampler: LagSampler, baseline: int) -> None:
        floor = self.floor(baseline)
        if not self._calm(sampler, floor):
            self.notes.append(f"lag not back to its warm-up level ({floor}) after the cool-down")

    def _calm(self, sampler: LagSampler, floor: int) -> bool:
        """Wait until the lag is at most ``floor`` for SETTLE_HOLD_S (at most cooldown_max_s)."""
        deadline = time.monotonic() + self.config.cooldown_max_s
        calm_since: float | None = None
        while time.monotonic() < deadline:
            latest = sampler.latest()
            if latest is not None and latest.lag_records <= floor:
                calm_since = calm_since or time.monotonic()
                if time.monotonic() - calm_since >= SETTLE_HOLD_S:
                    return True
            else:
                calm_since = None
            self._sleep(TICK_S, sampler)
        return False

    def _wait_committed_to_end(self, sampler: LagSampler, load: Load, timeout: float = 60) -> bool:
        ends = load.ends()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            committed = sampler.committed()
            if all(committed.get(p, 0) >= end for p, end in ends.items()):
                return True
            self._sleep(0.5, sampler)
        return False

    # -- helpers ---------------------------------------------------------------------------

    def _is_ready(self, instance: Instance) -> bool:
        """Ready and available: ready without a break for ``min_ready_s``."""
        ready = instance.running and instance.available(self.config.min_ready_s)
        self._ready_cache[instance.name] = ready
        return ready

    def _all_consumed(self) -> bool:
        """Every partition has an owner that consumed it since its assignment."""
        consuming: set[int] = set()
        for instance in self.instances:
            if instance.running:
                consuming |= consumed_now(instance.events())
        return len(consuming) >= self.partitions

    def _sleep(self, seconds: float, sampler: LagSampler | None) -> None:
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0:
            time.sleep(min(left, TICK_S))
            self._check_instances()
            self.tick(sampler)

    def _check_instances(self) -> None:
        """An instance that exits without being asked to (a crash, kill -9) ends the scenario:
        LaglessError naming it."""
        for instance in self.instances:
            if instance.stop_sent_at is None and not instance.running:
                raise LaglessError(instance.failure() or f"{instance.name} exited on its own")

    def _wait(
        self, done: Callable[[], bool], sampler: LagSampler | None, timeout: float, what: str
    ) -> None:
        deadline = time.monotonic() + timeout
        while not done():
            if time.monotonic() > deadline:
                raise LaglessError(f"{what} within {timeout:.0f} s")
            self._sleep(TICK_S, sampler)

    def _collect(self, load: Load, sampler: LagSampler) -> ScenarioData:
        triggers = sorted(self.triggers, key=lambda t: t.ts)
        data = ScenarioData(
            run_start=triggers[0].ts if triggers else time.time(),
            run_end=time.time(),
            partitions=self.partitions,
            produced=load.produced,
            lag=list(sampler.samples),
            triggers=triggers,
            windows=list(self.windows),
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
