"""Records as text lines: what produce --from reads and tail --json writes."""

from __future__ import annotations

import json

import pytest

from lagless.kafka.jsonlines import (
    LineError,
    LineRecord,
    decode_bytes,
    encode_bytes,
    parse_json_line,
    parse_tab_line,
)


def test_bytes_round_trip_as_text_or_base64() -> None:
    for data in (b"", b"plain", "é€".encode(), b"\x00\xff\xfe", None):
        assert decode_bytes("value", encode_bytes(data)) == data
    assert encode_bytes(b"\xff") == {"base64": "/w=="}


def test_json_line_with_headers_as_pairs_or_object() -> None:
    line = json.dumps(
        {"key": "k", "value": {"base64": "AAE="}, "headers": [["a", "1"], ["a", None]],
         "partition": 2}
    )  # fmt: skip
    assert parse_json_line(line) == LineRecord(b"\x00\x01", b"k", [("a", b"1"), ("a", None)], 2)
    assert parse_json_line('{"value": "v", "headers": {"h": "x"}}').headers == [("h", b"x")]
    assert parse_json_line('{"value": null}') == LineRecord(None)


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ("{bad", "not JSON"),
        ("[1]", "must be an object"),
        ('{"vaule": "x"}', "unknown fields"),
        ('{"value": 3}', "value must be"),
        ('{"value": "x", "partition": -1}', "partition"),
        ('{"value": "x", "headers": [["h"]]}', "pair"),
        ('{"value": {"base64": "!!"}}', "base64"),
    ],
)
def test_bad_json_lines_say_why(line: str, why: str) -> None:
    with pytest.raises(LineError, match=why):
        parse_json_line(line)


def test_tab_lines() -> None:
    assert parse_tab_line("k\tv\tw") == LineRecord(b"v\tw", b"k")
    assert parse_tab_line("just a value") == LineRecord(b"just a value")
