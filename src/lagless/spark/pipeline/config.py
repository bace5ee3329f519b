"""What a pipeline run is given: one frozen, validated :class:`PipelineConfig`, and its
:class:`Trigger`. Built with :meth:`PipelineConfig.build` (ConfigError with one line)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from lagless.errors import ConfigError
from lagless.spark.connector.session import check_master
from lagless.spark.pipeline.parse import Check, KeyFormat
from lagless.spark.pipeline.storage import child, location
from lagless.spark.pipeline.transform import Transformation, transformation
from lagless.spark.pipeline.windows import WindowSpec

TRIGGER_RE = re.compile(r"^processing-time=([0-9]+(?:\.[0-9]+)?)\s*(ms|s|m)?$")
NAME_RE = re.compile(r"^[A-Za-z0-9._-]{1,249}$")
COLUMN_RE = re.compile(r"^[A-Za-z_]\w*$")
AGGREGATES = "aggregates"


@dataclass(frozen=True)
class Trigger:
    """``available-now`` (process what is there, then stop) or a processing-time interval."""

    available_now: bool
    interval_s: float = 0.0

    @classmethod
    def parse(cls, text: str) -> Trigger:
        value = text.strip().lower()
        if value in {"available-now", "availablenow"}:
            return cls(available_now=True)
        match = TRIGGER_RE.match(value)
        if not match:
            raise ConfigError(
                f"--trigger {text!r} is not available-now or processing-time=N[ms|s|m]"
            )
        number, unit = float(match.group(1)), match.group(2) or "s"
        seconds = number / 1000 if unit == "ms" else number * 60 if unit == "m" else number
        if seconds <= 0:
            raise ConfigError("--trigger processing-time must be positive")
        return cls(available_now=False, interval_s=seconds)

    def apply(self, writer: Any) -> Any:
        if self.available_now:
            return writer.trigger(availableNow=True)
        return writer.trigger(processingTime=f"{int(self.interval_s * 1000)} milliseconds")


class PipelineConfig(BaseModel):
    """Everything a pipeline run needs, validated once (see :meth:`build`). The query is
    ``lagless-TABLE-TOPIC``, its checkpoint ``CHECKPOINT/TABLE``.

    Input: ``topic`` (one, or several comma-separated), ``value`` (json | avro | protobuf |
    raw), ``value_schema`` (json: a DDL string, a ``StructType``, a JSON Schema file,
    ``module:Model`` or a pydantic model class; avro, protobuf: from ``registry``, subject
    ``subject``, default ``TOPIC-value``; protobuf: the record ``message``, default the
    file's first), ``key`` (none | string | binary: the ``kafka_key`` column),
    ``checks``. Transformation: ``transform`` (``module:function`` or a function) or ``sql``.
    Output: ``OUTPUT/TABLE/[PARTITION-BY=.../]batch_id=N/`` Parquet, ``output_topic``,
    ``windows`` (to ``OUTPUT/aggregates/``); dead letters to ``dlq_topic`` (``TOPIC-dlq``)."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    topic: str = Field(min_length=1)
    output: str
    checkpoint: str
    kafka: dict[str, Any]
    value: Literal["json", "avro", "protobuf", "raw"] = "json"
    value_schema: Any = None
    key: KeyFormat = "none"
    registry: Any = None
    subject: str | None = None
    message: str | None = None
    checks: tuple[Any, ...] = ()
    transform: Any = None
    sql: str | None = None
    table: str = "rows"
    partition_by: tuple[str, ...] = ()
    output_topic: str | None = None
    windows: Any = None
    group: str | None = None
    master: str = "local[*]"
    trigger: str = "available-now"
    max_offsets_per_trigger: int | None = Field(default=None, ge=1)
    min_partitions: int | None = Field(default=None, ge=1)
    starting_offsets: Literal["earliest", "latest"] = "earliest"
    fail_on_data_loss: bool = True
    dlq_topic: str | None = None
    source: Literal["python", "jvm"] = "python"
    spark_conf: dict[str, str] = Field(default_factory=dict)
    source_options: dict[str, str] = Field(default_factory=dict)  # more source options

    @field_validator("output", "checkpoint", mode="before")
    @classmethod
    def _location(cls, value: str | Path) -> str:
        try:
            return location(value)
        except ConfigError as exc:
            raise ValueError(str(exc)) from None

    @field_validator("topic")
    @classmethod
    def _topics(cls, value: str) -> str:
        names = [t.strip() for t in value.split(",")]
        if not all(NAME_RE.match(t) for t in names):
            raise ValueError(f"{value!r} is not a topic name (or names, comma-separated)")
        return ",".join(names)

    @field_validator("trigger")
    @classmethod
    def _trigger(cls, value: str) -> str:
        Trigger.parse(value)
        return value

    @field_validator("master")
    @classmethod
    def _master(cls, value: str) -> str:
        return check_master(value)

    @field_validator("kafka")
    @classmethod
    def _kafka(cls, value: dict[str, Any]) -> dict[str, Any]:
        if not value.get("bootstrap.servers"):
            raise ValueError("kafka settings need bootstrap.servers")
        return value

    @field_validator("table")
    @classmethod
    def _table(cls, value: str) -> str:
        if not COLUMN_RE.match(value) or value == AGGREGATES:
            raise ValueError(f"{value!r} is not a folder name (letters, digits, _; not aggregates)")
        return value

    @field_validator("partition_by")
    @classmethod
    def _partition_by(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for name in value:
            if not COLUMN_RE.match(name) or name == "batch_id":
                raise ValueError(f"{name!r} is not a column name (batch_id is the pipeline's)")
        return value

    @field_validator("checks")
    @classmethod
    def _checks(cls, value: tuple[Any, ...]) -> tuple[Any, ...]:
        if not all(isinstance(c, Check) for c in value):
            raise ValueError("checks must be Check objects")
        return value

    @field_validator("windows")
    @classmethod
    def _windows(cls, value: Any) -> Any:
        if value is not None and not isinstance(value, WindowSpec):
            raise ValueError("windows must be a WindowSpec")
        return value

    @classmethod
    def build(cls, **values: Any) -> PipelineConfig:
        """Validate; ConfigError with one line on bad input."""
        try:
            config = cls(**values)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "pipeline"
            message = str(first.get("ctx", {}).get("error", first["msg"]))
            raise ConfigError(f"invalid {where.replace('_', '-')}: {message}") from None
        if config.dlq_name in config.topics:
            raise ConfigError("--dlq-topic must differ from --topic")
        if config.output_topic is not None and config.output_topic in config.topics:
            raise ConfigError("--output-topic must differ from --topic")
        if config.value == "json" and config.value_schema is None:
            raise ConfigError(
                "--value json needs --schema (a DDL string, a JSON Schema file or module:Model)"
            )
        config.check_value_options()
        config.transformation  # noqa: B018 (a transformation that cannot be imported fails here)
        return config

    def check_value_options(self) -> None:
        """Each value option given only with the value format that uses it."""
        registered = self.value in ("avro", "protobuf")
        if registered and self.registry is None:
            raise ConfigError(f"--value {self.value} needs --registry URL")
        if self.value != "json" and self.value_schema is not None:
            raise ConfigError(
                "--schema is for --value json (avro and protobuf take it from the registry)"
            )
        if not registered and (self.registry is not None or self.subject is not None):
            raise ConfigError("--registry and --subject are for --value avro or protobuf")
        if self.value != "protobuf" and self.message is not None:
            raise ConfigError("--message is for --value protobuf")

    @property
    def topics(self) -> tuple[str, ...]:
        return tuple(self.topic.split(","))

    @property
    def dlq_name(self) -> str:
        return self.dlq_topic or f"{self.topics[0]}-dlq"

    @property
    def subject_name(self) -> str:
        return self.subject or f"{self.topics[0]}-value"

    @property
    def transformation(self) -> Transformation | None:
        return transformation(self.transform, self.sql)

    @property
    def parsed_trigger(self) -> Trigger:
        return Trigger.parse(self.trigger)

    @property
    def table_path(self) -> str:
        return child(self.output, self.table)

    @property
    def aggregates_path(self) -> str:
        return child(self.output, AGGREGATES)

    @property
    def aggregates_state(self) -> str:
        return child(self.checkpoint, "aggregates-state")

    def query_name(self, role: str) -> str:
        return f"lagless-{role}-{self.topic.replace(',', '+')}"
