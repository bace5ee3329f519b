"""Records as text lines, the format ``lagless tail --json`` writes and ``lagless produce
--from`` reads, so the two round-trip byte for byte.

A JSON line is ``{"key", "value", "headers", "partition"}`` (tail adds ``topic``, ``offset``
and ``timestamp``). Keys, values and header values are JSON strings when they are valid UTF-8,
``{"base64": "..."}`` when they are not, and ``null`` when absent. ``headers`` is a list of
``[name, value]`` pairs (order and repeated names kept); an object ``{name: value}`` is also
read. A tab line is ``key<TAB>value`` (a line without a tab is a value without key; another
delimiter as kcat's ``-K``). A value line is the record's value as is (plain JSON documents,
one per line). Lines are read with ``surrogateescape``: bytes that are not UTF-8 reach the
record as they were.
"""

from __future__ import annotations

import base64
import binascii
import difflib
import json
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Message

from lagless.kafka.records import coordinates, header_pairs, timestamp_ms

Headers = list[tuple[str, bytes | None]]


class LineError(ValueError):
    """A line that is not a record; the message says why (the caller adds the line number)."""


@dataclass(frozen=True)
class LineRecord:
    """A user's record read from a line."""

    value: bytes | None
    key: bytes | None = None
    headers: Headers | None = None
    partition: int | None = None


def encode_bytes(data: bytes | None) -> str | dict[str, str] | None:
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(data).decode("ascii")}


def decode_bytes(field: str, raw: Any) -> bytes | None:
    if raw is None:
        return None
    if isinstance(raw, str):
        return raw.encode("utf-8", "surrogateescape")
    if isinstance(raw, dict) and set(raw) == {"base64"} and isinstance(raw["base64"], str):
        try:
            return base64.b64decode(raw["base64"], validate=True)
        except binascii.Error:
            raise LineError(f"{field}: base64 is not valid") from None
    raise LineError(f'{field} must be a string, {{"base64": "..."}} or null')


def decode_headers(raw: Any) -> Headers | None:
    if raw is None:
        return None
    if isinstance(raw, dict):
        pairs: list[Any] = list(raw.items())
    elif isinstance(raw, list):
        pairs = raw
    else:
        raise LineError("headers must be a list of [name, value] pairs or an object")
    out: Headers = []
    for pair in pairs:
        if not isinstance(pair, (list, tuple)) or len(pair) != 2 or not isinstance(pair[0], str):
            raise LineError("each header must be a [name, value] pair with a string name")
        out.append((pair[0], decode_bytes(f"header {pair[0]}", pair[1])))
    return out


RECORD_FIELDS = frozenset({"key", "value", "headers", "partition", "topic", "offset", "timestamp"})


def parse_json_line(line: str) -> LineRecord:
    try:
        doc = json.loads(line)
    except json.JSONDecodeError as exc:
        raise LineError(f"not JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(doc, dict):
        raise LineError('a JSON line must be an object like {"key": ..., "value": ...}')
    unknown = sorted(set(doc) - RECORD_FIELDS)
    if unknown:
        raise LineError(f"unknown fields {unknown}: use key, value, headers, partition{hint(doc)}")
    partition = doc.get("partition")
    if partition is not None and (not isinstance(partition, int) or partition < 0):
        raise LineError("partition must be a non-negative integer")
    return LineRecord(
        value=decode_bytes("value", doc.get("value")),
        key=decode_bytes("key", doc.get("key")),
        headers=decode_headers(doc.get("headers")),
        partition=partition,
    )


def hint(doc: dict[str, Any]) -> str:
    """Why a JSON object is not a record: a misspelt field, or a plain value."""
    unknown = sorted(set(doc) - RECORD_FIELDS)
    close = [
        f"{name} -> {match[0]}"
        for name in unknown
        if (match := difflib.get_close_matches(name, sorted(RECORD_FIELDS), 1, 0.7))
    ]
    if close:
        return f" (did you mean {', '.join(close)}?)"
    return " (or --lines value: each line is a record's value)"


def is_plain_value(line: str) -> bool:
    """Whether a JSON line is a plain document (a record's value: no record field in it),
    not a record as ``tail --json`` writes it. A misspelt record field is not plain."""
    try:
        doc = json.loads(line)
    except json.JSONDecodeError:
        return False
    if not isinstance(doc, dict) or not doc or set(doc) & RECORD_FIELDS:
        return False
    return "did you mean" not in hint(doc)


def parse_value_line(line: str) -> LineRecord:
    return LineRecord(value=line.encode("utf-8", "surrogateescape"))


def parse_tab_line(line: str, delimiter: str = "\t") -> LineRecord:
    key, tab, value = line.partition(delimiter)
    if not tab:
        return LineRecord(value=line.encode("utf-8", "surrogateescape"))
    return LineRecord(
        value=value.encode("utf-8", "surrogateescape"),
        key=key.encode("utf-8", "surrogateescape"),
    )


def message_json(msg: Message) -> dict[str, Any]:
    """One consumed record as a JSON line object (see the module doc)."""
    where = coordinates(msg)
    return {
        "topic": where.topic,
        "partition": where.partition,
        "offset": where.offset,
        "timestamp": timestamp_ms(msg),
        "key": encode_bytes(msg.key()),
        "value": encode_bytes(msg.value()),
        "headers": [[k, encode_bytes(v)] for k, v in header_pairs(msg)],
    }
