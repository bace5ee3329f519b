"""Packed headers (``packedHeaders``): the Arrow side, and the range reader's column."""

from __future__ import annotations

import pyarrow as pa
import pytest
from confluent_kafka import Message

from lagless.spark.fetch import HEADERS_ARROW, BatchBuilder
from lagless.spark.headers import PACKED_COLUMN, pack
from lagless.spark.options import SourceOptions
from lagless.spark.schema import arrow_schema, kafka_schema

EDGES = [
    None,  # a record without headers
    [("a", None), ("a", b""), ("", b"\x00\xff")],  # duplicate key, null and empty values
    [("ключ", b"v"), ("b", "é".encode())],  # non-ASCII key, UTF-8 value
    None,
]


def test_pack_writes_hex_pairs_in_order_and_null_without_headers() -> None:
    packed = pack(pa.array(EDGES, HEADERS_ARROW))
    assert packed.type == pa.string()
    assert packed.to_pylist() == [
        None,
        "61:~,61:,:00ff",
        "d0bad0bbd18ed187:76,62:c3a9",
        None,
    ]


def test_pack_of_a_slice_empty_and_all_null() -> None:
    whole = pa.array(EDGES, HEADERS_ARROW)
    assert pack(whole.slice(1, 2)).to_pylist() == pack(whole).to_pylist()[1:3]
    assert pack(pa.array([], HEADERS_ARROW)).to_pylist() == []
    assert pack(pa.array([None, None], HEADERS_ARROW)).to_pylist() == [None, None]
    with pytest.raises(TypeError):
        pack(pa.array([1, 2]))


def test_pack_of_many_records_matches_a_plain_python_packing() -> None:
    rows = [[(f"k{i % 3}", bytes([i % 256, 7]))] * (i % 4) or None for i in range(5000)]

    def by_hand(headers: list[tuple[str, bytes]] | None) -> str | None:
        if headers is None:
            return None
        return ",".join(f"{k.encode().hex()}:{v.hex()}" for k, v in headers)

    assert pack(pa.array(rows, HEADERS_ARROW)).to_pylist() == [by_hand(h) for h in rows]


@pytest.mark.parametrize("include", [True, False])
def test_range_reader_adds_packed_headers_beside_or_instead_of_headers(include: bool) -> None:
    schema = arrow_schema(kafka_schema(include_headers=include, packed_headers=True))
    builder = BatchBuilder(schema, "t", 0)
    for offset, headers in enumerate(EDGES):
        builder.add(
            Message(topic="t", partition=0, offset=offset, headers=headers, timestamp=(1, 1))
        )
    batch = builder.flush()
    assert batch.schema.equals(schema)  # what Spark checks before taking the batch
    assert batch.schema.names[-1] == PACKED_COLUMN
    assert (
        batch.column(PACKED_COLUMN).to_pylist() == pack(pa.array(EDGES, HEADERS_ARROW)).to_pylist()
    )
    assert ("headers" in batch.schema.names) is include


def test_packed_headers_option() -> None:
    conf = {"subscribe": "t", "kafka.bootstrap.servers": "h:1"}
    assert SourceOptions.parse(conf).packed_headers is False
    assert SourceOptions.parse({**conf, "packedheaders": "true"}).packed_headers is True
    with pytest.raises(Exception, match="packedHeaders must be true or false"):
        SourceOptions.parse({**conf, "packedheaders": "maybe"})
