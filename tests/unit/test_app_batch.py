"""Batch handlers in an App (lagless.app.batch): per-record decoding of a batch, what a batch
function's result means, registration and override rules: pure logic."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest
from pydantic import BaseModel

import lagless
from lagless.app.batch import Decoded, decode_batch, interpret
from lagless.app.handlers import HandlerSpec
from lagless.errors import ConfigError


class Point(BaseModel):
    x: int


def record(offset: int, value: bytes | None, key: bytes | None = b"k") -> lagless.Record:
    return lagless.Record("in", 0, offset, key, value, 1, ())


BATCH = [record(0, b'{"x": 1}'), record(1, b"{bad"), record(2, b'{"x": 3}', b"\xff")]


def spec_of(app: lagless.App) -> HandlerSpec:
    return app.specs[-1]


def test_a_batch_is_decoded_per_record_and_bad_records_are_set_aside() -> None:
    app = lagless.App(group="g")

    @app.handler("in", batch_size=10, dlq="d", value=Point, key=str)
    def f(points: list[Point], records: Sequence[lagless.Record], keys: list[str]) -> None: ...

    spec = spec_of(app)
    assert (spec.batch, spec.pass_record, spec.pass_key) == (True, True, True)
    decoded = decode_batch(spec, BATCH)
    assert decoded.values == [Point(x=1)] and decoded.keys == ["k"]
    assert decoded.records == [BATCH[0]]
    assert sorted(r.offset for r in decoded.failed) == [1, 2]
    assert all(isinstance(e, lagless.DecodeError) for e in decoded.failed.values())
    assert "not UTF-8" in str(decoded.failed[BATCH[2]])  # the key=str codec


def test_what_a_batch_function_returns() -> None:
    decoded = Decoded(records=BATCH[:2], values=["a", "b"], keys=[None, None])
    assert interpret(None, decoded, "f") == (None, {})
    assert interpret(["x", lagless.Out(value="y")], decoded, "f")[0] == [
        "x", lagless.Out(value="y")
    ]  # fmt: skip
    boom = ValueError("boom")
    assert interpret({BATCH[1]: boom}, decoded, "f") == (None, {BATCH[1]: boom})
    assert interpret({0: boom}, decoded, "f") == (None, {BATCH[0]: boom})
    outputs, failed = interpret(lagless.BatchResult(["z"], {1: "why"}), decoded, "f")
    assert outputs == ["z"] and str(failed[BATCH[1]]) == "why"
    assert interpret("one", decoded, "f") == ("one", {})


@pytest.mark.parametrize(
    ("result", "message"),
    [
        ({"total": 3}, "not {record: exception}: to write a JSON object"),
        ({5: ValueError()}, "named position 5 as failed: it got 2 values"),
        ({record(9, b""): ValueError()}, "not a record of its batch"),
        ((x for x in ()), "the work never ran"),
    ],
)
def test_a_result_that_means_nothing_fails_the_call(result: object, message: str) -> None:
    decoded = Decoded(records=BATCH[:2], values=["a", "b"], keys=[None, None])
    with pytest.raises(Exception, match=None) as info:
        interpret(result, decoded, "f")
    assert message in str(info.value)


def test_batch_registration_and_overrides() -> None:
    app = lagless.App(group="g")
    with pytest.raises(ConfigError, match=r"takes \(values\) or \(values, records\)"):
        app.handler("t", batch_size=5, dlq="d")(lambda: None)

    @app.handler("t", batch_size=5, batch_linger_ms=20, dlq="d")
    async def many(values: list[bytes]) -> None: ...

    @app.handler("u", dlq="d")
    def one(value: bytes) -> None: ...

    batch, single = app.engine_configs()
    assert (batch.batch_size, batch.batch_linger_ms, single.batch_size) == (5, 20, None)
    assert spec_of(app).batch is False and app.specs[0].is_async
    mixed = app.configured(batch_size=50).engine_configs()  # the batch handlers' option
    assert [c.batch_size for c in mixed] == [50, None]
    only_single = lagless.App(group="g")
    only_single.handler("u", dlq="d")(one)
    with pytest.raises(ConfigError, match="handler one: takes one record at a time"):
        only_single.configured(batch_size=50)
    only_batch = lagless.App(group="g")
    only_batch.handler("t", batch_size=5, dlq="d")(many)
    assert only_batch.configured(batch_size=50).engine_configs()[0].batch_size == 50
    # --no-inline: every handler's, per record as in batches (both may run on the poll thread)
    assert [c.inline for c in app.configured(inline=False).engine_configs()] == [False, False]
    assert [c.inline for c in app.configured().engine_configs()] == [True, True]
    assert only_batch.configured(inline=False).engine_configs()[0].inline is False
    assert only_single.configured(inline=False).engine_configs()[0].inline is False
    single = lagless.App(group="g")
    single.handler("u", dlq="d", inline=False)(one)
    assert single.engine_configs()[0].inline is False


def test_the_async_wrapper_returns_decode_failures_without_calling_the_function() -> None:
    from lagless.app.batch import async_batch_engine_handler

    app = lagless.App(group="g")
    called: list[Any] = []

    @app.handler("in", batch_size=10, dlq="d", value=Point)
    async def f(points: list[Point]) -> None:
        called.append(points)

    handle = async_batch_engine_handler(spec_of(app), producer=None)  # type: ignore[arg-type]
    failed = asyncio.run(handle([BATCH[1]]))
    assert called == [] and failed is not None and list(failed) == [BATCH[1]]
