"""The lab's knobs (one frozen config, validated here) and its named profiles.

``--profile article`` is the size and shape of the rebalance article's experiment: two services
(service #1: 3 instances on 48 partitions, 1 ms of work, enriching into topic #2; service #2:
4 instances on 64 partitions, 3.5 ms of work), 3,600 events/s, 4 rollouts of service #1 spaced
over the window — compressed to :data:`COMPRESSED_WINDOW_S` unless ``--article-time`` asks for
the article's 30 minutes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from lagless.errors import ConfigError

TOPOLOGIES = ("single", "article")
PROFILES = ("default", "article")
ARTICLE_WINDOW_S = 1800.0  # the article: 4 rolling updates in 30 minutes
COMPRESSED_WINDOW_S = 360.0


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
    topology: str = "single"  # or "article": service #1 enriches into topic #2 for service #2
    instances2: int = 4  # service #2 (article topology)
    partitions2: int = 64
    work2_ms: float = 3.5
    grace_period_s: float | None = None  # a stopping instance still running this long after
    # SIGTERM is killed, as Kubernetes does after terminationGracePeriodSeconds (None: never)
    window_s: float = 0.0  # > 0: rollout k starts no earlier than (k - 1) x window / K in

    def __post_init__(self) -> None:
        if self.min_ready_s < 0 or not math.isfinite(self.min_ready_s):
            raise ConfigError("--min-ready must be 0 or more seconds")
        finite = (("--rate", self.rate), ("--warmup", self.warmup_s),
                  ("--work2-ms", self.work2_ms), ("--window", self.window_s))  # fmt: skip
        for name, value in finite:
            if not math.isfinite(value):
                raise ConfigError(f"{name} must be a finite number, not {value}")
        if self.topology not in TOPOLOGIES:
            raise ConfigError(f"--topology {self.topology!r}: choose {' or '.join(TOPOLOGIES)}")
        if self.instances < 1 or self.instances2 < 1:
            raise ConfigError("--instances and --instances2 must be 1 or more")
        if self.partitions < self.instances:
            raise ConfigError("--partitions must be at least --instances (each needs one)")
        if self.topology == "article" and self.partitions2 < self.instances2:
            raise ConfigError("--partitions2 must be at least --instances2 (each needs one)")
        if self.rate <= 0:
            raise ConfigError("--rate must be positive")
        if self.work_ms < 0 or self.work2_ms < 0:
            raise ConfigError("--work-ms and --work2-ms must be 0 or more")
        if self.rollouts < 1:
            raise ConfigError("--rollouts must be 1 or more")
        if self.warmup_s < 0 or self.window_s < 0:
            raise ConfigError("--warmup and --window must be 0 or more")
        grace = self.grace_period_s
        if grace is not None and not (math.isfinite(grace) and grace >= 0):
            raise ConfigError(f"the grace period must be 0 or more seconds, not {grace}")

    @property
    def spacing_s(self) -> float:
        """Rollouts start at least this far apart (0: each right after the last cool-down)."""
        return self.window_s / self.rollouts if self.window_s else 0.0

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "topology": self.topology, "instances": self.instances,
            "partitions": self.partitions, "rate": self.rate, "work_ms": self.work_ms,
            "rollouts": self.rollouts, "window_s": self.window_s, "warmup_s": self.warmup_s,
            "min_ready_s": self.min_ready_s, "commit_interval_s": self.commit_interval_s,
        }  # fmt: skip
        if self.grace_period_s is not None:
            out["grace_period_s"] = self.grace_period_s
        if self.topology == "article":
            out.update(instances2=self.instances2, partitions2=self.partitions2,
                       work2_ms=self.work2_ms)  # fmt: skip
        return out


ARTICLE = LabConfig(
    instances=3, partitions=48, rate=3600.0, work_ms=1, rollouts=4, topology="article",
    instances2=4, partitions2=64, work2_ms=3.5, window_s=COMPRESSED_WINDOW_S,
)  # fmt: skip


def profile(name: str, article_time: bool = False, **given: Any) -> LabConfig:
    """The profile ``name`` with the options given on the command line (None: the profile's)
    applied on top; ``article_time``: the article's 30-minute window."""
    if name not in PROFILES:
        raise ConfigError(f"--profile {name!r}: choose {' or '.join(PROFILES)}")
    if article_time and name != "article":
        raise ConfigError("--article-time applies to --profile article")
    base = ARTICLE if name == "article" else LabConfig()
    if article_time:
        base = replace(base, window_s=ARTICLE_WINDOW_S)
    return replace(base, **{k: v for k, v in given.items() if v is not None})
