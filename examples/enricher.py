"""Enricher: JSON order events in, a validated and enriched model out to another topic.

Run it on the embedded broker (from the repository root)::

    lagless topic create orders --partitions 3
    lagless topic create orders-enriched --partitions 3
    lagless topic create orders-dlq
    lagless produce --topic orders --workload events --count 1000 --bad-fraction 0.02
    lagless run examples.enricher:app --until-idle 3

Malformed events (broken JSON, a missing or non-numeric amount, a negative amount) never reach
``enrich``: they go to ``orders-dlq`` with the validation error in ``lagless-dlq-error``.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

import lagless

RATES_TO_EUR = {"EUR": 1.0, "USD": 0.92, "GBP": 1.17, "JPY": 0.0062, "CHF": 1.05}


class Order(BaseModel):
    order_id: str
    user_id: str
    amount: float = Field(gt=0)
    currency: str
    country: str
    event_ts: datetime


class Enriched(BaseModel):
    order_id: str
    user_id: str
    amount_eur: float
    country: str
    event_ts: datetime
    source: str  # topic[partition]@offset of the order


app = lagless.App(group="enricher")


@app.handler("orders", ordering="key", max_in_flight=500, dlq="orders-dlq",
             value=Order, output="orders-enriched")  # fmt: skip
def enrich(order: Order, record: lagless.Record) -> Enriched | None:
    rate = RATES_TO_EUR.get(order.currency)
    if rate is None:
        return None  # unknown currency: nothing written, the order counts as done
    return Enriched(
        order_id=order.order_id,
        user_id=order.user_id,
        amount_eur=round(order.amount * rate, 2),
        country=order.country,
        event_ts=order.event_ts,
        source=str(record.coordinates),
    )


if __name__ == "__main__":
    app.run()
