"""Handler registration a hostile user would try: pure logic (no broker)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import lagless
from lagless.app.codecs import EncodeError, encode
from lagless.errors import ConfigError


def test_two_handlers_on_one_topic_in_one_group_are_refused() -> None:
    app = lagless.App(group="g", on_failure="stop")

    @app.handler("orders")
    def first(value: bytes) -> None: ...

    with pytest.raises(ConfigError, match="handlers first and second both consume 'orders'"):

        @app.handler(["other", "orders"])
        def second(value: bytes) -> None: ...

    @app.handler("orders", group="audit")  # its own group: it sees every record too
    def audit(value: bytes) -> None: ...

    assert [s.name for s in app.specs] == ["first", "audit"]
    with pytest.raises(ConfigError, match="handlers first and audit both consume 'orders'"):
        app.configured(group="one")  # e.g. lagless run --group one


def test_a_handler_it_cannot_call_is_refused_at_registration() -> None:
    app = lagless.App(group="g", on_failure="stop")
    with pytest.raises(ConfigError, match="handler h: keyword-only parameter 'db'"):

        @app.handler("t")
        def h(value: bytes, *, db: object) -> None: ...

    with pytest.raises(ConfigError, match="handler gen: a generator function"):

        @app.handler("t")
        def gen(value: bytes) -> Iterator[bytes]:
            yield value

    @app.handler("t")
    def fine(value: bytes, *, db: object = None, key: bytes | None = None) -> None: ...

    assert [s.name for s in app.specs] == ["fine"]


def test_an_out_topic_must_be_a_topic_name() -> None:
    for topic in ("", 7):
        with pytest.raises(ValueError, match="Out\\(topic="):
            lagless.Out(value=b"v", topic=topic)  # type: ignore[arg-type]


def test_outputs_that_are_not_json_are_an_encode_error() -> None:
    with pytest.raises(EncodeError, match="set"):
        encode({1, 2})
    with pytest.raises(EncodeError, match="not JSON compliant"):
        encode({"v": float("inf")})
