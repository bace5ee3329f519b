"""A rendered manifest read back: the rollout it describes, for ``lagless lab rebalance
--deployment FILE.yaml`` (so a user measures the rollout they are about to apply).

:func:`read_rollout` finds the Deployment or StatefulSet that ``lagless deploy render`` wrote
(its ``lagless.dev/settings`` annotation carries the App's engine settings) and returns a
:class:`Rollout`: the replicas, ``maxSurge`` / ``maxUnavailable`` (percentages resolved as
Kubernetes does), ``minReadySeconds``, the grace period and the first handler's settings.
:meth:`Rollout.scenario` is the lab scenario of those settings; :meth:`Rollout.taken` says, one
line each, what the lab takes from the manifest and what it does not.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from lagless.deploy.manifests import ANNOTATION
from lagless.errors import ConfigError
from lagless.lab.scenarios import Scenario

WORKLOADS = ("Deployment", "StatefulSet")


@dataclass(frozen=True)
class Rollout:
    """What a rendered workload says about its rollout and its consumers."""

    source: str
    kind: str
    name: str
    replicas: int
    max_surge: int
    max_unavailable: int
    min_ready_s: int
    grace_period_s: int | None
    handler: str
    settings: dict[str, Any] = field(default_factory=dict)
    other_handlers: tuple[str, ...] = ()

    @property
    def static(self) -> bool:
        return self.kind == "StatefulSet" or self.settings.get("static_id") is not None

    def scenario(self) -> DeployedScenario:
        """The lab scenario of this rollout: the handler's group settings, the surge."""
        s = self.settings
        return DeployedScenario(
            name=self.name,
            summary=f"{self.kind} {self.name} from {self.source} (handler {self.handler})",
            group_protocol=s.get("group_protocol", "classic"),
            assignor=s.get("assignor", "cooperative-sticky"),
            session_ms=int(s.get("session_timeout_ms", 10_000)),
            heartbeat_ms=int(s.get("heartbeat_interval_ms", 3_000)),
            leave_group=bool(s.get("leave_group_on_close", True)),
            static=self.static,
            max_surge=self.max_surge,
            max_unavailable=self.max_unavailable,
            shutdown_budget_s=float(s.get("shutdown_budget_s", 30.0)),
        )

    def lab_values(self) -> dict[str, Any]:
        """The lab's knobs this manifest sets (``LabConfig`` keywords)."""
        values: dict[str, Any] = {
            "instances": self.replicas,
            "min_ready_s": float(self.min_ready_s),
            "max_surge": self.max_surge,
            "max_unavailable": self.max_unavailable,
        }
        if self.grace_period_s is not None:
            values["grace_period_s"] = float(self.grace_period_s)
        if "commit_interval_s" in self.settings:
            values["commit_interval_s"] = float(self.settings["commit_interval_s"])
        return values

    def taken(self) -> list[str]:
        """What the lab takes from the manifest, and what it does not, one line each."""
        s = self.settings
        lines = [
            f"from {self.source}: {self.kind} {self.name}, replicas {self.replicas}, maxSurge "
            f"{self.max_surge}, maxUnavailable {self.max_unavailable}, minReadySeconds "
            f"{self.min_ready_s}",
            f"from {self.source}: handler {self.handler}: group.protocol "
            f"{s.get('group_protocol')}, assignor {s.get('assignor')}, session "
            f"{s.get('session_timeout_ms')} ms, heartbeat {s.get('heartbeat_interval_ms')} ms, "
            f"leave on close {s.get('leave_group_on_close')}, static {self.static}, shutdown "
            f"budget {s.get('shutdown_budget_s')} s, commit interval "
            f"{s.get('commit_interval_s')} s",
        ]
        if self.grace_period_s is not None:
            lines.append(
                f"from {self.source}: terminationGracePeriodSeconds {self.grace_period_s}: the lab "
                "kills a stopping instance still running that long after SIGTERM, as Kubernetes "
                "does"
            )
        if self.other_handlers:
            lines.append(
                f"not taken: the settings of handler(s) {', '.join(self.other_handlers)} (the "
                "lab's instances run one engine, with the first handler's settings)"
            )
        return lines


@dataclass(frozen=True)
class DeployedScenario(Scenario):
    """A lab scenario from a manifest: the App's own shutdown budget as well."""

    shutdown_budget_s: float = 30.0

    def consume_flags(self, slot: int) -> list[str]:
        return [*super().consume_flags(slot), "--shutdown-budget", f"{self.shutdown_budget_s:g}"]


def read_rollout(path: Path) -> Rollout:
    """The rollout of the lagless workload in ``path`` (a file ``lagless deploy render``
    wrote, alone or with the other objects); one-line ConfigError otherwise."""
    try:
        documents = [d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict)]
    except OSError as exc:
        raise ConfigError(f"--deployment {path}: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"--deployment {path}: not YAML ({str(exc).splitlines()[0]})") from None
    for doc in documents:
        if doc.get("kind") in WORKLOADS and _annotation(doc, "settings") is not None:
            return _rollout(str(path), doc)
    raise ConfigError(
        f"--deployment {path}: no Deployment or StatefulSet rendered by lagless deploy render "
        f"in it (with the {ANNOTATION}/settings annotation)"
    )


def _annotation(doc: dict[str, Any], name: str) -> str | None:
    annotations = (doc.get("metadata") or {}).get("annotations") or {}
    value = annotations.get(f"{ANNOTATION}/{name}")
    return value if isinstance(value, str) else None


def _rollout(source: str, doc: dict[str, Any]) -> Rollout:
    spec = doc.get("spec") or {}
    name = str((doc.get("metadata") or {}).get("name", "deployment"))
    try:
        per_handler: dict[str, dict[str, Any]] = json.loads(_annotation(doc, "settings") or "")
        handler = next(iter(per_handler))
        replicas = int(spec.get("replicas", 1))
        pod = spec["template"]["spec"]
    except (ValueError, StopIteration, KeyError, TypeError) as exc:
        raise ConfigError(f"--deployment {source}: {name} is not as rendered ({exc!r})") from None
    if doc["kind"] == "StatefulSet":
        surge, unavailable = 0, 1
    else:
        rolling = (spec.get("strategy") or {}).get("rollingUpdate") or {}
        surge = _count(rolling.get("maxSurge", "25%"), replicas, math.ceil)
        unavailable = _count(rolling.get("maxUnavailable", "25%"), replicas, math.floor)
    grace = pod.get("terminationGracePeriodSeconds")
    return Rollout(
        source=source, kind=doc["kind"], name=name, replicas=replicas, max_surge=surge,
        max_unavailable=unavailable, min_ready_s=int(spec.get("minReadySeconds", 0)),
        grace_period_s=None if grace is None else int(grace), handler=handler,
        settings=per_handler[handler], other_handlers=tuple(list(per_handler)[1:]),
    )  # fmt: skip


def _count(value: object, replicas: int, rounding: Any) -> int:
    """An int or a percentage of ``replicas`` (maxSurge rounds up, maxUnavailable down)."""
    if isinstance(value, str) and value.endswith("%"):
        return int(rounding(replicas * float(value[:-1]) / 100))
    return int(str(value))
