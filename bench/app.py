"""Records/s of lagless.App beside the bare engine: what decoding and acknowledged outputs cost.

Prints one JSON object. Usage: python bench/app.py [--records N] [--partitions P]
[--max-in-flight M[,M...]]

One topic of N jobs records (~54 B JSON values), read in the same run, each reader with its own
group, unordered, stopping after N records:

* ``engine``: the bare engine with a noop ``Record`` handler (the ceiling);
* ``app_decode``: an App handler with ``value="json"`` returning None (decode, no output);
* ``app_output``: the same returning the document to an output topic: each record waits for
  its output's acknowledgement (acks=all, idempotent, linger.ms 0) before it counts as done;
* ``app_batch_output``: the same as a batch handler (``batch_size`` 500, ``batch_linger_ms``
  20; M batches in flight): a call decodes its batch, returns the documents and waits for all
  their acknowledgements before the batch counts as done.

Rates are over the first -> the last call of the handler, so joining the group counts for none
of them; with outputs each worker waits for its ack before starting another record, so the rate
of starts is the rate of acknowledged records.
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

import lagless
from _broker import bench_cluster
from lagless.config import KafkaSettings
from lagless.engine import Ordering, Record, run_engine
from lagless.kafka.admin import create_topic
from lagless.produce.producer import run_load
from lagless.produce.workloads import Workload, WorkloadSpec, generate
from seed000 import bench_config


class FirstLast:
    """Notes when the first and the last call happened."""

    def __init__(self) -> None:
        self.first = 0.0
        self.last = 0.0
        self._lock = threading.Lock()

    def tick(self) -> None:
        now = time.perf_counter()
        if not self.first:
            with self._lock:
                self.first = self.first or now
        self.last = now

    def result(self, records: int) -> dict[str, Any]:
        seconds = round(self.last - self.first, 3)
        rate = round(records / seconds, 1) if seconds else 0.0
        return {"records": records, "seconds": seconds, "records_per_s": rate}


def bare_engine(conf: Mapping[str, Any], topic: str, records: int, in_flight: int) -> Any:
    clock = FirstLast()

    def handle(record: Record) -> None:
        clock.tick()

    summary = run_engine(conf, bench_config(topic, Ordering.UNORDERED, in_flight, records), handle)
    return clock.result(summary.processed)


BATCH = {"batch_size": 500, "batch_linger_ms": 20}


def app_run(
    bootstrap: str, topic: str, records: int, in_flight: int, output: str | None, batch: bool
) -> dict[str, Any]:
    clock = FirstLast()
    app = lagless.App(group=f"bench-app-{uuid.uuid4().hex[:8]}", session_timeout_ms=6000,
                      heartbeat_interval_ms=1500)  # fmt: skip
    on = app.handler(topic, ordering="unordered", max_in_flight=in_flight, count=records,
                     on_failure="stop", value="json", output=output,
                     **(BATCH if batch else {}))  # fmt: skip

    def handle(doc: Any) -> Any:
        clock.tick()
        return doc if output else None

    on(handle)
    summary = app.configured(KafkaSettings(bootstrap=bootstrap)).run()["handle"]
    return clock.result(summary.processed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--partitions", type=int, default=6)
    parser.add_argument("--max-in-flight", default="64,500")
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    in_flights = [int(m) for m in args.max_in_flight.split(",")]

    spec = WorkloadSpec(Workload.JOBS, sleep_ms=(0, 0), seed=1)
    source = generate(spec)
    records = [next(source) for _ in range(args.records)]
    results: dict[str, dict[str, Any]] = {}
    with bench_cluster() as (bootstrap, embedded):
        conf = {"bootstrap.servers": bootstrap}
        topic = f"bench-app-{uuid.uuid4().hex[:8]}"
        create_topic(conf, topic, args.partitions)
        assert run_load(conf, topic, records, count=len(records)).produced == args.records
        for m in in_flights:
            out = f"{topic}-out-{m}"
            create_topic(conf, out, args.partitions)
            results[str(m)] = {
                "engine": bare_engine(conf, topic, args.records, m),
                "app_decode": app_run(bootstrap, topic, args.records, m, None, False),
                "app_output": app_run(bootstrap, topic, args.records, m, out, False),
                "app_batch_output": app_run(bootstrap, topic, args.records, m, out, True),
            }
    ratios = {
        m: {
            k: round(r[k]["records_per_s"] / r["engine"]["records_per_s"], 3)
            for k in ("app_decode", "app_output", "app_batch_output")
        }
        for m, r in results.items()
    }
    print(
        json.dumps(
            {
                "records": args.records,
                "value_bytes": round(sum(len(r.value) for r in records) / len(records), 1),
                "partitions": args.partitions,
                "embedded_broker": embedded,
                "by_max_in_flight": results,
                "over_engine": ratios,
            },
            sort_keys=True,
        )
    )


if __name__ == "__main__":
    main()
