"""The planner's arithmetic: partitions, recommended settings and what more partitions cost.

Pure functions of measured rates; :mod:`lagless.plan.measure` does the measuring.

``partitions = ceil(max(R / t_produce, R / t_consume) x headroom)``: one partition takes at most
``t_produce`` records/s from one producer and gives at most ``t_consume`` records/s to one
consumer (engine + handler), so the slower side decides; the headroom (default 1.2) leaves room
for bursts, catching up after an outage, and consumers that are not all equally fast.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from lagless.errors import ConfigError
from lagless.produce.profiles import Profile, profile_conf

KIB = 1024
MIB = 1024 * 1024
EPSILON = 1e-9


def partitions_needed(
    target_rate: float, t_produce: float, t_consume: float, headroom: float = 1.2
) -> int:
    """``ceil(max(R / t_produce, R / t_consume) * headroom)``, at least 1."""
    if target_rate <= 0:
        raise ConfigError("--target-rate must be positive")
    if t_produce <= 0 or t_consume <= 0:
        raise ConfigError("measured rates must be positive (nothing was produced or consumed)")
    if headroom < 1:
        raise ConfigError("--headroom must be at least 1")
    need = max(target_rate / t_produce, target_rate / t_consume) * headroom
    return max(1, math.ceil(need - EPSILON))  # 10 x 1.2 is 12, not 12.000000000000002


def bound_by(t_produce: float, t_consume: float) -> str:
    """Which side needs more partitions."""
    return "consume" if t_consume < t_produce else "produce"


def pow2_at_least(n: float, low: int, high: int) -> int:
    """The smallest power of two >= ``n``, clamped to ``low``..``high``."""
    value = low
    while value < n and value < high:
        value *= 2
    return min(value, high)


@dataclass(frozen=True)
class Setting:
    value: Any
    reason: str


@dataclass(frozen=True)
class Cost:
    name: str
    value: str
    reason: str


@dataclass(frozen=True)
class PlanInput:
    """What the plan is computed from (rates in records/s, sizes in bytes)."""

    target_rate: float
    t_produce: float
    t_consume: float
    record_bytes: int
    headroom: float = 1.2
    profile: Profile = Profile.THROUGHPUT
    handler_seconds: float | None = None  # mean handler time per record, if measured
    replication: int = 3


@dataclass(frozen=True)
class Plan:
    inputs: PlanInput
    partitions: int
    consumers: int
    settings: dict[str, dict[str, Setting]] = field(default_factory=dict)
    costs: list[Cost] = field(default_factory=list)

    @property
    def bound_by(self) -> str:
        return bound_by(self.inputs.t_produce, self.inputs.t_consume)

    def to_json(self) -> dict[str, Any]:
        i = self.inputs
        return {
            "t_produce": round(i.t_produce, 1),
            "t_consume": round(i.t_consume, 1),
            "target_rate": i.target_rate,
            "partitions": self.partitions,
            "settings": {
                client: {name: {"value": s.value, "reason": s.reason} for name, s in group.items()}
                for client, group in self.settings.items()
            },
            "headroom": i.headroom,
            "bound_by": self.bound_by,
            "consumers": self.consumers,
            "record_bytes": i.record_bytes,
            "profile": i.profile.value,
            "handler_seconds": i.handler_seconds,
            "costs": [{"name": c.name, "value": c.value, "reason": c.reason} for c in self.costs],
        }


def consumers_needed(inputs: PlanInput, partitions: int) -> int:
    """Consumer instances: enough to drain the target rate at the measured one-partition
    rate, never more than partitions (extra members get nothing)."""
    need = math.ceil(inputs.target_rate * inputs.headroom / inputs.t_consume - EPSILON)
    return max(1, min(partitions, need))


def human_bytes(n: float) -> str:
    for unit, size in (("GiB", 1024**3), ("MiB", MIB), ("KiB", KIB)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n:.0f} B"


def producer_settings(inputs: PlanInput, partitions: int) -> dict[str, Setting]:
    base = profile_conf(inputs.profile)
    per_partition = inputs.target_rate / partitions
    bytes_per_s = per_partition * inputs.record_bytes
    linger_ms = int(base["linger.ms"])
    in_linger = per_partition * linger_ms / 1000
    batch = pow2_at_least(2 * bytes_per_s * max(linger_ms, 1) / 1000, 16 * KIB, MIB)
    buffer_kib = max(64 * KIB, math.ceil(5 * inputs.target_rate * inputs.record_bytes / KIB))
    name = inputs.profile.value
    out = {
        "acks": Setting(
            base["acks"],
            "all: no loss when a leader fails (one more round trip)"
            if base["acks"] == "all"
            else f"1 ({name} profile): the leader's ack only; use --profile durability for all",
        ),
        "enable.idempotence": Setting(
            base["enable.idempotence"],
            "retries never duplicate or reorder records"
            if base["enable.idempotence"]
            else "off with acks=1; turn on (with acks=all) when duplicates on retry matter",
        ),
        "compression.type": Setting(
            base["compression.type"],
            {
                "lz4": "cheap on CPU at high rates; fewer bytes per batch on the wire and disk",
                "zstd": "smallest on disk and wire for durable data; more CPU",
                "none": "no compression CPU on the latency path",
            }.get(str(base["compression.type"]), "from the profile"),
        ),
        "linger.ms": Setting(
            linger_ms,
            f"at {per_partition:,.0f} records/s per partition a {linger_ms} ms wait gathers "
            f"~{in_linger:,.0f} records per batch"
            if linger_ms
            else "send at once: latency before batching",
        ),
        "batch.size": Setting(
            batch,
            f"twice what one partition gathers in linger.ms "
            f"({human_bytes(bytes_per_s * max(linger_ms, 1) / 1000)} at "
            f"{human_bytes(bytes_per_s)}/s), 16 KiB..1 MiB",
        ),
        "queue.buffering.max.kbytes": Setting(
            buffer_kib,
            f"5 s of the target rate ({human_bytes(inputs.target_rate * inputs.record_bytes)}/s) "
            "rides out a broker stall before produce() blocks",
        ),
        "message.timeout.ms": Setting(
            base["message.timeout.ms"],
            "how long a record may wait for delivery before it is reported failed",
        ),
    }
    return out


def consumer_settings(inputs: PlanInput, partitions: int, consumers: int) -> dict[str, Setting]:
    per_partition_bytes = inputs.target_rate / partitions * inputs.record_bytes
    share = math.ceil(partitions / consumers)
    fetch = pow2_at_least(per_partition_bytes / 2, MIB, 16 * MIB)
    latency = inputs.profile is Profile.LATENCY
    queue_kib = max(16 * KIB, math.ceil(2 * share * per_partition_bytes / KIB))
    return {
        "fetch.queue.backoff.ms": Setting(
            5,
            "librdkafka's 1000 ms default idles the fetcher whenever the local queue fills; "
            "5 ms about doubled consume throughput in our measurements",
        ),
        "max.partition.fetch.bytes": Setting(
            fetch,
            f"one fetch covers ~0.5 s of a partition ({human_bytes(per_partition_bytes)}/s), "
            "at least the 1 MiB default",
        ),
        "fetch.wait.max.ms": Setting(
            10 if latency else 100,
            "the broker answers a fetch after at most this long when data is short: "
            + ("low for latency" if latency else "short enough for sub-second lag"),
        ),
        "queued.max.messages.kbytes": Setting(
            queue_kib,
            f"prefetch ~2 s of this consumer's partitions ({share}) and no more: bounded memory",
        ),
        "partition.assignment.strategy": Setting(
            "cooperative-sticky",
            "incremental rebalances: only the partitions that move stop, the rest keep flowing",
        ),
        "session.timeout.ms": Setting(
            10_000,
            "a dead consumer's partitions move in ~10 s (default 45 s); lower risks spurious "
            "rebalances on CPU or GC pauses",
        ),
        "heartbeat.interval.ms": Setting(3000, "a third of the session timeout"),
        "enable.auto.commit": Setting(
            False, "the engine commits only offsets whose records are all finished"
        ),
    }


def engine_settings(inputs: PlanInput, partitions: int, consumers: int) -> dict[str, Setting]:
    out = {
        "instances": Setting(
            consumers,
            f"one instance consumed one partition at {inputs.t_consume:,.0f} records/s; "
            f"{inputs.target_rate:,.0f} x {inputs.headroom} needs {consumers}, "
            f"at most one per partition",
        ),
    }
    if inputs.handler_seconds is not None and inputs.handler_seconds > 0:
        per_instance = inputs.target_rate / consumers
        little = math.ceil(per_instance * inputs.handler_seconds * inputs.headroom - EPSILON)
        out["max_in_flight"] = Setting(
            max(1, min(10_000, little)),
            f"Little's law: {per_instance:,.0f} records/s per instance x "
            f"{inputs.handler_seconds * 1000:.2f} ms per record x {inputs.headroom} headroom "
            "records must be in flight at once",
        )
    return out


def partition_costs(
    inputs: PlanInput, plan_partitions: int, settings: dict[str, Any]
) -> list[Cost]:
    """What ``plan_partitions`` partitions cost beyond one."""
    p = plan_partitions
    rf = inputs.replication
    batch = int(settings["producer"]["batch.size"].value)
    fetch = int(settings["consumer"]["max.partition.fetch.bytes"].value)
    consumers = int(settings["engine"]["instances"].value)
    share = math.ceil(p / consumers)
    per_partition = inputs.target_rate / p
    return [
        Cost(
            "broker file handles",
            f">= {3 * p * rf:,}",
            f"3 per partition replica ({p} x RF {rf}): the active segment's .log, .index and "
            ".timeindex; 3 more for every retained segment",
        ),
        Cost(
            "producer memory",
            f"up to {human_bytes(p * batch)}",
            f"one open batch of batch.size ({human_bytes(batch)}) per partition it writes to, "
            "capped by queue.buffering.max.kbytes",
        ),
        Cost(
            "consumer memory",
            f"up to {human_bytes(share * fetch)} per instance",
            f"one fetch of max.partition.fetch.bytes ({human_bytes(fetch)}) per partition it "
            f"owns ({share}), capped by fetch.max.bytes and queued.max.messages.kbytes",
        ),
        Cost(
            "rebalance time",
            f"{p} partition{'s' if p != 1 else ''} to reassign",
            "each rebalance revokes, commits and re-fetches offsets per moved partition; an "
            "eager assignor stops all of them, cooperative-sticky only the moved ones. On the "
            "embedded broker a first assignment took ~3 s and a scale-out ~11 s",
        ),
        Cost(
            "batching",
            f"{per_partition:,.0f} records/s per partition",
            "the same rate over more partitions fills each batch slower: smaller requests, "
            "more of them, worse compression",
        ),
        Cost(
            "keys",
            "fixed at creation",
            "records are placed by hash(key) mod partitions: adding partitions later moves "
            "keys (and their order); plan for growth now",
        ),
    ]


def make_plan(inputs: PlanInput) -> Plan:
    """Partitions, settings with reasons and costs for ``inputs``."""
    if inputs.record_bytes < 1:
        raise ConfigError("--record-bytes must be at least 1")
    if inputs.replication < 1:
        raise ConfigError("--replication must be at least 1")
    partitions = partitions_needed(
        inputs.target_rate, inputs.t_produce, inputs.t_consume, inputs.headroom
    )
    consumers = consumers_needed(inputs, partitions)
    settings = {
        "producer": producer_settings(inputs, partitions),
        "consumer": consumer_settings(inputs, partitions, consumers),
        "engine": engine_settings(inputs, partitions, consumers),
    }
    costs = partition_costs(inputs, partitions, settings)
    return Plan(inputs, partitions, consumers, settings, costs)
