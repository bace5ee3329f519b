"""lagless.App on the real broker: typed decode (bad values to the DLQ with the reason),
outputs, two handlers in one app, run_async inside a running loop."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from pydantic import BaseModel

import lagless
from lagless.engine.results.dlq import H_ERROR, H_ERROR_CLASS, H_OFFSET
from lagless.errors import ConfigError, RecordError
from lagless.testing import TestKafka

pytestmark = pytest.mark.integration

# Tansu holds a JoinGroup for session.timeout.ms / 2: keep sessions short in tests.
TIMINGS: dict[str, Any] = {
    "session_timeout_ms": 6000, "heartbeat_interval_ms": 1500, "until_idle_s": 1.5,
}  # fmt: skip


class Order(BaseModel):
    id: int
    amount: float


class Enriched(BaseModel):
    id: int
    amount: float
    vat: float


def test_typed_values_go_out_enriched_and_bad_ones_to_the_dlq_with_the_reason(
    lagless_kafka: TestKafka,
) -> None:
    source, out, dlq = lagless_kafka.topic(2), lagless_kafka.topic(2), lagless_kafka.topic()
    app = lagless.App(group=lagless_kafka.group(), **TIMINGS)
    seen: list[lagless.Record] = []

    @app.handler(source, ordering="key", max_in_flight=50, dlq=dlq, value=Order, output=out)
    def enrich(order: Order, record: lagless.Record) -> Enriched | None:
        seen.append(record)
        if order.amount == 0:
            return None  # nothing to write
        return Enriched(id=order.id, amount=order.amount, vat=round(order.amount * 0.2, 2))

    good = [Order(id=i, amount=float(i)) for i in range(30)]  # id 0 has amount 0: no output
    bad = [b"{not json", b'{"id": 1}', b'{"id": "x", "amount": 1}', None]
    lagless_kafka.produce(source, good, key="customer-1")
    lagless_kafka.produce(source, bad)

    summaries = app.configured(lagless_kafka.settings).run()

    summary = summaries["enrich"]
    assert (summary.ok, summary.dlq, summary.skipped) == (30, 4, 0)
    assert len(seen) == 30  # bad values never reach the function
    outputs = lagless_kafka.read(out, count=29)
    assert sorted(Enriched.model_validate_json(r.value or b"").id for r in outputs) == list(
        range(1, 30)
    )
    assert {r.key for r in outputs} == {b"customer-1"}  # outputs keep the input key
    one_partition = {r.partition for r in outputs}
    assert len(one_partition) == 1  # one key: one output partition, in input order
    ids = [json.loads(r.value or b"")["id"] for r in sorted(outputs, key=lambda r: r.offset)]
    assert ids == sorted(ids)
    letters = lagless_kafka.read(dlq, count=4)
    assert sorted((r.value or b"") for r in letters) == sorted(v or b"" for v in bad)
    reasons = {r.value: (r.header(H_ERROR) or b"").decode() for r in letters}
    assert all(r.header(H_ERROR_CLASS) == b"DecodeError" for r in letters)
    assert all(r.header(H_OFFSET) is not None for r in letters)
    assert "not a valid Order" in reasons[b"{not json"]
    assert "amount: Field required" in reasons[b'{"id": 1}']
    assert "id: Input should be a valid integer" in reasons[b'{"id": "x", "amount": 1}']
    assert "null" in reasons[None]


def test_two_handlers_in_one_app_each_with_its_options(lagless_kafka: TestKafka) -> None:
    orders, clicks = lagless_kafka.topic(2), lagless_kafka.topic()
    upper, fanned, other = lagless_kafka.topic(), lagless_kafka.topic(), lagless_kafka.topic()
    app = lagless.App(group=lagless_kafka.group(), **TIMINGS)

    @app.handler(orders, value=str, output=upper, on_failure="stop", ordering="partition")
    def shout(text: str) -> str:
        return text.upper()

    @app.handler(clicks, value="json", key=str, output=fanned, on_failure="skip",
                 ordering="unordered", max_in_flight=8)  # fmt: skip
    def fan_out(doc: dict[str, Any], key: str) -> list[lagless.Out]:
        return [
            lagless.Out(value={"n": doc["n"], "user": key}),
            lagless.Out(None, b"copy", {"from": key}, other),  # (key, value, headers, topic)
        ]

    lagless_kafka.produce(orders, [f"order {i}" for i in range(20)])
    lagless_kafka.produce(clicks, [{"n": i} for i in range(10)], key="u7")

    summaries = app.configured(lagless_kafka.settings).run()

    assert summaries["shout"].ok == 20 and summaries["fan_out"].ok == 10
    shouted = {r.value for r in lagless_kafka.read(upper, count=20)}
    assert shouted == {f"ORDER {i}".encode() for i in range(20)}
    fan = lagless_kafka.read(fanned, count=10)
    assert sorted(json.loads(r.value or b"")["n"] for r in fan) == list(range(10))
    assert {r.key for r in fan} == {b"u7"}
    copies = lagless_kafka.read(other, count=10)
    assert len(copies) == 10
    assert {(r.key, r.header("from")) for r in copies} == {(None, b"u7")}


def test_run_async_inside_a_running_loop_with_coroutine_handlers(lagless_kafka: TestKafka) -> None:
    source, out = lagless_kafka.topic(2), lagless_kafka.topic()
    app = lagless.App(group=lagless_kafka.group(), **TIMINGS)
    loops: set[int] = set()
    peak = {"now": 0, "max": 0}

    @app.handler(source, ordering="unordered", max_in_flight=200, on_failure="stop",
                 value=int, output=out)  # fmt: skip
    async def call(n: int) -> dict[str, int]:
        loops.add(id(asyncio.get_running_loop()))
        peak["now"] += 1
        peak["max"] = max(peak["max"], peak["now"])
        await asyncio.sleep(0.2)  # simulated I/O
        peak["now"] -= 1
        return {"n": n}

    lagless_kafka.produce(source, [str(i) for i in range(400)])

    async def main() -> dict[str, lagless.RunSummary]:
        ticks = 0

        async def tick() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        ticker = asyncio.create_task(tick())
        summaries = await app.configured(lagless_kafka.settings).run_async()
        ticker.cancel()
        assert ticks > 50, "the caller's loop was blocked while the app ran"
        assert id(asyncio.get_running_loop()) not in loops  # the engine's loop ran them
        return summaries

    summaries = asyncio.run(main())

    assert summaries["call"].ok == 400
    assert len(loops) == 1, "every coroutine ran on the engine's one event loop"
    assert peak["max"] >= 100, peak  # hundreds awaited at once, not one at a time
    assert sorted(json.loads(r.value or b"")["n"] for r in lagless_kafka.read(out, 400)) == list(
        range(400)
    )


def test_a_bad_option_fails_at_registration_with_one_line() -> None:
    app = lagless.App(group="g")
    with pytest.raises(ConfigError, match=r"handler h: .*choose what a failed"):

        @app.handler("t")
        def h(value: bytes) -> None: ...

    with pytest.raises(ConfigError, match="max_in_flight"):

        @app.handler("t", dlq="d", max_in_flight=0)
        def g(value: bytes) -> None: ...

    assert not app.specs


def test_a_failing_handler_stops_the_app_and_raises_with_coordinates(
    lagless_kafka: TestKafka,
) -> None:
    bad_topic, good_topic = lagless_kafka.topic(), lagless_kafka.topic()
    app = lagless.App(group=lagless_kafka.group(), session_timeout_ms=6000,
                      heartbeat_interval_ms=1500, retries=1, retry_backoff_s=0.01)  # fmt: skip

    @app.handler(bad_topic, on_failure="stop")
    def explode(value: bytes) -> None:
        if value == b"boom":
            raise RuntimeError("cannot handle boom")

    @app.handler(good_topic, on_failure="stop")  # no stop condition: only the failure ends it
    def fine(value: bytes) -> None: ...

    lagless_kafka.produce(bad_topic, [b"ok", b"boom"])
    with pytest.raises(RecordError, match=r"RuntimeError: cannot handle boom") as info:
        app.configured(lagless_kafka.settings).run()
    assert info.value.coordinates.topic == bad_topic
    assert info.value.coordinates.offset == 1


def test_an_output_topic_that_does_not_exist_is_one_line(lagless_kafka: TestKafka) -> None:
    app = lagless.App(group=lagless_kafka.group())

    @app.handler(lagless_kafka.topic(), output="no-such-output", on_failure="stop")
    def h(value: bytes) -> bytes:
        return value

    with pytest.raises(ConfigError, match="topic 'no-such-output' does not exist"):
        app.configured(lagless_kafka.settings).run()
    with pytest.raises(ConfigError, match="metrics port 70000 is not a port"):
        app.configured(lagless_kafka.settings).run(metrics_port=70000)
