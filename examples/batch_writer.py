"""Batch writer: JSON order events in, each batch appended to a SQLite table in one transaction.

Run it on the embedded broker (from the repository root)::

    lagless topic create order-events --partitions 3
    lagless topic create order-events-dlq
    lagless produce --topic order-events --workload events --count 5000 --bad-fraction 0.02
    lagless run examples.batch_writer:app --until-idle 3
    python -c "import sqlite3; db = sqlite3.connect('orders.db')
    print(*db.execute('select count(*), round(sum(amount), 2) from orders'))"

``write`` gets up to 500 validated orders at a time (a partition's batch waits up to 200 ms to
fill) with their records, and inserts them in one transaction: one commit per batch instead of
one per record. Malformed events never reach it: they go to ``order-events-dlq`` with the
validation error. The batch's offsets are committed only after ``write`` returned, so a crash
re-runs at most the batches in flight; the table's key is the record's (topic, partition,
offset), so a batch written twice stays one copy of each order. ``ORDERS_DB`` names the file.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Sequence
from datetime import datetime

from pydantic import BaseModel, Field

import lagless

DB = os.environ.get("ORDERS_DB", "orders.db")
SCHEMA = """create table if not exists orders (
    topic text, partition integer, offset integer,
    order_id text, user_id text, amount real, currency text, country text, event_ts text,
    primary key (topic, partition, offset))"""


class Order(BaseModel):
    order_id: str
    user_id: str
    amount: float = Field(gt=0)
    currency: str
    country: str
    event_ts: datetime


app = lagless.App(group="batch-writer")


@app.handler("order-events", batch_size=500, batch_linger_ms=200, dlq="order-events-dlq",
             value=Order)  # fmt: skip
def write(orders: list[Order], records: Sequence[lagless.Record]) -> None:
    rows = [
        (r.topic, r.partition, r.offset, o.order_id, o.user_id, o.amount, o.currency,
         o.country, o.event_ts.isoformat())
        for o, r in zip(orders, records, strict=True)
    ]  # fmt: skip
    db = sqlite3.connect(DB, timeout=30)  # one connection per batch: batches run in threads
    try:
        with db:  # one transaction: every row of the batch, or none
            db.execute(SCHEMA)
            db.executemany("insert or replace into orders values (?,?,?,?,?,?,?,?,?)", rows)
    finally:
        db.close()


if __name__ == "__main__":
    app.run()
