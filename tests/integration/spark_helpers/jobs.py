"""A user's own records and jobs for the general pipeline's tests: payments as JSON or Avro,
with invalid ones of every kind, and transformations (``module:function``) over them."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F  # noqa: N812

from lagless.ids import ID_HEADER
from lagless.kafka.clients import make_producer

DDL = "id STRING NOT NULL, amount DOUBLE NOT NULL, currency STRING NOT NULL, ts TIMESTAMP"
START = datetime(2026, 1, 1, tzinfo=UTC)
CURRENCIES = ("EUR", "USD", "JPY")
JSON_SCHEMA = {
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "amount": {"type": "number", "minimum": 0},
        "currency": {"type": "string", "enum": list(CURRENCIES)},
        "ts": {"type": "string", "format": "date-time"},
    },
    "required": ["id", "amount", "currency", "ts"],
}
AVRO_SCHEMA = json.dumps(
    {
        "type": "record",
        "name": "Payment",
        "fields": [
            {"name": "id", "type": "string"},
            {"name": "amount", "type": "double"},
            {"name": "currency", "type": "string"},
            {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        ],
    }
)


@dataclass(frozen=True)
class Payments:
    """What was produced: valid payments by id, and invalid id -> the expected DLQ class."""

    valid: Mapping[str, dict[str, Any]]
    invalid: Mapping[str, str]


def payment(i: int) -> dict[str, Any]:
    """Payment ``i``: a second apart, so 60 make a minute."""
    ts = START + timedelta(seconds=i)
    return {"id": f"p{i}", "amount": float(i % 50) + 0.5, "currency": CURRENCIES[i % 3],
            "ts": ts.isoformat().replace("+00:00", "Z")}  # fmt: skip


# invalid JSON payments, one of each kind every 10 records: the DLQ class each must get
def broken(i: int) -> bytes:
    return json.dumps(payment(i))[:12].encode()


def wrong_type(i: int) -> bytes:
    return json.dumps({**payment(i), "amount": "lots"}).encode()


def missing(i: int) -> bytes:
    doc = payment(i)
    doc.pop("currency")
    return json.dumps(doc).encode()


def negative(i: int) -> bytes:
    return json.dumps({**payment(i), "amount": -1.0}).encode()


INVALID = {1: (broken, "broken_json"), 4: (wrong_type, "wrong_type"), 7: (missing, "missing_field")}


def produce_payments(
    conf: Mapping[str, Any], topic: str, count: int, negative_class: str | None = None
) -> Payments:
    """``count`` JSON payments; every 10th record from 1, 4, 7 invalid (and from 9, negative,
    when ``negative_class`` says what rejects it)."""
    producer = make_producer(conf)
    valid: dict[str, dict[str, Any]] = {}
    invalid: dict[str, str] = {}
    for i in range(count):
        kind = INVALID.get(i % 10)
        if kind is None and negative_class is not None and i % 10 == 9:
            kind = (negative, negative_class)
        if kind is None:
            value = json.dumps(payment(i)).encode()
            valid[f"p{i}"] = payment(i)
        else:
            value = kind[0](i)
            invalid[f"p{i}"] = kind[1]
        producer.produce(topic, value, key=f"k{i}".encode(), headers=[(ID_HEADER, f"p{i}")])
        producer.poll(0)
    assert producer.flush(30) == 0
    return Payments(valid, invalid)


def clean(rows: DataFrame) -> DataFrame:
    """A user's transformation: amounts in cents, the currency lower-cased."""
    return rows.withColumn("cents", F.round(F.col("amount") * 100).cast("long")).withColumn(
        "currency", F.lower("currency")
    )


FLAKY = {"fail_on_call": -1, "calls": 0}


def flaky(rows: DataFrame) -> DataFrame:
    """Raises on the ``FLAKY["fail_on_call"]``-th batch that has rows (the start's check on an
    empty frame does not count)."""
    if rows.isEmpty():
        return rows
    FLAKY["calls"] += 1
    if FLAKY["calls"] == FLAKY["fail_on_call"]:
        raise ValueError("the payments service is down")
    return rows
