"""Typed, validated options of the ``lagless-kafka`` data source.

Option names follow Spark's own Kafka source (``subscribe``, ``startingOffsets``,
``maxOffsetsPerTrigger``, ``minPartitions``, ``failOnDataLoss``, ``includeHeaders``,
``kafka.*``). Spark hands a Python data source its options with lower-cased keys, so parsing
is case-insensitive. Everything is checked once, at the boundary, and kept in frozen models
that pickle cheaply to executors.

- ``subscribe`` (required): comma-separated topics.
- ``startingOffsets``: ``earliest``, ``latest`` or JSON ``{"t": {"0": 42, "1": -2}}``
  (-2 earliest, -1 latest; partitions left out start at earliest). Default: latest for
  streams, earliest for batch reads.
- ``endingOffsets`` (batch reads): ``latest`` (default) or JSON.
- ``maxOffsetsPerTrigger``: records per micro-batch, shared by the partitions in proportion to
  their backlog (default: no limit).
- ``minPartitions``: split offset ranges so a batch has at least this many tasks.
- ``failOnDataLoss`` (default true): fail when records were deleted before being read, or
  log a warning and skip them.
- ``includeHeaders`` (default false): add the ``headers`` column.
- ``kafkaConsumer.pollTimeoutMs`` (default 120000): a task fails when its partition yields
  nothing for this long.
- ``kafka.*``: librdkafka properties; ``kafka.bootstrap.servers`` is required.

Sink options: ``topic`` (or a ``topic`` column), ``batchId`` (batch writes; streaming writes
take the micro-batch id from Spark), ``kafka.*``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from lagless.errors import ConfigError
from lagless.spark.offsets import EARLIEST, PartitionOffsets, from_json

KAFKA_PREFIX = "kafka."
UNSUPPORTED = {
    "assign": "assign is not supported: use subscribe",
    "subscribepattern": "subscribePattern is not supported: use subscribe",
    "kafka.group.id": "kafka.group.id is not used: the source never joins a group",
}

Position = Literal["earliest", "latest"]


class SourceOptions(BaseModel):
    """What a ``lagless-kafka`` reader needs; built by :meth:`parse`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    topics: tuple[str, ...] = Field(min_length=1)
    starting: Position | dict[str, dict[str, int]] | None = None
    ending: Literal["latest"] | dict[str, dict[str, int]] = "latest"
    max_offsets_per_trigger: int | None = Field(default=None, ge=1)
    min_partitions: int | None = Field(default=None, ge=1)
    fail_on_data_loss: bool = True
    include_headers: bool = False
    poll_timeout_ms: int = Field(default=120_000, ge=1)
    kafka: dict[str, str] = Field(default_factory=dict)

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> SourceOptions:
        """Validate Spark's (lower-cased) options; ConfigError with one line otherwise."""
        opts = {k.lower(): v for k, v in options.items()}
        for key, why in UNSUPPORTED.items():
            if key in opts:
                raise ConfigError(why)
        raw_topics = opts.get("subscribe", "")
        topics = tuple(t.strip() for t in raw_topics.split(",") if t.strip())
        if not topics:
            raise ConfigError("option subscribe (one or more topics) is required")
        kafka = kafka_conf(opts)
        return cls(
            topics=topics,
            starting=_starting(opts.get("startingoffsets"), topics),
            ending=_ending(opts.get("endingoffsets", "latest"), topics),
            max_offsets_per_trigger=_int(opts, "maxoffsetspertrigger", "maxOffsetsPerTrigger"),
            min_partitions=_int(opts, "minpartitions", "minPartitions"),
            fail_on_data_loss=_bool(opts, "failondataloss", "failOnDataLoss", True),
            include_headers=_bool(opts, "includeheaders", "includeHeaders", False),
            poll_timeout_ms=_int(opts, "kafkaconsumer.polltimeoutms", "pollTimeoutMs") or 120_000,
            kafka=kafka,
        )

    def start_position(self, default: Position) -> Position | PartitionOffsets:
        """``earliest``, ``latest`` or explicit offsets (-2 earliest, -1 latest)."""
        if self.starting is None:
            return default
        return self.starting if isinstance(self.starting, str) else from_json(self.starting)

    def ending_offsets(self) -> PartitionOffsets | None:
        return None if isinstance(self.ending, str) else from_json(self.ending)


class SinkOptions(BaseModel):
    """What a ``lagless-kafka`` writer needs."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    topic: str | None = None
    batch_id: int | None = None
    kafka: dict[str, str] = Field(default_factory=dict)

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> SinkOptions:
        opts = {k.lower(): v for k, v in options.items()}
        return cls(
            topic=opts.get("topic") or None,
            batch_id=_int(opts, "batchid", "batchId", minimum=0),
            kafka=kafka_conf(opts),
        )


def kafka_conf(opts: Mapping[str, str]) -> dict[str, str]:
    """The ``kafka.*`` options without their prefix; bootstrap servers required."""
    conf = {k[len(KAFKA_PREFIX) :]: v for k, v in opts.items() if k.startswith(KAFKA_PREFIX)}
    if not conf.get("bootstrap.servers"):
        raise ConfigError("option kafka.bootstrap.servers is required")
    return dict(sorted(conf.items()))


def _int(opts: Mapping[str, str], key: str, name: str, minimum: int = 1) -> int | None:
    raw = opts.get(key)
    if raw is None or raw == "":
        return None
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"option {name} must be an integer, not {raw!r}") from None
    if value < minimum:
        raise ConfigError(f"option {name} must be at least {minimum}, not {value}")
    return value


def _bool(opts: Mapping[str, str], key: str, name: str, default: bool) -> bool:
    raw = opts.get(key)
    if raw is None:
        return default
    text = raw.strip().lower()
    if text in {"true", "1", "yes"}:
        return True
    if text in {"false", "0", "no"}:
        return False
    raise ConfigError(f"option {name} must be true or false, not {raw!r}")


def _offsets_json(raw: str, name: str, topics: tuple[str, ...]) -> dict[str, dict[str, int]]:
    try:
        doc: Any = json.loads(raw)
    except json.JSONDecodeError:
        raise ConfigError(
            f"option {name} must be earliest, latest or JSON like "
            f'{{"topic": {{"0": 42}}}}, not {raw!r}'
        ) from None
    if not isinstance(doc, dict):
        raise ConfigError(f"option {name} JSON must be an object of topics")
    out: dict[str, dict[str, int]] = {}
    for topic, parts in doc.items():
        if topic not in topics:
            raise ConfigError(f"option {name} names topic {topic!r}, which is not subscribed")
        if not isinstance(parts, dict):
            raise ConfigError(f"option {name}: {topic!r} must map partitions to offsets")
        for part, offset in parts.items():
            if not str(part).isdigit() or not isinstance(offset, int) or offset < EARLIEST:
                raise ConfigError(
                    f"option {name}: {topic}[{part}] -> {offset!r} is not a partition and "
                    f"an offset (>= 0, or -2 earliest, -1 latest)"
                )
        out[topic] = {str(p): int(o) for p, o in parts.items()}
    return out


def _position(raw: str, name: str, topics: tuple[str, ...]) -> Position | dict[str, dict[str, int]]:
    text = raw.strip()
    if text.lower() == "earliest":
        return "earliest"
    if text.lower() == "latest":
        return "latest"
    return _offsets_json(text, name, topics)


def _starting(
    raw: str | None, topics: tuple[str, ...]
) -> Position | dict[str, dict[str, int]] | None:
    return None if raw is None else _position(raw, "startingOffsets", topics)


def _ending(raw: str, topics: tuple[str, ...]) -> Literal["latest"] | dict[str, dict[str, int]]:
    position = _position(raw, "endingOffsets", topics)
    if position == "earliest":
        raise ConfigError("option endingOffsets cannot be earliest")
    if isinstance(position, dict) and any(
        o == EARLIEST for parts in position.values() for o in parts.values()
    ):
        raise ConfigError("option endingOffsets cannot use -2 (earliest)")
    return position
