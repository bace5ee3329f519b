"""Records as text lines, the format ``lagless tail --json`` writes and ``lagless produce
--from`` reads, so the two round-trip byte for byte.

A JSON line is ``{"key", "value", "headers", "partition"}`` (tail adds ``topic``, ``offset``
and ``timestamp``). Keys, values and header values are JSON strings when they are valid UTF-8,
``{"base64": "..."}`` when they are not, and ``null`` when absent. ``headers`` is a list of
``[name, value]`` pairs (order and repeated names kept); an object ``{name: value}`` is also
read. A tab line is ``key<TAB>value`` (a line without a tab is a value without key).
"""

from __future__ import annotations

import base64
import binascii
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
        return raw.encode("utf-8")
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
        raise LineError(f"unknown fields {unknown}: use key, value, headers, partition")
    partition = doc.get("partition")
    if partition is not None and (not isinstance(partition, int) or partition < 0):
        raise LineError("partition must be a non-negative integer")
    return LineRecord(
        value=decode_bytes("value", doc.get("value")),
        key=decode_bytes("key", doc.get("key")),
        headers=decode_headers(doc.get("headers")),
        partition=partition,
    )


def parse_tab_line(line: str) -> LineRecord:
    key, tab, value = line.partition("\t")
    if not tab:
        return LineRecord(value=line.encode("utf-8"))
    return LineRecord(value=value.encode("utf-8"), key=key.encode("utf-8"))


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
