"""Windowed aggregates the user declares, derived from the pipeline's own micro-batches (one
Kafka read): per ``window`` of ``time_column`` and the ``group_by`` columns, the aggregations
(``count(*)``, ``count(col)``, ``sum``, ``min``, ``max``) of the output rows, emitted once,
when the watermark passes the window's end, with the meaning of Spark's append-mode windowed
aggregation with ``withWatermark(time_column, delay)``:

- the watermark is the newest event time seen so far minus the delay (it never moves back);
- a window is written when ``window_end <= watermark``, exactly once;
- rows of a window already written (its end at or before the watermark *before* the batch)
  are dropped as late, as Spark drops them.

One difference: Spark closes windows in the micro-batch *after* the one that moved the
watermark (an extra no-data batch); here they are closed in the same batch.

**State and exactly-once.** The open windows and the watermark after batch ``N`` are a small
JSON file ``STATE/N.json`` (through Hadoop's FileSystem, so any checkpoint URI works). Batch
``N`` starts from the newest state below ``N``; closed windows go to
``OUTPUT/aggregates/batch_id=N/`` with dynamic partition overwrite, then ``N.json`` is
written. A batch re-run after a crash starts from the same state with the same rows, so it
writes the same windows over the killed attempt's. States older than ``N - 1`` are deleted.
Group-by values other than strings, numbers and booleans are kept as their string form.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F  # noqa: N812
from pyspark.sql.types import (
    BooleanType,
    DoubleType,
    FloatType,
    IntegralType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from lagless.errors import ConfigError
from lagless.spark.pipeline.storage import Storage, child

log = logging.getLogger(__name__)

WindowKey = tuple[Any, ...]  # window start, window end (µs since the epoch), group values
ClosedWindow = tuple[Any, ...]  # key, then one value per aggregation
UNITS_US = {"millisecond": 1_000, "second": 1_000_000, "minute": 60_000_000, "hour": 3_600_000_000}
UNITS_US["day"] = 24 * UNITS_US["hour"]
DURATION_RE = re.compile(r"^[0-9]+ (millisecond|second|minute|hour|day)s?$")
AGG_RE = re.compile(r"^\s*([A-Za-z_]\w*)\s*=\s*(count|sum|min|max)\(\s*(\*|[A-Za-z_]\w*)\s*\)\s*$")
KEEP_TYPES = (StringType, IntegralType, BooleanType, DoubleType, FloatType)


def duration_us(text: str) -> int:
    """``"1 minute"``, ``"30 seconds"`` -> microseconds."""
    number, unit = text.strip().split()
    return int(number) * UNITS_US[unit.rstrip("s")]


def check_duration(text: str, what: str) -> str:
    if not DURATION_RE.match(text.strip()):
        raise ConfigError(f"{what} {text!r} is not like '1 minute' or '30 seconds'")
    return text.strip()


def _add(a: Any, b: Any) -> Any:
    return b if a is None else a if b is None else a + b


def _min(a: Any, b: Any) -> Any:
    return b if a is None else a if b is None else min(a, b)


def _max(a: Any, b: Any) -> Any:
    return b if a is None else a if b is None else max(a, b)


MERGE: dict[str, Callable[[Any, Any], Any]] = {"count": _add, "sum": _add, "min": _min, "max": _max}


@dataclass(frozen=True)
class Aggregation:
    """``NAME=FUNC(COLUMN)``: ``n=count(*)``, ``total=sum(price)``, ``low=min(price)``."""

    name: str
    func: str
    column: str | None  # None: count(*)

    @classmethod
    def parse(cls, text: str) -> Aggregation:
        match = AGG_RE.match(text)
        if not match:
            raise ConfigError(
                f"--agg {text!r} is not NAME=FUNC(COLUMN) with FUNC count, sum, min or max"
            )
        name, func, column = match.groups()
        if column == "*" and func != "count":
            raise ConfigError(f"--agg {text!r}: only count takes *")
        return cls(name, func, None if column == "*" else column)

    def column_expr(self) -> Column:
        if self.column is None:
            return F.count(F.lit(1))
        col = F.col(self.column)
        return getattr(F, self.func)(col)  # type: ignore[no-any-return]


@dataclass(frozen=True)
class WindowSpec:
    """What to aggregate: windows of ``time_column`` (a timestamp), grouped by ``group_by``."""

    time_column: str
    window: str = "1 minute"
    watermark: str = "1 minute"
    group_by: tuple[str, ...] = ()
    aggregations: tuple[Aggregation, ...] = (Aggregation("rows", "count", None),)

    def __post_init__(self) -> None:
        check_duration(self.window, "--window")
        check_duration(self.watermark, "--watermark")
        names = [a.name for a in self.aggregations]
        clash = set(names) & {"window_start", "window_end", "batch_id", *self.group_by}
        if not self.aggregations or len(set(names)) != len(names) or clash:
            raise ConfigError(
                "aggregations need distinct names, not window_start, window_end, batch_id "
                "or a group-by column"
            )

    @property
    def merges(self) -> tuple[str, ...]:
        return tuple(a.func for a in self.aggregations)

    def check(self, columns: Sequence[str]) -> None:
        needed = [
            self.time_column,
            *self.group_by,
            *(a.column for a in self.aggregations if a.column),
        ]
        missing = [c for c in needed if c not in columns]
        if missing:
            raise ConfigError(
                f"aggregates: no column {', '.join(missing)} in the output ({', '.join(columns)})"
            )


@dataclass
class WindowState:
    """Open windows (key -> values) and the watermark (µs; None before any event)."""

    watermark_us: int | None = None
    open: dict[WindowKey, tuple[Any, ...]] = field(default_factory=dict)

    def to_json(self) -> str:
        rows = [[list(k), list(v)] for k, v in sorted(self.open.items(), key=str)]
        return json.dumps({"watermark_us": self.watermark_us, "open": rows})

    @classmethod
    def from_json(cls, text: str) -> WindowState:
        doc: dict[str, Any] = json.loads(text)
        state = cls(watermark_us=doc["watermark_us"])
        for row in doc["open"]:
            if len(row) == 5:  # before user-declared aggregates: [start, end, group, n, sum]
                key, values = row[:3], row[3:]
            else:
                key, values = row
            state.open[(int(key[0]), int(key[1]), *key[2:])] = tuple(values)
        return state


def advance(
    state: WindowState,
    partials: list[tuple[Any, ...]],
    delay_us: int,
    merges: Sequence[str] = ("count", "sum"),
) -> tuple[WindowState, list[ClosedWindow]]:
    """The state after a batch's partial aggregates ``(key, *values, max event µs)``, and the
    windows it closes, each ``(key, *values)`` (pure logic)."""
    before = state.watermark_us
    merged = dict(state.open)
    newest: int | None = None
    for partial in partials:
        key, values, max_us = partial[0], partial[1:-1], partial[-1]
        newest = max_us if newest is None else max(newest, max_us)
        if before is not None and key[1] <= before:
            continue  # late: its window was already written
        old = merged.get(key)
        merged[key] = (
            tuple(values)
            if old is None
            else tuple(MERGE[m](a, b) for m, a, b in zip(merges, old, values, strict=True))
        )
    watermark = before
    if newest is not None:
        candidate = newest - delay_us
        watermark = candidate if before is None else max(before, candidate)
    closed = sorted(
        ((k, *v) for k, v in merged.items() if watermark is not None and k[1] <= watermark),
        key=lambda item: (item[0][0], [str(g) for g in item[0][2:]]),
    )
    still_open = {k: v for k, v in merged.items() if watermark is None or k[1] > watermark}
    return WindowState(watermark, still_open), closed


class WindowAggregator:
    """Per batch: partial aggregates of the batch's output rows (one small Spark job), merged
    with the state, closed windows written as Parquet."""

    def __init__(self, storage: Storage, state_dir: str, spec: WindowSpec) -> None:
        self.storage = storage
        self.state_dir = state_dir
        self.spec = spec
        self.delay_us = duration_us(spec.watermark)

    def previous(self, batch_id: int) -> WindowState:
        ids = [int(n[:-5]) for n in self.storage.children(self.state_dir) if n.endswith(".json")]
        earlier = [i for i in ids if i < batch_id]
        if not earlier:
            return WindowState()
        return WindowState.from_json(
            self.storage.read_text(child(self.state_dir, f"{max(earlier)}.json"))
        )

    def partials(self, rows: DataFrame) -> tuple[list[tuple[Any, ...]], StructType]:
        """The batch's partial aggregates, and the schema of a closed window's row."""
        spec = self.spec
        types = {f.name: f.dataType for f in rows.schema.fields}
        groups = [
            F.col(g) if isinstance(types[g], KEEP_TYPES) else F.col(g).cast("string").alias(g)
            for g in spec.group_by
        ]
        frame = (
            rows.filter(F.col(spec.time_column).isNotNull())
            .groupBy(F.window(spec.time_column, spec.window).alias("_w"), *groups)
            .agg(
                *(a.column_expr().alias(a.name) for a in spec.aggregations),
                F.max(F.unix_micros(spec.time_column)).alias("_max_us"),
            )
            .select(
                F.unix_micros("_w.start").alias("_s"),
                F.unix_micros("_w.end").alias("_e"),
                *spec.group_by,
                *(a.name for a in spec.aggregations),
                "_max_us",
            )
        )
        schema = StructType(
            [StructField("_s", LongType(), False), StructField("_e", LongType(), False)]
            + [f for f in frame.schema.fields if f.name in {*spec.group_by, *self.names}]
        )
        n = len(spec.group_by)
        out = [((r[0], r[1], *r[2 : 2 + n]), *r[2 + n : -1], r[-1]) for r in frame.collect()]
        return out, schema

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.spec.aggregations)

    def closed_frame(
        self, rows: DataFrame, closed: list[ClosedWindow], schema: StructType
    ) -> DataFrame:
        raw = rows.sparkSession.createDataFrame([(*k, *v) for k, *v in closed], schema)
        return raw.select(
            F.timestamp_micros("_s").alias("window_start"),
            F.timestamp_micros("_e").alias("window_end"),
            *self.spec.group_by,
            *self.names,
        )

    def run(self, rows: DataFrame, batch_id: int, write: Any) -> int:
        """Merge batch ``batch_id``; ``write(df)`` the closed windows; the number closed."""
        before = self.previous(batch_id)
        partials, schema = self.partials(rows)
        after, closed = advance(before, partials, self.delay_us, self.spec.merges)
        if closed:
            write(self.closed_frame(rows, closed, schema))
        self.storage.write_text(child(self.state_dir, f"{batch_id}.json"), after.to_json())
        for name in self.storage.children(self.state_dir):
            if name.endswith(".json") and int(name[:-5]) < batch_id - 1:
                self.storage.delete(child(self.state_dir, name))
        log.debug("batch %d: %d windows closed, %d open", batch_id, len(closed), len(after.open))
        return len(closed)
