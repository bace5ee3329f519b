"""Batch handlers in a lagless.App on the real broker: typed values decoded per record (bad
ones to the DLQ with the reason, the rest of the batch handled), outputs of a batch produced
and acknowledged before its offsets are committed, partial failures named by the function,
async batch functions, and an output that cannot be written failing only its own record."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any

import pytest
from pydantic import BaseModel

import lagless
from lagless.engine.results.dlq import H_ERROR, H_ERROR_CLASS
from lagless.kafka.admin import committed_offsets
from lagless.kafka.offsets import end_offsets
from lagless.testing import TestKafka

pytestmark = pytest.mark.integration

TIMINGS: dict[str, Any] = {
    "session_timeout_ms": 6000, "heartbeat_interval_ms": 1500, "until_idle_s": 1.5,
    "retries": 1, "retry_backoff_s": 0.01,
}  # fmt: skip


class Order(BaseModel):
    id: int
    amount: float


def reasons(kafka: TestKafka, dlq: str, count: int) -> list[tuple[bytes | None, str]]:
    """The dead letters' (value, reason), sorted."""
    letters = kafka.read(dlq, count=count)
    assert len(letters) == count
    return sorted((r.value, (r.header(H_ERROR) or b"").decode()) for r in letters)


def test_a_batch_handler_gets_typed_values_writes_outputs_and_names_failures(
    lagless_kafka: TestKafka,
) -> None:
    source, out, dlq = lagless_kafka.topic(2), lagless_kafka.topic(2), lagless_kafka.topic()
    app = lagless.App(group=lagless_kafka.group(), **TIMINGS)
    sizes: list[int] = []

    @app.handler(source, batch_size=20, batch_linger_ms=300, ordering="key", dlq=dlq,
                 value=Order, key=str, output=out)  # fmt: skip
    def total(
        orders: list[Order], records: Sequence[lagless.Record], keys: list[str]
    ) -> lagless.BatchResult:
        sizes.append(len(orders))
        assert [o.id for o in orders] == [json.loads(r.value or b"")["id"] for r in records]
        pairs = zip(orders, records, strict=True)
        refused = {r: ValueError(f"order {o.id} refused") for o, r in pairs if o.id == 13}
        outputs = [lagless.Out(key=k, value={"id": o.id, "cents": round(o.amount * 100)})
                   for o, k in zip(orders, keys, strict=True) if o.id != 13]  # fmt: skip
        return lagless.BatchResult(outputs, refused)

    for customer in ("c1", "c2"):
        lagless_kafka.produce(source, [Order(id=i, amount=i / 4) for i in range(30)], key=customer)
    bad = [b"{broken", b'{"id": 3}']
    lagless_kafka.produce(source, bad, key="c3")

    summary = app.configured(lagless_kafka.settings).run()["total"]

    assert (summary.ok, summary.dlq) == (58, 4)
    assert max(sizes) > 1, "the function was called with batches, not single records"
    written = lagless_kafka.read(out, count=58)
    by_key: dict[bytes | None, list[int]] = {}
    for r in sorted(written, key=lambda r: (r.partition, r.offset)):
        by_key.setdefault(r.key, []).append(json.loads(r.value or b"")["id"])
    expected = [i for i in range(30) if i != 13]
    assert by_key == {b"c1": expected, b"c2": expected}  # keyed, in input order per key
    why = dict(reasons(lagless_kafka, dlq, 4))
    assert "not a valid Order" in why[b"{broken"] and "amount: Field required" in why[b'{"id": 3}']
    thirteen = Order(id=13, amount=13 / 4).model_dump_json().encode()
    assert [w for w in reasons(lagless_kafka, dlq, 4) if w[0] == thirteen] == [
        (thirteen, "order 13 refused")
    ] * 2
    committed = committed_offsets(lagless_kafka.conf, app.group, [source])
    ends = end_offsets(lagless_kafka.conf, [(source, 0), (source, 1)])
    assert sum(ends.values()) == 62
    assert committed == {p: end for p, end in ends.items() if end}  # all done, all committed


def test_an_async_batch_handler_and_failures_by_position(lagless_kafka: TestKafka) -> None:
    source, out, dlq = lagless_kafka.topic(2), lagless_kafka.topic(), lagless_kafka.topic()
    app = lagless.App(group=lagless_kafka.group(), **TIMINGS)
    loops: set[int] = set()
    calls = {"now": 0, "max": 0}

    @app.handler(source, batch_size=25, batch_linger_ms=200, ordering="unordered",
                 max_in_flight=8, value=int, dlq=dlq, output=out)  # fmt: skip
    async def square(numbers: list[int]) -> lagless.BatchResult:
        loops.add(id(asyncio.get_running_loop()))
        calls["now"] += 1
        calls["max"] = max(calls["max"], calls["now"])
        await asyncio.sleep(0.2)  # one simulated round trip per batch
        calls["now"] -= 1
        failed = {i: ValueError("negative") for i, n in enumerate(numbers) if n < 0}
        return lagless.BatchResult([n * n for n in numbers if n >= 0], failed)

    lagless_kafka.produce(source, [str(i) for i in range(200)] + ["-1", "x"])

    summary = app.configured(lagless_kafka.settings).run()["square"]

    assert (summary.ok, summary.dlq) == (200, 2)
    assert len(loops) == 1 and calls["max"] >= 2, calls  # batches awaited side by side
    squares = sorted(int(r.value or b"") for r in lagless_kafka.read(out, count=200))
    assert squares == [i * i for i in range(200)]
    (minus, why_minus), (x, why_x) = reasons(lagless_kafka, dlq, 2)
    assert (minus, why_minus, x) == (b"-1", "negative", b"x") and "int: ValueError" in why_x


def test_an_output_that_is_not_acknowledged_fails_only_its_record(
    lagless_kafka: TestKafka,
) -> None:
    source, out, dlq = lagless_kafka.topic(), lagless_kafka.topic(), lagless_kafka.topic()
    app = lagless.App(group=lagless_kafka.group(), **TIMINGS)

    @app.handler(source, batch_size=8, batch_linger_ms=300, value=str, dlq=dlq, output=out,
                 output_conf={"message.max.bytes": 2000})  # fmt: skip
    def copy(texts: list[str]) -> list[str]:
        return [t * 1000 if t == "big" else t for t in texts]  # "big" cannot be produced

    texts = [f"t{i}" for i in range(8)]
    texts[5] = "big"
    lagless_kafka.produce(source, texts)

    summary = app.configured(lagless_kafka.settings).run()["copy"]

    assert (summary.ok, summary.dlq) == (7, 1)  # the batch was split to find the one record
    letter = lagless_kafka.read(dlq, count=1)[0]
    assert letter.value == b"big" and letter.header(H_ERROR_CLASS) is not None
    written = [r.value for r in lagless_kafka.read(out, count=7)]
    assert set(written) == {t.encode() for t in texts if t != "big"}
