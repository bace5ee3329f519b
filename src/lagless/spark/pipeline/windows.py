"""Windowed aggregates derived from the events query's own micro-batches (one Kafka read).

Per ``window`` and country: ``events`` (count) and ``amount`` (sum) of valid events, emitted
once, when the watermark passes the window's end, with the meaning of Spark's append-mode
windowed aggregation with ``withWatermark(event_ts, delay)``:

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
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F  # noqa: N812
from pyspark.sql.types import DoubleType, LongType, StringType, StructField, StructType

from lagless.spark.pipeline.storage import Storage, child

log = logging.getLogger(__name__)

WindowKey = tuple[int, int, str]  # window start, window end (µs since the epoch), country
ClosedWindow = tuple[WindowKey, int, float | None]  # key, events, amount
RAW_SCHEMA = StructType(
    [
        StructField("start_us", LongType(), False),
        StructField("end_us", LongType(), False),
        StructField("country", StringType()),
        StructField("events", LongType(), False),
        StructField("amount", DoubleType()),
    ]
)
UNITS_US = {"millisecond": 1_000, "second": 1_000_000, "minute": 60_000_000, "hour": 3_600_000_000}
UNITS_US["day"] = 24 * UNITS_US["hour"]


def duration_us(text: str) -> int:
    """``"1 minute"``, ``"30 seconds"`` -> microseconds."""
    number, unit = text.strip().split()
    return int(number) * UNITS_US[unit.rstrip("s")]


@dataclass
class WindowState:
    """Open windows (key -> [events, amount]) and the watermark (µs; None before any event)."""

    watermark_us: int | None = None
    open: dict[WindowKey, tuple[int, float | None]] = field(default_factory=dict)

    def to_json(self) -> str:
        rows = [[s, e, c, n, a] for (s, e, c), (n, a) in sorted(self.open.items(), key=str)]
        return json.dumps({"watermark_us": self.watermark_us, "open": rows})

    @classmethod
    def from_json(cls, text: str) -> WindowState:
        doc: dict[str, Any] = json.loads(text)
        state = cls(watermark_us=doc["watermark_us"])
        for s, e, c, n, a in doc["open"]:
            state.open[(int(s), int(e), c)] = (int(n), a)
        return state


def _add(a: float | None, b: float | None) -> float | None:
    return b if a is None else a if b is None else a + b


def advance(
    state: WindowState, partials: list[tuple[WindowKey, int, float | None, int]], delay_us: int
) -> tuple[WindowState, list[ClosedWindow]]:
    """The state after a batch's partial aggregates ``(key, events, amount, max event µs)``,
    and the windows it closes (pure logic)."""
    before = state.watermark_us
    merged = dict(state.open)
    newest: int | None = None
    for key, events, amount, max_us in partials:
        newest = max_us if newest is None else max(newest, max_us)
        if before is not None and key[1] <= before:
            continue  # late: its window was already written
        n, a = merged.get(key, (0, None))
        merged[key] = (n + events, _add(a, amount))
    watermark = before
    if newest is not None:
        candidate = newest - delay_us
        watermark = candidate if before is None else max(before, candidate)
    closed = sorted(
        ((k, n, a) for k, (n, a) in merged.items() if watermark is not None and k[1] <= watermark),
        key=lambda item: (item[0][0], item[0][2] or ""),
    )
    still_open = {k: v for k, v in merged.items() if watermark is None or k[1] > watermark}
    return WindowState(watermark, still_open), closed


class WindowAggregator:
    """Per batch: partial aggregates of the batch's valid rows (one small Spark job), merged
    with the state, closed windows written as Parquet."""

    def __init__(self, storage: Storage, state_dir: str, window: str, watermark: str) -> None:
        self.storage = storage
        self.state_dir = state_dir
        self.window = window
        self.delay_us = duration_us(watermark)

    def previous(self, batch_id: int) -> WindowState:
        ids = [int(n[:-5]) for n in self.storage.children(self.state_dir) if n.endswith(".json")]
        earlier = [i for i in ids if i < batch_id]
        if not earlier:
            return WindowState()
        return WindowState.from_json(
            self.storage.read_text(child(self.state_dir, f"{max(earlier)}.json"))
        )

    def partials(self, valid: DataFrame) -> list[tuple[WindowKey, int, float | None, int]]:
        rows = (
            valid.filter(F.col("event_ts").isNotNull())
            .groupBy(F.window("event_ts", self.window).alias("w"), F.col("country"))
            .agg(
                F.count(F.lit(1)).alias("events"),
                F.sum("amount").alias("amount"),
                F.max(F.unix_micros("event_ts")).alias("max_us"),
            )
            .select(
                F.unix_micros("w.start").alias("s"),
                F.unix_micros("w.end").alias("e"),
                "country",
                "events",
                "amount",
                "max_us",
            )
            .collect()
        )
        return [((r.s, r.e, r.country), r.events, r.amount, r.max_us) for r in rows]

    def closed_frame(self, valid: DataFrame, closed: list[ClosedWindow]) -> DataFrame:
        raw = valid.sparkSession.createDataFrame(
            [(k[0], k[1], k[2], n, a) for k, n, a in closed], RAW_SCHEMA
        )
        return raw.select(
            F.timestamp_micros("start_us").alias("window_start"),
            F.timestamp_micros("end_us").alias("window_end"),
            "country",
            "events",
            "amount",
        )

    def run(self, valid: DataFrame, batch_id: int, write: Any) -> int:
        """Merge batch ``batch_id``; ``write(df)`` the closed windows; the number closed."""
        before = self.previous(batch_id)
        after, closed = advance(before, self.partials(valid), self.delay_us)
        if closed:
            write(self.closed_frame(valid, closed))
        self.storage.write_text(child(self.state_dir, f"{batch_id}.json"), after.to_json())
        for name in self.storage.children(self.state_dir):
            if name.endswith(".json") and int(name[:-5]) < batch_id - 1:
                self.storage.delete(child(self.state_dir, name))
        log.debug("batch %d: %d windows closed, %d open", batch_id, len(closed), len(after.open))
        return len(closed)
