"""The jobs workload through the naive designs and the engine, side by side in one run.

Prints one JSON object. Usage: python bench/seed000.py [--jobs N] [--partitions P]
[--keys K] [--max-in-flight M] [--only VARIANT ...] [--rounds R] [--default-gc]

Every variant reads the same topic (jobs sleeping 10-30 ms, seed 0) with its own group:
  thread_pool    no Kafka: --max-in-flight plain threads take the same records (read once, held
                 in memory) from a queue, the handler on each: the floor of any design with
                 threads in one Python process on this machine (``engine_over_pool``)
  sequential     one thread handles each polled record in turn (commit per record, async)
  batch_barrier  poll 20, a thread per record, wait for all, commit (sync)
  engine_*       lagless.engine in each ordering mode at --max-in-flight
  threads_vs_async  the engine (unordered) with the sleep in threads and as an ``async def``
                 awaiting ``asyncio.sleep``, at --max-in-flight 200 and 2000 (--async-in-flight)
``seconds`` runs from the first handler start to the last handler end, so joining the group
(~3 s on the embedded broker) counts for none of them. ``ideal_s`` = total sleep / in-flight.
``--only`` runs just the variants named (``threads_vs_async`` for that part; the JSON keeps its
keys, the variants not run absent); ``--rounds R`` runs each of them R times, one after the
other on the same topic, and adds ``rounds`` (every run's seconds) beside ``seconds`` (the
last run's); ``median_s`` is each variant's median over its runs, and ``engine_over_ideal`` and
``engine_over_pool`` are ratios of those medians. Every variant runs with the garbage
collector tuned as ``lagless consume`` tunes it (``lagless.engine.memory.tune_gc``, once, in
this process); ``--default-gc`` leaves it as Python sets it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import statistics
import sys
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from queue import SimpleQueue
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _broker import bench_cluster
from lagless.engine import EngineConfig, Ordering, Record, load_handler, run_engine
from lagless.engine.handlers import decode_json
from lagless.engine.memory import tune_gc
from lagless.kafka.admin import create_topic
from lagless.kafka.clients import make_consumer
from lagless.produce.producer import run_load
from lagless.produce.workloads import OutRecord, Workload, WorkloadSpec, generate

SLEEP = load_handler("sleep")
GROUP_TIMINGS = {"session.timeout.ms": 6000, "heartbeat.interval.ms": 1500}


class Span:
    """First handler start and last handler end, across threads."""

    def __init__(self) -> None:
        self.first: float | None = None
        self.last = 0.0
        self.count = 0
        self._lock = threading.Lock()

    def wrap(self, handler: Callable[[Record], object]) -> Callable[[Record], None]:
        def timed(record: Record) -> None:
            started = time.perf_counter()
            handler(record)
            ended = time.perf_counter()
            with self._lock:
                if self.first is None or started < self.first:
                    self.first = started
                self.last = max(self.last, ended)
                self.count += 1

        return timed

    def wrap_async(
        self, handler: Callable[[Record], Awaitable[object]]
    ) -> Callable[[Record], Awaitable[None]]:
        async def timed(record: Record) -> None:
            started = time.perf_counter()
            await handler(record)
            ended = time.perf_counter()
            if self.first is None or started < self.first:  # one event loop thread
                self.first = started
            self.last = max(self.last, ended)
            self.count += 1

        return timed

    @property
    def seconds(self) -> float:
        return round(self.last - (self.first or self.last), 3)


async def async_sleep(record: Record) -> None:
    """The jobs workload as an ``async def``: await ``asyncio.sleep(sleep_ms)``."""
    await asyncio.sleep(float(decode_json(record)["sleep_ms"]) / 1000.0)


def naive_consumer(conf: Mapping[str, Any], topic: str) -> Any:
    consumer = make_consumer(
        {
            **conf,
            **GROUP_TIMINGS,
            "group.id": f"bench-{uuid.uuid4().hex[:8]}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "fetch.queue.backoff.ms": 5,
        }
    )
    consumer.subscribe([topic])
    return consumer


def read_all(conf: Mapping[str, Any], topic: str, jobs: int) -> list[Record]:
    """The topic's ``jobs`` records, read once."""
    consumer = naive_consumer(conf, topic)
    records: list[Record] = []
    try:
        while len(records) < jobs:
            records.extend(
                Record.from_message(m) for m in consumer.consume(500, 1.0) if not m.error()
            )
    finally:
        consumer.close()
    return records


def thread_pool(records: list[Record], threads: int) -> float:
    """``threads`` plain threads take ``records`` from a queue, the handler on each."""
    span = Span()
    handle = span.wrap(SLEEP)
    tasks: SimpleQueue[Record | None] = SimpleQueue()
    for record in records:
        tasks.put(record)
    for _ in range(threads):
        tasks.put(None)

    def work() -> None:
        while (record := tasks.get()) is not None:
            handle(record)

    pool = [threading.Thread(target=work) for _ in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    return span.seconds


def sequential(conf: Mapping[str, Any], topic: str, jobs: int) -> float:
    span = Span()
    handle = span.wrap(SLEEP)
    consumer = naive_consumer(conf, topic)
    try:
        while span.count < jobs:
            msg = consumer.poll(1.0)
            if msg is None or msg.error() is not None:
                continue
            handle(Record.from_message(msg))
            consumer.commit(message=msg, asynchronous=True)
    finally:
        consumer.close()
    return span.seconds


def batch_barrier(conf: Mapping[str, Any], topic: str, jobs: int, batch: int = 20) -> float:
    span = Span()
    handle = span.wrap(SLEEP)
    consumer = naive_consumer(conf, topic)
    try:
        while span.count < jobs:
            records = [
                Record.from_message(m) for m in consumer.consume(batch, 1.0) if not m.error()
            ]
            if not records:
                continue
            threads = [threading.Thread(target=handle, args=(r,)) for r in records]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    return span.seconds


def bench_config(topic: str, ordering: Ordering, in_flight: int, count: int) -> EngineConfig:
    """The engine as the benchmarks run it: a fresh group, stop after ``count`` records."""
    return EngineConfig.build(
        topics=(topic,),
        group=f"bench-{uuid.uuid4().hex[:8]}",
        ordering=ordering,
        max_in_flight=in_flight,
        count=count,
        on_failure="stop",
        session_timeout_ms=6000,
        heartbeat_interval_ms=1500,
    )


def engine(
    conf: Mapping[str, Any], topic: str, jobs: int, ordering: Ordering, in_flight: int
) -> tuple[float, dict[str, Any]]:
    span = Span()
    summary = run_engine(conf, bench_config(topic, ordering, in_flight, jobs), span.wrap(SLEEP))
    return span.seconds, {
        "processed": summary.processed,
        "max_in_flight_seen": summary.max_in_flight_seen,
        "pauses": summary.pauses,
        "commits": summary.commits,
    }


def threads_vs_async(
    conf: Mapping[str, Any], topic: str, jobs: int, in_flights: list[int]
) -> dict[str, Any]:
    """Seconds (processing span) of the same jobs, sleep in threads vs awaited, per in-flight."""
    out: dict[str, Any] = {}
    for in_flight in in_flights:
        row: dict[str, Any] = {}
        for kind in ("threads", "async"):
            span = Span()
            handler = span.wrap_async(async_sleep) if kind == "async" else span.wrap(SLEEP)
            config = bench_config(topic, Ordering.UNORDERED, in_flight, jobs)
            summary = run_engine(conf, config, handler)
            row[kind] = {
                "seconds": span.seconds,
                "engine_seconds": summary.seconds,
                "processed": summary.processed,
                "max_in_flight_seen": summary.max_in_flight_seen,
            }
        row["async_speedup"] = (
            round(row["threads"]["seconds"] / row["async"]["seconds"], 2)
            if row["async"]["seconds"]
            else None
        )
        out[str(in_flight)] = row
    return out


NAIVE: dict[str, Callable[[Mapping[str, Any], str, int], float]] = {
    "sequential": sequential,
    "batch_barrier": batch_barrier,
}
VARIANTS = ("thread_pool", *NAIVE, *(f"engine_{o.value}" for o in Ordering), "threads_vs_async")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=3600)
    parser.add_argument("--partitions", type=int, default=6)
    parser.add_argument("--keys", type=int, default=100)
    parser.add_argument("--max-in-flight", type=int, default=200)
    parser.add_argument(
        "--async-in-flight", type=int, nargs="+", default=[200, 2000],
        help="in-flight limits for the threads-vs-async comparison",
    )  # fmt: skip
    parser.add_argument("--only-async", action="store_true", help="run only threads_vs_async")
    parser.add_argument(
        "--only", nargs="+", choices=VARIANTS, metavar="VARIANT",
        help=f"run only these variants (of {', '.join(VARIANTS)})",
    )  # fmt: skip
    parser.add_argument("--rounds", type=int, default=1, help="runs of each variant")
    parser.add_argument(
        "--default-gc", action="store_true", help="leave the collector as Python sets it"
    )
    args = parser.parse_args()
    only = set(args.only or VARIANTS)
    if args.only_async:
        only = {"threads_vs_async"}
    logging.basicConfig(level=logging.ERROR)

    spec = WorkloadSpec(Workload.JOBS, keys=args.keys, sleep_ms=(10, 30), seed=0)
    records: list[OutRecord] = []
    for record in generate(spec):
        if len(records) >= args.jobs:
            break
        records.append(record)
    total_sleep = sum(json.loads(r.value)["sleep_ms"] for r in records) / 1000.0

    with bench_cluster() as (bootstrap, embedded):
        conf = {"bootstrap.servers": bootstrap}
        topic = f"seed000-{uuid.uuid4().hex[:8]}"
        create_topic(conf, topic, args.partitions)
        produced = run_load(conf, topic, records, count=len(records)).produced
        assert produced == args.jobs, produced
        seconds: dict[str, float] = {}
        rounds: dict[str, list[float]] = {}
        details: dict[str, Any] = {}
        compared: dict[str, Any] = {}
        held = read_all(conf, topic, args.jobs) if "thread_pool" in only else []
        if not args.default_gc:
            tune_gc()  # as lagless consume does: every variant runs in this process
        for _ in range(args.rounds):
            if held:
                seconds["thread_pool"] = thread_pool(held, args.max_in_flight)
                rounds.setdefault("thread_pool", []).append(seconds["thread_pool"])
            for name, naive in NAIVE.items():
                if name in only:
                    seconds[name] = naive(conf, topic, args.jobs)
                    rounds.setdefault(name, []).append(seconds[name])
            for ordering in Ordering:
                name = f"engine_{ordering.value}"
                if name in only:
                    seconds[name], details[name] = engine(
                        conf, topic, args.jobs, ordering, args.max_in_flight
                    )
                    rounds.setdefault(name, []).append(seconds[name])
            if "threads_vs_async" in only:
                compared = threads_vs_async(conf, topic, args.jobs, args.async_in_flight)

    ideal = total_sleep / args.max_in_flight
    medians = {k: round(statistics.median(v), 3) for k, v in rounds.items()}
    pool = medians.get("thread_pool")
    print(
        json.dumps(
            {
                "jobs": args.jobs,
                "sleep_ms": [10, 30],
                "partitions": args.partitions,
                "keys": args.keys,
                "max_in_flight": args.max_in_flight,
                "embedded_broker": embedded,
                "gc": "default" if args.default_gc else "tuned as lagless consume",
                "total_sleep_s": round(total_sleep, 3),
                "ideal_s": round(ideal, 3),
                "seconds": seconds,
                **({"rounds": rounds} if args.rounds > 1 else {}),
                "speedup_vs_sequential": {
                    k: round(seconds["sequential"] / v, 2)
                    for k, v in seconds.items()
                    if v and "sequential" in seconds
                },
                "speedup_vs_batch_barrier": {
                    k: round(seconds["batch_barrier"] / v, 2)
                    for k, v in seconds.items()
                    if v and "batch_barrier" in seconds
                },
                "median_s": medians,
                "engine_over_ideal": {
                    k: round(v / ideal, 2) for k, v in medians.items() if k.startswith("engine")
                },
                "engine_over_pool": {
                    k: round(v / pool, 2)
                    for k, v in medians.items()
                    if k.startswith("engine") and pool
                },
                "engine": details,
                "threads_vs_async": compared,
                "async_ideal_s": {str(n): round(total_sleep / n, 3) for n in args.async_in_flight},
            },
            sort_keys=True,
        )
    )


if __name__ == "__main__":
    main()
