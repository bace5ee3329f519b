"""What the manifests say, derived from the App and the user's :class:`RenderOptions`.

:func:`derive` reads the App's own settings (group, topics, static id, shutdown budget,
outputs, session, port), checks them against the options and returns a frozen :class:`Plan`
from which :mod:`lagless.deploy.manifests` writes every object. A value that contradicts the App
(a static id in a Deployment, a grace period shorter than the drain, more replicas than
partitions) is a one-line :class:`~lagless.errors.ConfigError`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from lagless.app import App
from lagless.config import KafkaSettings
from lagless.deploy.drain import Drain, drain
from lagless.deploy.options import DEFAULT_PORT, RenderOptions, dns_name
from lagless.engine import EngineConfig
from lagless.errors import ConfigError

# the engine settings a rollout depends on: written into the manifest (the lab reads them back)
SETTINGS = (
    "group_protocol", "assignor", "session_timeout_ms", "heartbeat_interval_ms",
    "leave_group_on_close", "static_id", "commit_interval_s", "shutdown_budget_s",
    "ordering", "max_in_flight",
)  # fmt: skip

KEDA_SASL = {"PLAIN": "plaintext", "SCRAM-SHA-256": "scram_sha256",
             "SCRAM-SHA-512": "scram_sha512", "OAUTHBEARER": "oauthbearer"}  # fmt: skip


@dataclass(frozen=True)
class Partitions:
    """The smallest partition count of the App's topics, and where it came from."""

    count: int
    source: str  # "--partitions" or "the cluster (topic T)"


@dataclass(frozen=True)
class Plan:
    """Every value the manifests carry (see the module doc)."""

    options: RenderOptions
    name: str
    image: str
    group: str
    topics: tuple[str, ...]
    static: bool
    port: int
    max_surge: int
    max_unavailable: int
    min_ready_s: int
    drain: Drain
    grace_period_s: int
    partitions: Partitions | None
    max_replicas: int | None
    offset_reset: str
    settings: dict[str, dict[str, Any]] = field(default_factory=dict)
    keda_sasl: str | None = None
    keda_tls: bool = False


def derive(
    app: App,
    options: RenderOptions,
    partitions: Partitions | None = None,
    connection: KafkaSettings | None = None,
) -> Plan:
    """The plan for ``app`` (``partitions``: asked of the cluster or given; ``connection``: the
    settings the renderer sees, for KEDA's SASL/TLS mode). ConfigError on a contradiction."""
    configs = app.engine_configs()
    first = configs[0]
    static = _kind(options, configs)
    surge, unavailable = _strategy(options, static)
    bound = drain(app.specs, configs)
    grace = _grace(options, bound)
    if not (options.bootstrap or options.config_map or options.secret):
        raise ConfigError(
            "how do the pods reach Kafka? give --kafka-bootstrap HOST:PORT, --config-map NAME "
            "and/or --secret NAME (holding LAGLESS_BOOTSTRAP, LAGLESS_SASL_PASSWORD, ...)"
        )
    for flag, name_, needs in (
        ("--console-token-secret", "console_token_secret", "console"),
        ("--console-storage", "console_storage", "console"),
        ("--min-replicas", "min_replicas", "autoscale"),
        ("--lag-threshold", "lag_threshold", "autoscale"),
    ):
        if name_ in options.model_fields_set and not getattr(options, needs):
            raise ConfigError(f"{flag} applies to --{needs} only")
    if options.console and options.console_token_secret is None:
        raise ConfigError(
            "--console serves on 0.0.0.0 in its pod and needs a token: --console-token-secret "
            "NAME (a Secret with the key LAGLESS_UI_TOKEN)"
        )
    name = options.name or dns_name(app.group)
    check_names(name, options, static, "--name" if options.name else f"group {app.group!r}")
    topics = tuple(dict.fromkeys(t for c in configs for t in c.topics))
    max_replicas = _replicas_fit(options, partitions, surge)
    protocol = connection.security_protocol if connection is not None else "PLAINTEXT"
    mechanism = connection.sasl_mechanism if connection is not None else None
    return Plan(
        options=options,
        name=name,
        image=options.image or f"{name}:latest",
        group=first.group,
        topics=topics,
        static=static,
        port=options.port or app.metrics_port or DEFAULT_PORT,
        max_surge=surge,
        max_unavailable=unavailable,
        min_ready_s=(
            options.min_ready_s
            if options.min_ready_s is not None
            else math.ceil(max(c.session_timeout_ms for c in configs) / 1000)
        ),
        drain=bound,
        grace_period_s=grace,
        partitions=partitions,
        max_replicas=max_replicas,
        offset_reset=first.auto_offset_reset,
        settings={s.name: _settings(c) for s, c in zip(app.specs, configs, strict=True)},
        keda_sasl=KEDA_SASL.get(mechanism or "") if protocol.startswith("SASL") else None,
        keda_tls=protocol in ("SSL", "SASL_SSL"),
    )


NAME_MAX = 63  # a Service name (a DNS-1035 label), and any label value
STATEFULSET_NAME_MAX = 52  # its pods' controller-revision-hash label is NAME-<10 chars>


def check_names(name: str, options: RenderOptions, static: bool, source: str) -> None:
    """Every object named from ``name`` (``source``: where it came from) is one Kubernetes
    accepts: the Services' names (NAME-metrics, ...) are DNS-1035 labels of at most 63
    characters, starting with a letter; a StatefulSet's name has at most 52. One line
    naming the limit and the longest derived name; nothing is shortened behind the back."""
    if not name[0].isalpha():
        raise ConfigError(
            f"the name {name!r} (from {source}) starts with a digit: the Service {name}-metrics "
            "must start with a letter (DNS-1035); give --name"
        )
    derived = [f"{name}-metrics"] + [f"{name}-headless"] * static
    if options.console:
        derived += [f"{name}-console", f"{name}-console-store"]
    longest = max(derived, key=len)
    if len(longest) > NAME_MAX:
        raise ConfigError(
            f"the name {name!r} (from {source}) makes {longest!r}, {len(longest)} characters: "
            f"Kubernetes allows {NAME_MAX}; give a --name of at most "
            f"{NAME_MAX - len(longest) + len(name)}"
        )
    if static and len(name) > STATEFULSET_NAME_MAX:
        raise ConfigError(
            f"the name {name!r} (from {source}) has {len(name)} characters: a StatefulSet's name "
            f"allows {STATEFULSET_NAME_MAX} (its pods' controller-revision-hash label); give a "
            "shorter --name"
        )


def _kind(options: RenderOptions, configs: list[EngineConfig]) -> bool:
    """True for a StatefulSet: asked with --static, or the App sets a static id."""
    ids = [c.static_id for c in configs if c.static_id is not None]
    if ids and options.static is False:
        raise ConfigError(
            f"the app sets static_id={ids[0]!r}: every pod of a Deployment would join with it "
            "and fence the others; render a StatefulSet (drop --no-static: each pod's name "
            "becomes its group.instance.id)"
        )
    return bool(ids) if options.static is None else options.static


def _strategy(options: RenderOptions, static: bool) -> tuple[int, int]:
    if static:
        if options.max_surge:
            raise ConfigError(
                f"--max-surge {options.max_surge} with a StatefulSet: static members are "
                "replaced in place (a second member with the same group.instance.id would "
                "fence the first), so there is no surge"
            )
        unavailable = 1 if options.max_unavailable is None else options.max_unavailable
        if unavailable != 1:
            raise ConfigError(
                f"--max-unavailable {unavailable} with a StatefulSet: it replaces one pod at a "
                "time (maxUnavailable 1)"
            )
        return 0, 1
    surge = 1 if options.max_surge is None else options.max_surge
    unavailable = 0 if options.max_unavailable is None else options.max_unavailable
    if surge == 0 and unavailable == 0:
        raise ConfigError("--max-surge 0 with --max-unavailable 0: a rollout could never move")
    return surge, unavailable


def _grace(options: RenderOptions, bound: Drain) -> int:
    given = options.grace_period_s
    if given is None:
        return bound.grace_period_s
    if given < bound.grace_period_s:
        raise ConfigError(
            f"--grace-period {given} is shorter than the app's drain ({bound.describe()}): "
            "Kubernetes would kill it mid-drain and its finished records would run again"
        )
    return given


def _replicas_fit(options: RenderOptions, partitions: Partitions | None, surge: int) -> int | None:
    """The most replicas that each own a partition, also during a rollout's surge (None when
    the partition count is unknown); ConfigError when the asked replicas do not fit."""
    if partitions is None:
        if options.autoscale:
            raise ConfigError(
                "--autoscale caps replicas at the topic's partition count: give --partitions N "
                "or a cluster to ask (-b HOST:PORT, LAGLESS_BOOTSTRAP or --config)"
            )
        return None
    most = partitions.count - surge
    if most < 1:
        raise ConfigError(
            f"{partitions.count} partition(s) ({partitions.source}) leave no room for a surge "
            "pod: use --max-surge 0 --max-unavailable 1"
        )
    if options.replicas > most:
        raise ConfigError(
            f"--replicas {options.replicas} with surge {surge} needs more than "
            f"{partitions.count} partitions ({partitions.source}): a pod that owns no "
            f"partition is never ready and stalls the rollout; use at most {most} replicas"
        )
    if options.autoscale and options.min_replicas > most:
        raise ConfigError(f"--min-replicas {options.min_replicas} is over the cap of {most}")
    return most


def _settings(config: EngineConfig) -> dict[str, Any]:
    dumped: Mapping[str, Any] = config.model_dump(mode="json")
    return {name: dumped[name] for name in SETTINGS}
