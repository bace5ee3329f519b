"""Kafka messages -> Arrow batches of exactly Spark's Kafka schema."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from confluent_kafka import Message

from lagless.spark.connector.fetch import BatchBuilder, fetch_conf
from lagless.spark.connector.schema import arrow_schema, kafka_schema


@pytest.mark.parametrize("headers", [True, False])
def test_batches_match_sparks_arrow_schema(headers: bool) -> None:
    schema = arrow_schema(kafka_schema(include_headers=headers))
    builder = BatchBuilder(schema, "t", 3)
    first = Message(
        topic="t",
        partition=3,
        offset=7,
        key=b"k",
        value=b"v",
        headers=[("a", b"1"), ("b", None)],
        timestamp=(1, 1_700_000_000_123),
    )
    builder.add(first)
    builder.add(Message(topic="t", partition=3, offset=9, headers=None, timestamp=(2, 5)))
    builder.add(Message(topic="t", partition=3, offset=10, value=b"x", timestamp=(0, -1)))
    batch = builder.flush()
    assert len(builder) == 0
    assert batch.schema.equals(schema)  # what Spark checks before taking the batch
    rows = batch.to_pylist()
    assert [r["offset"] for r in rows] == [7, 9, 10]
    assert [r["partition"] for r in rows] == [3, 3, 3]
    assert [r["topic"] for r in rows] == ["t", "t", "t"]
    assert [r["key"] for r in rows] == [b"k", None, None]
    assert [r["value"] for r in rows] == [b"v", None, b"x"]
    # Kafka timestamp types as Spark reports them: 0 create time, 1 log append, -1 none
    assert [r["timestampType"] for r in rows] == [0, 1, -1]
    assert rows[0]["timestamp"] == datetime(2023, 11, 14, 22, 13, 20, 123000, tzinfo=UTC)
    assert rows[2]["timestamp"] is None
    if headers:
        assert rows[0]["headers"] == [{"key": "a", "value": b"1"}, {"key": "b", "value": None}]
        assert rows[1]["headers"] is None  # no headers: null, as in Spark's source
        assert rows[2]["headers"] is None
    else:
        assert "headers" not in batch.schema.names


def test_fetch_conf_keeps_reader_invariants() -> None:
    conf = fetch_conf(
        {"bootstrap.servers": "h:1", "enable.auto.commit": True, "fetch.wait.max.ms": 7}
    )
    assert conf["enable.auto.commit"] is False  # a range reader never commits
    assert conf["enable.partition.eof"] is True
    assert conf["fetch.wait.max.ms"] == 7  # tuning the user may override
    assert conf["group.id"].startswith("lagless-spark-reader-")


def test_headers_column_without_any_header_and_with_str_values() -> None:
    schema = arrow_schema(kafka_schema(include_headers=True))
    builder = BatchBuilder(schema, "t", 0)
    builder.extend([Message(topic="t", partition=0, offset=i, timestamp=(1, i)) for i in range(3)])
    bare = builder.flush()
    assert bare.schema.equals(schema)
    assert bare.column("headers").to_pylist() == [None, None, None]
    assert bare.column("offset").to_pylist() == [0, 1, 2]
    builder.add(Message(topic="t", partition=0, offset=3, headers=[("s", "é")], timestamp=(1, 3)))
    assert builder.flush().column("headers").to_pylist() == [[{"key": "s", "value": "é".encode()}]]


def offsets_of(builder: BatchBuilder, offsets: list[int], chunks: int = 1) -> list[int]:
    msgs = [Message(topic="t", partition=0, offset=o, timestamp=(1, o)) for o in offsets]
    size = -(-len(msgs) // chunks)
    for i in range(0, len(msgs), size):
        builder.extend(msgs[i : i + size])
    column: list[int] = builder.flush().column("offset").to_pylist()
    return column


def test_offsets_exact_for_ranges_gaps_and_a_reset_to_earlier_offsets() -> None:
    builder = BatchBuilder(arrow_schema(kafka_schema(include_headers=False)), "t", 0)
    assert offsets_of(builder, list(range(10, 20)), chunks=3) == list(range(10, 20))
    assert offsets_of(builder, [3, 4, 6, 7]) == [3, 4, 6, 7]  # a gap (compaction, markers)
    # a consumer reset to an earlier offset between chunks: first/last/count alone would
    # look like the range 2..5
    assert offsets_of(builder, [2, 3, 0, 5], chunks=2) == [2, 3, 0, 5]
    assert offsets_of(builder, [4, 5, 6, 7]) == [4, 5, 6, 7]  # each batch starts afresh


def test_an_empty_header_list_is_null_like_no_headers() -> None:
    builder = BatchBuilder(arrow_schema(kafka_schema(include_headers=True)), "t", 0)
    builder.add(Message(topic="t", partition=0, offset=0, headers=[], timestamp=(1, 0)))
    builder.add(Message(topic="t", partition=0, offset=1, headers=[("k", None)], timestamp=(1, 0)))
    assert builder.flush().column("headers").to_pylist() == [None, [{"key": "k", "value": None}]]
