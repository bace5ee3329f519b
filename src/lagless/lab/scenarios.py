"""The lab's scenarios: named, documented sets of consumer-group settings.

Each scenario says how the service's instances join, leave and are rolled. The settings are
those of the rebalance article's experiment (docs/rebalance-lab.md), plus KIP-848:

| scenario | protocol / assignor | session / heartbeat | on stop | rollout |
|---|---|---|---|---|
| eager-defaults | classic, range (eager) | 45 s / 3 s | exit without leaving | stop old, then start new (surge 0, unavailable 1) |
| cooperative-defaults | classic, cooperative-sticky | 45 s / 3 s | exit without leaving | stop old, then start new |
| short-session | cooperative-sticky | 6 s / 1.5 s | exit without leaving | stop old, then start new |
| leave-on-close | cooperative-sticky | 6 s / 1.5 s | leave the group | stop old, then start new |
| mitigated | classic, cooperative-sticky | 6 s / 1.5 s | leave the group | start new first (surge 1, unavailable 0) |
| static | mitigated + group.instance.id per slot | 20 s / 1.5 s | static: keep the place | stop old, start new with the same id |
| kip848 | consumer (KIP-848, broker-side uniform) | broker's | leave the group | start new first |
| kip848-static | consumer + group.instance.id per slot | broker's | static: keep the place | stop old, start new with the same id |

The ``*-defaults`` scenarios stop like Kafka Streams does by default: commit, then exit without
closing the consumer, so the group learns of the departure only when the session expires.
The first five are the **ablation**: each adds one mitigation to the one before it
(:data:`ABLATION`, :mod:`lagless.lab.ablation`); the last three replace an instance in place
or let the broker assign (:data:`ALTERNATIVES`). ``static`` must replace an instance in place (a second member with the same group.instance.id
would fence the first), so it rolls with surge 0; its session outlasts a restart, so on Apache
Kafka the returning member gets its partitions back without a rebalance.
"""  # noqa: E501

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lagless.errors import ConfigError


@dataclass(frozen=True)
class Scenario:
    name: str
    summary: str
    group_protocol: str = "classic"
    assignor: str = "range"
    session_ms: int = 45_000
    heartbeat_ms: int = 3_000
    leave_group: bool = False
    static: bool = False
    max_surge: int = 0
    max_unavailable: int = 1

    @property
    def classic(self) -> bool:
        return self.group_protocol == "classic"

    def settings(self, surge: int | None = None, unavailable: int | None = None) -> dict[str, Any]:
        """The settings as the table, the page and ``--json`` show them."""
        out: dict[str, Any] = {"group.protocol": self.group_protocol}
        if self.classic:
            out["partition.assignment.strategy"] = self.assignor
            out["session.timeout.ms"] = self.session_ms
            out["heartbeat.interval.ms"] = self.heartbeat_ms
        out["leave_group_on_close"] = self.leave_group and not self.static
        out["static_membership"] = self.static
        out["max_surge"] = self.max_surge if surge is None else surge
        out["max_unavailable"] = self.max_unavailable if unavailable is None else unavailable
        return out

    def consume_flags(self, slot: int) -> list[str]:
        """The ``lagless consume`` flags of this scenario for the instance in ``slot``."""
        flags = ["--group-protocol", self.group_protocol]
        if self.classic:
            flags += [
                "--assignor", self.assignor,
                "--session-timeout-ms", str(self.session_ms),
                "--heartbeat-ms", str(self.heartbeat_ms),
            ]  # fmt: skip
        if self.static:
            flags += ["--static-id", f"slot-{slot}"]
        if not self.leave_group:
            flags.append("--no-leave-group")
        return flags


SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in (
        Scenario(
            "eager-defaults",
            "range (eager), session 45 s, heartbeat 3 s, exit without leaving; stop, then start",
        ),
        Scenario(
            "cooperative-defaults",
            "cooperative-sticky, session 45 s, heartbeat 3 s, exit without leaving; stop, start",
            assignor="cooperative-sticky",
        ),
        Scenario(
            "short-session",
            "cooperative-sticky, session 6 s, heartbeat 1.5 s, exit without leaving; stop, start",
            assignor="cooperative-sticky", session_ms=6_000, heartbeat_ms=1_500,
        ),
        Scenario(
            "leave-on-close",
            "cooperative-sticky, session 6 s, heartbeat 1.5 s, leave on close; stop, then start",
            assignor="cooperative-sticky", session_ms=6_000, heartbeat_ms=1_500, leave_group=True,
        ),
        Scenario(
            "mitigated",
            "cooperative-sticky, session 6 s, heartbeat 1.5 s, leave on close; surge 1",
            assignor="cooperative-sticky", session_ms=6_000, heartbeat_ms=1_500, leave_group=True,
            max_surge=1, max_unavailable=0,
        ),
        Scenario(
            "static",
            "mitigated + group.instance.id per slot, session 20 s; restart in place",
            assignor="cooperative-sticky", session_ms=20_000, heartbeat_ms=1_500, leave_group=True,
            static=True, max_surge=0, max_unavailable=1,
        ),
        Scenario(
            "kip848",
            "group.protocol=consumer (KIP-848: the broker assigns incrementally); surge 1",
            group_protocol="consumer", leave_group=True, max_surge=1, max_unavailable=0,
        ),
        Scenario(
            "kip848-static",
            "KIP-848 + group.instance.id per slot; restart in place",
            group_protocol="consumer", leave_group=True, static=True, max_surge=0,
            max_unavailable=1,
        ),
    )
}  # fmt: skip

DEFAULT_SCENARIOS = tuple(SCENARIOS)

# One mitigation at a time: each scenario adds one lever to the one before it.
ABLATION = (
    "eager-defaults", "cooperative-defaults", "short-session", "leave-on-close", "mitigated",
)  # fmt: skip
# What replaces an instance in place, or lets the broker assign: compared with ``mitigated``.
ALTERNATIVES = ("static", "kip848", "kip848-static")


def parse_scenarios(text: str) -> tuple[Scenario, ...]:
    """``"a,b"`` -> the scenarios, in that order; ConfigError naming an unknown one."""
    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names:
        raise ConfigError("--scenarios: name at least one scenario")
    unknown = [name for name in names if name not in SCENARIOS]
    if unknown:
        raise ConfigError(
            f"--scenarios: unknown {', '.join(map(repr, unknown))}; choose from "
            f"{', '.join(SCENARIOS)}"
        )
    if len(set(names)) != len(names):
        raise ConfigError("--scenarios: a scenario is named twice")
    return tuple(SCENARIOS[name] for name in names)
