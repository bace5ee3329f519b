"""Typed values and keys (lagless.app.codecs), output records (lagless.app.outputs) and
handler registration: pure logic."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

import lagless
from lagless.app.codecs import EncodeError, decoder, encode, encoder
from lagless.app.outputs import Outgoing, Target, outgoing
from lagless.config import KafkaSettings
from lagless.errors import ConfigError

TO_OUT = Target("h", "out")


class Point(BaseModel):
    x: int
    y: int


@pytest.mark.parametrize(
    ("spec", "data", "expected"),
    [
        (bytes, b"\x00raw", b"\x00raw"),
        (bytes, None, None),
        (str, "héllo".encode(), "héllo"),
        ("json", b'{"a": [1, 2]}', {"a": [1, 2]}),
        (Point, b'{"x": 1, "y": 2}', Point(x=1, y=2)),
        (int, b"42", 42),
        (lambda b: b[::-1], b"abc", b"cba"),
    ],
)
def test_decoders(spec: Any, data: bytes | None, expected: Any) -> None:
    assert decoder(spec)(data) == expected


@pytest.mark.parametrize(
    ("spec", "data", "reason"),
    [
        (str, b"\xff", "not UTF-8 text"),
        ("json", b"{broken", "not JSON"),
        ("json", None, "null, not JSON"),
        (Point, b'{"x": 1}', "not a valid Point: y: Field required"),
        (Point, b'{"x": "a", "y": "b"}', "x: Input should be a valid integer"),
        (Point, b'{"x": "a", "y": "b"}', "(+1 more)"),
        (Point, None, "null, not a Point"),
        (int, b"x", "int: ValueError"),
    ],
)
def test_bad_data_is_a_decode_error_with_the_reason(
    spec: Any, data: bytes | None, reason: str
) -> None:
    with pytest.raises(lagless.DecodeError, match=None) as info:
        decoder(spec)(data)
    assert reason in str(info.value)


def test_an_unusable_codec_spec_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="value=42: use bytes, str, 'json'"):
        decoder(42)


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        (None, None),
        (b"b", b"b"),
        ("s", b"s"),
        (Point(x=1, y=2), b'{"x":1,"y":2}'),
        ({"a": 1}, b'{"a":1}'),
        ([1, "x"], b'[1,"x"]'),
        (3.5, b"3.5"),
    ],
)
def test_encode(obj: object, expected: bytes | None) -> None:
    assert encode(obj) == expected


def test_output_encoders() -> None:
    assert encoder(None)(Point(x=1, y=2), "t") == b'{"x":1,"y":2}'
    upper = encoder(lambda s: s.upper().encode())
    assert upper("abc", "t") == b"ABC"
    with pytest.raises(EncodeError, match="output_value <lambda> for t: AttributeError"):
        upper(3, "t")
    with pytest.raises(EncodeError, match="returned str, not bytes"):
        encoder(str.upper, "output_key")("a", "t")
    with pytest.raises(ConfigError, match="output_value=3: use a callable"):
        encoder(3)
    target = Target("h", "out", value=upper, key=encoder(lambda k: k.encode()))
    assert outgoing(lagless.Out("k", "v"), b"in", target) == [Outgoing("out", b"k", b"V", [])]


def test_return_values_become_output_records() -> None:
    assert outgoing(None, b"k1", TO_OUT) == []
    assert outgoing(lagless.Out(), b"k1", TO_OUT) == [Outgoing("out", b"k1", None, [])]
    assert outgoing("v", b"k1", TO_OUT) == [Outgoing("out", b"k1", b"v", [])]
    assert outgoing(Point(x=1, y=2), b"k1", TO_OUT) == [
        Outgoing("out", b"k1", b'{"x":1,"y":2}', [])
    ]
    many = outgoing(
        [lagless.Out(None, "a"), lagless.Out("k2", b"b", {"h": "1"}, "other"),
         None, {"c": 3}],
        b"k1", TO_OUT,
    )  # fmt: skip
    assert many == [
        Outgoing("out", None, b"a", []),
        Outgoing("other", b"k2", b"b", [("h", "1")]),
        Outgoing("out", b"k1", b'{"c":3}', []),
    ]
    with pytest.raises(ConfigError, match="has no output topic"):
        outgoing("v", b"k1", Target("h"))


def test_handler_options_and_overrides() -> None:
    app = lagless.App(group="g", until_idle_s=3)

    @app.handler("in", dlq="in-dlq", max_in_flight=9, ordering="key", output_conf={"linger.ms": 2})
    def one(value: bytes) -> None: ...

    @app.handler(["a", "b"], on_failure="skip", group="own", static_id="pod-1")
    def two(value: bytes, record: lagless.Record, key: bytes | None = None) -> None: ...

    c1, c2 = app.engine_configs()
    assert (c1.topics, c1.group, c1.dlq_topic, c1.max_in_flight, c1.until_idle_s) == (
        ("in",),
        "g",
        "in-dlq",
        9,
        3,
    )
    assert (c2.topics, c2.group, c2.on_failure, c2.static_id) == (
        ("a", "b"),
        "own",
        "skip",
        "pod-1",
    )
    spec1, spec2 = app.specs
    assert (spec1.output_conf, spec2.output_conf) == ({"linger.ms": 2}, {})
    assert (spec1.pass_record, spec1.pass_key, spec2.pass_record, spec2.pass_key) == (
        False, False, True, True
    )  # fmt: skip

    over = app.configured(max_in_flight=2, on_failure="stop", static_id="pod-9")
    o1, o2 = over.engine_configs()
    assert (o1.max_in_flight, o1.dlq_topic, o1.on_failure) == (2, None, "stop")  # DLQ replaced
    assert (o2.static_id, o1.static_id) == ("pod-9-two", "pod-9-one")  # no two equal ids
    assert app.engine_configs()[0].max_in_flight == 9  # the original is untouched
    dlq = app.configured(dlq_topic="all-dlq").engine_configs()
    assert [(c.dlq_topic, c.on_failure) for c in dlq] == [("all-dlq", None)] * 2


def test_registration_errors() -> None:
    app = lagless.App(group="g")
    with pytest.raises(ConfigError, match="takes \\(value\\) or \\(value, record\\)"):
        app.handler("t", dlq="d")(lambda: None)

    @app.handler("t", dlq="d")
    def h(value: bytes) -> None: ...

    with pytest.raises(ConfigError, match="two handlers named 'h'"):
        app.handler("u", dlq="d")(h)
    with pytest.raises(ConfigError, match="no handlers"):
        lagless.App(group="g").engine_configs()
    with pytest.raises(ConfigError, match="group"):
        lagless.App(group="")


def test_schema_registry_without_its_extra_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    from lagless.app import registry

    monkeypatch.setitem(sys.modules, "confluent_kafka.schema_registry", None)  # not installed
    with pytest.raises(
        ConfigError, match=r"needs its extra \(pip install 'lagless\[schemaregistry\]'\)"
    ):
        registry.avro("http://registry:8081")


def test_app_settings_explicit_flags_env_and_toml(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("LAGLESS_CONFIG", raising=False)
    monkeypatch.setenv("LAGLESS_BOOTSTRAP", "env-host:9092")
    toml = tmp_path / "kafka.toml"
    toml.write_text('[kafka]\nbootstrap = "toml-host:9092"\nclient_id = "from-toml"\n')
    assert lagless.App(group="g").settings().bootstrap == "env-host:9092"
    from_file = lagless.App(group="g", config_file=toml).settings()
    assert (from_file.bootstrap, from_file.client_id) == ("env-host:9092", "from-toml")  # env wins
    assert (
        lagless.App(group="g", bootstrap="flag:1", config_file=toml).settings().bootstrap
        == "flag:1"
    )
    explicit = KafkaSettings(bootstrap="explicit:2")
    assert lagless.App(group="g", settings=explicit).settings() == explicit
    monkeypatch.delenv("LAGLESS_BOOTSTRAP")
    assert lagless.App(group="g", config_file=toml).settings().bootstrap == "toml-host:9092"
