"""Shared by the Spark tests: one local SparkSession, event production, output readers.

Test modules import the ``spark`` fixture from here (``from tests.integration.spark_helpers
import spark``): ``getOrCreate`` hands every module the same session, started once.
"""

from __future__ import annotations

import subprocess
import time
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
from confluent_kafka import Producer
from pyspark.sql import SparkSession

from lagless.ids import ID_HEADER
from lagless.kafka.reader import read_all
from lagless.kafka.records import header
from lagless.produce.producer import run_load
from lagless.produce.workloads import OutRecord, Workload, WorkloadSpec, generate
from lagless.spark.connector.session import build_session
from lagless.spark.pipeline.dlq import DLQ_ID_HEADER

# Headers a dead letter must carry exactly as they were produced
EDGE_HEADERS: list[list[tuple[str, bytes | None]] | None] = [
    None,  # no headers
    [("a", b"1"), ("a", b"2")],  # duplicate keys, order kept
    [("n", None), ("e", b"")],  # null and empty values
    [("bin", bytes(range(256))), ("ключ", "é".encode())],  # binary value, non-ASCII key
    [("", b"x,y:~")],  # empty key
]
BIG = bytes(range(256)) * 400  # 100 KiB


def produce_edge_records(bootstrap: str, topic: str, partitions: int = 1) -> int:
    """3 x 9 records, spread over ``partitions`` in turn: every header case, null/empty/binary
    keys, a tombstone, an empty and a 100 KiB value, create times from the producer and given
    ones. How many."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    keys: list[bytes | None] = [None, b"", b"k", bytes(range(256))]
    values: list[bytes | None] = [b"v", None, b"", BIG]
    n = 0
    for round_ in range(3):
        for i in range(9):
            extra = {"timestamp": 1_700_000_000_000 + i} if i % 2 else {}
            producer.produce(
                topic,
                key=keys[i % len(keys)],
                value=values[(i + round_) % len(values)],
                headers=EDGE_HEADERS[i % len(EDGE_HEADERS)],
                partition=n % partitions,
                **extra,
            )
            n += 1
    assert producer.flush(30) == 0
    return n


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = build_session("local[2]", app_name="lagless-tests")
    yield session
    session.stop()


@dataclass(frozen=True)
class Produced:
    """What a test produced: valid ids and malformed id -> kind."""

    valid: frozenset[str]
    malformed: Mapping[str, str]

    @property
    def total(self) -> int:
        return len(self.valid) + len(self.malformed)


def produce_events(
    conf: Mapping[str, Any],
    topic: str,
    count: int,
    bad_fraction: float = 0.05,
    seed: int = 7,
    prefix: str = "e",
) -> Produced:
    spec = WorkloadSpec(Workload.EVENTS, bad_fraction=bad_fraction, seed=seed, id_prefix=prefix)
    records: list[OutRecord] = []
    for record in generate(spec):
        if len(records) == count:
            break
        records.append(record)
    result = run_load(conf, topic, iter(records), count=count)
    assert result.produced == count and result.failed == 0
    return Produced(
        valid=frozenset(r.id for r in records if r.malformed is None),
        malformed={r.id: r.malformed.value for r in records if r.malformed is not None},
    )


def pipeline_args(
    topic: str, out: Path, ck: Path, *extra: str, master: str = "local[2]"
) -> list[str]:
    """Arguments of ``lagless pipeline run`` for a test."""
    return [
        "pipeline",
        "run",
        "--topic",
        topic,
        "--output",
        str(out),
        "--checkpoint",
        str(ck),
        "--preset",
        "events",
        "--master",
        master,
        *extra,
    ]


def parquet_ids(path: Path, column: str = "order_id") -> Counter[str]:
    """Ids as a plain Parquet reader (pyarrow) sees them: every file in the folder."""
    if not path.exists():
        return Counter()
    table = ds.dataset(str(path), format="parquet", partitioning="hive").to_table(columns=[column])
    return Counter(table.column(column).to_pylist())


def listed_parquet_ids(path: Path, column: str = "order_id") -> Counter[str]:
    """Ids as a reader that lists files itself sees them (DuckDB's
    ``read_parquet('events/**/*.parquet')``): every ``*.parquet`` below ``path``, hidden and
    staging folders included, no ``_spark_metadata``, no partition discovery."""
    ids: Counter[str] = Counter()
    for file in sorted(path.rglob("*.parquet")):
        ids.update(pq.read_table(file, columns=[column]).column(column).to_pylist())
    return ids


def dlq_identities(conf: Mapping[str, Any], topic: str) -> dict[str, set[str]]:
    """``lagless-dlq-id`` -> the record ids sent under it (the dedupe key of the DLQ)."""
    out: dict[str, set[str]] = {}
    for d in dead_letters(conf, topic):
        out.setdefault(d[DLQ_ID_HEADER], set()).add(d[ID_HEADER])
    return out


def dead_letters(conf: Mapping[str, Any], topic: str) -> list[dict[str, str]]:
    """The DLQ records' lagless headers, one dict per record."""
    out = []
    for msg in read_all(conf, topic):
        names = [k for k, _ in msg.headers() or [] if k.startswith("lagless-")]
        out.append({k: (header(msg, k) or b"").decode() for k in names})
    return out


def dlq_ids(conf: Mapping[str, Any], topic: str) -> Counter[str]:
    return Counter(d[ID_HEADER] for d in dead_letters(conf, topic))


def wait_mid_batch(
    checkpoint: Path, proc: subprocess.Popen[bytes], min_batch: int, table: str = "events"
) -> int:
    """The id of a batch that is planned (offsets/N) but not finished (no commits/N)."""
    offsets, commits = checkpoint / table / "offsets", checkpoint / table / "commits"
    deadline = time.monotonic() + 600  # generous: a loaded machine starts Spark slowly
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the pipeline ended before it could be killed"
        planned = [int(p.name) for p in offsets.glob("[0-9]*")] if offsets.exists() else []
        if planned:
            last = max(planned)
            if last >= min_batch and not (commits / str(last)).exists():
                return last
        time.sleep(0.02)
    raise AssertionError("no batch in progress within 600 s")
