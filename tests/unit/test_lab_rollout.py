"""The rollout planner follows a Kubernetes Deployment's surge / unavailable rules."""

from __future__ import annotations

import pytest

from lagless.errors import ConfigError
from lagless.lab.model import ScenarioReport
from lagless.lab.rollout import Fleet, Step, plan
from lagless.lab.scenarios import SCENARIOS, parse_scenarios


def simulate(desired: int, surge: int, unavailable: int) -> list[str]:
    """Run the planner to the end; new instances become ready at once after each start."""
    old, new_running, new_ready, log = desired, 0, 0, []
    for _ in range(50):
        step = plan(Fleet(desired, old, old, new_running, new_ready), surge, unavailable)
        if step.done:
            return log
        if step.start:
            log.append(f"start {step.start}")
            new_running += step.start
        if step.stop:
            log.append(f"stop {step.stop}")
            old -= step.stop
        if not step.start and not step.stop:
            log.append("ready")
            new_ready = new_running
    raise AssertionError(f"never done: {log}")


def test_surge_one_starts_the_new_instance_before_stopping_an_old_one() -> None:
    assert simulate(3, 1, 0) == [
        "start 1", "ready", "stop 1", "start 1", "ready", "stop 1", "start 1", "ready", "stop 1",
    ]  # fmt: skip


def test_unavailable_one_stops_an_old_instance_then_starts_its_replacement() -> None:
    assert simulate(3, 0, 1) == [
        "stop 1", "start 1", "ready", "stop 1", "start 1", "ready", "stop 1", "start 1", "ready",
    ]  # fmt: skip


def test_never_below_the_ready_floor_while_new_instances_are_not_ready() -> None:
    # surge 1 / unavailable 0: a new instance started but not ready -> stop nothing
    assert plan(Fleet(3, 3, 3, 1, 0), 1, 0) == Step(0, 0, done=False)
    # during an eager rebalance old instances own nothing (not ready): stop nothing
    assert plan(Fleet(3, 3, 1, 0, 0), 0, 1) == Step(0, 0, done=False)


def test_large_surge_replaces_everything_at_once() -> None:
    assert plan(Fleet(3, 3, 3, 0, 0), 3, 0) == Step(3, 0, done=False)
    assert plan(Fleet(3, 3, 3, 3, 3), 3, 0) == Step(0, 3, done=False)
    assert plan(Fleet(3, 0, 0, 3, 3), 3, 0).done


def test_both_zero_is_rejected() -> None:
    with pytest.raises(ConfigError, match="cannot both be 0"):
        plan(Fleet(3, 3, 3, 0, 0), 0, 0)


def test_scenarios_parse_in_order_and_reject_typos() -> None:
    assert [s.name for s in parse_scenarios("mitigated, eager-defaults")] == [
        "mitigated", "eager-defaults",
    ]  # fmt: skip
    with pytest.raises(ConfigError, match="unknown 'mitigatd'"):
        parse_scenarios("mitigatd")
    with pytest.raises(ConfigError, match="twice"):
        parse_scenarios("static,static")


def test_scenario_flags_follow_their_settings() -> None:
    eager = SCENARIOS["eager-defaults"].consume_flags(0)
    assert eager[eager.index("--assignor") + 1] == "range"
    assert "--no-leave-group" in eager
    static = SCENARIOS["static"].consume_flags(2)
    assert static[static.index("--static-id") + 1] == "slot-2"
    kip848 = SCENARIOS["kip848"].consume_flags(0)
    assert "--session-timeout-ms" not in kip848 and "--assignor" not in kip848
    assert SCENARIOS["mitigated"].settings()["session.timeout.ms"] == 6000


def test_verdict_fails_on_failure_loss_missing_commits_and_nothing_run() -> None:
    from lagless.cli.lab import best_json, verdict
    from lagless.lab.measures import Improvements

    def row(name: str, **kw: object) -> ScenarioReport:
        base: dict[str, object] = {
            "scenario": name, "topic": "t", "group": "g", "settings": {}, "supported": True,
            "committed_to_end": True,
        }  # fmt: skip
        base.update(kw)
        return ScenarioReport(**base)  # type: ignore[arg-type]

    assert verdict([row("a")]) == []
    assert verdict([row("a", failed="s1-g0 was killed by signal 9 (SIGKILL)")]) == [
        "a failed: s1-g0 was killed by signal 9 (SIGKILL)"
    ]
    assert verdict([row("a", committed_to_end=False)]) == [
        "a: the group did not commit the end of t"
    ]
    assert verdict([row("k", supported=False, committed_to_end=None)]) == [
        "no scenario could run on this broker"
    ]
    assert best_json(Improvements("eager-defaults", ())) is None
