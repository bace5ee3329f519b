"""Handler registration a hostile user would try: pure logic (no broker)."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple

import pytest
from pydantic import BaseModel
from typing_extensions import TypedDict  # pydantic wants it on Python < 3.12

import lagless
from lagless.app.codecs import EncodeError, decoder, encode
from lagless.engine.handlers import DecodeError
from lagless.errors import ConfigError


class Point(BaseModel):
    x: int
    y: int


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


@pytest.mark.parametrize(
    ("spec", "data", "expected"),
    [
        (dict, b'{"a": 1}', {"a": 1}),
        (bool, b"false", False),  # bool(b"false") would be True
        (list[int], b"[1, 2]", [1, 2]),  # list(b"[1, 2]") would be the bytes' codes
        (dict[str, Point], b'{"p": {"x": 1, "y": 2}}', {"p": Point(x=1, y=2)}),
        (int | None, None, None),  # a null is None where the type allows it
    ],
)
def test_container_and_generic_types_are_validated_json(
    spec: Any, data: bytes | None, expected: Any
) -> None:
    assert decoder(spec)(data) == expected


@pytest.mark.parametrize(
    ("spec", "data", "reason"),
    [
        (dict, b"[1]", "not a valid dict: Input should be an object"),
        (list[int], b'["x"]', "not a valid list[int]: 0: Input should be a valid integer"),
        (bool, b"maybe", "not a valid bool: Invalid JSON"),
        (dict, None, "null, not a dict"),
    ],
)
def test_container_and_generic_types_reject_with_the_reason(
    spec: Any, data: bytes | None, reason: str
) -> None:
    with pytest.raises(DecodeError, match=re.escape(reason)):
        decoder(spec)(data)


def test_a_handlers_failure_choice_replaces_the_apps() -> None:
    app = lagless.App(group="g", on_failure="stop", dlq=None)

    @app.handler("a", dlq="a-dlq")  # its DLQ wins over the app's on_failure
    def a(value: bytes) -> None: ...

    skipping = lagless.App(group="g", dlq="all-dlq")

    @skipping.handler("b", on_failure="skip")  # and its on_failure over the app's DLQ
    def b(value: bytes) -> None: ...

    (ca,), (cb,) = app.engine_configs(), skipping.engine_configs()
    assert (ca.dlq_topic, ca.on_failure) == ("a-dlq", None)
    assert (cb.dlq_topic, cb.on_failure) == (None, "skip")


def test_processes_are_refused_for_app_handlers_with_one_line() -> None:
    app = lagless.App(group="g", on_failure="stop")
    with pytest.raises(ConfigError, match="handler h: processes=2: an App handler runs in threads"):

        @app.handler("t", processes=2)
        def h(value: bytes) -> None: ...

    @app.handler("t", processes=0)  # threads: the default
    def fine(value: bytes) -> None: ...

    with pytest.raises(ConfigError, match="handler fine: processes=4"):
        app.configured(processes=4)  # e.g. lagless run --processes 4


def test_an_async_decoder_is_refused() -> None:
    async def parse(data: bytes | None) -> bytes | None:
        return data

    with pytest.raises(ConfigError, match="value=parse: an async def decoder"):
        decoder(parse)


def test_settings_and_a_bootstrap_at_once_are_refused() -> None:
    from pathlib import Path

    from lagless.config import KafkaSettings

    settings = KafkaSettings(bootstrap="127.0.0.1:1")
    with pytest.raises(ConfigError, match="settings= or bootstrap=/config_file="):
        lagless.App(group="g", settings=settings, bootstrap="127.0.0.1:2")
    with pytest.raises(ConfigError, match="settings= or bootstrap=/config_file="):
        lagless.App(group="g", settings=settings, config_file=Path("lagless.toml"))


def test_a_decorator_without_its_topic_is_one_line() -> None:
    app = lagless.App(group="g", on_failure="stop")
    with pytest.raises(ConfigError, match=r'@app.handler needs its topic: @app.handler\("orders"'):

        @app.handler  # type: ignore[arg-type]
        def h(value: bytes) -> None: ...

    for topics in ([], [""], ["a", 3], ""):
        with pytest.raises(ConfigError, match="topic"):
            app.handler(topics)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("output", "message"),
    [
        ("", "output='': '' is not a topic name"),
        (["a", "b"], "output=['a', 'b']: give one topic name"),
        ("orders out", "output='orders out': 'orders out' is not a topic name"),
        ("t", "output='t' is a topic it consumes: every output would be consumed again"),
    ],
)
def test_an_output_that_is_not_a_topic_name_is_refused_at_registration(
    output: Any, message: str
) -> None:
    app = lagless.App(group="g", on_failure="stop")
    with pytest.raises(ConfigError, match=re.escape(f"handler h: {message}")):

        @app.handler("t", output=output)
        def h(value: bytes) -> bytes:
            return value

    assert app.specs == []


@dataclass
class Reading:
    sensor: str
    celsius: float


class ReadingDict(TypedDict):
    sensor: str
    celsius: float


class ReadingTuple(NamedTuple):
    sensor: str
    celsius: float


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (Reading, Reading("s1", 21.5)),  # Reading(b"...") would hold the bytes as its sensor
        (ReadingDict, {"sensor": "s1", "celsius": 21.5}),
        (ReadingTuple, ReadingTuple("s1", 21.5)),
        (Any, {"sensor": "s1", "celsius": 21.5}),
    ],
)
def test_dataclasses_typed_dicts_and_named_tuples_are_validated_json(
    spec: Any, expected: object
) -> None:
    decode = decoder(spec)
    assert decode(b'{"sensor": "s1", "celsius": 21.5}' if spec is not ReadingTuple
                  else b'["s1", 21.5]') == expected  # fmt: skip
    if spec is not Any:
        with pytest.raises(DecodeError, match="celsius"):
            decode(b'{"sensor": "s1", "celsius": "warm"}')


def test_a_type_pydantic_refuses_is_one_line_at_registration() -> None:
    import typing

    class Old(typing.TypedDict):  # pydantic refuses typing's TypedDict on Python < 3.12
        sensor: str

    if sys.version_info >= (3, 12):
        assert decoder(Old)(b'{"sensor": "s1"}') == {"sensor": "s1"}
        return
    with pytest.raises(ConfigError, match=r"value=.*Old.*typing_extensions\.TypedDict"):
        decoder(Old)


def test_a_dataclass_output_is_written_as_its_json() -> None:
    assert encode(Reading("s1", 21.5)) == b'{"sensor":"s1","celsius":21.5}'
    assert encode([Reading("s1", 1.0)]) == b'[{"sensor":"s1","celsius":1.0}]'
    with pytest.raises(EncodeError, match="not JSON compliant"):
        encode(Reading("s1", float("nan")))


def test_a_key_parameter_before_the_value_is_refused_at_registration() -> None:
    app = lagless.App(group="g", on_failure="stop")
    with pytest.raises(ConfigError, match=r"handler h: .*multiple values for argument 'key'"):

        @app.handler("t", key=str)
        def h(key: str, value: bytes) -> None: ...  # called h(value, key=...): fails each record

    with pytest.raises(ConfigError, match=r"handler b: .*multiple values for argument 'keys'"):

        @app.handler("t", batch_size=10)
        def b(keys: list[bytes], values: list[bytes]) -> None: ...

    @app.handler("t", key=str)
    def fine(value: bytes, key: str) -> None: ...

    assert [s.name for s in app.specs] == ["fine"]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"value": str}, "App(value=...): not an engine option; value= goes to @app.handler"),
        ({"max_inflight": 5}, "App(max_inflight=...): not an engine option"),
        ({"topics": ["t"]}, "App(topics=...): not an engine option; topics go to @app.handler"),
    ],
)
def test_an_app_option_that_is_not_an_engine_option_is_refused_by_the_app(
    options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        lagless.App(group="g", **options)  # not blamed on the first handler registered


def test_topics_given_by_keyword_to_a_handler_is_one_line() -> None:
    app = lagless.App(group="g", on_failure="stop")
    with pytest.raises(ConfigError, match=re.escape("@app.handler(..., topics=...): the topic")):
        app.handler("t", topics=["u"])  # was a TypeError from deep inside EngineConfig.build


def test_output_conf_that_is_not_a_mapping_is_one_line() -> None:
    app = lagless.App(group="g", on_failure="stop")
    with pytest.raises(ConfigError, match=re.escape("handler h: output_conf='linger.ms=5'")):

        @app.handler("t", output_conf="linger.ms=5")  # type: ignore[arg-type]
        def h(value: bytes) -> None: ...


def test_a_key_parameter_misnamed_for_the_kind_of_handler_is_refused() -> None:
    app = lagless.App(group="g", on_failure="stop")
    with pytest.raises(ConfigError, match="handler b: a batch handler gets its keys as 'keys'"):

        @app.handler("t", batch_size=10)
        def b(values: list[bytes], key: list[bytes]) -> None: ...  # would get the records

    with pytest.raises(ConfigError, match="handler h: a handler gets its key as 'key'"):

        @app.handler("t")
        def h(value: bytes, keys: bytes) -> None: ...  # would get the record

    assert app.specs == []


@pytest.mark.parametrize("port", ["9000", 9000.0, True, 0])
def test_a_metrics_port_that_is_not_a_port_number_is_one_line(port: Any) -> None:
    app = lagless.App(group="g", on_failure="stop")

    @app.handler("t")
    def h(value: bytes) -> None: ...

    with pytest.raises(ConfigError, match="is not a port"):  # raised before connecting
        app.run(metrics_port=port)
