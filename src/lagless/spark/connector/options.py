"""Typed, validated options of the ``lagless-kafka`` data source.

Option names follow Spark's own Kafka source (``subscribe``, ``startingOffsets``,
``maxOffsetsPerTrigger``, ``minPartitions``, ``failOnDataLoss``, ``includeHeaders``,
``kafka.*``). Spark hands a Python data source its options with lower-cased keys, so parsing
is case-insensitive. Everything is checked once, at the boundary (``parse``), and kept in frozen
dataclasses that pickle cheaply to executors (plain dataclasses: the Python processes Spark
starts for the source import no validation library).

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
- ``startingTimestamp`` / ``startingOffsetsByTimestamp`` (``{"t": {"0": ms}}``, every
  partition): start at the first record at or after the time (they take precedence over
  ``startingOffsets``, ``startingTimestamp`` first); ``startingOffsetsByTimestampStrategy``
  ``error`` (default: fail when no record is that recent) or ``latest``.
- ``endingTimestamp`` / ``endingOffsetsByTimestamp`` (batch reads): end before the first
  record at or after the time (latest if none).
- ``minOffsetsPerTrigger`` / ``maxTriggerDelay`` (default 15m): a micro-batch waits until that
  many records are there or the delay has passed since the last one (not with AvailableNow).
- ``maxRecordsPerPartition``: split offset ranges so no task reads more records.
- ``groupIdPrefix`` (default ``lagless-spark-reader``) or ``kafka.group.id``: the group id of
  the readers' consumers (they never join the group nor commit).
- ``fetchOffset.numRetries`` (default 3) / ``fetchOffset.retryIntervalMs`` (default 1000): the
  driver's offset lookups are tried that many times, that long apart, before the query fails.
- ``kafka.*``: librdkafka properties (common Java ones translated:
  :mod:`lagless.spark.connector.kafka_conf`); ``kafka.bootstrap.servers`` is required.

Any other option is an error: a query written for Spark's ``kafka`` format either runs with
the same meaning or fails with one line, never with an option silently dropped.

Sink options: ``topic`` (or a ``topic`` column), ``batchId`` (batch writes; streaming writes
take the micro-batch id from Spark), ``kafka.*``.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from lagless.errors import ConfigError
from lagless.kafka.names import check_topic
from lagless.spark.connector.kafka_conf import librdkafka_conf
from lagless.spark.connector.offsets import EARLIEST, PartitionOffsets, from_json

KAFKA_PREFIX = "kafka."
UNSUPPORTED = {
    "assign": "assign is not supported: use subscribe",
    "subscribepattern": "subscribePattern is not supported: use subscribe",
}
SOURCE_KEYS = {
    "subscribe": "subscribe",
    "startingoffsets": "startingOffsets",
    "endingoffsets": "endingOffsets",
    "startingtimestamp": "startingTimestamp",
    "endingtimestamp": "endingTimestamp",
    "startingoffsetsbytimestamp": "startingOffsetsByTimestamp",
    "endingoffsetsbytimestamp": "endingOffsetsByTimestamp",
    "startingoffsetsbytimestampstrategy": "startingOffsetsByTimestampStrategy",
    "maxoffsetspertrigger": "maxOffsetsPerTrigger",
    "minoffsetspertrigger": "minOffsetsPerTrigger",
    "maxtriggerdelay": "maxTriggerDelay",
    "minpartitions": "minPartitions",
    "maxrecordsperpartition": "maxRecordsPerPartition",
    "failondataloss": "failOnDataLoss",
    "includeheaders": "includeHeaders",
    "kafkaconsumer.polltimeoutms": "kafkaConsumer.pollTimeoutMs",
    "groupidprefix": "groupIdPrefix",
    "fetchoffset.numretries": "fetchOffset.numRetries",
    "fetchoffset.retryintervalms": "fetchOffset.retryIntervalMs",
}
SINK_KEYS = {"topic": "topic", "batchid": "batchId", "checkpointlocation": "checkpointLocation"}
ENDING_KEYS = ("endingoffsets", "endingtimestamp", "endingoffsetsbytimestamp")
DURATION_MS_RE = re.compile(r"^([0-9]+)\s*(ms|s|m|min|h|d)?$")
DURATION_UNITS_MS = {"ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000}
DURATION_UNITS_MS["d"] = 24 * DURATION_UNITS_MS["h"]

Position = Literal["earliest", "latest"]


@dataclass(frozen=True)
class SourceOptions:
    """What a ``lagless-kafka`` reader needs; built (and validated) by :meth:`parse`."""

    topics: tuple[str, ...]
    starting: Position | dict[str, dict[str, int]] | None = None
    ending: Literal["latest"] | dict[str, dict[str, int]] = "latest"
    max_offsets_per_trigger: int | None = None
    min_partitions: int | None = None
    fail_on_data_loss: bool = True
    include_headers: bool = False
    poll_timeout_ms: int = 120_000
    starting_timestamp: int | None = None
    starting_by_timestamp: dict[str, dict[str, int]] | None = None
    ending_timestamp: int | None = None
    ending_by_timestamp: dict[str, dict[str, int]] | None = None
    timestamp_strategy: Literal["error", "latest"] = "error"
    min_offsets_per_trigger: int | None = None
    max_trigger_delay_ms: int = 15 * 60_000
    max_records_per_partition: int | None = None
    group_id_prefix: str = "lagless-spark-reader"
    group_id: str | None = None
    fetch_offset_retries: int = 3
    fetch_offset_retry_interval_ms: int = 1000
    has_ending: bool = False
    kafka: dict[str, str] = field(default_factory=dict)

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> SourceOptions:
        """Validate Spark's (lower-cased) options; ConfigError with one line otherwise."""
        opts = {k.lower(): v for k, v in options.items()}
        for key, why in UNSUPPORTED.items():
            if key in opts:
                raise ConfigError(why)
        reject_unknown(opts, SOURCE_KEYS)
        raw_topics = opts.get("subscribe", "")
        topics = tuple(t.strip() for t in raw_topics.split(",") if t.strip())
        if not topics:
            raise ConfigError("option subscribe (one or more topics) is required")
        for topic in topics:
            try:
                check_topic(topic)
            except ValueError as exc:
                raise ConfigError(f"option subscribe: {exc}") from None
        kafka = kafka_conf(opts)
        group_id = kafka.pop("group.id", None)
        return cls(
            topics=topics,
            starting=_starting(opts.get("startingoffsets"), topics),
            ending=_ending(opts.get("endingoffsets", "latest"), topics),
            max_offsets_per_trigger=_int(opts, "maxoffsetspertrigger", "maxOffsetsPerTrigger"),
            min_partitions=_int(opts, "minpartitions", "minPartitions"),
            fail_on_data_loss=_bool(opts, "failondataloss", "failOnDataLoss", True),
            include_headers=_bool(opts, "includeheaders", "includeHeaders", False),
            poll_timeout_ms=_int_or(opts, "kafkaconsumer.polltimeoutms", 120_000),
            starting_timestamp=_int(opts, "startingtimestamp", "startingTimestamp", 0),
            starting_by_timestamp=_by_timestamp(opts, "startingoffsetsbytimestamp", topics),
            ending_timestamp=_int(opts, "endingtimestamp", "endingTimestamp", 0),
            ending_by_timestamp=_by_timestamp(opts, "endingoffsetsbytimestamp", topics),
            timestamp_strategy=_strategy(opts.get("startingoffsetsbytimestampstrategy")),
            min_offsets_per_trigger=_int(opts, "minoffsetspertrigger", "minOffsetsPerTrigger"),
            max_trigger_delay_ms=_duration_ms(opts.get("maxtriggerdelay", "15m")),
            max_records_per_partition=_int(
                opts, "maxrecordsperpartition", "maxRecordsPerPartition"
            ),
            group_id_prefix=opts.get("groupidprefix") or "lagless-spark-reader",
            group_id=group_id,
            fetch_offset_retries=_int_or(opts, "fetchoffset.numretries", 3),
            fetch_offset_retry_interval_ms=_int_or(opts, "fetchoffset.retryintervalms", 1000, 0),
            has_ending=any(k in opts for k in ENDING_KEYS),
            kafka=kafka,
        )

    def check_streaming(self) -> None:
        """ConfigError for options a stream cannot honour (as Spark's own source rejects)."""
        if self.has_ending:
            raise ConfigError(
                "endingOffsets, endingTimestamp and endingOffsetsByTimestamp are for batch "
                "reads only; a stream reads on until it is stopped (use Trigger.AvailableNow)"
            )

    def starting_times(self) -> int | dict[str, dict[str, int]] | None:
        """``startingTimestamp`` (all partitions) or ``startingOffsetsByTimestamp``, which
        take precedence over ``startingOffsets`` in that order; None if neither is set."""
        if self.starting_timestamp is not None:
            return self.starting_timestamp
        return self.starting_by_timestamp

    def ending_times(self) -> int | dict[str, dict[str, int]] | None:
        if self.ending_timestamp is not None:
            return self.ending_timestamp
        return self.ending_by_timestamp

    def reader_conf(self) -> dict[str, str]:
        """librdkafka properties of the range readers: the user's group id or a fresh one
        under ``groupIdPrefix`` (the readers never join the group nor commit)."""
        group = self.group_id or f"{self.group_id_prefix}-{uuid.uuid4().hex[:8]}"
        return {**self.kafka, "group.id": group}

    def start_position(self, default: Position) -> Position | PartitionOffsets:
        """``earliest``, ``latest`` or explicit offsets (-2 earliest, -1 latest)."""
        if self.starting is None:
            return default
        return self.starting if isinstance(self.starting, str) else from_json(self.starting)

    def ending_offsets(self) -> PartitionOffsets | None:
        return None if isinstance(self.ending, str) else from_json(self.ending)


@dataclass(frozen=True)
class SinkOptions:
    """What a ``lagless-kafka`` writer needs; built (and validated) by :meth:`parse`."""

    topic: str | None = None
    batch_id: int | None = None
    kafka: dict[str, str] = field(default_factory=dict)

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> SinkOptions:
        opts = {k.lower(): v for k, v in options.items()}
        reject_unknown(opts, SINK_KEYS)
        return cls(
            topic=opts.get("topic") or None,
            batch_id=_int(opts, "batchid", "batchId", minimum=0),
            kafka=kafka_conf(opts),
        )


def reject_unknown(opts: Mapping[str, str], known: Mapping[str, str]) -> None:
    """ConfigError naming the first option that is neither known nor ``kafka.*``."""
    unknown = sorted(k for k in opts if k not in known and not k.startswith(KAFKA_PREFIX))
    if unknown:
        raise ConfigError(
            f"unknown option {unknown[0]!r} for lagless-kafka (known: "
            f"{', '.join(sorted(known.values()))}, kafka.*)"
        )


def kafka_conf(opts: Mapping[str, str]) -> dict[str, str]:
    """The ``kafka.*`` options without their prefix, as librdkafka properties (common Java
    ones translated); bootstrap servers required."""
    conf = {k[len(KAFKA_PREFIX) :]: v for k, v in opts.items() if k.startswith(KAFKA_PREFIX)}
    if not conf.get("bootstrap.servers"):
        raise ConfigError("option kafka.bootstrap.servers is required")
    return librdkafka_conf(conf)


def _duration_ms(raw: str) -> int:
    match = DURATION_MS_RE.match(raw.strip().lower())
    if match is None:
        raise ConfigError(f"option maxTriggerDelay must be like 15m, 30s or 500ms, not {raw!r}")
    return int(match.group(1)) * DURATION_UNITS_MS[match.group(2) or "ms"]


def _strategy(raw: str | None) -> Literal["error", "latest"]:
    text = (raw or "error").strip().lower()
    if text == "error":
        return "error"
    if text == "latest":
        return "latest"
    raise ConfigError(
        f"option startingOffsetsByTimestampStrategy must be error or latest, not {raw!r}"
    )


def _by_timestamp(
    opts: Mapping[str, str], key: str, topics: tuple[str, ...]
) -> dict[str, dict[str, int]] | None:
    raw = opts.get(key)
    if raw is None:
        return None
    name = SOURCE_KEYS[key]
    doc = _offsets_json(raw, name, topics)
    if any(ts < 0 for parts in doc.values() for ts in parts.values()):
        raise ConfigError(f"option {name}: timestamps are milliseconds since the epoch (>= 0)")
    return doc


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


def _int_or(opts: Mapping[str, str], key: str, default: int, minimum: int = 1) -> int:
    value = _int(opts, key, SOURCE_KEYS[key], minimum)
    return default if value is None else value


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
