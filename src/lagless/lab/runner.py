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
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from lagless.broker.mockcontrol import mock_control
from lagless.errors import ConfigError, LaglessError
from lagless.kafka.cluster import ClusterInfo, supports_kip848
from lagless.kafka.compat import create_topic, delete_topic
from lagless.lab.config import LabConfig
from lagless.lab.cpu import CpuMeter
from lagless.lab.enrich import BOOTSTRAP_ENV, NEXT_WORK_ENV, OUTPUT_ENV
from lagless.lab.instances import Instance
from lagless.lab.load import Load
from lagless.lab.measures import measure
from lagless.lab.model import (
    ScenarioData,
    ScenarioReport,
    ServiceReport,
    Trigger,
    TriggerKind,
    Window,
)
from lagless.lab.rollout import Fleet, check_strategy, plan
from lagless.lab.scenarios import Scenario
from lagless.lab.service import (
    ENRICH_BATCH,
    ENRICH_HANDLER,
    SERVICE2_BATCH,
    Service,
    ServiceSpec,
)

log = logging.getLogger(__name__)

TICK_S = 0.25
SETTLE_HOLD_S = 5.0  # the lag must stay at its warm-up level this long to end the cool-down


@dataclass
class Status:
    """What the progress display shows."""

    scenario: str
    phase: str
    lag_records: int | None = None
    lag_s: float | None = None
    instances: list[tuple[str, bool]] = field(default_factory=list)  # (name, ready)


ShowFn = Callable[[Status], None]


OVERLAP_NOTE = "Tansu may hand partitions to a newcomer without revoking them (overlaps)"


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
        notes.append(OVERLAP_NOTE)
    if scenario.static:
        notes.append("Tansu's static membership does not avoid the rebalance on a restart")
    return notes


class ScenarioRun:
    """One scenario, from fresh topics to its measures."""

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
        self.services = self._services(run_id)
        self.rolled = self.services[0]
        self.triggers: list[Trigger] = []
        self.windows: list[Window] = []
        self.notes = broker_notes(cluster, scenario)
        self.cpu = CpuMeter()
        self._phase = "starting"
        self._ready_cache: dict[str, bool] = {}

    def _services(self, run_id: str) -> list[Service]:
        config, name = self.config, self.scenario.name
        first = ServiceSpec("service-1", self.topic, self.group, config.partitions,
                            config.instances, config.work_ms, rolled=True)  # fmt: skip
        specs = [first]
        if config.topology == "article":
            second = ServiceSpec(
                "service-2", f"lab-{name}-{run_id}-2", f"lab-{name}-{run_id}-2",
                config.partitions2, config.instances2, config.work2_ms, rolled=False,
                flags=("--batch-size", str(SERVICE2_BATCH)),
            )  # fmt: skip
            specs = [
                replace(
                    first, handler=ENRICH_HANDLER, flags=("--batch-size", str(ENRICH_BATCH)),
                    env={OUTPUT_ENV: second.topic, NEXT_WORK_ENV: str(config.work2_ms),
                         BOOTSTRAP_ENV: self.cluster.bootstrap},
                ),
                second,
            ]  # fmt: skip
        return [
            Service(
                spec,
                self.conf,
                self.cluster.bootstrap,
                self.scenario,
                config.commit_interval_s,
                self.out if spec.rolled else self.out / spec.name,
            )
            for spec in specs
        ]

    @property
    def instances(self) -> list[Instance]:
        """The rolled service's instances."""
        return self.rolled.instances

    # -- the report --------------------------------------------------------------------

    def report(self, *, supported: bool, note: str | None = None) -> ScenarioReport:
        return ScenarioReport(
            scenario=self.scenario.name,
            topic=self.topic,
            group=self.group,
            settings=self.scenario.settings(self.surge, self.unavailable),
            supported=supported,
            note=note,
            topology=self.config.topology,
        )

    # -- run ---------------------------------------------------------------------------

    def run(self) -> tuple[ScenarioReport, ScenarioData | None]:
        """Run the scenario; its report (``failed`` set if it could not finish) and data."""
        if self.mock and mock_control(self.conf) is None:
            raise ConfigError(
                "this mock cluster is not held by lagless on this host (no control to create "
                "topics with): start one with 'lagless broker start --kind mock'"
            )
        try:
            for service in self.services:
                create_topic(self.conf, service.spec.topic, service.spec.partitions)
            return self._run_on_topic()
        finally:
            self._clean_up()

    def _run_on_topic(self) -> tuple[ScenarioReport, ScenarioData | None]:
        load = Load(self.conf, self.topic, self.config.rate, self.config.work_ms, f"{self.topic}-")
        load.start()
        if not self.scenario.classic:
            self.phase("asking the broker for KIP-848")
            try:
                self._wait(lambda: bool(load.ends()), 30, "the topic received no record")
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
        self.rolled.start_sampler(load.ends, load.timestamp_ms)
        for service in self.services[1:]:
            service.start_sampler(None, None)
        failure: str | None = None
        committed_to_end = False
        try:
            self._run_service()
            self.phase("draining: load stopped")
            load.stop()
            committed_to_end = self._wait_committed_to_end(load)
        except LaglessError as exc:
            failure = str(exc)
        finally:
            self.phase("stopping the service")
            load.stop()
            for service in self.services:
                service.stop_all()
        return self._report(load, committed_to_end, failure)

    def _report(
        self, load: Load, committed_to_end: bool, failure: str | None
    ) -> tuple[ScenarioReport, ScenarioData]:
        triggers = sorted(self.triggers, key=lambda t: t.ts)
        run_start = triggers[0].ts if triggers else time.time()
        run_end, produced = time.time(), load.produced
        datas = [s.collect(run_start, run_end, produced, triggers if s.spec.rolled else [],
                           list(self.windows)) for s in self.services]  # fmt: skip
        measured = [measure(d) for d in datas]
        slow = [note for s in self.services for note in s.slow_starts()]
        notes = list(dict.fromkeys(self.notes + slow))  # a note repeated is said once
        notes.extend(load.notes())
        services = tuple(
            ServiceReport(s.spec.to_json(), m) for s, m in zip(self.services, measured, strict=True)
        )
        report = replace(
            self.report(supported=True, note="; ".join(notes) or None),
            measures=measured[0], committed_to_end=committed_to_end, failed=failure,
            services=services, cpu=self.cpu.to_json(),
        )  # fmt: skip
        data = datas[0]
        data.downstream = datas[-1] if len(datas) > 1 else None
        return report, data

    def _clean_up(self) -> None:
        """Delete the scenario's topics (their records are measured or the run was cut short),
        unless asked to keep them."""
        if self.config.keep_topics:
            return
        for service in self.services:
            try:
                delete_topic(self.conf, service.spec.topic)
            except LaglessError as exc:
                log.warning("lab: %s", exc)

    def phase(self, text: str) -> None:
        self._phase = text
        log.info("%s: %s", self.scenario.name, text)
        self.tick()

    def tick(self) -> None:
        self.cpu.sample([i for s in self.services for i in s.instances if i.running])
        if self._show is None:
            return
        sampler = self.rolled.sampler
        latest = sampler.latest() if sampler is not None else None
        self._show(
            Status(
                scenario=self.scenario.name,
                phase=self._phase,
                lag_records=latest.lag_records if latest else None,
                lag_s=latest.lag_s if latest else None,
                instances=[
                    (i.name, self._ready_cache.get(i.name, False)) for i in self.rolled.current()
                ],
            )
        )

    def _lags(self) -> list[int | None]:
        """Each service's committed lag now (None before its first reading)."""
        latest = [s.sampler.latest() if s.sampler is not None else None for s in self.services]
        return [None if sample is None else sample.lag_records for sample in latest]

    def _run_service(self) -> None:
        """Start, warm up, roll K times, cool down; LaglessError when an instance fails."""
        config = self.config
        for service in self.services:  # service #2 finds records waiting: it can show ready
            self.phase(f"starting {service.spec.instances} instances of {service.spec.name}")
            started = [self._start(service, slot, 0) for slot in range(service.spec.instances)]
            begun = time.time()
            self._wait(
                lambda s=service, first=started: all(self._is_ready(i) for i in first)  # type: ignore[misc]
                and s.all_consumed(),
                config.step_timeout_s, f"{service.spec.name} never became ready",
            )  # fmt: skip
            log.info("%s: %s ready after %.1f s", self.scenario.name, service.spec.name,
                     time.time() - begun)  # fmt: skip
        self.phase("catching up after the start")
        if not self._calm(self.floor([0] * len(self.services))):
            self.notes.append("the service had not caught up with the load before the warm-up")
        warm_start = time.time()
        self.phase(f"warm-up ({config.warmup_s:.0f} s)")
        self._sleep(config.warmup_s)
        baseline = [
            max([x.lag_records for x in s.sampler.samples if x.ts >= warm_start] or [0])
            for s in self.services
            if s.sampler is not None
        ]
        self.windows.append(Window("warm-up", warm_start, time.time()))
        self.cpu.begin()
        first_rollout = time.time()
        for k in range(1, config.rollouts + 1):
            due = first_rollout + (k - 1) * config.spacing_s
            if time.time() < due:
                self.phase(f"steady until rollout {k} ({due - time.time():.0f} s)")
                self._sleep(due - time.time())
            elif k > 1 and config.spacing_s:
                self.notes.append(f"rollout {k} started {time.time() - due:.0f} s later than "
                                  f"its spacing ({config.spacing_s:.0f} s): the last one "
                                  "took longer")  # fmt: skip
            began = time.time()
            self._rollout(k)
            self.windows.append(Window(f"rollout {k}", began, time.time()))
            self.phase(f"cool-down after rollout {k}")
            cool_start = time.time()
            self._cool_down(baseline)
            if k == config.rollouts and config.window_s:  # the window runs its full length
                self._sleep(first_rollout + config.window_s - time.time())
            self.windows.append(Window("cool-down", cool_start, time.time()))
        self.cpu.end()
        self._check_instances()

    def _start(self, service: Service, slot: int, rollout: int) -> Instance:
        """Start the instance of ``slot`` for ``rollout`` (its generation: 0 before any)."""
        instance = service.start(slot, rollout)
        if service.spec.rolled:
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

    def _rollout(self, k: int) -> None:
        """Replace every current instance of the rolled service once, by the surge /
        unavailable rules."""
        old = self.rolled.current()
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
                started = self._start(self.rolled, slot, rollout=k)
                new.append(started)
                self.phase(f"rollout {k}: started {started.name}, waiting for it to be ready")
            if time.monotonic() > deadline:
                waiting = [i.name for i in new if not self._ready_cache.get(i.name)]
                raise LaglessError(
                    f"rollout {k} did not complete in {self.config.step_timeout_s:.0f} s per "
                    f"instance: {', '.join(waiting) or 'old instances'} never became ready"
                )
            self._sleep(TICK_S)

    def floor(self, baseline: list[int]) -> list[int]:
        """Per service, the lag of a service that keeps up: its warm-up level, at least what
        arrives between two commits (plus half a second of work in progress)."""
        least = int(self.config.rate * (self.config.commit_interval_s + 0.5))
        return [max(least, b) for b in baseline] or [least]

    def _cool_down(self, baseline: list[int]) -> None:
        floor = self.floor(baseline)
        if not self._calm(floor):
            levels = " / ".join(map(str, floor))
            self.notes.append(f"lag not back to its warm-up level ({levels}) after the cool-down")

    def _calm(self, floor: list[int]) -> bool:
        """Wait until every service's lag is at most its ``floor`` for SETTLE_HOLD_S (at most
        cooldown_max_s)."""
        deadline = time.monotonic() + self.config.cooldown_max_s
        calm_since: float | None = None
        while time.monotonic() < deadline:
            lags = self._lags()
            if all(lag is not None and lag <= f for lag, f in zip(lags, floor, strict=False)):
                calm_since = calm_since or time.monotonic()
                if time.monotonic() - calm_since >= SETTLE_HOLD_S:
                    return True
            else:
                calm_since = None
            self._sleep(TICK_S)
        return False

    def _wait_committed_to_end(self, load: Load, stall_s: float = 60) -> bool:
        """Every service's group committed the end of its topic (service #2's ends read
        once service #1 is done: it wrote them). A backlog takes as long as it takes: the wait
        gives up only when a group's commits have not advanced for ``stall_s`` seconds."""
        for service in self.services:
            ends = load.ends() if service is self.rolled else self._broker_ends(service)
            assert service.sampler is not None
            deadline, seen = time.monotonic() + stall_s, -1
            while not service.committed_to_end(ends):
                done = sum(service.sampler.committed().values())
                if done > seen:
                    deadline, seen = time.monotonic() + stall_s, done
                elif time.monotonic() > deadline:
                    return False
                self._sleep(0.5)
        return True

    @staticmethod
    def _broker_ends(service: Service) -> dict[int, int]:
        assert service.sampler is not None
        return service.sampler.ends()

    # -- helpers ---------------------------------------------------------------------------

    def _is_ready(self, instance: Instance) -> bool:
        """Ready and available: ready without a break for ``min_ready_s``."""
        ready = instance.running and instance.available(self.config.min_ready_s)
        self._ready_cache[instance.name] = ready
        return ready

    def _sleep(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0:
            time.sleep(min(left, TICK_S))
            self._check_instances()
            self._end_grace()
            self.tick()

    def _end_grace(self) -> None:
        """Kill each stopping instance still running past the grace period (a manifest's
        terminationGracePeriodSeconds), as Kubernetes does; said in the scenario's notes."""
        grace = self.config.grace_period_s
        if grace is None:
            return
        now = time.time()
        for instance in self.rolled.instances:
            sent = instance.stop_sent_at
            if sent is not None and now - sent > grace and instance.running:
                instance.kill()
                self.notes.append(
                    f"{instance.name} still draining {grace:.0f} s after SIGTERM (the grace "
                    "period): killed, as Kubernetes does; what it had not committed runs again"
                )

    def _check_instances(self) -> None:
        """An instance that exits without being asked to (a crash, kill -9) ends the scenario:
        LaglessError naming it."""
        for service in self.services:
            service.check()

    def _wait(self, done: Callable[[], bool], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not done():
            if time.monotonic() > deadline:
                raise LaglessError(f"{what} within {timeout:.0f} s")
            self._sleep(TICK_S)
