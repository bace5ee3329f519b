"""Rolling a service like a Kubernetes Deployment: how many instances to start or stop now.

The rules of a Deployment's ``RollingUpdate`` strategy, for ``desired`` instances:

* never more than ``desired + max_surge`` instances running (old and new; an instance asked to
  stop no longer counts, as a terminating pod does not);
* never fewer than ``desired - max_unavailable`` ready instances;
* a new instance counts as ready once it owns partitions and consumes (its ``/readyz``).

:func:`plan` is pure: the runner calls it whenever something changed and carries out what it
says, until :attr:`Step.done`.
"""

from __future__ import annotations

from dataclasses import dataclass

from lagless.errors import ConfigError


@dataclass(frozen=True)
class Fleet:
    """The service now: instances of the old and the new version."""

    desired: int
    old_running: int  # old instances not yet asked to stop
    old_ready: int
    new_running: int  # new instances started (ready or not)
    new_ready: int


@dataclass(frozen=True)
class Step:
    start: int  # new instances to start now
    stop: int  # old instances to stop now
    done: bool  # the rollout is complete


def check_strategy(max_surge: int, max_unavailable: int) -> None:
    if max_surge < 0 or max_unavailable < 0:
        raise ConfigError("--max-surge and --max-unavailable must be 0 or more")
    if max_surge == 0 and max_unavailable == 0:
        raise ConfigError("--max-surge and --max-unavailable cannot both be 0")


def plan(fleet: Fleet, max_surge: int, max_unavailable: int) -> Step:
    """What to do now, by the Deployment rules (see the module doc)."""
    check_strategy(max_surge, max_unavailable)
    if fleet.old_running == 0 and fleet.new_ready >= fleet.desired:
        return Step(0, 0, done=True)
    room = fleet.desired + max_surge - (fleet.old_running + fleet.new_running)
    start = max(0, min(fleet.desired - fleet.new_running, room))
    available = fleet.old_ready + fleet.new_ready
    stop = max(0, min(fleet.old_running, available - (fleet.desired - max_unavailable)))
    return Step(start, stop, done=False)
