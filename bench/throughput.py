"""Records/s of the engine with the noop handler beside a raw confluent-kafka consume loop.

Prints one JSON object. Usage: python bench/throughput.py [--records N] [--partitions P]
[--value-bytes B] [--max-in-flight M]

One topic of N jobs records (~150 B values, with the ``lagless-id`` header), read in the same
run by: a raw loop (``consume(500)``, no per-record work: the ceiling of the client), and
the engine (``noop`` handler) in each ordering mode, each with its own group. Rates are over
first record -> last record, so joining the group counts for none of them.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import threading
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _broker import bench_cluster
from lagless.engine import Ordering, Record, run_engine
from lagless.kafka.admin import create_topic
from lagless.kafka.clients import make_consumer
from lagless.produce.producer import run_load
from lagless.produce.workloads import OutRecord, Workload, WorkloadSpec, generate
from seed000 import bench_config


def raw_loop(conf: Mapping[str, Any], topic: str, records: int) -> dict[str, float]:
    consumer = make_consumer(
        {
            **conf,
            "group.id": f"bench-raw-{uuid.uuid4().hex[:8]}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "fetch.queue.backoff.ms": 5,
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 1500,
        }
    )
    consumer.subscribe([topic])
    seen = 0
    first = 0.0
    try:
        while seen < records:
            batch = consumer.consume(500, 1.0)
            if batch and not first:
                first = time.perf_counter()
            seen += sum(1 for m in batch if m.error() is None)
        last = time.perf_counter()
    finally:
        consumer.close()
    return {"records": seen, "seconds": round(last - first, 3)}


class FirstLast:
    """A noop handler that notes when the first and the last record ran."""

    def __init__(self) -> None:
        self.first = 0.0
        self.last = 0.0
        self._lock = threading.Lock()

    def __call__(self, record: Record) -> None:
        now = time.perf_counter()
        if not self.first:
            with self._lock:
                self.first = self.first or now
        self.last = now


def engine(
    conf: Mapping[str, Any], topic: str, records: int, ordering: Ordering, in_flight: int
) -> dict[str, Any]:
    handler = FirstLast()
    config = bench_config(topic, ordering, in_flight, records)
    summary = run_engine(conf, config, handler)
    return {
        "records": summary.processed,
        "seconds": round(handler.last - handler.first, 3),
        "commits": summary.commits,
        "pauses": summary.pauses,
        "max_in_flight_seen": summary.max_in_flight_seen,
    }


def workload(n: int, value_bytes: int) -> list[OutRecord]:
    spec = WorkloadSpec(Workload.JOBS, sleep_ms=(0, 0), seed=1, payload_bytes=1)
    probe = next(iter(generate(spec)))
    padding = max(0, value_bytes - len(probe.value))
    spec = WorkloadSpec(Workload.JOBS, sleep_ms=(0, 0), seed=1, payload_bytes=padding)
    out: list[OutRecord] = []
    for record in generate(spec):
        if len(out) >= n:
            break
        out.append(record)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=6)
    parser.add_argument("--value-bytes", type=int, default=150)
    parser.add_argument("--max-in-flight", type=int, default=64)
    parser.add_argument("--modes", default="unordered,key,partition")
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    modes = [Ordering(m) for m in args.modes.split(",")]

    records = workload(args.records, args.value_bytes)
    mean_bytes = sum(len(r.value) for r in records) / max(1, len(records))
    with bench_cluster() as (bootstrap, embedded):
        conf = {"bootstrap.servers": bootstrap}
        topic = f"throughput-{uuid.uuid4().hex[:8]}"
        create_topic(conf, topic, args.partitions)
        produced = run_load(conf, topic, records, count=len(records)).produced
        assert produced == args.records, produced
        del records
        raw = raw_loop(conf, topic, args.records)
        engines = {m.value: engine(conf, topic, args.records, m, args.max_in_flight) for m in modes}

    def rate(r: Mapping[str, Any]) -> float:
        return round(r["records"] / r["seconds"], 1) if r["seconds"] else 0.0

    print(
        json.dumps(
            {
                "records": args.records,
                "value_bytes": round(mean_bytes, 1),
                "partitions": args.partitions,
                "max_in_flight": args.max_in_flight,
                "embedded_broker": embedded,
                "raw_loop": {**raw, "records_per_s": rate(raw)},
                "engine": {m: {**r, "records_per_s": rate(r)} for m, r in engines.items()},
                "engine_over_raw": {m: round(rate(r) / rate(raw), 3) for m, r in engines.items()},
            },
            sort_keys=True,
        )
    )


if __name__ == "__main__":
    main()
