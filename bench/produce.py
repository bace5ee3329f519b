"""Produce throughput per profile, 100 B and 1 KB records, beside a raw confluent-kafka loop.

Prints one JSON object. Usage: python bench/produce.py [--records N] [--partitions P]
Every run writes to its own fresh topic; the raw loop uses librdkafka defaults and checks
deliveries the same way (a counting callback) so the comparison is like for like.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _broker import bench_cluster
from lagless.kafka.admin import create_topic
from lagless.kafka.clients import make_producer
from lagless.produce.producer import run_load
from lagless.produce.profiles import Profile
from lagless.produce.workloads import OutRecord


def records(n: int, size: int) -> list[OutRecord]:
    value = b"x" * size
    return [OutRecord(str(i), value, None, []) for i in range(n)]


def raw_loop(conf: dict[str, Any], topic: str, recs: list[OutRecord]) -> dict[str, float]:
    producer = make_producer(conf)
    delivered = [0]

    def on_delivery(err: object, _msg: object) -> None:
        if err is None:
            delivered[0] += 1

    start = time.monotonic()
    for rec in recs:
        while True:
            try:
                producer.produce(topic, rec.value, on_delivery=on_delivery)
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
    producer.flush(120)
    seconds = time.monotonic() - start
    size = len(recs[0].value)
    return {
        "records_per_s": round(delivered[0] / seconds, 1),
        "mb_per_s": round(delivered[0] * size / seconds / 1e6, 3),
        "delivered": delivered[0],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=200_000, help="records per 100 B run")
    parser.add_argument("--partitions", type=int, default=3)
    args = parser.parse_args()
    out: dict[str, Any] = {"records_100b": args.records, "records_1kb": args.records // 2}
    with bench_cluster() as (bootstrap, embedded):
        conf = {"bootstrap.servers": bootstrap}
        out["broker"] = "embedded tansu" if embedded else bootstrap
        for label, size, n in (("100B", 100, args.records), ("1KB", 1000, args.records // 2)):
            recs = records(n, size)
            row: dict[str, Any] = {}
            topic = f"bench-raw-{uuid.uuid4().hex[:8]}"
            create_topic(conf, topic, args.partitions)
            row["raw_confluent_kafka"] = raw_loop(conf, topic, recs)
            for profile in Profile:
                topic = f"bench-{profile}-{uuid.uuid4().hex[:8]}"
                create_topic(conf, topic, args.partitions)
                result = run_load(conf, topic, iter(recs), count=n, profile=profile)
                row[profile.value] = {
                    "records_per_s": result.records_per_s,
                    "mb_per_s": result.mb_per_s,
                    "delivered": result.produced,
                    "failed": result.failed,
                    "vs_raw": round(
                        result.records_per_s / row["raw_confluent_kafka"]["records_per_s"], 3
                    ),
                }
            out[label] = row
    print(json.dumps(out))


if __name__ == "__main__":
    main()
