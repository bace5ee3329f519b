"""Engine options: one frozen, typed model validated at the boundary.

:class:`EngineConfig` holds what the engine does (topics, group, ordering, concurrency,
retries, commits, rebalance budgets, stop conditions); :meth:`EngineConfig.consumer_conf`
is the one place the librdkafka consumer settings are derived from it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from enum import StrEnum
from typing import Any, Literal, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from lagless.errors import ConfigError
from lagless.kafka.names import check_topic


class Ordering(StrEnum):
    """What the engine keeps in order."""

    PARTITION = "partition"  # one record of a partition at a time, in offset order
    KEY = "key"  # one record of a (partition, key) at a time; keyless records unordered
    UNORDERED = "unordered"  # any record may run beside any other


class OnFailure(StrEnum):
    """What happens to a record that failed every attempt when there is no DLQ topic."""

    STOP = "stop"  # stop the engine; the record stays uncommitted (re-run after a restart)
    SKIP = "skip"  # log it and move on (counted as skipped)


Assignor = Literal["cooperative-sticky", "range", "roundrobin"]
OffsetReset = Literal["earliest", "latest"]
GroupProtocol = Literal["classic", "consumer"]
RemoteAssignor = Literal["uniform", "range"]

# the classic protocol's client-side settings, which KIP-848 moves to the broker
CLASSIC_ONLY = ("assignor", "session_timeout_ms", "heartbeat_interval_ms")
FETCH_QUEUE_BACKOFF_MS = 5  # librdkafka: how long the fetcher backs off when its queue is full
FETCH_WAIT_MAX_MS = 50  # the broker long-poll wait: bounds how long a resumed partition idles


class EngineConfig(BaseModel):
    """What the engine consumes and how."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    topics: tuple[str, ...] = Field(min_length=1)
    group: str = Field(min_length=1)
    ordering: Ordering = Ordering.PARTITION
    max_in_flight: int = Field(64, ge=1, le=10_000, description="records handled at once")
    max_pending: int = Field(
        1000,
        ge=1,
        description="per partition: records between the committable offset and the last "
        "fetched (buffered, in flight, done above the first unfinished); over it the "
        "partition is paused",
    )
    processes: int = Field(0, ge=0, le=256, description="0: threads; N: a pool of N processes")
    batch_size: int | None = Field(
        None, ge=1, le=100_000, description="call the handler with batches of up to N records"
    )
    batch_linger_ms: float = Field(
        0.0, ge=0, le=60_000, description="wait up to this long to fill a batch"
    )
    inline: bool = Field(
        True,
        description="a handler measured fast and busy runs on the poll thread (per record: "
        "records of a partition holding nothing else as they are polled, and tasks; batches: "
        "their first call; see lagless.engine.workers.inline); False: always on the worker "
        "threads",
    )
    retries: int = Field(3, ge=0, le=100)
    retry_backoff_s: float = Field(0.1, gt=0)
    retry_backoff_max_s: float = Field(5.0, gt=0)
    dlq_topic: str | None = None
    on_failure: OnFailure | None = None
    commit_interval_s: float = Field(1.0, ge=0, description="commit at least this often")
    commit_every: int = Field(1000, ge=1, description="or after this many records finished")
    group_protocol: GroupProtocol = Field(
        "classic",
        description="classic: client-side assignor, rebalances in rounds; consumer: KIP-848, "
        "the broker assigns incrementally (assignor and session move to the broker)",
    )
    remote_assignor: RemoteAssignor | None = Field(
        None, description="group.protocol=consumer only: the broker-side assignor"
    )
    assignor: Assignor = "cooperative-sticky"
    static_id: str | None = Field(None, min_length=1)
    client_id: str | None = Field(None, min_length=1, description="client.id (shown by the broker)")
    leave_group_on_close: bool = Field(
        True,
        description="send LeaveGroup when stopping (partitions move at once); False: stop "
        "without leaving, as Kafka Streams does by default: the partitions wait for the "
        "session timeout (the process must exit without closing the consumer)",
    )
    session_timeout_ms: int = Field(10_000, ge=1000)
    heartbeat_interval_ms: int = Field(3000, ge=100)
    max_poll_interval_ms: int = Field(300_000, ge=1000)
    auto_offset_reset: OffsetReset = "earliest"
    revoke_budget_s: float = Field(5.0, ge=0, description="wait for in-flight work on revoke")
    shutdown_budget_s: float = Field(30.0, ge=0, description="wait for in-flight work at stop")
    stall_seconds: float = Field(60.0, gt=0, description="log records unfinished this long")
    count: int | None = Field(None, ge=1, description="stop after this many records finished")
    until_idle_s: float | None = Field(
        None, gt=0, description="stop after this long idle, counted from the first assignment"
    )
    poll_batch: int = Field(500, ge=1, le=100_000)
    consumer_overrides: dict[str, str] = Field(default_factory=dict)

    @field_validator("topics")
    @classmethod
    def _topic_names(cls, topics: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(check_topic(t) for t in topics)

    @field_validator("dlq_topic")
    @classmethod
    def _dlq_topic_name(cls, topic: str | None) -> str | None:
        return None if topic is None else check_topic(topic)

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if self.dlq_topic is None and self.on_failure is None:
            raise ValueError(
                "without a DLQ topic (dlq_topic), choose what a failed record does: stop or "
                "skip (on_failure stop|skip)"
            )
        if self.dlq_topic is not None and self.on_failure is not None:
            raise ValueError("on_failure applies only without dlq_topic")
        if self.dlq_topic is not None and self.dlq_topic in self.topics:
            raise ValueError("the DLQ topic cannot be one of the consumed topics")
        if self.heartbeat_interval_ms >= self.session_timeout_ms:
            raise ValueError("heartbeat interval must be below the session timeout")
        if self.max_poll_interval_ms < self.session_timeout_ms:
            raise ValueError("max poll interval must be at least the session timeout")
        if self.batch_size is None and self.batch_linger_ms:
            raise ValueError("batch linger applies only with a batch size")
        if self.batch_size is not None and self.batch_size > self.max_pending:
            raise ValueError(
                f"batch size {self.batch_size} exceeds max pending {self.max_pending}: "
                "a partition never holds enough records to fill a batch"
            )
        if self.retry_backoff_max_s < self.retry_backoff_s:
            raise ValueError("retry backoff max must be at least the initial backoff")
        if self.group_protocol == "consumer":
            chosen = [name for name in CLASSIC_ONLY if name in self.model_fields_set]
            if chosen:
                raise ValueError(
                    f"{', '.join(chosen)}: not with group_protocol consumer (KIP-848 moves the "
                    "assignor and the session timeout to the broker)"
                )
        elif self.remote_assignor is not None:
            raise ValueError("remote_assignor applies only with group_protocol consumer")
        return self

    @classmethod
    def build(cls, names: Mapping[str, str] | None = None, **values: Any) -> EngineConfig:
        """Validate ``values`` (``None`` means default); ConfigError with one line if invalid.
        ``names``: what the caller calls the fields (the CLI: its flags), used in that line."""
        try:
            return cls.model_validate({k: v for k, v in values.items() if v is not None})
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            message = str(first["msg"]).removeprefix("Value error, ")
            if names is not None:  # a field as the caller calls it, and as EngineConfig does
                message = renamed(message, names)
                where = f"{names[where]} ({where})" if where in names else where
            raise ConfigError(f"{where}: {message}" if where else message) from None

    @property
    def eager(self) -> bool:
        """The classic protocol with an eager assignor: a rebalance revokes every partition."""
        return self.group_protocol == "classic" and self.assignor != "cooperative-sticky"

    def consumer_conf(self, conf: Mapping[str, Any]) -> dict[str, Any]:
        """librdkafka consumer properties: the cluster's ``conf`` plus the engine's."""
        out = dict(conf)
        out.update(
            {
                "group.id": self.group,
                "enable.auto.commit": False,
                "enable.auto.offset.store": False,
                "enable.partition.eof": False,
                "auto.offset.reset": self.auto_offset_reset,
                "max.poll.interval.ms": self.max_poll_interval_ms,
                "fetch.queue.backoff.ms": FETCH_QUEUE_BACKOFF_MS,
                "fetch.wait.max.ms": FETCH_WAIT_MAX_MS,
                # prefetch about as deep as the engine holds: a paused partition's prefetched
                # records are dropped and fetched again on resume
                "queued.min.messages": min(100_000, max(1000, 5 * self.max_pending)),
            }
        )
        if self.group_protocol == "consumer":
            out["group.protocol"] = "consumer"
            if self.remote_assignor is not None:
                out["group.remote.assignor"] = self.remote_assignor
        else:
            out["partition.assignment.strategy"] = self.assignor
            out["session.timeout.ms"] = self.session_timeout_ms
            out["heartbeat.interval.ms"] = self.heartbeat_interval_ms
        if self.static_id:
            out["group.instance.id"] = self.static_id
        if self.client_id:
            out["client.id"] = self.client_id
        out.update(self.consumer_overrides)
        return out


def renamed(line: str, names: Mapping[str, str]) -> str:
    """``line`` (a validation error) with field names as the caller calls them: the fields
    it starts with (``a, b: ...``) and any field name with an underscore in the rest."""
    head, sep, rest = line.partition(": ")
    fields = head.split(", ")
    if sep and all(f in names for f in fields):
        head = ", ".join(names[f] for f in fields)
    else:
        head, sep, rest = "", "", line
    long_names = sorted((n for n in names if "_" in n), key=len, reverse=True)
    if long_names:
        pattern = re.compile(r"\b(" + "|".join(map(re.escape, long_names)) + r")\b")
        rest = pattern.sub(lambda m: names[m.group(1)], rest)
    return head + sep + rest
