"""The demo's order events on the general pipeline (``lagless pipeline run --preset events``,
``lagless demo``, ``bench/spark_pipeline.py``).

The values are JSON order events of the load generator's ``events`` workload; every field is
required, and ``amount`` must not be negative. Rejected rows go to the DLQ with the classes of
:class:`lagless.ids.Malformation` (``broken_json``, ``missing_field``, ``wrong_type``,
``negative_amount``). Valid rows get ``event_date`` (UTC) and land in
``OUTPUT/events/event_date=D/batch_id=N/``; per minute and country, ``events`` (count) and
``amount`` (sum) in ``OUTPUT/aggregates/``.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F  # noqa: N812

from lagless.ids import Malformation
from lagless.spark.pipeline.config import PipelineConfig
from lagless.spark.pipeline.parse import Check, Fields
from lagless.spark.pipeline.windows import Aggregation, WindowSpec

TABLE = "events"
SCHEMA = (
    "order_id STRING NOT NULL, user_id STRING NOT NULL, amount DOUBLE NOT NULL, "
    "currency STRING NOT NULL, country STRING NOT NULL, event_ts TIMESTAMP NOT NULL"
)


def _not_negative(field: Fields) -> Column:
    return field("amount") >= 0


def _negative_message(field: Fields) -> Column:
    return F.concat(F.lit("amount "), field("amount").cast("string"), F.lit(" is negative"))


# A function of the fields, so the check is evaluated in the parse's own projection
CHECKS = (Check(Malformation.NEGATIVE_AMOUNT.value, _not_negative, _negative_message),)


def with_event_date(rows: DataFrame) -> DataFrame:
    """The events' transformation: their UTC date, the output's partition column."""
    return rows.withColumn("event_date", F.to_date("event_ts"))


def windows(window: str = "1 minute", watermark: str = "1 minute") -> WindowSpec:
    aggregations = (Aggregation("events", "count", None), Aggregation("amount", "sum", "amount"))
    return WindowSpec("event_ts", window, watermark, ("country",), aggregations)


def preset(aggregates: bool = True, watermark: str = "1 minute") -> dict[str, Any]:
    """The events' settings of :class:`PipelineConfig` (the CLI's ``--preset events``)."""
    return {
        "value": "json",
        "value_schema": SCHEMA,
        "checks": CHECKS,
        "transform": with_event_date,
        "table": TABLE,
        "partition_by": ("event_date",),
        "windows": windows(watermark=watermark) if aggregates else None,
    }


def events_config(
    *, aggregates: bool = True, watermark: str = "1 minute", **values: Any
) -> PipelineConfig:
    """A :class:`PipelineConfig` for the events (``values``: topic, output, checkpoint, kafka,
    group, trigger, ...)."""
    return PipelineConfig.build(**preset(aggregates, watermark), **values)
